//! The result file: one envelope around every suite's report, written by `sage run --output`
//! (which bench-all runs, then names the job and the host) and by `sage_rs.run(...,
//! results_dir=)`, read by `sage report`. Defined once, with
//! what fills it (the host, the time, the rows a report used, the folder name of a similarity),
//! so a field renamed on one side is a compile error on the other instead of a "—" in the report.
//!
//! Fields are declared in alphabetical order: the files written before this type existed had
//! their keys sorted (serde_json's map), and the same run must give the same bytes.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The schema every result file names; a reader refuses another. Bumped when a field changes
/// meaning.
pub const RESULT_SCHEMA: &str = "sage-rs/result/1";

/// One (similarity, suite, task) result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResultEnvelope {
    /// The rows the report used ([`crate::SuiteReport::rows_used`]), each once.
    pub datasets: Vec<crate::RowsUsed>,
    /// The harness version that wrote the file.
    pub harness_version: String,
    /// What the run left out and why (a default dataset not local, ...), each naming its suite
    /// (`retrieval: ...`), as `sage run` also says them on stderr (`sage: note: ...`).
    pub notes: Vec<String>,
    /// How the job was run.
    pub parameters: Parameters,
    /// Run on bench.toml's `--quick` samples (each suite's `quick_options`).
    pub quick: bool,
    /// The suite's own report, as `sage` wrote it.
    pub report: Value,
    /// When, where and from which revision; with `timings` in the report, the only fields that
    /// depend on when and where a job ran.
    pub run: RunRecord,
    /// [`RESULT_SCHEMA`].
    pub schema: String,
    /// The report's headline score, when it has one.
    pub score: Option<f64>,
    /// The run's seed.
    pub seed: u64,
    /// What was evaluated.
    pub similarity: SimilarityRecord,
    /// The suite (`sage`, `evalrank`, `align-sim`, `pteb`).
    pub suite: String,
    /// The task within the suite.
    pub task: String,
}

/// What `sage` adds to the report of a run that used remote models, beside the suite's own
/// fields. The report stays the suite's JSON, so the list is written into it and read back out
/// of it, both through this type.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReportUsage {
    /// What each remote model was asked for and what it cost; absent when none was used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remote_usage: Vec<crate::RemoteUsage>,
}

/// The similarity a result is about.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimilarityRecord {
    /// A metric or an embedding model.
    pub kind: SimilarityKind,
    /// Its folder name under the results directory.
    pub name: String,
    /// The spec `sage` was given, a server URL's secrets redacted.
    pub spec: String,
}

impl SimilarityRecord {
    /// The record of a similarity given as `spec`: its results-folder name ([`result_label`]),
    /// the spec with a server URL's secrets redacted, and its kind. The one way a result file
    /// names its subject, whoever writes it.
    pub fn of_spec(spec: &str, kind: SimilarityKind) -> SimilarityRecord {
        SimilarityRecord {
            kind,
            name: result_label(spec),
            spec: sage_redact::redact_url(spec),
        }
    }
}

/// A classical metric or an embedding model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SimilarityKind {
    /// Levenshtein, ROUGE, Jaccard, BM25.
    Metric,
    /// An embedding model (cosine).
    Model,
}

/// How a job was run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Parameters {
    /// The data root.
    pub data_dir: String,
    /// The exact `sage` arguments, server URLs redacted.
    pub sage_args: Vec<String>,
}

/// When, where and from which revision a job ran.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The commit (`<commit>-dirty` when tracked files differ from it), or `None` for a source
    /// tree without its repository and no `SAGE_GIT_REVISION`.
    pub git_revision: Option<String>,
    /// The machine.
    pub host: Host,
    /// RFC 3339 UTC.
    pub timestamp: String,
    /// The job's wall time.
    pub wall_seconds: f64,
    /// What each embedding model of the job embedded and what its cache gave back (none for a
    /// metric's job).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub embedding: Vec<EmbeddingWork>,
}

