//! SentEval's three ways of choosing the regularisation and scoring, one per shape of data.
//!
//! - [`inner_k_fold`] (one split, as MR, CR, MPQA, SUBJ): `k` outer stratified folds; in each,
//!   every `C` of the grid is scored by an inner `k`-fold over the outer training part, the
//!   best is refitted on that whole part and scored on the held-out fold. The task's accuracy
//!   is the mean over the outer folds (SentEval's `InnerKFoldClassifier`).
//! - [`k_fold_then_test`] (train and test, as TREC, MRPC): every `C` is scored by a `k`-fold
//!   over the training split, the best refitted on all of it and scored on the test split
//!   (`KFoldClassifier`).
//! - [`train_dev_test`] (as SST, SICK-E, SciCite): every `C` is fitted on train and scored on
//!   dev, the best scored on test (`SplitClassifier`).
//!
//! Every `grid` here is ascending (the caller sorts it once, for the export and the report
//! too), so fits walk it from strong to weak regularisation and a tie takes the smallest `C`.
//! The best `C` is SentEval's: each candidate's validation accuracy in percent rounded to two
//! decimals, the first of the highest. Fits over one set of items walk the grid from strong to
//! weak regularisation, each starting from the previous weights ([`crate::classifier`]).

use ndarray::{Array2, ArrayView2, Axis};
use rayon::prelude::*;
use sage_core::RunSeed;

use crate::classifier::{accuracy, fit, Model};
use crate::folds::{stratified, Fold};
use crate::solver::Feature;
use crate::Scheme;

/// Labelled feature rows.
#[derive(Clone, Copy)]
pub(crate) struct Labelled<'a> {
    pub(crate) x: ArrayView2<'a, Feature>,
    pub(crate) y: &'a [usize],
}

impl Labelled<'_> {
    fn subset(&self, positions: &[usize]) -> (Array2<Feature>, Vec<usize>) {
        (
            self.x.select(Axis(0), positions),
            positions.iter().map(|&i| self.y[i]).collect(),
        )
    }
}

/// What a run of one scheme gives.
#[derive(Clone, Debug)]
pub(crate) struct Outcome {
    /// The predicted class of each scored item: the test split's, or every item out of fold.
    pub(crate) predicted: Vec<usize>,
    /// The true classes, aligned with `predicted`.
    pub(crate) truth: Vec<usize>,
    /// Per outer fold, the accuracy on its held-out items (inner k-fold only).
    pub(crate) fold_accuracies: Vec<f64>,
    /// The `C` chosen (per outer fold for the inner k-fold).
    pub(crate) chosen: Vec<f64>,
    /// Validation accuracy per grid point (per outer fold for the inner k-fold).
    pub(crate) validation: Vec<Vec<f64>>,
}

/// Where a fit failed: the fold (`None`: the final fit or the split's) and why.
#[derive(Debug)]
pub(crate) struct FitFailure {
    pub(crate) fold: Option<String>,
    pub(crate) why: String,
}

fn failure(fold: Option<String>) -> impl Fn(String) -> FitFailure {
    move |why| FitFailure {
        fold: fold.clone(),
        why,
    }
}

/// SentEval's pick: percent rounded to two decimals, the first of the highest. Python's
/// `round(100 * s, 2)` rounds half to even (`round(0.125, 2)` is 0.12), so ties go to even here
/// too. Returns the grid point's index.
fn best(scores: &[f64]) -> usize {
    let rounded: Vec<f64> = scores
        .iter()
        .map(|s| (100.0 * s * 100.0).round_ties_even())
        .collect();
    let mut at = 0;
    for (i, &s) in rounded.iter().enumerate() {
        if s > rounded[at] {
            at = i;
        }
    }
    at
}

