//! Splitting bench-all's job list over many processes: the job list as data (`--list-jobs`), a
//! subset of it (`--jobs FILE`), a balanced deterministic share (`--shard I/N`), and the step
//! that folds the shards' caches and results back into one set (`--gather`).
//!
//! A share must come out the same in every process that computes it, whenever it starts: it is
//! taken from the whole job list (finished or not) and from estimated costs that depend only on
//! the configuration, the model files and, when given, a cost file every shard reads
//! (`--costs`, a finished run's bench-all.json). Never from what other shards have written so
//! far.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::invalid;
use crate::{BenchError, Result};
use sage_core::{CostHint, COST_REFERENCE_MODEL_BYTES};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Job;

/// `--shard I/N`: this process runs share `index` of `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// Which share, from 0.
    pub index: usize,
    /// How many shares.
    pub count: usize,
}

/// The most shares a job list is split into: far more than any cluster array runs at once
/// (Slurm's default `MaxArraySize` is 1,001), and small enough that planning stays instant.
pub const MAX_SHARDS: usize = 10_000;

impl Shard {
    /// Parses `I/N` (0 ≤ I < N ≤ [`MAX_SHARDS`]).
    pub fn parse(text: &str) -> Result<Shard> {
        let parsed = text
            .split_once('/')
            .and_then(|(i, n)| Some((i.trim().parse().ok()?, n.trim().parse().ok()?)));
        match parsed {
            Some((_, count)) if count > MAX_SHARDS => invalid!(
                "--shard {text:?}: at most {MAX_SHARDS} shards (a share per job is the most that \
                 helps; `--list-jobs` counts them)"
            ),
            Some((index, count)) if index < count => Ok(Shard { index, count }),
            _ => invalid!("--shard {text:?}: expected I/N with 0 <= I < N (e.g. 0/4)"),
        }
    }

    /// This shard's own embedding and paraphrase cache files in `dir`: redb allows one writer
    /// per file, so shards running together never share one.
    pub fn cache_files(&self, dir: &Path) -> (PathBuf, PathBuf) {
        (
            dir.join(format!("embeddings.shard-{}.redb", self.index)),
            dir.join(format!("paraphrases.shard-{}.redb", self.index)),
        )
    }
}

/// The suites' cost hints (`Suite::cost_hints`, as `sage suites` lists them), by the
/// `(suite folder, task)` of the jobs they are for.
pub type CostHints = BTreeMap<(String, String), CostHint>;

/// What a similarity weighs against the reference: transformer weight bytes against
/// all-MiniLM-L6-v2's (a floor for static models, which have none), 1 for a metric or a remote
/// model (its cost is the server's).
pub fn similarity_weight(weight_bytes: Option<u64>) -> f64 {
    match weight_bytes {
        None => 1.0,
        Some(bytes) => (bytes as f64 / COST_REFERENCE_MODEL_BYTES).max(0.05),
    }
}

/// A job's estimated seconds: the recorded time of the same job in `measured` (a finished
/// run's bench-all.json, `--costs`) when it has one, else its suite's hint scaled by the
/// similarity's weight (a suite that gives no hint for the task: a mid-sized SAGE task's).
pub fn estimate(
    job: &Job,
    weight: f64,
    quick: bool,
    hints: &CostHints,
    measured: &BTreeMap<String, f64>,
) -> f64 {
    if let Some(&seconds) = measured.get(&job.id()) {
        return seconds;
    }
    let unmeasured;
    let hint = match hints.get(&(job.suite.clone(), job.task.clone())) {
        Some(hint) => hint,
        None => {
            unmeasured = CostHint::unmeasured(&job.task);
            &unmeasured
        }
    };
    hint.seconds(job.similarity.is_model, weight, quick)
}

/// The recorded seconds of every finished job in a bench-all.json (`--costs FILE`).
pub fn read_costs(path: &Path) -> Result<BTreeMap<String, f64>> {
    Ok(crate::manifest::read_jobs(path)?
        .into_iter()
        .filter(|j| j.status == "done")
        .map(|j| (j.id(), j.seconds))
        .collect())
}

