//! bench.toml: the schema of bench-all's configuration, its defaults and its [quick] table.

use crate::*;

/// The commented default configuration, embedded so that a run with no --config uses it.
pub const DEFAULT_CONFIG: &str = include_str!("../../../bench.toml");

/// bench-all's configuration: a bench.toml, checked, read over the embedded one ([`Config::parse`]):
/// every field a user's file leaves out keeps the embedded default, so no field is required of it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub(crate) seed: u64,
    #[serde(default)]
    pub(crate) data_dir: String,
    pub(crate) device: Device,
    pub(crate) batch_tokens: usize,
    pub(crate) similarities: Similarities,
    #[serde(default)]
    pub(crate) quick: Quick,
    #[serde(default)]
    pub(crate) remote: RemoteSuite,
    /// `[suites.<name>]`: how a suite `sage suites` lists is run, shipped or not; a listed suite
    /// without a table runs with its defaults.
    #[serde(default)]
    pub(crate) suites: BTreeMap<String, SuiteTable>,
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

/// `[suites.<name>]`: how bench-all runs a suite `sage suites` lists. Every field is the
/// suite's own business: bench-all passes the datasets as `--dataset` and the options as
/// `--options JSON`, and `sage suites check` reads and checks them before the first job.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SuiteTable {
    #[serde(default = "yes")]
    pub(crate) enabled: bool,
    /// Datasets as name/split; empty: the suite's defaults that are local.
    #[serde(default)]
    pub(crate) datasets: Vec<String>,
    /// Under --quick, these datasets instead of `datasets`.
    #[serde(default)]
    pub(crate) quick_datasets: Option<Vec<String>>,
    /// The suite's options, passed as `--options JSON`.
    #[serde(default)]
    pub(crate) options: serde_json::Map<String, Value>,
    /// Under --quick, these options over `options` (a key here replaces the same key there).
    #[serde(default)]
    pub(crate) quick_options: serde_json::Map<String, Value>,
    /// With `device = "cuda"`, these options over `options`: what a GPU box runs beyond a
    /// CPU's (PTEB's twenty datasets in all their languages, where a CPU runs the English
    /// ones).
    #[serde(default)]
    pub(crate) cuda_options: serde_json::Map<String, Value>,
    /// Several runs of the suite, each its own job and result file (named by the suite: EvalRank
    /// writes one per level): each entry's options over `options`. Empty: one run.
    #[serde(default)]
    pub(crate) runs: Vec<serde_json::Map<String, Value>>,
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

#[derive(Debug, Default, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Device {
    #[default]
    Cpu,
    Cuda,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Similarities {
    pub(crate) metrics: Vec<String>,
    pub(crate) models: Vec<String>,
    /// Lower precisions (`bf16`, `int8`): each model "auto" finds whose family runs one is
    /// also run at it, as `NAME@PRECISION`, through the suites that say what a precision
    /// costs and keeps ([`PRECISION_SUITES`](crate::plan::PRECISION_SUITES)).
    pub(crate) precisions: Vec<String>,
}

/// `[quick]`: what --quick changes beyond each suite's `quick_options` and `quick_datasets`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Quick {
    /// Under --quick, only these models from "auto" (the small ones); explicit models are kept.
    #[serde(default)]
    pub(crate) auto_models: Vec<String>,
}

/// The sections of bench.toml before every suite had its `[suites.<name>]` table, and where
/// each went: a configuration that still has one is refused with the way to move it.
const MOVED_SECTIONS: [(&str, &str); 4] = [
    (
        "sage",
        "[suites.human-pref], [suites.robustness], [suites.sensitivity], [suites.clustering] and \
         [suites.retrieval] (max_rows, subsets, max_texts, mode, max_docs, max_queries as their \
         options; a task left out of `tasks`: enabled = false)",
    ),
    ("evalrank", "[suites.evalrank] (runs = [{ level = \"word\" }, ...])"),
    ("align_sim", "[suites.align-sim] (options = { max_rows = ... })"),
    (
        "pteb",
        "[suites.pteb] (paraphraser, runs, max_rows, quality_encoder, gate = { ... }, llm = { ... } \
         as its options)",
    ),
];

