//! The transfer tables: each similarity's SentEval accuracies (ALIGN-SIM's Table 1 is the
//! seven of them it reports), and EvalRank's correlation study: which intrinsic score predicts
//! them.

use super::*;
use crate::load::TransferRuns;
use crate::prediction::{PredictionView, MEAN_ACCURACY, MIN_MODELS};

/// Similarity × task accuracy (percent, as SentEval and the papers print it), with the mean.
pub(super) fn transfer_table(files: &[ResultFile], sink: &mut Sink) -> Table {
    let TransferRuns { runs, tasks } = TransferRuns::of(files);
    let rows = runs
        .iter()
        .map(|(f, r)| {
            let mut row = vec![f.similarity.clone()];
            for task in &tasks {
                let t = r.tasks.iter().find(|t| t.task == *task);
                // summary.csv's line; the cell shows percent with the interval instead
                sink.cell(f, task, "accuracy", t.map(|t| t.accuracy));
                row.push(match t {
                    Some(t) => {
                        let ci = t
                            .ci95
                            .map(|c| format!(" [{:.1}, {:.1}]", 100.0 * c.low, 100.0 * c.high))
                            .unwrap_or_default();
                        let f1 = match t.f1 {
                            Some(f1) => format!(" F1 {:.1}", 100.0 * f1),
                            None => String::new(),
                        };
                        format!("{:.1}{ci}{f1}", 100.0 * t.accuracy)
                    }
                    None => "—".to_owned(),
                });
            }
            sink.cell(f, "", MEAN_ACCURACY, Some(r.score));
            row.push(match r.ci95 {
                Some(c) => format!(
                    "{:.1} [{:.1}, {:.1}]",
                    100.0 * r.score,
                    100.0 * c.low,
                    100.0 * c.high
                ),
                None => format!("{:.1}", 100.0 * r.score),
            });
            row
        })
        .collect();
    let mut header = vec!["Similarity".to_owned()];
    header.extend(tasks.iter().map(|t| {
        if sage_transfer::ALIGN_SIM_TASKS.contains(t) {
            format!("{t} †")
        } else {
            (*t).to_owned()
        }
    }));
    header.push("Mean".into());
    Table {
        key: "transfer",
        title: "Downstream transfer (SentEval)".into(),
        note: "Accuracy (%) of an L2-regularised logistic regression on each similarity's \
               sentence vectors (pairs: [|u − v|, u ∗ v]), SentEval's protocol and grid of C: \
               one split by inner k-fold, train and test by k-fold on train, train/dev/test by \
               dev; [95% bootstrap interval] over the test items, or over the outer folds. \
               † the seven tasks of ALIGN-SIM's Table 1."
            .into(),
        header,
        rows,
    }
}

/// Every intrinsic score against mean accuracy (`per_task` false: the first screen's), or
/// against each task's accuracy (`per_task` true: the details').
pub(super) fn prediction_table(view: &PredictionView, per_task: bool) -> Table {
    let rows = view
        .correlations
        .iter()
        .filter(|c| (c.target != MEAN_ACCURACY) == per_task)
        .map(|c| {
            let num = |v: Option<f64>| v.map_or("—".to_owned(), |v| format!("{v:.2}"));
            vec![
                c.predictor.clone(),
                c.target.clone(),
                c.models.to_string(),
                match (c.spearman, c.ci95) {
                    (Some(r), Some((lo, hi))) => format!("{r:.2} [{lo:.2}, {hi:.2}]"),
                    (r, _) => num(r),
                },
                num(c.pearson),
                c.p_value.map_or("—".to_owned(), |p| format!("{p:.3}")),
            ]
        })
        .collect();
    let (key, title, against) = if per_task {
        (
            "prediction-tasks",
            "Does it predict each task? (EvalRank's correlation study, per task)",
            "each task's transfer accuracy (a user's own task among them)",
        )
    } else {
        (
            "prediction",
            "Does it predict downstream accuracy? (EvalRank's correlation study)",
            "the mean transfer accuracy over tasks",
        )
    };
    Table {
        key,
        title: title.into(),
        note: format!(
            "Across the similarities with a transfer run: Spearman's ρ [95% bootstrap interval \
             over models], Pearson's r and a two-sided permutation p-value of ρ between each \
             intrinsic score and {against}. Below {MIN_MODELS} models no correlation is given."
        ),
        header: [
            "Intrinsic score",
            "Downstream",
            "Models",
            "Spearman ρ [95% CI]",
            "Pearson r",
            "Permutation p",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

/// ALIGN-SIM's Table 1 layout: each similarity's five criteria (the mean over the ALIGN-SIM
/// datasets it ran) beside its accuracy on the seven SentEval tasks the paper reports, for the
/// similarities that ran both suites.
pub(super) fn align_sim_transfer_table(files: &[ResultFile]) -> Table {
    let transfer_runs = TransferRuns::of(files);
    let mut rows = Vec::new();
    for f in files {
        let Typed::AlignSim(criteria) = &f.typed else {
            continue;
        };
        let Some(transfer) = transfer_runs.of_similarity(&f.similarity) else {
            continue;
        };
        let mean = |values: Vec<f64>| {
            (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
        };
        let d = &criteria.datasets;
        let text = |v: Option<f64>| v.map_or("—".to_owned(), |v| format!("{v:.3}"));
        let mut row = vec![
            f.similarity.clone(),
            text(mean(d.iter().map(|d| d.paraphrase.difference).collect())),
            text(mean(
                d.iter()
                    .filter_map(|d| d.synonyms.first().map(|s| s.normalised))
                    .collect(),
            )),
            text(mean(d.iter().map(|d| d.antonym.mean_difference).collect())),
            text(mean(
                d.iter()
                    .filter_map(|d| d.jumbling.first().map(|j| j.mean_difference))
                    .collect(),
            )),
            text(Some(criteria.negation.normalised)),
        ];
        let mut accuracies = Vec::new();
        for task in sage_transfer::ALIGN_SIM_TASKS {
            let acc = transfer
                .tasks
                .iter()
                .find(|t| t.task == task)
                .map(|t| t.accuracy);
            accuracies.extend(acc);
            row.push(acc.map_or("—".to_owned(), |a| format!("{:.1}", 100.0 * a)));
        }
        row.push(
            if accuracies.len() == sage_transfer::ALIGN_SIM_TASKS.len() {
                format!("{:.1}", 100.0 * mean(accuracies).unwrap_or(f64::NAN))
            } else {
                "—".to_owned()
            },
        );
        rows.push(row);
    }
    let mut header: Vec<String> = [
        "Similarity",
        "Paraphrase",
        "Synonym",
        "Antonym",
        "Jumbling",
        "Negation",
    ]
    .map(String::from)
    .to_vec();
    header.extend(
        sage_transfer::ALIGN_SIM_TASKS
            .iter()
            .map(|t| t.to_uppercase()),
    );
    header.push("Avg".into());
    Table {
        key: "align-sim-transfer",
        title: "ALIGN-SIM's Table 1: the criteria beside SentEval transfer".into(),
        note: "The five ALIGN-SIM criteria (mean over the datasets each ran, as in the ALIGN-SIM \
               table) beside transfer accuracy (%) on the seven SentEval tasks ALIGN-SIM's \
               Table 1 reports, and their average; a similarity shows when it ran both suites."
            .into(),
        header,
        rows,
    }
}
