use crate::checks::{ensure_at_least, ensure_finite, ensure_same_len};
use sage_core::{Result, SageError};

/// Pearson's r, as `scipy.stats.pearsonr(x, y).statistic`.
///
/// Errors when the lengths differ, when there are fewer than 2 points, or when either input is
/// constant (scipy returns NaN there; a NaN inside a report is worse than a clear error, and the
/// caller decides what a constant similarity scores), or when a value is NaN or infinite.
pub fn pearson(x: &[f64], y: &[f64]) -> Result<f64> {
    ensure_same_len("pearson", x.len(), y.len())?;
    ensure_at_least("pearson", 2, x.len())?;
    ensure_finite("pearson", x)?;
    ensure_finite("pearson", y)?;
    // r does not change when x or y is scaled: compute it where squares neither overflow
    // (values near 1e155) nor vanish (subnormal values)
    let (x, _) = super::scaled_near_one(x);
    let (y, _) = super::scaled_near_one(y);
    let n = x.len() as f64;
    let mx = x.iter().sum::<f64>() / n;
    let my = y.iter().sum::<f64>() / n;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (&a, &b) in x.iter().zip(&y) {
        let (da, db) = (a - mx, b - my);
        sxy += da * db;
        sxx += da * da;
        syy += db * db;
    }
    if sxx == 0.0 || syy == 0.0 {
        return Err(SageError::undefined("pearson", "an input is constant"));
    }
    Ok((sxy / (sxx.sqrt() * syy.sqrt())).clamp(-1.0, 1.0))
}

/// Spearman's ρ, as `scipy.stats.spearmanr(x, y).statistic`: Pearson's r of the average ranks.
pub fn spearman(x: &[f64], y: &[f64]) -> Result<f64> {
    ensure_same_len("spearman", x.len(), y.len())?;
    pearson(&rank_average(x)?, &rank_average(y)?).map_err(|e| match e {
        SageError::Undefined { why, .. } => SageError::Undefined {
            what: "spearman",
            why,
        },
        other => other,
    })
}

/// 1-based ranks with ties given their average rank, as `scipy.stats.rankdata(method="average")`.
/// Errors on NaN (it has no rank).
pub fn rank_average(values: &[f64]) -> Result<Vec<f64>> {
    if values.iter().any(|v| v.is_nan()) {
        return Err(SageError::InvalidArgument("cannot rank NaN".into()));
    }
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; values.len()];
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        // -0.0 and 0.0 are equal values and must share a rank, so compare with ==.
        while end < order.len() && values[order[end]] == values[order[start]] {
            end += 1;
        }
        let average = (start + 1 + end) as f64 / 2.0;
        for &i in &order[start..end] {
            ranks[i] = average;
        }
        start = end;
    }
    Ok(ranks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assert_close;

    // Golden values: tests/python-reference/golden.py (scipy 1.17.1).
    const X: [f64; 10] = [0.1, 0.4, 0.35, 0.8, 0.8, 0.2, 0.95, 0.5, 0.5, 0.5];
    const Y: [f64; 10] = [1.0, 2.0, 2.5, 4.0, 3.5, 1.5, 5.0, 2.0, 3.0, 2.0];

    #[test]
    fn pearson_matches_scipy() {
        assert_close(pearson(&X, &Y).unwrap(), 0.937_677_820_177_318, 1e-12);
    }

    /// Found by the measures fuzz target: a NaN among the inputs gave Ok(NaN).
    #[test]
    fn pearson_refuses_nan_and_infinity() {
        let e = pearson(&[f64::NAN, 5e-323], &[9e-188, 0.0]).unwrap_err();
        assert!(e.to_string().contains("value 0 is NaN"), "{e}");
        assert!(pearson(&[1.0, 2.0], &[f64::INFINITY, 0.0]).is_err());
    }

    /// The same data at the ends of f64's range has the same r: squares of 1e155 overflowed to
    /// infinity (r printed 0), sums near f64::MAX to NaN (printed null), and squares of
    /// subnormals vanished (called "constant").
    #[test]
    fn pearson_holds_at_the_ends_of_the_range() {
        let want = pearson(&X, &Y).unwrap();
        for scale in [1e155, 1e300, f64::MAX / 2.0, 1e-310, 5e-324 * 1e3] {
            let x: Vec<f64> = X.iter().map(|v| v * scale).collect();
            let y: Vec<f64> = Y.iter().map(|v| v * (scale / 5.0)).collect();
            let got = pearson(&x, &y).unwrap();
            // subnormal inputs keep fewer digits of the data itself
            let tolerance = if scale < 1e-300 { 1e-3 } else { 1e-12 };
            assert_close(got, want, tolerance);
        }
    }

    #[test]
    fn spearman_matches_scipy_with_ties() {
        assert_close(spearman(&X, &Y).unwrap(), 0.884_739_495_645_627_5, 1e-12);
    }

    #[test]
    fn ranks_average_ties() {
        assert_eq!(
            rank_average(&[3.0, 1.0, 3.0, 2.0]).unwrap(),
            vec![3.5, 1.0, 3.5, 2.0]
        );
    }

    #[test]
    fn constant_input_is_an_error_not_nan() {
        assert!(matches!(
            pearson(&[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0]),
            Err(SageError::Undefined { .. })
        ));
        assert!(matches!(
            spearman(&[1.0, 2.0], &[5.0, 5.0]),
            Err(SageError::Undefined {
                what: "spearman",
                ..
            })
        ));
        assert!(pearson(&[1.0], &[1.0]).is_err());
        assert!(pearson(&[1.0, 2.0], &[1.0]).is_err());
    }
}

