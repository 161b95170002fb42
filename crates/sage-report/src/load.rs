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
}

impl ResultFile {
    pub(crate) fn report(&self) -> &Value {
        &self.envelope.report
    }
}

/// The number at `path` in a report, if there is one.
pub(crate) fn num(v: &Value, path: &[&str]) -> Option<f64> {
    path.iter().try_fold(v, |at, key| at.get(key))?.as_f64()
}

pub(crate) fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("?")
}

pub(crate) fn items<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
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
    let lines = vec![
        format!("{} result files", files.len()),
        format!("git revision: {}", revisions.join(", ")),
        format!("host: {}", hosts.join("; ")),
        format!("device: {}", devices.join(", ")),
        format!("data: {}", data.join(", ")),
        format!("samples: {}", quick.join(", ")),
    ];
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
