//! Reading a results folder: every `<similarity>/<suite>/<task>.json` envelope, and where the
//! results came from.

use std::path::{Path, PathBuf};

use sage_core::{ResultEnvelope, SimilarityKind, RESULT_SCHEMA};
use serde_json::Value;

use crate::{ReportError, Result};

/// One result file.
pub(crate) struct ResultFile {
    pub(crate) similarity: String,
    pub(crate) suite: String,
    pub(crate) task: String,
    pub(crate) envelope: ResultEnvelope,
    /// The report in its suite's own type.
    pub(crate) typed: Typed,
}

/// A result's report read into its suite's own type, so that the tables read fields the
/// compiler checks: a field a suite renames or drops fails the load of the file, with its name,
/// instead of printing "—".
pub(crate) enum Typed {
    HumanPref(Box<sage_human_pref::HumanPrefReport>),
    Robustness(Box<sage_robustness::RobustnessReport>),
    Sensitivity(Box<sage_sensitivity::SensitivityReport>),
    Clustering(Box<sage_cluster::ClusterReport>),
    Retrieval(Box<sage_retrieval::RetrievalReport>),
    EvalRank(Box<evalrank::EvalRankReport>),
    AlignSim(Box<align_sim::AlignSimReport>),
    Pteb(Box<pteb::PtebReport>),
    Noise(Box<sage_noise::NoiseReport>),
    Compression(Box<sage_compression::CompressionReport>),
    Transfer(Box<sage_transfer::TransferReport>),
    Throughput(Box<sage_throughput::ThroughputReport>),
    /// A suite registered beyond the shipped ones: the report shows its envelope (score,
    /// datasets).
    Other,
}

/// The transfer runs that trained on vectors (a classical metric's not-applicable run left
/// out), and their tasks' names in first-seen order: what the transfer table, its plot, the
/// ALIGN-SIM layout and the correlation study all read.
pub(crate) struct TransferRuns<'a> {
    pub(crate) runs: Vec<(&'a ResultFile, &'a sage_transfer::TransferReport)>,
    pub(crate) tasks: Vec<&'a str>,
}

impl<'a> TransferRuns<'a> {
    pub(crate) fn of(files: &'a [ResultFile]) -> TransferRuns<'a> {
        let runs: Vec<(&ResultFile, &sage_transfer::TransferReport)> = files
            .iter()
            .filter_map(|f| match &f.typed {
                Typed::Transfer(r) if r.applicable => Some((f, r.as_ref())),
                _ => None,
            })
            .collect();
        let mut tasks: Vec<&str> = Vec::new();
        for t in runs.iter().flat_map(|(_, r)| &r.tasks) {
            if !tasks.contains(&t.task.as_str()) {
                tasks.push(&t.task);
            }
        }
        TransferRuns { runs, tasks }
    }

    /// The run of `similarity`, if it has one.
    pub(crate) fn of_similarity(
        &self,
        similarity: &str,
    ) -> Option<&'a sage_transfer::TransferReport> {
        self.runs
            .iter()
            .find(|(f, _)| f.similarity == similarity)
            .map(|(_, r)| *r)
    }
}

/// What a category's report says of its score: the same three fields in SAGE's five and the
/// noise suite.
pub(crate) struct CategoryScore<'a> {
    pub(crate) score: f64,
    pub(crate) ci95: Option<(f64, f64)>,
    pub(crate) bootstrap: Option<&'a sage_measures::BootstrapReplicates>,
}

