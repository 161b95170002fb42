//! # sage-data
//!
//! The one dataset layer of sage-rs: every suite reads its data through this crate.
//!
//! - [`REGISTRY`]: every named dataset with its kind, splits, local-mirror path and Hugging Face
//!   source (repository, config, files, column mapping). `sage data list` prints it.
//! - [`DataRoot`]: the local mirror (SAGE_DATA_DIR), read into typed rows ([`StsPair`],
//!   [`LabeledPair`], [`Beir`], ...). Malformed input is an error naming the file, the line and
//!   what was wrong; rows with an empty text are counted and reported, and kept, dropped or
//!   refused per [`EmptyTextPolicy`] — never silently.
//! - [`sample`](mod@sample): seeded, documented sampling; every result records a [`RowSelection`] (counts
//!   and checksums of the rows used and of the whole split). Every random stream is keyed by a
//!   split's content, never its name. [`DataRoot::rows`] and [`DataRoot::beir_sampled`] read a
//!   split in two streamed passes (count and checksum, then keep what was drawn), so memory
//!   follows the sample rather than the file.
//!
//! - [`fetch()`]: `sage data fetch` — a registered dataset from the Hugging Face hub (through
//!   sage-hub: cache first, offline mode honoured) converted into the local layout; Parquet is
//!   read with polars. Behind the feature `fetch` (off by default; the `sage` binary turns it
//!   on): without it polars and the hub client stay out of the build, and the loaders read the
//!   local mirror only.
//! - [`pins`]: the pinned public source of every registered dataset (a GitHub repository at a
//!   commit, an npm or Debian package at a version), with the sha256 of each artifact and of each
//!   file made from it, and each dataset's licence; [`rebuild`] turns them into the local layout
//!   byte for byte (`sage data fetch`; downloading behind the feature `fetch`, the converters
//!   always built and tested).
//! - [`user`]: a user's own dataset — a file (JSON lines, CSV, TSV, Parquet) or a folder (BEIR,
//!   split files) — its kind detected from its columns, registered on a [`DataRoot`] by path or
//!   by a `[datasets.NAME]` table, and read by every loader like a registry dataset.
//! - [`lines`]: how any line-oriented file splits into numbered lines and how a JSON line becomes
//!   an object (a repeated key is an error), shared with the `sage` command's readers.
//! - [`parquet_check`]: a Parquet file's footer and page headers checked by a decoder of our own
//!   before polars is given the file, which trusts what a file says of itself.
//! - [`trec`]: qrels (BEIR's and trec_eval's) and TREC runs, for the retrieval loader and
//!   `sage measure`.
//!
//! JSON lines are parsed line by line with serde_json: that is what lets every error name its
//! line, and it reads the largest mirror file (StackExchange, 217k rows) in well under a second.
#![deny(missing_docs)]

mod error;
#[cfg(feature = "fetch")]
pub mod fetch;
pub mod languages;
pub mod lines;
mod load;
pub mod parquet_check;
pub mod pins;
pub mod rebuild;
mod records;
mod registry;
mod regular_file;
mod rows;
pub mod sample;
pub mod trec;
pub mod user;
pub mod verify;

pub use error::{DataError, Result};
#[cfg(feature = "fetch")]
pub use fetch::{fetch, map_record, Fetched};
pub use load::{
    Beir, DataRoot, EmptyTextPolicy, KeepDocuments, KindOf, PathHints, SplitReport, SplitRows,
};
pub use records::{reading_parquet, Format};
pub use registry::{entry, DatasetEntry, DatasetKind, HubSource, HubTransform, REGISTRY};
pub use rows::{
    AxisRating, BeirDocument, BeirQuery, ClassedPair, Document, DocumentSummary, LabeledPair,
    LabeledText, Line, Loaded, NegationPair, RerankingQuery, Row, StsPair, SummaryComparison,
    SummaryDocument, SummaryRating, TextPair, WordPair,
};
#[cfg(feature = "fetch")]
pub use sage_hub::HubSettings;
pub use sample::{sample, sample_grouped, sample_indices, RowSelection, Sampled};

#[cfg(test)]
mod tests;
#[cfg(test)]
mod user_tests;
