//! # sage-py
//!
//! The native module of the `sage_rs` Python package (`sage_rs._native`); the package's Python
//! side (`python/sage_rs`) is the public API and documents it. Built as an abi3 wheel with
//! maturin (`pyproject.toml`); tested by the pytest suite in `tests/`.
//!
//! Design:
//! - One path per thing. Suites run through [`sage_suites`]' registry, perturbations through
//!   [`sage_perturb::perturb_texts`], metrics through [`sage_metrics::Metric`]: the same code as
//!   the `sage` command, so a seed gives the same bytes from Python and from the CLI.
//! - The GIL is released around every piece of Rust work (`Python::detach`). A Python encoder is
//!   called back with it taken again (`Python::attach`) from whichever thread the suite's work
//!   runs on, so a suite's parallel parts queue for the interpreter instead of deadlocking.
//! - Reports cross as JSON text that the Python side parses with `json`: the dicts are the
//!   records the CLI writes, field for field and float for float.
//! - Vectors from sage's own models leave as numpy arrays that take over Rust's buffer (no copy);
//!   vectors from a Python encoder are copied once, into the f32 matrix a suite works on.
#![deny(missing_docs)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use ndarray::Array2;
use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray2};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use sage_core::{Embedder, EmbedderIdentity, Role, RunSeed, SageError as CoreError};
use sage_embed::{default_cache_path, LoadOptions, LoadedModel, Metered};
use sage_measures::RankedDoc;
use sage_perturb::PerturbationSpec;
use sage_suites::{Request, Subject};

create_exception!(
    _native,
    SageError,
    PyException,
    "An error from sage-rs: bad input, a missing dataset or model, a failed run. The message names the file and line where there is one."
);

fn py_err(e: impl std::error::Error + 'static) -> PyErr {
    SageError::new_err(sage_core::said_once(&e))
}

fn role(name: &str) -> PyResult<Role> {
    match name {
        "plain" => Ok(Role::Plain),
        "query" => Ok(Role::Query),
        "document" => Ok(Role::Document),
        other => Err(SageError::new_err(format!(
            "unknown role {other:?}: plain, query or document"
        ))),
    }
}

/// One of sage's embedding models: a folder, a folder name under `$SAGE_MODELS_DIR`, a hub id
/// (resolved in the Hugging Face cache), or a remote `PROTOCOL:MODEL[@BASE_URL]`.
#[pyclass(frozen, module = "sage_rs")]
struct Model {
    /// The model, and what its runs' result files read their embedding work from.
    loaded: Arc<LoadedModel>,
    spec: String,
}

#[pymethods]
impl Model {
    /// Loads the model; with `cache`, vectors are read from and written to the embedding cache
    /// the CLI uses (`$SAGE_CACHE_DIR/embeddings.redb`).
    #[new]
    #[pyo3(signature = (spec, *, cache = true))]
    fn new(py: Python<'_>, spec: String, cache: bool) -> PyResult<Model> {
        let loaded = Arc::new(py.detach(|| load_model(&spec, cache))?);
        Ok(Model { loaded, spec })
    }

    /// One row per text, float32, as a numpy array that owns the model's output buffer.
    #[pyo3(signature = (texts, role = "plain"))]
    fn embed<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<String>,
        role: &str,
    ) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let role = self::role(role)?;
        let vectors = py.detach(|| {
            let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
            self.loaded.embedder().embed_as(&texts, role)
        });
        Ok(vectors.map_err(py_err)?.into_pyarray(py))
    }

    /// Width of the vectors.
    #[getter]
    fn dimension(&self) -> usize {
        self.loaded.embedder().dimension()
    }

    /// What the model is (id, revision, pooling, normalisation, length), as JSON.
    #[getter]
    fn identity_json(&self) -> PyResult<String> {
        serde_json::to_string(self.loaded.embedder().identity()).map_err(py_err)
    }

    fn __repr__(&self) -> String {
        format!("sage_rs.Model({:?})", self.spec)
    }
}

