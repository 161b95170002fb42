//! # evalrank
//!
//! EvalRank (Wang, Kuo, Li, "Just Rank: Rethinking Evaluation with Word and Sentence
//! Similarities", ACL 2022) over any [`Embedder`](sage_core::Embedder).
//!
//! A positive pair (x, y) is scored by how y ranks among a large background set when every
//! background item is compared with x: `rank = 1 + #{b ≠ x, y : sim(x, b) > sim(x, y)}` — ties
//! count in the model's favour, as in the authors' toolkit. MRR, Hits@1, Hits@3 (×100, as the
//! paper) and the mean rank summarise the ranks.
//!
//! Embeddings: every background text is embedded once; for `cos` the background vectors are
//! centred on their mean and L2-normalised, for `l2` the similarity is `1 / (1 + ‖a − b‖)` on the
//! centred vectors (both as the toolkit). Pivots are scored in blocks of 256 against the whole
//! background with one matrix product per block. Static models give an out-of-vocabulary word
//! the mean of all their vectors (sage-embed's rule, EvalRank's too).
//!
//! Data ([`lists`]): the word-level lists are constructed from the 13 word-similarity sets and
//! the Wikipedia vocabulary (equal to the toolkit's shipped lists: 5,514 directed pairs, 22,207
//! background words — tested); the sentence-level default is the toolkit's shipped lists, and the
//! lists constructed from STS-B and STR-2022 can be run as well.
#![deny(missing_docs)]

pub mod lists;
mod options;
mod post;
mod rank;
mod run;

pub use options::{Options, PostKind, DEFAULT_ABTT_K};
pub use post::{symmetric_eigen, PostProcess};
pub use rank::{evaluate, rank_pairs, EvalRankScores};
pub use run::{
    classic_scores, load_lists, run, run_on_datasets, ClassicScores, EvalRankReport, Level,
    ListSource,
};

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalRankError {
    /// A data error.
    #[error(transparent)]
    Data(#[from] sage_data::DataError),
    /// An error from sage-core (embedding, measures).
    #[error(transparent)]
    Core(#[from] sage_core::SageError),
    /// Invalid input (an empty list, a pair text missing from the background, ...).
    #[error("{0}")]
    Invalid(String),
}

/// Result alias of this crate.
pub type Result<T, E = EvalRankError> = std::result::Result<T, E>;
