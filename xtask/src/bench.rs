//! `cargo xtask bench-all`: every suite on every similarity, one result file per
//! (similarity, suite, task), resumable, then `sage report`.
//!
//! The work is done by the release `sage` binary (`sage run <task> ... --output FILE`); this
//! module only decides what to run, wraps each report in the result envelope (schema, harness
//! version, git revision, host, datasets with row counts and checksums, parameters, timings) and
//! writes it atomically. A result file that exists is the proof that its job finished, so a
//! killed run re-run with the same configuration skips what is done and writes the rest: the
//! files come out the same as an uninterrupted run's except for the `run` block (timestamp, wall
//! time, host, revision), the report's own `timings` and PTEB's paraphrase `cache_hits` (a run
//! resumed after a kill finds what the killed one cached), the only fields that depend on when
//! and where a job ran.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use sage_core::redact::redact_url;
use sage_core::{
    Parameters, ResultEnvelope, RunRecord, SimilarityKind, SimilarityRecord, RESULT_SCHEMA,
};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::shard::{self, Shard};
use crate::{git_revision, workspace_root, write_atomically};

/// The commented default configuration, embedded so that a run with no --config uses it.
pub const DEFAULT_CONFIG: &str = include_str!("../../bench.toml");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Config {
    seed: u64,
    #[serde(default)]
    data_dir: String,
    device: Device,
    batch_tokens: usize,
    similarities: Similarities,
    sage: SageSuite,
    evalrank: EvalRankSuite,
    align_sim: AlignSimSuite,
    pteb: PtebSuite,
    quick: Quick,
    #[serde(default)]
    remote: RemoteSuite,
    /// `[suites.<name>]`: suites registered beyond the shipped ones, by name.
    #[serde(default)]
    suites: BTreeMap<String, RegisteredSuite>,
    /// `[datasets.<name>]`: the user's own datasets. `sage` reads these tables itself (`--datasets
    /// FILE`, paths relative to the file), so their schema is sage-data's and lives once.
    #[serde(default)]
    datasets: BTreeMap<String, toml::Value>,
    /// Where the configuration came from, for errors found once `sage` is asked.
    #[serde(skip)]
    origin: String,
    /// The configuration file, when it is one (its `[datasets]` tables go to `sage` by path).
    #[serde(skip)]
    file: Option<PathBuf>,
}

/// A dataset entry of a list: `name/split` (the registry's or a `[datasets]` table's), or a
/// path (`PATH`, `PATH#SPLIT`), which sage reads; a bare name is missing its split.
fn dataset_entry_ok(entry: &str) -> bool {
    entry.contains('/') || entry.contains('#') || Path::new(entry).exists()
}

/// `[suites.<name>]`: how bench-all runs a suite it knows only from `sage suites` (one a crate
/// registered in its own `sage_cli::main`); a listed suite without a table runs with its
/// defaults.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RegisteredSuite {
    #[serde(default = "yes")]
    enabled: bool,
    /// Datasets as name/split; empty: the suite's defaults that are local.
    #[serde(default)]
    datasets: Vec<String>,
    /// The suite's options, passed as `--options JSON`.
    #[serde(default)]
    options: serde_json::Map<String, Value>,
    /// Under --quick, these options over `options` (a key here replaces the same key there).
    #[serde(default)]
    quick_options: serde_json::Map<String, Value>,
}

fn yes() -> bool {
    true
}

