//! bench-all: every suite on every similarity, one result file per (similarity, suite, task),
//! resumable, sharded or whole, then `sage report`. `cargo xtask bench-all` and `sage bench-all`
//! both call [`bench_all`]; `cargo xtask slurm` plans its array from [`Prepared`].
//!
//! # Why it drives the `sage` binary
//! The work is done by a `sage` binary (`sage run <task> ... --output FILE`, which writes the
//! result file: the report, the datasets with row counts and checksums, the notes); this crate
//! only decides what to run, sets in each result file what only it knows (the job's name, its
//! arguments, the git revision, the host, the wall time) and writes it atomically. One process
//! per job keeps a model's memory and a crash inside one job from reaching the others, and lets
//! a `sage` of one's own (a crate that registers its own suites and metrics) be benched like the
//! shipped one: what to run is asked of that binary (`sage suites`, `sage metrics`, `sage
//! models`), never linked in here.
//!
//! # Why a result file is the record of a finished job
//! A result file that exists is the proof that its job finished, so a killed run re-run with the
//! same configuration skips what is done and writes the rest: the files come out the same as an
//! uninterrupted run's except for the `run` block (timestamp, wall time, host, revision), the
//! report's own `timings` and PTEB's paraphrase `cache_hits` (a run resumed after a kill finds
//! what the killed one cached), the only fields that depend on when and where a job ran.
//!
//! # Modules
//! - `config`: bench.toml's schema: the similarities, one `[suites.<name>]` table per suite
//!   (datasets, options, quick options, runs), `[quick]`, `[remote]`, `[datasets]`.
//! - `plan`: the similarities, each configured run of the suites `sage` lists (checked by `sage
//!   suites check`), and each job's `sage` arguments, one form for every suite.
//! - `run`: one `sage` process per job, the remote-cost ceiling, progress and the timing table.
//! - [`shard`]: the job list as data, a balanced share of it, and costs to balance by.
//! - `gather`: a sharded run's caches and manifests folded into one, then the report.
//! - `manifest`: `bench-all.json`, the record of a run.
#![deny(missing_docs)]

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use sage_core::{Parameters, ResultEnvelope, RunRecord, SimilarityKind, SimilarityRecord};
use sage_redact::redact_url;
use serde::Deserialize;
use serde_json::Value;

use crate::manifest::{
    JobRecord, Manifest, ShardRecord, SimilarityEntry, Skipped, MANIFEST_SCHEMA,
};
use crate::shard::Shard;

mod config;
mod error;
mod gather;
mod manifest;
mod plan;
mod run;
pub mod shard;
pub mod slurm;
#[cfg(test)]
mod tests;

use config::*;
pub use config::{Config, DEFAULT_CONFIG};
use error::invalid;
pub use error::{BenchError, Result};
use gather::*;
use plan::*;
use run::*;

/// What the caller of bench-all knows of the place it runs in: where `sage` comes from, the data
/// to fall back on, and the revision the results record.
pub struct Environment {
    /// The `sage` binary when the command line gives none (`--sage`): called with whether the
    /// configuration asks for CUDA, it builds or finds one.
    pub sage: Box<dyn Fn(bool) -> Result<PathBuf>>,
    /// Data when neither the configuration nor `SAGE_DATA_DIR` names a folder (a checkout's
    /// fixtures); `None`: one of those must.
    pub fallback_data_dir: Option<PathBuf>,
    /// The source revision the results record (`<commit>`, `<commit>-dirty`), when known.
    pub revision: Option<String>,
}

/// A similarity to evaluate: a metric or a model spec.
#[derive(Clone, Debug)]
pub struct Similarity {
    /// Folder name under the results directory.
    pub label: String,
    spec: String,
    /// An embedding model (else a classical metric).
    pub is_model: bool,
    /// A lower precision the model runs at (`--precision`); `None`: as it is.
    pub precision: Option<String>,
}

/// One unit of work and its result file.
#[derive(Debug)]
pub struct Job {
    /// What the job evaluates.
    pub similarity: Similarity,
    /// The result folder of its suite (`sage` for SAGE's five tasks).
    pub suite: String,
    /// The task: its result file's stem.
    pub task: String,
    /// `sage` arguments, without --output.
    args: Vec<String>,
}

