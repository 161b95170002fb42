//! `sage report DIR`: the tables and plots of a results folder (`cargo xtask bench-all`'s
//! `DIR/<similarity>/<suite>/<task>.json`).
//!
//! Writes DIR/report.md (the SAGE paper's Table 1 layout, then Tables 2–6, clustering and
//! retrieval per dataset, EvalRank, ALIGN-SIM), DIR/summary.csv (every number of those tables,
//! one per line) and DIR/report.html (the same tables and inline SVG plots drawn with plotters,
//! no external resource, so the file opens anywhere). Reads only the result files: a report can
//! be made again, on another machine, from a copied folder.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use sage_core::{ResultEnvelope, SimilarityKind, RESULT_SCHEMA};
use serde_json::Value;

/// SAGE's categories, in Table 1's order: (task, column title).
pub(crate) const SAGE_COLUMNS: [(&str, &str); 5] = [
    ("clustering", "Clustering"),
    ("human-pref", "Human Pref."),
    ("robustness", "Robustness"),
    ("sensitivity", "Sensitivity"),
    ("retrieval", "Retrieval"),
];

/// One result file.
struct ResultFile {
    similarity: String,
    suite: String,
    task: String,
    envelope: ResultEnvelope,
}

impl ResultFile {
    fn report(&self) -> &Value {
        &self.envelope.report
    }
}

/// A table for the markdown and HTML outputs; every numeric cell also becomes a CSV line.
struct Table {
    title: String,
    note: String,
    header: Vec<String>,
    rows: Vec<Vec<String>>,
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
struct Sink {
    csv: Vec<CsvLine>,
    /// MTEB's published scores (`--mteb-results`), shown beside PTEB's original scores.
    published: Vec<pteb::mteb::PublishedScore>,
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

/// The number at `path` in a report, if there is one.
pub(crate) fn num(v: &Value, path: &[&str]) -> Option<f64> {
    path.iter().try_fold(v, |at, key| at.get(key))?.as_f64()
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("?")
}

fn items<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Every result file under `dir` (three levels: similarity/suite/task.json). Hidden folders
/// are not similarities: `cargo xtask slurm` keeps its job files and logs in `.slurm/`.
fn load(dir: &Path) -> Result<Vec<ResultFile>> {
    let mut files = Vec::new();
    let list = |d: &Path| -> Result<Vec<PathBuf>> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(d)
            .with_context(|| format!("{}: cannot read the folder", d.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        v.sort();
        Ok(v)
    };
    let hidden = |p: &Path| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with('.'))
    };
    for similarity in list(dir)?.into_iter().filter(|p| p.is_dir() && !hidden(p)) {
        for suite in list(&similarity)?.into_iter().filter(|p| p.is_dir()) {
            for path in list(&suite)? {
                if path.extension().is_none_or(|e| e != "json") {
                    continue;
                }
                let bytes = std::fs::read(&path)
                    .with_context(|| format!("{}: cannot read", path.display()))?;
                let value: Value = serde_json::from_slice(&bytes)
                    .with_context(|| format!("{}: not a JSON result file", path.display()))?;
                // the schema first: a file of another layout should say so, not fail on a field
                if value["schema"] != RESULT_SCHEMA {
                    bail!(
                        "{}: schema {} is not {RESULT_SCHEMA:?} (made by another harness version?)",
                        path.display(),
                        value["schema"]
                    );
                }
                let envelope: ResultEnvelope = serde_json::from_value(value)
                    .with_context(|| format!("{}: not a {RESULT_SCHEMA} file", path.display()))?;
                files.push(ResultFile {
                    similarity: envelope.similarity.name.clone(),
                    suite: envelope.suite.clone(),
                    task: envelope.task.clone(),
                    envelope,
                });
            }
        }
    }
    // metrics first, then models, each by name: Table 1's grouping
    files.sort_by(|a, b| {
        let model = |f: &ResultFile| f.envelope.similarity.kind == SimilarityKind::Model;
        (model(a), &a.similarity).cmp(&(model(b), &b.similarity))
    });
    Ok(files)
}

fn find<'a>(
    files: &'a [ResultFile],
    similarity: &str,
    suite: &str,
    task: &str,
) -> Option<&'a ResultFile> {
    files
        .iter()
        .find(|f| f.similarity == similarity && f.suite == suite && f.task == task)
}

