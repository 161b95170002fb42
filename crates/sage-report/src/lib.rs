//! The report of a sage-rs results folder (`cargo xtask bench-all`'s
//! `DIR/<similarity>/<suite>/<task>.json`): `sage report DIR` and `sage_rs.report(dir)`.
//!
//! Writes, atomically, into DIR:
//! - `report.html`: one self-contained file (inline CSS, SVG and a few lines of script; nothing
//!   fetched at view time). Its first screen is the answer to "which one, and is the difference
//!   real": a similarity × SAGE-category heatmap with 95% intervals and the best per column
//!   marked, then the ranking by the overall score with the pairs whose difference is
//!   significant, then, when the throughput suite ran, quality against cost (overall score
//!   against texts per second on each host and against an API model's price, the Pareto front
//!   marked; the sentence adds the best buy against the best). Then the details: every table,
//!   each with the plots that explain it beside it.
//!   Tables sort by any column on a click (and from the address: `#sort=<table>:<column>:asc`);
//!   notes about skipped datasets are one line that opens.
//! - `report.md`: the same answer and tables in markdown.
//! - `summary.csv`: every number of those tables, one per line.
//!
//! Design:
//! - Significance is a paired bootstrap over the units both similarities were scored on. Each
//!   SAGE task writes every bootstrap resample's score (`bootstrap` in its report); resample `b`
//!   of two runs with the same seed, label and group sizes drew the same unit indices, so when
//!   the rows are the same (the envelopes' row selections are equal) the per-resample
//!   differences are a paired bootstrap of the difference, with no unit written anywhere. The
//!   overall score's resample is the mean of its five categories' resamples (each category drew
//!   its units independently: a stratified bootstrap). Every pair of ranked similarities is
//!   tested, Holm-corrected over all of them.
//! - One colour per similarity in every plot and in the colour key, assigned in the report's
//!   similarity order, so a colour means the same thing across the page.
//! - Reads only the result files: a report can be made again, on another machine, from a copied
//!   folder.
//! - Speeds are compared only within a host: a throughput measured on another machine gets its
//!   own plot, and every speed is shown with the host it was measured on ([`cost`]).
#![deny(missing_docs)]

use std::path::{Path, PathBuf};

mod answer;
pub mod cost;
mod load;
mod plots;
pub mod prediction;
mod ranking;
mod render;
pub mod storage;
mod tables;

pub use answer::{Answer, Heatmap, HeatmapRow};
pub use ranking::{Cell, Comparison, Ranked, Ranking, ALPHA};

/// Why a report could not be made. Nothing is written unless every input was read.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file or folder could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// A result file is not JSON, or not a result envelope.
    #[error("{}: not a sage-rs result file: {source}", path.display())]
    NotJson {
        /// The file.
        path: PathBuf,
        /// Where the parse failed (line and column).
        source: serde_json::Error,
    },
    /// A shipped suite's report that does not read into that suite's report type (a field
    /// renamed, dropped or of another type): said here rather than shown as a blank cell.
    #[error("{}: not a {kind} report of this sage version: {detail}", path.display())]
    Report {
        /// The file.
        path: PathBuf,
        /// `suite/task`.
        kind: String,
        /// What did not read (serde names the field).
        detail: serde_json::Error,
    },
    /// A result file of another schema.
    #[error("{}: schema {found} is not {:?} (made by another harness version?)", path.display(), sage_core::RESULT_SCHEMA)]
    Schema {
        /// The file.
        path: PathBuf,
        /// Its `schema` value.
        found: String,
    },
    /// The folder holds no result file.
    #[error("{}: no result files (expected <similarity>/<suite>/<task>.json, as cargo xtask bench-all writes)", .0.display())]
    Empty(PathBuf),
    /// The MTEB results given to compare with could not be read.
    #[error("reading the MTEB results {}: {source}", path.display())]
    Mteb {
        /// The MTEB results folder.
        path: PathBuf,
        /// The reader's error (names the file).
        source: pteb::PtebError,
    },
    /// A plot could not be drawn.
    #[error("drawing a plot: {0}")]
    Plot(String),
    /// A statistic was asked for with an invalid argument.
    #[error(transparent)]
    Core(#[from] sage_core::SageError),
}

impl<E: std::error::Error + Send + Sync> From<plotters::drawing::DrawingAreaErrorKind<E>>
    for ReportError
{
    fn from(e: plotters::drawing::DrawingAreaErrorKind<E>) -> Self {
        ReportError::Plot(e.to_string())
    }
}

