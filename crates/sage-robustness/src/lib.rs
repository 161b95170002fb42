//! # sage-robustness
//!
//! SAGE task 2, transformation robustness (Goel et al. 2025, Appendix A.3), over any
//! [`Similarity`](sage_core::Similarity).
//!
//! For each document: its similarity to each of the three superficial perturbations (random
//! capitalisation 25%, every 10th character deleted, numerisation), to each of the three
//! semantic ones (negation toggling, sentence shuffle, word shuffle) — sage-perturb's
//! [`robustness_set`] — and to its reference summary. Per document, with strict inequalities:
//!
//! - `summary_over_semantic`: sim(summary) > every semantic sim;
//! - `superficial_over_summary`: every superficial sim > sim(summary);
//! - `superficial_over_semantic`: every superficial sim > every semantic sim.
//!
//! Dataset score = mean over the three conditions of the share of documents meeting it;
//! category score = mean over datasets. Ties meet no condition, so a similarity that returns a
//! constant scores 0.
//!
//! All `7·n` comparisons of a dataset are scored in one `score_pairs` batch (the document is the
//! reference, the perturbed text or summary the candidate), so batch-normalised measures put
//! every compared score on one scale; BM25's min–max is monotone within that batch and so
//! changes no condition. Each document's perturbations draw from the stream
//! `robustness/<dataset>/<perturbation id>` at the document's file position: a document is
//! perturbed the same way whatever the sample size and thread count. Documents are whole by
//! default (the authors truncate only for task 3); a token cap is an option.
#![deny(missing_docs)]

mod task;

pub use sage_perturb::robustness_set;
pub use task::{
    conditions, evaluate, evaluate_dataset, Conditions, DatasetReport, Options, PerturbationMean,
    RobustnessReport, DEFAULT_DATASETS,
};

/// Errors of this crate: the error every task over perturbed data shares.
pub type RobustnessError = sage_task::TaskError;

/// Result alias of this crate.
pub type Result<T, E = RobustnessError> = std::result::Result<T, E>;
