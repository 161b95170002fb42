//! The result file: one envelope around every suite's report, written by `cargo xtask
//! bench-all` and read by `sage report`. Defined once, so a field renamed on one side is a
//! compile error on the other instead of a "—" in the report.
//!
//! Fields are declared in alphabetical order: the files written before this type existed had
//! their keys sorted (serde_json's map), and the same run must give the same bytes.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The schema every result file names; a reader refuses another. Bumped when a field changes
/// meaning.
pub const RESULT_SCHEMA: &str = "sage-rs/result/1";

/// One (similarity, suite, task) result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResultEnvelope {
    /// The row selections the report used (every object in it with a dataset and a checksum).
    pub datasets: Vec<Map<String, Value>>,
    /// The harness version that wrote the file.
    pub harness_version: String,
    /// What the job said on stderr as `sage: note: ...` (a default dataset not local, ...).
    pub notes: Vec<String>,
    /// How the job was run.
    pub parameters: Parameters,
    /// Run on bench.toml's `[quick]` samples.
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

#[cfg(test)]
mod tests {
    use super::*;

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
