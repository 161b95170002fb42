//! # sage-suites
//!
//! Every evaluation suite of sage-rs behind one [`Suite`] trait, and the one [`Registry`] of
//! them. `sage run <suite>`, `sage suites` and the Python package's `sage_rs.run` all start here,
//! so a suite is run the same way whoever asks.
//!
//! A run is a [`Subject`] (a classical metric or an embedding model) and a [`Request`]: the data
//! root, the datasets (empty: the suite's paper datasets that are in the local mirror), the run
//! seed, and the suite's options as a JSON object. Each suite reads its options into its own
//! typed struct, so a misspelt option is an error that names it, and an absent one keeps the
//! suite's documented default. The report comes back as JSON (the suite's typed report,
//! serialised), with notes for what was skipped.
//!
//! Adding a suite is one `impl Suite` and one registration: a line in [`Registry::standard`],
//! or [`Registry::with_suite`] from outside this crate.
#![deny(missing_docs)]

mod pteb_run;
mod suites;

use std::sync::Arc;

use sage_core::{Embedder, EmbeddingSimilarity, RunSeed, Similarity};
use sage_data::{DataRoot, DatasetKind};
use sage_metrics::Metric;
use serde_json::{Map, Value};

pub use pteb_run::{Pteb, PtebOptions, PtebRun};
pub use suites::{
    AlignSim, Compression, DocumentTask, EvalRank, HumanPref, Noise, Throughput, Transfer,
    CLUSTERING, RETRIEVAL, ROBUSTNESS, SENSITIVITY,
};

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SuiteError {
    /// A suite name that is not in the registry.
    #[error("unknown suite {name:?}; known suites: {known}")]
    UnknownSuite {
        /// The name given.
        name: String,
        /// Every registered name, comma-separated.
        known: String,
    },
    /// The options could not be read into the suite's options.
    #[error("{suite}: options: {message}")]
    Options {
        /// The suite.
        suite: &'static str,
        /// What was wrong (serde's message names the field).
        message: String,
    },
    /// A dataset argument that is not `name/split`, or datasets given to a suite that takes none.
    #[error("{suite}: {message}")]
    Datasets {
        /// The suite.
        suite: &'static str,
        /// What was wrong.
        message: String,
    },
    /// None of the suite's default datasets is in the local mirror.
    #[error("{suite}: none of its datasets is in the local mirror {root}:\n  {}\nfetch them with: sage data fetch {} (or run again with --fetch)", missing.join("\n  "), names.join(" "))]
    NoLocalData {
        /// The suite.
        suite: &'static str,
        /// The data root.
        root: String,
        /// Why each default dataset is absent, with how to get it.
        missing: Vec<String>,
        /// The registry names of the missing datasets.
        names: Vec<String>,
    },
    /// The subject cannot run this suite (a classical metric given to a suite of vectors).
    #[error("{suite}: {why}")]
    Subject {
        /// The suite.
        suite: &'static str,
        /// Why.
        why: String,
    },
    /// The suite itself failed.
    #[error("{suite}: {source}")]
    Run {
        /// The suite.
        suite: &'static str,
        /// The suite crate's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// An error from sage-core (reading the WordNet folder, ...).
    #[error(transparent)]
    Core(#[from] sage_core::SageError),
}

/// Result alias of this crate.
pub type Result<T, E = SuiteError> = std::result::Result<T, E>;

/// What is evaluated.
#[derive(Clone)]
pub enum Subject {
    /// A classical metric.
    Metric(Metric),
    /// An embedding model, compared by cosine where a suite compares texts.
    Model(Arc<dyn Embedder>),
}

impl Subject {
    /// The subject as a similarity of two texts.
    pub fn similarity(&self) -> Box<dyn Similarity> {
        match self {
            Subject::Metric(metric) => metric.similarity(),
            Subject::Model(model) => Box::new(EmbeddingSimilarity::cosine(model.clone())),
        }
    }

    /// What a result file says of the subject: its results-folder name, the spec it was given
    /// as (`spec`; a model's id when none; a server URL's secrets redacted), and its kind. A
    /// model at a lower precision is another similarity beside its float32 self: its name
    /// gains `@int8` (or `@bf16`), so that the report shows both.
    pub fn record(&self, spec: Option<&str>) -> sage_core::SimilarityRecord {
        let (given, kind) = match self {
            Subject::Metric(m) => (m.name().to_owned(), sage_core::SimilarityKind::Metric),
            Subject::Model(e) => (
                spec.map_or_else(|| e.identity().model_id.clone(), str::to_owned),
                sage_core::SimilarityKind::Model,
            ),
        };
        let mut record = sage_core::SimilarityRecord::of_spec(&given, kind);
        if let Subject::Model(e) = self {
            if let Some(precision) = e.identity().precision() {
                record.name = format!("{}@{precision}", record.name);
            }
        }
        record
    }

    /// The embedding model, for suites that compare vectors themselves.
    fn model(&self, suite: &'static str) -> Result<&Arc<dyn Embedder>> {
        match self {
            Subject::Model(model) => Ok(model),
            Subject::Metric(metric) => Err(SuiteError::Subject {
                suite,
                why: format!(
                    "ranks embedding vectors: give an embedding model, not the metric {}",
                    metric.name()
                ),
            }),
        }
    }
}

/// One run's inputs besides the subject.
#[derive(Clone, Debug)]
pub struct Request<'a> {
    /// The data mirror.
    pub root: &'a DataRoot,
    /// Datasets as `(name, split)`; empty: the suite's default datasets that are local.
    pub datasets: Vec<(String, String)>,
    /// The run seed (sampling, perturbations).
    pub seed: RunSeed,
    /// The suite's options as JSON (see each suite's options type); empty: every default.
    pub options: Map<String, Value>,
}

impl<'a> Request<'a> {
    /// Every default on `root`.
    pub fn new(root: &'a DataRoot) -> Request<'a> {
        Request {
            root,
            datasets: Vec::new(),
            seed: RunSeed::default(),
            options: Map::new(),
        }
    }
}

/// Dataset arguments as `(name, split)` pairs: `name/split` of the registry or of a user table
/// on `root`, or a path (`PATH`, `PATH#SPLIT`), which is registered on `root` (with `hints`: the
/// kind and column mapping the caller was given). The one reading of `--dataset`, bench.toml's
/// dataset lists and Python's `datasets=`.
pub fn parse_datasets<S: AsRef<str>>(
    root: &mut DataRoot,
    datasets: &[S],
    hints: &sage_data::PathHints,
) -> Result<Vec<(String, String)>, sage_data::DataError> {
    datasets
        .iter()
        .map(|d| root.resolve(d.as_ref(), hints))
        .collect()
}

/// A finished run: the suite's report, serialised, with what its typed report said of itself
/// (its score, the rows it used) and the notes.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// The suite's report, serialised.
    pub report: Value,
    /// The report's headline score ([`sage_core::SuiteReport::score`]).
    pub score: Option<f64>,
    /// The rows the report used, each once ([`sage_core::SuiteReport::rows_used`]).
    pub rows_used: Vec<sage_core::RowsUsed>,
    /// What the run left out and why (default datasets missing from the mirror, ...).
    pub notes: Vec<String>,
}

/// One evaluation suite.
pub trait Suite: Send + Sync {
    /// The name `sage run` takes (`sensitivity`, `align-sim`, ...).
    fn name(&self) -> &'static str;

    /// One line: what the suite measures.
    fn summary(&self) -> &'static str;

    /// The datasets a run without datasets uses (those that are local), as `name/split`.
    fn default_datasets(&self) -> Vec<String>;

    /// The registry datasets the suite reads whatever datasets it is given, as `name/split`
    /// (ALIGN-SIM's AFIN and WordNet, EvalRank's lists): `sage data fetch --for` fetches them
    /// with the others.
    fn reference_datasets(&self) -> Vec<String> {
        Vec::new()
    }

    /// The kinds of dataset the suite reads (`sage suites` lists them); a dataset of another kind
    /// is refused before any work, naming these. Empty: the suite takes no datasets, or does not
    /// say (then nothing is checked).
    fn kinds(&self) -> &'static [DatasetKind] {
        &[]
    }

    /// Whether a classical metric can be the subject (else only an embedding model).
    fn takes_metrics(&self) -> bool {
        true
    }

    /// Runs the suite.
    fn run(&self, subject: &Subject, request: &Request) -> Result<Outcome>;

    /// The suite's options as its one declaration states them ([`sage_core::suite_options!`]):
    /// `sage run NAME` spells each as a flag, `sage suites` lists them with their defaults. Empty
    /// for a suite that declares none (its options are still read in `run`; `--max-rows` then
    /// becomes its `max_rows` option).
    fn options(&self) -> Vec<sage_core::OptionInfo> {
        Vec::new()
    }

    /// Reads `options` into the suite's typed options and checks their ranges, running nothing:
    /// a caller asks before it loads a model, so a bad value costs no load. `run` reads them
    /// the same way. By default nothing is checked here (a suite that only reads its options
    /// in `run`).
    fn check_options(&self, options: &Map<String, Value>) -> Result<()> {
        let _ = options;
        Ok(())
    }

    /// What this machine lacks for a run with `options` (a model that is not fetched, a server
    /// without the model name it needs), said before any work: bench-all skips such a run with
    /// this reason rather than fail it. Options that do not read are [`Suite::check_options`]'s
    /// to refuse, not this. By default nothing is lacking: a suite that reads only datasets says
    /// which it skipped in its notes.
    fn missing(&self, options: &Map<String, Value>) -> Option<String> {
        let _ = options;
        None
    }

    /// Where a run's result goes in a results folder, as `(suite folder, task)`: the file is
    /// `<similarity>/<suite folder>/<task>.json`, the layout bench-all writes and `sage report`
    /// reads. By default `<name>/<name>`; the five SAGE tasks are `sage/<name>`.
    fn result_location(&self, _options: &Map<String, Value>) -> (&'static str, String) {
        (self.name(), self.name().to_owned())
    }

    /// What a job of this suite costs at its default sizes, one hint per task it writes (the
    /// stems [`Suite::result_location`] gives): what bench-all balances `--shard` shares by
    /// before a run has finished. By default a mid-sized SAGE task's, for the default task.
    fn cost_hints(&self) -> Vec<sage_core::CostHint> {
        vec![sage_core::CostHint::unmeasured(
            self.result_location(&Map::new()).1,
        )]
    }
}

