use rand::Rng;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::checks::{ensure_at_least, ensure_finite, ensure_same_len};
use sage_core::RunSeed;
use sage_core::{Result, SageError};

/// Arithmetic mean. Errors on empty input.
///
/// Summed at a power-of-two scale (exact), so values near f64::MAX do not overflow the sum.
pub fn mean(values: &[f64]) -> Result<f64> {
    ensure_at_least("mean", 1, values.len())?;
    let (scaled, exponent) = super::scaled_near_one(values);
    finite(
        "mean",
        super::times_power_of_two(plain_mean(&scaled), exponent),
    )
}

/// Σ values / n, for values already brought near 1.
fn plain_mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// `value`, or an error saying `what` is not a finite number (never a NaN or an infinity passed
/// on to be printed as null).
fn finite(what: &'static str, value: f64) -> Result<f64> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(SageError::undefined(
            what,
            format!("the result ({value}) is not a finite number: an input is infinite or NaN, or the result exceeds f64's range"),
        ))
    }
}

/// Mean and standard deviation.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MeanStd {
    /// Arithmetic mean.
    pub mean: f64,
    /// Standard deviation with `ddof` degrees of freedom removed.
    pub std: f64,
    /// The `ddof` used: 0 = population (numpy's default), 1 = sample.
    pub ddof: usize,
    /// Number of values.
    pub n: usize,
}

/// Mean and standard deviation as `numpy.mean` and `numpy.std(ddof=ddof)`.
pub fn mean_std(values: &[f64], ddof: usize) -> Result<MeanStd> {
    ensure_at_least("standard deviation", ddof + 1, values.len())?;
    // mean and deviations at one power-of-two scale: near 1e155 squares overflow, near 1e-160
    // they vanish
    let (scaled, exponent) = super::scaled_near_one(values);
    let scaled_mean = plain_mean(&scaled);
    let m = finite("mean", super::times_power_of_two(scaled_mean, exponent))?;
    let ss: f64 = scaled
        .iter()
        .map(|v| (v - scaled_mean) * (v - scaled_mean))
        .sum();
    let std = super::times_power_of_two((ss / (values.len() - ddof) as f64).sqrt(), exponent);
    Ok(MeanStd {
        mean: m,
        std: finite("standard deviation", std)?,
        ddof,
        n: values.len(),
    })
}

/// Harmonic mean as `scipy.stats.hmean`: values must be ≥ 0, and any zero makes it 0.
pub fn harmonic_mean(values: &[f64]) -> Result<f64> {
    ensure_at_least("harmonic mean", 1, values.len())?;
    if let Some(bad) = values.iter().find(|v| v.is_nan() || **v < 0.0) {
        return Err(SageError::InvalidArgument(format!(
            "harmonic mean needs values >= 0, got {bad}"
        )));
    }
    if values.contains(&0.0) {
        return Ok(0.0);
    }
    // reciprocals at a power-of-two scale that brings the smallest value near 1: 1/v of a
    // subnormal v is infinite, which made the mean 0
    let smallest = values.iter().copied().fold(f64::INFINITY, f64::min);
    let exponent = smallest.log2().floor() as i32;
    let sum: f64 = values
        .iter()
        .map(|&v| 1.0 / super::times_power_of_two(v, -exponent))
        .sum();
    finite(
        "harmonic mean",
        super::times_power_of_two(values.len() as f64 / sum, exponent),
    )
}

/// The `q`-th percentile (0–100) with linear interpolation, as `numpy.percentile` (default
/// method, including its interpolation formula).
/// Errors on a NaN or infinite value, which has no place in an interpolated percentile.
pub fn percentile(values: &[f64], q: f64) -> Result<f64> {
    ensure_at_least("percentile", 1, values.len())?;
    ensure_finite("percentile", values)?;
    if !(0.0..=100.0).contains(&q) {
        return Err(SageError::InvalidArgument(format!(
            "percentile must be in [0, 100], got {q}"
        )));
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    Ok(percentile_sorted(&sorted, q))
}

fn percentile_sorted(sorted: &[f64], q: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * (q / 100.0);
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    let (a, b, t) = (sorted[lo], sorted[hi], h - lo as f64);
    let diff = b - a;
    if !diff.is_finite() && a.is_finite() && b.is_finite() {
        // a and b on either side of ±f64::MAX / 2: their difference overflows, a weighted sum
        // does not (numpy returns inf or NaN here)
        return a * (1.0 - t) + b * t;
    }
    if t >= 0.5 {
        b - diff * (1.0 - t)
    } else {
        a + diff * t
    }
}

/// Hodges–Lehmann estimate of a paired location shift, with a percentile-bootstrap interval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HodgesLehmann {
    /// Median of the Walsh averages of `x − y`.
    pub estimate: f64,
    /// Lower end of the bootstrap interval.
    pub ci_low: f64,
    /// Upper end of the bootstrap interval.
    pub ci_high: f64,
    /// Coverage of the interval, e.g. 0.95.
    pub confidence: f64,
    /// Number of bootstrap resamples.
    pub resamples: usize,
    /// Run seed the resamples were drawn from.
    pub seed: RunSeed,
    /// Number of pairs.
    pub n: usize,
}

