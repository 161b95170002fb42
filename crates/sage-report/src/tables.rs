//! Every table of the report, built from the result files; each numeric cell is also a line of
//! summary.csv.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::answer::{Answer, SAGE_COLUMNS};
use crate::load::{ResultFile, Typed};
use crate::ranking::Cell;
use sage_measures::BootstrapInterval;

mod cost;
mod paraphrase;
mod storage;
mod transfer;
use cost::cost_table;
use paraphrase::pteb_tables;
use storage::storage_table;
use transfer::{align_sim_transfer_table, prediction_table, transfer_table};

/// A table for the markdown and HTML outputs; every numeric cell also becomes a CSV line.
pub(crate) struct Table {
    /// Which plots go beside it (a [`crate::plots::Chart`] with the same key).
    pub(crate) key: &'static str,
    pub(crate) title: String,
    pub(crate) note: String,
    pub(crate) header: Vec<String>,
    pub(crate) rows: Vec<Vec<String>>,
}

/// One line of summary.csv.
struct CsvLine {
    similarity: String,
    suite: String,
    task: String,
    dataset: String,
    measure: String,
    value: f64,
}

/// What the tables are built from, and the CSV lines they emit on the way.
#[derive(Default)]
pub(crate) struct Sink {
    csv: Vec<CsvLine>,
    /// MTEB's published scores (`--mteb-results`), shown beside PTEB's original scores.
    pub(crate) published: Vec<pteb::mteb::PublishedScore>,
}

/// Whether an MTEB model folder name (`sentence-transformers/all-mpnet-base-v2`) and a result's
/// similarity label (a spec: a hub id, a folder name, a path) name the same model: the same last
/// path segment, ignoring case.
fn same_model(published: &str, similarity: &str) -> bool {
    let last = |s: &str| {
        s.trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or("")
            .to_lowercase()
    };
    !last(published).is_empty() && last(published) == last(similarity)
}

impl Sink {
    /// A cell for `value`, recorded for the CSV.
    fn cell(&mut self, r: &ResultFile, dataset: &str, measure: &str, value: Option<f64>) -> String {
        match value {
            Some(v) => {
                self.csv.push(CsvLine {
                    similarity: r.similarity.clone(),
                    suite: r.suite.clone(),
                    task: r.task.clone(),
                    dataset: dataset.to_owned(),
                    measure: measure.to_owned(),
                    value: v,
                });
                format!("{v:.3}")
            }
            None => "—".to_owned(),
        }
    }
}

/// A score with its interval, as every table prints it.
pub(crate) fn score_text(cell: &Cell) -> String {
    match cell.ci95 {
        Some((lo, hi)) => format!("{:.3} [{lo:.3}, {hi:.3}]", cell.score),
        None => format!("{:.3}", cell.score),
    }
}

/// The heatmap's numbers as a table (Table 1's layout), the best of each column starred.
fn sage_table(answer: &Answer, sink: &mut Sink) -> Table {
    let heatmap = &answer.heatmap;
    let rows = heatmap
        .rows
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let mut out = vec![row.similarity.clone()];
            for (k, cell) in row.cells.iter().enumerate() {
                let Some(cell) = cell else {
                    out.push("—".into());
                    continue;
                };
                let task = &heatmap.tasks[k];
                sink.csv.push(CsvLine {
                    similarity: row.similarity.clone(),
                    suite: if k < SAGE_COLUMNS.len() || task == "overall" {
                        "sage".into()
                    } else {
                        task.clone()
                    },
                    task: task.clone(),
                    dataset: String::new(),
                    measure: "score".into(),
                    value: cell.score,
                });
                let star = if heatmap.best[k].contains(&i) {
                    " ★"
                } else {
                    ""
                };
                out.push(format!("{}{star}", score_text(cell)));
            }
            out
        })
        .collect();
    let mut header = vec!["Similarity".to_owned()];
    header.extend(heatmap.columns.iter().cloned());
    Table {
        key: "sage",
        title: "SAGE (Table 1 layout)".into(),
        note: "Scores in [0, 1] with bootstrap 95% intervals; ★ the best of each column; Overall \
               is the unweighted mean of the five categories (— when one is missing). Noise \
               (area), when run, is the noise suite's mean area under the retention curves — \
               beside SAGE, not part of Overall."
            .into(),
        header,
        rows,
    }
}