/// The embedding work of one model in one job: what it cost, beside the job's wall time.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EmbeddingWork {
    /// The model.
    pub model: String,
    /// Texts the model embedded (the cache did not hold them).
    pub embedded: u64,
    /// Texts read back from the cache.
    pub cached: u64,
    /// Seconds in the model's embed calls, storing their vectors included.
    pub seconds: f64,
    /// Tokens billed by a remote model during the job.
    pub tokens: Option<u64>,
    /// What a remote model billed during the job, where it has a price.
    pub cost_usd: Option<f64>,
}

impl EmbeddingWork {
    /// The work done since `before` was read from the same model: what one job of a model
    /// that outlives it (a Python `Model` used for several runs) cost.
    pub fn since(&self, before: &EmbeddingWork) -> EmbeddingWork {
        let minus =
            |now: Option<u64>, then: Option<u64>| Some(now?.saturating_sub(then.unwrap_or(0)));
        EmbeddingWork {
            model: self.model.clone(),
            embedded: self.embedded.saturating_sub(before.embedded),
            cached: self.cached.saturating_sub(before.cached),
            seconds: (self.seconds - before.seconds).max(0.0),
            tokens: minus(self.tokens, before.tokens),
            cost_usd: self
                .cost_usd
                .map(|c| (c - before.cost_usd.unwrap_or(0.0)).max(0.0)),
        }
    }
}

/// The machine a job ran on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Host {
    /// `std::env::consts::ARCH`.
    pub arch: String,
    /// Available parallelism.
    pub cores: Option<usize>,
    /// The CPU model name.
    pub cpu: Option<String>,
    /// The NVIDIA GPUs `nvidia-smi` lists.
    pub gpus: Vec<Gpu>,
    /// `std::env::consts::OS`.
    pub os: String,
}

/// One GPU of a host.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Gpu {
    /// The driver version.
    pub driver: String,
    /// Its memory.
    pub memory_mib: Option<u64>,
    /// The card's name.
    pub name: String,
}

impl ResultEnvelope {
    /// Where the file goes under a results folder: `<similarity>/<suite>/<task>.json`, the
    /// layout `sage report` reads.
    pub fn relative_path(&self) -> PathBuf {
        Path::new(&self.similarity.name)
            .join(&self.suite)
            .join(format!("{}.json", self.task))
    }

    /// What the job's remote models billed: `(tokens, USD)` for each one with a price. Read
    /// from `run.embedding`; a file written before that was recorded has it only in its
    /// report's [`ReportUsage`].
    pub fn billed(&self) -> Vec<(u64, f64)> {
        if !self.run.embedding.is_empty() {
            return self
                .run
                .embedding
                .iter()
                .filter_map(|w| Some((w.tokens?, w.cost_usd?)))
                .collect();
        }
        // a report without the list, or not an object at all, billed nothing
        ReportUsage::deserialize(&self.report)
            .unwrap_or_default()
            .remote_usage
            .iter()
            .filter_map(|u| Some((u.tokens, u.cost_usd?)))
            .collect()
    }

    /// Writes the file under the results folder `dir` (pretty JSON, through a temporary file
    /// and a rename, so a reader never sees half a file) and returns its path.
    pub fn write_into(&self, dir: &Path) -> crate::Result<PathBuf> {
        let path = dir.join(self.relative_path());
        let io = |p: &Path, source: std::io::Error| crate::SageError::Io {
            path: p.to_owned(),
            source,
        };
        let folder = path.parent().unwrap_or(dir);
        std::fs::create_dir_all(folder).map_err(|e| io(folder, e))?;
        let bytes = serde_json::to_vec_pretty(self)
            .map_err(|e| crate::SageError::backend("serialising a result file", e))?;
        write_atomically(&path, &bytes)?;
        Ok(path)
    }
}

/// Writes `bytes` to `path` through a temporary file beside it (named by the process) and a
/// rename, so a reader, or a crash, sees the old file or the new one, never half of one.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> crate::Result<()> {
    let io = |p: &Path, source: std::io::Error| crate::SageError::Io {
        path: p.to_owned(),
        source,
    };
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    // synced before the rename: after a crash of the machine (not only of the process) the name
    // points at the whole file or at the old one, never at an empty one
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::File::create(&tmp)?;
        std::io::Write::write_all(&mut file, bytes)?;
        file.sync_all()
    };
    write().map_err(|e| io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| io(path, e))
}

