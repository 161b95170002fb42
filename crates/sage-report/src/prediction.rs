//! Does an intrinsic score predict downstream accuracy? EvalRank's correlation study (Wang et
//! al. 2022, Tables 3, 6 and 10), over the similarities of a results folder: each intrinsic
//! score a similarity has (EvalRank's MRR and Hits@k, the STS Spearman it reports beside them,
//! each PTEB set's score on the original texts, SAGE's categories and overall, the noise area)
//! against its transfer accuracy, the mean over tasks and each task alone (a user's own task
//! among them).
//!
//! Per pair: Spearman's ρ with a 95% percentile-bootstrap interval over the models (models
//! resampled with replacement; a resample in which either side is constant has no ρ and is left
//! out), Pearson's r, and a two-sided permutation p-value of ρ
//! ([`sage_measures::permutation_p`]). Fewer than [`MIN_MODELS`] models with both: no number,
//! said so. The draws are seeded by the pair's names, so a report rebuilt from the same folder
//! is the same.

use std::collections::BTreeMap;

use sage_core::RunSeed;
use serde::Serialize;

use crate::load::{ResultFile, Typed};

/// Models needed before a correlation is given: two points always lie on a line.
pub const MIN_MODELS: usize = 3;

/// The target every similarity's transfer run has: its mean accuracy over tasks.
pub const MEAN_ACCURACY: &str = "mean accuracy";

/// One intrinsic score against one downstream target.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Correlation {
    /// The intrinsic score (`EvalRank MRR`, `STS-B Spearman`, `Clustering`, ...).
    pub predictor: String,
    /// [`MEAN_ACCURACY`] or a task's name.
    pub target: String,
    /// Models with both.
    pub models: usize,
    /// Spearman's ρ; absent below [`MIN_MODELS`] models or where a side is constant.
    pub spearman: Option<f64>,
    /// Its 95% bootstrap interval over models.
    pub ci95: Option<(f64, f64)>,
    /// Pearson's r.
    pub pearson: Option<f64>,
    /// Two-sided permutation p-value of ρ.
    pub p_value: Option<f64>,
}

/// The study's numbers.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PredictionView {
    /// Similarities with a transfer accuracy.
    pub models: Vec<String>,
    /// Every predictor against every target, the mean first.
    pub correlations: Vec<Correlation>,
    /// The answer in one sentence, when some similarity ran transfer.
    pub sentence: Option<String>,
}

/// Similarity → score, per score name, in first-seen order.
type Scores = Vec<(String, BTreeMap<String, f64>)>;

fn put(scores: &mut Scores, name: &str, similarity: &str, value: f64) {
    if !value.is_finite() {
        return;
    }
    match scores.iter_mut().find(|(n, _)| n == name) {
        Some((_, by)) => {
            by.insert(similarity.to_owned(), value);
        }
        None => scores.push((
            name.to_owned(),
            BTreeMap::from([(similarity.to_owned(), value)]),
        )),
    }
}

/// A table of category scores: its column titles, and per similarity one score a column (the
/// first screen's heatmap: SAGE's categories, Overall, the noise area).
pub(crate) struct Categories<'a> {
    pub(crate) columns: &'a [String],
    pub(crate) rows: Vec<(&'a str, Vec<Option<f64>>)>,
}