/// Hodges–Lehmann estimator of a one-sample location: the median of the Walsh averages
/// `(d_i + d_j) / 2` over `i ≤ j`. Uses O(n²) memory: n = 10,000 needs 400 MB.
pub fn hodges_lehmann(differences: &[f64]) -> Result<f64> {
    ensure_at_least("Hodges-Lehmann", 1, differences.len())?;
    ensure_finite("Hodges-Lehmann", differences)?;
    let n = differences.len();
    let mut walsh = Vec::with_capacity(n * (n + 1) / 2);
    // f64::midpoint is (a + b) / 2 to the bit where that sum is finite, and a / 2 + b / 2 where
    // it would overflow (values beyond f64::MAX / 2)
    for i in 0..n {
        for j in i..n {
            walsh.push(differences[i].midpoint(differences[j]));
        }
    }
    Ok(median_in_place(&mut walsh))
}

fn median_in_place(v: &mut [f64]) -> f64 {
    let mid = v.len() / 2;
    let (_, upper, _) = v.select_nth_unstable_by(mid, f64::total_cmp);
    let upper = *upper;
    if v.len() % 2 == 1 {
        upper
    } else {
        let lower = v[..mid].iter().copied().fold(f64::NEG_INFINITY, f64::max);
        lower.midpoint(upper)
    }
}

/// Hodges–Lehmann estimate of `x − y` with a percentile-bootstrap confidence interval: the pairs
/// are resampled with replacement `resamples` times; resample `b` draws from
/// `seed.rng_for_item("hodges-lehmann-bootstrap", b)`, so the interval is the same on any
/// number of threads.
pub fn hodges_lehmann_bootstrap(
    x: &[f64],
    y: &[f64],
    confidence: f64,
    resamples: usize,
    seed: RunSeed,
) -> Result<HodgesLehmann> {
    ensure_same_len("Hodges-Lehmann", x.len(), y.len())?;
    check_confidence(confidence)?;
    ensure_at_least("bootstrap resamples", 1, resamples)?;
    let d: Vec<f64> = x.iter().zip(y).map(|(a, b)| a - b).collect();
    let estimate = hodges_lehmann(&d)?;
    let mut boot: Vec<f64> = (0..resamples)
        .into_par_iter()
        .map(|b| {
            let mut rng = seed.rng_for_item("hodges-lehmann-bootstrap", b as u64);
            let sample: Vec<f64> = (0..d.len()).map(|_| d[rng.gen_range(0..d.len())]).collect();
            hodges_lehmann(&sample)
        })
        .collect::<Result<_>>()?;
    boot.sort_by(f64::total_cmp);
    let (ci_low, ci_high) = central_range(&boot, confidence);
    Ok(HodgesLehmann {
        estimate,
        ci_low,
        ci_high,
        confidence,
        resamples,
        seed,
        n: d.len(),
    })
}

/// The mean of `values` at the `drawn` indices: the resampled score of a dataset whose score is
/// the mean of its units' scores.
pub fn mean_at(values: &[f64], drawn: &[usize]) -> f64 {
    drawn.iter().map(|&i| values[i]).sum::<f64>() / drawn.len() as f64
}

/// Resamples behind every category interval the task crates report.
pub const BOOTSTRAP_RESAMPLES: usize = 1000;

/// A percentile-bootstrap confidence interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct BootstrapInterval {
    /// Lower end.
    pub low: f64,
    /// Upper end.
    pub high: f64,
    /// Coverage, e.g. 0.95.
    pub confidence: f64,
    /// Resamples whose statistic was defined (the interval is taken over these).
    pub resamples: usize,
}

/// A coverage for an interval: in (0, 1).
fn check_confidence(confidence: f64) -> Result<()> {
    if confidence > 0.0 && confidence < 1.0 {
        Ok(())
    } else {
        Err(SageError::InvalidArgument(format!(
            "confidence must be in (0, 1), got {confidence}"
        )))
    }
}

/// The central `confidence` range of sorted values: its (low, high) percentiles.
fn central_range(sorted: &[f64], confidence: f64) -> (f64, f64) {
    let tail = (1.0 - confidence) / 2.0 * 100.0;
    (
        percentile_sorted(sorted, tail),
        percentile_sorted(sorted, 100.0 - tail),
    )
}