/// This crate's results.
pub type Result<T, E = ReportError> = std::result::Result<T, E>;

/// What [`write_report`] wrote.
#[derive(Debug, serde::Serialize)]
pub struct Written {
    /// Result files read.
    pub result_files: usize,
    /// DIR/report.md.
    pub markdown: PathBuf,
    /// DIR/summary.csv.
    pub csv: PathBuf,
    /// DIR/report.html.
    pub html: PathBuf,
    /// The first screen's numbers: heatmap, ranking, significance.
    pub answer: Answer,
}

/// Reads every result file under `dir` (and MTEB's published scores from `mteb_results`, shown
/// beside PTEB's original scores) and writes report.md, summary.csv and report.html into `dir`.
pub fn write_report(dir: &Path, mteb_results: Option<&Path>) -> Result<Written> {
    let files = load::load(dir)?;
    if files.is_empty() {
        return Err(ReportError::Empty(dir.to_owned()));
    }
    let mut sink = tables::Sink::default();
    if let Some(path) = mteb_results {
        sink.published = pteb::mteb::read_results(path).map_err(|source| ReportError::Mteb {
            path: path.to_owned(),
            source,
        })?;
    }
    let answer = answer::answer(&files)?;
    let tables = tables::tables(&files, &answer, &mut sink)?;
    let provenance = load::provenance(&files);
    let palette = plots::Palette::new(&load::similarities(&files));
    let mut charts = plots::charts(&files, &palette)?;
    charts.extend(plots::cost_charts(&answer.cost, &palette)?);
    charts.extend(plots::storage_chart(&answer.storage, &palette)?);
    charts.extend(plots::transfer_chart(&files, &palette)?);
    charts.extend(plots::prediction_chart(&answer.prediction)?);
    let page = render::Page {
        answer: &answer,
        tables: &tables,
        charts: &charts,
        provenance: &provenance,
        palette: &palette,
    };
    let write = |name: &str, content: &str| -> Result<PathBuf> {
        let path = dir.join(name);
        sage_core::write_atomically(&path, content.as_bytes())?;
        Ok(path)
    };
    let markdown = write("report.md", &render::markdown(&page))?;
    let csv = write("summary.csv", &tables::summary_csv(&sink, &answer))?;
    let html = write("report.html", &render::html(&page))?;
    Ok(Written {
        result_files: files.len(),
        markdown,
        csv,
        html,
        answer,
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use sage_core::RunSeed;
    use sage_measures::bootstrap_mean_of_means;
    use serde_json::json;

    use super::*;

    const TASKS: [&str; 5] = [
        "clustering",
        "human-pref",
        "robustness",
        "sensitivity",
        "retrieval",
    ];

    /// One SAGE result file whose score is the mean of `units`, with the resamples the task
    /// crates write (same seed and label for every similarity, as a real run).
    fn write_result(dir: &Path, similarity: &str, task: &str, units: &[f64], checksum: &str) {
        let reps = bootstrap_mean_of_means(&[units], RunSeed(7), &format!("{task}/bootstrap"))
            .unwrap()
            .unwrap();
        let ci = reps.interval(0.95).unwrap().unwrap();
        let score = units.iter().sum::<f64>() / units.len() as f64;
        let report = category_report(task, similarity, score, ci, reps);
        let envelope = json!({
            "datasets": [{"checksum": checksum, "dataset": "d", "used_rows": units.len()}],
            "harness_version": "0.1.0",
            "notes": ["robustness: skipped: dataset billsum is not in the local mirror"],
            "parameters": {"data_dir": "data", "sage_args": ["run", task]},
            "quick": true,
            "report": report,
            "run": {
                "git_revision": "abc",
                "host": {"arch": "x86_64", "cores": 2, "cpu": "EPYC", "gpus": [], "os": "linux"},
                "timestamp": "2026-11-25T00:00:00Z",
                "wall_seconds": 1.0
            },
            "schema": sage_core::RESULT_SCHEMA,
            "score": score,
            "seed": 7,
            "similarity": {"kind": "metric", "name": similarity, "spec": similarity},
            "suite": "sage",
            "task": task
        });
        let folder = dir.join(similarity).join("sage");
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join(format!("{task}.json")),
            serde_json::to_vec_pretty(&envelope).unwrap(),
        )
        .unwrap();
    }

    /// The report of a SAGE category, in the task crate's own type, with no datasets.
    fn category_report(
        task: &str,
        similarity: &str,
        score: f64,
        ci95: sage_measures::BootstrapInterval,
        bootstrap: sage_measures::BootstrapReplicates,
    ) -> serde_json::Value {
        fn category<O: serde::Serialize + Default>(
            similarity: &str,
            score: f64,
            ci95: sage_measures::BootstrapInterval,
            bootstrap: sage_measures::BootstrapReplicates,
        ) -> serde_json::Value {
            let report: sage_measures::CategoryReport<O, ()> = sage_measures::CategoryReport {
                similarity: similarity.to_owned(),
                seed: 7,
                options: O::default(),
                datasets: Vec::new(),
                score,
                ci95: Some(ci95),
                bootstrap: Some(bootstrap),
                timings: sage_core::Timings::default(),
            };
            serde_json::to_value(report).unwrap()
        }
        match task {
            "human-pref" => serde_json::to_value(sage_human_pref::HumanPrefReport {
                similarity: similarity.to_owned(),
                seed: 7,
                max_rows: None,
                sources: Vec::new(),
                score,
                ci95: Some(ci95),
                bootstrap: Some(bootstrap),
                timings: sage_core::Timings::default(),
            })
            .unwrap(),
            "robustness" => {
                category::<sage_robustness::Options>(similarity, score, ci95, bootstrap)
            }
            "sensitivity" => {
                category::<sage_sensitivity::Options>(similarity, score, ci95, bootstrap)
            }
            "clustering" => category::<sage_cluster::Options>(similarity, score, ci95, bootstrap),
            "retrieval" => category::<sage_retrieval::Options>(similarity, score, ci95, bootstrap),
            other => panic!("no SAGE task {other}"),
        }
    }

    /// Per-unit scores: a fixed wobble around `level`, the same wobble for every similarity
    /// (the units are the same documents) plus `noise` × a second wobble.
    fn units(level: f64, noise: f64) -> Vec<f64> {
        (0..40)
            .map(|i| {
                let i = i as f64;
                (level + 0.1 * (i * 0.7).sin() + noise * (i * 1.9).cos()).clamp(0.0, 1.0)
            })
            .collect()
    }

    fn folder_of_three() -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        for task in TASKS {
            write_result(tmp.path(), "strong", task, &units(0.8, 0.0), "c1");
            write_result(tmp.path(), "tied-a", task, &units(0.5, 0.02), "c1");
            write_result(tmp.path(), "tied-b", task, &units(0.5, -0.02), "c1");
        }
        tmp
    }

    #[test]
    fn the_ranking_says_which_differences_are_real() {
        let tmp = folder_of_three();
        let written = write_report(tmp.path(), None).unwrap();
        let ranking = &written.answer.ranking;
        let order: Vec<&str> = ranking
            .ranked
            .iter()
            .map(|r| r.similarity.as_str())
            .collect();
        assert_eq!(order[0], "strong");
        assert_eq!(ranking.comparisons.len(), 3, "{ranking:?}");
        for c in &ranking.comparisons {
            // Holm never lowers a p-value
            assert!(c.p_holm >= c.difference.p_value);
            let involves_strong = c.higher == "strong";
            assert_eq!(c.significant, involves_strong, "{c:?}");
            if involves_strong {
                assert!((c.difference.difference - 0.3).abs() < 0.01, "{c:?}");
                assert!(c.difference.ci_low > 0.0, "{c:?}");
            } else {
                assert!(
                    c.difference.ci_low <= 0.0 && 0.0 <= c.difference.ci_high,
                    "{c:?}"
                );
            }
        }
        let best = &ranking.ranked[0].overall;
        let (lo, hi) = best.ci95.unwrap();
        assert!(lo <= best.score && best.score <= hi, "{best:?}");
        assert_eq!(ranking.units[0], ("Clustering".to_owned(), 40));
        // the heatmap marks the strong similarity best in every column
        let heatmap = &written.answer.heatmap;
        let strong = heatmap
            .rows
            .iter()
            .position(|r| r.similarity == "strong")
            .unwrap();
        assert!(heatmap.best.iter().all(|b| *b == [strong]));
        assert_eq!(heatmap.columns.last().unwrap(), "Overall");
    }

    #[test]
    fn results_on_other_rows_are_not_paired() {
        let tmp = folder_of_three();
        write_result(tmp.path(), "tied-b", "robustness", &units(0.5, -0.02), "c2");
        let written = write_report(tmp.path(), None).unwrap();
        let ranking = &written.answer.ranking;
        assert_eq!(ranking.comparisons.len(), 1, "{ranking:?}");
        assert_eq!(ranking.not_compared.len(), 2, "{ranking:?}");
        assert!(ranking.not_compared[0].contains("robustness: not the same rows"));
        // said in the report too, not only in the returned numbers
        let md = std::fs::read_to_string(&written.markdown).unwrap();
        assert!(
            md.contains("Not compared: strong vs tied-b: robustness"),
            "{md}"
        );
    }

    /// The checks of the data files the results read are counted in "where these numbers come
    /// from", each file once, and the files that are not their pinned bytes are named.
    #[test]
    fn the_report_says_whether_the_data_files_were_known_bytes() {
        let tmp = folder_of_three();
        let check = |path: &str, sha: &str, verified: &str| json!({"path": path, "sha256": sha, "verified": verified});
        for (similarity, task) in [("strong", "robustness"), ("tied-a", "robustness")] {
            let path = tmp
                .path()
                .join(similarity)
                .join("sage")
                .join(format!("{task}.json"));
            let mut envelope: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            envelope["datasets"] = json!([
                {"dataset": "stsb", "split": "test", "total_rows": 40, "used_rows": 40,
                 "max_rows": null, "seed": 7, "empty_text_rows": 0, "checksum": "c1",
                 "split_checksum": "c1",
                 "files": [check("sts/stsb/test.jsonl", "aa", "differs-from-pin")]},
                {"dataset": "arguana/test", "corpus_checksum": "cc", "corpus_total": 9,
                 "corpus_used": 9, "queries": 3,
                 "files": [check("retrieval/arguana/corpus.jsonl", "bb", "lock"),
                           check("retrieval/arguana/queries.jsonl", "dd", "pin")]}
            ]);
            std::fs::write(&path, serde_json::to_vec_pretty(&envelope).unwrap()).unwrap();
        }
        let written = write_report(tmp.path(), None).unwrap();
        let md = std::fs::read_to_string(&written.markdown).unwrap();
        assert!(
            md.contains(
                "data files: 3 read; 1 equal their pins, 1 their locks; 1 are not their pinned \
                 bytes (sts/stsb/test.jsonl)"
            ),
            "{md}"
        );
    }

    #[test]
    fn a_similarity_missing_a_category_is_shown_but_not_ranked() {
        let tmp = folder_of_three();
        std::fs::remove_file(tmp.path().join("tied-a/sage/retrieval.json")).unwrap();
        let written = write_report(tmp.path(), None).unwrap();
        let answer = &written.answer;
        assert_eq!(answer.ranking.ranked.len(), 2);
        let row = answer
            .heatmap
            .rows
            .iter()
            .find(|r| r.similarity == "tied-a")
            .unwrap();
        assert!(row.cells[4].is_none() && row.cells[5].is_none() && row.cells[0].is_some());
        assert!(answer.ranking.not_compared[0].contains("tied-a: not ranked"));
    }

    #[test]
    fn the_page_puts_the_answer_first_and_needs_no_network() {
        let tmp = folder_of_three();
        let written = write_report(tmp.path(), None).unwrap();
        let html = std::fs::read_to_string(&written.html).unwrap();
        let at = |needle: &str| {
            html.find(needle)
                .unwrap_or_else(|| panic!("{needle} not in the page"))
        };
        assert!(at("id=\"verdict\"") < at("id=\"heatmap\""));
        assert!(at("id=\"heatmap\"") < at("id=\"ranking\""));
        assert!(at("id=\"ranking\"") < at("<details id=\"notes\"><summary>1 note"));
        assert!(at("<details id=\"notes\">") < at("id=\"details\""));
        assert_eq!(html.matches("class=\"best\"").count(), 6);
        assert!(html.contains("Best overall: strong"));
        for external in ["src=\"http", "href=\"http", "@import", "url("] {
            assert!(!html.contains(external), "{external}");
        }
        let md = std::fs::read_to_string(&written.markdown).unwrap();
        assert!(md.find("## The answer").unwrap() < md.find("### Ranking").unwrap());
        assert!(md.find("### Ranking").unwrap() < md.find("## Details").unwrap());
        let csv = std::fs::read_to_string(&written.csv).unwrap();
        assert!(
            csv.contains("strong,sage,overall,,p holm vs tied-a,"),
            "{csv}"
        );
        assert!(csv.contains("strong,sage,overall,,rank,1"), "{csv}");
    }

    #[test]
    fn unreadable_inputs_are_named_and_nothing_is_written() {
        let tmp = tempfile::tempdir().unwrap();
        let err = write_report(tmp.path(), None).unwrap_err();
        assert!(matches!(err, ReportError::Empty(_)), "{err}");
        let folder = tmp.path().join("rouge/sage");
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("robustness.json"), "{\n  \"schema\": oops\n}").unwrap();
        let err = write_report(tmp.path(), None).unwrap_err().to_string();
        assert!(
            err.contains("rouge/sage/robustness.json") && err.contains("line 2"),
            "{err}"
        );
        assert!(!tmp.path().join("report.html").exists());
    }

    /// Two similarities with the same best score in a column are both marked best: marking one
    /// would rank equals.
    #[test]
    fn a_tie_for_the_best_marks_every_tied_row() {
        let tmp = folder_of_three();
        for similarity in ["strong", "tied-a"] {
            write_result(tmp.path(), similarity, "clustering", &units(0.9, 0.0), "c1");
        }
        let written = write_report(tmp.path(), None).unwrap();
        let heatmap = &written.answer.heatmap;
        let row = |name: &str| {
            heatmap
                .rows
                .iter()
                .position(|r| r.similarity == name)
                .unwrap()
        };
        let clustering = heatmap
            .columns
            .iter()
            .position(|c| c == "Clustering")
            .unwrap();
        let mut tied = vec![row("strong"), row("tied-a")];
        tied.sort_unstable();
        assert_eq!(heatmap.best[clustering], tied);
        let md = std::fs::read_to_string(&written.markdown).unwrap();
        let starred = md
            .lines()
            .filter(|l| l.starts_with("| strong") || l.starts_with("| tied-a"))
            .filter(|l| l.contains("★"))
            .count();
        assert!(starred >= 2, "{md}");
    }

    /// A shipped suite's report is read into its type: a field renamed (or dropped) fails the
    /// report naming the file and the field, where a JSON lookup would have printed "—".
    #[test]
    fn a_report_that_does_not_read_into_its_type_is_named() {
        let tmp = folder_of_three();
        let path = tmp.path().join("tied-a/sage/clustering.json");
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replacen("\"score\"", "\"scroe\"", 1)).unwrap();
        let err = write_report(tmp.path(), None).unwrap_err().to_string();
        assert!(
            err.contains("tied-a/sage/clustering.json")
                && err.contains("not a sage/clustering report")
                && err.contains("score"),
            "{err}"
        );
    }

    /// A throughput result of `similarity`: `per_second` texts per second at every length,
    /// its three runs 10% apart, on this host.
    fn write_throughput(dir: &Path, similarity: &str, per_second: f64, usd: Option<f64>) {
        use sage_throughput::{Latency, Length, LengthReport, Rate, RemoteCost, Timing};
        let texts = 64;
        let median = texts as f64 / per_second;
        let lengths = [Length::Short, Length::Medium, Length::Window]
            .into_iter()
            .map(|length| LengthReport {
                length,
                texts,
                mean_yardstick_tokens: 100.0,
                model_tokens: Some(6_400),
                seconds: Timing {
                    runs: vec![median * 0.95, median, median * 1.05],
                    best: median * 0.95,
                    median,
                    spread: 0.1,
                },
                per_second: Rate {
                    best: texts as f64 / (median * 0.95),
                    median: per_second,
                },
                tokens_per_second: None,
            })
            .collect();
        let report = sage_throughput::ThroughputReport {
            similarity: similarity.to_owned(),
            kind: sage_core::SimilarityKind::Model,
            lengths,
            mixed: None,
            latency: Some(Latency {
                calls: 8,
                p50_ms: 10.0,
                p95_ms: 12.0,
                max_ms: 13.0,
            }),
            load_seconds: Some(0.5),
            compute: Some("cpu f32".into()),
            peak_resident_mib: Some(300.0),
            threads: 2,
            cache_bypassed: true,
            remote: usd.map(|usd| RemoteCost {
                requests: 4,
                tokens: 1_000,
                retries: 0,
                cost_usd: Some(usd * 1e-3),
                usd_per_million_tokens: Some(usd),
            }),
            repeats: 3,
            host: sage_core::Host::detect(),
            datasets: Vec::new(),
        };
        let envelope = json!({
            "datasets": [],
            "harness_version": "0.1.0",
            "notes": [],
            "parameters": {"data_dir": "data", "sage_args": ["run", "throughput"]},
            "quick": false,
            "report": report,
            "run": {
                "git_revision": "abc",
                "host": {"arch": "x86_64", "cores": 2, "cpu": "EPYC", "gpus": [], "os": "linux"},
                "timestamp": "2026-11-25T00:00:00Z",
                "wall_seconds": 1.0
            },
            "schema": sage_core::RESULT_SCHEMA,
            "score": null,
            "seed": 7,
            "similarity": {"kind": "model", "name": similarity, "spec": similarity},
            "suite": "throughput",
            "task": "throughput"
        });
        let folder = dir.join(similarity).join("throughput");
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join("throughput.json"),
            serde_json::to_vec_pretty(&envelope).unwrap(),
        )
        .unwrap();
    }

    /// A compression result of `similarity` (a model `width` wide) whose points keep
    /// `retentions` (format, width, retention); `None`: a metric's run, not applicable.
    fn write_compression(
        dir: &Path,
        similarity: &str,
        retentions: Option<&[(sage_compression::Format, usize, f64)]>,
    ) {
        let options = sage_compression::Options::default();
        let mut report = sage_compression::not_applicable(similarity, options);
        if let Some(retentions) = retentions {
            report.applicable = true;
            report.notes.clear();
            report.points = retentions
                .iter()
                .map(
                    |&(format, width, retention)| sage_compression::SummaryPoint {
                        format,
                        width,
                        bytes: format.bytes(width),
                        retention: Some(retention),
                        ci95: Some(sage_measures::BootstrapInterval {
                            low: retention - 0.01,
                            high: retention + 0.01,
                            confidence: 0.95,
                            resamples: 1000,
                        }),
                        datasets: 1,
                    },
                )
                .collect();
        }
        let envelope = json!({
            "datasets": [],
            "harness_version": "0.1.0",
            "notes": report.notes,
            "parameters": {"data_dir": "data", "sage_args": ["run", "compression"]},
            "quick": false,
            "report": report,
            "run": {
                "git_revision": "abc",
                "host": {"arch": "x86_64", "cores": 2, "cpu": "EPYC", "gpus": [], "os": "linux"},
                "timestamp": "2026-12-02T00:00:00Z",
                "wall_seconds": 1.0
            },
            "schema": sage_core::RESULT_SCHEMA,
            "score": null,
            "seed": 7,
            "similarity": {"kind": "model", "name": similarity, "spec": similarity},
            "suite": "compression",
            "task": "compression"
        });
        let folder = dir.join(similarity).join("compression");
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join("compression.json"),
            serde_json::to_vec_pretty(&envelope).unwrap(),
        )
        .unwrap();
    }

    /// A transfer result of `similarity`: one task, `mr/all`, at `accuracy`.
    fn write_transfer(dir: &Path, similarity: &str, accuracy: f64) {
        let mut report = sage_transfer::not_applicable(similarity, Default::default());
        report.applicable = true;
        report.notes.clear();
        report.score = accuracy;
        report.tasks = vec![sage_transfer::TaskReport {
            task: "mr".into(),
            dataset: "mr/all".into(),
            scheme: sage_transfer::Scheme::InnerKFold,
            splits: vec!["all".into()],
            input: sage_transfer::Input::Texts,
            classes: vec!["0".into(), "1".into()],
            features: 384,
            grid: sage_transfer::GRID.to_vec(),
            chosen_c: vec![1.0],
            validation: vec![vec![accuracy; 6]],
            accuracy,
            ci95: None,
            interval_over: "outer folds".into(),
            fold_accuracies: vec![accuracy],
            f1: None,
            f1_ci95: None,
            scored: 100,
            rows: Vec::new(),
        }];
        let envelope = json!({
            "datasets": [],
            "harness_version": "0.1.0",
            "notes": [],
            "parameters": {"data_dir": "data", "sage_args": ["run", "transfer"]},
            "quick": false,
            "report": report,
            "run": {
                "git_revision": "abc",
                "host": {"arch": "x86_64", "cores": 2, "cpu": "EPYC", "gpus": [], "os": "linux"},
                "timestamp": "2026-12-06T00:00:00Z",
                "wall_seconds": 1.0
            },
            "schema": sage_core::RESULT_SCHEMA,
            "score": accuracy,
            "seed": 7,
            "similarity": {"kind": "model", "name": similarity, "spec": similarity},
            "suite": "transfer",
            "task": "transfer"
        });
        let folder = dir.join(similarity).join("transfer");
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join("transfer.json"),
            serde_json::to_vec_pretty(&envelope).unwrap(),
        )
        .unwrap();
    }

    /// The transfer runs make EvalRank's correlation study: every SAGE category against the
    /// accuracy over the models that have both, the sentence on the first screen, the tables in
    /// both files; below three models it says so instead of a number.
    #[test]
    fn the_answer_says_which_score_predicts_transfer() {
        let tmp = tempfile::tempdir().unwrap();
        for (model, level, accuracy) in [
            ("m1", 0.3, 0.61),
            ("m2", 0.5, 0.70),
            ("m3", 0.6, 0.74),
            ("m4", 0.8, 0.90),
        ] {
            for task in TASKS {
                write_result(tmp.path(), model, task, &units(level, 0.0), "c1");
            }
            write_transfer(tmp.path(), model, accuracy);
        }
        // transfer only: a downstream score without an intrinsic one beside it
        write_transfer(tmp.path(), "m5", 0.5);
        let written = write_report(tmp.path(), None).unwrap();
        let view = &written.answer.prediction;
        assert_eq!(view.models.len(), 5);
        let overall = view
            .correlations
            .iter()
            .find(|c| c.predictor == "SAGE Overall" && c.target == prediction::MEAN_ACCURACY)
            .unwrap();
        assert_eq!(overall.models, 4);
        assert!((overall.spearman.unwrap() - 1.0).abs() < 1e-12);
        assert!((overall.p_value.unwrap() - 2.0 / 24.0).abs() < 1e-12);
        // per task: mr's accuracy is the mean here
        assert!(view.correlations.iter().any(|c| c.target == "mr"));
        let sentence = view.sentence.as_deref().unwrap();
        assert!(sentence.starts_with("Across 4 models, SAGE "), "{sentence}");
        assert!(sentence.contains("ρ = 1.00"), "{sentence}");
        let md = std::fs::read_to_string(&written.markdown).unwrap();
        assert!(
            md.contains("**Does it predict my task:** Across 4 models"),
            "{md}"
        );
        assert!(md.contains("Downstream transfer (SentEval)"), "{md}");
        let html = std::fs::read_to_string(&written.html).unwrap();
        assert!(html.contains("id=\"prediction-verdict\""));
        assert!(html.contains("Which intrinsic score predicts transfer"));

        let few = tempfile::tempdir().unwrap();
        for (model, accuracy) in [("a", 0.6), ("b", 0.7)] {
            for task in TASKS {
                write_result(few.path(), model, task, &units(accuracy, 0.0), "c1");
            }
            write_transfer(few.path(), model, accuracy);
        }
        let written = write_report(few.path(), None).unwrap();
        let sentence = written.answer.prediction.sentence.unwrap();
        assert!(sentence.contains("at least 3 are needed"), "{sentence}");
    }

    /// The compression suite's runs make the stored-small view: each model's points against
    /// its own float32, its front, and on the first screen the fewest bytes that keep 95%; a
    /// metric's run (not applicable) adds nothing.
    #[test]
    fn the_answer_says_what_a_model_keeps_stored_small() {
        use sage_compression::Format;
        let tmp = folder_of_three();
        write_compression(
            tmp.path(),
            "strong",
            Some(&[
                (Format::Float32, 384, 1.0),
                (Format::Int8, 384, 0.999),
                (Format::Binary, 384, 0.91),
                (Format::BinaryRescored, 384, 0.96),
                (Format::Binary, 192, 0.93),
            ]),
        );
        write_compression(tmp.path(), "tied-a", None);
        let written = write_report(tmp.path(), None).unwrap();
        let storage = &written.answer.storage;
        assert!(storage.points.iter().all(|p| p.similarity == "strong"));
        let point = |format: Format, width: usize| {
            storage
                .points
                .iter()
                .find(|p| p.format == format && p.width == width)
                .unwrap()
        };
        // binary at 192 values keeps more than binary at 384 in half the bytes: only one of the
        // two is on the front; rescoring keeps more again at binary 384's bytes
        assert!(point(Format::Binary, 192).front);
        assert!(!point(Format::Binary, 384).front);
        assert!(point(Format::BinaryRescored, 384).front);
        assert_eq!(point(Format::Int8, 384).share, 0.25);
        let sentence = storage.sentence.as_deref().unwrap();
        // the fewest bytes that keep 95%; the written datasets carry no score, so none is named
        assert_eq!(
            sentence,
            "At 1/32 of the bytes (binary-rescored × 384 values), strong keeps 96% [95, 97] of \
             its score."
        );
        let html = std::fs::read_to_string(&written.html).unwrap();
        let at = |needle: &str| html.find(needle).unwrap_or_else(|| panic!("{needle}"));
        assert!(at("id=\"ranking\"") < at("id=\"stored-small\""));
        assert!(at("id=\"stored-small\"") < at("id=\"details\""));
        assert!(html[at("id=\"stored-small\"")..at("id=\"details\"")].contains("<svg"));
        let md = std::fs::read_to_string(&written.markdown).unwrap();
        assert!(md.contains("**Stored small:** At 1/32"), "{md}");
        let csv = std::fs::read_to_string(&written.csv).unwrap();
        assert!(
            csv.contains("strong,compression,compression,,retention binary 192,0.93\n"),
            "{csv}"
        );
    }

    /// The best is significantly above the rest, and slowest: the answer names the fastest on
    /// the quality–speed front, with what it gives up; the dominated one is off the front.
    #[test]
    fn the_answer_weighs_the_best_against_a_faster_similarity() {
        let tmp = folder_of_three();
        write_throughput(tmp.path(), "strong", 10.0, None);
        write_throughput(tmp.path(), "tied-a", 60.0, None);
        write_throughput(tmp.path(), "tied-b", 60.0, None);
        let written = write_report(tmp.path(), None).unwrap();
        let cost = &written.answer.cost;
        assert_eq!(cost.points.len(), 3);
        assert_eq!(cost.hosts.len(), 1, "{cost:?}");
        let point = |name: &str| cost.points.iter().find(|p| p.similarity == name).unwrap();
        assert!(point("strong").speed_front);
        // of two equally fast, the better scored is on the front and the other is not
        let (a, b) = (point("tied-a"), point("tied-b"));
        assert!(a.speed_front != b.speed_front, "{a:?} {b:?}");
        let faster = if a.speed_front { a } else { b };
        let sentence = cost.sentence.as_deref().unwrap();
        assert!(
            sentence.starts_with(&format!("{} is ", faster.similarity))
                && sentence.contains("below the best overall (significant")
                && sentence.contains("at 6.0× strong's speed"),
            "{sentence}"
        );
        // on the first screen, below the ranking, with its plot; in the markdown and the CSV
        let html = std::fs::read_to_string(&written.html).unwrap();
        let at = |needle: &str| html.find(needle).unwrap_or_else(|| panic!("{needle}"));
        assert!(at("id=\"ranking\"") < at("id=\"quality-cost\""));
        assert!(at("id=\"quality-cost\"") < at("id=\"details\""));
        assert!(html[at("id=\"quality-cost\"")..at("id=\"details\"")].contains("<svg"));
        assert!(html.contains(sentence));
        let md = std::fs::read_to_string(&written.markdown).unwrap();
        assert!(md.find("### Ranking").unwrap() < md.find("### Quality and cost").unwrap());
        assert!(md.contains("Speeds measured on"), "{md}");
        let csv = std::fs::read_to_string(&written.csv).unwrap();
        assert!(
            csv.contains("strong,throughput,throughput,,per second medium median,10\n"),
            "{csv}"
        );
    }

    /// Two similarities the ranking cannot tell apart: the faster is the answer, said not to
    /// differ; a price from the throughput sample goes on its own axis and front.
    #[test]
    fn a_faster_similarity_not_told_apart_from_the_best_is_the_answer() {
        let tmp = tempfile::tempdir().unwrap();
        for task in TASKS {
            write_result(tmp.path(), "tied-a", task, &units(0.5, 0.02), "c1");
            write_result(tmp.path(), "tied-b", task, &units(0.5, -0.02), "c1");
        }
        let written = write_report(tmp.path(), None).unwrap();
        assert!(
            written.answer.cost.sentence.is_none(),
            "nothing timed, nothing said"
        );
        let best = written.answer.ranking.ranked[0].similarity.clone();
        let other = if best == "tied-a" { "tied-b" } else { "tied-a" };
        write_throughput(tmp.path(), &best, 20.0, Some(0.13));
        write_throughput(tmp.path(), other, 50.0, Some(0.02));
        let written = write_report(tmp.path(), None).unwrap();
        let cost = &written.answer.cost;
        let sentence = cost.sentence.as_deref().unwrap();
        assert!(
            sentence.starts_with(&format!("{other} is 0.0"))
                && sentence.contains("not a significant difference")
                && sentence.contains(&format!("at 2.5× {best}'s speed"))
                && sentence.contains("($0.020 vs $0.130 per million tokens)"),
            "{sentence}"
        );
        // neither is both better and cheaper
        assert!(cost.points.iter().all(|p| p.price_front), "{cost:?}");
        let html = std::fs::read_to_string(&written.html).unwrap();
        assert_eq!(
            html.matches("Quality against").count(),
            2,
            "speed and price plots"
        );
    }
}