/// Every intrinsic score of every similarity in `files`.
fn predictors(files: &[ResultFile], categories: &Categories<'_>) -> Scores {
    let mut out = Scores::new();
    for f in files {
        match &f.typed {
            Typed::EvalRank(r) => {
                let level = if f.task == "sentence" {
                    String::new()
                } else {
                    format!(" ({})", f.task)
                };
                put(
                    &mut out,
                    &format!("EvalRank MRR{level}"),
                    &f.similarity,
                    r.scores.mrr,
                );
                put(
                    &mut out,
                    &format!("EvalRank Hits@1{level}"),
                    &f.similarity,
                    r.scores.hits_at_1,
                );
                put(
                    &mut out,
                    &format!("EvalRank Hits@3{level}"),
                    &f.similarity,
                    r.scores.hits_at_3,
                );
                match (&r.classic, f.task.as_str()) {
                    // sentence level: STS-B's Spearman, the score EvalRank set against it
                    (Some(classic), "sentence") => {
                        for (set, value) in &classic.spearman {
                            let set = if set == "stsb-test" { "STS-B" } else { set };
                            put(&mut out, &format!("{set} Spearman"), &f.similarity, *value);
                        }
                    }
                    // word level: the mean over the word-similarity sets, as EvalRank's tables
                    (Some(classic), _) => put(
                        &mut out,
                        &format!(
                            "word similarity Spearman (mean of {} sets)",
                            classic.spearman.len()
                        ),
                        &f.similarity,
                        classic.mean,
                    ),
                    (None, _) => {}
                }
            }
            Typed::Pteb(r) => {
                for d in &r.datasets {
                    let name = format!("{} {} (PTEB original)", d.name(), d.metric);
                    put(&mut out, &name, &f.similarity, d.original);
                }
            }
            _ => {}
        }
    }
    for (similarity, cells) in &categories.rows {
        for (title, cell) in categories.columns.iter().zip(cells) {
            if let Some(score) = cell {
                put(&mut out, &format!("SAGE {title}"), similarity, *score);
            }
        }
    }
    out
}

/// Every similarity's transfer accuracies: the mean, then each task.
fn targets(files: &[ResultFile]) -> Scores {
    let mut out = Scores::new();
    for (f, r) in crate::load::TransferRuns::of(files).runs {
        put(&mut out, MEAN_ACCURACY, &f.similarity, r.score);
        for t in &r.tasks {
            put(&mut out, &t.task, &f.similarity, t.accuracy);
        }
    }
    out
}

fn correlate(predictor: &str, target: &str, x: &[f64], y: &[f64]) -> Correlation {
    let mut c = Correlation {
        predictor: predictor.to_owned(),
        target: target.to_owned(),
        models: x.len(),
        spearman: None,
        ci95: None,
        pearson: None,
        p_value: None,
    };
    if x.len() < MIN_MODELS {
        return c;
    }
    let Ok(rho) = sage_measures::spearman(x, y) else {
        return c;
    };
    c.spearman = Some(rho);
    c.pearson = sage_measures::pearson(x, y).ok();
    let seed = RunSeed::default();
    let label = format!("report/prediction/{predictor}/{target}");
    c.p_value = sage_measures::permutation_p(x, y, sage_measures::spearman, seed, &label).ok();
    let replicates = sage_measures::bootstrap_replicates(
        &[x.len()],
        |drawn| {
            let xs: Vec<f64> = drawn[0].iter().map(|&i| x[i]).collect();
            let ys: Vec<f64> = drawn[0].iter().map(|&i| y[i]).collect();
            sage_measures::spearman(&xs, &ys).unwrap_or(f64::NAN)
        },
        sage_measures::BOOTSTRAP_RESAMPLES,
        seed,
        &label,
    );
    c.ci95 = replicates
        .ok()
        .flatten()
        .and_then(|r| r.interval(0.95).ok().flatten())
        .map(|i| (i.low, i.high));
    c
}

/// The study over `files`.
pub(crate) fn view(files: &[ResultFile], categories: &Categories<'_>) -> PredictionView {
    let targets = targets(files);
    let Some((_, mean)) = targets.iter().find(|(n, _)| n == MEAN_ACCURACY) else {
        return PredictionView::default();
    };
    let models: Vec<String> = mean.keys().cloned().collect();
    let predictors = predictors(files, categories);
    let mut correlations = Vec::new();
    for (target, by_model) in &targets {
        for (predictor, scores) in &predictors {
            let (x, y): (Vec<f64>, Vec<f64>) = by_model
                .iter()
                .filter_map(|(m, acc)| Some((*scores.get(m)?, *acc)))
                .unzip();
            correlations.push(correlate(predictor, target, &x, &y));
        }
    }
    let sentence = Some(sentence(&models, &correlations));
    PredictionView {
        models,
        correlations,
        sentence,
    }
}