impl Typed {
    /// `report` read as the report of `suite/task`.
    fn read(suite: &str, task: &str, report: &Value) -> serde_json::Result<Typed> {
        fn boxed<T: serde::de::DeserializeOwned>(v: &Value) -> serde_json::Result<Box<T>> {
            T::deserialize(v).map(Box::new)
        }
        Ok(match (suite, task) {
            ("sage", "human-pref") => Typed::HumanPref(boxed(report)?),
            ("sage", "robustness") => Typed::Robustness(boxed(report)?),
            ("sage", "sensitivity") => Typed::Sensitivity(boxed(report)?),
            ("sage", "clustering") => Typed::Clustering(boxed(report)?),
            ("sage", "retrieval") => Typed::Retrieval(boxed(report)?),
            ("evalrank", _) => Typed::EvalRank(boxed(report)?),
            ("align-sim", _) => Typed::AlignSim(boxed(report)?),
            ("pteb", _) => Typed::Pteb(boxed(report)?),
            ("noise", _) => Typed::Noise(boxed(report)?),
            ("compression", _) => Typed::Compression(boxed(report)?),
            ("transfer", _) => Typed::Transfer(boxed(report)?),
            ("throughput", _) => Typed::Throughput(boxed(report)?),
            _ => Typed::Other,
        })
    }

    /// The score, interval and resamples of a SAGE category's report.
    pub(crate) fn category(&self) -> Option<CategoryScore<'_>> {
        fn of<O, D>(r: &sage_measures::CategoryReport<O, D>) -> CategoryScore<'_> {
            CategoryScore {
                score: r.score,
                ci95: r.ci95.as_ref().map(|c| (c.low, c.high)),
                bootstrap: r.bootstrap.as_ref(),
            }
        }
        Some(match self {
            Typed::HumanPref(r) => CategoryScore {
                score: r.score,
                ci95: r.ci95.as_ref().map(|c| (c.low, c.high)),
                bootstrap: r.bootstrap.as_ref(),
            },
            Typed::Robustness(r) => of(r),
            Typed::Sensitivity(r) => of(r),
            Typed::Clustering(r) => of(r),
            Typed::Retrieval(r) => of(r),
            Typed::Noise(r) => of(r),
            _ => return None,
        })
    }
}