/// The share of `costs` (one per job, in job order) that shard `shard.index` runs: longest
/// job first to the least-loaded shard (ties to the lower index), so every share is within one
/// job of the mean. Indices come back in job order.
pub fn assign(costs: &[f64], shard: Shard) -> Vec<usize> {
    let mut order: Vec<usize> = (0..costs.len()).collect();
    order.sort_by(|&a, &b| costs[b].total_cmp(&costs[a]).then(a.cmp(&b)));
    let mut loads = vec![0.0f64; shard.count];
    let mut mine = Vec::new();
    for job in order {
        let least = (0..shard.count)
            .min_by(|&a, &b| loads[a].total_cmp(&loads[b]).then(a.cmp(&b)))
            .expect("at least one shard");
        loads[least] += costs[job];
        if least == shard.index {
            mine.push(job);
        }
    }
    mine.sort_unstable();
    mine
}

/// One line of `--list-jobs`, and of a `--jobs FILE` (where only `id` is required). Fields are
/// declared in alphabetical order, the order of the lines written before this type existed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobLine {
    /// Whether the job's result file exists.
    #[serde(default)]
    pub done: bool,
    /// The seconds the job is estimated to take (what shares are balanced by).
    #[serde(default)]
    pub estimated_seconds: Option<f64>,
    /// `<similarity>/<suite>/<task>`.
    pub id: String,
    /// The result file, relative to the results folder.
    #[serde(default)]
    pub result: String,
    /// The similarity's results-folder name.
    #[serde(default)]
    pub similarity: String,
    /// The suite's results folder.
    #[serde(default)]
    pub suite: String,
    /// The task: the result file's stem.
    #[serde(default)]
    pub task: String,
}

/// The `--list-jobs` line of `job`.
pub fn job_line(job: &Job, estimated_seconds: f64, done: bool) -> JobLine {
    JobLine {
        done,
        estimated_seconds: Some((estimated_seconds * 1000.0).round() / 1000.0),
        id: job.id(),
        result: format!("{}.json", job.id()),
        similarity: job.similarity.label.clone(),
        suite: job.suite.clone(),
        task: job.task.clone(),
    }
}

impl std::fmt::Display for JobLine {
    /// The line as `--list-jobs` prints it: one JSON object.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let line = serde_json::to_string(self).expect("a job line is plain JSON");
        f.write_str(&line)
    }
}

/// The job ids a `--jobs FILE` lists (JSON lines with an "id", as `--list-jobs` prints them),
/// with the estimated seconds the line carries, if any. Errors name the file and line.
pub fn read_job_file(path: &Path) -> Result<Vec<(String, Option<f64>)>> {
    let text =
        std::fs::read_to_string(path).map_err(|e| BenchError::file(path, "cannot read", e))?;
    let mut out: Vec<(String, Option<f64>)> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let where_ = || format!("{}:{}", path.display(), n + 1);
        let value: Value = serde_json::from_str(line)
            .map_err(|e| BenchError::Invalid(format!("{}: not JSON: {e}", where_())))?;
        if value.get("id").is_none() {
            invalid!("{}: no \"id\" (lines as --list-jobs prints them)", where_());
        }
        let job: JobLine = serde_json::from_value(value).map_err(|e| {
            BenchError::Invalid(format!(
                "{}: not a job line as --list-jobs prints it: {e}",
                where_()
            ))
        })?;
        if out.iter().any(|(seen, _)| *seen == job.id) {
            invalid!("{}: job {:?} listed twice", where_(), job.id);
        }
        out.push((job.id, job.estimated_seconds));
    }
    Ok(out)
}