/// The percentile interval of resampled statistics, the undefined ones (`None`) left out;
/// `None` when fewer than half of them are defined.
pub fn percentile_interval(
    values: &[Option<f64>],
    confidence: f64,
) -> Result<Option<BootstrapInterval>> {
    check_confidence(confidence)?;
    let mut defined: Vec<f64> = values.iter().flatten().copied().collect();
    if defined.is_empty() || defined.len() * 2 < values.len() {
        return Ok(None);
    }
    defined.sort_by(f64::total_cmp);
    let (low, high) = central_range(&defined, confidence);
    Ok(Some(BootstrapInterval {
        low,
        high,
        confidence,
        resamples: defined.len(),
    }))
}

/// Every resample's statistic of a stratified bootstrap, kept with what made the draws.
///
/// Resample `b` draws its unit indices from `(seed, label, b)` and the group sizes alone, so two
/// runs with the same seed, label and group sizes drew the same units in every resample: when
/// those units are the same documents (same data, same options), `values[b]` of one run and of
/// the other form a paired bootstrap of their difference. The report's ranking uses exactly this,
/// without the units themselves being written anywhere.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BootstrapReplicates {
    /// The stream label the draws came from (`"robustness/bootstrap"`, ...).
    pub label: String,
    /// The run seed the draws came from.
    pub seed: u64,
    /// Units per group (documents per dataset, ...), in the run's group order.
    pub group_sizes: Vec<usize>,
    /// The statistic of resample `b`; `None` where it was not finite (a draw with one class, ...).
    pub values: Vec<Option<f64>>,
}

impl BootstrapReplicates {
    /// The percentile interval over the defined resamples; `None` when fewer than half of them
    /// are defined.
    pub fn interval(&self, confidence: f64) -> Result<Option<BootstrapInterval>> {
        percentile_interval(&self.values, confidence)
    }

    /// Whether resample `b` of `self` and of `other` drew the same unit indices for every `b`
    /// (same label, seed, group sizes and resample count). Whether the units are the same
    /// documents is the caller's to know (same data and options).
    pub fn drawn_like(&self, other: &BootstrapReplicates) -> bool {
        self.label == other.label
            && self.seed == other.seed
            && self.group_sizes == other.group_sizes
            && self.values.len() == other.values.len()
    }
}

/// The 95% percentile interval of a task's resamples, when it has them: the `ci95` every SAGE
/// category reports beside its `bootstrap`.
pub fn ci95(replicates: Option<&BootstrapReplicates>) -> Result<Option<BootstrapInterval>> {
    Ok(match replicates {
        Some(r) => r.interval(0.95)?,
        None => None,
    })
}

/// The unit indices of resample `b` of [`bootstrap_replicates`]: every group resampled with
/// replacement to its own size, from `seed.rng_for_item(label, b)`. For a task that computes
/// many statistics from one resample (a statistic per condition, then their summary), so that
/// each is drawn like the category's replicates.
pub fn bootstrap_draw(
    group_sizes: &[usize],
    seed: RunSeed,
    label: &str,
    b: usize,
) -> Vec<Vec<usize>> {
    let mut rng = seed.rng_for_item(label, b as u64);
    group_sizes
        .iter()
        .map(|&n| (0..n).map(|_| rng.gen_range(0..n)).collect())
        .collect()
}

/// Stratified bootstrap of a statistic over groups of units (the documents of each dataset, the
/// queries of each corpus, ...). In resample `b` every group is resampled with replacement to its
/// own size, from `seed.rng_for_item(label, b)`, and `statistic` gets the drawn unit indices of
/// every group. `None` when there is no group or a group is empty. The same seed gives the same
/// values on any number of threads.
pub fn bootstrap_replicates(
    group_sizes: &[usize],
    statistic: impl Fn(&[Vec<usize>]) -> f64 + Sync,
    resamples: usize,
    seed: RunSeed,
    label: &str,
) -> Result<Option<BootstrapReplicates>> {
    ensure_at_least("bootstrap resamples", 1, resamples)?;
    if group_sizes.is_empty() || group_sizes.contains(&0) {
        return Ok(None);
    }
    let values: Vec<Option<f64>> = (0..resamples)
        .into_par_iter()
        .map(|b| {
            let drawn = bootstrap_draw(group_sizes, seed, label, b);
            Some(statistic(&drawn)).filter(|v| v.is_finite())
        })
        .collect();
    Ok(Some(BootstrapReplicates {
        label: label.to_owned(),
        seed: seed.0,
        group_sizes: group_sizes.to_vec(),
        values,
    }))
}

/// The percentile interval of [`bootstrap_replicates`]: `None` when a group is empty or fewer
/// than half the resamples are defined.
pub fn bootstrap_interval(
    group_sizes: &[usize],
    statistic: impl Fn(&[Vec<usize>]) -> f64 + Sync,
    confidence: f64,
    resamples: usize,
    seed: RunSeed,
    label: &str,
) -> Result<Option<BootstrapInterval>> {
    check_confidence(confidence)?;
    match bootstrap_replicates(group_sizes, statistic, resamples, seed, label)? {
        Some(r) => r.interval(confidence),
        None => Ok(None),
    }
}