fn similarities(files: &[ResultFile]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for f in files {
        if !out.contains(&f.similarity) {
            out.push(f.similarity.clone());
        }
    }
    out
}

/// A score with its bootstrap interval when the report has one.
fn with_ci(score: &str, report: &Value) -> String {
    match (
        num(report, &["ci95", "low"]),
        num(report, &["ci95", "high"]),
    ) {
        (Some(lo), Some(hi)) if score != "—" => format!("{score} [{lo:.3}, {hi:.3}]"),
        _ => score.to_owned(),
    }
}

fn sage_table(files: &[ResultFile], sink: &mut Sink) -> Table {
    let mut rows = Vec::new();
    for s in similarities(files) {
        let mut row = vec![s.clone()];
        let mut scores = Vec::new();
        for (task, _) in SAGE_COLUMNS {
            match find(files, &s, "sage", task) {
                Some(r) => {
                    let score = num(r.report(), &["score"]);
                    scores.extend(score);
                    let cell = sink.cell(r, "", "score", score);
                    row.push(with_ci(&cell, r.report()));
                }
                None => row.push("—".to_owned()),
            }
        }
        if scores.is_empty() {
            continue;
        }
        // the paper's overall score is the unweighted mean of all five categories
        let overall = (scores.len() == SAGE_COLUMNS.len())
            .then(|| scores.iter().sum::<f64>() / scores.len() as f64);
        if let Some(o) = overall {
            sink.csv.push(CsvLine {
                similarity: s.clone(),
                suite: "sage".into(),
                task: "overall".into(),
                dataset: String::new(),
                measure: "score".into(),
                value: o,
            });
        }
        row.push(overall.map_or("—".to_owned(), |o| format!("{o:.3}")));
        rows.push(row);
    }
    let mut header = vec!["Similarity".to_owned()];
    header.extend(SAGE_COLUMNS.iter().map(|(_, t)| t.to_string()));
    header.push("Overall".into());
    Table {
        title: "SAGE (Table 1 layout)".into(),
        note: "Scores in [0, 1]; bootstrap 95% intervals in brackets where the task reports \
               them; Overall is the unweighted mean of the five categories (— when one is \
               missing)."
            .into(),
        header,
        rows,
    }
}

