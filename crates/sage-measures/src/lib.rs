//! # sage-measures
//!
//! Evaluation measures, each written once; every task crate calls these.
//!
//! Each function documents the reference implementation it reproduces (scipy, scikit-learn,
//! trec_eval, statsmodels); the unit tests pin golden values computed with that reference. All
//! arithmetic is in `f64`.
//!
//! [`CategoryReport`] lives here too: the report of a SAGE category over datasets is its mean
//! and the bootstrap interval of that mean, so it changes when the bootstrap does. Kept out of
//! sage-core so that a change to a measure rebuilds the crates that measure, not every crate.
#![deny(missing_docs)]

mod category;
mod checks;
mod classification;
mod clustering;
mod correlation;
mod edit;
mod ranking;
mod stats;

pub use category::{null_as_nan, CategoryReport, DatasetScore};
pub use classification::{average_precision_score, binary_classification, BinaryScores};
pub use clustering::{unclusterable, v_measure, VMeasure};
pub use correlation::{pearson, permutation_p, rank_average, spearman, PERMUTATIONS};
pub use edit::{edit_distance, normalized_word_edit_distance};
pub use ranking::{
    average_precision, hits_at_k, mean_reciprocal_rank, ndcg_at_k, reciprocal_rank, trec_order,
    RankedDoc,
};
pub use stats::{
    bootstrap_draw, bootstrap_interval, bootstrap_mean_of_means, bootstrap_replicates, ci95,
    harmonic_mean, hodges_lehmann, hodges_lehmann_bootstrap, holm, mean, mean_at, mean_std,
    paired_bootstrap, percentile, percentile_interval, wilcoxon, BootstrapInterval,
    BootstrapReplicates, HodgesLehmann, HolmAdjusted, MeanStd, PairedDifference, Wilcoxon,
    WilcoxonMethod, BOOTSTRAP_RESAMPLES,
};

/// `values` times the power of two that brings the largest magnitude near 1, and that power's
/// exponent `e` (so `value = scaled · 2^e`).
///
/// Multiplying by a power of two is exact, so a measure that does not depend on scale (a
/// correlation) gives the same bits on ordinary inputs, while squares and sums of values near the
/// ends of f64's range (1e155 squared overflows; subnormals squared vanish) stay finite and
/// non-zero.
pub(crate) fn scaled_near_one(values: &[f64]) -> (Vec<f64>, i32) {
    let largest = values.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    if largest == 0.0 || !largest.is_finite() {
        return (values.to_vec(), 0);
    }
    let exponent = largest.log2().floor() as i32 + 1;
    (
        values
            .iter()
            .map(|&v| times_power_of_two(v, -exponent))
            .collect(),
        exponent,
    )
}

/// `x · 2^e`, in steps whose factors are normal f64s (2^±1000 at most).
pub(crate) fn times_power_of_two(mut x: f64, mut e: i32) -> f64 {
    while e != 0 {
        let step = e.clamp(-1000, 1000);
        x *= f64::from_bits(((1023 + step) as u64) << 52);
        e -= step;
    }
    x
}

#[cfg(test)]
pub(crate) fn assert_close(got: f64, want: f64, tol: f64) {
    assert!(
        (got - want).abs() <= tol,
        "got {got}, want {want} (tolerance {tol})"
    );
}