/// The [`BOOTSTRAP_RESAMPLES`] replicates of the mean over groups of the mean unit score in each
/// group: the shape of every SAGE category whose dataset score is a mean over units (documents,
/// subsets).
pub fn bootstrap_mean_of_means(
    groups: &[&[f64]],
    seed: RunSeed,
    label: &str,
) -> Result<Option<BootstrapReplicates>> {
    let sizes: Vec<usize> = groups.iter().map(|g| g.len()).collect();
    bootstrap_replicates(
        &sizes,
        |drawn| {
            drawn
                .iter()
                .zip(groups)
                .map(|(idx, g)| mean_at(g, idx))
                .sum::<f64>()
                / groups.len() as f64
        },
        BOOTSTRAP_RESAMPLES,
        seed,
        label,
    )
}

/// The two-sided paired-bootstrap comparison of two runs' replicates (drawn alike: see
/// [`BootstrapReplicates::drawn_like`]): the difference `a − b` of the point estimates, the
/// percentile interval of the per-resample differences, and the p-value
/// `min(1, 2·min(#(d ≤ 0) + 1, #(d ≥ 0) + 1) / (n + 1))` over the resamples where both are
/// defined (the +1 keeps a p-value of 0 from ever being printed for a finite number of draws).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairedDifference {
    /// `estimate_a − estimate_b`.
    pub difference: f64,
    /// Percentile interval of the resampled differences.
    pub ci_low: f64,
    /// Upper end of that interval.
    pub ci_high: f64,
    /// Two-sided bootstrap p-value of "no difference".
    pub p_value: f64,
    /// Resamples where both statistics were defined.
    pub resamples: usize,
}

/// Paired bootstrap of `a − b` from replicate vectors drawn alike (index `b` of each is the same
/// draw of the same units); `None` when fewer than half the resamples are defined in both.
pub fn paired_bootstrap(
    estimate_a: f64,
    estimate_b: f64,
    a: &[Option<f64>],
    b: &[Option<f64>],
    confidence: f64,
) -> Result<Option<PairedDifference>> {
    if a.len() != b.len() {
        return Err(SageError::InvalidArgument(format!(
            "paired bootstrap needs replicates of one length, got {} and {}",
            a.len(),
            b.len()
        )));
    }
    check_confidence(confidence)?;
    let mut d: Vec<f64> = a
        .iter()
        .zip(b)
        .filter_map(|(x, y)| Some((*x)? - (*y)?))
        .collect();
    if d.is_empty() || d.len() * 2 < a.len() {
        return Ok(None);
    }
    d.sort_by(f64::total_cmp);
    let n = d.len();
    let at_most_zero = d.iter().filter(|&&x| x <= 0.0).count();
    let at_least_zero = d.iter().filter(|&&x| x >= 0.0).count();
    let (ci_low, ci_high) = central_range(&d, confidence);
    Ok(Some(PairedDifference {
        difference: estimate_a - estimate_b,
        ci_low,
        ci_high,
        p_value: (2.0 * (at_most_zero.min(at_least_zero) + 1) as f64 / (n + 1) as f64).min(1.0),
        resamples: n,
    }))
}

/// How a Wilcoxon p-value was computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WilcoxonMethod {
    /// Exact null distribution of the signed-rank statistic (no ties, no zeros, n ≤ 50).
    Exact,
    /// Exact enumeration of all sign flips (ties or zeros, n ≤ 13).
    Permutation,
    /// Normal approximation with tie correction, no continuity correction.
    Asymptotic,
}

/// A two-sided Wilcoxon signed-rank test.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Wilcoxon {
    /// min(R+, R−).
    pub statistic: f64,
    /// Two-sided p-value.
    pub p_value: f64,
    /// How the p-value was computed.
    pub method: WilcoxonMethod,
    /// Pairs with a non-zero difference (the ones ranked).
    pub n_nonzero: usize,
    /// Pairs with a zero difference (dropped, zero_method="wilcox").
    pub n_zero: usize,
}