/// Permutations a Monte Carlo permutation test draws where an exact one would be too long.
pub const PERMUTATIONS: usize = 9999;

/// Two-sided permutation p-value of `statistic(x, y)` (a correlation): the share of pairings of
/// `x` with a permutation of `y` whose statistic is at least as far from zero as the observed
/// one (with a tolerance of 100 machine epsilons, as `scipy.stats.permutation_test`). Every
/// permutation is counted when there are at most 8 points (40,320 pairings); above that,
/// [`PERMUTATIONS`] drawn from `seed`'s stream `label`, with the `+1` correction of a Monte
/// Carlo test. scipy's two-sided rule doubles the smaller tail instead, which gives the same
/// value where the permutation distribution is symmetric (no tied ranks), and its exact branch
/// stops at 7 points. A permutation whose statistic is undefined (an error) does not count.
pub fn permutation_p(
    x: &[f64],
    y: &[f64],
    statistic: impl Fn(&[f64], &[f64]) -> Result<f64>,
    seed: sage_core::RunSeed,
    label: &str,
) -> Result<f64> {
    let observed = statistic(x, y)?;
    let gamma = (observed * f64::EPSILON * 100.0).abs();
    let extreme =
        |perm: &[f64]| statistic(x, perm).is_ok_and(|s| s.abs() >= observed.abs() - gamma);
    let n = y.len();
    if n <= 8 {
        let mut perm = y.to_vec();
        let (mut hits, mut total) = (0usize, 0usize);
        // Heap's algorithm: every ordering once
        let mut c = vec![0usize; n];
        total += 1;
        hits += usize::from(extreme(&perm));
        let mut i = 0;
        while i < n {
            if c[i] < i {
                if i % 2 == 0 {
                    perm.swap(0, i);
                } else {
                    perm.swap(c[i], i);
                }
                total += 1;
                hits += usize::from(extreme(&perm));
                c[i] += 1;
                i = 0;
            } else {
                c[i] = 0;
                i += 1;
            }
        }
        return Ok(hits as f64 / total as f64);
    }
    use rand::seq::SliceRandom;
    let mut rng = seed.rng(label);
    let mut perm = y.to_vec();
    let mut hits = 0usize;
    for _ in 0..PERMUTATIONS {
        perm.shuffle(&mut rng);
        hits += usize::from(extreme(&perm));
    }
    Ok((hits + 1) as f64 / (PERMUTATIONS + 1) as f64)
}

#[cfg(test)]
mod permutation_tests {
    use super::*;

    /// Five points in the same order: only the identity pairing (1 of 120) reaches ρ = 1, and
    /// its reverse reaches −1: p = 2/120, as scipy's exact test gives.
    #[test]
    fn exact_for_few_points() {
        let x = [1.0, 2.0, 3.0, 4.0, 5.0];
        let p = permutation_p(&x, &x, spearman, sage_core::RunSeed(1), "t").unwrap();
        assert!((p - 2.0 / 120.0).abs() < 1e-12, "{p}");
    }

    /// Many points without relation: a large p; in the same order: the smallest a Monte Carlo
    /// test gives, 1/10,000.
    #[test]
    fn monte_carlo_for_many_points() {
        let x: Vec<f64> = (0..30).map(f64::from).collect();
        let p = permutation_p(&x, &x, spearman, sage_core::RunSeed(1), "t").unwrap();
        assert!((p - 1.0 / 10_000.0).abs() < 1e-12, "{p}");
        let y: Vec<f64> = (0..30).map(|i| f64::from((i * 7) % 30)).collect();
        let p = permutation_p(&x, &y, spearman, sage_core::RunSeed(1), "t").unwrap();
        assert!(p > 0.05, "{p}");
    }
}
