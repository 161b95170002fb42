//! bench.toml: the schema of bench-all's configuration, its defaults and its [quick] table.

use crate::*;

/// The commented default configuration, embedded so that a run with no --config uses it.
pub const DEFAULT_CONFIG: &str = include_str!("../../../bench.toml");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Config {
    pub(crate) seed: u64,
    #[serde(default)]
    pub(crate) data_dir: String,
    pub(crate) device: Device,
    pub(crate) batch_tokens: usize,
    pub(crate) similarities: Similarities,
    pub(crate) sage: SageSuite,
    pub(crate) evalrank: EvalRankSuite,
    pub(crate) align_sim: AlignSimSuite,
    pub(crate) pteb: PtebSuite,
    pub(crate) quick: Quick,
    #[serde(default)]
    pub(crate) remote: RemoteSuite,
    /// `[suites.<name>]`: suites registered beyond the shipped ones, by name.
    #[serde(default)]
    pub(crate) suites: BTreeMap<String, RegisteredSuite>,
    /// `[datasets.<name>]`: the user's own datasets. `sage` reads these tables itself (`--datasets
    /// FILE`, paths relative to the file), so their schema is sage-data's and lives once.
    #[serde(default)]
    pub(crate) datasets: BTreeMap<String, toml::Value>,
    /// Where the configuration came from, for errors found once `sage` is asked.
    #[serde(skip)]
    pub(crate) origin: String,
    /// The configuration file, when it is one (its `[datasets]` tables go to `sage` by path).
    #[serde(skip)]
    pub(crate) file: Option<PathBuf>,
}

/// A dataset entry of a list: `name/split` (the registry's or a `[datasets]` table's), or a
/// path (`PATH`, `PATH#SPLIT`), which sage reads; a bare name is missing its split.
pub(crate) fn dataset_entry_ok(entry: &str) -> bool {
    entry.contains('/') || entry.contains('#') || Path::new(entry).exists()
}

/// `[suites.<name>]`: how bench-all runs a suite it knows only from `sage suites` (one a crate
/// registered in its own `sage_cli::main`); a listed suite without a table runs with its
/// defaults.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RegisteredSuite {
    #[serde(default = "yes")]
    pub(crate) enabled: bool,
    /// Datasets as name/split; empty: the suite's defaults that are local.
    #[serde(default)]
    pub(crate) datasets: Vec<String>,
    /// The suite's options, passed as `--options JSON`.
    #[serde(default)]
    pub(crate) options: serde_json::Map<String, Value>,
    /// Under --quick, these options over `options` (a key here replaces the same key there).
    #[serde(default)]
    pub(crate) quick_options: serde_json::Map<String, Value>,
}

pub(crate) fn yes() -> bool {
    true
}

