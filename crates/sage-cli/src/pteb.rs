//! `sage run pteb`: PTEB with a local GGUF or an OpenAI-compatible paraphraser.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use pteb::{Judge, ParaphraseCache, Paraphraser, PtebReport};
use sage_suites::{PtebOptions, PtebRun};
use serde::Serialize;

use crate::embed::ModelArgs;
use crate::output::Output;
use crate::remote::Loaded;

/// The arguments of `sage run pteb` beyond its options, whose flags come from PTEB's options
/// declaration ([`PtebOptions`]) like every suite's.
#[derive(Debug, clap::Args)]
pub struct PtebArgs {
    /// The encoder evaluated (the same as --model; every suite names what it evaluates with
    /// --similarity). With --compare, the baseline.
    #[arg(long, conflicts_with = "model")]
    similarity: Option<String>,
    #[command(flatten)]
    model: ModelArgs,
    /// More encoders, each compared with --similarity (the baseline) on the paraphrased scores:
    /// Hodges-Lehmann shift, bootstrap CI, Wilcoxon p, Holm-corrected.
    #[arg(long = "compare")]
    compare: Vec<String>,
    /// Seed of run 0 (also sampling and bootstrap).
    #[arg(long, default_value_t = pteb::Options::default().seed)]
    seed: u64,
    /// Datasets as name/split (default: the paper's datasets that are local, in the languages
    /// `--languages` keeps).
    #[arg(long = "dataset")]
    datasets: Vec<String>,
    #[command(flatten)]
    data: DataArgs,
    /// Write the result file here (atomically): the report inside the envelope that bench-all
    /// writes and `sage report` reads (rows used, notes, seed, host). Without it, the report
    /// alone goes to standard output.
    #[arg(long)]
    output: Option<PathBuf>,
    #[command(flatten)]
    options: crate::suite_options::OptionArgs,
    /// Also write each model's original-condition scores as MTEB result files into the MTEB
    /// result cache DIR (`DIR/results/<owner>__<model>/<revision>/<Task>.json` and
    /// `model_meta.json`): `mteb.ResultCache(DIR).load_results()` reads them.
    #[arg(long, value_name = "DIR")]
    mteb_output: Option<PathBuf>,
}

/// Where PTEB's datasets are: the data root and the user's own tables.
#[derive(Debug, clap::Args)]
pub struct DataArgs {
    /// Data root (default: $SAGE_DATA_DIR).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    #[command(flatten)]
    user: crate::data::UserDataArgs,
}

impl DataArgs {
    /// The data root (--data-dir or $SAGE_DATA_DIR, with the user's tables) and `datasets` read.
    fn resolve(&self, datasets: &[String]) -> Result<(sage_data::DataRoot, Vec<(String, String)>)> {
        crate::data::resolve(self.data_dir.clone(), &self.user, datasets)
    }
}

/// The paraphrase cache these options name, unless they turn it off.
fn paraphrase_cache(options: &PtebOptions) -> Result<Option<Arc<ParaphraseCache>>> {
    Ok(ParaphraseCache::for_run(
        options.no_paraphrase_cache,
        options.paraphrase_cache.as_deref(),
        options.read_paraphrase_caches.as_deref(),
    )?)
}

/// The reference encoder, with its own defaults: the user's pooling or truncation of the
/// encoder under test must not change the yardstick. Kept in `loaded` for its usage.
fn reference_encoder(
    spec: &str,
    cuda: bool,
    remote: &crate::remote::RemoteArgs,
    loaded: &mut Loaded,
) -> Result<Arc<dyn sage_core::Embedder>> {
    let options = sage_embed::LoadOptions {
        transformer: sage_embed::TransformerOptions {
            cuda,
            ..sage_embed::TransformerOptions::default()
        },
        remote: remote.options()?,
        ..sage_embed::LoadOptions::from_env()
    };
    let model = sage_embed::load(spec, &options).with_context(|| {
        format!(
            "loading the reference encoder {spec:?} of the paraphrase-quality record (fetch \
             it, or name another with --quality-encoder)"
        )
    })?;
    Ok(loaded.keep(model))
}

/// Progress lines on stderr: each dataset, and paraphrasing every tenth of a run.
struct StderrProgress {
    current: std::sync::Mutex<String>,
    last_tenth: AtomicU64,
    runs: usize,
}