/// Two-sided Wilcoxon signed-rank test of `x − y`, as `scipy.stats.wilcoxon(x, y)` with its
/// defaults in scipy 1.17 (zero_method="wilcox", correction=False, method="auto"): over 50 pairs
/// the normal approximation; otherwise the exact distribution when there are no ties and no zeros,
/// exact sign-flip enumeration when there are and n ≤ 13, and the normal approximation beyond.
pub fn wilcoxon(x: &[f64], y: &[f64]) -> Result<Wilcoxon> {
    ensure_same_len("wilcoxon", x.len(), y.len())?;
    let d: Vec<f64> = x.iter().zip(y).map(|(a, b)| a - b).collect();
    if d.iter().any(|v| v.is_nan()) {
        return Err(SageError::InvalidArgument(
            "wilcoxon: NaN in the data".into(),
        ));
    }
    let nonzero: Vec<f64> = d.iter().copied().filter(|&v| v != 0.0).collect();
    let n_zero = d.len() - nonzero.len();
    if nonzero.is_empty() {
        return Err(SageError::undefined("wilcoxon", "every difference is zero"));
    }
    let abs: Vec<f64> = nonzero.iter().map(|v| v.abs()).collect();
    let ranks = super::rank_average(&abs)?;
    let r_plus: f64 = nonzero
        .iter()
        .zip(&ranks)
        .filter(|(v, _)| **v > 0.0)
        .map(|(_, r)| r)
        .sum();
    let r_minus: f64 = nonzero
        .iter()
        .zip(&ranks)
        .filter(|(v, _)| **v < 0.0)
        .map(|(_, r)| r)
        .sum();
    let tie_sizes = tie_group_sizes(&abs);
    let has_ties = tie_sizes.iter().any(|&t| t > 1);
    let n = nonzero.len();

    let method = if d.len() > 50 {
        WilcoxonMethod::Asymptotic
    } else if !has_ties && n_zero == 0 {
        WilcoxonMethod::Exact
    } else if d.len() <= 13 {
        WilcoxonMethod::Permutation
    } else {
        WilcoxonMethod::Asymptotic
    };
    let p_value = match method {
        WilcoxonMethod::Exact => exact_p(n, r_plus),
        WilcoxonMethod::Permutation => permutation_p(&ranks, r_plus),
        WilcoxonMethod::Asymptotic => {
            let nf = n as f64;
            let mean = nf * (nf + 1.0) / 4.0;
            let tie_term: f64 = tie_sizes
                .iter()
                .map(|&t| (t as f64).powi(3) - t as f64)
                .sum();
            let se = ((nf * (nf + 1.0) * (2.0 * nf + 1.0) - tie_term / 2.0) / 24.0).sqrt();
            let z = (r_plus - mean) / se;
            (statrs::function::erf::erfc(z.abs() / std::f64::consts::SQRT_2)).min(1.0)
        }
    };
    Ok(Wilcoxon {
        statistic: r_plus.min(r_minus),
        p_value,
        method,
        n_nonzero: n,
        n_zero,
    })
}

fn tie_group_sizes(values: &[f64]) -> Vec<usize> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.chunk_by(|a, b| a == b).map(<[f64]>::len).collect()
}

/// Counts of subsets of {1..n} by their sum: the null distribution of R+ times 2^n.
fn signed_rank_counts(n: usize) -> Vec<f64> {
    let max = n * (n + 1) / 2;
    let mut counts = vec![0f64; max + 1];
    counts[0] = 1.0;
    for k in 1..=n {
        for s in (k..=k * (k + 1) / 2).rev() {
            counts[s] += counts[s - k];
        }
    }
    counts
}

fn exact_p(n: usize, r_plus: f64) -> f64 {
    let counts = signed_rank_counts(n);
    let total = 2f64.powi(n as i32);
    let k_sf = r_plus.floor() as usize;
    let k_cdf = r_plus.ceil() as usize;
    let sf: f64 = counts[k_sf.min(counts.len())..].iter().sum::<f64>() / total;
    let cdf: f64 = counts[..=k_cdf.min(counts.len() - 1)].iter().sum::<f64>() / total;
    (2.0 * sf.min(cdf)).clamp(0.0, 1.0)
}

fn permutation_p(ranks: &[f64], observed: f64) -> f64 {
    // scipy.stats.permutation_test's exact branch: all 2^n sign flips, with a relative tolerance of
    // 100 machine epsilons when comparing to the observed statistic, and no +1 adjustment.
    let gamma = (observed * f64::EPSILON * 100.0).abs();
    let flips = 1u64 << ranks.len();
    let (mut less, mut greater) = (0u64, 0u64);
    for mask in 0..flips {
        let stat: f64 = ranks
            .iter()
            .enumerate()
            .filter(|(i, _)| mask >> i & 1 == 1)
            .map(|(_, r)| r)
            .sum();
        if stat <= observed + gamma {
            less += 1;
        }
        if stat >= observed - gamma {
            greater += 1;
        }
    }
    (2.0 * less.min(greater) as f64 / flips as f64).clamp(0.0, 1.0)
}

/// Holm–Bonferroni adjusted p-values and rejections.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HolmAdjusted {
    /// Adjusted p-values, in input order.
    pub adjusted: Vec<f64>,
    /// Whether each hypothesis is rejected at `alpha`, in input order.
    pub reject: Vec<bool>,
    /// Family-wise error rate.
    pub alpha: f64,
}