impl Outcome {
    /// The outcome of a run of `suite` that gave `report`, with `notes`.
    pub fn of(
        suite: &'static str,
        report: &impl sage_core::SuiteReport,
        notes: Vec<String>,
    ) -> Result<Outcome> {
        Ok(Outcome {
            report: serde_json::to_value(report).map_err(|e| SuiteError::Run {
                suite,
                source: Box::new(e),
            })?,
            score: report.score(),
            rows_used: sage_core::RowsUsed::distinct(report.rows_used()),
            notes,
        })
    }

    /// The result file of this outcome, as bench-all writes one: the report, the rows it used,
    /// the notes, the seed, and when and where it ran. `similarity` names the subject (its
    /// `name` is the results-folder name: see [`sage_core::result_label`]); `parameters` says
    /// how the run was asked for.
    pub fn envelope(
        &self,
        suite: &dyn Suite,
        request: &Request,
        similarity: sage_core::SimilarityRecord,
        parameters: sage_core::Parameters,
        wall_seconds: f64,
    ) -> sage_core::ResultEnvelope {
        let (folder, task) = suite.result_location(&request.options);
        sage_core::ResultEnvelope {
            datasets: self.rows_used.clone(),
            harness_version: env!("CARGO_PKG_VERSION").to_owned(),
            // as `sage run` says them on stderr: each names its suite
            notes: self
                .notes
                .iter()
                .map(|note| format!("{}: {note}", suite.name()))
                .collect(),
            parameters,
            quick: false,
            score: self.score,
            report: self.report.clone(),
            run: sage_core::RunRecord {
                // a library has no checkout: the caller's build may say which commit it is
                git_revision: option_env!("SAGE_GIT_REVISION").map(str::to_owned),
                host: sage_core::Host::detect(),
                timestamp: sage_core::utc_timestamp(),
                wall_seconds,
                // the caller knows its models: `sage run` fills it in
                embedding: Vec::new(),
            },
            schema: sage_core::RESULT_SCHEMA.to_owned(),
            seed: request.seed.0,
            similarity,
            suite: folder.to_owned(),
            task,
        }
    }
}

