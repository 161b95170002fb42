//! # sage-core
//!
//! The small crate every other sage-rs crate stands on:
//!
//! - [`Similarity`] — the one trait through which every classical metric and every embedding model
//!   is used. Tasks take `&dyn Similarity` and never learn which kind they hold.
//! - [`Embedder`] and [`EmbeddingSimilarity`] — texts to vectors, and the adapter that turns any
//!   embedder into a `Similarity` (cosine, or EvalRank's l2) embedding each distinct text once
//!   per call.
//! - [`SageError`] — the typed error the other crates wrap.
//! - [`RunSeed`] — the one documented way experiments derive their random generators, so results
//!   do not depend on thread count.
//! - [`Role`] — what a text is for (query, document, plain), so asymmetric embedders get it.
//! - [`ResultEnvelope`] — the result file every suite's report is written in, and read from, and
//!   [`SuiteReport`] — what it needs of a suite's typed report (its score, the [`RowsUsed`]).
//! - [`CheckOptions`] — a suite's options checked against their ranges before any work.
//! - [`cpu`] — the instruction-set levels every SIMD kernel of sage's chooses among, capped by
//!   `SAGE_CPU`.
//!
//! Data flows one way through sage-rs: data → perturbation → similarity → task measure → result →
//! report. This crate owns the middle of that chain; it reads no datasets and loads no models.
//!
//! It is kept light on purpose, since every crate rebuilds when it changes: the measures and the
//! category report built on them are in sage-measures, the redaction rule in sage-redact.
#![deny(missing_docs)]

mod cost_hint;
pub mod cpu;
mod embed;
mod error;
mod listing;
mod options;
mod result;
mod rows_used;
mod seed;
mod similarity;
mod timings;

pub use cost_hint::{CostHint, COST_REFERENCE_MODEL_BYTES};
pub use embed::{
    cosine, is_remote_spec, l2_similarity, normalize_rows, remote_model_name, BatchSink, Embedder,
    EmbedderIdentity, EmbeddingSimilarity, RemoteUsage, Role, VectorSimilarity, PRECISION_MARK,
    REMOTE_PROTOCOLS,
};
pub use error::{printable, said_once, Result, SageError};
pub use listing::{DiscoveredModel, ModelOrigin, PlannedModel, RemotePlan};
pub use options::{
    at_least, check_fields, describe, missing_required, within, CheckOptions, OptionField,
    OptionInfo, OptionSpec, Range, SuiteOptions,
};
pub use result::{
    result_label, utc_timestamp, write_atomically, EmbeddingWork, Gpu, Host, Parameters,
    ReportUsage, ResultEnvelope, RunRecord, SimilarityKind, SimilarityRecord, RESULT_SCHEMA,
};
pub use rows_used::{
    CorpusSelection, DatasetRows, FileCheck, RowSelection, RowsUsed, SubsetSelection, SuiteReport,
    Verified,
};
pub use seed::{ExperimentRng, RunSeed};

/// What [`suite_options!`](crate::suite_options) expands to needs, whatever its caller depends on.
#[doc(hidden)]
pub mod __private {
    pub use serde_json;
}
pub use similarity::Similarity;
pub use timings::{Phase, Timings};
