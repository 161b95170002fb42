//! # sage-cluster
//!
//! SAGE task 4, clustering (Goel et al. 2025, Appendix A.5), over any [`Similarity`](sage_core::Similarity).
//!
//! For each subset of a clustering set: the pairwise similarity matrix from the `Similarity`,
//! distance = 1 − similarity, agglomerative clustering with **complete** linkage on those
//! precomputed distances (kodama's nearest-neighbour chain — the algorithm scipy's `linkage`
//! and so scikit-learn's `AgglomerativeClustering(metric="precomputed", linkage="complete")`
//! run), cut at the true number of classes, and the V-measure against the labels (sage-core's
//! one V-measure). A dataset's value is the mean over its subsets; the category score is the
//! mean over datasets.
//!
//! ## The similarity matrix
//!
//! Every pair of the subset is scored in **one** `score_pairs` batch, in parallel inside the
//! similarity: an embedding model embeds each text once and compares unit vectors (cosine); a
//! classical metric scores every pair. A symmetric similarity is scored on the n(n−1)/2 pairs
//! i < j. An asymmetric one (BM25: reference = one-document corpus, candidate = query) is scored
//! in both directions in the same batch — so its min–max normalisation spans both — and made
//! symmetric by the mean of the two directions. Distances are clamped to [0, 2] (cosine of
//! nearly equal vectors may exceed 1 by rounding); a NaN similarity is an error.
//!
//! ## Subsets
//!
//! Like MTEB, several sampled subsets per dataset (defaults: up to 5 subsets of up to 2,000
//! texts, each drawn from up to 50 classes). Subset k draws its classes and then its texts
//! uniformly without replacement from `RunSeed::rng("cluster/<dataset>/<split>/subset-<k>")`;
//! a dataset that fits in one subset entirely is evaluated once, whole. MTEB's own subsets are
//! fixed files on the hub; the source pools shipped here (Reddit, StackExchange) are sampled the
//! same way instead.
//!
//! ## Memory
//!
//! n texts need n(n−1)/2 pairs: about 44 bytes per pair for a symmetric similarity (the pair
//! list, the score, the distance) and twice the pair list for an asymmetric one — 88 MB at
//! n = 2,000, 2.2 GB at n = 10,000. A subset whose estimate exceeds the memory available (Linux
//! `MemAvailable`) is refused before anything is scored, with the estimate in the message.
#![deny(missing_docs)]

mod linkage;
mod task;

pub use linkage::{complete_linkage, cut};
pub use task::{
    check_memory, cluster_texts, evaluate, evaluate_dataset, memory_estimate, similarity_condensed,
    subset_plans, ClusterReport, DatasetReport, Options, SubsetReport, DEFAULT_DATASETS,
};

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterError {
    /// A data error.
    #[error(transparent)]
    Data(#[from] sage_data::DataError),
    /// A similarity or measure error.
    #[error(transparent)]
    Core(#[from] sage_core::SageError),
    /// A subset too large for the memory available.
    #[error(
        "{dataset}: a subset of {texts} texts needs about {needed_mb} MB for its pairwise \
         distances but {available_mb} MB are available; lower --max-texts (memory grows with \
         the square of the subset size)"
    )]
    TooLarge {
        /// The dataset.
        dataset: String,
        /// Subset size.
        texts: usize,
        /// Estimated need.
        needed_mb: u64,
        /// Available.
        available_mb: u64,
    },
    /// A similarity returned NaN.
    #[error("{similarity} returned NaN for texts {a} and {b} of a {dataset} subset")]
    NotANumber {
        /// The similarity.
        similarity: String,
        /// The dataset.
        dataset: String,
        /// First text index in the subset.
        a: usize,
        /// Second.
        b: usize,
    },
    /// Too few usable rows.
    #[error("{0}")]
    Insufficient(String),
}

/// Result alias of this crate.
pub type Result<T, E = ClusterError> = std::result::Result<T, E>;