/// The suites and metrics a run can name: the one lookup of `sage run <suite>`, `sage suites`,
/// `sage metrics`, `--similarity` and the Python package.
///
/// [`Registry::standard`] holds what sage-rs ships. A suite or metric defined elsewhere (a user's
/// crate, a test) is one registration: `Registry::standard().with_suite(MySuite)` or
/// `.with_metric(Metric::new("mine", build))`, then the registry is handed to the command line
/// (`sage_cli::main`), which bench-all asks for its job list (`sage suites`, `sage metrics`).
#[derive(Clone)]
pub struct Registry {
    suites: Vec<Arc<dyn Suite>>,
    metrics: Vec<Metric>,
}

impl Registry {
    /// Every suite and metric of sage-rs, suites in the order of the reports.
    pub fn standard() -> Registry {
        Registry {
            suites: vec![
                Arc::new(HumanPref),
                Arc::new(ROBUSTNESS),
                Arc::new(SENSITIVITY),
                Arc::new(CLUSTERING),
                Arc::new(RETRIEVAL),
                Arc::new(AlignSim),
                Arc::new(EvalRank),
                Arc::new(Pteb),
                Arc::new(Noise),
                Arc::new(Compression),
                Arc::new(Transfer),
                Arc::new(Throughput),
            ],
            metrics: Metric::BUILT_IN.to_vec(),
        }
    }