fn human_pref_tables(files: &[ResultFile], sink: &mut Sink) -> Vec<Table> {
    let mut pairwise = Vec::new();
    let mut ratings = Vec::new();
    let mut dimension_names: Vec<String> = Vec::new();
    for r in files
        .iter()
        .filter(|f| f.suite == "sage" && f.task == "human-pref")
    {
        for source in items(r.report(), "sources") {
            let name = text(source, "name");
            let c = &source["comparisons"]["classification"];
            let mut row = vec![r.similarity.clone(), name.to_owned()];
            for m in ["accuracy", "precision", "recall", "f1"] {
                row.push(sink.cell(r, name, m, num(c, &[m])));
            }
            row.push(format!("{}", source["comparisons"]["pairs"]));
            pairwise.push(row);
            let mut cells = BTreeMap::new();
            for d in items(&source["correlations"], "dimensions") {
                let dim = text(d, "dimension").to_owned();
                if !dimension_names.contains(&dim) {
                    dimension_names.push(dim.clone());
                }
                let v = sink.cell(r, name, &format!("{dim} (0.5·(r+1))"), num(d, &["mapped"]));
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
            title: "Human preference — ratings (Table 3)".into(),
            note: "Pearson r of similarity(source, summary) with each rating, as 0.5·(r+1).".into(),
            header,
            rows,
        },
    ]
}

/// One row per similarity, one column per dataset, for a per-dataset number of a SAGE task.
fn per_dataset_table(
    files: &[ResultFile],
    sink: &mut Sink,
    task: &str,
    title: &str,
    note: &str,
    measure: &str,
    value: impl Fn(&Value) -> Option<f64>,
) -> Table {
    let mut datasets: Vec<String> = Vec::new();
    let mut rows = Vec::new();
    for r in files.iter().filter(|f| f.suite == "sage" && f.task == task) {
        let mut cells = BTreeMap::new();
        for d in items(r.report(), "datasets") {
            let name = text(d, "dataset").to_owned();
            if !datasets.contains(&name) {
                datasets.push(name.clone());
            }
            cells.insert(name.clone(), sink.cell(r, &name, measure, value(d)));
        }
        rows.push((r.similarity.clone(), cells));
    }
    let mut header = vec!["Similarity".to_owned()];
    header.extend(datasets.iter().cloned());
    Table {
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
        .filter(|f| f.suite == "evalrank")
        .map(|r| {
            let rep = r.report();
            let mut row = vec![r.similarity.clone(), r.task.clone()];
            for (m, path) in [
                ("MRR", ["scores", "mrr"]),
                ("Hits@1", ["scores", "hits_at_1"]),
                ("Hits@3", ["scores", "hits_at_3"]),
                ("classic Spearman×100", ["classic", "mean"]),
            ] {
                row.push(sink.cell(r, &r.task, m, num(rep, &path)));
            }
            row.push(format!("{}", rep["scores"]["pairs"]));
            row
        })
        .collect();
    Table {
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

fn align_sim_table(files: &[ResultFile], sink: &mut Sink) -> Table {
    let mut rows = Vec::new();
    for r in files.iter().filter(|f| f.suite == "align-sim") {
        let rep = r.report();
        for d in items(rep, "datasets") {
            let name = text(d, "dataset");
            let mut row = vec![r.similarity.clone(), name.to_owned()];
            row.push(sink.cell(
                r,
                name,
                "paraphrase − random",
                num(d, &["paraphrase", "difference"]),
            ));
            let syn = items(d, "synonyms").first();
            row.push(sink.cell(
                r,
                name,
                "synonym n=1 (normalised)",
                syn.and_then(|s| num(s, &["normalised"])),
            ));
            row.push(sink.cell(
                r,
                name,
                "antonym mean difference",
                num(d, &["antonym", "mean_difference"]),
            ));
            let jumble = items(d, "jumbling").first();
            row.push(sink.cell(
                r,
                name,
                "jumbling n=1 mean difference",
                jumble.and_then(|j| num(j, &["mean_difference"])),
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
            num(rep, &["negation", "normalised"]),
        ));
        rows.push(row);
    }
    for row in rows.iter_mut() {
        row.resize(7, "—".to_owned());
    }
    Table {
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

fn pteb_tables(files: &[ResultFile], sink: &mut Sink) -> Vec<Table> {
    let pteb: Vec<&ResultFile> = files.iter().filter(|f| f.suite == "pteb").collect();
    let mut rows = Vec::new();
    let mut unqualified_anywhere = false;
    for r in &pteb {
        let rep = r.report();
        for d in items(rep, "datasets") {
            let name = text(d, "dataset");
            let quality = &d["quality"];
            // a result without the record (made before it existed) is not called qualified
            let qualified = quality["verdict"]["qualified"].as_bool() == Some(true);
            unqualified_anywhere |= !qualified;
            // the paraphrased numbers of an unqualified dataset carry a mark to the note
            let mark = if qualified { "" } else { " †" };
            let mut row = vec![
                r.similarity.clone(),
                name.to_owned(),
                text(d, "task").to_owned(),
            ];
            row.push(sink.cell(r, name, "original", num(d, &["original"])));
            if !sink.published.is_empty() {
                let published = pteb::mteb::mteb_task_name(name).and_then(|task| {
                    sink.published.iter().find(|p| {
                        p.task == task
                            && p.split == text(d, "split")
                            && p.hf_subset == "default"
                            && same_model(&p.model, &r.similarity)
                    })
                });
                let score = published.map(|p| p.main_score);
                row.push(sink.cell(r, name, "mteb published", score));
            }
            let mean = sink.cell(
                r,
                name,
                "paraphrased mean",
                num(d, &["paraphrased", "mean"]),
            );
            let std = sink.cell(r, name, "paraphrased std", num(d, &["paraphrased", "std"]));
            row.push(format!("{mean} ± {std}{mark}"));
            let delta = sink.cell(r, name, "delta", num(d, &["delta"]));
            row.push(format!("{delta}{mark}"));
            row.push(sink.cell(r, name, "edit distance", num(quality, &["edit_distance"])));
            let cosine = sink.cell(
                r,
                name,
                "reference cosine",
                num(quality, &["reference_cosine"]),
            );
            let below = num(quality, &["share_below"])
                .map_or("—".to_owned(), |v| format!("{:.0}%", 100.0 * v));
            row.push(format!("{cosine} ({below} low)"));
            row.push(format!("{}", d["fallbacks"]));
            let reasons: Vec<&str> = items(&quality["verdict"], "reasons")
                .iter()
                .filter_map(Value::as_str)
                .collect();
            row.push(match (qualified, quality.is_null()) {
                (true, _) => "qualified".into(),
                (false, true) => "not measured".into(),
                (false, false) => format!("paraphraser not qualified: {}", reasons.join("; ")),
            });
            rows.push(row);
        }
        let pooled_row = match rep.get("pooled").filter(|p| !p.is_null()) {
            Some(p) => {
                let hl = sink.cell(
                    r,
                    "pooled",
                    "hodges-lehmann",
                    num(p, &["hodges_lehmann", "estimate"]),
                );
                let lo = sink.cell(
                    r,
                    "pooled",
                    "hl ci low",
                    num(p, &["hodges_lehmann", "ci_low"]),
                );
                let hi = sink.cell(
                    r,
                    "pooled",
                    "hl ci high",
                    num(p, &["hodges_lehmann", "ci_high"]),
                );
                let pv = num(p, &["wilcoxon", "p_value"])
                    .map_or("—".into(), |v| format!("p = {v:.2e}"));
                let over = if p["includes_unqualified"].as_bool() == Some(true) {
                    "unqualified datasets included"
                } else {
                    "qualified datasets"
                };
                Some(vec![
                    r.similarity.clone(),
                    "pooled".into(),
                    format!("n = {}", p["n"]),
                    "".into(),
                    "".into(),
                    format!("HL {hl} [{lo}, {hi}]"),
                    pv,
                    "".into(),
                    format!("{}", rep["fallbacks"]),
                    over.into(),
                ])
            }
            None if !items(rep, "unqualified").is_empty() => Some(vec![
                r.similarity.clone(),
                "pooled".into(),
                "—".into(),
                "".into(),
                "".into(),
                "".into(),
                "".into(),
                "".into(),
                format!("{}", rep["fallbacks"]),
                "nothing pooled: too few qualified dataset runs".into(),
            ]),
            None => None,
        };
        if let Some(mut row) = pooled_row {
            // the pooled row has no published score
            if !sink.published.is_empty() {
                row.insert(4, String::new());
            }
            rows.push(row);
        }
    }
    let mut note =
        "Main score per dataset on the original texts and on LLM paraphrases (mean ± std \
                    over runs); delta = paraphrased − original; edit distance: normalised \
                    word-level; reference cosine: a fixed encoder's cosine of each original with \
                    its paraphrase (the paraphrases' faithfulness, whatever the model under test), \
                    with the share below the gate's per-text threshold; fallbacks: texts kept as \
                    they were after 5 rejected answers. Pooled: Hodges–Lehmann shift over dataset \
                    × run with its 95% bootstrap interval, Wilcoxon signed-rank p."
            .to_owned();
    if unqualified_anywhere {
        note.push_str(&format!(
            " † paraphraser not qualified: the paraphrases of this dataset missed the quality \
             gate (bench.toml [pteb.quality]), so its drop may be the paraphraser's failure, not \
             the model's; it is left out of the pooled statistics and the comparisons. To fix: \
             {}.",
            pteb::NOT_QUALIFIED_ADVICE
        ));
    }
    let mut header: Vec<String> = [
        "Model",
        "Dataset",
        "Task",
        "Original",
        "Paraphrased",
        "Delta",
        "Edit dist.",
        "Ref. cosine",
        "Fallbacks",
        "Paraphrases",
    ]
    .map(String::from)
    .to_vec();
    if !sink.published.is_empty() {
        header.insert(4, "MTEB published".into());
        note.push_str(
            " MTEB published: the model's main score on the same task and split in the MTEB \
             results given with --mteb-results (all rows; a sampled original can differ by \
             its sample).",
        );
    }
    let mut out = vec![Table {
        title: "PTEB — original vs paraphrased".into(),
        note,
        header,
        rows,
    }];
    // the paper's Table 7: every model against a baseline (all-mpnet-base-v2 when present)
    let reports: Vec<(&ResultFile, pteb::PtebReport)> = pteb
        .iter()
        .filter_map(|r| Some((*r, serde_json::from_value(r.report().clone()).ok()?)))
        .collect();
    if reports.len() >= 2 {
        let base = reports
            .iter()
            .position(|(r, _)| r.similarity.contains("mpnet"))
            .unwrap_or(0);
        let others: Vec<&pteb::PtebReport> = reports
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != base)
            .map(|(_, (_, p))| p)
            .collect();
        let seed = sage_core::RunSeed(reports[base].1.options.seed);
        let note = "Paired on the paraphrased scores of the (dataset, seed) runs both have \
                    (datasets whose paraphrases passed the quality gate, unless the run pools \
                    them all): Hodges–Lehmann shift model − baseline with its 95% bootstrap \
                    interval, Wilcoxon signed-rank p, Holm-corrected over the models.";
        let (note, rows) = match pteb::compare(&reports[base].1, &others, seed) {
            Ok(comparisons) => (
                note.to_owned(),
                comparisons
                    .iter()
                    .map(|c| {
                        vec![
                            c.model.clone(),
                            c.n.to_string(),
                            format!(
                                "{:+.3} [{:+.3}, {:+.3}]",
                                c.hodges_lehmann.estimate,
                                c.hodges_lehmann.ci_low,
                                c.hodges_lehmann.ci_high
                            ),
                            c.wilcoxon
                                .map_or("—".into(), |w| format!("{:.2e}", w.p_value)),
                            c.p_holm.map_or("—".into(), |p| format!("{p:.2e}")),
                        ]
                    })
                    .collect(),
            ),
            // say why there is no comparison rather than leave the table out unexplained
            Err(why) => (format!("Not computed: {why}."), Vec::new()),
        };
        out.push(Table {
            title: format!(
                "PTEB — against the baseline {} (Table 7 layout)",
                reports[base].0.similarity
            ),
            note,
            header: ["Model", "n", "HL [95% CI]", "p", "p (Holm)"]
                .map(String::from)
                .to_vec(),
            rows,
        });
    }
    out
}

fn tables(files: &[ResultFile], sink: &mut Sink) -> Vec<Table> {
    let mut out = vec![sage_table(files, sink)];
    out.extend(human_pref_tables(files, sink));
    out.push(per_dataset_table(
        files,
        sink,
        "robustness",
        "Transformation robustness (Table 4)",
        "Mean over the three conditions of the share of documents meeting each.",
        "score",
        |d| num(d, &["score"]),
    ));
    for (family, table) in [("insertion", 5), ("removal", 6)] {
        out.push(per_dataset_table(
            files,
            sink,
            "sensitivity",
            &format!("Information sensitivity — {family} (Table {table})"),
            "1 − mean |observed − (1 − p/(1+p))| over documents and levels.",
            &format!("{family} score"),
            |d| num(d, &[family, "score"]),
        ));
    }
    out.push(per_dataset_table(
        files,
        sink,
        "clustering",
        "Clustering — V-measure per dataset",
        "Complete linkage on 1 − similarity, cut at the true class count; mean over subsets.",
        "v_measure",
        |d| num(d, &["v_measure"]),
    ));
    out.push(per_dataset_table(
        files,
        sink,
        "retrieval",
        "Retrieval — clean NDCG@10 per dataset",
        "On the unperturbed corpus (the sample used).",
        "ndcg_clean",
        |d| num(d, &["ndcg_clean"]),
    ));
    out.push(per_dataset_table(
        files,
        sink,
        "retrieval",
        "Retrieval — harmonic mean of the 18 NDCG@10 retentions per dataset",
        "retention_t = NDCG@10 on perturbed corpus t / clean NDCG@10.",
        "retention harmonic mean",
        |d| num(d, &["score"]),
    ));
    out.push(evalrank_table(files, sink));
    out.push(align_sim_table(files, sink));
    out.extend(pteb_tables(files, sink));
    out.into_iter().filter(|t| !t.rows.is_empty()).collect()
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

fn summary_csv(sink: &Sink) -> String {
    let mut out = String::from("similarity,suite,task,dataset,measure,value\n");
    for l in &sink.csv {
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

/// Where the results came from: revisions, hosts, data, sample mode, notes.
fn provenance(files: &[ResultFile]) -> Vec<String> {
    let distinct = |key: &dyn Fn(&ResultEnvelope) -> String| -> Vec<String> {
        let mut v: Vec<String> = files.iter().map(|f| key(&f.envelope)).collect();
        v.sort();
        v.dedup();
        v
    };
    let revisions = distinct(&|e| {
        e.run
            .git_revision
            .as_deref()
            .unwrap_or("unknown")
            .chars()
            .take(12)
            .collect()
    });
    let hosts = distinct(&|e| {
        let h = &e.run.host;
        let gpus: Vec<&str> = h.gpus.iter().map(|g| g.name.as_str()).collect();
        format!(
            "{} ({} cores){}",
            h.cpu.as_deref().unwrap_or("unknown CPU"),
            h.cores.map_or("?".to_owned(), |c| c.to_string()),
            if gpus.is_empty() {
                String::new()
            } else {
                format!(", {}", gpus.join(", "))
            }
        )
    });
    let data = distinct(&|e| e.parameters.data_dir.clone());
    let devices = distinct(&|e| {
        let on_gpu = e.parameters.sage_args.iter().any(|a| a == "--cuda");
        if on_gpu { "CUDA (f16 models)" } else { "CPU" }.to_owned()
    });
    let quick = distinct(&|e| {
        if e.quick {
            "quick samples".into()
        } else {
            "configured samples".into()
        }
    });
    let mut lines = vec![
        format!("{} result files", files.len()),
        format!("git revision: {}", revisions.join(", ")),
        format!("host: {}", hosts.join("; ")),
        format!("device: {}", devices.join(", ")),
        format!("data: {}", data.join(", ")),
        format!("samples: {}", quick.join(", ")),
    ];
    // a note (a default dataset that is not local, ...) is usually the same for every similarity
    let mut notes: Vec<(String, usize)> = Vec::new();
    for f in files {
        for note in &f.envelope.notes {
            match notes.iter_mut().find(|(n, _)| n == note) {
                Some((_, count)) => *count += 1,
                None => notes.push((note.to_owned(), 1)),
            }
        }
    }
    for (note, count) in notes {
        lines.push(format!("note ({count} results): {note}"));
    }
    lines
}

fn markdown(tables: &[Table], provenance: &[String]) -> String {
    let mut out = String::from("# sage-rs report\n\n");
    for line in provenance {
        let _ = writeln!(out, "- {line}");
    }
    for t in tables {
        let _ = write!(out, "\n## {}\n\n{}\n\n", t.title, t.note);
        let _ = writeln!(out, "| {} |", t.header.join(" | "));
        let _ = writeln!(
            out,
            "|{}",
            t.header
                .iter()
                .enumerate()
                .map(|(i, _)| if i == 0 { "---|" } else { "---:|" })
                .collect::<String>()
        );
        for row in &t.rows {
            let _ = writeln!(out, "| {} |", row.join(" | "));
        }
    }
    out
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn html(tables: &[Table], charts: &[(String, String)], provenance: &[String]) -> String {
    let mut out = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>sage-rs report</title><style>\
         body{font-family:sans-serif;margin:2em;max-width:1200px;color:#222}\
         table{border-collapse:collapse;margin:0.5em 0 1.5em}\
         th,td{border:1px solid #ccc;padding:4px 8px;text-align:right}\
         th:first-child,td:first-child{text-align:left}th{background:#f3f3f3}\
         p.note{color:#555;font-size:90%}figure{margin:1em 0}\
         </style></head><body>\n<h1>sage-rs report</h1>\n<ul>\n",
    );
    for line in provenance {
        let _ = writeln!(out, "<li>{}</li>", escape(line));
    }
    out.push_str("</ul>\n");
    for t in tables {
        let _ = write!(
            out,
            "<h2>{}</h2>\n<p class=\"note\">{}</p>\n<table>\n<tr>",
            escape(&t.title),
            escape(&t.note)
        );
        for h in &t.header {
            let _ = write!(out, "<th>{}</th>", escape(h));
        }
        out.push_str("</tr>\n");
        for row in &t.rows {
            out.push_str("<tr>");
            for c in row {
                let _ = write!(out, "<td>{}</td>", escape(c));
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</table>\n");
    }
    if !charts.is_empty() {
        out.push_str("<h2>Plots</h2>\n");
    }
    for (title, svg) in charts {
        let _ = write!(
            out,
            "<figure><figcaption>{}</figcaption>\n{svg}\n</figure>\n",
            escape(title)
        );
    }
    out.push_str("</body></html>\n");
    out
}

/// `sage report DIR`.
pub fn run(dir: &Path, mteb_results: Option<&Path>) -> Result<()> {
    let files = load(dir)?;
    if files.is_empty() {
        bail!(
            "{}: no result files (expected <similarity>/<suite>/<task>.json, as cargo xtask bench-all writes)",
            dir.display()
        );
    }
    let mut sink = Sink::default();
    if let Some(path) = mteb_results {
        sink.published = pteb::mteb::read_results(path)
            .with_context(|| format!("reading the MTEB results {}", path.display()))?;
    }
    let tables = tables(&files, &mut sink);
    let provenance = provenance(&files);
    let charts = crate::plots::charts(
        &files
            .iter()
            .map(|f| {
                (
                    f.similarity.as_str(),
                    f.suite.as_str(),
                    f.task.as_str(),
                    f.report(),
                )
            })
            .collect::<Vec<_>>(),
    )?;
    let write = |name: &str, content: &str| -> Result<()> {
        let path = dir.join(name);
        let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
        std::fs::write(&tmp, content)
            .with_context(|| format!("{}: cannot write", tmp.display()))?;
        std::fs::rename(&tmp, &path).with_context(|| format!("{}: cannot write", path.display()))
    };
    write("report.md", &markdown(&tables, &provenance))?;
    write("summary.csv", &summary_csv(&sink))?;
    write("report.html", &html(&tables, &charts, &provenance))?;
    eprintln!(
        "sage: report of {} result files: {} (report.md, summary.csv, report.html)",
        files.len(),
        dir.display()
    );
    Ok(())
}