impl pteb::Progress for StderrProgress {
    fn dataset(&self, name: &str, index: usize, total: usize) {
        eprintln!("sage: pteb: {name} ({}/{total})", index + 1);
        *self.current.lock().unwrap_or_else(|p| p.into_inner()) = name.to_owned();
        self.last_tenth.store(u64::MAX, Ordering::Relaxed);
    }
    fn paraphrased(&self, run: usize, done: u64, total: u64) {
        if let Some(name) = self.new_tenth(done, total) {
            eprintln!(
                "sage: pteb: {name} run {}/{}: {done}/{total} texts paraphrased",
                run + 1,
                self.runs
            );
        }
    }
    fn judged(&self, done: u64, total: u64) {
        // restarts the tenths the paraphrasing of this dataset left at 10
        if done == 1 {
            self.last_tenth.store(u64::MAX, Ordering::Relaxed);
        }
        if let Some(name) = self.new_tenth(done, total) {
            eprintln!("sage: pteb: {name}: {done}/{total} pairs rated by the judge");
        }
    }
}

impl StderrProgress {
    /// Progress of an evaluation of `runs` paraphrase runs per dataset.
    fn new(runs: usize) -> StderrProgress {
        StderrProgress {
            current: Default::default(),
            last_tenth: AtomicU64::new(u64::MAX),
            runs,
        }
    }

    /// The current dataset's name when `done` of `total` starts a new tenth (a line is due).
    fn new_tenth(&self, done: u64, total: u64) -> Option<String> {
        let tenth = done * 10 / total.max(1);
        (self.last_tenth.swap(tenth, Ordering::Relaxed) != tenth).then(|| {
            self.current
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone()
        })
    }
}

#[derive(Serialize)]
struct Compared<'a> {
    suite: &'static str,
    baseline: &'a PtebReport,
    others: &'a [PtebReport],
    comparisons: Vec<pteb::Comparison>,
}

impl sage_core::SuiteReport for Compared<'_> {
    fn score(&self) -> Option<f64> {
        None
    }
    /// The baseline's rows, then each other encoder's (the same rows, unless a run differed).
    fn rows_used(&self) -> Vec<sage_core::RowsUsed> {
        std::iter::once(self.baseline)
            .chain(self.others)
            .flat_map(sage_core::SuiteReport::rows_used)
            .collect()
    }
}

impl PtebArgs {
    /// The suite's options: `--options` and `--option`, then each flag given, under the option
    /// of the one declaration ([`PtebOptions`]) that bench.toml and Python keywords fill too.
    fn options(
        &self,
        registry: &sage_suites::Registry,
        given: &clap::ArgMatches,
    ) -> Result<PtebOptions> {
        let declared = registry.find("pteb")?.options();
        let options = crate::suite_options::options_from(&declared, given, &self.options)?;
        Ok(PtebOptions::read(&options)?)
    }
}