impl Job {
    /// `<similarity>/<suite>/<task>`: the job's name everywhere (job lists, shards, logs) and
    /// its result file's path under the results folder, without `.json`.
    pub fn id(&self) -> String {
        format!("{}/{}/{}", self.similarity.label, self.suite, self.task)
    }

    /// The job's result file under `out`.
    pub fn result_path(&self, out: &Path) -> PathBuf {
        out.join(&self.similarity.label)
            .join(&self.suite)
            .join(format!("{}.json", self.task))
    }
}

struct Outcome {
    label: String,
    suite: String,
    task: String,
    status: &'static str,
    seconds: f64,
    /// What the job's models embedded, from its result file.
    work: Vec<sage_core::EmbeddingWork>,
}

/// What a bench-all command line asks for.
#[derive(Debug, Default)]
pub struct Invocation {
    /// `--config FILE`; none: the embedded bench.toml.
    pub config_path: Option<PathBuf>,
    /// `--quick`: each suite's quick options and datasets, the `[quick]` models.
    pub quick: bool,
    /// `--overwrite`: run jobs whose result file exists.
    pub overwrite: bool,
    /// `--plan`: print what remote jobs would send and cost, run nothing.
    pub plan_only: bool,
    /// `--list-jobs`: print the job list, run nothing.
    pub list_jobs: bool,
    /// `--gather`: fold a sharded run together and report.
    pub gather: bool,
    /// `--jobs FILE`: run only the jobs listed there.
    pub jobs_file: Option<PathBuf>,
    /// `--shard I/N`: only this share of the jobs.
    pub shard: Option<Shard>,
    /// `--costs FILE`: a finished run's bench-all.json, for the estimates.
    pub costs_file: Option<PathBuf>,
    /// `--out DIR`: the results folder.
    pub out: PathBuf,
    /// `--sage BIN`: the `sage` binary to drive.
    pub sage: Option<PathBuf>,
    /// `--fetch`: rebuild the datasets the run reads from their pinned sources first.
    pub fetch: bool,
}

impl Invocation {
    /// Reads bench-all's options (as after `bench-all`); `out` is the results folder unless
    /// `--out` says another.
    pub fn parse(args: &[String], out: PathBuf) -> Result<Invocation> {
        let mut inv = Invocation {
            out,
            ..Invocation::default()
        };
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let mut value = || flag_value(&mut it, flag);
            match flag.as_str() {
                "--config" => inv.config_path = Some(PathBuf::from(value()?)),
                "--out" => inv.out = PathBuf::from(value()?),
                "--sage" => inv.sage = Some(PathBuf::from(value()?)),
                "--jobs" => inv.jobs_file = Some(PathBuf::from(value()?)),
                "--costs" => inv.costs_file = Some(PathBuf::from(value()?)),
                "--shard" => inv.shard = Some(Shard::parse(&value()?)?),
                "--quick" => inv.quick = true,
                "--fetch" => inv.fetch = true,
                "--overwrite" => inv.overwrite = true,
                "--plan" => inv.plan_only = true,
                "--list-jobs" => inv.list_jobs = true,
                "--gather" => inv.gather = true,
                other => invalid!(
                    "unknown option {other:?} (bench-all takes --config FILE, --quick, --fetch, --overwrite, --out DIR, --sage BIN, --plan, --list-jobs, --jobs FILE, --shard I/N, --costs FILE, --gather)"
                ),
            }
        }
        if inv.gather && inv.shard.is_some() {
            invalid!("--gather folds every shard's work together: it takes no --shard");
        }
        Ok(inv)
    }
}

/// The value after `flag` on a command line (bench-all's, the Slurm submission's).
pub(crate) fn flag_value<'a>(
    it: &mut impl Iterator<Item = &'a String>,
    flag: &str,
) -> Result<String> {
    it.next()
        .cloned()
        .ok_or_else(|| BenchError::Invalid(format!("{flag} needs a value")))
}