/// Keys of a `[suites.<name>]` table that are one value each, replaced whole by a user's: a
/// suite's `options` are the options it runs with (what they leave out is the suite's own default,
/// never a key of the embedded table the user could not remove), and so on.
const WHOLE_IN_A_SUITE: [&str; 6] = [
    "options",
    "quick_options",
    "cuda_options",
    "runs",
    "datasets",
    "quick_datasets",
];

/// The embedded suite tables made ready for a user's to be laid over them: each key the user
/// gives whole is dropped from the embedded table, and so is the embedded `quick_options` (or
/// `quick_datasets`) where the user gives `options` (or `datasets`) without it: --quick would
/// otherwise set the user's own choice aside for the embedded one.
fn clear_for(base: &mut toml::Table, over: &toml::Table) {
    let (Some(toml::Value::Table(base_suites)), Some(toml::Value::Table(over_suites))) =
        (base.get_mut("suites"), over.get("suites"))
    else {
        return;
    };
    for (name, suite) in over_suites {
        let (Some(toml::Value::Table(below)), toml::Value::Table(above)) =
            (base_suites.get_mut(name), suite)
        else {
            continue;
        };
        for key in WHOLE_IN_A_SUITE {
            if above.contains_key(key) {
                below.remove(key);
            }
        }
        for (given, quick) in [
            ("options", "quick_options"),
            ("options", "cuda_options"),
            ("datasets", "quick_datasets"),
        ] {
            if above.contains_key(given) && !above.contains_key(quick) {
                below.remove(quick);
            }
        }
    }
}

/// `over` laid on `base`: a table merges key by key, at any depth; any other value (a list
/// included) replaces the base's.
fn lay_over(base: &mut toml::Table, over: toml::Table) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(below)), toml::Value::Table(above)) => lay_over(below, above),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