/// Remote models (`PROTOCOL:MODEL[@BASE_URL]` in similarities.models): what they may cost.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RemoteSuite {
    /// Stop starting remote jobs before the estimated spend of this run would cross this.
    #[serde(default)]
    max_cost_usd: Option<f64>,
    /// USD per million tokens by `protocol:model`, over `sage`'s shipped list prices.
    #[serde(default)]
    prices: BTreeMap<String, f64>,
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Device {
    Cpu,
    Cuda,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Similarities {
    metrics: Vec<String>,
    models: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SageSuite {
    tasks: Vec<String>,
    max_rows: usize,
    cluster_subsets: usize,
    cluster_max_texts: usize,
    retrieval_max_docs: usize,
    retrieval_max_queries: usize,
    retrieval_mode: String,
    /// Per task, the datasets to run (name/split); a task not named runs its default
    /// datasets that are in the local mirror.
    #[serde(default)]
    datasets: BTreeMap<String, Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EvalRankSuite {
    levels: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AlignSimSuite {
    max_rows: usize,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PtebSuite {
    enabled: bool,
    /// GGUF folder name under SAGE_MODELS_DIR, a .gguf path or folder, or an OpenAI-compatible
    /// base URL (with llm_model).
    paraphraser: String,
    #[serde(default)]
    llm_model: String,
    /// Requests a local GGUF paraphraser decodes together in each lane; 0: `sage`'s default for
    /// the device.
    #[serde(default)]
    llm_batch: usize,
    /// Decoding lanes of a local GGUF paraphraser; 0: `sage`'s default for the device.
    #[serde(default)]
    llm_lanes: usize,
    /// How a local llama/qwen2 paraphraser's requests attend; absent: `sage`'s default for the
    /// device.
    #[serde(default)]
    llm_attention: Option<LlmAttention>,
    runs: usize,
    max_rows: usize,
    #[serde(default)]
    datasets: Vec<String>,
    #[serde(default)]
    quality: PtebQuality,
}

/// `[pteb.quality]`: the paraphrase-quality record's reference encoder and the gate's
/// thresholds; an absent threshold is `sage`'s default (pteb's `QualityGate`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PtebQuality {
    /// `sage run pteb --quality-encoder`; empty: `sage`'s default (all-MiniLM-L6-v2).
    #[serde(default)]
    encoder: String,
    min_reference_cosine: Option<f64>,
    low_cosine: Option<f64>,
    max_share_below: Option<f64>,
    min_edit_distance: Option<f64>,
    max_fallback_share: Option<f64>,
    min_judge_rating: Option<f64>,
    min_judge_sts_spearman: Option<f64>,
    #[serde(default)]
    pool_unqualified: bool,
}

impl PtebQuality {
    /// The `sage run pteb` flags that say what is set.
    fn flags(&self) -> Vec<String> {
        let mut flags = Vec::new();
        if !self.encoder.is_empty() {
            flags.extend(["--quality-encoder".to_owned(), self.encoder.clone()]);
        }
        for (flag, value) in [
            ("--min-reference-cosine", self.min_reference_cosine),
            ("--low-cosine", self.low_cosine),
            ("--max-share-below", self.max_share_below),
            ("--min-edit-distance", self.min_edit_distance),
            ("--max-fallback-share", self.max_fallback_share),
            ("--min-judge-rating", self.min_judge_rating),
            ("--min-judge-sts-spearman", self.min_judge_sts_spearman),
        ] {
            if let Some(value) = value {
                flags.extend([flag.to_owned(), value.to_string()]);
            }
        }
        if self.pool_unqualified {
            flags.push("--pool-unqualified".to_owned());
        }
        flags
    }
}

/// `sage run pteb --llm-attention`.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum LlmAttention {
    Pooled,
    PerRequest,
}

impl LlmAttention {
    fn flag_value(self) -> &'static str {
        match self {
            LlmAttention::Pooled => "pooled",
            LlmAttention::PerRequest => "per-request",
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Quick {
    max_rows: usize,
    cluster_subsets: usize,
    cluster_max_texts: usize,
    retrieval_max_docs: usize,
    retrieval_max_queries: usize,
    align_sim_max_rows: usize,
    auto_models: Vec<String>,
    pteb_runs: usize,
    pteb_max_rows: usize,
    pteb_datasets: Vec<String>,
}

/// The suites bench-all plans from their own configuration sections; every other suite
/// `sage suites` lists is planned from `[suites.<name>]`.
const CONFIGURED_SUITES: [&str; 8] = [
    "human-pref",
    "robustness",
    "sensitivity",
    "clustering",
    "retrieval",
    "evalrank",
    "align-sim",
    "pteb",
];
const SAGE_TASKS: [&str; 5] = [
    "human-pref",
    "robustness",
    "sensitivity",
    "clustering",
    "retrieval",
];

impl Config {
    /// Parses and checks a configuration; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Config> {
        let mut config: Config =
            toml::from_str(text).with_context(|| format!("{origin}: invalid"))?;
        config.origin = origin.to_owned();
        for (name, suite) in &config.suites {
            if CONFIGURED_SUITES.contains(&name.as_str()) {
                bail!("{origin}: suites.{name}: {name} is configured in its own section ([sage], [evalrank], [align_sim], [pteb])");
            }
            if let Some(bad) = suite.datasets.iter().find(|d| !dataset_entry_ok(d)) {
                bail!("{origin}: suites.{name}.datasets: {bad:?} is not name/split");
            }
        }
        for t in &config.sage.tasks {
            if !SAGE_TASKS.contains(&t.as_str()) {
                bail!("{origin}: sage.tasks: unknown task {t:?} (one of {SAGE_TASKS:?})");
            }
        }
        for l in &config.evalrank.levels {
            if !["word", "sentence"].contains(&l.as_str()) {
                bail!("{origin}: evalrank.levels: unknown level {l:?} (word or sentence)");
            }
        }
        for (task, datasets) in &config.sage.datasets {
            if !SAGE_TASKS.contains(&task.as_str()) {
                bail!("{origin}: sage.datasets: unknown task {task:?} (one of {SAGE_TASKS:?})");
            }
            if let Some(bad) = datasets.iter().find(|d| !dataset_entry_ok(d)) {
                bail!("{origin}: sage.datasets.{task}: {bad:?} is not name/split");
            }
        }
        if !["distractor", "replace"].contains(&config.sage.retrieval_mode.as_str()) {
            bail!(
                "{origin}: sage.retrieval_mode: {:?} is neither distractor nor replace",
                config.sage.retrieval_mode
            );
        }
        Ok(config)
    }

    /// Checks the names the configuration gives against what `sage` registers: its metrics
    /// (`sage metrics`) and suites (`sage suites`).
    fn check_against(&self, metrics: &[String], suites: &[ListedSuite]) -> Result<()> {
        let origin = &self.origin;
        for m in &self.similarities.metrics {
            if !metrics.contains(m) {
                bail!("{origin}: similarities.metrics: unknown metric {m:?} (sage registers {metrics:?})");
            }
        }
        for name in self.suites.keys() {
            if !suites.iter().any(|s| &s.name == name) {
                let listed: Vec<&str> = suites.iter().map(|s| s.name.as_str()).collect();
                bail!("{origin}: suites.{name}: sage registers no suite {name:?} (it lists {listed:?})");
            }
        }
        Ok(())
    }

    /// The same configuration with --quick's sample sizes.
    fn quick(mut self) -> Config {
        let q = &self.quick;
        self.sage.max_rows = q.max_rows;
        self.sage.cluster_subsets = q.cluster_subsets;
        self.sage.cluster_max_texts = q.cluster_max_texts;
        self.sage.retrieval_max_docs = q.retrieval_max_docs;
        self.sage.retrieval_max_queries = q.retrieval_max_queries;
        self.align_sim.max_rows = q.align_sim_max_rows;
        self.pteb.runs = q.pteb_runs;
        self.pteb.max_rows = q.pteb_max_rows;
        self.pteb.datasets = q.pteb_datasets.clone();
        for suite in self.suites.values_mut() {
            let quick = std::mem::take(&mut suite.quick_options);
            suite.options.extend(quick);
        }
        self
    }
}

/// A similarity to evaluate: a metric or a model spec.
#[derive(Clone, Debug)]
pub(crate) struct Similarity {
    /// Folder name under the results directory.
    pub label: String,
    spec: String,
    pub is_model: bool,
}

/// One unit of work and its result file.
#[derive(Debug)]
pub(crate) struct Job {
    pub similarity: Similarity,
    pub suite: String,
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

/// A job not run, and why.
#[derive(Debug, serde::Serialize)]
struct Skipped {
    similarity: String,
    suite: String,
    task: String,
    reason: String,
}

struct Outcome {
    label: String,
    suite: String,
    task: String,
    status: &'static str,
    seconds: f64,
}

/// What a bench-all command line asks for.
#[derive(Debug, Default)]
pub(crate) struct Invocation {
    pub config_path: Option<PathBuf>,
    pub quick: bool,
    pub overwrite: bool,
    pub plan_only: bool,
    pub list_jobs: bool,
    pub gather: bool,
    /// `--jobs FILE`: run only the jobs listed there.
    pub jobs_file: Option<PathBuf>,
    pub shard: Option<Shard>,
    /// `--costs FILE`: a finished run's bench-all.json, for the estimates.
    pub costs_file: Option<PathBuf>,
    pub out: PathBuf,
    pub sage: Option<PathBuf>,
}

impl Invocation {
    pub fn parse(args: &[String]) -> Result<Invocation> {
        let mut inv = Invocation {
            out: workspace_root().join("results"),
            ..Invocation::default()
        };
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let mut value = || crate::flag_value(&mut it, flag);
            match flag.as_str() {
                "--config" => inv.config_path = Some(PathBuf::from(value()?)),
                "--out" => inv.out = PathBuf::from(value()?),
                "--sage" => inv.sage = Some(PathBuf::from(value()?)),
                "--jobs" => inv.jobs_file = Some(PathBuf::from(value()?)),
                "--costs" => inv.costs_file = Some(PathBuf::from(value()?)),
                "--shard" => inv.shard = Some(Shard::parse(&value()?)?),
                "--quick" => inv.quick = true,
                "--overwrite" => inv.overwrite = true,
                "--plan" => inv.plan_only = true,
                "--list-jobs" => inv.list_jobs = true,
                "--gather" => inv.gather = true,
                other => bail!(
                    "unknown option {other:?} (bench-all takes --config FILE, --quick, --overwrite, --out DIR, --sage BIN, --plan, --list-jobs, --jobs FILE, --shard I/N, --costs FILE, --gather)"
                ),
            }
        }
        if inv.gather && inv.shard.is_some() {
            bail!("--gather folds every shard's work together: it takes no --shard");
        }
        Ok(inv)
    }
}

/// A bench-all invocation resolved: configuration, data, `sage`, and the jobs selected (all of
/// the configuration's, or those `--jobs` lists), each with its estimated seconds.
pub(crate) struct Prepared {
    pub data_dir: PathBuf,
    pub sage: PathBuf,
    similarities: Vec<Similarity>,
    skipped: Vec<Skipped>,
    pub jobs: Vec<Job>,
    pub estimates: Vec<f64>,
    context: RunContext,
}

impl Prepared {
    /// Resolves `inv`: reads the configuration, builds `sage` unless given, plans the jobs.
    pub fn new(inv: &Invocation) -> Result<Prepared> {
        let root = workspace_root();
        let config = match &inv.config_path {
            Some(p) => Config {
                file: Some(std::path::absolute(p)?),
                ..Config::parse(
                    &std::fs::read_to_string(p)
                        .with_context(|| format!("{}: cannot read", p.display()))?,
                    &p.display().to_string(),
                )?
            },
            None => Config::parse(DEFAULT_CONFIG, "the embedded bench.toml")?,
        };
        if !config.datasets.is_empty() && config.file.is_none() {
            bail!("[datasets] tables need a configuration file (--config) to be relative to");
        }
        let config = if inv.quick { config.quick() } else { config };
        let data_dir = if !config.data_dir.is_empty() {
            PathBuf::from(&config.data_dir)
        } else if let Some(d) = std::env::var_os("SAGE_DATA_DIR").filter(|d| !d.is_empty()) {
            PathBuf::from(d)
        } else {
            root.join("data/fixtures/mirror")
        };
        if !data_dir.is_dir() {
            bail!("data directory {} does not exist", data_dir.display());
        }
        let sage = match &inv.sage {
            Some(s) => s.clone(),
            None => crate::build_sage_with(&root, config.device == Device::Cuda)?,
        };
        // what to run comes from sage's registry: a suite or metric registered in a `sage` of
        // one's own (`--sage`) is planned like the shipped ones
        let suites = listed_suites(&sage)?;
        config.check_against(&listed_metrics(&sage)?, &suites)?;
        let (similarities, mut skipped) = similarities(&config, &sage, inv.quick)?;
        let mut jobs = plan(&config, &suites, &similarities, &data_dir, &mut skipped);
        let measured = match &inv.costs_file {
            Some(path) => shard::read_costs(path)?,
            None => BTreeMap::new(),
        };
        // once per similarity: a model's folder is read once, not once per job
        let weights: BTreeMap<&str, f64> = similarities
            .iter()
            .map(|s| {
                let bytes = (s.is_model && !is_remote(&s.spec))
                    .then(|| model_bytes(&s.spec))
                    .flatten();
                (s.label.as_str(), shard::similarity_weight(bytes))
            })
            .collect();
        let mut estimates: Vec<f64> = jobs
            .iter()
            .map(|job| {
                let weight = weights[job.similarity.label.as_str()];
                shard::estimate(job, weight, inv.quick, &measured)
            })
            .collect();
        if let Some(file) = &inv.jobs_file {
            let listed: BTreeMap<String, Option<f64>> =
                shard::read_job_file(file)?.into_iter().collect();
            let known: Vec<String> = jobs.iter().map(Job::id).collect();
            if let Some(unknown) = listed.keys().find(|id| !known.contains(id)) {
                bail!(
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
            revision: git_revision(&root),
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

pub fn bench_all(args: &[String]) -> Result<()> {
    let inv = Invocation::parse(args)?;
    let Prepared {
        data_dir,
        sage,
        similarities,
        skipped,
        jobs,
        estimates,
        mut context,
    } = Prepared::new(&inv)?;
    let out = &inv.out;
    if inv.list_jobs {
        for (job, estimate) in jobs.iter().zip(&estimates) {
            let done = job.result_path(out).exists();
            println!("{}", shard::job_line(job, *estimate, done));
        }
        return Ok(());
    }
    if inv.gather {
        return gather(&inv, &jobs, &sage);
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
        context.caches = Some((shard, sage_core::cache_dir()));
    }
    let swept = sweep_stale_temporaries(out);
    if swept > 0 {
        eprintln!(
            "bench-all: removed {swept} temporary files a killed run left in {}",
            out.display()
        );
    }
    let outcomes = run_jobs(&selected, &sage, out, inv.overwrite, &context);

    let manifest = json!({
        "schema": "sage-rs/bench-all/1",
        "harness_version": env!("CARGO_PKG_VERSION"),
        "git_revision": context.revision,
        "timestamp": sage_core::utc_timestamp(),
        "host": context.host,
        "config": inv.config_path.as_ref().map_or("embedded bench.toml".to_owned(), |p| sage_core::redact::home_relative(&p.display().to_string())),
        "quick": inv.quick,
        "shard": inv.shard.map(|s| json!({"index": s.index, "count": s.count})),
        "data_dir": sage_core::redact::home_relative(&data_dir.display().to_string()),
        "similarities": similarities.iter().map(|s| json!({"label": s.label, "spec": redact_url(&s.spec), "kind": if s.is_model {"model"} else {"metric"}})).collect::<Vec<_>>(),
        "skipped": skipped,
        "jobs": outcomes.iter().map(|o| json!({"similarity": o.label, "suite": o.suite, "task": o.task, "status": o.status, "seconds": o.seconds})).collect::<Vec<_>>(),
    });
    // a shard's own manifest: shards running together must not overwrite each other's
    let manifest_name = match inv.shard {
        Some(s) => format!("bench-all.shard-{}-of-{}.json", s.index, s.count),
        None => "bench-all.json".to_owned(),
    };
    write_atomically(
        &out.join(manifest_name),
        &serde_json::to_vec_pretty(&manifest)?,
    )?;
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
        bail!(
            "{} of {} jobs failed (their errors are above; every other result is written): {}",
            failed.len(),
            outcomes.len(),
            failed
                .iter()
                .map(|o| format!("{} {}/{}", o.label, o.suite, o.task))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(())
}

/// `sage report DIR`.
fn report(sage: &Path, out: &Path) -> Result<()> {
    let status = Command::new(sage)
        .arg("report")
        .arg(out)
        .status()
        .with_context(|| format!("running {} report", sage.display()))?;
    if !status.success() {
        bail!("sage report {} failed", out.display());
    }
    Ok(())
}

/// `--gather`: after every shard ran, folds the shards' cache files into the shared caches
/// (checked, idempotent; the shard files are removed once folded), checks that every selected
/// job has its result, writes bench-all.json from the results and the shards' manifests, and
/// runs `sage report`. A missing result is an error naming the job; nothing is reported then.
fn gather(inv: &Invocation, jobs: &[Job], sage: &Path) -> Result<()> {
    let out = &inv.out;
    let cache_dir = sage_core::cache_dir();
    for (stem, flag) in [("embeddings", None), ("paraphrases", Some("--paraphrases"))] {
        let shards = shard::shard_caches(&cache_dir, stem);
        if shards.is_empty() {
            continue;
        }
        let merged = sage_stdout(
            Command::new(sage)
                .args(["cache", "merge", "--cache"])
                .arg(cache_dir.join(format!("{stem}.redb")))
                .args(flag)
                .args(&shards),
            &format!(
                "sage cache merge of {} {stem} shard files (they are kept)",
                shards.len()
            ),
        )?;
        eprintln!(
            "bench-all: {stem} caches folded: {}",
            String::from_utf8_lossy(&merged).trim()
        );
        for file in &shards {
            std::fs::remove_file(file)
                .with_context(|| format!("{}: cannot remove once merged", file.display()))?;
        }
    }
    let missing: Vec<String> = jobs
        .iter()
        .filter(|j| !j.result_path(out).exists())
        .map(Job::id)
        .collect();
    // what each shard said of its jobs: a failure's status and time
    let mut recorded: BTreeMap<String, (String, f64)> = BTreeMap::new();
    let mut shard_manifests = Vec::new();
    for entry in std::fs::read_dir(out).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !(name.starts_with("bench-all.shard-") && name.ends_with(".json")) {
            continue;
        }
        let manifest: Value = std::fs::read(entry.path())
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .with_context(|| format!("{}: not a bench-all manifest", entry.path().display()))?;
        for j in manifest["jobs"].as_array().into_iter().flatten() {
            let id = format!(
                "{}/{}/{}",
                j["similarity"].as_str().unwrap_or_default(),
                j["suite"].as_str().unwrap_or_default(),
                j["task"].as_str().unwrap_or_default()
            );
            recorded.insert(
                id,
                (
                    j["status"].as_str().unwrap_or_default().to_owned(),
                    j["seconds"].as_f64().unwrap_or(0.0),
                ),
            );
        }
        shard_manifests.push(name);
    }
    shard_manifests.sort();
    let job_records: Vec<Value> = jobs
        .iter()
        .map(|j| {
            let id = j.id();
            let wall = std::fs::read(j.result_path(out))
                .ok()
                .and_then(|b| serde_json::from_slice::<ResultEnvelope>(&b).ok())
                .map(|e| e.run.wall_seconds);
            let (status, seconds) = match (wall, recorded.get(&id)) {
                (Some(w), _) => ("done".to_owned(), w),
                (None, Some((status, seconds))) => (status.clone(), *seconds),
                (None, None) => ("missing".to_owned(), 0.0),
            };
            json!({"similarity": j.similarity.label, "suite": j.suite, "task": j.task, "status": status, "seconds": seconds})
        })
        .collect();
    let root = workspace_root();
    let manifest = json!({
        "schema": "sage-rs/bench-all/1",
        "harness_version": env!("CARGO_PKG_VERSION"),
        "git_revision": git_revision(&root),
        "timestamp": sage_core::utc_timestamp(),
        "host": sage_core::Host::detect(),
        "config": inv.config_path.as_ref().map_or("embedded bench.toml".to_owned(), |p| sage_core::redact::home_relative(&p.display().to_string())),
        "quick": inv.quick,
        "gathered_from": shard_manifests,
        "jobs": job_records,
    });
    write_atomically(
        &out.join("bench-all.json"),
        &serde_json::to_vec_pretty(&manifest)?,
    )?;
    if !missing.is_empty() {
        bail!(
            "{} of {} jobs have no result (re-run them: the same command without --gather, or `cargo xtask slurm` again): {}",
            missing.len(),
            jobs.len(),
            missing.join(", ")
        );
    }
    eprintln!("bench-all: all {} results present; reporting", jobs.len());
    report(sage, out)
}

/// The metrics and models to run; "auto" expands to what `sage models` finds.
fn similarities(
    config: &Config,
    sage: &Path,
    quick: bool,
) -> Result<(Vec<Similarity>, Vec<Skipped>)> {
    let mut out: Vec<Similarity> = config
        .similarities
        .metrics
        .iter()
        .map(|m| Similarity {
            label: m.clone(),
            spec: m.clone(),
            is_model: false,
        })
        .collect();
    let mut skipped = Vec::new();
    for spec in &config.similarities.models {
        if spec != "auto" {
            out.push(Similarity {
                label: sage_core::result_label(spec),
                spec: spec.clone(),
                is_model: true,
            });
            continue;
        }
        let mut found_models: Vec<(u64, String)> = Vec::new();
        for found in sage_listing::<Value>(sage, "models")? {
            let spec = found["spec"].as_str().unwrap_or_default().to_owned();
            let dir = Path::new(found["dir"].as_str().unwrap_or_default());
            found_models.push((transformer_bytes(dir), spec));
        }
        // Cheapest first, so that a run stopped early holds the most results: static models
        // (no transformer weights), then transformers by weight size. The sort is stable.
        found_models.sort_by_key(|(bytes, _)| *bytes);
        for (_, spec) in found_models {
            if quick && !config.quick.auto_models.contains(&spec) {
                skipped.push(Skipped {
                    similarity: spec,
                    suite: "*".into(),
                    task: "*".into(),
                    reason: "--quick runs only quick.auto_models".into(),
                });
                continue;
            }
            if !out.iter().any(|s| s.spec == spec) {
                out.push(Similarity {
                    label: sage_core::result_label(&spec),
                    spec,
                    is_model: true,
                });
            }
        }
    }
    if out.is_empty() {
        bail!("no similarity to run: similarities.metrics and .models are empty");
    }
    Ok((out, skipped))
}

/// Bytes of the transformer weights in a model folder (`*.safetensors`); 0 for static models.
fn transformer_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "safetensors"))
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}

/// Transformer weight bytes of a local model spec (a folder, or a folder name under
/// SAGE_MODELS_DIR); `None` when its folder is not found here (a hub id).
fn model_bytes(spec: &str) -> Option<u64> {
    let under_models = std::env::var_os("SAGE_MODELS_DIR")
        .filter(|d| !d.is_empty())
        .map(|d| PathBuf::from(d).join(spec));
    [Some(PathBuf::from(spec)), under_models]
        .into_iter()
        .flatten()
        .find(|p| p.is_dir())
        .map(|dir| transformer_bytes(&dir))
}

/// Whether `spec` names a remote model (`openai:`, `voyage:`, `cohere:`, `gemini:`), as
/// `sage` decides it.
fn is_remote(spec: &str) -> bool {
    sage_core::remote_model_name(spec).is_some() && !Path::new(spec).exists()
}

/// `protocol:model` of a remote spec: its label and its key in `[remote.prices]`.
fn remote_name(spec: &str) -> String {
    sage_core::remote_model_name(spec)
        .unwrap_or(spec)
        .to_owned()
}

/// A suite as `sage suites` lists it: what bench-all needs to plan its jobs.
#[derive(Clone, Debug, Deserialize)]
pub(crate) struct ListedSuite {
    name: String,
    takes_metrics: bool,
    /// Where a run with default options writes: `<similarity>/<result_suite>/<result_task>.json`.
    result_suite: String,
    result_task: String,
}

/// One JSON object per line of `sage <command>`'s output.
fn sage_listing<T: serde::de::DeserializeOwned>(sage: &Path, command: &str) -> Result<Vec<T>> {
    let listing = sage_stdout(Command::new(sage).arg(command), &format!("sage {command}"))?;
    String::from_utf8_lossy(&listing)
        .lines()
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_str(line)
                .with_context(|| format!("sage {command}, line {}: {line:?}", i + 1))
        })
        .collect()
}

/// The suites `sage` registers, in its order (`sage suites`).
fn listed_suites(sage: &Path) -> Result<Vec<ListedSuite>> {
    sage_listing(sage, "suites")
}

/// The metrics `sage` registers (`sage metrics`).
fn listed_metrics(sage: &Path) -> Result<Vec<String>> {
    #[derive(Deserialize)]
    struct Listed {
        name: String,
    }
    Ok(sage_listing::<Listed>(sage, "metrics")?
        .into_iter()
        .map(|m| m.name)
        .collect())
}

fn plan(
    config: &Config,
    suites: &[ListedSuite],
    similarities: &[Similarity],
    data_dir: &Path,
    skipped: &mut Vec<Skipped>,
) -> Vec<Job> {
    let listed = |name: &str| suites.iter().any(|s| s.name == name);
    let seed = config.seed.to_string();
    let data = data_dir.display().to_string();
    let some = |n: usize| (n > 0).then(|| n.to_string());
    let mut jobs = Vec::new();
    for s in similarities {
        // every model flag a task takes; the embedding cache is shared by all jobs
        let mut model_flags = Vec::new();
        if s.is_model {
            model_flags.extend(["--batch-tokens".to_owned(), config.batch_tokens.to_string()]);
            if config.device == Device::Cuda {
                model_flags.push("--cuda".to_owned());
            }
        }
        for task in config.sage.tasks.iter().filter(|t| listed(t)) {
            let mut args: Vec<String> = vec![
                "run".into(),
                task.clone(),
                "--similarity".into(),
                s.spec.clone(),
                "--seed".into(),
                seed.clone(),
                "--data-dir".into(),
                data.clone(),
            ];
            for dataset in config.sage.datasets.get(task).into_iter().flatten() {
                args.extend(["--dataset".into(), dataset.clone()]);
            }
            match task.as_str() {
                "clustering" => args.extend([
                    "--subsets".into(),
                    config.sage.cluster_subsets.to_string(),
                    "--max-texts".into(),
                    config.sage.cluster_max_texts.to_string(),
                ]),
                "retrieval" => {
                    args.extend(["--mode".into(), config.sage.retrieval_mode.clone()]);
                    if let Some(n) = some(config.sage.retrieval_max_docs) {
                        args.extend(["--max-docs".into(), n]);
                    }
                    if let Some(n) = some(config.sage.retrieval_max_queries) {
                        args.extend(["--max-queries".into(), n]);
                    }
                }
                _ => {
                    if let Some(n) = some(config.sage.max_rows) {
                        args.extend(["--max-rows".into(), n]);
                    }
                }
            }
            args.extend(model_flags.iter().cloned());
            jobs.push(Job {
                similarity: s.clone(),
                suite: "sage".into(),
                task: task.clone(),
                args,
            });
        }
        let evalrank_levels = if listed("evalrank") {
            config.evalrank.levels.as_slice()
        } else {
            &[]
        };
        for level in evalrank_levels {
            if !s.is_model {
                skipped.push(Skipped {
                    similarity: s.label.clone(),
                    suite: "evalrank".into(),
                    task: level.clone(),
                    reason: "EvalRank ranks embedding vectors; a classical metric has none".into(),
                });
                continue;
            }
            let mut args: Vec<String> = vec![
                "run".into(),
                "evalrank".into(),
                "--level".into(),
                level.clone(),
                "--similarity".into(),
                s.spec.clone(),
                "--data-dir".into(),
                data.clone(),
            ];
            args.extend(model_flags.iter().cloned());
            jobs.push(Job {
                similarity: s.clone(),
                suite: "evalrank".into(),
                task: level.clone(),
                args,
            });
        }
        if listed("align-sim") {
            let mut args: Vec<String> = vec!["run".into(), "align-sim".into()];
            args.extend([
                "--similarity".to_owned(),
                s.spec.clone(),
                "--max-rows".into(),
                config.align_sim.max_rows.to_string(),
                "--seed".into(),
                seed.clone(),
                "--data-dir".into(),
                data.clone(),
            ]);
            args.extend(model_flags.iter().cloned());
            jobs.push(Job {
                similarity: s.clone(),
                suite: "align-sim".into(),
                task: "criteria".into(),
                args,
            });
        }
        if config.pteb.enabled && listed("pteb") {
            match (s.is_model, pteb_paraphraser(&config.pteb)) {
                (false, _) => skipped.push(Skipped {
                    similarity: s.label.clone(),
                    suite: "pteb".into(),
                    task: "mteb".into(),
                    reason: "PTEB's tasks embed texts (classification, clustering); a classical metric has no vectors".into(),
                }),
                (true, Err(reason)) => skipped.push(Skipped {
                    similarity: s.label.clone(),
                    suite: "pteb".into(),
                    task: "mteb".into(),
                    reason,
                }),
                (true, Ok(())) => {
                    let mut args: Vec<String> = vec![
                        "run".into(),
                        "pteb".into(),
                        "--similarity".into(),
                        s.spec.clone(),
                        "--paraphraser".into(),
                        config.pteb.paraphraser.clone(),
                        "--runs".into(),
                        config.pteb.runs.to_string(),
                        "--seed".into(),
                        seed.clone(),
                        "--data-dir".into(),
                        data.clone(),
                    ];
                    if !config.pteb.llm_model.is_empty() {
                        args.extend(["--llm-model".into(), config.pteb.llm_model.clone()]);
                    }
                    if let Some(n) = some(config.pteb.llm_batch) {
                        args.extend(["--llm-batch".into(), n]);
                    }
                    if let Some(n) = some(config.pteb.llm_lanes) {
                        args.extend(["--llm-lanes".into(), n]);
                    }
                    if let Some(attention) = config.pteb.llm_attention {
                        args.extend([
                            "--llm-attention".into(),
                            attention.flag_value().into(),
                        ]);
                    }
                    if let Some(n) = some(config.pteb.max_rows) {
                        args.extend(["--max-rows".into(), n]);
                    }
                    for dataset in &config.pteb.datasets {
                        args.extend(["--dataset".into(), dataset.clone()]);
                    }
                    args.extend(config.pteb.quality.flags());
                    args.extend(model_flags.iter().cloned());
                    jobs.push(Job {
                        similarity: s.clone(),
                        suite: "pteb".into(),
                        task: "mteb".into(),
                        args,
                    });
                }
            }
        }
        for suite in suites
            .iter()
            .filter(|x| !CONFIGURED_SUITES.contains(&x.name.as_str()))
        {
            let configured = config.suites.get(&suite.name);
            if configured.is_some_and(|c| !c.enabled) {
                continue;
            }
            if !s.is_model && !suite.takes_metrics {
                skipped.push(Skipped {
                    similarity: s.label.clone(),
                    suite: suite.result_suite.clone(),
                    task: suite.result_task.clone(),
                    reason: format!("{} evaluates embedding models only", suite.name),
                });
                continue;
            }
            let mut args: Vec<String> = vec![
                "run".into(),
                suite.name.clone(),
                "--similarity".into(),
                s.spec.clone(),
                "--seed".into(),
                seed.clone(),
                "--data-dir".into(),
                data.clone(),
            ];
            if let Some(configured) = configured {
                for dataset in &configured.datasets {
                    args.extend(["--dataset".into(), dataset.clone()]);
                }
                if !configured.options.is_empty() {
                    args.extend([
                        "--options".into(),
                        Value::Object(configured.options.clone()).to_string(),
                    ]);
                }
            }
            args.extend(model_flags.iter().cloned());
            jobs.push(Job {
                similarity: s.clone(),
                suite: suite.result_suite.clone(),
                task: suite.result_task.clone(),
                args,
            });
        }
    }
    // the user's [datasets] tables, for every job that reads datasets by name
    if let (Some(file), false) = (&config.file, config.datasets.is_empty()) {
        for job in jobs
            .iter_mut()
            .filter(|j| j.args.iter().any(|a| a == "--dataset"))
        {
            job.args
                .extend(["--datasets".into(), file.display().to_string()]);
        }
    }
    // PTEB last: its LLM paraphrasing takes longer than every other suite together, and its
    // paraphrases are cached and shared by all models, so the rest should not wait on it
    let (pteb, mut jobs): (Vec<Job>, Vec<Job>) = jobs.into_iter().partition(|j| j.suite == "pteb");
    jobs.extend(pteb);
    jobs
}

/// Whether the configured paraphraser and the quality record's reference encoder are there: a
/// server URL (or a remote encoder, a hub id) is taken on trust, the run says so if it is not
/// there; a model must exist as a path or under SAGE_MODELS_DIR.
fn pteb_paraphraser(pteb: &PtebSuite) -> std::result::Result<(), String> {
    let encoder = match pteb.quality.encoder.as_str() {
        "" => "all-MiniLM-L6-v2",
        named => named,
    };
    let path_like = encoder.starts_with(['/', '.', '~']);
    let remote_or_hub = !path_like && encoder.contains([':', '/']);
    if !remote_or_hub && !local_model(encoder) {
        return Err(format!(
            "the reference encoder of PTEB's paraphrase-quality record, {encoder:?}, not found \
             (a path, or a folder under $SAGE_MODELS_DIR: bash ../shared/tools/fetch-models.sh \
             minilm; or set pteb.quality.encoder)"
        ));
    }
    let spec = &pteb.paraphraser;
    if spec.starts_with("http://") || spec.starts_with("https://") {
        return if pteb.llm_model.is_empty() {
            Err(format!(
                "pteb.paraphraser is the server {spec}: set pteb.llm_model"
            ))
        } else {
            Ok(())
        };
    }
    if local_model(spec) {
        Ok(())
    } else {
        Err(format!(
            "paraphraser {spec:?} not found (a path, or a folder under $SAGE_MODELS_DIR: bash ../shared/tools/fetch-models.sh smollm2)"
        ))
    }
}

/// A model given as a path, or as a folder name under SAGE_MODELS_DIR, that is there.
fn local_model(spec: &str) -> bool {
    let under_models = std::env::var_os("SAGE_MODELS_DIR")
        .filter(|d| !d.is_empty())
        .map(|d| PathBuf::from(d).join(spec));
    Path::new(spec).exists() || under_models.is_some_and(|p| p.exists())
}

struct RunContext {
    revision: Option<String>,
    host: sage_core::Host,
    seed: u64,
    data_dir: PathBuf,
    quick: bool,
    max_cost_usd: Option<f64>,
    prices: BTreeMap<String, f64>,
    /// A shard's own cache files, and the folder of the others it reads (see [`Shard`]).
    caches: Option<(Shard, PathBuf)>,
}

impl RunContext {
    /// A shard's cache flags for a model job: its own files, the others read. Not recorded in
    /// the result (a sharded run's results equal an unsharded one's).
    fn cache_args(&self, job: &Job) -> Vec<String> {
        let Some((shard, dir)) = &self.caches else {
            return Vec::new();
        };
        if !job.similarity.is_model {
            return Vec::new();
        }
        let (embeddings, paraphrases) = shard.cache_files(dir);
        let dir = dir.display().to_string();
        let mut args = vec![
            "--cache".to_owned(),
            embeddings.display().to_string(),
            "--read-caches".to_owned(),
            dir.clone(),
        ];
        if job.suite == "pteb" {
            args.extend([
                "--paraphrase-cache".to_owned(),
                paraphrases.display().to_string(),
                "--read-paraphrase-caches".to_owned(),
                dir,
            ]);
        }
        args
    }

    /// `--price P` for a remote model priced in `[remote.prices]`.
    fn price_args(&self, spec: &str) -> Vec<String> {
        if !is_remote(spec) {
            return Vec::new();
        }
        self.prices
            .get(&remote_name(spec))
            .map(|p| vec!["--price".to_owned(), p.to_string()])
            .unwrap_or_default()
    }
}

/// `sage ... --plan` of a remote job: what it would send and cost, sending nothing.
fn job_plan(job: &Job, sage: &Path, context: &RunContext) -> Result<Value> {
    let plan = sage_stdout(
        Command::new(sage)
            .args(&job.args)
            .args(context.price_args(&job.similarity.spec))
            .arg("--plan"),
        "planning",
    )?;
    serde_json::from_slice(&plan).context("sage --plan output")
}

/// Runs a `sage` command to its end and returns its standard output; a failure is an error that
/// says `what` failed and gives sage's last line of standard error (its message).
fn sage_stdout(command: &mut Command, what: &str) -> Result<Vec<u8>> {
    let output = command
        .output()
        .with_context(|| format!("running {:?}", command.get_program()))?;
    if !output.status.success() {
        bail!(
            "{what} failed: {}",
            String::from_utf8_lossy(&output.stderr)
                .trim()
                .lines()
                .last()
                .unwrap_or("no message")
        );
    }
    Ok(output.stdout)
}

/// What a remote job would cost: USD, or why unknown.
fn planned_cost(job: &Job, sage: &Path, context: &RunContext) -> Result<f64> {
    job_plan(job, sage, context)?["estimated_cost_usd"]
        .as_f64()
        .with_context(|| {
            format!(
                "no price for {}: set it in [remote.prices] to run it under remote.max_cost_usd",
                remote_name(&job.similarity.spec)
            )
        })
}

/// `--plan`: what each remote job still to run would send and cost; runs nothing.
fn print_plan(
    jobs: &[&Job],
    sage: &Path,
    out: &Path,
    overwrite: bool,
    context: &RunContext,
) -> Result<()> {
    let mut total = Some(0.0);
    let mut remote_jobs = 0;
    for job in jobs.iter().filter(|j| is_remote(&j.similarity.spec)) {
        remote_jobs += 1;
        let name = format!("{} {}/{}", job.similarity.label, job.suite, job.task);
        let path = job.result_path(out);
        if path.exists() && !overwrite {
            println!("{name}: kept (result exists), sends nothing");
            continue;
        }
        let plan = job_plan(job, sage, context).with_context(|| name.clone())?;
        let model = &plan["plan"][0];
        let cost = plan["estimated_cost_usd"].as_f64();
        println!(
            "{name}: {} texts, {} tokens to send ({} cached): {}",
            model["texts_to_send"],
            model["tokens_to_send"],
            model["cached_texts"],
            cost.map_or("no price".to_owned(), |c| format!("${c:.4}"))
        );
        total = total.zip(cost).map(|(t, c)| t + c);
    }
    match (remote_jobs, total) {
        (0, _) => println!("no remote-model jobs: nothing would be sent"),
        (_, Some(t)) => println!(
            "total: about ${t:.4} (an upper bound: a text several jobs share is counted in each){}",
            context
                .max_cost_usd
                .map(|m| format!("; remote.max_cost_usd = ${m}"))
                .unwrap_or_default()
        ),
        (_, None) => println!("total: unknown (a model has no price: set it in [remote.prices])"),
    }
    Ok(())
}

/// The cost a finished result file records (its `remote_usage`), 0 when none.
fn recorded_cost(path: &Path) -> f64 {
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice::<ResultEnvelope>(&b).ok())
        .and_then(|e| e.report["remote_usage"].as_array().cloned())
        .map_or(0.0, |usage| {
            usage.iter().filter_map(|u| u["cost_usd"].as_f64()).sum()
        })
}

fn bar_style() -> ProgressStyle {
    ProgressStyle::with_template("{prefix:>24} [{bar:30}] {pos}/{len} {msg}")
        .expect("a valid template")
        .progress_chars("=> ")
}

fn run_jobs(
    jobs: &[&Job],
    sage: &Path,
    out: &Path,
    overwrite: bool,
    context: &RunContext,
) -> Vec<Outcome> {
    let bars = MultiProgress::new();
    let interactive = std::io::stderr().is_terminal();
    let mut by_similarity: BTreeMap<String, ProgressBar> = BTreeMap::new();
    let mut by_suite: BTreeMap<&str, ProgressBar> = BTreeMap::new();
    for job in jobs {
        for (bar, prefix) in [
            (
                by_similarity
                    .entry(job.similarity.label.clone())
                    .or_insert_with(|| bars.add(ProgressBar::new(0))),
                format!("model {}", job.similarity.label),
            ),
            (
                by_suite
                    .entry(job.suite.as_str())
                    .or_insert_with(|| bars.add(ProgressBar::new(0))),
                format!("suite {}", job.suite),
            ),
        ] {
            bar.set_style(bar_style());
            bar.set_prefix(prefix);
            bar.inc_length(1);
        }
    }
    let mut outcomes = Vec::new();
    // estimated spend of this run on remote models, against remote.max_cost_usd
    let mut spent = 0.0;
    for (i, job) in jobs.iter().enumerate() {
        let path = job.result_path(out);
        let name = format!("{} {}/{}", job.similarity.label, job.suite, job.task);
        let bar_s = &by_similarity[&job.similarity.label];
        let bar_t = &by_suite[job.suite.as_str()];
        bar_s.set_message(format!("{}/{}", job.suite, job.task));
        bar_t.set_message(job.similarity.label.clone());
        let start = Instant::now();
        let ceiling = context
            .max_cost_usd
            .filter(|_| is_remote(&job.similarity.spec));
        let within_budget = match ceiling {
            _ if path.exists() && !overwrite => Ok(()),
            None => Ok(()),
            Some(ceiling) => match planned_cost(job, sage, context) {
                Ok(cost) if spent + cost <= ceiling => Ok(()),
                Ok(cost) => Err(format!(
                    "not started: estimated ${cost:.4} would take this run's remote spend from ${spent:.4} past remote.max_cost_usd = ${ceiling}"
                )),
                Err(e) => Err(format!("not started: {}", sage_core::said_once(e.as_ref()))),
            },
        };
        let status = if path.exists() && !overwrite {
            "kept"
        } else if let Err(why) = within_budget {
            bars.suspend(|| eprintln!("bench-all: {name}: {why}"));
            "over budget"
        } else {
            match run_job(job, sage, &path, context) {
                Ok(()) => {
                    spent += recorded_cost(&path);
                    "done"
                }
                Err(e) => {
                    bars.suspend(|| {
                        eprintln!("bench-all: {name}: {}", sage_core::said_once(e.as_ref()))
                    });
                    "failed"
                }
            }
        };
        let seconds = start.elapsed().as_secs_f64();
        if !interactive {
            eprintln!(
                "bench-all: [{}/{}] {name}: {status} ({seconds:.1} s)",
                i + 1,
                jobs.len()
            );
        }
        bar_s.inc(1);
        bar_t.inc(1);
        outcomes.push(Outcome {
            label: job.similarity.label.clone(),
            suite: job.suite.clone(),
            task: job.task.clone(),
            status,
            seconds,
        });
    }
    for bar in by_similarity.values().chain(by_suite.values()) {
        bar.finish();
    }
    outcomes
}

/// Removes the temporary files a killed run left in the results tree: `NAME.<pid>.partial` and
/// `NAME.<pid>.tmp` (bench-all's), `NAME.tmp-<pid>` and `.NAME.<pid>.tmp` (sage's), whose process
/// is gone. Only on Linux, where /proc tells which processes live; elsewhere they stay, and
/// nothing reads them. Returns how many were removed.
fn sweep_stale_temporaries(out: &Path) -> usize {
    fn pid_of(name: &str) -> Option<u32> {
        if let Some((_, pid)) = name.rsplit_once(".tmp-") {
            return pid.parse().ok();
        }
        let stem = name
            .strip_suffix(".partial")
            .or_else(|| name.strip_suffix(".tmp"))?;
        stem.rsplit_once('.')?.1.parse().ok()
    }
    let proc = Path::new("/proc");
    if !proc.join("self").exists() {
        return 0;
    }
    let mut removed = 0;
    let mut stack = vec![out.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
                continue;
            }
            let name = entry.file_name();
            let Some(pid) = name.to_str().and_then(pid_of) else {
                continue;
            };
            if !process_lives(proc, pid) && std::fs::remove_file(&path).is_ok() {
                removed += 1;
            }
        }
    }
    removed
}

/// Whether process `pid` can still write a file: `/proc/<pid>` exists for it, and it is not a
/// zombie (a killed `sage` whose parent died too stays one until an init reaps it, and a
/// container's init may never do so) nor a thread of another process (`/proc/<tid>` resolves
/// too, and threads share the pid numbers).
fn process_lives(proc: &Path, pid: u32) -> bool {
    let Ok(status) = std::fs::read_to_string(proc.join(pid.to_string()).join("status")) else {
        return false;
    };
    let field = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .map(str::trim)
    };
    let leader = field("Tgid:").and_then(|t| t.parse::<u32>().ok()) == Some(pid);
    let dead = field("State:").is_some_and(|s| s.starts_with('Z') || s.starts_with('X'));
    leader && !dead
}