/// Remote models (`PROTOCOL:MODEL[@BASE_URL]` in similarities.models): what they may cost.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct RemoteSuite {
    /// Stop starting remote jobs before the estimated spend of this run would cross this.
    #[serde(default)]
    pub(crate) max_cost_usd: Option<f64>,
    /// USD per million tokens by `protocol:model`, over `sage`'s shipped list prices.
    #[serde(default)]
    pub(crate) prices: BTreeMap<String, f64>,
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Device {
    Cpu,
    Cuda,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Similarities {
    pub(crate) metrics: Vec<String>,
    pub(crate) models: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SageSuite {
    pub(crate) tasks: Vec<String>,
    pub(crate) max_rows: usize,
    pub(crate) cluster_subsets: usize,
    pub(crate) cluster_max_texts: usize,
    pub(crate) retrieval_max_docs: usize,
    pub(crate) retrieval_max_queries: usize,
    pub(crate) retrieval_mode: String,
    /// Per task, the datasets to run (name/split); a task not named runs its default
    /// datasets that are in the local mirror.
    #[serde(default)]
    pub(crate) datasets: BTreeMap<String, Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EvalRankSuite {
    pub(crate) levels: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AlignSimSuite {
    pub(crate) max_rows: usize,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PtebSuite {
    pub(crate) enabled: bool,
    /// GGUF folder name under SAGE_MODELS_DIR, a .gguf path or folder, or an OpenAI-compatible
    /// base URL (with llm_model).
    pub(crate) paraphraser: String,
    #[serde(default)]
    pub(crate) llm_model: String,
    /// Requests a local GGUF paraphraser decodes together in each lane; 0: `sage`'s default for
    /// the device.
    #[serde(default)]
    pub(crate) llm_batch: usize,
    /// Decoding lanes of a local GGUF paraphraser; 0: `sage`'s default for the device.
    #[serde(default)]
    pub(crate) llm_lanes: usize,
    /// How a local llama/qwen2 paraphraser's requests attend; absent: `sage`'s default for the
    /// device.
    #[serde(default)]
    pub(crate) llm_attention: Option<LlmAttention>,
    pub(crate) runs: usize,
    pub(crate) max_rows: usize,
    #[serde(default)]
    pub(crate) datasets: Vec<String>,
    #[serde(default)]
    pub(crate) quality: PtebQuality,
}

/// `[pteb.quality]`: the paraphrase-quality record's reference encoder and the gate's
/// thresholds; an absent threshold is `sage`'s default (pteb's `QualityGate`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PtebQuality {
    /// `sage run pteb --quality-encoder`; empty: `sage`'s default (all-MiniLM-L6-v2).
    #[serde(default)]
    pub(crate) encoder: String,
    pub(crate) min_reference_cosine: Option<f64>,
    pub(crate) low_cosine: Option<f64>,
    pub(crate) max_share_below: Option<f64>,
    pub(crate) min_edit_distance: Option<f64>,
    pub(crate) max_fallback_share: Option<f64>,
    pub(crate) min_judge_rating: Option<f64>,
    pub(crate) min_judge_sts_spearman: Option<f64>,
    #[serde(default)]
    pub(crate) pool_unqualified: bool,
}

impl PtebQuality {
    /// The `sage run pteb` flags that say what is set.
    pub(crate) fn flags(&self) -> Vec<String> {
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
pub(crate) enum LlmAttention {
    Pooled,
    PerRequest,
}

impl LlmAttention {
    pub(crate) fn flag_value(self) -> &'static str {
        match self {
            LlmAttention::Pooled => "pooled",
            LlmAttention::PerRequest => "per-request",
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Quick {
    pub(crate) max_rows: usize,
    pub(crate) cluster_subsets: usize,
    pub(crate) cluster_max_texts: usize,
    pub(crate) retrieval_max_docs: usize,
    pub(crate) retrieval_max_queries: usize,
    pub(crate) align_sim_max_rows: usize,
    pub(crate) auto_models: Vec<String>,
    pub(crate) pteb_runs: usize,
    pub(crate) pteb_max_rows: usize,
    pub(crate) pteb_datasets: Vec<String>,
}

/// The suites bench-all plans from their own configuration sections; every other suite
/// `sage suites` lists is planned from `[suites.<name>]`.
pub(crate) const CONFIGURED_SUITES: [&str; 8] = [
    "human-pref",
    "robustness",
    "sensitivity",
    "clustering",
    "retrieval",
    "evalrank",
    "align-sim",
    "pteb",
];
pub(crate) const SAGE_TASKS: [&str; 5] = [
    "human-pref",
    "robustness",
    "sensitivity",
    "clustering",
    "retrieval",
];

impl Config {
    /// Parses and checks a configuration; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Config> {
        let mut config: Config = toml::from_str(text)
            .map_err(|e| BenchError::Invalid(format!("{origin}: invalid: {e}")))?;
        config.origin = origin.to_owned();
        for (name, suite) in &config.suites {
            if CONFIGURED_SUITES.contains(&name.as_str()) {
                invalid!("{origin}: suites.{name}: {name} is configured in its own section ([sage], [evalrank], [align_sim], [pteb])");
            }
            if let Some(bad) = suite.datasets.iter().find(|d| !dataset_entry_ok(d)) {
                invalid!("{origin}: suites.{name}.datasets: {bad:?} is not name/split");
            }
        }
        for t in &config.sage.tasks {
            if !SAGE_TASKS.contains(&t.as_str()) {
                invalid!("{origin}: sage.tasks: unknown task {t:?} (one of {SAGE_TASKS:?})");
            }
        }
        for l in &config.evalrank.levels {
            if !["word", "sentence"].contains(&l.as_str()) {
                invalid!("{origin}: evalrank.levels: unknown level {l:?} (word or sentence)");
            }
        }
        for (task, datasets) in &config.sage.datasets {
            if !SAGE_TASKS.contains(&task.as_str()) {
                invalid!("{origin}: sage.datasets: unknown task {task:?} (one of {SAGE_TASKS:?})");
            }
            if let Some(bad) = datasets.iter().find(|d| !dataset_entry_ok(d)) {
                invalid!("{origin}: sage.datasets.{task}: {bad:?} is not name/split");
            }
        }
        if !["distractor", "replace"].contains(&config.sage.retrieval_mode.as_str()) {
            invalid!(
                "{origin}: sage.retrieval_mode: {:?} is neither distractor nor replace",
                config.sage.retrieval_mode
            );
        }
        Ok(config)
    }

    /// Checks the names the configuration gives against what `sage` registers: its metrics
    /// (`sage metrics`) and suites (`sage suites`).
    pub(crate) fn check_against(&self, metrics: &[String], suites: &[ListedSuite]) -> Result<()> {
        let origin = &self.origin;
        for m in &self.similarities.metrics {
            if !metrics.contains(m) {
                invalid!("{origin}: similarities.metrics: unknown metric {m:?} (sage registers {metrics:?})");
            }
        }
        for name in self.suites.keys() {
            if !suites.iter().any(|s| &s.name == name) {
                let listed: Vec<&str> = suites.iter().map(|s| s.name.as_str()).collect();
                invalid!("{origin}: suites.{name}: sage registers no suite {name:?} (it lists {listed:?})");
            }
        }
        Ok(())
    }

    /// The same configuration with --quick's sample sizes.
    pub(crate) fn quick(mut self) -> Config {
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