impl Config {
    /// Parses and checks a configuration, read over the embedded bench.toml: what it leaves out
    /// (`device`, a whole `[suites.<name>]` table, a key of one) keeps the embedded default, a
    /// table it gives merges key by key into the embedded one, and a list or a value replaces the
    /// embedded one. In a suite's table, `options`, `quick_options`, `runs`, `datasets` and
    /// `quick_datasets` are values, each replaced whole, and giving `options` (or `datasets`)
    /// without its `quick_` form drops the embedded one. A key the schema does not know is an
    /// error naming it and its line. `origin` names the configuration in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Config> {
        let invalid =
            |e: &dyn std::fmt::Display| BenchError::Invalid(format!("{origin}: invalid: {e}"));
        let table: toml::Table = toml::from_str(text).map_err(|e| invalid(&e))?;
        for (old, new) in MOVED_SECTIONS {
            if table.contains_key(old) {
                invalid!(
                    "{origin}: [{old}] is gone: each suite has its own [suites.<name>] table now; \
                     move it to {new}, as the shipped bench.toml shows"
                );
            }
        }
        if let Some(toml::Value::Table(quick)) = table.get("quick") {
            if let Some(old) = quick.keys().find(|k| k.as_str() != "auto_models") {
                invalid!(
                    "{origin}: quick.{old} is gone: each suite's quick sizes are its \
                     [suites.<name>] quick_options (and quick_datasets) now, as the shipped \
                     bench.toml shows"
                );
            }
        }
        // parsed alone as the schema first: its errors carry the line and the field
        let _alone: Config = toml::from_str(text).map_err(|e| invalid(&e))?;
        let mut merged: toml::Table =
            toml::from_str(DEFAULT_CONFIG).expect("the embedded bench.toml is TOML");
        clear_for(&mut merged, &table);
        lay_over(&mut merged, table);
        let mut config: Config = toml::Value::Table(merged)
            .try_into()
            .map_err(|e| invalid(&e))?;
        config.origin = origin.to_owned();
        if config.device == Device::Cuda {
            for suite in config.suites.values_mut() {
                let cuda = std::mem::take(&mut suite.cuda_options);
                suite.options.extend(cuda);
            }
        }
        for (name, suite) in &config.suites {
            let lists = [Some(&suite.datasets), suite.quick_datasets.as_ref()];
            if let Some(bad) = lists
                .into_iter()
                .flatten()
                .flatten()
                .find(|d| !dataset_entry_ok(d))
            {
                invalid!("{origin}: suites.{name}.datasets: {bad:?} is not name/split");
            }
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

    /// The same configuration with --quick's sample sizes: each suite's quick options over its
    /// options, its quick datasets instead of its datasets.
    pub(crate) fn quick(mut self) -> Config {
        for suite in self.suites.values_mut() {
            let quick = std::mem::take(&mut suite.quick_options);
            suite.options.extend(quick);
            if let Some(datasets) = suite.quick_datasets.take() {
                suite.datasets = datasets;
            }
        }
        self
    }

    /// The registry datasets a run of this configuration reads, as `name/split` (or the bare name
    /// where a suite's defaults give one): each enabled suite's configured datasets, else the
    /// defaults `suites` gives for it, and the datasets it reads whatever it is given (`(suite,
    /// its default datasets, its reference datasets)`, as the registry lists them). A user's own
    /// paths are left out: nothing fetches them.
    pub fn datasets_needed(&self, suites: &[(String, Vec<String>, Vec<String>)]) -> Vec<String> {
        let mut needed = Vec::new();
        for (name, defaults, references) in suites {
            let table = self.suites.get(name);
            if table.is_some_and(|t| !t.enabled) {
                continue;
            }
            let configured = table.map(|t| t.datasets.clone()).unwrap_or_default();
            let list = if configured.is_empty() {
                defaults.clone()
            } else {
                configured
            };
            for d in list.into_iter().chain(references.iter().cloned()) {
                if d.contains('#')
                    || Path::new(&d).exists()
                    || self
                        .datasets
                        .contains_key(d.split('/').next().unwrap_or(&d))
                {
                    continue;
                }
                if !needed.contains(&d) {
                    needed.push(d);
                }
            }
        }
        needed
    }

    /// Reads a configuration file (the embedded bench.toml without one), with --quick's datasets
    /// when `quick`.
    pub fn load(file: Option<&Path>, quick: bool) -> Result<Config> {
        let config = match file {
            Some(file) => Config::read(file)?,
            None => Config::parse(DEFAULT_CONFIG, "the embedded bench.toml")?,
        };
        Ok(if quick { config.quick() } else { config })
    }

    /// The configuration file at `file`, read over the embedded one ([`Config::parse`]). Only a
    /// regular file is read: a FIFO would block the run before it starts.
    pub fn read(file: &Path) -> Result<Config> {
        let meta = std::fs::metadata(file).map_err(|e| BenchError::file(file, "cannot read", e))?;
        if !meta.is_file() {
            invalid!(
                "{}: not a regular file (a configuration is read from a file)",
                file.display()
            );
        }
        let text =
            std::fs::read_to_string(file).map_err(|e| BenchError::file(file, "cannot read", e))?;
        Ok(Config {
            file: Some(
                std::path::absolute(file).map_err(|e| BenchError::file(file, "cannot read", e))?,
            ),
            ..Config::parse(&text, &file.display().to_string())?
        })
    }

    /// The options of each run the configuration asks of suite `name`: one with the table's
    /// options, or one per entry of its `runs`, that entry's options over them.
    pub(crate) fn runs_of(&self, name: &str) -> Vec<serde_json::Map<String, Value>> {
        let Some(table) = self.suites.get(name) else {
            return vec![serde_json::Map::new()];
        };
        if table.runs.is_empty() {
            return vec![table.options.clone()];
        }
        table
            .runs
            .iter()
            .map(|run| {
                let mut options = table.options.clone();
                options.extend(run.clone());
                options
            })
            .collect()
    }
}