/// A bench-all invocation resolved: configuration, data, `sage`, and the jobs selected (all of
/// the configuration's, or those `--jobs` lists), each with its estimated seconds.
pub struct Prepared {
    /// The data folder the jobs read.
    pub data_dir: PathBuf,
    /// The `sage` binary that runs them.
    pub sage: PathBuf,
    similarities: Vec<Similarity>,
    skipped: Vec<Skipped>,
    /// The jobs, in the order they run.
    pub jobs: Vec<Job>,
    /// Each job's estimated seconds, what shares are balanced by.
    pub estimates: Vec<f64>,
    context: RunContext,
}

/// Every listed suite's cost hints, by the `(suite folder, task)` of the jobs they are for.
fn cost_hints(suites: &[ListedSuite]) -> shard::CostHints {
    suites
        .iter()
        .flat_map(|suite| {
            suite.cost_hints.iter().map(|hint| {
                (
                    (suite.result_suite.clone(), hint.task.clone()),
                    hint.clone(),
                )
            })
        })
        .collect()
}

impl Prepared {
    /// Resolves `inv`: reads the configuration, finds `sage` (the environment's unless given),
    /// plans the jobs.
    pub fn new(inv: &Invocation, env: &Environment) -> Result<Prepared> {
        let config = match &inv.config_path {
            Some(p) => Config::read(p)?,
            None => Config::parse(DEFAULT_CONFIG, "the embedded bench.toml")?,
        };
        if !config.datasets.is_empty() && config.file.is_none() {
            invalid!("[datasets] tables need a configuration file (--config) to be relative to");
        }
        let config = if inv.quick { config.quick() } else { config };
        let default_dir = sage_data::DataRoot::default_dir();
        let data_dir = if !config.data_dir.is_empty() {
            PathBuf::from(&config.data_dir)
        } else if let Some(d) = std::env::var_os("SAGE_DATA_DIR").filter(|d| !d.is_empty()) {
            PathBuf::from(d)
        } else if let Some(d) = default_dir.clone().filter(|d| inv.fetch || d.is_dir()) {
            d
        } else if let Some(fallback) = &env.fallback_data_dir {
            fallback.clone()
        } else {
            invalid!("no data folder: `sage data fetch --for CONFIG` (or bench-all --fetch) makes the default one; or set SAGE_DATA_DIR, or data_dir in the configuration");
        };
        let sage = match &inv.sage {
            Some(s) => s.clone(),
            None => (env.sage)(config.device == Device::Cuda)?,
        };
        // before any download or job: a machine whose GPU cannot be used is told that first
        if config.device == Device::Cuda && !inv.plan_only && !inv.list_jobs && !inv.gather {
            plan::check_gpu(&sage)?;
        }
        if inv.fetch {
            // what the run reads, rebuilt from the pinned sources first (present files are kept)
            let mut fetch = Command::new(&sage);
            fetch
                .args(["data", "fetch", "--quiet", "--data-dir"])
                .arg(&data_dir)
                .arg("--for");
            match &config.file {
                Some(file) => fetch.arg(file),
                None => fetch.arg(""),
            };
            if inv.quick {
                fetch.arg("--quick");
            }
            eprintln!(
                "bench-all: fetching the datasets the run reads into {}",
                data_dir.display()
            );
            let status = fetch
                .stdout(std::process::Stdio::null())
                .status()
                .map_err(|e| {
                    BenchError::sage(
                        "sage data fetch",
                        format!("cannot run {}: {e}", sage.display()),
                    )
                })?;
            // what could not be had is said above, once per dataset; the run goes on with what
            // is there, and each suite's notes name what it skipped
            if !status.success() {
                eprintln!(
                    "bench-all: warning: some datasets could not be fetched (above); the run goes \
                     on without them"
                );
            }
        }
        if !data_dir.is_dir() {
            invalid!(
                "data directory {} does not exist (bench-all --fetch makes it)",
                data_dir.display()
            );
        }
        // what to run comes from sage's registry: a suite or metric registered in a `sage` of
        // one's own (`--sage`) is planned like the shipped ones
        let suites = listed_suites(&sage)?;
        config.check_against(&listed_metrics(&sage)?, &suites)?;
        // said once, with the one command that fetches them; each job's notes say what it skipped
        let missing = missing_datasets(&config, &suites, &data_dir);
        if !missing.is_empty() && !inv.list_jobs {
            let for_config = config
                .file
                .as_ref()
                .map_or(String::new(), |f| format!(" {}", f.display()));
            eprintln!(
                "bench-all: {} of the datasets the run reads are not in {}: {}; `sage data fetch --for{for_config}{}` fetches them (or run bench-all with --fetch)",
                missing.len(),
                data_dir.display(),
                missing.join(", "),
                if inv.quick { " --quick" } else { "" }
            );
        }
        let (similarities, mut skipped) = similarities(&config, &sage, inv.quick)?;
        let runs = suite_runs(&config, &suites, &sage)?;
        let mut jobs = plan(&config, &runs, &similarities, &data_dir, &mut skipped);
        let measured = match &inv.costs_file {
            Some(path) => shard::read_costs(path)?,
            None => BTreeMap::new(),
        };
        // once per similarity: a model's folder is read once, not once per job
        let weights: BTreeMap<&str, f64> = similarities
            .iter()
            .map(|s| {
                let bytes = (s.is_model && !sage_core::is_remote_spec(&s.spec))
                    .then(|| model_bytes(&s.spec))
                    .flatten();
                (s.label.as_str(), shard::similarity_weight(bytes))
            })
            .collect();
        let hints = cost_hints(&suites);
        let mut estimates: Vec<f64> = jobs
            .iter()
            .map(|job| {
                let weight = weights[job.similarity.label.as_str()];
                shard::estimate(job, weight, inv.quick, &hints, &measured)
            })
            .collect();
        if let Some(file) = &inv.jobs_file {
            let listed: BTreeMap<String, Option<f64>> =
                shard::read_job_file(file)?.into_iter().collect();
            let known: Vec<String> = jobs.iter().map(Job::id).collect();
            if let Some(unknown) = listed.keys().find(|id| !known.contains(id)) {
                invalid!(
                    "{}: job {unknown:?} is not one this configuration plans (`--list-jobs` prints those)",
                    file.display()
                );
            }
            // the listed estimates win: every shard reading the file balances the same costs
            let mut kept = Vec::new();
            let mut kept_estimates = Vec::new();
            for (job, estimate) in jobs.into_iter().zip(estimates) {
                if let Some(listed_estimate) = listed.get(&job.id()) {
                    kept_estimates.push(listed_estimate.unwrap_or(estimate));
                    kept.push(job);
                }
            }
            jobs = kept;
            estimates = kept_estimates;
        }
        let context = RunContext {
            revision: env.revision.clone(),
            host: sage_core::Host::detect(),
            seed: config.seed,
            data_dir: data_dir.clone(),
            quick: inv.quick,
            max_cost_usd: config.remote.max_cost_usd,
            prices: config.remote.prices.clone(),
            caches: None,
        };
        Ok(Prepared {
            data_dir,
            sage,
            similarities,
            skipped,
            jobs,
            estimates,
            context,
        })
    }
}