    /// The registry with `suite` added after the others.
    ///
    /// # Panics
    /// When a suite of that name is registered already: two suites cannot share one `sage run`
    /// name, and registrations are written in code, so this is a programming error.
    pub fn with_suite(mut self, suite: impl Suite + 'static) -> Registry {
        assert!(
            self.find(suite.name()).is_err(),
            "a suite called {:?} is registered already",
            suite.name()
        );
        self.suites.push(Arc::new(suite));
        self
    }

    /// The registry with `metric` added after the others.
    ///
    /// # Panics
    /// When a metric of that name is registered already (see [`Registry::with_suite`]).
    pub fn with_metric(mut self, metric: Metric) -> Registry {
        assert!(
            !self.metrics.contains(&metric),
            "a metric called {:?} is registered already",
            metric.name()
        );
        self.metrics.push(metric);
        self
    }

    /// Every registered suite.
    pub fn suites(&self) -> impl Iterator<Item = &dyn Suite> {
        self.suites.iter().map(|s| s.as_ref())
    }

    /// Every registered metric.
    pub fn metrics(&self) -> &[Metric] {
        &self.metrics
    }

    /// The registered suite called `name`.
    pub fn find(&self, name: &str) -> Result<&dyn Suite> {
        self.suites()
            .find(|s| s.name() == name)
            .ok_or_else(|| SuiteError::UnknownSuite {
                name: name.to_owned(),
                known: self
                    .suites()
                    .map(|s| s.name())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }

    /// The registered metric called `name`; the error lists the registered ones.
    pub fn metric(&self, name: &str) -> std::result::Result<Metric, sage_metrics::MetricsError> {
        Metric::named(name, &self.metrics)
    }

    /// The subject a spec names: a registered metric when the spec is a metric's name, else the
    /// model `load` gives for it. The one reading of `--similarity` and of a Python string.
    pub fn subject<E>(
        &self,
        spec: &str,
        load: impl FnOnce(&str) -> std::result::Result<Arc<dyn Embedder>, E>,
    ) -> std::result::Result<Subject, E> {
        match self.metric(spec) {
            Ok(metric) => Ok(Subject::Metric(metric)),
            Err(_) => Ok(Subject::Model(load(spec)?)),
        }
    }

    /// Every registered suite, described (`sage suites`).
    pub fn catalogue(&self) -> Vec<SuiteInfo> {
        self.suites()
            .map(|s| {
                let (folder, task) = s.result_location(&Map::new());
                SuiteInfo {
                    name: s.name(),
                    summary: s.summary(),
                    default_datasets: s.default_datasets(),
                    reference_datasets: s.reference_datasets(),
                    kinds: s.kinds().iter().map(|k| k.name()).collect(),
                    takes_metrics: s.takes_metrics(),
                    result_suite: folder,
                    result_task: task,
                    cost_hints: s.cost_hints(),
                    options: s.options(),
                }
            })
            .collect()
    }
}

/// What `sage suites` and `sage_rs.suites()` say of a suite.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SuiteInfo {
    /// [`Suite::name`].
    pub name: &'static str,
    /// [`Suite::summary`].
    pub summary: &'static str,
    /// [`Suite::default_datasets`].
    pub default_datasets: Vec<String>,
    /// [`Suite::reference_datasets`].
    pub reference_datasets: Vec<String>,
    /// [`Suite::kinds`], by name.
    pub kinds: Vec<&'static str>,
    /// [`Suite::takes_metrics`].
    pub takes_metrics: bool,
    /// Where a run with default options writes its result ([`Suite::result_location`]): the
    /// suite folder,
    pub result_suite: &'static str,
    /// and the task, the file's stem.
    pub result_task: String,
    /// [`Suite::cost_hints`].
    pub cost_hints: Vec<sage_core::CostHint>,
    /// [`Suite::options`], with their defaults.
    pub options: Vec<sage_core::OptionInfo>,
}

/// Reads a suite's options; serde names the unknown or mistyped field.
fn options<T: serde::de::DeserializeOwned + sage_core::SuiteOptions + sage_core::CheckOptions>(
    suite: &'static str,
    options: &Map<String, Value>,
) -> Result<T> {
    // one seed per run, the request's: an options `seed` would be silently overridden
    if options.contains_key("seed") {
        return Err(SuiteError::Options {
            suite,
            message: "the seed is the run's (seed=, --seed), not an option".into(),
        });
    }
    let parsed: T = serde_json::from_value(Value::Object(options.clone())).map_err(|e| {
        SuiteError::Options {
            suite,
            message: e.to_string(),
        }
    })?;
    // every caller's options (flags, --options, bench.toml, Python keywords) meet their ranges
    // here, before any data is read
    checked(suite, &parsed)?;
    // a required option has no default to fall back on: absent, it is named, not defaulted
    // (after the check, whose own words for it, if any, come first)
    if let [first, ..] = sage_core::missing_required(T::FIELDS, options)[..] {
        return Err(SuiteError::Options {
            suite,
            message: format!("{first} is required: give it as an option ({first}=...) or its flag"),
        });
    }
    Ok(parsed)
}

/// `options`' ranges checked, an error naming the suite, the option, the value and the range.
fn checked(suite: &'static str, options: &impl sage_core::CheckOptions) -> Result<()> {
    options.check().map_err(|e| SuiteError::Options {
        suite,
        message: match e {
            sage_core::SageError::InvalidArgument(why) => why,
            other => other.to_string(),
        },
    })
}

/// The datasets asked for, else the defaults that are local (the others become notes); none
/// local is an error listing every reason.
fn datasets_or_local_defaults(
    suite: &'static str,
    kinds: &[DatasetKind],
    request: &Request,
    defaults: &[(&'static str, &'static str)],
    notes: &mut Vec<String>,
) -> Result<Vec<(String, String)>> {
    if !request.datasets.is_empty() {
        for (name, _) in &request.datasets {
            check_kind(suite, kinds, request.root, name)?;
        }
        return Ok(request.datasets.clone());
    }
    let (present, skipped) = local_datasets(suite, request.root, defaults)?;
    notes.extend(skipped);
    Ok(present
        .into_iter()
        .map(|(n, s)| (n.to_owned(), s.to_owned()))
        .collect())
}

/// A dataset the suite cannot read is named with the kinds the suite takes and the kind it has;
/// an empty `kinds` checks nothing (a suite that did not say).
fn check_kind(
    suite: &'static str,
    kinds: &[DatasetKind],
    root: &DataRoot,
    name: &str,
) -> Result<()> {
    if kinds.is_empty() {
        return Ok(());
    }
    let kind = root.kind(name).map_err(|e| SuiteError::Datasets {
        suite,
        message: e.to_string(),
    })?;
    if kinds.contains(&kind) {
        return Ok(());
    }
    Err(SuiteError::Datasets {
        suite,
        message: format!(
            "takes {}; dataset {name} holds {}",
            kinds
                .iter()
                .map(|k| k.name())
                .collect::<Vec<_>>()
                .join(", "),
            kind.name()
        ),
    })
}

/// Registry `(name, split)` pairs.
pub type Datasets = Vec<(&'static str, &'static str)>;

/// Those of `defaults` that are in the local mirror, and a `skipped: <why>` note for each of the
/// others; none local is an error listing every reason.
pub fn local_datasets(
    suite: &'static str,
    root: &DataRoot,
    defaults: &[(&'static str, &'static str)],
) -> Result<(Datasets, Vec<String>)> {
    let (present, missing) = root.partition_local(defaults);
    let missing: Vec<String> = missing.iter().map(ToString::to_string).collect();
    if present.is_empty() {
        let mut names: Vec<String> = Vec::new();
        for (name, _) in defaults {
            if !names.iter().any(|n| n == name) {
                names.push((*name).to_owned());
            }
        }
        return Err(SuiteError::NoLocalData {
            suite,
            root: root.describe(),
            missing,
            names,
        });
    }
    Ok((
        present,
        missing
            .into_iter()
            .map(|m| format!("skipped: {m}"))
            .collect(),
    ))
}

fn failed<E: std::error::Error + Send + Sync + 'static>(
    suite: &'static str,
) -> impl Fn(E) -> SuiteError {
    move |e| SuiteError::Run {
        suite,
        source: Box::new(e),
    }
}

fn as_refs(datasets: &[(String, String)]) -> Vec<(&str, &str)> {
    datasets
        .iter()
        .map(|(n, s)| (n.as_str(), s.as_str()))
        .collect()
}

#[cfg(test)]
mod tests;