/// `sage run pteb`: the registered suite's run ([`PtebRun`], loaded once) over the baseline and
/// every `--compare` encoder, with progress on stderr, the comparison and MTEB result files.
pub fn run(
    args: PtebArgs,
    registry: &sage_suites::Registry,
    given: &clap::ArgMatches,
) -> Result<()> {
    let Some(baseline_spec) = args.similarity.clone().or_else(|| args.model.model.clone()) else {
        bail!("give --similarity (the encoder; with --compare, the baseline)")
    };
    // before any LLM is loaded: PTEB's tasks embed texts, a metric has no vectors
    for spec in std::iter::once(&baseline_spec).chain(&args.compare) {
        if registry.metric(spec).is_ok() {
            bail!("pteb: {spec} is a classical metric; PTEB's tasks embed texts: give a model");
        }
    }
    let options = args.options(registry, given)?;
    let (root, datasets) = args.data.resolve(&args.datasets)?;
    let request = sage_suites::Request {
        datasets,
        seed: sage_core::RunSeed(args.seed),
        ..sage_suites::Request::new(&root)
    };
    let mut notes = Vec::new();
    let datasets = PtebRun::datasets(&request, &mut notes)?;
    // every model's usage, the compared encoders' kept after they are let go of
    let loaded = std::cell::RefCell::new(Loaded::default());
    let run = PtebRun::new(&options, request.seed, |o| {
        reference_encoder(
            &o.quality_encoder,
            o.cuda,
            &args.model.remote,
            &mut loaded.borrow_mut(),
        )
        .map_err(|e| sage_suites::SuiteError::Run {
            suite: "pteb",
            source: e.into(),
        })
    })?;
    let progress = StderrProgress::new(options.runs);
    let evaluate = |spec: &str| -> Result<PtebReport> {
        let mut encoder_loaded = Loaded::default();
        let encoder = args.model.load(spec, &mut encoder_loaded)?;
        let report = run
            .evaluate(encoder.as_ref(), &root, &datasets, &progress)
            .with_context(|| format!("PTEB with {spec}"))?;
        eprintln!(
            "sage: pteb: {spec}: {} fallbacks over {} datasets x {} runs",
            report.fallbacks,
            report.datasets.len(),
            run.options().runs
        );
        if let Some(dir) = &args.mteb_output {
            let written = pteb::mteb::write_original_scores(dir, &report)?;
            eprintln!(
                "sage: pteb: {} MTEB result files for {} under {}",
                written.len(),
                report.encoder.model_id,
                dir.display()
            );
        }
        drop(encoder);
        loaded.borrow_mut().absorb(encoder_loaded);
        Ok(report)
    };
    let out = Output::create(args.output.clone())?;
    let start = std::time::Instant::now();
    let baseline = evaluate(&baseline_spec)?;
    // the gate judges the paraphrases, not the encoder: the baseline's verdicts are every one's
    notes.extend(PtebRun::report_notes(&baseline));
    for note in &notes {
        eprintln!("sage: note: pteb: {}", sage_core::printable(note));
    }
    if !options.pool_unqualified && !baseline.unqualified.is_empty() {
        eprintln!("sage: pteb: datasets whose paraphraser is not qualified are left out of the pooled statistics and the comparisons (--pool-unqualified keeps them)");
    }
    let outcome = if args.compare.is_empty() {
        sage_suites::Outcome::of("pteb", &baseline, notes)?
    } else {
        let others: Vec<PtebReport> = args
            .compare
            .iter()
            .map(|spec| evaluate(spec))
            .collect::<Result<_>>()?;
        let refs: Vec<&PtebReport> = others.iter().collect();
        let comparisons = pteb::compare(&baseline, &refs, request.seed)?;
        let compared = Compared {
            suite: "pteb",
            baseline: &baseline,
            others: &others,
            comparisons,
        };
        sage_suites::Outcome::of("pteb", &compared, notes)?
    };
    let record =
        sage_core::SimilarityRecord::of_spec(&baseline_spec, sage_core::SimilarityKind::Model);
    let file = args
        .output
        .is_some()
        .then_some(crate::result_file::ResultFile {
            suite: "pteb",
            request: &request,
            similarity: record,
            start,
        });
    let loaded = loaded.into_inner();
    crate::result_file::write_result(out, outcome, &loaded, registry, file)
}

/// The arguments of `sage pteb qualify` beyond the PTEB options it takes ([`QUALIFY_OPTIONS`]),
/// whose flags come from PTEB's options declaration.
#[derive(Debug, clap::Args)]
pub struct QualifyArgs {
    /// A candidate paraphraser (same forms as `sage run pteb --paraphraser`); repeat for more.
    #[arg(long = "paraphraser")]
    paraphrasers: Vec<String>,
    /// A candidate judge (same forms); repeat for more. The one that agrees best with the STS
    /// gold scores rates the paraphrases.
    #[arg(long = "judge")]
    judges: Vec<String>,
    /// Datasets as name/split (default: the paper's STS datasets that are local).
    #[arg(long = "dataset")]
    datasets: Vec<String>,
    #[command(flatten)]
    data: DataArgs,
    /// Rows sampled per dataset.
    #[arg(long, default_value_t = 25)]
    max_rows: usize,
    /// The paraphrasing seed (also the sampling seed).
    #[arg(long, default_value_t = pteb::Options::default().seed)]
    seed: u64,
    #[command(flatten)]
    remote: crate::remote::RemoteArgs,
    #[command(flatten)]
    options: crate::suite_options::OptionArgs,
    /// Also write the figures as JSON here (atomically).
    #[arg(long)]
    output: Option<PathBuf>,
}