/// The shard cache files in `dir` (`<stem>.shard-*.redb`), sorted.
pub fn shard_caches(dir: &Path, stem: &str) -> Vec<PathBuf> {
    sage_cache::sibling_caches(dir, &format!("{stem}.shard-"), Path::new(""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_refuse_what_is_not_one() {
        assert_eq!(Shard::parse("2/5").unwrap(), Shard { index: 2, count: 5 });
        for bad in ["5/5", "1", "-1/3", "a/b", "0/0", ""] {
            let e = Shard::parse(bad).unwrap_err().to_string();
            assert!(e.contains("I/N"), "{bad}: {e}");
        }
        // these once panicked ("capacity overflow") or aborted while sharing the job list
        for huge in ["0/18446744073709551615", "0/1000000000000", "3/10001"] {
            let e = Shard::parse(huge).unwrap_err().to_string();
            assert!(e.contains("at most 10000 shards"), "{huge}: {e}");
        }
        assert_eq!(Shard::parse("9999/10000").unwrap().count, MAX_SHARDS);
    }

    #[test]
    fn every_job_lands_in_exactly_one_balanced_share() {
        // seeded costs: a few long jobs among many short ones, as PTEB among the rest
        let mut state = 7u64;
        let costs: Vec<f64> = (0..61)
            .map(|i| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let short = (state >> 40) as f64 / (1u64 << 24) as f64 * 10.0;
                if i % 20 == 0 {
                    500.0 + short
                } else {
                    short
                }
            })
            .collect();
        for count in [1, 2, 3, 7, 64] {
            let shares: Vec<Vec<usize>> = (0..count)
                .map(|index| assign(&costs, Shard { index, count }))
                .collect();
            let mut all: Vec<usize> = shares.iter().flatten().copied().collect();
            all.sort_unstable();
            assert_eq!(all, (0..costs.len()).collect::<Vec<_>>(), "{count} shards");
            let loads: Vec<f64> = shares
                .iter()
                .map(|s| s.iter().map(|&j| costs[j]).sum())
                .collect();
            let mean = costs.iter().sum::<f64>() / count as f64;
            let longest = costs.iter().copied().fold(0.0, f64::max);
            // the greedy bound: no share exceeds the mean by more than one job
            for load in &loads {
                assert!(*load <= mean + longest + 1e-9, "{count}: {loads:?}");
            }
            // in job order, so a shard keeps bench-all's order (PTEB last)
            for share in &shares {
                assert!(share.windows(2).all(|w| w[0] < w[1]));
            }
            // the same in every process that computes it
            assert_eq!(shares[0], assign(&costs, Shard { index: 0, count }));
        }
    }

    #[test]
    fn balancing_is_by_cost_not_by_count() {
        // one long job and four short ones over two shards: the long one alone, the rest
        // together
        let costs = [1.0, 1.0, 10.0, 1.0, 1.0];
        assert_eq!(assign(&costs, Shard { index: 0, count: 2 }), vec![2]);
        assert_eq!(
            assign(&costs, Shard { index: 1, count: 2 }),
            vec![0, 1, 3, 4]
        );
    }

    #[test]
    fn job_files_name_the_line_of_a_bad_entry() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("jobs.jsonl");
        std::fs::write(
            &path,
            "{\"id\":\"a/sage/human-pref\",\"estimated_seconds\":2.5}\n\n{\"id\":\"b/sage/x\"}\n",
        )
        .unwrap();
        assert_eq!(
            read_job_file(&path).unwrap(),
            vec![
                ("a/sage/human-pref".to_owned(), Some(2.5)),
                ("b/sage/x".to_owned(), None)
            ]
        );
        for (text, line, what) in [
            ("{\"id\":\"a\"}\nnot json\n", 2, "not JSON"),
            ("{\"id\":\"a\"}\n{\"job\":1}\n", 2, "no \"id\""),
            (
                "{\"id\":\"a\"}\n{\"id\":\"b\"}\n{\"id\":\"a\"}\n",
                3,
                "twice",
            ),
        ] {
            std::fs::write(&path, text).unwrap();
            let e = format!("{:#}", read_job_file(&path).unwrap_err());
            assert!(
                e.contains(&format!("jobs.jsonl:{line}")) && e.contains(what),
                "{e}"
            );
        }
    }

    #[test]
    fn costs_come_from_a_finished_runs_manifest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bench-all.json");
        std::fs::write(
            &path,
            r#"{"jobs": [
                {"similarity": "rouge", "suite": "sage", "task": "clustering", "status": "done", "seconds": 4.5},
                {"similarity": "rouge", "suite": "sage", "task": "retrieval", "status": "failed", "seconds": 0.1}
            ]}"#,
        )
        .unwrap();
        let costs = read_costs(&path).unwrap();
        assert_eq!(costs.len(), 1);
        assert_eq!(costs["rouge/sage/clustering"], 4.5);
        std::fs::write(&path, "{}").unwrap();
        assert!(format!("{:#}", read_costs(&path).unwrap_err()).contains("not a bench-all.json"));
    }
}
