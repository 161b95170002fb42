//! `sage run pteb`: PTEB with a local GGUF or an OpenAI-compatible paraphraser.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use pteb::{
    ChatModel, GgufChat, Judge, OpenAiChat, Options, ParaphraseCache, ParaphraseSettings,
    Paraphraser, PromptStyle, PtebReport,
};
use serde::Serialize;

use crate::embed::ModelArgs;
use crate::output::Output;

/// The arguments of `sage run pteb`.
#[derive(Debug, clap::Args)]
pub struct PtebArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// More encoders, each compared with --model (the baseline) on the paraphrased scores:
    /// Hodges-Lehmann shift, bootstrap CI, Wilcoxon p, Holm-corrected.
    #[arg(long = "compare")]
    compare: Vec<String>,
    /// The paraphrasing LLM: a .gguf file, a folder with one, a folder name under
    /// $SAGE_MODELS_DIR (e.g. SmolLM2-135M-Instruct-GGUF), or an OpenAI-compatible base URL
    /// (http://localhost:11434/v1 for Ollama) with --llm-model.
    #[arg(long)]
    paraphraser: String,
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
    /// Paraphrase runs; run r uses seed + r.
    #[arg(long, default_value_t = Options::default().runs)]
    runs: usize,
    /// Seed of run 0 (also sampling and bootstrap).
    #[arg(long, default_value_t = Options::default().seed)]
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
    /// The multilingual prompt (the paraphrase stays in the input's language).
    #[arg(long)]
    multilingual: bool,
    /// Sampling temperature.
    #[arg(long, default_value_t = ParaphraseSettings::default().temperature)]
    temperature: f64,
    /// Nucleus mass.
    #[arg(long, default_value_t = ParaphraseSettings::default().top_p)]
    top_p: f64,
    /// An LLM judge (same forms as --paraphraser) rating paraphrases 0-5 and checked against STS
    /// gold scores; off by default (slow).
    #[arg(long)]
    judge: Option<String>,
    /// Pairs the judge rates per dataset.
    #[arg(long, default_value_t = Options::default().judge_pairs)]
    judge_pairs: usize,
    /// Most tokens of a judge answer (raise it for reasoning models).
    #[arg(long, default_value_t = 16)]
    judge_max_tokens: usize,
    /// Paraphrase cache file (default: $SAGE_CACHE_DIR or ~/.cache/sage-rs, paraphrases.redb).
    #[arg(long)]
    paraphrase_cache: Option<PathBuf>,
    /// Neither read nor write the paraphrase cache.
    #[arg(long)]
    no_paraphrase_cache: bool,
    /// Also read the other paraphrase cache files (`paraphrases*.redb`) in this folder for what
    /// the cache lacks (a sharded run's shards each write their own --paraphrase-cache).
    #[arg(long, value_name = "DIR")]
    read_paraphrase_caches: Option<PathBuf>,
    /// Data root (default: $SAGE_DATA_DIR).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Write the report here (atomically) instead of standard output.
    #[arg(long)]
    output: Option<PathBuf>,
}