fn load_model(spec: &str, cache: bool) -> PyResult<LoadedModel> {
    let mut options = LoadOptions::from_env();
    if cache {
        options = options.cached(default_cache_path());
    }
    let model = sage_embed::load(spec, &options).map_err(|e| {
        SageError::new_err(format!(
            "loading model {spec:?}: {}",
            sage_core::said_once(&e)
        ))
    })?;
    Ok(model)
}

/// A Python object that embeds: `sage_rs.Encoder` (python/sage_rs/encoder.py) wraps the user's
/// model and gives it this shape: `name`, `revision`, `dimension`, `max_length` (its window,
/// 0 for unknown), `role_variants` (role name to what that role changes, or `None`) and
/// `encode(texts, role)` returning a C-contiguous float32 matrix.
struct PythonEncoder {
    encoder: Py<PyAny>,
    identity: EmbedderIdentity,
    dimension: usize,
    role_variants: HashMap<String, Option<String>>,
}

impl PythonEncoder {
    fn new(encoder: &Bound<'_, PyAny>) -> PyResult<PythonEncoder> {
        let identity = EmbedderIdentity {
            model_id: encoder.getattr("name")?.extract()?,
            revision: encoder.getattr("revision")?.extract()?,
            pooling: "python".into(),
            normalize: false,
            // an encoder object from an older sage_rs has no window: unknown
            max_length: encoder
                .getattr("max_length")
                .and_then(|v| v.extract())
                .unwrap_or(0),
        };
        Ok(PythonEncoder {
            encoder: encoder.clone().unbind(),
            identity,
            dimension: encoder.getattr("dimension")?.extract()?,
            role_variants: encoder.getattr("role_variants")?.extract()?,
        })
    }

    fn encode(&self, texts: &[&str], role: Role) -> sage_core::Result<Array2<f32>> {
        let failed =
            |e: String| CoreError::backend(format!("Python encoder {}", self.identity.model_id), e);
        Python::attach(|py| {
            let out = self
                .encoder
                .bind(py)
                .call_method1("encode", (texts.to_vec(), role.name()))
                .map_err(|e| failed(python_error(py, &e)))?;
            let matrix: PyReadonlyArray2<f32> = out
                .extract()
                .map_err(|e| failed(format!("encode must return a float32 matrix: {e}")))?;
            let matrix = matrix.as_array();
            let shape = matrix.shape();
            if shape != [texts.len(), self.dimension] {
                return Err(failed(format!(
                    "encode returned a {}x{} matrix for {} texts; expected {}x{}",
                    shape[0],
                    shape[1],
                    texts.len(),
                    texts.len(),
                    self.dimension
                )));
            }
            Ok(matrix.to_owned())
        })
    }
}

/// `TypeError: message` and the traceback's last lines: enough to find the failing line in the
/// user's encoder.
fn python_error(py: Python<'_>, e: &PyErr) -> String {
    let trace = e
        .traceback(py)
        .and_then(|t| t.format().ok())
        .unwrap_or_default();
    if trace.is_empty() {
        e.to_string()
    } else {
        format!("{e}\n{}", trace.trim_end())
    }
}

impl Embedder for PythonEncoder {
    fn identity(&self) -> &EmbedderIdentity {
        &self.identity
    }
    fn embed(&self, texts: &[&str]) -> sage_core::Result<Array2<f32>> {
        self.encode(texts, Role::Plain)
    }
    fn dimension(&self) -> usize {
        self.dimension
    }
    fn role_variant(&self, role: Role) -> Option<String> {
        self.role_variants.get(role.name()).cloned().flatten()
    }
    fn embed_as(&self, texts: &[&str], role: Role) -> sage_core::Result<Array2<f32>> {
        self.encode(texts, role)
    }
}

/// The suites and metrics of sage-rs: the same lookup as the `sage` command line's.
static REGISTRY: std::sync::LazyLock<sage_suites::Registry> =
    std::sync::LazyLock::new(sage_suites::Registry::standard);

