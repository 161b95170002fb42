//! `sage run pteb`: PTEB with a local GGUF or an OpenAI-compatible paraphraser.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use pteb::{Judge, ParaphraseCache, ParaphraseSettings, Paraphraser, PtebReport, QualityGate};
use sage_suites::{PtebOptions, PtebRun};
use serde::Serialize;

use crate::embed::ModelArgs;
use crate::output::Output;
use crate::remote::Loaded;

/// The arguments of `sage run pteb`.
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
    /// The paraphrasing LLM: a .gguf file, a folder with one, a folder name under
    /// $SAGE_MODELS_DIR (e.g. SmolLM2-135M-Instruct-GGUF), or an OpenAI-compatible base URL
    /// (http://localhost:11434/v1 for Ollama) with --llm-model (required, here or as the
    /// `paraphraser` option).
    #[arg(long, required_unless_present_any = ["options", "option"])]
    paraphraser: Option<String>,
    #[command(flatten)]
    llm: LlmArgs,
    #[command(flatten)]
    quality: QualityArgs,
    /// Pool and compare datasets whose paraphrases failed the quality gate too (their numbers
    /// are always reported, marked).
    #[arg(long)]
    pool_unqualified: bool,
    /// Paraphrase runs; run r uses seed + r.
    #[arg(long, default_value_t = PtebOptions::default().runs)]
    runs: usize,
    /// Seed of run 0 (also sampling and bootstrap).
    #[arg(long, default_value_t = pteb::Options::default().seed)]
    seed: u64,
    /// Datasets as name/split (default: the paper's English datasets that are local).
    #[arg(long = "dataset")]
    datasets: Vec<String>,
    /// Rows sampled per dataset (pairs, test texts, queries, summaries by document; default: all).
    #[arg(long)]
    max_rows: Option<usize>,
    /// Classification training texts sampled (default: all).
    #[arg(long)]
    max_train_rows: Option<usize>,
    /// Paraphrase classification training texts too.
    #[arg(long)]
    paraphrase_train: bool,
    /// An LLM judge (same forms as --paraphraser) rating paraphrases 0-5 and checked against STS
    /// gold scores; off by default (slow).
    #[arg(long)]
    judge: Option<String>,
    /// Pairs the judge rates per dataset.
    #[arg(long, default_value_t = PtebOptions::default().judge_pairs)]
    judge_pairs: usize,
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

/// How an LLM (paraphraser or judge) is reached and run.
#[derive(Debug, clap::Args)]
pub struct LlmArgs {
    /// The model name a server is asked for (HTTP paraphraser or judge).
    #[arg(long)]
    llm_model: Option<String>,
    /// Requests a local GGUF LLM decodes together in each decoding lane (llama, qwen2);
    /// default 32 on the CPU, 256 with --cuda. Answers do not depend on it on the CPU.
    #[arg(long)]
    llm_batch: Option<usize>,
    /// Decoding lanes of a local llama/qwen2 LLM with per-request attention: threads that each
    /// decode their own requests single-threaded, from one shared queue; default one per worker
    /// thread on the CPU (faster than splitting each step over the threads), 1 with --cuda.
    /// Answers do not depend on it.
    #[arg(long)]
    llm_lanes: Option<usize>,
    /// How a local llama/qwen2 LLM's requests attend: "pooled" (keys in one preallocated
    /// pool, all requests in one batched product: the default with --cuda, where it saves a
    /// dozen kernel launches per request per layer; an answer then depends on its batch to
    /// rounding) or "per-request" (the CPU default, faster there: each request alone, in
    /// parallel, bit-for-bit batch-independent).
    #[arg(long, value_enum)]
    llm_attention: Option<LlmAttention>,
    /// Environment variable holding the server's API key (sent as a Bearer token when set).
    #[arg(long, default_value = "OPENAI_API_KEY")]
    api_key_env: String,
    /// Seconds before an HTTP request is abandoned.
    #[arg(long, default_value_t = 300)]
    http_timeout: u64,
    /// The multilingual prompt (the paraphrase stays in the input's language).
    #[arg(long)]
    multilingual: bool,
    /// Sampling temperature.
    #[arg(long, default_value_t = ParaphraseSettings::default().temperature)]
    temperature: f64,
    /// Nucleus mass.
    #[arg(long, default_value_t = ParaphraseSettings::default().top_p)]
    top_p: f64,
    /// Most tokens of a judge answer (raise it for reasoning models).
    #[arg(long, default_value_t = 16)]
    judge_max_tokens: usize,
    /// Paraphrase cache file (default: $SAGE_CACHE_DIR or ~/.cache/sage-rs, paraphrases.redb).
    #[arg(long, env = "SAGE_PARAPHRASE_CACHE")]
    paraphrase_cache: Option<PathBuf>,
    /// Neither read nor write the paraphrase cache.
    #[arg(long)]
    no_paraphrase_cache: bool,
    /// Also read the other paraphrase cache files (`paraphrases*.redb`) in this folder for what
    /// the cache lacks (a sharded run's shards each write their own --paraphrase-cache).
    #[arg(long, value_name = "DIR", env = "SAGE_READ_PARAPHRASE_CACHES")]
    read_paraphrase_caches: Option<PathBuf>,
    /// Data root (default: $SAGE_DATA_DIR).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    #[command(flatten)]
    user: crate::data::UserDataArgs,
}