fn rho_text(c: &Correlation) -> String {
    let rho = c.spearman.unwrap_or(f64::NAN);
    match c.ci95 {
        Some((lo, hi)) => format!("ρ = {rho:.2} [{lo:.2}, {hi:.2}]"),
        None => format!("ρ = {rho:.2}"),
    }
}

/// Which intrinsic score predicts mean accuracy best, and what STS-B's Spearman does beside it.
fn sentence(models: &[String], correlations: &[Correlation]) -> String {
    let on_mean: Vec<&Correlation> = correlations
        .iter()
        .filter(|c| c.target == MEAN_ACCURACY && c.spearman.is_some())
        .collect();
    let Some(best) = on_mean
        .iter()
        .max_by(|a, b| a.spearman.unwrap().total_cmp(&b.spearman.unwrap()))
    else {
        let most = correlations
            .iter()
            .filter(|c| c.target == MEAN_ACCURACY)
            .map(|c| c.models)
            .max()
            .unwrap_or(0);
        return format!(
            "Downstream accuracy is measured for {} similarit{} ({most} with an intrinsic score \
             beside it): at least {MIN_MODELS} are needed to say which intrinsic score predicts it.",
            models.len(),
            if models.len() == 1 { "y" } else { "ies" }
        );
    };
    let mut text = format!(
        "Across {} models, {} predicts downstream accuracy best ({}",
        best.models,
        best.predictor,
        rho_text(best)
    );
    if let Some(p) = best.p_value {
        text += &format!(", permutation p = {p:.3}");
    }
    text.push(')');
    let sts = on_mean
        .iter()
        .find(|c| c.predictor == "STS-B Spearman" && c.predictor != best.predictor);
    if let Some(sts) = sts {
        text += &format!("; STS-B Spearman {}", rho_text(sts));
    }
    text + "."
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(predictor: &str, rho: Option<f64>, models: usize) -> Correlation {
        Correlation {
            predictor: predictor.into(),
            target: MEAN_ACCURACY.into(),
            models,
            spearman: rho,
            ci95: rho.map(|r| (r - 0.3, (r + 0.2).min(1.0))),
            pearson: rho,
            p_value: rho.map(|_| 0.05),
        }
    }

    #[test]
    fn the_sentence_names_the_best_predictor_and_sts() {
        let models: Vec<String> = (0..6).map(|i| format!("m{i}")).collect();
        let s = sentence(
            &models,
            &[
                c("STS-B Spearman", Some(0.37), 6),
                c("EvalRank MRR", Some(0.83), 6),
            ],
        );
        assert_eq!(
            s,
            "Across 6 models, EvalRank MRR predicts downstream accuracy best (ρ = 0.83 [0.53, \
             1.00], permutation p = 0.050); STS-B Spearman ρ = 0.37 [0.07, 0.57]."
        );
    }

    #[test]
    fn too_few_models_say_so_instead_of_a_number() {
        let s = sentence(&["a".into(), "b".into()], &[c("EvalRank MRR", None, 2)]);
        assert!(s.contains("at least 3 are needed"), "{s}");
        assert!(!s.contains("ρ"), "{s}");
        let few = correlate("p", "t", &[1.0, 2.0], &[2.0, 3.0]);
        assert_eq!((few.models, few.spearman), (2, None));
    }

    /// A perfectly monotone predictor: ρ = 1, its interval at 1 (every defined resample is 1).
    #[test]
    fn a_monotone_predictor_correlates_fully() {
        let x = [0.1, 0.4, 0.2, 0.9, 0.5];
        let y = [0.60, 0.72, 0.65, 0.80, 0.75];
        let r = correlate("p", "t", &x, &y);
        assert!((r.spearman.unwrap() - 1.0).abs() < 1e-12);
        let (lo, hi) = r.ci95.unwrap();
        assert!(
            (lo - 1.0).abs() < 1e-12 && (hi - 1.0).abs() < 1e-12,
            "{lo} {hi}"
        );
        assert!((r.p_value.unwrap() - 2.0 / 120.0).abs() < 1e-12);
    }
}