/// Below this many units in a category the ranking's note warns that its bootstrap is coarse.
const FEW_UNITS: usize = 10;

/// The ranking by the overall score, and every pairwise comparison behind it.
fn ranking_tables(answer: &Answer) -> Vec<Table> {
    let ranking = &answer.ranking;
    let alpha = ranking.alpha;
    let mut note = format!(
        "Ranked by the overall SAGE score. A difference is significant when the paired \
         bootstrap over the units both similarities were scored on (the same documents, \
         queries, pairs and subsets in every resample) rejects \"no difference\" at {alpha} \
         after Holm's correction over all {} comparisons.",
        ranking.comparisons.len()
    );
    if !ranking.units.is_empty() {
        let units: Vec<String> = ranking
            .units
            .iter()
            .map(|(category, n)| format!("{category} {n}"))
            .collect();
        note.push_str(&format!(" Units resampled: {}.", units.join(", ")));
        if ranking.units.iter().any(|(_, n)| *n < FEW_UNITS) {
            note.push_str(&format!(
                " Fewer than {FEW_UNITS} units in a category: its intervals and p-values \
                 understate the uncertainty (a quick or sampled run); run on more rows before \
                 choosing."
            ));
        }
    }
    for why in &ranking.not_compared {
        note.push_str(&format!(" Not compared: {why}."));
    }
    let rows = ranking
        .ranked
        .iter()
        .map(|r| {
            let above: Vec<&str> = ranking
                .comparisons
                .iter()
                .filter(|c| c.higher == r.similarity && c.significant)
                .map(|c| c.lower.as_str())
                .collect();
            let next = ranking.ranked.get(r.rank).and_then(|below| {
                ranking
                    .comparisons
                    .iter()
                    .find(|c| c.higher == r.similarity && c.lower == below.similarity)
            });
            vec![
                r.rank.to_string(),
                r.similarity.clone(),
                score_text(&r.overall),
                if above.is_empty() {
                    "—".into()
                } else {
                    above.join(", ")
                },
                next.map_or("—".into(), |c| {
                    format!(
                        "{:+.3} [{:+.3}, {:+.3}], p = {:.3}{}",
                        c.difference.difference,
                        c.difference.ci_low,
                        c.difference.ci_high,
                        c.p_holm,
                        if c.significant { " *" } else { "" }
                    )
                }),
            ]
        })
        .collect();
    let comparisons = ranking
        .comparisons
        .iter()
        .map(|c| {
            let d = &c.difference;
            vec![
                c.higher.clone(),
                c.lower.clone(),
                format!("{:+.3} [{:+.3}, {:+.3}]", d.difference, d.ci_low, d.ci_high),
                format!("{:.3}", d.p_value),
                format!("{:.3}", c.p_holm),
                if c.significant { "yes" } else { "no" }.into(),
            ]
        })
        .collect();
    vec![
        Table {
            key: "ranking",
            title: "Ranking".into(),
            note,
            header: [
                "Rank",
                "Similarity",
                "Overall [95% CI]",
                "Significantly above",
                "vs next: Δ [95% CI], Holm p",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        },
        Table {
            key: "comparisons",
            title: "Every pairwise comparison".into(),
            note: format!(
                "Δ = higher − lower overall score, with the 95% interval of the paired \
                 resampled differences; p: two-sided bootstrap p-value; Holm: corrected over \
                 the {} comparisons; significant at {alpha}.",
                ranking.comparisons.len()
            ),
            header: [
                "Higher",
                "Lower",
                "Δ [95% CI]",
                "p",
                "p (Holm)",
                "Significant",
            ]
            .map(String::from)
            .to_vec(),
            rows: comparisons,
        },
    ]
}

fn human_pref_tables(files: &[ResultFile], sink: &mut Sink) -> Vec<Table> {
    let mut pairwise = Vec::new();
    let mut ratings = Vec::new();
    let mut dimension_names: Vec<String> = Vec::new();
    for (r, report) in files.iter().filter_map(|f| match &f.typed {
        Typed::HumanPref(report) => Some((f, report)),
        _ => None,
    }) {
        for source in &report.sources {
            let name = source.name.as_str();
            let c = &source.comparisons.classification;
            let mut row = vec![r.similarity.clone(), name.to_owned()];
            for (m, value) in [
                ("accuracy", c.accuracy),
                ("precision", c.precision),
                ("recall", c.recall),
                ("f1", c.f1),
            ] {
                row.push(sink.cell(r, name, m, Some(value)));
            }
            row.push(source.comparisons.pairs.to_string());
            pairwise.push(row);
            let mut cells = BTreeMap::new();
            for d in &source.correlations.dimensions {
                let dim = d.dimension.clone();
                if !dimension_names.contains(&dim) {
                    dimension_names.push(dim.clone());
                }
                let v = sink.cell(r, name, &format!("{dim} (0.5·(r+1))"), Some(d.mapped));
                cells.insert(dim, v);
            }
            ratings.push((r.similarity.clone(), name.to_owned(), cells));
        }
    }
    let mut header = vec!["Similarity".to_owned(), "Source".to_owned()];
    header.extend(dimension_names.iter().cloned());
    let rows = ratings
        .into_iter()
        .map(|(s, n, cells)| {
            let mut row = vec![s, n];
            row.extend(
                dimension_names
                    .iter()
                    .map(|d| cells.get(d).cloned().unwrap_or_else(|| "—".into())),
            );
            row
        })
        .collect();
    vec![
        Table {
            key: "human-pref",
            title: "Human preference — pairwise comparisons (Table 2)".into(),
            note: "Positive class: summary 0 preferred; ties predict summary 1.".into(),
            header: [
                "Similarity",
                "Source",
                "Accuracy",
                "Precision",
                "Recall",
                "F1",
                "Pairs",
            ]
            .map(String::from)
            .to_vec(),
            rows: pairwise,
        },
        Table {
            key: "human-pref-ratings",
            title: "Human preference — ratings (Table 3)".into(),
            note: "Pearson r of similarity(source, summary) with each rating, as 0.5·(r+1).".into(),
            header,
            rows,
        },
    ]
}

/// `(dataset, value)` for each dataset of a report, as [`per_dataset_table`] takes them.
fn each<'a, D>(
    datasets: &'a [D],
    value: impl Fn(&'a D) -> (&'a String, f64),
) -> Option<Vec<(&'a str, f64)>> {
    Some(
        datasets
            .iter()
            .map(|d| {
                let (name, v) = value(d);
                (name.as_str(), v)
            })
            .collect(),
    )
}