/// Runs one job and writes its result file atomically; nothing is written on failure.
fn run_job(job: &Job, sage: &Path, path: &Path, context: &RunContext) -> Result<()> {
    let dir = path.parent().expect("a result path has a folder");
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    // per process: a killed run's orphaned `sage` cannot collide with the re-run's
    let report_path = path.with_extension(format!("report.{}.partial", std::process::id()));
    let start = Instant::now();
    let output = Command::new(sage)
        .args(&job.args)
        .args(context.price_args(&job.similarity.spec))
        .args(context.cache_args(job))
        .arg("--output")
        .arg(&report_path)
        .output()
        .with_context(|| format!("running {}", sage.display()))?;
    let wall_seconds = start.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        let _ = std::fs::remove_file(&report_path);
        bail!(
            "sage {} failed: {}",
            job.args.join(" "),
            stderr.trim().lines().last().unwrap_or("no message")
        );
    }
    let report: Value = serde_json::from_slice(
        &std::fs::read(&report_path)
            .with_context(|| format!("{}: cannot read", report_path.display()))?,
    )
    .with_context(|| format!("{}: not JSON", report_path.display()))?;
    let _ = std::fs::remove_file(&report_path);
    let notes: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("sage: note: "))
        .collect();
    let datasets = sage_core::row_selections(&report);
    let envelope = ResultEnvelope {
        schema: RESULT_SCHEMA.to_owned(),
        harness_version: env!("CARGO_PKG_VERSION").to_owned(),
        similarity: SimilarityRecord {
            name: job.similarity.label.clone(),
            spec: redact_url(&job.similarity.spec),
            kind: if job.similarity.is_model {
                SimilarityKind::Model
            } else {
                SimilarityKind::Metric
            },
        },
        suite: job.suite.to_owned(),
        task: job.task.clone(),
        seed: context.seed,
        quick: context.quick,
        parameters: Parameters {
            sage_args: job
                .args
                .iter()
                .map(|a| sage_core::redact::home_relative(&redact_url(a)))
                .collect(),
            data_dir: sage_core::redact::home_relative(&context.data_dir.display().to_string()),
        },
        datasets,
        notes: notes.into_iter().map(str::to_owned).collect(),
        score: report.get("score").and_then(Value::as_f64),
        report,
        run: RunRecord {
            timestamp: sage_core::utc_timestamp(),
            git_revision: context.revision.clone(),
            host: context.host.clone(),
            wall_seconds,
        },
    };
    write_atomically(path, &serde_json::to_vec_pretty(&envelope)?)
}

