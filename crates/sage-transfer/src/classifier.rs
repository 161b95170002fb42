//! SentEval's classifier: L2-regularised logistic regression, binary for two classes and
//! multinomial (softmax) for more, as scikit-learn's `LogisticRegression(C=c)` fits it.
//!
//! linfa-logistic minimises `Σᵢ −log p(yᵢ | xᵢ) + α/2 ‖W‖²` with the intercept left out of the
//! penalty; scikit-learn minimises `C · Σᵢ −log p(yᵢ | xᵢ) + 1/2 ‖W‖²`, also without the
//! intercept. With `α = 1/C` the two are one objective, and it is strictly convex, so both
//! solvers reach the same weights where they converge: the reference is matched by solving to
//! a tight gradient tolerance, not by imitating a solver's path. Two classes are one weight
//! vector (scikit-learn's binary model, not a two-class softmax, whose penalty differs).
//!
//! A fit may start from another fit's weights ([`Model`] as `warm`): the grid of `C` values
//! is walked from strong to weak regularisation on the same items, each fit starting where the
//! previous one ended. The optimum does not depend on the start; the iterations do.

use linfa::prelude::*;
use linfa_logistic::{LogisticRegression, MultiLogisticRegression};
use ndarray::{Array1, Array2, ArrayView2, Axis};

/// Iterations an L-BFGS fit may take before it is stopped where it is.
pub(crate) const MAX_ITERATIONS: u64 = 2000;

/// Gradient norm at which a fit has converged, per training item (the objective is a sum
/// over items, so its gradient grows with them).
pub(crate) const GRADIENT_TOLERANCE_PER_ITEM: f64 = 1e-6;

/// Fitted weights: `features + 1` rows (the intercept last), one column for a binary model
/// (the score of class 1) or one per class.
#[derive(Clone, Debug)]
pub(crate) struct Model {
    weights: Array2<f64>,
}

impl Model {
    /// Class indices predicted for each row of `x`.
    pub(crate) fn predict(&self, x: ArrayView2<'_, f64>) -> Vec<usize> {
        let features = x.ncols();
        let w = self.weights.slice(ndarray::s![..features, ..]);
        let b = self.weights.row(features);
        let scores = x.dot(&w) + &b;
        if self.weights.ncols() == 1 {
            // scikit-learn's rule: class 1 where the decision function is above zero
            return scores
                .column(0)
                .iter()
                .map(|&s| usize::from(s > 0.0))
                .collect();
        }
        scores
            .axis_iter(Axis(0))
            .map(|row| {
                // the first of equal scores, as NumPy's argmax
                let mut best = 0;
                for (j, &s) in row.iter().enumerate() {
                    if s > row[best] {
                        best = j;
                    }
                }
                best
            })
            .collect()
    }
}

/// Logistic regression of `y` (class indices below `classes`) on the rows of `x` with
/// regularisation `c` (scikit-learn's `C`), from `warm`'s weights when given. Every class must
/// be among `y`: a missing one has no weights to fit.
pub(crate) fn fit(
    x: ArrayView2<'_, f64>,
    y: &[usize],
    classes: usize,
    c: f64,
    warm: Option<&Model>,
) -> Result<Model, String> {
    let mut counts = vec![0usize; classes];
    for &label in y {
        counts[label] += 1;
    }
    if let Some(missing) = counts.iter().position(|&n| n == 0) {
        return Err(format!(
            "class {missing} has no training item: a classifier cannot learn it"
        ));
    }
    let alpha = 1.0 / c;
    let tolerance = GRADIENT_TOLERANCE_PER_ITEM * y.len() as f64;
    let targets = Array1::from(y.to_vec());
    let data = DatasetBase::new(x, targets);
    if classes == 2 {
        // linfa's positive class is the larger one (the first seen on a tie); the model is
        // kept as class 1's score, so a start and a result may need their sign turned
        let positive = if counts[1] != counts[0] {
            usize::from(counts[1] > counts[0])
        } else {
            y[0]
        };
        let sign = if positive == 1 { 1.0 } else { -1.0 };
        let mut params = LogisticRegression::default()
            .alpha(alpha)
            .gradient_tolerance(tolerance)
            .max_iterations(MAX_ITERATIONS);
        if let Some(w) = warm {
            params = params.initial_params(w.weights.column(0).mapv(|v| v * sign));
        }
        let fitted = params
            .fit(&data)
            .map_err(|e| format!("logistic regression: {e}"))?;
        let sign = if fitted.labels().pos.class == 1 {
            1.0
        } else {
            -1.0
        };
        let mut weights = Array2::zeros((x.ncols() + 1, 1));
        weights
            .slice_mut(ndarray::s![..x.ncols(), 0])
            .assign(&fitted.params().mapv(|v| v * sign));
        weights[[x.ncols(), 0]] = fitted.intercept() * sign;
        return Ok(Model { weights });
    }
    let mut params = MultiLogisticRegression::default()
        .alpha(alpha)
        .gradient_tolerance(tolerance)
        .max_iterations(MAX_ITERATIONS);
    if let Some(w) = warm {
        params = params.initial_params(w.weights.clone());
    }
    let fitted = params
        .fit(&data)
        .map_err(|e| format!("multinomial logistic regression: {e}"))?;
    // linfa orders the columns by class, which are 0..classes, every one present
    let mut weights = Array2::zeros((x.ncols() + 1, classes));
    weights
        .slice_mut(ndarray::s![..x.ncols(), ..])
        .assign(fitted.params());
    weights.row_mut(x.ncols()).assign(fitted.intercept());
    Ok(Model { weights })
}