/// Runs bench-all as `inv` asks, in `env`.
pub fn bench_all(inv: &Invocation, env: &Environment) -> Result<()> {
    let Prepared {
        data_dir,
        sage,
        similarities,
        skipped,
        jobs,
        estimates,
        mut context,
    } = Prepared::new(inv, env)?;
    let out = &inv.out;
    if inv.list_jobs {
        for (job, estimate) in jobs.iter().zip(&estimates) {
            let done = job.result_path(out).exists();
            println!("{}", shard::job_line(job, *estimate, done));
        }
        return Ok(());
    }
    if inv.gather {
        return gather(inv, &jobs, &sage, &context);
    }
    let selected: Vec<&Job> = match inv.shard {
        Some(shard) => shard::assign(&estimates, shard)
            .into_iter()
            .map(|i| &jobs[i])
            .collect(),
        None => jobs.iter().collect(),
    };
    let share = inv
        .shard
        .map(|s| {
            format!(
                " (shard {}/{}: {} of {} jobs)",
                s.index,
                s.count,
                selected.len(),
                jobs.len()
            )
        })
        .unwrap_or_default();
    eprintln!(
        "bench-all: data {}{}; {} similarities ({}); {} jobs{share}; results in {}",
        data_dir.display(),
        if data_dir.ends_with("data/fixtures/mirror") {
            " (fixtures: SAGE_DATA_DIR unset)"
        } else {
            ""
        },
        similarities.len(),
        similarities
            .iter()
            .map(|s| s.label.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        selected.len(),
        out.display()
    );
    for s in &skipped {
        eprintln!(
            "bench-all: skipped {} {}/{}: {}",
            s.similarity, s.suite, s.task, s.reason
        );
    }
    if inv.plan_only {
        return print_plan(&selected, &sage, out, inv.overwrite, &context);
    }
    if let Some(shard) = inv.shard {
        context.caches = Some((shard, sage_cache::cache_dir()));
    }
    let swept = sweep_stale_temporaries(out);
    if swept > 0 {
        eprintln!(
            "bench-all: removed {swept} temporary files a killed run left in {}",
            out.display()
        );
    }
    let outcomes = run_jobs(&selected, &sage, out, inv.overwrite, &context);

    let records = outcomes
        .iter()
        .map(|o| JobRecord {
            similarity: o.label.clone(),
            suite: o.suite.clone(),
            task: o.task.clone(),
            status: o.status.to_owned(),
            seconds: o.seconds,
        })
        .collect();
    let manifest = Manifest {
        shard: Some(inv.shard.map(|s| ShardRecord {
            index: s.index,
            count: s.count,
        })),
        data_dir: Some(sage_redact::home_relative(&data_dir.display().to_string())),
        gathered_from: None,
        similarities: Some(
            similarities
                .iter()
                .map(|s| SimilarityEntry {
                    label: s.label.clone(),
                    spec: redact_url(&s.spec),
                    kind: if s.is_model { "model" } else { "metric" },
                })
                .collect(),
        ),
        skipped: Some(skipped),
        ..manifest(inv, &context, records)
    };
    // a shard's own manifest: shards running together must not overwrite each other's
    let manifest_name = match inv.shard {
        Some(s) => format!("bench-all.shard-{}-of-{}.json", s.index, s.count),
        None => "bench-all.json".to_owned(),
    };
    write_file(&out.join(manifest_name), &to_json(&manifest))?;
    print_timing_table(&outcomes);

    // a shard leaves the report to --gather, once every shard is done
    let any_result = outcomes
        .iter()
        .any(|o| o.status == "done" || o.status == "kept");
    if inv.shard.is_none() && any_result {
        report(&sage, out)?;
    } else if !any_result {
        eprintln!("bench-all: no result files, so no report");
    }
    let failed: Vec<&Outcome> = outcomes.iter().filter(|o| o.status == "failed").collect();
    if !failed.is_empty() {
        return Err(BenchError::JobsFailed {
            failed: failed
                .iter()
                .map(|o| format!("{} {}/{}", o.label, o.suite, o.task))
                .collect(),
            total: outcomes.len(),
        });
    }
    Ok(())
}

/// The manifest of a run (a shard's, a whole run's, a gather's) of `jobs`: what every one says.
fn manifest(inv: &Invocation, context: &RunContext, jobs: Vec<JobRecord>) -> Manifest {
    Manifest {
        schema: MANIFEST_SCHEMA.to_owned(),
        harness_version: env!("CARGO_PKG_VERSION").to_owned(),
        git_revision: context.revision.clone(),
        timestamp: sage_core::utc_timestamp(),
        host: context.host.clone(),
        config: config_name(inv),
        quick: inv.quick,
        jobs,
        data_dir: None,
        gathered_from: None,
        shard: None,
        similarities: None,
        skipped: None,
    }
}

/// The manifest's name for the configuration a run read.
fn config_name(inv: &Invocation) -> String {
    inv.config_path
        .as_ref()
        .map_or("embedded bench.toml".to_owned(), |p| {
            sage_redact::home_relative(&p.display().to_string())
        })
}

/// `value` as pretty JSON: the one shape of the files bench-all writes.
fn to_json(value: &impl serde::Serialize) -> Vec<u8> {
    serde_json::to_vec_pretty(value).expect("bench-all's records have string keys")
}

/// Writes `bytes` to `path` atomically, making its folder first.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| BenchError::file(dir, "cannot create", e))?;
    }
    Ok(sage_core::write_atomically(path, bytes)?)
}