/// The PTEB options `sage pteb qualify` takes as flags: the LLM settings, the quality gate and
/// its reference encoder, the judge's pairs, the paraphrase cache and the device.
pub(crate) fn qualify_options(registry: &sage_suites::Registry) -> Vec<sage_core::OptionInfo> {
    let takes = |key: &str| {
        key.starts_with("llm.")
            || key.starts_with("gate.")
            || [
                "quality_encoder",
                "judge_pairs",
                "paraphrase_cache",
                "no_paraphrase_cache",
                "read_paraphrase_caches",
                "cuda",
            ]
            .contains(&key)
    };
    registry
        .find("pteb")
        .map(|pteb| pteb.options())
        .unwrap_or_default()
        .into_iter()
        .filter(|o| takes(&o.key))
        .collect()
}

/// `sage pteb qualify`: the selection table on stdout, the figures as JSON with --output.
pub fn qualify(
    args: QualifyArgs,
    registry: &sage_suites::Registry,
    given: &clap::ArgMatches,
) -> Result<()> {
    if args.paraphrasers.is_empty() && args.judges.is_empty() {
        bail!("give at least one --paraphraser or --judge to qualify");
    }
    // PTEB's options, ranges checked, without the paraphraser a run requires: the candidates
    // are the paraphrasers here
    let options =
        crate::suite_options::options_from(&qualify_options(registry), given, &args.options)?;
    let value = serde_json::Value::Object(options);
    let options: PtebOptions =
        serde_json::from_value(value.clone()).context("pteb qualify: options")?;
    sage_core::check_fields(<PtebOptions as sage_core::SuiteOptions>::FIELDS, &value)
        .context("pteb qualify: options")?;
    let (root, datasets) = args.data.resolve(&args.datasets)?;
    let datasets: Vec<(String, String)> = if args.datasets.is_empty() {
        crate::data::local_defaults(&root, "pteb", &pteb::DEFAULT_DATASETS)?
            .0
            .into_iter()
            .filter(|(name, _)| root.kind(name).ok() == Some(sage_data::DatasetKind::StsPairs))
            .map(|(n, s)| (n.to_owned(), s.to_owned()))
            .collect()
    } else {
        datasets
    };
    if datasets.is_empty() {
        bail!("no STS dataset in the data mirror: name datasets with --dataset");
    }
    let refs: Vec<(&str, &str)> = datasets
        .iter()
        .map(|(n, s)| (n.as_str(), s.as_str()))
        .collect();
    let cache = paraphrase_cache(&options)?;
    let loading = |spec: &String| format!("loading the LLM {spec:?}");
    let paraphrasers: Vec<Paraphraser> = args
        .paraphrasers
        .iter()
        .map(|spec| {
            options
                .llm
                .paraphraser(spec, options.cuda, cache.clone())
                .with_context(|| loading(spec))
        })
        .collect::<Result<_>>()?;
    let judges: Vec<Judge> = args
        .judges
        .iter()
        .map(|spec| {
            options
                .llm
                .judge(spec, options.cuda, cache.clone())
                .with_context(|| loading(spec))
        })
        .collect::<Result<_>>()?;
    let mut loaded = Loaded::default();
    let reference = reference_encoder(
        &options.quality_encoder,
        options.cuda,
        &args.remote,
        &mut loaded,
    )?;
    let options = pteb::Options {
        runs: 1,
        seed: args.seed,
        max_rows: Some(args.max_rows),
        judge_pairs: options.judge_pairs,
        gate: options.gate,
        ..pteb::Options::default()
    };
    let progress = StderrProgress::new(1);
    let qualification = pteb::qualify(
        &paraphrasers.iter().collect::<Vec<_>>(),
        &judges.iter().collect::<Vec<_>>(),
        reference.as_ref(),
        &root,
        &refs,
        &options,
        &progress,
    )?;
    if let Some(path) = &args.output {
        let mut out = Output::create(Some(path.clone()))?;
        serde_json::to_writer_pretty(&mut out, &qualification)?;
        out.write_all(b"\n")?;
        out.finish()?;
    }
    print!("{}", pteb::qualification_tables(&qualification));
    Ok(())
}