/// One row per similarity, one column per dataset, for a per-dataset number of a SAGE task.
#[allow(clippy::too_many_arguments)] // one call per table: the arguments are its spelling
fn per_dataset_table(
    files: &[ResultFile],
    sink: &mut Sink,
    key: &'static str,
    task: &str,
    title: &str,
    note: &str,
    measure: &str,
    per_dataset: impl Fn(&Typed) -> Option<Vec<(&str, f64)>>,
) -> Table {
    let mut datasets: Vec<String> = Vec::new();
    let mut rows = Vec::new();
    for r in files.iter().filter(|f| f.suite == "sage" && f.task == task) {
        let mut cells = BTreeMap::new();
        for (name, value) in per_dataset(&r.typed).into_iter().flatten() {
            if !datasets.iter().any(|d| d == name) {
                datasets.push(name.to_owned());
            }
            cells.insert(name.to_owned(), sink.cell(r, name, measure, Some(value)));
        }
        rows.push((r.similarity.clone(), cells));
    }
    let mut header = vec!["Similarity".to_owned()];
    header.extend(datasets.iter().cloned());
    Table {
        key,
        title: title.into(),
        note: note.into(),
        header,
        rows: rows
            .into_iter()
            .map(|(s, cells)| {
                let mut row = vec![s];
                row.extend(
                    datasets
                        .iter()
                        .map(|d| cells.get(d).cloned().unwrap_or_else(|| "—".into())),
                );
                row
            })
            .collect(),
    }
}