/// Fits along `grid` (ascending `C`) on `train`, each from the previous weights, and the
/// accuracy of each on `valid`; also the fitted models.
fn walk(
    train: (ArrayView2<'_, Feature>, &[usize]),
    valid: (ArrayView2<'_, Feature>, &[usize]),
    classes: usize,
    grid: &[f64],
) -> Result<(Vec<f64>, Vec<Model>), String> {
    let mut scores = Vec::with_capacity(grid.len());
    let mut models: Vec<Model> = Vec::with_capacity(grid.len());
    for &c in grid {
        let model = fit(train.0, train.1, classes, c, models.last())?;
        scores.push(accuracy(&model.predict(valid.0), valid.1));
        models.push(model);
    }
    Ok((scores, models))
}

/// Mean validation accuracy per grid point of a `k`-fold over `data`, and for each grid point
/// the first fold's model (a start for the refit on all of `data`).
fn cross_validate(
    data: Labelled<'_>,
    classes: usize,
    grid: &[f64],
    folds: &[Fold],
    fold_name: &(dyn Fn(usize) -> String + Sync),
) -> Result<(Vec<f64>, Vec<Model>), FitFailure> {
    let per_fold = folds
        .par_iter()
        .enumerate()
        .map(|(f, fold)| {
            let (xt, yt) = data.subset(&fold.train);
            let (xv, yv) = data.subset(&fold.test);
            walk((xt.view(), &yt), (xv.view(), &yv), classes, grid)
                .map_err(failure(Some(fold_name(f))))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let means = (0..grid.len())
        .map(|g| per_fold.iter().map(|(s, _)| s[g]).sum::<f64>() / per_fold.len() as f64)
        .collect();
    let starts = per_fold
        .into_iter()
        .next()
        .map(|(_, m)| m)
        .unwrap_or_default();
    Ok((means, starts))
}

/// The folds a scheme splits its training items into, drawn before any fit so that an outside
/// check can be handed the same ones ([`crate::Options::export`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct Plan {
    /// The outer folds (inner k-fold) or the folds of train (k-fold then test).
    pub(crate) outer: Vec<Fold>,
    /// Per outer fold, the inner folds of its training positions (inner k-fold only;
    /// positions within that training part).
    pub(crate) inner: Vec<Vec<Fold>>,
}

/// The folds of `scheme` over the training labels `y`.
pub(crate) fn plan(
    scheme: Scheme,
    y: &[usize],
    names: &[String],
    k: usize,
    seed: RunSeed,
    label: &str,
) -> Result<Plan, FitFailure> {
    Ok(match scheme {
        Scheme::TrainDevTest => Plan::default(),
        Scheme::KFoldThenTest => Plan {
            outer: stratified(y, names, k, seed, &format!("{label}/train"))
                .map_err(failure(None))?,
            inner: Vec::new(),
        },
        Scheme::InnerKFold => {
            let outer =
                stratified(y, names, k, seed, &format!("{label}/outer")).map_err(failure(None))?;
            let inner = outer
                .iter()
                .enumerate()
                .map(|(f, fold)| {
                    let yt: Vec<usize> = fold.train.iter().map(|&i| y[i]).collect();
                    stratified(&yt, names, k, seed, &format!("{label}/inner/{f}")).map_err(failure(
                        Some(format!(
                            "the training part of outer fold {} of {k} (its inner folds)",
                            f + 1
                        )),
                    ))
                })
                .collect::<Result<Vec<_>, _>>()?;
            Plan { outer, inner }
        }
    })
}

/// SentEval's `InnerKFoldClassifier` over one split.
pub(crate) fn inner_k_fold(
    data: Labelled<'_>,
    classes: usize,
    plan: &Plan,
    grid: &[f64],
) -> Result<Outcome, FitFailure> {
    let k = plan.outer.len();
    let per_fold = plan
        .outer
        .par_iter()
        .zip(&plan.inner)
        .enumerate()
        .map(|(f, (fold, inner))| {
            let name = format!("outer fold {} of {k}", f + 1);
            let (xt, yt) = data.subset(&fold.train);
            let train = Labelled {
                x: xt.view(),
                y: &yt,
            };
            let inner_name = |i: usize| format!("{name}, inner fold {} of {k}", i + 1);
            let (scores, starts) = cross_validate(train, classes, grid, inner, &inner_name)?;
            let at = best(&scores);
            let c = grid[at];
            let model =
                fit(xt.view(), &yt, classes, c, starts.get(at)).map_err(failure(Some(name)))?;
            let (xv, yv) = data.subset(&fold.test);
            let predicted = model.predict(xv.view());
            Ok((fold.test.clone(), predicted, yv, scores, c))
        })
        .collect::<Result<Vec<_>, FitFailure>>()?;
    let mut outcome = Outcome {
        predicted: vec![0; data.y.len()],
        truth: data.y.to_vec(),
        fold_accuracies: Vec::new(),
        chosen: Vec::new(),
        validation: Vec::new(),
    };
    for (held, predicted, truth, scores, c) in per_fold {
        outcome.fold_accuracies.push(accuracy(&predicted, &truth));
        for (&i, &p) in held.iter().zip(&predicted) {
            outcome.predicted[i] = p;
        }
        outcome.chosen.push(c);
        outcome.validation.push(scores);
    }
    Ok(outcome)
}

/// SentEval's `KFoldClassifier`: `C` by a `k`-fold over `train`, scored on `test`.
pub(crate) fn k_fold_then_test(
    train: Labelled<'_>,
    test: Labelled<'_>,
    classes: usize,
    folds: &[Fold],
    grid: &[f64],
) -> Result<Outcome, FitFailure> {
    let k = folds.len();
    let name = |f: usize| format!("fold {} of {k} of train", f + 1);
    let (scores, starts) = cross_validate(train, classes, grid, folds, &name)?;
    let at = best(&scores);
    let c = grid[at];
    let model = fit(train.x, train.y, classes, c, starts.get(at))
        .map_err(failure(Some("the fit on all of train".into())))?;
    Ok(Outcome {
        predicted: model.predict(test.x),
        truth: test.y.to_vec(),
        fold_accuracies: Vec::new(),
        chosen: vec![c],
        validation: vec![scores],
    })
}

/// SentEval's `SplitClassifier`: `C` by accuracy on `dev`, scored on `test`.
pub(crate) fn train_dev_test(
    train: Labelled<'_>,
    dev: Labelled<'_>,
    test: Labelled<'_>,
    classes: usize,
    grid: &[f64],
) -> Result<Outcome, FitFailure> {
    let (scores, models) = walk((train.x, train.y), (dev.x, dev.y), classes, grid)
        .map_err(failure(Some("train, scored on dev".into())))?;
    let at = best(&scores);
    let c = grid[at];
    Ok(Outcome {
        predicted: models[at].predict(test.x),
        truth: test.y.to_vec(),
        fold_accuracies: Vec::new(),
        chosen: vec![c],
        validation: vec![scores],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SentEval's pick: two decimals of percent, the first of the highest.
    #[test]
    fn best_rounds_then_takes_the_first() {
        let grid = [0.25, 0.5, 1.0];
        // 0.81236 and 0.81244 both round to 81.24%: the first wins
        assert_eq!(grid[best(&[0.81236, 0.81244, 0.8])], 0.25);
        assert_eq!(grid[best(&[0.8, 0.81236, 0.81251])], 1.0);
        // 1/800 is 0.125%: Python rounds it to 0.12, as 0.12 (ties to even)
        assert_eq!(grid[best(&[0.0012, 1.0 / 800.0, 0.0])], 0.25);
    }
}