impl LlmArgs {
    /// The data root (--data-dir or $SAGE_DATA_DIR, with the user's tables) and `datasets` read.
    fn resolve(&self, datasets: &[String]) -> Result<(sage_data::DataRoot, Vec<(String, String)>)> {
        crate::data::resolve(self.data_dir.clone(), &self.user, datasets)
    }

    /// The paraphrase cache, unless --no-paraphrase-cache.
    fn cache(&self) -> Result<Option<Arc<ParaphraseCache>>> {
        Ok(ParaphraseCache::for_run(
            self.no_paraphrase_cache,
            self.paraphrase_cache.as_deref(),
            self.read_paraphrase_caches.as_deref(),
        )?)
    }

    /// The LLM settings these flags spell.
    fn config(&self) -> pteb::LlmConfig {
        pteb::LlmConfig {
            llm_model: self.llm_model.clone(),
            llm_batch: self.llm_batch,
            llm_lanes: self.llm_lanes,
            llm_pooled_attention: self.llm_attention.map(|a| a == LlmAttention::Pooled),
            api_key_env: self.api_key_env.clone(),
            http_timeout: self.http_timeout,
            multilingual: self.multilingual,
            temperature: self.temperature,
            top_p: self.top_p,
            judge_max_tokens: self.judge_max_tokens,
        }
    }

    /// The paraphraser `spec` names, with the prompt and sampling flags.
    fn paraphraser(
        &self,
        spec: &str,
        cuda: bool,
        cache: &Option<Arc<ParaphraseCache>>,
    ) -> Result<Paraphraser> {
        self.config()
            .paraphraser(spec, cuda, cache.clone())
            .with_context(|| format!("loading the LLM {spec:?}"))
    }

    /// The judge `spec` names.
    fn judge(&self, spec: &str, cuda: bool, cache: &Option<Arc<ParaphraseCache>>) -> Result<Judge> {
        self.config()
            .judge(spec, cuda, cache.clone())
            .with_context(|| format!("loading the LLM {spec:?}"))
    }
}

/// The reference encoder and the thresholds of the paraphrase-quality gate (pteb's
/// `QualityGate`: its documentation says where each default comes from).
#[derive(Debug, clap::Args)]
pub struct QualityArgs {
    /// The fixed encoder that compares each original with its paraphrase (never the encoder
    /// under test): same forms as --model; loaded with its own defaults, uncached.
    #[arg(long, default_value = pteb::DEFAULT_REFERENCE_ENCODER)]
    quality_encoder: String,
    /// Least mean reference cosine of (original, paraphrase).
    #[arg(long, default_value_t = QualityGate::default().min_reference_cosine)]
    min_reference_cosine: f64,
    /// A paraphrase below this reference cosine counts as unfaithful.
    #[arg(long, default_value_t = QualityGate::default().low_cosine)]
    low_cosine: f64,
    /// Largest share of paraphrases below --low-cosine.
    #[arg(long, default_value_t = QualityGate::default().max_share_below)]
    max_share_below: f64,
    /// Least mean normalised word edit distance.
    #[arg(long, default_value_t = QualityGate::default().min_edit_distance)]
    min_edit_distance: f64,
    /// Largest share of texts that fell back to their original wording.
    #[arg(long, default_value_t = QualityGate::default().max_fallback_share)]
    max_fallback_share: f64,
    /// Least mean judge rating (0-5), counted when the judge qualifies.
    #[arg(long, default_value_t = QualityGate::default().min_judge_rating)]
    min_judge_rating: f64,
    /// Least Spearman of the judge with STS gold for its rating to count.
    #[arg(long, default_value_t = QualityGate::default().min_judge_sts_spearman)]
    min_judge_sts_spearman: f64,
}

impl QualityArgs {
    fn gate(&self) -> QualityGate {
        QualityGate {
            min_reference_cosine: self.min_reference_cosine,
            low_cosine: self.low_cosine,
            max_share_below: self.max_share_below,
            min_edit_distance: self.min_edit_distance,
            max_fallback_share: self.max_fallback_share,
            min_judge_rating: self.min_judge_rating,
            min_judge_sts_spearman: self.min_judge_sts_spearman,
        }
    }