fn evalrank_table(files: &[ResultFile], sink: &mut Sink) -> Table {
    let rows = files
        .iter()
        .filter_map(|f| match &f.typed {
            Typed::EvalRank(report) => Some((f, report)),
            _ => None,
        })
        .map(|(r, rep)| {
            let mut row = vec![r.similarity.clone(), r.task.clone()];
            for (m, value) in [
                ("MRR", Some(rep.scores.mrr)),
                ("Hits@1", Some(rep.scores.hits_at_1)),
                ("Hits@3", Some(rep.scores.hits_at_3)),
                ("classic Spearman×100", rep.classic.as_ref().map(|c| c.mean)),
            ] {
                row.push(sink.cell(r, &r.task, m, value));
            }
            row.push(rep.scores.pairs.to_string());
            row
        })
        .collect();
    Table {
        key: "evalrank",
        title: "EvalRank".into(),
        note: "Positive pairs ranked against the background (higher is better); classic: mean \
               Spearman ×100 over the word-similarity sets (word) or STS-B (sentence)."
            .into(),
        header: [
            "Model", "Level", "MRR", "Hits@1", "Hits@3", "Classic", "Pairs",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

/// Whether a detail table of its own shows this result: the suites sage-rs ships.
fn has_own_table(file: &ResultFile) -> bool {
    match file.suite.as_str() {
        "sage" => SAGE_COLUMNS.iter().any(|(task, _)| *task == file.task),
        "evalrank" | "align-sim" | "pteb" | "noise" | "compression" | "transfer" | "throughput" => {
            true
        }
        _ => false,
    }
}

/// Results of suites registered beyond the shipped ones (a crate's own `Suite`): their score and
/// what they ran on, so that no result file is left out of the report.
fn other_suites_table(files: &[ResultFile], sink: &mut Sink) -> Table {
    let rows = files
        .iter()
        .filter(|f| !has_own_table(f))
        .map(|r| {
            let datasets: Vec<String> = r
                .envelope
                .datasets
                .iter()
                .map(|d| d.dataset().unwrap_or_else(|| "?".to_owned()))
                .collect();
            vec![
                r.similarity.clone(),
                format!("{}/{}", r.suite, r.task),
                sink.cell(r, "", "score", r.envelope.score),
                if datasets.is_empty() {
                    "—".to_owned()
                } else {
                    datasets.join(", ")
                },
            ]
        })
        .collect();
    Table {
        key: "other-suites",
        title: "Other suites".into(),
        note: "Suites registered beyond sage-rs's own: each result's score (the suite's own \
               report, in its result file, says what it means)."
            .into(),
        header: ["Similarity", "Suite/task", "Score", "Datasets"]
            .map(String::from)
            .to_vec(),
        rows,
    }
}

fn align_sim_table(files: &[ResultFile], sink: &mut Sink) -> Table {
    let mut rows = Vec::new();
    for (r, rep) in files.iter().filter_map(|f| match &f.typed {
        Typed::AlignSim(report) => Some((f, report)),
        _ => None,
    }) {
        for d in &rep.datasets {
            let name = d.dataset.as_str();
            let mut row = vec![r.similarity.clone(), name.to_owned()];
            row.push(sink.cell(
                r,
                name,
                "paraphrase − random",
                Some(d.paraphrase.difference),
            ));
            row.push(sink.cell(
                r,
                name,
                "synonym n=1 (normalised)",
                d.synonyms.first().map(|s| s.normalised),
            ));
            row.push(sink.cell(
                r,
                name,
                "antonym mean difference",
                Some(d.antonym.mean_difference),
            ));
            row.push(sink.cell(
                r,
                name,
                "jumbling n=1 mean difference",
                d.jumbling.first().map(|j| j.mean_difference),
            ));
            rows.push(row);
        }
        let mut row = vec![r.similarity.clone(), "afin".to_owned()];
        row.extend([
            "—".to_owned(),
            "—".to_owned(),
            "—".to_owned(),
            "—".to_owned(),
        ]);
        row.push(sink.cell(
            r,
            "afin",
            "negation (normalised)",
            Some(rep.negation.normalised),
        ));
        rows.push(row);
    }
    for row in rows.iter_mut() {
        row.resize(7, "—".to_owned());
    }
    Table {
        key: "align-sim",
        title: "ALIGN-SIM".into(),
        note: "Paraphrase: mean similarity of paraphrases minus random pairs; synonym and \
               negation: α-normalised mean similarity; antonym and jumbling: mean of \
               sim(S, S_para) − sim(S, S_perturbed) (positive: the criterion holds)."
            .into(),
        header: [
            "Similarity",
            "Dataset",
            "Paraphrase",
            "Synonym",
            "Antonym",
            "Jumbling",
            "Negation",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

/// Every table: the answer's (keys `sage`, `ranking`, `comparisons`) first, then the details.
pub(crate) fn tables(
    files: &[ResultFile],
    answer: &Answer,
    sink: &mut Sink,
) -> crate::Result<Vec<Table>> {
    let mut out = vec![sage_table(answer, sink)];
    out.extend(ranking_tables(answer));
    out.push(cost_table(files, &answer.cost, sink));
    out.push(storage_table(files, &answer.storage, sink));
    out.push(transfer_table(files, sink));
    out.push(prediction_table(&answer.prediction, false));
    out.push(prediction_table(&answer.prediction, true));
    out.push(align_sim_transfer_table(files));
    out.extend(human_pref_tables(files, sink));
    out.push(per_dataset_table(
        files,
        sink,
        "robustness",
        "robustness",
        "Transformation robustness (Table 4)",
        "Mean over the three conditions of the share of documents meeting each.",
        "score",
        |t| match t {
            Typed::Robustness(r) => each(&r.datasets, |d| (&d.dataset, d.score)),
            _ => None,
        },
    ));
    for (family, key, table) in [
        ("insertion", "sensitivity-insertion", 5),
        ("removal", "sensitivity-removal", 6),
    ] {
        let of = move |d: &sage_sensitivity::DatasetReport| match family {
            "insertion" => d.insertion.score,
            _ => d.removal.score,
        };
        out.push(per_dataset_table(
            files,
            sink,
            key,
            "sensitivity",
            &format!("Information sensitivity — {family} (Table {table})"),
            "1 − mean |observed − (1 − p/(1+p))| over documents and levels.",
            &format!("{family} score"),
            |t| match t {
                Typed::Sensitivity(r) => each(&r.datasets, |d| (&d.dataset, of(d))),
                _ => None,
            },
        ));
    }
    out.push(per_dataset_table(
        files,
        sink,
        "clustering",
        "clustering",
        "Clustering — V-measure per dataset",
        "Complete linkage on 1 − similarity, cut at the true class count; mean over subsets.",
        "v_measure",
        |t| match t {
            Typed::Clustering(r) => each(&r.datasets, |d| (&d.dataset, d.v_measure)),
            _ => None,
        },
    ));
    out.push(per_dataset_table(
        files,
        sink,
        "retrieval-clean",
        "retrieval",
        "Retrieval — clean NDCG@10 per dataset",
        "On the unperturbed corpus (the sample used).",
        "ndcg_clean",
        |t| match t {
            Typed::Retrieval(r) => each(&r.datasets, |d| (&d.dataset, d.ndcg_clean)),
            _ => None,
        },
    ));
    out.push(per_dataset_table(
        files,
        sink,
        "retrieval",
        "retrieval",
        "Retrieval — harmonic mean of the 18 NDCG@10 retentions per dataset",
        "retention_t = NDCG@10 on perturbed corpus t / clean NDCG@10.",
        "retention harmonic mean",
        |t| match t {
            Typed::Retrieval(r) => each(&r.datasets, |d| (&d.dataset, d.score)),
            _ => None,
        },
    ));
    out.push(evalrank_table(files, sink));
    out.push(align_sim_table(files, sink));
    out.extend(pteb_tables(files, sink));
    out.push(noise_table(files, sink)?);
    out.push(other_suites_table(files, sink));
    Ok(out.into_iter().filter(|t| !t.rows.is_empty()).collect())
}

/// The noise suite: per dataset and channel, every similarity's area under the retention curve
/// with its interval, and whether the best is really better than the next (paired bootstrap of
/// the two areas, Holm-corrected over every row).
fn noise_table(files: &[ResultFile], sink: &mut Sink) -> crate::Result<Table> {
    let runs: Vec<(&ResultFile, &sage_noise::NoiseReport)> = files
        .iter()
        .filter_map(|f| match &f.typed {
            Typed::Noise(r) => Some((f, r.as_ref())),
            _ => None,
        })
        .collect();
    let mut header = vec!["Dataset".to_owned(), "Channel".to_owned()];
    header.extend(runs.iter().map(|(f, _)| f.similarity.clone()));
    header.push("Best − next [95% CI], p (Holm)".to_owned());
    // (dataset, channel) rows in first-seen order
    let mut keys: Vec<(String, String)> = Vec::new();
    for (_, r) in &runs {
        for d in &r.datasets {
            for key in std::iter::once("clean".to_owned())
                .chain(d.channels.iter().map(|c| c.channel.clone()))
                .chain(std::iter::once("all channels".to_owned()))
            {
                let k = (d.dataset.clone(), key);
                if !keys.contains(&k) {
                    keys.push(k);
                }
            }
        }
    }
    let mut rows = Vec::new();
    let mut tests: Vec<(usize, String, sage_measures::PairedDifference)> = Vec::new();
    for (dataset, key) in &keys {
        let mut row = vec![dataset.clone(), key.clone()];
        // (similarity, area, replicates, units checksum) of each run that has this row
        let mut areas = Vec::new();
        for (f, r) in &runs {
            let Some(d) = r.datasets.iter().find(|d| &d.dataset == dataset) else {
                row.push("—".into());
                continue;
            };
            let units = (
                d.corpus_checksum.clone(),
                d.rows.as_ref().map(|r| r.checksum.clone()),
            );
            match key.as_str() {
                "clean" => {
                    let text =
                        sink.cell(f, dataset, &format!("clean {}", d.measure), Some(d.clean));
                    row.push(with_interval(text, d.clean_ci95.as_ref()));
                }
                "all channels" => {
                    let text = sink.cell(f, dataset, "mean area", d.score);
                    row.push(match d.score {
                        Some(_) => text,
                        None => "no retention (clean not clearly above 0)".to_owned(),
                    });
                }
                channel => match d.channels.iter().find(|c| c.channel == channel) {
                    Some(c) => match c.area {
                        Some(area) => {
                            let text =
                                sink.cell(f, dataset, &format!("area {channel}"), Some(area));
                            row.push(with_interval(text, c.area_ci95.as_ref()));
                            areas.push((
                                f.similarity.clone(),
                                area,
                                c.area_bootstrap.as_ref(),
                                units,
                            ));
                        }
                        // the ratio says nothing here: the change at the channel's largest level
                        None => match c.points.last() {
                            Some(p) => {
                                let text = sink.cell(
                                    f,
                                    dataset,
                                    &format!("change {}", p.perturbation),
                                    Some(p.change),
                                );
                                row.push(format!(
                                    "Δ {} at {}",
                                    with_interval(text, p.change_ci95.as_ref()),
                                    p.level
                                ));
                            }
                            None => row.push("—".into()),
                        },
                    },
                    None => row.push("—".into()),
                },
            }
        }
        areas.sort_by(|a, b| b.1.total_cmp(&a.1));
        let compared = match (areas.first(), areas.get(1)) {
            (Some(best), Some(next)) => match (best.2, next.2) {
                (Some(a), Some(b)) if a.drawn_like(b) && best.3 == next.3 => {
                    sage_measures::paired_bootstrap(best.1, next.1, &a.values, &b.values, 0.95)?
                        .map(|d| (best.0.clone(), d))
                }
                _ => None,
            },
            _ => None,
        };
        match compared {
            Some((best, d)) => {
                tests.push((rows.len(), best, d));
                row.push(String::new());
            }
            None => row.push("—".into()),
        }
        rows.push(row);
    }
    let holm = sage_measures::holm(
        &tests.iter().map(|t| t.2.p_value).collect::<Vec<_>>(),
        crate::ranking::ALPHA,
    )?;
    for (k, (at, best, d)) in tests.iter().enumerate() {
        let short = best.rsplit('/').next().unwrap_or(best);
        let verdict = if holm.reject[k] {
            ""
        } else {
            ", not significant"
        };
        *rows[*at].last_mut().expect("a row has cells") = format!(
            "{short} +{:.3} [{:.3}, {:.3}], p {:.3}{verdict}",
            d.difference, d.ci_low, d.ci_high, holm.adjusted[k]
        );
    }
    Ok(Table {
        key: "noise",
        title: "Production noise — area under the retention curve per channel".into(),
        note: "Retention = score on noisy input / clean score (NDCG@10 with noisy queries; \
               Spearman or AP with a noisy second sentence). Area: trapezoid under the retention \
               curve from the clean point to the largest rate (or length), divided by it: 1 = no \
               loss. 95% paired bootstrap intervals; the last column tests the best area \
               against the next (paired bootstrap, Holm-corrected over the rows). Where a clean \
               score or the low end of its interval is not above zero a ratio says nothing: the \
               cell gives the change instead (Δ = noisy − clean at the largest level, with its \
               paired interval), and the dataset is left out of the noise score."
            .into(),
        header,
        rows,
    })
}

/// `text` followed by its interval, where there is one.
fn with_interval(text: String, ci: Option<&BootstrapInterval>) -> String {
    match ci {
        Some(ci) => format!("{text} [{:.3}, {:.3}]", ci.low, ci.high),
        None => text,
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// summary.csv: every number of the tables, then the ranking's (rank, the overall interval, each
/// comparison's difference and Holm-corrected p).
pub(crate) fn summary_csv(sink: &Sink, answer: &Answer) -> String {
    let overall = |similarity: &str, measure: String, value: f64| CsvLine {
        similarity: similarity.to_owned(),
        suite: "sage".into(),
        task: "overall".into(),
        dataset: String::new(),
        measure,
        value,
    };
    let mut ranking = Vec::new();
    for r in &answer.ranking.ranked {
        ranking.push(overall(&r.similarity, "rank".into(), r.rank as f64));
        if let Some((lo, hi)) = r.overall.ci95 {
            ranking.push(overall(&r.similarity, "ci95 low".into(), lo));
            ranking.push(overall(&r.similarity, "ci95 high".into(), hi));
        }
    }
    for c in &answer.ranking.comparisons {
        let d = &c.difference;
        for (measure, value) in [
            ("difference", d.difference),
            ("difference ci95 low", d.ci_low),
            ("difference ci95 high", d.ci_high),
            ("p", d.p_value),
            ("p holm", c.p_holm),
        ] {
            ranking.push(overall(
                &c.higher,
                format!("{measure} vs {}", c.lower),
                value,
            ));
        }
    }
    let mut out = String::from("similarity,suite,task,dataset,measure,value\n");
    for l in sink.csv.iter().chain(&ranking) {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{}",
            csv_field(&l.similarity),
            csv_field(&l.suite),
            csv_field(&l.task),
            csv_field(&l.dataset),
            csv_field(&l.measure),
            l.value
        );
    }
    out
}