/// A results-folder name for a spec: the hub id with `/` as `--`, the folder name of a path, or a
/// remote model's `protocol:model` (never its URL or key).
pub fn result_label(spec: &str) -> String {
    if let Some(remote) = crate::remote_model_name(spec).filter(|_| !Path::new(spec).exists()) {
        return remote.replace('/', "--");
    }
    let path = Path::new(spec);
    if path.is_absolute() || spec.starts_with('.') {
        path.file_name()
            .map_or_else(|| spec.to_owned(), |n| n.to_string_lossy().into_owned())
    } else {
        spec.replace('/', "--")
    }
}

/// RFC 3339 UTC time without a date-time dependency (Howard Hinnant's civil-from-days).
pub fn utc_timestamp() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

impl Host {
    /// This machine: OS, architecture, CPU model, cores, and the NVIDIA GPUs `nvidia-smi`
    /// lists (a result timed on a GPU box must say which card it ran on, whatever device the
    /// run was configured for).
    pub fn detect() -> Host {
        let cpu = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        });
        let gpus = Command::new("nvidia-smi")
            .args([
                "--query-gpu=name,memory.total,driver_version",
                "--format=csv,noheader,nounits",
            ])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map_or_else(Vec::new, |o| {
                parse_gpus(&String::from_utf8_lossy(&o.stdout))
            });
        Host {
            os: std::env::consts::OS.to_owned(),
            arch: std::env::consts::ARCH.to_owned(),
            cpu,
            cores: std::thread::available_parallelism().map(|n| n.get()).ok(),
            gpus,
        }
    }
}

