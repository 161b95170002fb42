//! Evaluation measures, each written once; every task crate calls these.
//!
//! Each function documents the reference implementation it reproduces (scipy, scikit-learn,
//! trec_eval, statsmodels); the unit tests pin golden values computed with that reference. All
//! arithmetic is in `f64`.

mod classification;
mod clustering;
mod correlation;
mod edit;
mod ranking;
mod stats;

pub use classification::{average_precision_score, binary_classification, BinaryScores};
pub use clustering::{v_measure, VMeasure};
pub use correlation::{pearson, rank_average, spearman};
pub use edit::{edit_distance, normalized_word_edit_distance};
pub use ranking::{
    average_precision, hits_at_k, mean_reciprocal_rank, ndcg_at_k, reciprocal_rank, trec_order,
    RankedDoc,
};
pub use stats::{
    bootstrap_interval, bootstrap_mean_of_means, harmonic_mean, hodges_lehmann,
    hodges_lehmann_bootstrap, holm, mean, mean_std, percentile, wilcoxon, BootstrapInterval,
    HodgesLehmann, HolmAdjusted, MeanStd, Wilcoxon, WilcoxonMethod, BOOTSTRAP_RESAMPLES,
};

#[cfg(test)]
pub(crate) fn assert_close(got: f64, want: f64, tol: f64) {
    assert!(
        (got - want).abs() <= tol,
        "got {got}, want {want} (tolerance {tol})"
    );
}
