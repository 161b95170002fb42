//! The evaluation measures on any numbers, NaN, infinities, subnormals and values near f64::MAX
//! included: each gives a finite value in its range or an error that says why, never a panic,
//! NaN or a silently wrong number. Pearson's r is unchanged when its input is scaled by a power
//! of two (it is computed at a power-of-two scale, so even exactly).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sage_measures::{
    harmonic_mean, hodges_lehmann, mean, mean_std, pearson, percentile, spearman, v_measure,
    wilcoxon,
};

/// `value` is finite and within [low, high], give or take rounding (a relative 1e-12: the mean
/// of one subnormal value may come out an ulp above it).
fn finite_in(what: &str, value: f64, low: f64, high: f64) {
    let slack = 1e-12 * low.abs().max(high.abs());
    assert!(
        value.is_finite() && value >= low - slack && value <= high + slack,
        "{what}: {value} outside [{low}, {high}]"
    );
}

fuzz_target!(|input: (Vec<(f64, f64)>, f64, u8)| {
    let (pairs, q, scale) = input;
    let pairs = &pairs[..pairs.len().min(200)];
    let x: Vec<f64> = pairs.iter().map(|p| p.0).collect();
    let y: Vec<f64> = pairs.iter().map(|p| p.1).collect();
    let (low, high) = x
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| (l.min(v), h.max(v)));

    if let Ok(r) = pearson(&x, &y) {
        finite_in("pearson", r, -1.0, 1.0);
        let factor = 2f64.powi(i32::from(scale % 16) - 8);
        let scaled: Vec<f64> = x.iter().map(|v| v * factor).collect();
        if scaled.iter().all(|v| v.is_normal() || *v == 0.0) && x.iter().all(|v| v.is_normal() || *v == 0.0) {
            assert_eq!(pearson(&scaled, &y).unwrap().to_bits(), r.to_bits(), "scaled by {factor}");
        }
    }
    if let Ok(rho) = spearman(&x, &y) {
        finite_in("spearman", rho, -1.0, 1.0);
    }
    if let Ok(m) = mean(&x) {
        finite_in("mean", m, low, high);
    }
    for ddof in [0, 1] {
        if let Ok(s) = mean_std(&x, ddof) {
            finite_in("mean_std.mean", s.mean, low, high);
            finite_in("mean_std.std", s.std, 0.0, f64::MAX);
        }
    }
    if let Ok(h) = harmonic_mean(&x) {
        finite_in("harmonic mean", h, 0.0, high.max(0.0));
    }
    if let Ok(p) = percentile(&x, q) {
        finite_in("percentile", p, low, high);
    }
    if let Ok(h) = hodges_lehmann(&x) {
        finite_in("hodges-lehmann", h, low, high);
    }
    if let Ok(w) = wilcoxon(&x, &y) {
        finite_in("wilcoxon p", w.p_value, 0.0, 1.0);
        finite_in("wilcoxon statistic", w.statistic, 0.0, f64::MAX);
    }
    let truth: Vec<u64> = x.iter().map(|v| v.to_bits() % 5).collect();
    let predicted: Vec<u64> = y.iter().map(|v| v.to_bits() % 3).collect();
    let v = v_measure(&truth, &predicted).unwrap();
    finite_in("v-measure", v.v_measure, 0.0, 1.0 + 1e-12);
});