fn print_timing_table(outcomes: &[Outcome]) {
    let width = outcomes
        .iter()
        .map(|o| o.label.len())
        .max()
        .unwrap_or(10)
        .max(10);
    eprintln!(
        "\n{:<width$}  {:<22} {:>7} {:>10}",
        "similarity", "suite/task", "status", "seconds"
    );
    let mut total = 0.0;
    for o in outcomes {
        total += o.seconds;
        eprintln!(
            "{:<width$}  {:<22} {:>7} {:>10.1}",
            o.label,
            format!("{}/{}", o.suite, o.task),
            o.status,
            o.seconds
        );
    }
    eprintln!("{:<width$}  {:<22} {:>7} {:>10.1}", "total", "", "", total);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_default_parses_and_quick_shrinks_it() {
        let config = Config::parse(DEFAULT_CONFIG, "bench.toml").unwrap();
        assert_eq!(
            config.similarities.metrics,
            ["levenshtein", "rouge", "jaccard", "bm25"]
        );
        assert_eq!(config.sage.tasks, SAGE_TASKS);
        let quick = Config::parse(DEFAULT_CONFIG, "bench.toml").unwrap().quick();
        assert!(quick.sage.cluster_max_texts < config.sage.cluster_max_texts);
        assert!(quick.sage.max_rows > 0);
        // a suite's quick options replace its options of the same name, and keep the rest
        let noise = |c: &Config| c.suites["noise"].options.clone();
        assert_eq!(noise(&config)["max_queries"], 100);
        assert_eq!(noise(&quick)["max_queries"], 10);
        assert_eq!(noise(&quick)["lengths"], serde_json::json!([256]));
        assert_eq!(noise(&quick)["max_rows"], 30);
    }

    #[test]
    fn bad_configurations_name_the_file_and_the_field() {
        let error = |text: &str| format!("{:#}", Config::parse(text, "my.toml").unwrap_err());
        // the top-level message alone names the file and the bad value
        let e = Config::parse(&DEFAULT_CONFIG.replace("\"bm25\"]", "\"bm42\"]"), "my.toml")
            .unwrap()
            .check_against(&shipped_metrics(), &shipped_suites())
            .unwrap_err()
            .to_string();
        assert!(e.contains("my.toml") && e.contains("bm42"), "{e}");
        let e = Config::parse(
            &format!("{DEFAULT_CONFIG}\n[suites.nope]\nenabled = true\n"),
            "my.toml",
        )
        .unwrap()
        .check_against(&shipped_metrics(), &shipped_suites())
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("my.toml: suites.nope") && e.contains("align-sim"),
            "{e}"
        );
        let e = error(&format!(
            "{DEFAULT_CONFIG}\n[suites.robustness]\nenabled = false\n"
        ));
        assert!(
            e.contains("suites.robustness") && e.contains("[sage]"),
            "{e}"
        );
        let e = error(&DEFAULT_CONFIG.replace("seed = 1337", "seed = \"x\""));
        assert!(e.contains("my.toml") && e.contains("seed"), "{e}");
        let e = error(&DEFAULT_CONFIG.replace("[remote]\n", "[remote]\nsurprise = 1\n"));
        assert!(e.contains("surprise"), "{e}");
        let e = error(
            &DEFAULT_CONFIG.replace("[remote.prices]\n", "[remote.prices]\n\"x\" = \"cheap\"\n"),
        );
        assert!(e.contains("remote.prices") || e.contains("cheap"), "{e}");
        let e = error(&DEFAULT_CONFIG.replace("[pteb]\n", "[pteb]\nllm_attention = \"pool\"\n"));
        assert!(
            e.contains("my.toml") && e.contains("pool") && e.contains("per-request"),
            "{e}"
        );
        let e = error(
            &DEFAULT_CONFIG.replace("datasets = {}", "datasets = { retrieval = [\"scifact\"] }"),
        );
        assert!(
            e.contains("sage.datasets.retrieval") && e.contains("name/split"),
            "{e}"
        );
    }

    #[test]
    fn pteb_runs_after_every_other_suite() {
        let mut config = Config::parse(DEFAULT_CONFIG, "bench.toml").unwrap();
        // a paraphraser and a reference encoder given as paths that exist
        let llm = tempfile::tempdir().unwrap();
        config.pteb.paraphraser = llm.path().display().to_string();
        let similarities = test_similarities(&["bm25", "model-a", "model-b"]);
        let mut skipped = Vec::new();
        config.pteb.quality.encoder = llm.path().join("missing-encoder").display().to_string();
        let jobs = plan(
            &config,
            &shipped_suites(),
            &similarities,
            Path::new("data"),
            &mut skipped,
        );
        assert!(jobs.iter().all(|j| j.suite != "pteb"));
        assert!(
            skipped
                .iter()
                .any(|s| s.suite == "pteb" && s.reason.contains("reference encoder")),
            "{skipped:?}"
        );
        config.pteb.quality.encoder = llm.path().display().to_string();
        skipped.clear();
        let jobs = plan(
            &config,
            &shipped_suites(),
            &similarities,
            Path::new("data"),
            &mut skipped,
        );
        let first_pteb = jobs.iter().position(|j| j.suite == "pteb").unwrap();
        assert!(jobs[first_pteb..].iter().all(|j| j.suite == "pteb"));
        assert_eq!(jobs.len() - first_pteb, 2, "one PTEB job per model");
        // the rest keeps its order: similarity by similarity
        assert_eq!(jobs[0].similarity.spec, "bm25");
        assert_eq!(jobs[first_pteb - 1].similarity.spec, "model-b");
        // the paraphraser's settings are left to `sage` unless the configuration sets them
        assert!(!jobs[first_pteb]
            .args
            .iter()
            .any(|a| a.starts_with("--llm-")));
        config.pteb.llm_batch = 128;
        config.pteb.llm_lanes = 3;
        config.pteb.llm_attention = Some(LlmAttention::PerRequest);
        let jobs = plan(
            &config,
            &shipped_suites(),
            &similarities,
            Path::new("data"),
            &mut skipped,
        );
        let args = jobs.last().unwrap().args.join(" ");
        assert!(
            args.contains("--llm-batch 128 --llm-lanes 3 --llm-attention per-request"),
            "{args}"
        );
        // bench.toml's gate reaches `sage`, each threshold as its flag
        assert!(
            args.contains("--min-reference-cosine 0.78 --low-cosine 0.66 --max-share-below 0.2"),
            "{args}"
        );
        assert!(!args.contains("--pool-unqualified"));
        config.pteb.quality.pool_unqualified = true;
        let jobs = plan(
            &config,
            &shipped_suites(),
            &similarities,
            Path::new("data"),
            &mut skipped,
        );
        assert!(jobs
            .last()
            .unwrap()
            .args
            .contains(&"--pool-unqualified".to_owned()));
    }

    #[test]
    fn static_models_sort_before_transformers() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path();
        let transformer = root.join("bert");
        let glove = root.join("glove");
        std::fs::create_dir_all(&transformer).unwrap();
        std::fs::create_dir_all(&glove).unwrap();
        std::fs::write(transformer.join("model.safetensors"), [0u8; 100]).unwrap();
        std::fs::write(glove.join("glove.txt"), [0u8; 1000]).unwrap();
        assert_eq!(transformer_bytes(&transformer), 100);
        assert_eq!(transformer_bytes(&glove), 0);
        assert_eq!(transformer_bytes(&root.join("missing")), 0);
    }

    /// `sage suites` of the shipped registry, as far as planning reads it.
    /// What `sage suites` lists: the suites with their own sections, then those planned from
    /// `[suites.<name>]` (noise).
    fn shipped_suites() -> Vec<ListedSuite> {
        CONFIGURED_SUITES
            .iter()
            .chain(&["noise"])
            .map(|&name| ListedSuite {
                name: name.into(),
                takes_metrics: !matches!(name, "evalrank" | "pteb"),
                result_suite: name.into(),
                result_task: name.into(),
            })
            .collect()
    }

    fn shipped_metrics() -> Vec<String> {
        ["levenshtein", "rouge", "jaccard", "bm25"]
            .map(String::from)
            .to_vec()
    }

    /// A suite `sage suites` lists beyond the shipped ones runs on every similarity it takes,
    /// with `[suites.<name>]`'s datasets and options, into the result file the listing names;
    /// `enabled = false` leaves it out.
    #[test]
    fn a_listed_suite_beyond_the_shipped_ones_is_planned_from_its_table() {
        let toy = |takes_metrics| ListedSuite {
            name: "toy".into(),
            takes_metrics,
            result_suite: "toys".into(),
            result_task: "letters".into(),
        };
        let text = format!(
            "{DEFAULT_CONFIG}\n[suites.toy]\ndatasets = [\"stsb/test\"]\noptions = {{ width = 2, label = \"x\" }}\n"
        );
        let config = Config::parse(&text, "toy.toml").unwrap();
        let similarities = test_similarities(&["bm25", "model-a"]);
        let mut suites = shipped_suites();
        suites.push(toy(true));
        config.check_against(&shipped_metrics(), &suites).unwrap();
        let plan_of = |config: &Config, suites: &[ListedSuite], skipped: &mut Vec<Skipped>| {
            plan(config, suites, &similarities, Path::new("data"), skipped)
        };
        let mut skipped = Vec::new();
        let jobs = plan_of(&config, &suites, &mut skipped);
        let toys: Vec<&Job> = jobs.iter().filter(|j| j.suite == "toys").collect();
        assert_eq!(toys.len(), 2);
        assert_eq!(toys[0].id(), "bm25/toys/letters");
        assert_eq!(
            toys[0].args.join(" "),
            "run toy --similarity bm25 --seed 1337 --data-dir data --dataset stsb/test \
             --options {\"label\":\"x\",\"width\":2}"
        );
        assert!(toys[1].args.contains(&"--batch-tokens".to_owned()));

        // a suite of vectors skips the metric, saying why
        suites.pop();
        suites.push(toy(false));
        let mut skipped = Vec::new();
        let jobs = plan_of(&config, &suites, &mut skipped);
        let toys: Vec<String> = jobs
            .iter()
            .filter(|j| j.suite == "toys")
            .map(Job::id)
            .collect();
        assert_eq!(toys, ["model-a/toys/letters"]);
        assert!(skipped
            .iter()
            .any(|s| s.similarity == "bm25" && s.suite == "toys" && s.reason.contains("toy")));

        let off = Config::parse(
            &format!("{DEFAULT_CONFIG}\n[suites.toy]\nenabled = false\n"),
            "off.toml",
        )
        .unwrap();
        let jobs = plan_of(&off, &suites, &mut Vec::new());
        assert!(jobs.iter().all(|j| j.suite != "toys"));
    }

    /// `[datasets.<name>]` tables reach every job that names datasets as `--datasets FILE` (sage
    /// reads the tables, relative to the file); a job that names none, and a configuration
    /// without tables, get nothing.
    #[test]
    fn user_dataset_tables_go_to_the_jobs_that_name_datasets() {
        let text = DEFAULT_CONFIG.replace(
            "datasets = {}",
            "datasets = { retrieval = [\"mybeir/test\"] }",
        ) + "\n[datasets.mybeir]\npath = \"data/mybeir\"\n";
        let config = Config {
            file: Some(PathBuf::from("/configs/mine.toml")),
            ..Config::parse(&text, "mine.toml").unwrap()
        };
        let similarities = test_similarities(&["bm25"]);
        let jobs = plan(
            &config,
            &shipped_suites(),
            &similarities,
            Path::new("data"),
            &mut Vec::new(),
        );
        let retrieval = jobs.iter().find(|j| j.task == "retrieval").unwrap();
        let args = retrieval.args.join(" ");
        assert!(
            args.contains("--dataset mybeir/test")
                && args.ends_with("--datasets /configs/mine.toml"),
            "{args}"
        );
        let robustness = jobs.iter().find(|j| j.task == "robustness").unwrap();
        assert!(!robustness.args.contains(&"--datasets".to_owned()));
        // a bare name is still refused before anything runs
        let e = Config::parse(
            &DEFAULT_CONFIG.replace("datasets = {}", "datasets = { retrieval = [\"mybeir\"] }"),
            "bad.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("sage.datasets.retrieval"), "{e}");
    }

    /// Similarities by spec; those named `model...` are models.
    fn test_similarities(specs: &[&str]) -> Vec<Similarity> {
        specs
            .iter()
            .map(|&spec| Similarity {
                label: spec.into(),
                spec: spec.into(),
                is_model: spec.starts_with("model"),
            })
            .collect()
    }

    fn test_context(prices: BTreeMap<String, f64>) -> RunContext {
        RunContext {
            revision: None,
            host: sage_core::Host::detect(),
            seed: 1,
            data_dir: PathBuf::new(),
            quick: false,
            max_cost_usd: None,
            prices,
            caches: None,
        }
    }

    /// A shard's model jobs write their own cache files and read the others'; metric jobs touch
    /// no cache; an unsharded run passes nothing (sage's default cache). None of it is in the
    /// recorded arguments.
    #[test]
    fn shard_cache_flags_go_to_model_jobs_only() {
        let mut config = Config::parse(DEFAULT_CONFIG, "bench.toml").unwrap();
        let llm = tempfile::tempdir().unwrap();
        config.pteb.paraphraser = llm.path().display().to_string();
        let similarities = test_similarities(&["bm25", "model-a"]);
        let jobs = plan(
            &config,
            &shipped_suites(),
            &similarities,
            Path::new("data"),
            &mut Vec::new(),
        );
        let mut context = test_context(BTreeMap::new());
        assert!(jobs.iter().all(|j| context.cache_args(j).is_empty()));
        context.caches = Some((Shard { index: 2, count: 3 }, PathBuf::from("/c")));
        for job in &jobs {
            let args = context.cache_args(job).join(" ");
            match (job.similarity.is_model, job.suite.as_str()) {
                (false, _) => assert!(args.is_empty(), "{args}"),
                (true, "pteb") => assert_eq!(
                    args,
                    "--cache /c/embeddings.shard-2.redb --read-caches /c \
                     --paraphrase-cache /c/paraphrases.shard-2.redb --read-paraphrase-caches /c"
                ),
                (true, _) => {
                    assert_eq!(args, "--cache /c/embeddings.shard-2.redb --read-caches /c")
                }
            }
            assert!(!job.args.iter().any(|a| a.contains("shard")));
        }
    }

    #[test]
    fn remote_labels_and_result_specs_hold_no_url_or_password() {
        let spec = "openai:BAAI/bge-small@http://u:pw@127.0.0.1:7997/v1";
        assert!(is_remote(spec));
        assert_eq!(sage_core::result_label(spec), "openai:BAAI--bge-small");
        assert_eq!(remote_name(spec), "openai:BAAI/bge-small");
        assert_eq!(
            sage_core::result_label("cohere:embed-v4.0"),
            "cohere:embed-v4.0"
        );
        assert!(!redact_url(spec).contains("pw"));
        let context = test_context([("cohere:embed-v4.0".to_owned(), 0.5)].into());
        assert_eq!(context.price_args("cohere:embed-v4.0"), ["--price", "0.5"]);
        assert!(context.price_args("all-MiniLM-L6-v2").is_empty());
    }

    /// A zombie (killed, never reaped: its parent died too and the container's init does not
    /// reap) and a thread of a living process are no writers: their numbers' temporaries go.
    #[test]
    fn temporaries_of_a_zombie_or_of_a_threads_number_are_swept() {
        let proc = Path::new("/proc");
        if !proc.join("self").exists() {
            sage_core::test_support::skip(
                "temporaries_of_a_zombie_or_of_a_threads_number_are_swept",
                "no /proc here: the sweep keeps every temporary",
            );
            return;
        }
        // never waited for until the sweep is done: a zombie once it exits
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let zombie = child.id();
        let status = proc.join(zombie.to_string()).join("status");
        let since = std::time::Instant::now();
        while !std::fs::read_to_string(&status)
            .unwrap()
            .lines()
            .any(|l| l.starts_with("State:") && l.contains('Z'))
        {
            assert!(since.elapsed().as_secs() < 30, "{zombie} never exited");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let (stop, parked) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || parked.recv());
        let pid = std::process::id();
        let tid: u32 = std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|e| e.unwrap().file_name().to_str()?.parse().ok())
            .find(|&t| t != pid)
            .expect("the parked thread is listed");
        assert!(proc.join(tid.to_string()).exists());

        let out = tempfile::tempdir().unwrap();
        for name in [
            format!("robustness.report.{zombie}.partial"),
            format!("robustness.report.{pid}.partial.tmp-{tid}"),
            format!("clustering.report.{pid}.partial"),
        ] {
            std::fs::write(out.path().join(name), b"x").unwrap();
        }
        assert_eq!(sweep_stale_temporaries(out.path()), 2);
        assert!(out
            .path()
            .join(format!("clustering.report.{pid}.partial"))
            .exists());
        child.wait().unwrap();
        stop.send(()).unwrap();
        thread.join().unwrap().unwrap();
    }

    #[test]
    fn a_killed_runs_temporaries_are_swept_and_a_living_ones_kept() {
        let out = tempfile::tempdir().unwrap();
        let dir = out.path().join("bm25/sage");
        std::fs::create_dir_all(&dir).unwrap();
        // pid 2^22 + 1 is past Linux's pid_max: never a living process
        let dead = 4_194_305;
        let alive = std::process::id();
        let names = [
            format!("robustness.report.{dead}.partial"),
            format!("robustness.json.{dead}.tmp"),
            format!("robustness.report.tmp-{dead}"),
            format!(".report.md.{dead}.tmp"),
            format!("clustering.report.{alive}.partial"),
            "robustness.json".to_owned(),
            "notes.tmp".to_owned(),
        ];
        for name in &names {
            std::fs::write(dir.join(name), b"x").unwrap();
        }
        assert_eq!(sweep_stale_temporaries(out.path()), 4);
        let mut left: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                format!("clustering.report.{alive}.partial"),
                "notes.tmp".to_owned(),
                "robustness.json".to_owned()
            ]
        );
    }
}