/// A metric name, a model spec, a `Model`, or a `sage_rs.Encoder`; with, for a model, where
/// its embedding work is read.
fn subject(what: &Bound<'_, PyAny>, cache: bool) -> PyResult<(Subject, Option<WorkMeter>)> {
    if let Ok(model) = what.cast::<Model>() {
        let model = model.get();
        return Ok((
            Subject::Model(model.loaded.embedder()),
            Some(WorkMeter::Loaded(model.loaded.clone())),
        ));
    }
    if let Ok(spec) = what.extract::<String>() {
        let py = what.py();
        let mut loaded = None;
        let subject = REGISTRY.subject(&spec, |spec| {
            let model = Arc::new(py.detach(|| load_model(spec, cache))?);
            let embedder = model.embedder();
            loaded = Some(WorkMeter::Loaded(model));
            Ok::<_, PyErr>(embedder)
        })?;
        return Ok((subject, loaded));
    }
    let encoder = Arc::new(Metered::new(PythonEncoder::new(what)?));
    Ok((
        Subject::Model(encoder.clone()),
        Some(WorkMeter::Encoder(encoder)),
    ))
}

/// Where a run reads what its model embedded: a model loaded here (its cache's counts, or its
/// meter), or the meter around a Python encoder (the seconds in its own `encode`).
enum WorkMeter {
    Loaded(Arc<LoadedModel>),
    Encoder(Arc<Metered<PythonEncoder>>),
}

impl WorkMeter {
    fn read(&self) -> Option<sage_core::EmbeddingWork> {
        match self {
            WorkMeter::Loaded(model) => model.work(),
            WorkMeter::Encoder(encoder) => {
                let (embedded, seconds) = encoder.embedded();
                Some(sage_core::EmbeddingWork {
                    model: encoder.identity().model_id.clone(),
                    embedded,
                    seconds,
                    ..Default::default()
                })
            }
        }
    }
}

/// The classical metrics, by name.
#[pyfunction]
fn metrics() -> Vec<&'static str> {
    REGISTRY.metrics().iter().map(|m| m.name()).collect()
}

/// The seed every command uses when none is given.
#[pyfunction]
fn default_seed() -> u64 {
    RunSeed::default().0
}

/// One score per pair `(text1[i], text2[i])`; text1 is the reference (BM25's document).
#[pyfunction]
#[pyo3(signature = (similarity, text1, text2, raw = false, cache = true))]
fn score_pairs<'py>(
    py: Python<'py>,
    similarity: &Bound<'py, PyAny>,
    text1: Vec<String>,
    text2: Vec<String>,
    raw: bool,
    cache: bool,
) -> PyResult<Bound<'py, PyArray1<f32>>> {
    if text1.len() != text2.len() {
        return Err(SageError::new_err(format!(
            "text1 has {} texts and text2 {}: pairs need one of each",
            text1.len(),
            text2.len()
        )));
    }
    let (subject, _) = subject(similarity, cache)?;
    let similarity = match (&subject, raw) {
        (Subject::Metric(metric), true) => metric.raw_similarity().map_err(py_err)?,
        (Subject::Model(_), true) => {
            return Err(SageError::new_err(
                "raw scores only apply to bm25 (a model's cosine has no batch normalisation)",
            ))
        }
        (subject, false) => subject.similarity(),
    };
    let scores = py.detach(|| {
        let pairs: Vec<(&str, &str)> = text1
            .iter()
            .zip(&text2)
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        similarity.score_pairs(&pairs)
    });
    Ok(scores.map_err(py_err)?.into_pyarray(py))
}

