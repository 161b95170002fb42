//! # sage-sensitivity
//!
//! SAGE task 3, information sensitivity (Goel et al. 2025, Appendix A.4), over any
//! [`Similarity`](sage_core::Similarity).
//!
//! Each document is truncated to its first 2,048 cl100k tokens (as the authors' code does; an
//! option), then perturbed by sage-perturb's [`sensitivity_set`]:
//!
//! - needle insertion: lorem-ipsum filler of p ∈ {0.15, 0.5, 1.0} × the document's token count
//!   inserted at positions {0, 0.5, 1};
//! - token removal: p ∈ {0.15, 0.5, 0.9} of the tokens cut, at the same positions.
//!
//! The expected similarity after a perturbation of proportion p is `1 − p/(1 + p)`. The score of
//! a (dataset, family) is `1 − mean |observed − expected|` over documents, levels and positions;
//! a dataset's score is the mean of its two families and the category score the mean over
//! datasets. The report keeps the mean observed similarity per (p, position) and per p, the
//! observed-vs-expected degradation curve.
//!
//! **Batches.** Each (dataset, family) is scored in one `score_pairs` batch (document as
//! reference, perturbed copy as candidate): that batch is what BM25's min–max normalisation runs
//! over, mapping the least similar perturbed copy of the dataset to 0 and the most similar to 1,
//! which is what makes BM25's raw, unbounded scores comparable with the expected curve at all.
#![deny(missing_docs)]

mod task;

pub use sage_perturb::sensitivity_set;
pub use task::{
    available, evaluate, evaluate_dataset, expected_similarity, CurvePoint, DatasetReport,
    FamilyReport, LevelReport, Options, SensitivityReport, DEFAULT_DATASETS,
    DEFAULT_TRUNCATE_TOKENS,
};

/// Errors of this crate: the error every task over perturbed data shares.
pub type SensitivityError = sage_task::TaskError;

/// Result alias of this crate.
pub type Result<T, E = SensitivityError> = std::result::Result<T, E>;