/// Holm's step-down correction, as `statsmodels.stats.multitest.multipletests(p, alpha,
/// method="holm")`.
pub fn holm(p_values: &[f64], alpha: f64) -> Result<HolmAdjusted> {
    if let Some(bad) = p_values.iter().find(|p| !(0.0..=1.0).contains(*p)) {
        return Err(SageError::InvalidArgument(format!(
            "p-values must be in [0, 1], got {bad}"
        )));
    }
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p_values[a].total_cmp(&p_values[b]));
    let mut adjusted = vec![0.0; m];
    let mut reject = vec![false; m];
    let mut running_max = 0f64;
    let mut still_rejecting = true;
    for (i, &idx) in order.iter().enumerate() {
        let factor = (m - i) as f64;
        running_max = running_max.max(p_values[idx] * factor);
        adjusted[idx] = running_max.min(1.0);
        still_rejecting &= p_values[idx] <= alpha / factor;
        reject[idx] = still_rejecting;
    }
    Ok(HolmAdjusted {
        adjusted,
        reject,
        alpha,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assert_close;

    // Golden values: tests/python-reference/golden.py (numpy 2, scipy 1.17.1, statsmodels).
    #[test]
    fn mean_std_and_hmean() {
        let v = [0.2, 0.5, 0.9, 0.4];
        let ms = mean_std(&v, 0).unwrap();
        assert_close(ms.mean, 0.5, 1e-15);
        assert_close(ms.std, GOLD_STD0, 1e-12);
        assert_close(mean_std(&v, 1).unwrap().std, GOLD_STD1, 1e-12);
        assert_close(harmonic_mean(&v).unwrap(), GOLD_HMEAN, 1e-12);
        assert_eq!(harmonic_mean(&[0.5, 0.0]).unwrap(), 0.0);
        assert!(harmonic_mean(&[-1.0]).is_err());
    }

    /// The same values scaled to the ends of f64's range give the same results scaled: sums
    /// near f64::MAX overflowed, squares of 1e155 overflowed, reciprocals of subnormals were
    /// infinite (a harmonic mean of 0).
    #[test]
    fn means_hold_at_the_ends_of_the_range() {
        let v = [0.2, 0.5, 0.9, 0.4];
        for scale in [f64::MAX, 1e155, 1e-310] {
            let x: Vec<f64> = v.iter().map(|a| a * scale).collect();
            let ms = mean_std(&x, 0).unwrap();
            let tolerance = if scale < 1e-300 { 1e-3 } else { 1e-12 };
            assert_close(ms.mean / scale, 0.5, tolerance);
            assert_close(ms.std / scale, GOLD_STD0, tolerance);
            assert_close(harmonic_mean(&x).unwrap() / scale, GOLD_HMEAN, tolerance);
        }
        assert_eq!(mean(&[f64::MAX, f64::MAX]).unwrap(), f64::MAX);
        assert!(mean(&[f64::INFINITY, 1.0]).is_err());
    }

    #[test]
    fn hodges_lehmann_survives_values_past_half_of_f64_max() {
        // found by the measures fuzz target: Walsh averages (a + b) / 2 overflowed to -inf
        let big = -1.4e308;
        assert_eq!(hodges_lehmann(&[big]).unwrap(), big);
        // Walsh averages big ×3, big/2 ×2, 1: the median is halfway between big and big/2
        assert_eq!(hodges_lehmann(&[big, big, 1.0]).unwrap(), 0.75 * big);
        assert!(hodges_lehmann(&[f64::INFINITY]).is_err());
    }

    #[test]
    fn percentile_refuses_non_finite_values_and_survives_extremes() {
        // found by the measures fuzz target: [NaN] gave Ok(NaN), [-1e308, 1e308] gave NaN
        assert!(percentile(&[f64::NAN], 50.0).is_err());
        assert!(percentile(&[1.0, f64::INFINITY], 50.0).is_err());
        let mid = percentile(&[-1e308, 1e308], 50.0).unwrap();
        assert_eq!(mid, 0.0);
        let quarter = percentile(&[-1e308, 1e308], 25.0).unwrap();
        assert!(quarter.is_finite() && quarter < 0.0);
    }

    #[test]
    fn percentile_matches_numpy() {
        let v = [3.0, 1.0, 4.0, 1.5, 9.0, 2.6];
        assert_close(percentile(&v, 2.5).unwrap(), GOLD_P2_5, 1e-12);
        assert_close(percentile(&v, 97.5).unwrap(), GOLD_P97_5, 1e-12);
        assert_close(percentile(&v, 50.0).unwrap(), GOLD_P50, 1e-12);
    }

    #[test]
    fn hodges_lehmann_is_median_of_walsh_averages() {
        let d = [0.3, -0.1, 0.5, 0.2, 0.05, 0.7, -0.2];
        assert_close(hodges_lehmann(&d).unwrap(), GOLD_HL_ODD, 1e-12);
        assert_close(hodges_lehmann(&d[..6]).unwrap(), GOLD_HL_EVEN, 1e-12);
    }

    #[test]
    fn stratified_bootstrap_is_seeded_brackets_the_mean_and_shrinks_with_n() {
        let small: Vec<f64> = (0..20).map(|i| (i % 5) as f64 / 4.0).collect();
        let large: Vec<f64> = (0..2000).map(|i| (i % 5) as f64 / 4.0).collect();
        let a = bootstrap_mean_of_means(&[&small, &large], RunSeed(5), "t")
            .unwrap()
            .unwrap()
            .interval(0.95)
            .unwrap()
            .unwrap();
        assert_eq!(
            a,
            bootstrap_mean_of_means(&[&small, &large], RunSeed(5), "t")
                .unwrap()
                .unwrap()
                .interval(0.95)
                .unwrap()
                .unwrap()
        );
        assert!(a.low < 0.5 && 0.5 < a.high, "{a:?}");
        let wide = bootstrap_mean_of_means(&[&small], RunSeed(5), "t")
            .unwrap()
            .unwrap()
            .interval(0.95)
            .unwrap()
            .unwrap();
        let narrow = bootstrap_mean_of_means(&[&large], RunSeed(5), "t")
            .unwrap()
            .unwrap()
            .interval(0.95)
            .unwrap()
            .unwrap();
        assert!(
            wide.high - wide.low > 5.0 * (narrow.high - narrow.low),
            "{wide:?} {narrow:?}"
        );
        // a constant has a point interval; an empty group has none; an undefined statistic none
        let c = bootstrap_mean_of_means(&[&[0.3; 10]], RunSeed(1), "t")
            .unwrap()
            .unwrap()
            .interval(0.95)
            .unwrap()
            .unwrap();
        assert!((c.low - 0.3).abs() < 1e-12 && (c.high - 0.3).abs() < 1e-12);
        assert_eq!(
            bootstrap_mean_of_means(&[&[]], RunSeed(1), "t").unwrap(),
            None
        );
        assert_eq!(
            bootstrap_interval(&[3], |_| f64::NAN, 0.95, 100, RunSeed(1), "t").unwrap(),
            None
        );
    }

    #[test]
    fn replicates_drawn_alike_pair_up_and_give_the_interval() {
        let x: Vec<f64> = (0..30).map(|i| (i as f64 * 0.37).sin()).collect();
        let y: Vec<f64> = x.iter().map(|v| v + 0.25).collect();
        let a = bootstrap_mean_of_means(&[&x], RunSeed(5), "t")
            .unwrap()
            .unwrap();
        let b = bootstrap_mean_of_means(&[&y], RunSeed(5), "t")
            .unwrap()
            .unwrap();
        assert!(a.drawn_like(&b));
        // the same draws: every resampled difference is exactly the shift
        for (p, q) in a.values.iter().zip(&b.values) {
            assert!((q.unwrap() - p.unwrap() - 0.25).abs() < 1e-12);
        }
        let d = paired_bootstrap(0.0, 0.25, &a.values, &b.values, 0.95)
            .unwrap()
            .unwrap();
        assert!(
            (d.ci_low + 0.25).abs() < 1e-12 && (d.ci_high + 0.25).abs() < 1e-12,
            "{d:?}"
        );
        // every difference is below 0: the smallest p a 1000-resample bootstrap can give
        assert!((d.p_value - 2.0 / 1001.0).abs() < 1e-15, "{d:?}");
        let other = bootstrap_mean_of_means(&[&y], RunSeed(6), "t")
            .unwrap()
            .unwrap();
        assert!(!a.drawn_like(&other));
        // interval() equals bootstrap_interval on the same draws
        let direct = bootstrap_interval(
            &[30],
            |d| d[0].iter().map(|&i| x[i]).sum::<f64>() / 30.0,
            0.95,
            BOOTSTRAP_RESAMPLES,
            RunSeed(5),
            "t",
        )
        .unwrap();
        assert_eq!(a.interval(0.95).unwrap(), direct);
    }

    #[test]
    fn paired_bootstrap_of_a_run_with_itself_is_not_significant() {
        let x: Vec<f64> = (0..25).map(|i| (i as f64 * 0.91).cos()).collect();
        let a = bootstrap_mean_of_means(&[&x], RunSeed(2), "t")
            .unwrap()
            .unwrap();
        let d = paired_bootstrap(1.0, 1.0, &a.values, &a.values, 0.95)
            .unwrap()
            .unwrap();
        assert_eq!(
            (d.difference, d.ci_low, d.ci_high, d.p_value),
            (0.0, 0.0, 0.0, 1.0)
        );
        assert!(paired_bootstrap(0.0, 0.0, &a.values, &a.values[1..], 0.95).is_err());
        let undefined = vec![None; a.values.len()];
        assert_eq!(
            paired_bootstrap(0.0, 0.0, &a.values, &undefined, 0.95).unwrap(),
            None
        );
    }

    #[test]
    fn bootstrap_is_deterministic_and_brackets_the_estimate() {
        let x: Vec<f64> = (0..40).map(|i| (i as f64 * 0.37).sin() + 0.3).collect();
        let y: Vec<f64> = (0..40).map(|i| (i as f64 * 0.91).cos() * 0.5).collect();
        let a = hodges_lehmann_bootstrap(&x, &y, 0.95, 200, RunSeed(3)).unwrap();
        let b = hodges_lehmann_bootstrap(&x, &y, 0.95, 200, RunSeed(3)).unwrap();
        assert_eq!(a, b);
        assert!(a.ci_low <= a.estimate && a.estimate <= a.ci_high, "{a:?}");
        let c = hodges_lehmann_bootstrap(&x, &y, 0.95, 200, RunSeed(4)).unwrap();
        assert_ne!(a.ci_low, c.ci_low);
    }

    #[test]
    #[allow(clippy::approx_constant)] // 3.14 is data, not π
    fn wilcoxon_exact_matches_scipy() {
        let x = [1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30];
        let y = [0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29];
        let w = wilcoxon(&x, &y).unwrap();
        assert_eq!(w.method, WilcoxonMethod::Exact);
        assert_close(w.statistic, GOLD_W_EXACT.0, 1e-12);
        assert_close(w.p_value, GOLD_W_EXACT.1, 1e-12);
    }

    #[test]
    fn wilcoxon_permutation_matches_scipy() {
        let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
        let y = [0.5, 2.5, 2.5, 3.0, 5.0, 5.0, 6.0, 9.0];
        let w = wilcoxon(&x, &y).unwrap();
        assert_eq!(w.method, WilcoxonMethod::Permutation);
        assert_eq!(w.n_zero, 1);
        assert_close(w.statistic, GOLD_W_PERM.0, 1e-12);
        assert_close(w.p_value, GOLD_W_PERM.1, 1e-12);
    }

    #[test]
    fn wilcoxon_asymptotic_matches_scipy() {
        let x: Vec<f64> = (0..60).map(|i| ((i * 37 % 17) as f64) / 4.0).collect();
        let y: Vec<f64> = (0..60).map(|i| ((i * 11 % 13) as f64) / 4.0).collect();
        let w = wilcoxon(&x, &y).unwrap();
        assert_eq!(w.method, WilcoxonMethod::Asymptotic);
        assert_close(w.statistic, GOLD_W_ASYM.0, 1e-12);
        // statrs' erfc and scipy's ndtr differ in the 12th digit
        assert_close(w.p_value, GOLD_W_ASYM.1, 1e-10);
        // 20 pairs with ties: asymptotic as well
        let w20 = wilcoxon(&x[..20], &y[..20]).unwrap();
        assert_eq!(w20.method, WilcoxonMethod::Asymptotic);
        assert_close(w20.statistic, GOLD_W_ASYM20.0, 1e-12);
        assert_close(w20.p_value, GOLD_W_ASYM20.1, 1e-10);
        assert!(wilcoxon(&[1.0, 2.0], &[1.0, 2.0]).is_err());
    }

    #[test]
    fn holm_matches_statsmodels() {
        let p = [0.01, 0.04, 0.03, 0.005, 0.20];
        let h = holm(&p, 0.05).unwrap();
        for (got, want) in h.adjusted.iter().zip(GOLD_HOLM) {
            assert_close(*got, want, 1e-12);
        }
        assert_eq!(h.reject, GOLD_HOLM_REJECT);
    }

    const GOLD_STD0: f64 = 0.254_950_975_679_639_26;
    const GOLD_STD1: f64 = 0.294_392_028_877_594_9;
    const GOLD_HMEAN: f64 = 0.376_963_350_785_340_3;
    const GOLD_P2_5: f64 = 1.0625;
    const GOLD_P97_5: f64 = 8.375;
    const GOLD_P50: f64 = 2.8;
    const GOLD_HL_ODD: f64 = 0.2;
    const GOLD_HL_EVEN: f64 = 0.275;
    const GOLD_W_EXACT: (f64, f64) = (5.0, 0.039_062_5);
    const GOLD_W_PERM: (f64, f64) = (7.5, 0.375);
    const GOLD_W_ASYM: (f64, f64) = (434.0, 0.048_233_062_110_693_1);
    const GOLD_W_ASYM20: (f64, f64) = (50.0, 0.350_525_603_069_242_1);
    const GOLD_HOLM: [f64; 5] = [0.04, 0.09, 0.09, 0.025, 0.2];
    const GOLD_HOLM_REJECT: [bool; 5] = [true, false, false, true, false];
}
