//! bench-all.json: what a bench-all run did, job by job, written beside its results (a shard
//! writes its own, `bench-all.shard-I-of-N.json`, and `--gather` folds them into one). Read back
//! for `--costs` (measured seconds for the shard planner) and by `--gather`.
//!
//! Fields are declared in alphabetical order: the files written before this type existed had
//! their keys sorted (serde_json's map).

use std::path::Path;

use crate::{BenchError, Result};
use serde::{Deserialize, Serialize};

/// The schema every manifest names.
pub(crate) const MANIFEST_SCHEMA: &str = "sage-rs/bench-all/1";

/// One bench-all run, shard or gather.
#[derive(Debug, Serialize)]
pub(crate) struct Manifest {
    /// The configuration file (home-relative), or "embedded bench.toml".
    pub config: String,
    /// The data root (home-relative); not known to a gather.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_dir: Option<String>,
    /// A gather's shard manifests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gathered_from: Option<Vec<String>>,
    /// The commit, `-dirty` when tracked files differ.
    pub git_revision: Option<String>,
    /// The harness version.
    pub harness_version: String,
    /// The machine.
    pub host: sage_core::Host,
    /// Every job selected, with what became of it.
    pub jobs: Vec<JobRecord>,
    /// Run on the `--quick` samples.
    pub quick: bool,
    /// [`MANIFEST_SCHEMA`].
    pub schema: String,
    /// The share of a sharded run this process ran; null for a whole run (absent in a gather).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<Option<ShardRecord>>,
    /// The similarities of the run; absent in a gather.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarities: Option<Vec<SimilarityEntry>>,
    /// Jobs not run, and why; absent in a gather.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<Vec<Skipped>>,
    /// RFC 3339 UTC.
    pub timestamp: String,
}

/// What became of one job.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct JobRecord {
    /// Its wall time (0 when it did not run).
    pub seconds: f64,
    /// The similarity's results-folder name.
    pub similarity: String,
    /// `done`, `kept` (its result was there), `failed`, `missing`, ...
    pub status: String,
    /// The suite folder.
    pub suite: String,
    /// The task.
    pub task: String,
}

impl JobRecord {
    /// `<similarity>/<suite>/<task>`, the job's id everywhere.
    pub fn id(&self) -> String {
        format!("{}/{}/{}", self.similarity, self.suite, self.task)
    }
}

/// A job not run, and why.
#[derive(Debug, Serialize)]
pub(crate) struct Skipped {
    /// The similarity's results-folder name.
    pub similarity: String,
    /// The suite folder.
    pub suite: String,
    /// The task.
    pub task: String,
    /// Why it was not run.
    pub reason: String,
}

/// A shard of a sharded run.
#[derive(Clone, Copy, Debug, Serialize)]
pub(crate) struct ShardRecord {
    /// This process's share, from 0.
    pub index: usize,
    /// The number of shares.
    pub count: usize,
}

/// A similarity of the run.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct SimilarityEntry {
    /// `model` or `metric`.
    pub kind: &'static str,
    /// Its results-folder name.
    pub label: String,
    /// The spec, server secrets redacted.
    pub spec: String,
}

/// The jobs of a manifest: all a reader needs (`--costs`, `--gather`).
#[derive(Deserialize)]
struct Jobs {
    jobs: Vec<JobRecord>,
}

/// The job records of the manifest at `path`; an error names the file.
pub(crate) fn read_jobs(path: &Path) -> Result<Vec<JobRecord>> {
    let bytes = std::fs::read(path).map_err(|e| BenchError::file(path, "cannot read", e))?;
    let manifest: Jobs = serde_json::from_slice(&bytes).map_err(|e| {
        BenchError::file(
            path,
            "no \"jobs\" list of records (not a bench-all.json)",
            e,
        )
    })?;
    Ok(manifest.jobs)
}