/// Every perturbation kind with its parameters, as JSON.
#[pyfunction]
fn perturbation_kinds() -> PyResult<String> {
    let kinds: Vec<serde_json::Value> = PerturbationSpec::KINDS
        .iter()
        .map(|k| {
            serde_json::json!({
                "name": k.name,
                "needs_wordnet": k.needs_wordnet,
                "parameters": k.parameters.iter().map(|p| serde_json::json!({
                    "name": p.name, "default": p.default, "min": p.min, "max": p.max, "whole": p.whole,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    serde_json::to_string(&kinds).map_err(py_err)
}

/// Perturbs every text (text `i` with the generator of `(seed, perturbation id, i)`, as
/// `sage perturb`) and returns the records as JSON: `text`, `perturbation`, `seed` and the
/// provenance fields.
#[pyfunction]
#[pyo3(signature = (kind, texts, seed, params, wordnet = None))]
fn perturb(
    py: Python<'_>,
    kind: String,
    texts: Vec<String>,
    seed: u64,
    params: Vec<(String, String)>,
    wordnet: Option<PathBuf>,
) -> PyResult<String> {
    py.detach(|| {
        let spec = PerturbationSpec { kind, params };
        let perturbation = spec.build_with_wordnet_dir(wordnet).map_err(py_err)?;
        let id = perturbation.id();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let perturbed = sage_perturb::perturb_texts(perturbation.as_ref(), &refs, RunSeed(seed))
            .map_err(|(i, e)| {
                SageError::new_err(format!("text {i}: {id}: {}", sage_core::said_once(&e)))
            })?;
        let records: Vec<serde_json::Value> = perturbed
            .into_iter()
            .map(|p| {
                let mut record = serde_json::to_value(&p.provenance)?;
                record["perturbation"] = id.clone().into();
                record["seed"] = seed.into();
                record["text"] = p.text.into();
                Ok(record)
            })
            .collect::<Result<_, serde_json::Error>>()
            .map_err(py_err)?;
        serde_json::to_string(&records).map_err(py_err)
    })
}

/// The suite registry as JSON: name, summary, default datasets, whether metrics can run it.
#[pyfunction]
fn suites() -> PyResult<String> {
    json(&REGISTRY.catalogue())
}

/// Runs a registered suite; returns the report as JSON and the run's notes (what it skipped).
#[pyfunction]
#[pyo3(signature = (suite, subject, data_dir, datasets, seed, options, cache = true, results_dir = None, kind = None, columns = None, tables = Vec::new()))]
#[allow(clippy::too_many_arguments)] // a Python function's arguments, named at the call
fn run_suite(
    py: Python<'_>,
    suite: &str,
    subject: &Bound<'_, PyAny>,
    data_dir: Option<PathBuf>,
    datasets: Vec<String>,
    seed: u64,
    options: &str,
    cache: bool,
    results_dir: Option<PathBuf>,
    kind: Option<String>,
    columns: Option<std::collections::BTreeMap<String, String>>,
    tables: Vec<PathBuf>,
) -> PyResult<(String, Vec<String>, Option<PathBuf>)> {
    let suite = REGISTRY.find(suite).map_err(py_err)?;
    let mut root = sage_data::DataRoot::from_flag_or_env(data_dir);
    for file in &tables {
        root.add_tables(file).map_err(py_err)?;
    }
    let hints = sage_data::PathHints {
        kind,
        columns: columns.unwrap_or_default(),
    };
    let resolved = sage_suites::parse_datasets(&mut root, &datasets, &hints).map_err(py_err)?;
    let options = match serde_json::from_str(options).map_err(py_err)? {
        serde_json::Value::Object(map) => map,
        _ => return Err(SageError::new_err("options must be keyword arguments")),
    };
    let request = Request {
        datasets: resolved,
        seed: RunSeed(seed),
        options,
        ..Request::new(&root)
    };
    let spec = subject.extract::<String>().ok();
    let (subject, meter) = subject_for(suite, subject, cache)?;
    let work_before = meter.as_ref().and_then(WorkMeter::read);
    let start = std::time::Instant::now();
    let outcome = py
        .detach(|| suite.run(&subject, &request))
        .map_err(py_err)?;
    let written = match results_dir {
        Some(dir) => {
            let mut envelope = outcome.envelope(
                suite,
                &request,
                subject.record(spec.as_deref()),
                sage_core::Parameters {
                    data_dir: root
                        .root()
                        .map(|r| sage_redact::home_relative(&r.display().to_string()))
                        .unwrap_or_default(),
                    sage_args: vec![
                        "sage_rs.run".into(),
                        suite.name().into(),
                        sage_redact::home_relative(&format!("datasets={datasets:?}")),
                        sage_redact::redact_url(
                            &serde_json::Value::Object(request.options.clone()).to_string(),
                        ),
                    ],
                },
                start.elapsed().as_secs_f64(),
            );
            // a `Model` may have embedded before this run: only this run's work is its own
            envelope.run.embedding = meter
                .as_ref()
                .and_then(WorkMeter::read)
                .map(|after| match &work_before {
                    Some(before) => after.since(before),
                    None => after,
                })
                .into_iter()
                .collect();
            Some(core(envelope.write_into(&dir))?)
        }
        None => None,
    };
    let report = serde_json::to_string(&outcome.report).map_err(py_err)?;
    Ok((report, outcome.notes, written))
}

/// `sage report DIR` from Python: writes report.md, summary.csv and report.html into `dir`;
/// returns what was written and the first screen's numbers as JSON.
#[pyfunction]
#[pyo3(signature = (dir, mteb_results = None))]
fn report(py: Python<'_>, dir: PathBuf, mteb_results: Option<PathBuf>) -> PyResult<String> {
    let written = py
        .detach(|| sage_report::write_report(&dir, mteb_results.as_deref()))
        .map_err(py_err)?;
    json(&written)
}

fn subject_for(
    suite: &dyn sage_suites::Suite,
    what: &Bound<'_, PyAny>,
    cache: bool,
) -> PyResult<(Subject, Option<WorkMeter>)> {
    let (subject, meter) = subject(what, cache)?;
    if matches!(subject, Subject::Metric(_)) && !suite.takes_metrics() {
        return Err(SageError::new_err(format!(
            "{}: ranks embedding vectors: give a model or an encoder, not a metric",
            suite.name()
        )));
    }
    Ok((subject, meter))
}

fn core<T>(result: sage_core::Result<T>) -> PyResult<T> {
    result.map_err(py_err)
}

fn json(value: &impl serde::Serialize) -> PyResult<String> {
    serde_json::to_string(value).map_err(py_err)
}

/// Pearson's r (as scipy.stats.pearsonr).
#[pyfunction]
fn pearson(x: Vec<f64>, y: Vec<f64>) -> PyResult<f64> {
    core(sage_measures::pearson(&x, &y))
}

/// Spearman's rho, ties averaged (as scipy.stats.spearmanr).
#[pyfunction]
fn spearman(x: Vec<f64>, y: Vec<f64>) -> PyResult<f64> {
    core(sage_measures::spearman(&x, &y))
}

/// Two-sided Wilcoxon signed-rank test of x − y (as scipy.stats.wilcoxon), as JSON.
#[pyfunction]
fn wilcoxon(x: Vec<f64>, y: Vec<f64>) -> PyResult<String> {
    json(&core(sage_measures::wilcoxon(&x, &y))?)
}

/// Hodges–Lehmann estimate of x − y with a seeded percentile-bootstrap interval, as JSON.
#[pyfunction]
fn hodges_lehmann(
    py: Python<'_>,
    x: Vec<f64>,
    y: Vec<f64>,
    confidence: f64,
    resamples: usize,
    seed: u64,
) -> PyResult<String> {
    let hl = py.detach(|| {
        sage_measures::hodges_lehmann_bootstrap(&x, &y, confidence, resamples, RunSeed(seed))
    });
    json(&core(hl)?)
}

/// Homogeneity, completeness and V-measure (as scikit-learn), as JSON.
#[pyfunction]
fn v_measure(truth: Vec<String>, predicted: Vec<String>) -> PyResult<String> {
    json(&core(sage_measures::v_measure(&truth, &predicted))?)
}

/// Accuracy, precision, recall and F1 of binary labels, as JSON.
#[pyfunction]
fn binary_classification(truth: Vec<bool>, predicted: Vec<bool>) -> PyResult<String> {
    json(&core(sage_measures::binary_classification(
        &truth, &predicted,
    ))?)
}

/// Holm-adjusted p-values (as statsmodels' multipletests "holm"), as JSON.
#[pyfunction]
fn holm(p_values: Vec<f64>, alpha: f64) -> PyResult<String> {
    json(&core(sage_measures::holm(&p_values, alpha))?)
}

/// Mean and standard deviation with `ddof` degrees of freedom removed, as JSON.
#[pyfunction]
fn mean_std(values: Vec<f64>, ddof: usize) -> PyResult<String> {
    json(&core(sage_measures::mean_std(&values, ddof))?)
}

/// Harmonic mean (as scipy.stats.hmean).
#[pyfunction]
fn harmonic_mean(values: Vec<f64>) -> PyResult<f64> {
    core(sage_measures::harmonic_mean(&values))
}

fn ranked(run: &[(String, f64)]) -> Vec<RankedDoc<'_>> {
    run.iter()
        .map(|(id, score)| RankedDoc { id, score: *score })
        .collect()
}

/// NDCG@k of one query's ranking (trec_eval ndcg_cut.k).
#[pyfunction]
fn ndcg_at_k(run: Vec<(String, f64)>, qrels: HashMap<String, i32>, k: usize) -> PyResult<f64> {
    core(sage_measures::ndcg_at_k(&ranked(&run), &qrels, k))
}

/// Reciprocal rank of one query's ranking, cut at `k` when given (trec_eval recip_rank).
#[pyfunction]
#[pyo3(signature = (run, qrels, k = None))]
fn reciprocal_rank(
    run: Vec<(String, f64)>,
    qrels: HashMap<String, i32>,
    k: Option<usize>,
) -> PyResult<f64> {
    core(sage_measures::reciprocal_rank(&ranked(&run), &qrels, k))
}

/// Average precision of one query's ranking (trec_eval map).
#[pyfunction]
fn average_precision(run: Vec<(String, f64)>, qrels: HashMap<String, i32>) -> f64 {
    sage_measures::average_precision(&ranked(&run), &qrels)
}

/// The native module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("SageError", m.py().get_type::<SageError>())?;
    m.add_class::<Model>()?;
    m.add_function(wrap_pyfunction!(metrics, m)?)?;
    m.add_function(wrap_pyfunction!(default_seed, m)?)?;
    m.add_function(wrap_pyfunction!(score_pairs, m)?)?;
    m.add_function(wrap_pyfunction!(perturbation_kinds, m)?)?;
    m.add_function(wrap_pyfunction!(perturb, m)?)?;
    m.add_function(wrap_pyfunction!(suites, m)?)?;
    m.add_function(wrap_pyfunction!(run_suite, m)?)?;
    m.add_function(wrap_pyfunction!(report, m)?)?;
    m.add_function(wrap_pyfunction!(pearson, m)?)?;
    m.add_function(wrap_pyfunction!(spearman, m)?)?;
    m.add_function(wrap_pyfunction!(wilcoxon, m)?)?;
    m.add_function(wrap_pyfunction!(hodges_lehmann, m)?)?;
    m.add_function(wrap_pyfunction!(v_measure, m)?)?;
    m.add_function(wrap_pyfunction!(binary_classification, m)?)?;
    m.add_function(wrap_pyfunction!(holm, m)?)?;
    m.add_function(wrap_pyfunction!(mean_std, m)?)?;
    m.add_function(wrap_pyfunction!(harmonic_mean, m)?)?;
    m.add_function(wrap_pyfunction!(ndcg_at_k, m)?)?;
    m.add_function(wrap_pyfunction!(reciprocal_rank, m)?)?;
    m.add_function(wrap_pyfunction!(average_precision, m)?)?;
    Ok(())
}