    /// The reference encoder, with its own defaults: the user's pooling or truncation of the
    /// encoder under test must not change the yardstick. Kept in `loaded` for its usage.
    fn reference(
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
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum LlmAttention {
    Pooled,
    PerRequest,
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
    /// of the one schema (`PtebOptions`) that bench.toml and Python keywords fill too.
    fn options(&self, given: &clap::ArgMatches) -> Result<PtebOptions> {
        let (llm, quality) = (&self.llm, &self.quality);
        let mut flags = crate::suite_options::FlagOptions::new(Some(given), &self.options)?;
        flags
            .some("paraphraser", self.paraphraser.as_ref())
            .some("judge", self.judge.as_ref())
            .given("runs", "runs", self.runs)
            .some("max_rows", self.max_rows)
            .some("max_train_rows", self.max_train_rows)
            .given("paraphrase_train", "paraphrase_train", true)
            .given("judge_pairs", "judge_pairs", self.judge_pairs)
            .given("pool_unqualified", "pool_unqualified", true)
            .given(
                "quality_encoder",
                "quality_encoder",
                &quality.quality_encoder,
            )
            .some("paraphrase_cache", llm.paraphrase_cache.as_ref())
            .given("no_paraphrase_cache", "no_paraphrase_cache", true)
            .some(
                "read_paraphrase_caches",
                llm.read_paraphrase_caches.as_ref(),
            )
            .given("cuda", "cuda", true);
        for (key, value) in [
            ("min_reference_cosine", quality.min_reference_cosine),
            ("low_cosine", quality.low_cosine),
            ("max_share_below", quality.max_share_below),
            ("min_edit_distance", quality.min_edit_distance),
            ("max_fallback_share", quality.max_fallback_share),
            ("min_judge_rating", quality.min_judge_rating),
            ("min_judge_sts_spearman", quality.min_judge_sts_spearman),
        ] {
            flags.given_in("gate", key, key, value);
        }
        flags
            .some_in("llm", "llm_model", llm.llm_model.as_ref())
            .some_in("llm", "llm_batch", llm.llm_batch)
            .some_in("llm", "llm_lanes", llm.llm_lanes)
            .some_in(
                "llm",
                "llm_pooled_attention",
                llm.llm_attention.map(|a| a == LlmAttention::Pooled),
            )
            .given_in("llm", "api_key_env", "api_key_env", &llm.api_key_env)
            .given_in("llm", "http_timeout", "http_timeout", llm.http_timeout)
            .given_in("llm", "multilingual", "multilingual", true)
            .given_in("llm", "temperature", "temperature", llm.temperature)
            .given_in("llm", "top_p", "top_p", llm.top_p)
            .given_in(
                "llm",
                "judge_max_tokens",
                "judge_max_tokens",
                llm.judge_max_tokens,
            );
        Ok(PtebOptions::read(&flags.into_map())?)
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
    let options = args.options(given)?;
    let (root, datasets) = args.llm.resolve(&args.datasets)?;
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
        QualityArgs::reference(
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
    notes.extend(PtebRun::unqualified_notes(&baseline));
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

/// The arguments of `sage pteb qualify`.
#[derive(Debug, clap::Args)]
pub struct QualifyArgs {
    /// A candidate paraphraser (same forms as `sage run pteb --paraphraser`); repeat for more.
    #[arg(long = "paraphraser")]
    paraphrasers: Vec<String>,
    /// A candidate judge (same forms); repeat for more. The one that agrees best with the STS
    /// gold scores rates the paraphrases.
    #[arg(long = "judge")]
    judges: Vec<String>,
    #[command(flatten)]
    llm: LlmArgs,
    #[command(flatten)]
    quality: QualityArgs,
    /// Datasets as name/split (default: the paper's STS datasets that are local).
    #[arg(long = "dataset")]
    datasets: Vec<String>,
    /// Rows sampled per dataset.
    #[arg(long, default_value_t = 25)]
    max_rows: usize,
    /// The paraphrasing seed (also the sampling seed).
    #[arg(long, default_value_t = pteb::Options::default().seed)]
    seed: u64,
    /// Pairs each judge rates per dataset.
    #[arg(long, default_value_t = PtebOptions::default().judge_pairs)]
    judge_pairs: usize,
    /// Run local LLMs and the reference encoder on the first CUDA GPU.
    #[arg(long)]
    cuda: bool,
    #[command(flatten)]
    remote: crate::remote::RemoteArgs,
    /// Also write the figures as JSON here (atomically).
    #[arg(long)]
    output: Option<PathBuf>,
}

/// `sage pteb qualify`: the selection table on stdout, the figures as JSON with --output.
pub fn qualify(args: QualifyArgs) -> Result<()> {
    if args.paraphrasers.is_empty() && args.judges.is_empty() {
        bail!("give at least one --paraphraser or --judge to qualify");
    }
    let (root, datasets) = args.llm.resolve(&args.datasets)?;
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
    let cache = args.llm.cache()?;
    let paraphrasers: Vec<Paraphraser> = args
        .paraphrasers
        .iter()
        .map(|spec| args.llm.paraphraser(spec, args.cuda, &cache))
        .collect::<Result<_>>()?;
    let judges: Vec<Judge> = args
        .judges
        .iter()
        .map(|spec| args.llm.judge(spec, args.cuda, &cache))
        .collect::<Result<_>>()?;
    let options = pteb::Options {
        runs: 1,
        seed: args.seed,
        max_rows: Some(args.max_rows),
        judge_pairs: args.judge_pairs,
        gate: args.quality.gate(),
        ..pteb::Options::default()
    };
    let mut loaded = Loaded::default();
    let reference = QualityArgs::reference(
        &args.quality.quality_encoder,
        args.cuda,
        &args.remote,
        &mut loaded,
    )?;
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