/// One GPU per line of `nvidia-smi --query-gpu=name,memory.total,driver_version
/// --format=csv,noheader,nounits`; lines that do not have the three fields are skipped.
fn parse_gpus(csv: &str) -> Vec<Gpu> {
    csv.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(',').map(str::trim).collect();
            match fields.as_slice() {
                [name, memory, driver] if !name.is_empty() => Some(Gpu {
                    name: (*name).to_owned(),
                    memory_mib: memory.parse::<u64>().ok(),
                    driver: (*driver).to_owned(),
                }),
                _ => None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn gpus_are_read_from_nvidia_smi_csv() {
        // the shape nvidia-smi 580 printed on an H100 machine for this query
        let csv = "NVIDIA H100 80GB HBM3, 81559, 580.159.04\n\nNVIDIA H200, 143771, 580.159.03\n";
        let gpus = parse_gpus(csv);
        assert_eq!(gpus.len(), 2);
        assert_eq!(gpus[0].name, "NVIDIA H100 80GB HBM3");
        assert_eq!(gpus[0].memory_mib, Some(81_559));
        assert_eq!(gpus[1].driver, "580.159.03");
        assert!(parse_gpus("").is_empty());
        assert!(parse_gpus("No devices were found").is_empty());
    }

    #[test]
    fn labels_are_folder_names_without_urls() {
        assert_eq!(
            result_label("sentence-transformers/all-MiniLM-L6-v2"),
            "sentence-transformers--all-MiniLM-L6-v2"
        );
        assert_eq!(result_label("/models/glove.6B.50d"), "glove.6B.50d");
        assert_eq!(result_label("all-MiniLM-L6-v2"), "all-MiniLM-L6-v2");
        let spec = "openai:BAAI/bge-small@http://u:pw@127.0.0.1:7997/v1";
        assert_eq!(result_label(spec), "openai:BAAI--bge-small");
        assert_eq!(result_label("cohere:embed-v4.0"), "cohere:embed-v4.0");
    }

    #[test]
    fn the_work_since_a_reading_is_the_difference() {
        let before = EmbeddingWork {
            model: "m".into(),
            embedded: 10,
            cached: 2,
            seconds: 1.5,
            tokens: Some(100),
            cost_usd: Some(0.25),
        };
        let after = EmbeddingWork {
            embedded: 15,
            cached: 9,
            seconds: 2.0,
            tokens: Some(160),
            cost_usd: Some(0.5),
            ..before.clone()
        };
        let job = after.since(&before);
        assert_eq!((job.embedded, job.cached, job.seconds), (5, 7, 0.5));
        assert_eq!((job.tokens, job.cost_usd), (Some(60), Some(0.25)));
        assert_eq!(after.since(&EmbeddingWork::default()), after);
    }

    use super::*;

    /// A file written before `run.embedding` was recorded says what it billed in its report's
    /// `remote_usage`; a newer one says it in `run.embedding`. A model without a price billed
    /// nothing known.
    #[test]
    fn what_a_job_billed_is_read_from_either_place() {
        let usage = |model: &str, tokens: u64, cost_usd: Option<f64>| crate::RemoteUsage {
            protocol: "openai".into(),
            model: model.into(),
            host: "127.0.0.1:7997".into(),
            dimensions: 384,
            requests: 2,
            texts: 10,
            tokens,
            retries: 0,
            truncated: 0,
            cost_usd,
        };
        let report = ReportUsage {
            remote_usage: vec![usage("a", 100, Some(0.25)), usage("b", 50, None)],
        };
        let written = serde_json::json!({
            "datasets": [],
            "harness_version": "0.1.0",
            "notes": [],
            "parameters": {"data_dir": "data", "sage_args": ["run", "robustness"]},
            "quick": false,
            "report": {"remote_usage": report.remote_usage, "score": 0.5},
            "run": {
                "git_revision": null,
                "host": {"arch": "x86_64", "cores": 2, "cpu": null, "gpus": [], "os": "linux"},
                "timestamp": "2026-11-24T19:00:00Z",
                "wall_seconds": 1.5
            },
            "schema": RESULT_SCHEMA,
            "score": 0.5,
            "seed": 1337,
            "similarity": {"kind": "model", "name": "openai:a", "spec": "openai:a"},
            "suite": "sage",
            "task": "robustness"
        });
        let mut envelope: ResultEnvelope = serde_json::from_value(written).unwrap();
        assert_eq!(envelope.billed(), [(100, 0.25)]);
        assert_eq!(ReportUsage::deserialize(&envelope.report).unwrap(), report);
        envelope.run.embedding = vec![EmbeddingWork {
            model: "openai:a".into(),
            tokens: Some(120),
            cost_usd: Some(0.3),
            ..EmbeddingWork::default()
        }];
        assert_eq!(envelope.billed(), [(120, 0.3)]);
        envelope.run.embedding.clear();
        envelope.report = serde_json::json!({"score": 0.5});
        assert!(envelope.billed().is_empty());
    }

    /// A file as bench-all wrote it before this type existed reads, and writes back to the same
    /// bytes: the keys of every object were sorted then and are declared in order now.
    #[test]
    fn an_envelope_round_trips_to_the_same_bytes() {
        let written = serde_json::json!({
            "datasets": [{"checksum": "ab", "dataset": "stsb", "used_rows": 3}],
            "harness_version": "0.1.0",
            "notes": ["stsb: 3 rows"],
            "parameters": {"data_dir": "data", "sage_args": ["run", "robustness"]},
            "quick": true,
            "report": {"score": 0.5, "suite": "robustness"},
            "run": {
                "git_revision": "abc-dirty",
                "host": {
                    "arch": "x86_64", "cores": 2, "cpu": "EPYC",
                    "gpus": [{"driver": "550", "memory_mib": 81559, "name": "H100"}],
                    "os": "linux"
                },
                "timestamp": "2026-11-24T19:00:00Z",
                "wall_seconds": 1.5
            },
            "schema": RESULT_SCHEMA,
            "score": 0.5,
            "seed": 1337,
            "similarity": {"kind": "metric", "name": "rouge", "spec": "rouge"},
            "suite": "sage",
            "task": "robustness"
        });
        let bytes = serde_json::to_vec_pretty(&written).unwrap();
        let envelope: ResultEnvelope = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(envelope.similarity.kind, SimilarityKind::Metric);
        assert_eq!(serde_json::to_vec_pretty(&envelope).unwrap(), bytes);
    }
}
