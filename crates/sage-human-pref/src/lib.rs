//! # sage-human-pref
//!
//! SAGE task 1, human-preference alignment (Goel et al. 2025, Appendix A.2), over any
//! [`Similarity`](sage_core::Similarity) — classical metric or embedding model; the task never learns which.
//!
//! Two sub-tasks, each scored in one `score_pairs` batch so batch-normalised measures (BM25's
//! min–max) put every compared score on one scale:
//!
//! - **Pairwise comparisons**: for each (source, summary_0, summary_1, human choice) the
//!   similarity predicts summary_0 when `sim(source, summary_0) > sim(source, summary_1)`,
//!   otherwise summary_1 (ties go to summary_1, the paper's "otherwise summary 2"). Accuracy,
//!   precision, recall and F1 with "summary_0 preferred" as the positive class.
//! - **Rating correlations**: Pearson's r between `sim(source, summary)` and each human rating
//!   dimension, mapped to `0.5·(r + 1)`. A similarity (or a rating) that is constant over the
//!   rows has no defined r: it scores 0.5 (no correlation) and the report says so.
//!
//! The paper's category score is the mean of 8 numbers, 4 classification numbers and 4 mapped
//! correlations. Here a source's score is `0.5·mean(classification) + 0.5·mean(mapped
//! correlations)`, which is that same mean when there are 4 dimensions (summarize_from_feedback,
//! SummEval) and keeps the two halves equally weighted when there are not (REALSumm has one
//! dimension). The category score is the mean over sources.
//!
//! ## Data
//!
//! summarize_from_feedback (the paper's data) comes from the hub: its `comparisons` and `axis`
//! tables are two registry datasets, used as they are. The real human ratings shipped locally —
//! SummEval (coherence, consistency, fluency, relevance; 1–5) and REALSumm (LitePyramid recall;
//! 0–1) — have no pairwise table, so comparisons are built from the ratings: every two summaries
//! of one document whose mean rating (over the dataset's dimensions) differs by at least a
//! margin — by default 10% of the rating scale: 0.4 for SummEval, 0.1 for REALSumm — with the
//! better-rated one as the human choice. Which summary of a pair is summary_0 is decided by a
//! seeded coin per pair, so file order (systems listed best-first, say) cannot bias the classes.
#![deny(missing_docs)]

mod task;

pub use task::{
    compare, comparisons_from_ratings, correlate, evaluate, evaluate_source, predict,
    ComparisonReport, CorrelationReport, Derivation, DimensionCorrelation, HumanPrefReport,
    Options, Scores, Source, SourceReport,
};

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HumanPrefError {
    /// A data error.
    #[error(transparent)]
    Data(#[from] sage_data::DataError),
    /// A similarity or measure error.
    #[error(transparent)]
    Core(#[from] sage_core::SageError),
    /// Too few usable rows.
    #[error("{0}")]
    Insufficient(String),
}

/// Result alias of this crate.
pub type Result<T, E = HumanPrefError> = std::result::Result<T, E>;