/// Every result file under `dir` (three levels: similarity/suite/task.json). Hidden folders
/// are not similarities: `cargo xtask slurm` keeps its job files and logs in `.slurm/`.
pub(crate) fn load(dir: &Path) -> Result<Vec<ResultFile>> {
    let mut files = Vec::new();
    let list = |d: &Path| -> Result<Vec<PathBuf>> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(d)
            .map_err(|source| ReportError::Io {
                path: d.to_owned(),
                source,
            })?
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
                let bytes = std::fs::read(&path).map_err(|source| ReportError::Io {
                    path: path.clone(),
                    source,
                })?;
                let value: Value =
                    serde_json::from_slice(&bytes).map_err(|source| ReportError::NotJson {
                        path: path.clone(),
                        source,
                    })?;
                // the schema first: a file of another layout should say so, not fail on a field
                if value["schema"] != RESULT_SCHEMA {
                    return Err(ReportError::Schema {
                        path,
                        found: value["schema"].to_string(),
                    });
                }
                let envelope: ResultEnvelope =
                    serde_json::from_value(value).map_err(|source| ReportError::NotJson {
                        path: path.clone(),
                        source,
                    })?;
                let typed = Typed::read(&envelope.suite, &envelope.task, &envelope.report)
                    .map_err(|detail| ReportError::Report {
                        path: path.clone(),
                        kind: format!("{}/{}", envelope.suite, envelope.task),
                        detail,
                    })?;
                files.push(ResultFile {
                    similarity: envelope.similarity.name.clone(),
                    suite: envelope.suite.clone(),
                    task: envelope.task.clone(),
                    envelope,
                    typed,
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

pub(crate) fn find<'a>(
    files: &'a [ResultFile],
    similarity: &str,
    suite: &str,
    task: &str,
) -> Option<&'a ResultFile> {
    files
        .iter()
        .find(|f| f.similarity == similarity && f.suite == suite && f.task == task)
}

pub(crate) fn similarities(files: &[ResultFile]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for f in files {
        if !out.contains(&f.similarity) {
            out.push(f.similarity.clone());
        }
    }
    out
}

/// Where the results came from, and what the runs said on the way.
pub(crate) struct Provenance {
    /// Revisions, hosts, devices, data, sample mode.
    pub(crate) lines: Vec<String>,
    /// Each distinct note (a default dataset that is not local, ...) with how many results
    /// carry it: usually the same for every similarity, so said once.
    pub(crate) notes: Vec<(String, usize)>,
}

/// A machine as the report names it: CPU model, cores, GPUs.
pub(crate) fn host_text(host: &sage_core::Host) -> String {
    let gpus: Vec<&str> = host.gpus.iter().map(|g| g.name.as_str()).collect();
    format!(
        "{} ({} cores){}",
        host.cpu.as_deref().unwrap_or("unknown CPU"),
        host.cores.map_or("?".to_owned(), |c| c.to_string()),
        if gpus.is_empty() {
            String::new()
        } else {
            format!(", {}", gpus.join(", "))
        }
    )
}

/// Whether the data files the results read are known bytes: each distinct file (path and
/// sha256) the rows-used records name, counted by what it was checked against; the files that
/// are not the pinned bytes named (a sample or a fixture under a registry name reads as data a
/// reader would otherwise take for the published one).
fn data_files_line(files: &[ResultFile]) -> Option<String> {
    use sage_core::{RowsUsed, Verified};
    let mut seen: Vec<&sage_core::FileCheck> = Vec::new();
    for record in files.iter().flat_map(|f| &f.envelope.datasets) {
        let checks = match record {
            RowsUsed::Rows(r) => &r.files,
            RowsUsed::Corpus(c) => &c.files,
            _ => continue,
        };
        for check in checks {
            if !seen
                .iter()
                .any(|s| s.path == check.path && s.sha256 == check.sha256)
            {
                seen.push(check);
            }
        }
    }
    if seen.is_empty() {
        return None;
    }
    let count = |v: Verified| seen.iter().filter(|c| c.verified == v).count();
    let mut parts = vec![format!(
        "{} equal their pins, {} their locks",
        count(Verified::Pin),
        count(Verified::Lock)
    )];
    let differ: Vec<&str> = seen
        .iter()
        .filter(|c| c.verified == Verified::DiffersFromPin)
        .map(|c| c.path.as_str())
        .collect();
    if !differ.is_empty() {
        let shown: Vec<&str> = differ.iter().copied().take(5).collect();
        parts.push(format!(
            "{} are not their pinned bytes ({}{})",
            differ.len(),
            shown.join(", "),
            if differ.len() > shown.len() {
                ", …"
            } else {
                ""
            }
        ));
    }
    let unverified = count(Verified::Unverified);
    if unverified > 0 {
        parts.push(format!("{unverified} have nothing to check them against"));
    }
    Some(format!(
        "data files: {} read; {}",
        seen.len(),
        parts.join("; ")
    ))
}

/// Where the results came from: revisions, hosts, data, sample mode, notes.
pub(crate) fn provenance(files: &[ResultFile]) -> Provenance {
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
    let hosts = distinct(&|e| host_text(&e.run.host));
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
    lines.extend(data_files_line(files));
    // the whole run's embedding cost, per model, from every job's record
    let mut work: Vec<(&str, f64, u64, u64, Option<f64>)> = Vec::new();
    for w in files.iter().flat_map(|f| &f.envelope.run.embedding) {
        let at = match work.iter().position(|x| x.0 == w.model) {
            Some(at) => at,
            None => {
                work.push((&w.model, 0.0, 0, 0, None));
                work.len() - 1
            }
        };
        let entry = &mut work[at];
        entry.1 += w.seconds;
        entry.2 += w.embedded;
        entry.3 += w.cached;
        if let Some(usd) = w.cost_usd {
            entry.4 = Some(entry.4.unwrap_or(0.0) + usd);
        }
    }
    for (model, seconds, embedded, cached, usd) in work {
        lines.push(format!(
            "embedding, {model}: {seconds:.1} s embedding {embedded} texts, {cached} from the \
             cache{}",
            usd.map(|u| format!(", ${u:.4} billed")).unwrap_or_default()
        ));
    }
    let mut notes: Vec<(String, usize)> = Vec::new();
    for f in files {
        for note in &f.envelope.notes {
            match notes.iter_mut().find(|(n, _)| n == note) {
                Some((_, count)) => *count += 1,
                None => notes.push((note.to_owned(), 1)),
            }
        }
    }
    Provenance { lines, notes }
}