/// Share of `predicted` equal to `truth`.
pub(crate) fn accuracy(predicted: &[usize], truth: &[usize]) -> f64 {
    let right = predicted.iter().zip(truth).filter(|(p, t)| p == t).count();
    right as f64 / truth.len().max(1) as f64
}

/// F1 of class 1 (scikit-learn's `f1_score` of a binary task); 0 where nothing is predicted
/// or true of class 1, as scikit-learn's `zero_division` default gives.
pub(crate) fn f1(predicted: &[usize], truth: &[usize]) -> f64 {
    let (mut tp, mut fp, mut fn_) = (0usize, 0usize, 0usize);
    for (&p, &t) in predicted.iter().zip(truth) {
        match (p == 1, t == 1) {
            (true, true) => tp += 1,
            (true, false) => fp += 1,
            (false, true) => fn_ += 1,
            (false, false) => {}
        }
    }
    if 2 * tp + fp + fn_ == 0 {
        return 0.0;
    }
    2.0 * tp as f64 / (2 * tp + fp + fn_) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Two Gaussian blobs per class, `classes` classes, seeded.
    fn blobs(n: usize, classes: usize, seed: u64) -> (Array2<f64>, Vec<usize>) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let d = 6;
        let mut x = Array2::zeros((n, d));
        let mut y = Vec::new();
        for i in 0..n {
            let class = i % classes;
            y.push(class);
            for j in 0..d {
                let centre = if j % classes == class { 1.0 } else { 0.0 };
                x[[i, j]] = centre + rng.gen_range(-1.0..1.0);
            }
        }
        (x, y)
    }

    /// Separable enough blobs are learnt, binary and multinomial; a warm start reaches the
    /// same weights as a cold one (the objective is strictly convex).
    #[test]
    fn learns_and_warm_starts_agree() {
        for classes in [2, 3] {
            let (x, y) = blobs(300, classes, 11);
            let cold = fit(x.view(), &y, classes, 1.0, None).unwrap();
            assert!(accuracy(&cold.predict(x.view()), &y) > 0.8);
            let first = fit(x.view(), &y, classes, 0.25, None).unwrap();
            let warm = fit(x.view(), &y, classes, 1.0, Some(&first)).unwrap();
            let gap = (&cold.weights - &warm.weights)
                .iter()
                .fold(0.0f64, |m, v| m.max(v.abs()));
            assert!(gap < 1e-3, "classes {classes}: {gap}");
        }
    }

    /// A binary model is class 1's score whichever class linfa took as positive.
    #[test]
    fn binary_orientation_is_class_one() {
        let (x, y) = blobs(200, 2, 5);
        let flipped: Vec<usize> = y.iter().map(|&c| 1 - c).collect();
        let a = fit(x.view(), &y, 2, 1.0, None).unwrap();
        let b = fit(x.view(), &flipped, 2, 1.0, None).unwrap();
        let sum = (&a.weights + &b.weights)
            .iter()
            .fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(sum < 1e-3, "{sum}");
    }

    /// A class without training items is refused, not fitted.
    #[test]
    fn a_missing_class_is_refused() {
        let (x, y) = blobs(30, 2, 1);
        let e = fit(x.view(), &y, 3, 1.0, None).unwrap_err();
        assert!(e.contains("class 2"), "{e}");
    }

    /// F1 of class 1, against hand counts.
    #[test]
    fn f1_counts() {
        // tp 2, fp 1, fn 1: 4 / 6
        assert!((f1(&[1, 1, 1, 0, 0], &[1, 1, 0, 1, 0]) - 4.0 / 6.0).abs() < 1e-12);
        assert_eq!(f1(&[0, 0], &[0, 0]), 0.0);
        assert_eq!(accuracy(&[1, 0, 1], &[1, 1, 1]), 2.0 / 3.0);
    }
}