impl PtebArgs {
    fn chat_model(&self, spec: &str) -> Result<Box<dyn ChatModel>> {
        if spec.starts_with("http://") || spec.starts_with("https://") {
            let Some(model) = &self.llm_model else {
                bail!("{spec} is a server: name the model it should run with --llm-model")
            };
            let key = std::env::var(&self.api_key_env)
                .ok()
                .filter(|k| !k.is_empty());
            return Ok(Box::new(OpenAiChat::new(
                spec,
                model,
                key,
                Duration::from_secs(self.http_timeout.max(1)),
            )));
        }
        let model = GgufChat::load(spec, self.model.cuda)
            .with_context(|| format!("loading the LLM {spec:?}"))?;
        let model = match self.llm_batch {
            Some(batch) => model.with_batch(batch),
            None => model,
        };
        let model = match self.llm_lanes {
            Some(lanes) => model.with_lanes(lanes),
            None => model,
        };
        Ok(Box::new(match self.llm_attention {
            Some(attention) => model.with_pooled_attention(attention == LlmAttention::Pooled),
            None => model,
        }))
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

pub fn run(args: PtebArgs) -> Result<()> {
    let Some(baseline_spec) = args.model.model.clone() else {
        bail!("--model is required (the encoder; with --compare, the baseline)")
    };
    let root = crate::data::root(args.data_dir.clone())?;
    let datasets: Vec<(String, String)> = if args.datasets.is_empty() {
        crate::run::local_defaults(&root, "pteb", &pteb::DEFAULT_DATASETS)?
            .into_iter()
            .map(|(n, s)| (n.to_owned(), s.to_owned()))
            .collect()
    } else {
        crate::run::parse_datasets(&args.datasets)?
    };
    let refs: Vec<(&str, &str)> = datasets
        .iter()
        .map(|(n, s)| (n.as_str(), s.as_str()))
        .collect();
    let cache = if args.no_paraphrase_cache {
        None
    } else {
        let path = args
            .paraphrase_cache
            .clone()
            .unwrap_or_else(pteb::default_cache_path);
        let mut cache = ParaphraseCache::open(&path)?;
        if let Some(dir) = &args.read_paraphrase_caches {
            cache = cache.reading_siblings(dir);
        }
        Some(Arc::new(cache))
    };
    let settings = ParaphraseSettings {
        prompt: if args.multilingual {
            PromptStyle::Multilingual
        } else {
            PromptStyle::English
        },
        temperature: args.temperature,
        top_p: args.top_p,
        ..ParaphraseSettings::default()
    };
    let paraphraser =
        Paraphraser::new(args.chat_model(&args.paraphraser)?, settings, cache.clone());
    let judge = match &args.judge {
        Some(spec) => Some(Judge::new(
            args.chat_model(spec)?,
            cache.clone(),
            args.judge_max_tokens,
        )),
        None => None,
    };
    let options = Options {
        runs: args.runs,
        seed: args.seed,
        max_rows: args.max_rows,
        max_train_rows: args.max_train_rows,
        paraphrase_train: args.paraphrase_train,
        judge_pairs: args.judge_pairs,
    };
    let progress = StderrProgress {
        current: Default::default(),
        last_tenth: AtomicU64::new(u64::MAX),
        runs: args.runs,
    };
    let evaluate = |spec: &str| -> Result<PtebReport> {
        let encoder = args.model.load(spec)?;
        let report = pteb::evaluate(
            encoder.as_ref(),
            &paraphraser,
            judge.as_ref(),
            &root,
            &refs,
            &options,
            &progress,
        )
        .with_context(|| format!("PTEB with {spec}"))?;
        eprintln!(
            "sage: pteb: {spec}: {} fallbacks over {} datasets x {} runs",
            report.fallbacks,
            report.datasets.len(),
            options.runs
        );
        Ok(report)
    };
    let baseline = evaluate(&baseline_spec)?;
    let mut out = Output::create(args.output.clone())?;
    if args.compare.is_empty() {
        serde_json::to_writer_pretty(&mut out, &crate::remote::finish(&baseline)?)?;
    } else {
        let others: Vec<PtebReport> = args
            .compare
            .iter()
            .map(|spec| evaluate(spec))
            .collect::<Result<_>>()?;
        let refs: Vec<&PtebReport> = others.iter().collect();
        let comparisons = pteb::compare(&baseline, &refs, sage_core::RunSeed(args.seed))?;
        serde_json::to_writer_pretty(
            &mut out,
            &crate::remote::finish(&Compared {
                suite: "pteb",
                baseline: &baseline,
                others: &others,
                comparisons,
            })?,
        )?;
    }
    out.write_all(b"\n")?;
    out.finish()
}
