//! SentEval's classifier: L2-regularised logistic regression, binary for two classes and
//! multinomial (softmax) for more, as scikit-learn's `LogisticRegression(C=c)` fits it.
//!
//! The objective is `Σᵢ −log p(yᵢ | xᵢ) + α/2 ‖W‖²` with the intercept left out of the penalty,
//! linfa-logistic's; scikit-learn minimises `C · Σᵢ −log p(yᵢ | xᵢ) + 1/2 ‖W‖²`, also without
//! the intercept. With `α = 1/C` the two are one objective, strictly convex in the weights (a
//! multinomial model's intercepts are unique up to one shift shared by all classes, which no
//! prediction sees; fits from zero or from one another keep their sum at zero), so every solver
//! reaches the same predictions where it converges: the reference is matched by solving to a
//! tight gradient tolerance ([`crate::solver`]), not by imitating a solver's path. Two classes
//! are one weight vector (scikit-learn's binary model, not a two-class softmax, whose penalty
//! differs).
//!
//! A fit may start from another fit's weights ([`Model`] as `warm`): the grid of `C` values
//! is walked from strong to weak regularisation on the same items, each fit starting where the
//! previous one ended. The optimum does not depend on the start; the iterations do.

use ndarray::ArrayView2;

use crate::solver::{minimise, Feature, Problem};

/// Iterations a fit may take before it is stopped where it is.
pub(crate) const MAX_ITERATIONS: usize = 5000;

/// The largest gradient component at which a fit has converged, per training item (the
/// objective is a sum over items, so its gradient grows with them): scikit-learn's `tol` on
/// its mean loss, 100 times tighter than its default (tighter moved no prediction on MR in a
/// probe, and costs a third more iterations).
pub(crate) const GRADIENT_TOLERANCE_PER_ITEM: f64 = 1e-6;

/// Fitted weights: per output (one for a binary model, the score of class 1; else one per
/// class), the features' weights then the intercept.
#[derive(Clone, Debug)]
pub(crate) struct Model {
    weights: Vec<f64>,
    outputs: usize,
}

impl Model {
    /// Class indices predicted for each row of `x`.
    pub(crate) fn predict(&self, x: ArrayView2<'_, Feature>) -> Vec<usize> {
        let d = x.ncols();
        let score = |row: &ndarray::ArrayView1<'_, Feature>, k: usize| {
            let w = &self.weights[k * (d + 1)..(k + 1) * (d + 1)];
            row.iter()
                .zip(w)
                .map(|(&a, b)| f64::from(a) * b)
                .sum::<f64>()
                + w[d]
        };
        x.rows()
            .into_iter()
            .map(|row| {
                if self.outputs == 1 {
                    // scikit-learn's rule: class 1 where the decision function is above zero
                    return usize::from(score(&row, 0) > 0.0);
                }
                // the first of equal scores, as NumPy's argmax
                let mut best = (0, score(&row, 0));
                for k in 1..self.outputs {
                    let s = score(&row, k);
                    if s > best.1 {
                        best = (k, s);
                    }
                }
                best.0
            })
            .collect()
    }
}

/// Logistic regression of `y` (class indices below `classes`) on the rows of `x` with
/// regularisation `c` (scikit-learn's `C`), from `warm`'s weights when given. Every class must
/// be among `y`: a missing one has no weights to fit.
pub(crate) fn fit(
    x: ArrayView2<'_, Feature>,
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
    if !x.is_standard_layout() {
        return Err("features must be stored row by row".into());
    }
    let problem = Problem {
        x,
        y,
        classes,
        alpha: 1.0 / c,
    };
    let mut weights = match warm {
        Some(w) if w.weights.len() == problem.len() => w.weights.clone(),
        _ => vec![0.0; problem.len()],
    };
    minimise(
        &problem,
        &mut weights,
        GRADIENT_TOLERANCE_PER_ITEM,
        MAX_ITERATIONS,
    );
    Ok(Model {
        weights,
        outputs: problem.outputs(),
    })
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
    use ndarray::Array2;
    use rand::{Rng, SeedableRng};

    /// Two Gaussian blobs per class, `classes` classes, seeded.
    fn blobs(n: usize, classes: usize, seed: u64) -> (Array2<Feature>, Vec<usize>) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let d = 6;
        let mut x = Array2::zeros((n, d));
        let mut y = Vec::new();
        for i in 0..n {
            let class = i % classes;
            y.push(class);
            for j in 0..d {
                let centre = if j % classes == class { 1.0 } else { 0.0 };
                x[[i, j]] = centre + rng.gen_range(-1.0f32..1.0);
            }
        }
        (x, y)
    }

    fn gap(a: &Model, b: &Model) -> f64 {
        a.weights
            .iter()
            .zip(&b.weights)
            .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()))
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
            let largest = cold.weights.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            let gap = gap(&cold, &warm);
            assert!(
                gap < 1e-3 * largest,
                "classes {classes}: {gap} of {largest}"
            );
        }
    }

    /// The same optimum as linfa-logistic's L-BFGS with `α = 1/C` (its objective is ours),
    /// binary and multinomial: linfa's weights, reordered into ours.
    #[test]
    fn reaches_linfas_optimum() {
        use linfa::prelude::*;
        for classes in [2, 4] {
            let (x, y) = blobs(400, classes, 21);
            let ours = fit(x.view(), &y, classes, 2.0, None).unwrap();
            // linfa in double precision on the same values
            let x64 = x.mapv(f64::from);
            let data = linfa::DatasetBase::new(x64.view(), ndarray::Array1::from(y.clone()));
            let d = x.ncols();
            let theirs: Vec<f64> = if classes == 2 {
                let m = linfa_logistic::LogisticRegression::default()
                    .alpha(0.5)
                    .gradient_tolerance(1e-10)
                    .max_iterations(10_000)
                    .fit(&data)
                    .unwrap();
                let sign = if m.labels().pos.class == 1 { 1.0 } else { -1.0 };
                m.params()
                    .iter()
                    .chain(std::iter::once(&m.intercept()))
                    .map(|v| v * sign)
                    .collect()
            } else {
                let m = linfa_logistic::MultiLogisticRegression::default()
                    .alpha(0.5)
                    .gradient_tolerance(1e-10)
                    .max_iterations(10_000)
                    .fit(&data)
                    .unwrap();
                (0..classes)
                    .flat_map(|k| {
                        (0..d)
                            .map(move |j| (j, k))
                            .map(|(j, k)| m.params()[[j, k]])
                            .chain(std::iter::once(m.intercept()[k]))
                            .collect::<Vec<_>>()
                    })
                    .collect()
            };
            let theirs = Model {
                weights: theirs,
                outputs: ours.outputs,
            };
            // to the tolerance: a thousandth of the largest weight
            let largest = ours.weights.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            let gap = gap(&ours, &theirs);
            assert!(
                gap < 1e-3 * largest,
                "classes {classes}: {gap} of {largest}"
            );
            assert_eq!(ours.predict(x.view()), theirs.predict(x.view()));
        }
    }

    /// A binary model is class 1's score whichever label the classes carry.
    #[test]
    fn binary_orientation_is_class_one() {
        let (x, y) = blobs(200, 2, 5);
        let flipped: Vec<usize> = y.iter().map(|&c| 1 - c).collect();
        let a = fit(x.view(), &y, 2, 1.0, None).unwrap();
        let b = fit(x.view(), &flipped, 2, 1.0, None).unwrap();
        let sum = a
            .weights
            .iter()
            .zip(&b.weights)
            .fold(0.0f64, |m, (x, y)| m.max((x + y).abs()));
        assert!(sum < 1e-4, "{sum}");
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
