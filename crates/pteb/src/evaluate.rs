//! A PTEB evaluation: datasets loaded and sampled once, the original score, then per run the
//! paraphrases (seed + run index) and the paraphrased score; the per-dataset summary, the pooled
//! statistics, and comparisons of encoders against a baseline.

use std::collections::{BTreeMap, HashMap};

use rand::Rng;
use sage_core::{Embedder, EmbedderIdentity, RunSeed, Timings};
use sage_data::{
    sample, DataRoot, DatasetKind, LabeledPair, LabeledText, Loaded, RerankingQuery, RowSelection,
    StsPair, SummaryDocument, SummaryRating,
};
use sage_measures::{
    hodges_lehmann_bootstrap, holm, mean, mean_std, percentile, wilcoxon, HodgesLehmann, MeanStd,
    Wilcoxon, BOOTSTRAP_RESAMPLES,
};
use serde::{Deserialize, Serialize};

use crate::ablation::{PromptAblation, PromptCondition, PromptVersus};
use crate::paraphrase::{Judge, ParaphraseStats, Paraphraser, ParaphraserIdentity};
use crate::quality::{
    judge_sts_spearman, mean_figures, measure_run, DatasetQuality, JudgeResult, QualityGate,
    RunQuality,
};
use crate::tasks::{group_summaries, RerankingSample, TaskData, TaskKind};
use crate::{PtebError, Result};

/// The paper's twenty datasets (its Table 13), as (name, split); STS17 is two registry datasets,
/// its official tracks and the cross-lingual pairs only MTEB's copy has. A run uses
/// those in the local mirror and names the others (`sage data fetch` brings them); the
/// `languages` option picks their subsets (English on a CPU, every language on a GPU box).
pub const DEFAULT_DATASETS: [(&str, &str); 21] = [
    ("stsb", "test"),
    ("sickr", "test"),
    ("sts12", "test"),
    ("sts13", "test"),
    ("sts14", "test"),
    ("sts15", "test"),
    ("sts17", "test"),
    ("sts17-extra", "test"),
    ("sts22", "test"),
    ("biosses", "test"),
    ("banking77", "test"),
    ("amazon-counterfactual", "test"),
    ("twentynewsgroups", "test"),
    ("masakhanews", "test"),
    ("twitter-semeval2015", "test"),
    ("rte3", "test"),
    ("askubuntudupquestions", "test"),
    ("rubq-reranking", "test"),
    ("arguana", "test"),
    ("twitterhjerne", "train"),
    ("summeval", "ratings"),
];

/// Settings of an evaluation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Options {
    /// Paraphrase runs (the paper: 5 or 6).
    pub runs: usize,
    /// Seed of run 0; run r uses `seed + r`. Also the sampling and bootstrap seed.
    pub seed: u64,
    /// Rows sampled per dataset (pairs, test texts, queries; summary rows by whole document);
    /// `None` = all.
    pub max_rows: Option<usize>,
    /// Classification training texts sampled; `None` = all.
    pub max_train_rows: Option<usize>,
    /// Classification experiments, each a logistic regression fitted on its own draw of
    /// training texts, their test accuracies averaged (MTEB: 10).
    #[serde(default = "default_classification_experiments")]
    pub classification_experiments: usize,
    /// Training texts per label in each experiment; `None`: MTEB's for the task (32 for
    /// AmazonCounterfactual, else its default 8). One experiment with a count above every
    /// label's rows trains on every training text.
    #[serde(default)]
    pub samples_per_label: Option<usize>,
    /// Paraphrase classification training texts too.
    pub paraphrase_train: bool,
    /// Pairs the judge rates per dataset and run 0 (when a judge is given).
    pub judge_pairs: usize,
    /// What a dataset's paraphrases must meet for its numbers to count.
    pub gate: QualityGate,
    /// Pool and compare datasets whose paraphrases failed the gate too.
    pub pool_unqualified: bool,
    /// Languages to run (`eng`, `eng-Latn` or `en`): a dataset of language subsets (STS17's
    /// `en-ar`) keeps the subsets whose every side is one of them; empty: every subset.
    #[serde(default)]
    pub languages: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            runs: 5,
            seed: RunSeed::default().0,
            max_rows: None,
            max_train_rows: None,
            classification_experiments: default_classification_experiments(),
            samples_per_label: None,
            paraphrase_train: false,
            judge_pairs: 100,
            gate: QualityGate::default(),
            pool_unqualified: false,
            languages: Vec::new(),
        }
    }
}

fn default_classification_experiments() -> usize {
    crate::protocol::CLASSIFICATION_EXPERIMENTS
}

/// One paraphrase run of one dataset.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// The paraphrasing seed.
    pub seed: u64,
    /// The task's main score on the paraphrased data.
    pub score: f64,
    /// How faithful and how different this run's paraphrases are.
    pub quality: RunQuality,
    /// Distinct texts paraphrased.
    pub texts: u64,
    /// Texts that kept their original wording after every attempt failed.
    pub fallbacks: u64,
    /// Requests beyond the first.
    pub retries: u64,
    /// Texts answered from the paraphrase cache.
    pub cache_hits: u64,
}

/// What happened to one dataset.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DatasetResult {
    /// Registry name.
    pub dataset: String,
    /// Split.
    pub split: String,
    /// The language subset (STS17's `en-ar`), for a dataset scored per language as MTEB
    /// scores it; `None`: the dataset as one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subset: Option<String>,
    /// The subset's languages, one per side of a pair (`["eng-Latn", "ara-Arab"]`); empty for a
    /// dataset without languages (English).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub languages: Vec<String>,
    /// Task type.
    pub task: TaskKind,
    /// Main score's name.
    pub metric: String,
    /// The rows used.
    pub rows: RowSelection,
    /// Score on the original texts.
    pub original: f64,
    /// One entry per run.
    pub runs: Vec<RunResult>,
    /// Mean and sample standard deviation of the paraphrased score over runs.
    pub paraphrased: MeanStd,
    /// `paraphrased.mean − original`.
    pub delta: f64,
    /// Fallbacks over all runs.
    pub fallbacks: u64,
    /// Three (original, paraphrase) examples from run 0, for the reader.
    pub examples: Vec<(String, String)>,
    /// Whether the paraphrases can be trusted: figures over the runs, the judge's, the verdict.
    pub quality: DatasetQuality,
}

/// Pooled over datasets × runs: paraphrased − original.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pooled {
    /// (dataset, run) pairs.
    pub n: usize,
    /// Datasets whose paraphrases failed the gate are in it ([`Options::pool_unqualified`]).
    pub includes_unqualified: bool,
    /// Mean delta.
    pub mean_delta: f64,
    /// Hodges–Lehmann shift with its 95% percentile-bootstrap interval.
    pub hodges_lehmann: HodgesLehmann,
    /// Wilcoxon signed-rank test; `None` when every difference is 0.
    pub wilcoxon: Option<Wilcoxon>,
}

/// A PTEB report for one encoder.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PtebReport {
    /// `pteb`.
    pub suite: String,
    /// The encoder.
    pub encoder: EmbedderIdentity,
    /// The paraphraser.
    pub paraphraser: ParaphraserIdentity,
    /// The settings.
    pub options: Options,
    /// Seeds of the runs.
    pub seeds: Vec<u64>,
    /// Per dataset.
    pub datasets: Vec<DatasetResult>,
    /// Pooled statistics (`None` with fewer than 2 dataset-runs to pool).
    pub pooled: Option<Pooled>,
    /// `name/split` of the datasets whose paraphrases failed the gate.
    pub unqualified: Vec<String>,
    /// Datasets asked for and not scored, with why (none of their languages was asked for).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
    /// Fallbacks over every dataset and run.
    pub fallbacks: u64,
    /// The paper's aggregation (its Tables 9 and 10): subsets averaged into datasets, datasets
    /// into tasks, English apart from the other languages ([`crate::aggregate`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_task: Vec<crate::aggregate::TaskAggregate>,
    /// The prompt-sensitivity analysis, when the run compared several paraphrase-prompt
    /// wordings (this report's numbers are the first wording's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_ablation: Option<PromptAblation>,
    /// Where time went.
    pub timings: Timings,
}

impl sage_core::SuiteReport for PtebReport {
    /// None: PTEB reports a change per dataset, not one score to rank by.
    fn score(&self) -> Option<f64> {
        None
    }
    fn rows_used(&self) -> Vec<sage_core::RowsUsed> {
        self.datasets
            .iter()
            .map(|d| d.rows.clone().into())
            .collect()
    }
}

impl DatasetResult {
    /// The dataset's name, with the subset when there is one (`sts17 (en-ar)`): what tables and
    /// plots show.
    pub fn name(&self) -> String {
        match &self.subset {
            Some(subset) => format!("{} ({subset})", self.dataset),
            None => self.dataset.clone(),
        }
    }

    /// `dataset/split`, with the subset when there is one (`sts17/test/en-ar`): how notes and
    /// tables name the result.
    pub fn label(&self) -> String {
        match &self.subset {
            Some(subset) => format!("{}/{}/{subset}", self.dataset, self.split),
            None => format!("{}/{}", self.dataset, self.split),
        }
    }
}

/// One unit PTEB scores: a dataset, or one language subset of it.
#[derive(Clone, Debug)]
pub struct SubsetTask {
    /// The subset's name (`en-ar`); `None` for a dataset scored as one.
    pub subset: Option<String>,
    /// Its languages, one per side of a pair; empty when the rows state none.
    pub languages: Vec<String>,
    /// The task's data, sampled.
    pub task: TaskData,
    /// The rows used.
    pub rows: RowSelection,
}

/// A row's language subset and its languages (one per side).
trait InSubset {
    fn subset(&self) -> Option<&str>;
    fn languages(&self) -> &[String];
}

macro_rules! in_subset {
    ($($row:ty),*) => {$(
        impl InSubset for $row {
            fn subset(&self) -> Option<&str> {
                self.subset.as_deref()
            }
            fn languages(&self) -> &[String] {
                &self.languages
            }
        }
    )*};
}
in_subset!(StsPair, LabeledPair, LabeledText, RerankingQuery);

/// The rows of `loaded` by language subset, in the order the file first names them, as
/// (subset, languages, rows); `None` when no row states a language (the dataset is one unit).
#[allow(clippy::type_complexity)]
fn by_subset<T: InSubset + Clone>(
    loaded: &Loaded<T>,
    what: &str,
) -> Result<Option<Vec<(String, Vec<String>, Loaded<T>)>>> {
    if loaded.rows.iter().all(|r| r.languages().is_empty()) {
        return Ok(None);
    }
    let mut parts: Vec<(String, Vec<String>, Loaded<T>)> = Vec::new();
    for (i, row) in loaded.rows.iter().enumerate() {
        let subset = match (row.subset(), row.languages().is_empty()) {
            (Some(subset), false) => subset,
            _ => {
                return Err(PtebError::Task(format!(
                    "{what}: row {} has no language subset while others have one (each row \
                     of a multilingual file names its subset and its languages)",
                    i + 1
                )))
            }
        };
        match parts.iter_mut().find(|(s, _, _)| s == subset) {
            Some((_, languages, _)) if languages.as_slice() != row.languages() => {
                return Err(PtebError::Task(format!(
                    "{what}: subset {subset} has rows in {} and in {}",
                    languages.join("/"),
                    row.languages().join("/")
                )))
            }
            Some((_, _, part)) => part.rows.push(row.clone()),
            None => parts.push((
                subset.to_owned(),
                row.languages().to_vec(),
                Loaded {
                    dataset: loaded.dataset.clone(),
                    split: loaded.split.clone(),
                    path: loaded.path.clone(),
                    rows: vec![row.clone()],
                    empty_text_lines: Vec::new(),
                    files: loaded.files.clone(),
                },
            )),
        }
    }
    Ok(Some(parts))
}

/// Loads a dataset as the units PTEB scores. A dataset whose rows state their languages
/// (STS17, STS22, AmazonCounterfactual, MasakhaNEWS) splits into its language subsets, each
/// sampled on its own (MTEB scores each subset; the paper averages them); any other is one
/// unit, as [`load_task`] loads it, in the language the registry names for it (TwitterHjerne's
/// Danish), else English. Units whose languages are not all in
/// `options.languages` are left out: an empty list means none of the dataset's languages was
/// asked for.
pub fn load_subsets(
    root: &DataRoot,
    name: &str,
    split: &str,
    options: &Options,
) -> Result<Vec<SubsetTask>> {
    for language in &options.languages {
        if sage_data::languages::mteb_code(language).is_none() {
            return Err(PtebError::Task(format!(
                "languages: {language:?} is no language this harness knows (write eng, \
                 eng-Latn or en)"
            )));
        }
    }
    let what = format!("{name}/{split}");
    let seed = RunSeed(options.seed);
    let max = options.max_rows;
    let kind = root.kind(name)?;
    // (subset, languages, task, rows) of each unit, before the language filter
    let mut units: Vec<Unit> = Vec::new();
    let mut whole = false;
    // each subset sampled on its own, then made a task as the whole dataset is
    match kind {
        DatasetKind::StsPairs => {
            match by_subset(&root.load_mteb::<StsPair>(name, split)?, &what)? {
                None => whole = true,
                Some(parts) => units.extend(subset_units(parts, &what, max, seed, |rows, _| {
                    Ok(sts_task(rows))
                })?),
            }
        }
        DatasetKind::PairClassification | DatasetKind::ParaphrasePairs => {
            match by_subset(&root.load_mteb::<LabeledPair>(name, split)?, &what)? {
                None => whole = true,
                Some(parts) => units.extend(subset_units(parts, &what, max, seed, |rows, _| {
                    Ok(pair_task(rows))
                })?),
            }
        }
        DatasetKind::Clustering => {
            match by_subset(&root.load_mteb::<LabeledText>(name, split)?, &what)? {
                None => whole = true,
                Some(parts) => {
                    units.extend(subset_units(parts, &what, max, seed, |rows, what| {
                        clustering_task(name, rows, what)
                    })?)
                }
            }
        }
        DatasetKind::Reranking => {
            match by_subset(&root.load_mteb::<RerankingQuery>(name, split)?, &what)? {
                None => whole = true,
                Some(parts) => units.extend(subset_units(parts, &what, max, seed, |rows, _| {
                    Ok(reranking_task(rows))
                })?),
            }
        }
        DatasetKind::Classification => {
            match by_subset(&root.load_mteb::<LabeledText>(name, split)?, &what)? {
                None => whole = true,
                Some(parts) => {
                    let train = root.load_mteb::<LabeledText>(name, "train")?;
                    let train_parts =
                        by_subset(&train, &format!("{name}/train"))?.unwrap_or_default();
                    for (subset, languages, part) in parts {
                        let Some((_, _, train_part)) =
                            train_parts.iter().find(|(s, _, _)| *s == subset)
                        else {
                            return Err(PtebError::Task(format!(
                                "{what}/{subset}: the train split has no rows of this subset"
                            )));
                        };
                        let (test, sel) = sample(&part, max, seed);
                        let (train, _) = sample(train_part, options.max_train_rows, seed);
                        let known: std::collections::BTreeSet<&str> =
                            train.iter().map(|r| r.label.as_str()).collect();
                        if let Some(r) = test.iter().find(|r| !known.contains(r.label.as_str())) {
                            return Err(PtebError::Task(format!(
                                "{what}/{subset}: label {:?} is in {split} but not in the \
                                 train rows (the label sets differ across splits)",
                                r.label
                            )));
                        }
                        let data = classification_task(name, train, test, options, seed);
                        units.push((Some(subset), languages, data, sel));
                    }
                }
            }
        }
        _ => whole = true,
    }
    if whole {
        let (task, rows) = load_task(root, name, split, options)?;
        // a one-language dataset the registry names the language of (TwitterHjerne: Danish)
        let languages = match sage_data::entry(name).and_then(|e| e.language) {
            Some(language) if root.user_dataset(name).is_none() => {
                let sides = match task {
                    TaskData::Sts(_) | TaskData::PairClassification(_) => 2,
                    _ => 1,
                };
                vec![language.to_owned(); sides]
            }
            _ => Vec::new(),
        };
        units.push((None, languages, task, rows));
    }
    Ok(units
        .into_iter()
        .filter(|(_, languages, _, _)| {
            sage_data::languages::all_among(languages, &options.languages)
        })
        .map(|(subset, languages, task, rows)| SubsetTask {
            subset,
            languages,
            task,
            rows,
        })
        .collect())
}

/// A unit of [`load_subsets`] before the language filter: (subset, languages, task, rows).
type Unit = (Option<String>, Vec<String>, TaskData, RowSelection);

/// Each subset of `parts` sampled on its own and made a task by `make` (given the rows and the
/// subset's name for its errors).
fn subset_units<T: sage_data::Row + Clone>(
    parts: Vec<(String, Vec<String>, Loaded<T>)>,
    what: &str,
    max: Option<usize>,
    seed: RunSeed,
    make: impl Fn(Vec<T>, &str) -> Result<TaskData>,
) -> Result<Vec<Unit>> {
    parts
        .into_iter()
        .map(|(subset, languages, part)| {
            let (rows, sel) = sample(&part, max, seed);
            let data = make(rows, &format!("{what}/{subset}"))?;
            Ok((Some(subset), languages, data, sel))
        })
        .collect()
}

/// STS rows as the task scores them.
fn sts_task(rows: Vec<StsPair>) -> TaskData {
    TaskData::Sts(
        rows.into_iter()
            .map(|r| (r.sentence1, r.sentence2, r.score))
            .collect(),
    )
}

/// Labelled pairs as the pair-classification task scores them.
fn pair_task(rows: Vec<LabeledPair>) -> TaskData {
    TaskData::PairClassification(
        rows.into_iter()
            .map(|r| (r.sentence1, r.sentence2, r.label))
            .collect(),
    )
}

/// Labelled texts of dataset `name` as the clustering task scores them, in as many sets as MTEB
/// cuts the task into and the rows allow; `what` names them in the error when their labels
/// cannot be clustered.
fn clustering_task(name: &str, rows: Vec<LabeledText>, what: &str) -> Result<TaskData> {
    let labels: Vec<&str> = rows.iter().map(|r| r.label.as_str()).collect();
    if let Some(why) = sage_measures::unclusterable(&labels) {
        return Err(PtebError::Task(format!("{what}: {why}")));
    }
    let sets = crate::tasks::clustering_sets(&labels, crate::protocol::clustering_sets(name));
    Ok(TaskData::Clustering {
        rows: rows.into_iter().map(|r| (r.text, r.label)).collect(),
        sets,
    })
}

/// Reranking queries as the task scores them.
fn reranking_task(rows: Vec<RerankingQuery>) -> TaskData {
    TaskData::Reranking(
        rows.into_iter()
            .map(|r| RerankingSample {
                query: r.query,
                positive: r.positive,
                negative: r.negative,
            })
            .collect(),
    )
}

/// Train and test texts of dataset `name` as the classification task scores them, each
/// experiment's training rows drawn as MTEB draws them.
fn classification_task(
    name: &str,
    train: Vec<LabeledText>,
    test: Vec<LabeledText>,
    options: &Options,
    seed: RunSeed,
) -> TaskData {
    let per_label = options
        .samples_per_label
        .unwrap_or_else(|| crate::protocol::samples_per_label(name));
    let labels: Vec<&str> = train.iter().map(|r| r.label.as_str()).collect();
    let experiments =
        crate::tasks::undersample(&labels, options.classification_experiments, per_label, seed);
    TaskData::Classification {
        train: train.into_iter().map(|r| (r.text, r.label)).collect(),
        test: test.into_iter().map(|r| (r.text, r.label)).collect(),
        paraphrase_train: options.paraphrase_train,
        experiments,
    }
}

/// Loads and samples a dataset as a task.
pub fn load_task(
    root: &DataRoot,
    name: &str,
    split: &str,
    options: &Options,
) -> Result<(TaskData, RowSelection)> {
    let kind = root.kind(name)?;
    let seed = RunSeed(options.seed);
    let max = options.max_rows;
    Ok(match kind {
        DatasetKind::StsPairs => {
            let (rows, sel) = root
                .mteb_rows::<StsPair>(name, split)?
                .sample(max, seed)?
                .into_parts();
            (sts_task(rows), sel)
        }
        DatasetKind::PairClassification | DatasetKind::ParaphrasePairs => {
            let (rows, sel) = root
                .mteb_rows::<LabeledPair>(name, split)?
                .sample(max, seed)?
                .into_parts();
            (pair_task(rows), sel)
        }
        DatasetKind::Classification => {
            let (test, sel) = root
                .mteb_rows::<LabeledText>(name, split)?
                .sample(max, seed)?
                .into_parts();
            let (train, _) = root
                .mteb_rows::<LabeledText>(name, "train")?
                .sample(options.max_train_rows, seed)?
                .into_parts();
            (classification_task(name, train, test, options, seed), sel)
        }
        DatasetKind::Clustering => {
            let (rows, sel) = root
                .mteb_rows::<LabeledText>(name, split)?
                .sample(max, seed)?
                .into_parts();
            (
                clustering_task(name, rows, &format!("{name}/{split}"))?,
                sel,
            )
        }
        DatasetKind::Beir => {
            let beir = root.beir(name, split)?;
            let queries = Loaded {
                dataset: name.to_owned(),
                split: split.to_owned(),
                path: beir.dir.join("queries.jsonl"),
                rows: beir.queries.clone(),
                empty_text_lines: Vec::new(),
                files: beir.files.clone(),
            };
            let (queries, sel) = sample(&queries, max, seed);
            (
                TaskData::Retrieval {
                    corpus: beir
                        .corpus
                        .iter()
                        .map(|d| {
                            (
                                d.id.clone(),
                                format!("{} {}", d.title, d.text).trim().to_owned(),
                            )
                        })
                        .collect(),
                    queries: queries.into_iter().map(|q| (q.id, q.text)).collect(),
                    qrels: beir
                        .qrels
                        .into_iter()
                        .map(|(q, docs)| (q, docs.into_iter().collect()))
                        .collect(),
                    ignore_identical_ids: root.user_dataset(name).is_none()
                        && crate::tasks::IGNORE_IDENTICAL_IDS.contains(&name),
                },
                sel,
            )
        }
        DatasetKind::SummaryRatings => {
            let (rows, sel) = root
                .mteb_rows::<SummaryRating>(name, split)?
                .sample_grouped(max, seed, |r| r.doc_id.clone())?
                .into_parts();
            let docs_name = format!("{name}-docs");
            if root.user_dataset(name).is_some() && !root.has(&docs_name, "docs") {
                // the registry pairs each rating set with its references; a user's set names them
                return Err(PtebError::Task(format!(
                    "{name}: summarization needs the reference summaries of its documents: a \
                     [datasets.{docs_name}] table with kind = \"summary-documents\", \
                     splits = [\"docs\"] (columns doc_id, source, reference)"
                )));
            }
            let docs = root.load_mteb::<SummaryDocument>(&docs_name, "docs")?;
            let references: HashMap<String, Vec<String>> = docs
                .rows
                .into_iter()
                .map(|d| {
                    let refs = if d.references.is_empty() {
                        vec![d.reference]
                    } else {
                        d.references
                    };
                    (d.doc_id, refs)
                })
                .collect();
            (
                TaskData::Summarization(group_summaries(&rows, &references)),
                sel,
            )
        }
        DatasetKind::Reranking => {
            let (rows, sel) = root
                .mteb_rows::<RerankingQuery>(name, split)?
                .sample(max, seed)?
                .into_parts();
            (reranking_task(rows), sel)
        }
        other => {
            return Err(PtebError::Task(format!(
                "{name}: PTEB has no task for {} datasets",
                other.name()
            )))
        }
    })
}

/// Progress of an evaluation, for the caller's display.
pub trait Progress: Sync {
    /// A dataset starts (`index` of `total`).
    fn dataset(&self, _name: &str, _index: usize, _total: usize) {}
    /// `done` of `total` distinct texts of the current run are paraphrased.
    fn paraphrased(&self, _run: usize, _done: u64, _total: u64) {}
    /// `done` of `total` pairs of the current dataset are rated by the judge.
    fn judged(&self, _done: u64, _total: u64) {}
}

/// No display.
pub struct Silent;
impl Progress for Silent {}

/// What rewrites a dataset and what checks the rewrites: the paraphraser, an optional LLM
/// judge, and the reference encoder of the paraphrase-quality record ([`crate::QualityGate`];
/// fixed, never the encoder under test).
#[derive(Clone, Copy)]
pub struct Paraphrasing<'a> {
    /// Writes the paraphrases.
    pub paraphraser: &'a Paraphraser,
    /// Rates them 0–5 on run 0 and is itself checked against STS gold.
    pub judge: Option<&'a Judge>,
    /// Compares each original with its paraphrase.
    pub reference: &'a dyn Embedder,
}

/// Runs PTEB for `encoder` on `datasets` (loaded with [`load_task`]).
pub fn evaluate(
    encoder: &dyn Embedder,
    paraphrasing: Paraphrasing<'_>,
    root: &DataRoot,
    datasets: &[(&str, &str)],
    options: &Options,
    progress: &dyn Progress,
) -> Result<PtebReport> {
    if options.runs == 0 {
        return Err(PtebError::Task("runs must be at least 1".into()));
    }
    options.gate.check()?;
    let Paraphrasing {
        paraphraser,
        judge,
        reference,
    } = paraphrasing;
    let mut timings = Timings::default();
    let seeds: Vec<u64> = (0..options.runs as u64).map(|r| options.seed + r).collect();
    // (result without its verdict, the judge's figures): verdicts wait for the judge's STS
    // agreement over every dataset
    let mut measured = Vec::new();
    let mut units = Vec::new();
    let mut skipped = Vec::new();
    for &(name, split) in datasets {
        let loaded = timings.time(format!("load {name}"), || {
            load_subsets(root, name, split, options)
        })?;
        if loaded.is_empty() {
            skipped.push(format!(
                "{name}/{split}: none of its languages is among those asked for ({})",
                options.languages.join(", ")
            ));
        }
        units.extend(loaded.into_iter().map(|unit| (name, split, unit)));
    }
    if units.is_empty() {
        return Err(PtebError::Task(format!(
            "nothing to score: {}",
            if skipped.is_empty() {
                "no datasets".to_owned()
            } else {
                skipped.join("; ")
            }
        )));
    }
    let total = units.len();
    for (index, (name, split, unit)) in units.into_iter().enumerate() {
        let SubsetTask {
            subset,
            languages,
            task,
            rows,
        } = unit;
        let label = match &subset {
            Some(subset) => format!("{name}/{split}/{subset}"),
            None => format!("{name}/{split}"),
        };
        progress.dataset(&label, index, total);
        // timing phases name the dataset as before; a subset by its whole label
        let phase = if subset.is_some() {
            label.as_str()
        } else {
            name
        };
        if task.is_empty() {
            return Err(PtebError::Task(format!("{label}: no rows to score")));
        }
        let task_seed = RunSeed(options.seed);
        let original = timings.time(format!("score {phase} original"), || {
            task.score(encoder, None, task_seed)
        })?;
        let texts = task.paraphrased_texts();
        // the distinct texts in sorted order: a sum in hash-map order would differ in its last
        // bits from run to run
        let mut distinct: Vec<&str> = texts.clone();
        distinct.sort_unstable();
        distinct.dedup();
        let mut runs = Vec::new();
        let mut examples = Vec::new();
        let mut run0: Option<HashMap<String, String>> = None;
        let groups = task.paraphrase_groups(&languages);
        for (r, &seed) in seeds.iter().enumerate() {
            let (rewrite, stats) = timings.time(format!("paraphrase {phase}"), || {
                paraphrase_groups(paraphraser, &groups, seed, &label, &|done, total| {
                    progress.paraphrased(r, done, total)
                })
            })?;
            let rewritten: Vec<&str> = distinct.iter().map(|o| rewrite[*o].as_str()).collect();
            let quality = timings.time(format!("quality {phase}"), || {
                measure_run(
                    reference,
                    &options.gate,
                    &distinct,
                    &rewritten,
                    stats.fallbacks,
                )
            })?;
            let score = timings.time(format!("score {phase} paraphrased"), || {
                task.score(encoder, Some(&rewrite), task_seed)
            })?;
            if r == 0 {
                examples = texts
                    .iter()
                    .take(3)
                    .map(|t| ((*t).to_owned(), rewrite[*t].clone()))
                    .collect();
            }
            runs.push(RunResult {
                seed,
                score,
                quality,
                texts: stats.unique_texts,
                fallbacks: stats.fallbacks,
                retries: stats.retries,
                cache_hits: stats.cache_hits,
            });
            if r == 0 {
                run0 = Some(rewrite);
            }
        }
        let judged = match (judge, &run0) {
            (Some(judge), Some(rewrite)) => Some(timings.time(format!("judge {phase}"), || {
                judge_dataset(
                    judge,
                    &task,
                    &distinct,
                    rewrite,
                    options.judge_pairs,
                    progress,
                )
            })?),
            _ => None,
        };
        let scores: Vec<f64> = runs.iter().map(|r| r.score).collect();
        let paraphrased = mean_std(&scores, usize::from(scores.len() > 1))?;
        let figures = mean_figures(&runs.iter().map(|r| &r.quality).collect::<Vec<_>>())?;
        measured.push((
            DatasetResult {
                dataset: name.to_owned(),
                split: split.to_owned(),
                subset,
                languages,
                task: task.kind(),
                metric: task.kind().metric().to_owned(),
                rows,
                original,
                delta: paraphrased.mean - original,
                paraphrased,
                fallbacks: runs.iter().map(|r| r.fallbacks).sum(),
                runs,
                examples,
                quality: DatasetQuality {
                    reference_encoder: reference.identity().model_id.clone(),
                    figures,
                    judge: None,
                    verdict: Default::default(),
                },
            },
            judged,
        ));
    }
    let judge_spearman = judge_sts_spearman(
        measured
            .iter()
            .map(|(_, j)| j.as_ref().and_then(|j| j.sts_spearman)),
    );
    let results: Vec<DatasetResult> = measured
        .into_iter()
        .map(|(mut d, judged)| {
            d.quality.verdict = options.gate.verdict(
                &d.quality.figures,
                judged.as_ref(),
                judge_spearman,
                &d.languages,
            );
            d.quality.judge = judged;
            d
        })
        .collect();
    let unqualified: Vec<String> = results
        .iter()
        .filter(|d| !d.quality.verdict.qualified)
        .map(DatasetResult::label)
        .collect();
    let pooled = pooled(&results, options, RunSeed(options.seed))?;
    let by_task = crate::aggregate::by_task(&aggregation_units(&results));
    Ok(PtebReport {
        suite: "pteb".into(),
        encoder: encoder.identity().clone(),
        paraphraser: paraphraser.identity(),
        options: options.clone(),
        seeds,
        fallbacks: results.iter().map(|d| d.fallbacks).sum(),
        datasets: results,
        pooled,
        unqualified,
        skipped,
        by_task,
        prompt_ablation: None,
        timings,
    })
}

/// What the paper's aggregation needs of each result.
pub(crate) fn aggregation_units(results: &[DatasetResult]) -> Vec<crate::aggregate::Unit<'_>> {
    results
        .iter()
        .map(|d| crate::aggregate::Unit {
            dataset: &d.dataset,
            subset: d.subset.as_deref(),
            languages: &d.languages,
            task: d.task,
            original: d.original,
            runs: d.runs.iter().map(|r| r.score).collect(),
            qualified: d.quality.verdict.qualified,
        })
        .collect()
}

/// Every group's texts paraphrased in its language ([`TaskData::paraphrase_groups`]), as one
/// map from original to paraphrase, with the groups' counts added up.
pub(crate) fn paraphrase_groups(
    paraphraser: &Paraphraser,
    groups: &[(Option<&str>, Vec<&str>)],
    seed: u64,
    label: &str,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<(HashMap<String, String>, ParaphraseStats)> {
    let mut rewrite = HashMap::new();
    let mut stats = ParaphraseStats::default();
    let mut done_before = 0u64;
    // progress counts distinct texts, as each group's paraphrasing does
    let distinct = |texts: &[&str]| {
        texts
            .iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len()
    };
    let total: u64 = groups.iter().map(|(_, t)| distinct(t) as u64).sum();
    for (language, texts) in groups {
        let (paraphrases, s) = paraphraser
            .paraphrase_all_in(texts, *language, seed, &|done, _| {
                progress(done_before + done, total)
            })
            .map_err(|e| match e {
                PtebError::Task(m) => PtebError::Task(format!("{label}: {m}")),
                other => other,
            })?;
        done_before += s.unique_texts;
        for (t, p) in texts.iter().zip(paraphrases) {
            rewrite.insert((*t).to_owned(), p.text);
        }
        stats.unique_texts += s.unique_texts;
        stats.cache_hits += s.cache_hits;
        stats.generated += s.generated;
        stats.retries += s.retries;
        stats.fallbacks += s.fallbacks;
    }
    Ok((rewrite, stats))
}

/// The analysis of `reports`, one per wording ((name, report), the reference first), of one
/// encoder on the same datasets and seeds.
pub fn prompt_ablation(reports: &[(&str, &PtebReport)], seed: RunSeed) -> Result<PromptAblation> {
    if reports.len() < 2 {
        return Err(PtebError::Task(
            "the prompt-sensitivity analysis needs two wordings or more (prompts=default,variant-1)"
                .into(),
        ));
    }
    let pool = reports[0].1.options.pool_unqualified;
    // units every wording scored, and none of them failed the gate (unless pooled)
    let scores = |r: &PtebReport| -> BTreeMap<(String, u64), f64> {
        r.datasets
            .iter()
            .filter(|d| pool || d.quality.verdict.qualified)
            .flat_map(|d| {
                d.runs
                    .iter()
                    .map(move |run| ((d.label(), run.seed), run.score))
            })
            .collect()
    };
    let per_prompt: Vec<BTreeMap<(String, u64), f64>> =
        reports.iter().map(|(_, r)| scores(r)).collect();
    let units: Vec<(String, u64)> = per_prompt[0]
        .keys()
        .filter(|k| per_prompt.iter().all(|m| m.contains_key(*k)))
        .cloned()
        .collect();
    if units.len() < 2 {
        return Err(PtebError::Task(format!(
            "the prompt-sensitivity analysis: {} (dataset, run) pairs scored under every wording \
             and qualified; it needs 2 or more (more runs, more datasets, or pool_unqualified)",
            units.len()
        )));
    }
    let columns: Vec<Vec<f64>> = per_prompt
        .iter()
        .map(|m| units.iter().map(|k| m[k]).collect())
        .collect();
    let spread_of = |rows: &[usize]| -> Result<f64> {
        let means: Vec<f64> = columns
            .iter()
            .map(|c| mean(&rows.iter().map(|&i| c[i]).collect::<Vec<_>>()))
            .collect::<std::result::Result<_, _>>()?;
        let high = means.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let low = means.iter().copied().fold(f64::INFINITY, f64::min);
        Ok(high - low)
    };
    let all: Vec<usize> = (0..units.len()).collect();
    let spread = spread_of(&all)?;
    let mut rng = seed.rng("pteb/prompt-ablation");
    let mut resampled = Vec::with_capacity(BOOTSTRAP_RESAMPLES);
    for _ in 0..BOOTSTRAP_RESAMPLES {
        let rows: Vec<usize> = (0..units.len())
            .map(|_| rng.gen_range(0..units.len()))
            .collect();
        resampled.push(spread_of(&rows)?);
    }
    let conditions = reports
        .iter()
        .zip(&columns)
        .map(|((name, r), column)| {
            let counted: Vec<_> = r
                .datasets
                .iter()
                .filter(|d| pool || d.quality.verdict.qualified)
                .collect();
            Ok(PromptCondition {
                prompt: (*name).to_owned(),
                instruction: r.paraphraser.instruction.clone(),
                mean_score: mean(column)?,
                mean_edit_distance: mean(
                    &counted
                        .iter()
                        .map(|d| d.quality.figures.edit_distance)
                        .collect::<Vec<_>>(),
                )?,
                fallbacks: r.fallbacks,
                datasets: counted
                    .iter()
                    .map(|d| (d.label(), d.paraphrased.mean))
                    .collect(),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let mut versus_first = Vec::new();
    for (k, (name, _)) in reports.iter().enumerate().skip(1) {
        let (x, y) = (&columns[k], &columns[0]);
        let equal = x.iter().zip(y).all(|(a, b)| a == b);
        versus_first.push(PromptVersus {
            prompt: (*name).to_owned(),
            n: units.len(),
            hodges_lehmann: hodges_lehmann_bootstrap(x, y, 0.95, BOOTSTRAP_RESAMPLES, seed)?,
            wilcoxon: if equal { None } else { Some(wilcoxon(x, y)?) },
            p_holm: None,
        });
    }
    let tested: Vec<usize> = (0..versus_first.len())
        .filter(|&i| versus_first[i].wilcoxon.is_some())
        .collect();
    if !tested.is_empty() {
        let p: Vec<f64> = tested
            .iter()
            .map(|&i| versus_first[i].wilcoxon.as_ref().map_or(1.0, |w| w.p_value))
            .collect();
        let adjusted = holm(&p, 0.05)?;
        for (&i, p) in tested.iter().zip(adjusted.adjusted) {
            versus_first[i].p_holm = Some(p);
        }
    }
    Ok(PromptAblation {
        conditions,
        units: units.len(),
        spread,
        spread_low: percentile(&resampled, 2.5)?,
        spread_high: percentile(&resampled, 97.5)?,
        versus_first,
    })
}

/// Whether a dataset's numbers enter pooled statistics and comparisons.
fn counts(d: &DatasetResult, options: &Options) -> bool {
    options.pool_unqualified || d.quality.verdict.qualified
}

/// The judge's mean rating of the first `pairs` (original, paraphrase) of run 0 (`distinct`: the
/// dataset's distinct texts, sorted) and, on an STS dataset, its agreement with the gold scores.
fn judge_dataset(
    judge: &Judge,
    task: &TaskData,
    distinct: &[&str],
    rewrite: &HashMap<String, String>,
    pairs: usize,
    progress: &dyn Progress,
) -> Result<JudgeResult> {
    let sample: Vec<(&str, &str)> = distinct
        .iter()
        .take(pairs)
        .map(|o| (*o, rewrite[*o].as_str()))
        .collect();
    let gold: &[(String, String, f64)] = match task {
        TaskData::Sts(rows) => &rows[..rows.len().min(pairs)],
        _ => &[],
    };
    let total = (sample.len() + gold.len()) as u64;
    let (paraphrase_similarity, mut unparsable) =
        judge.mean_rating(&sample, &|done, _| progress.judged(done, total))?;
    let sts_spearman = if gold.is_empty() {
        None
    } else {
        let first = sample.len() as u64;
        let (rho, missed) =
            judge.gold_agreement(gold, &|done, _| progress.judged(first + done, total))?;
        unparsable += missed;
        rho
    };
    Ok(JudgeResult {
        judge: judge.identity(),
        pairs: sample.len(),
        unparsable,
        paraphrase_similarity,
        sts_spearman,
    })
}

/// Pooled paraphrased − original over every (dataset, run) that counts.
pub(crate) fn pooled(
    results: &[DatasetResult],
    options: &Options,
    seed: RunSeed,
) -> Result<Option<Pooled>> {
    let (paraphrased, original): (Vec<f64>, Vec<f64>) = results
        .iter()
        .filter(|d| counts(d, options))
        .flat_map(|d| d.runs.iter().map(move |r| (r.score, d.original)))
        .unzip();
    if paraphrased.len() < 2 {
        return Ok(None);
    }
    let deltas: Vec<f64> = paraphrased
        .iter()
        .zip(&original)
        .map(|(p, o)| p - o)
        .collect();
    let all_zero = deltas.iter().all(|d| *d == 0.0);
    Ok(Some(Pooled {
        n: deltas.len(),
        includes_unqualified: options.pool_unqualified
            && results.iter().any(|d| !d.quality.verdict.qualified),
        mean_delta: mean(&deltas)?,
        hodges_lehmann: hodges_lehmann_bootstrap(
            &paraphrased,
            &original,
            0.95,
            BOOTSTRAP_RESAMPLES,
            seed,
        )?,
        wilcoxon: if all_zero {
            None
        } else {
            Some(wilcoxon(&paraphrased, &original)?)
        },
    }))
}

/// One encoder against the baseline on the paraphrased scores, paired by (dataset, seed).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The baseline encoder's model id.
    pub baseline: String,
    /// The compared encoder's model id.
    pub model: String,
    /// (dataset, run) pairs both have.
    pub n: usize,
    /// Hodges–Lehmann shift of model − baseline, with its 95% bootstrap interval.
    pub hodges_lehmann: HodgesLehmann,
    /// Wilcoxon signed-rank test; `None` when every difference is 0.
    pub wilcoxon: Option<Wilcoxon>,
    /// Holm-adjusted p-value over all comparisons with this baseline.
    pub p_holm: Option<f64>,
    /// Rejected at α = 0.05 after Holm's correction.
    pub significant: bool,
}

/// The paper's Table 7: every report in `others` against `baseline`, paired on the PTEB scores
/// of the (dataset, seed) runs both have; Holm-corrected across the comparisons. Datasets whose
/// paraphrases failed the gate in either report are left out unless the baseline's options
/// pool them.
pub fn compare(
    baseline: &PtebReport,
    others: &[&PtebReport],
    seed: RunSeed,
) -> Result<Vec<Comparison>> {
    let options = &baseline.options;
    let runs = |r: &PtebReport| -> HashMap<(String, u64), f64> {
        r.datasets
            .iter()
            .filter(|d| counts(d, options))
            .flat_map(|d| {
                d.runs
                    .iter()
                    .map(move |run| ((d.label(), run.seed), run.score))
            })
            .collect()
    };
    let base = runs(baseline);
    let mut out = Vec::new();
    for other in others {
        let theirs = runs(other);
        let mut keys: Vec<&(String, u64)> =
            theirs.keys().filter(|k| base.contains_key(*k)).collect();
        keys.sort();
        if keys.len() < 2 {
            let gated = if options.pool_unqualified {
                ""
            } else {
                " whose paraphrases passed the quality gate"
            };
            return Err(PtebError::Task(format!(
                "{} and {} share fewer than 2 (dataset, seed) runs{gated}",
                other.encoder.model_id, baseline.encoder.model_id
            )));
        }
        let x: Vec<f64> = keys.iter().map(|k| theirs[*k]).collect();
        let y: Vec<f64> = keys.iter().map(|k| base[*k]).collect();
        let all_zero = x.iter().zip(&y).all(|(a, b)| a == b);
        out.push(Comparison {
            baseline: baseline.encoder.model_id.clone(),
            model: other.encoder.model_id.clone(),
            n: keys.len(),
            hodges_lehmann: hodges_lehmann_bootstrap(&x, &y, 0.95, BOOTSTRAP_RESAMPLES, seed)?,
            wilcoxon: if all_zero {
                None
            } else {
                Some(wilcoxon(&x, &y)?)
            },
            p_holm: None,
            significant: false,
        });
    }
    let tested: Vec<usize> = (0..out.len())
        .filter(|&i| out[i].wilcoxon.is_some())
        .collect();
    if !tested.is_empty() {
        let p: Vec<f64> = tested
            .iter()
            .map(|&i| out[i].wilcoxon.map_or(1.0, |w| w.p_value))
            .collect();
        let adjusted = holm(&p, 0.05)?;
        for (k, &i) in tested.iter().enumerate() {
            out[i].p_holm = Some(adjusted.adjusted[k]);
            out[i].significant = adjusted.reject[k];
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paraphrase::ParaphraseSettings;
    use crate::testing::report;

    #[test]
    fn pooled_shift_and_comparisons_with_holm() {
        let base = report(
            "base",
            &[
                ("a", 0.80, [0.75, 0.76, 0.74]),
                ("b", 0.70, [0.66, 0.65, 0.67]),
                ("c", 0.60, [0.58, 0.57, 0.59]),
            ],
        );
        let p = base.pooled.as_ref().unwrap();
        assert_eq!(p.n, 9);
        // every paraphrased score is below its original
        assert!(p.hodges_lehmann.estimate < 0.0 && p.hodges_lehmann.ci_high < 0.0);
        assert!(p.wilcoxon.unwrap().p_value < 0.01);
        // JSON round trip: `sage report` compares reports read from result files
        let back: PtebReport =
            serde_json::from_str(&serde_json::to_string(&base).unwrap()).unwrap();
        assert_eq!((back.seeds, back.datasets.len()), (base.seeds.clone(), 3));
        assert!((back.datasets[1].runs[2].score - 0.67).abs() < 1e-12);

        let better = report(
            "better",
            &[
                ("a", 0.85, [0.80, 0.81, 0.79]),
                ("b", 0.75, [0.71, 0.70, 0.72]),
                ("c", 0.65, [0.63, 0.62, 0.64]),
            ],
        );
        let same = report(
            "same",
            &[
                ("a", 0.80, [0.75, 0.76, 0.74]),
                ("b", 0.70, [0.66, 0.65, 0.67]),
                ("c", 0.60, [0.58, 0.57, 0.59]),
            ],
        );
        let c = compare(&base, &[&better, &same], RunSeed(1337)).unwrap();
        assert_eq!(c[0].n, 9);
        assert!((c[0].hodges_lehmann.estimate - 0.05).abs() < 1e-9);
        assert!(c[0].significant && c[0].p_holm.unwrap() < 0.05);
        // identical scores: no test, nothing significant
        assert!(c[1].wilcoxon.is_none() && !c[1].significant);
    }

    /// PTEB on the fixture mirror's STS-B with a scripted paraphraser and the bag-of-words
    /// encoder as both the encoder and the reference.
    fn fixture_run(answer: fn(&str, u64) -> (String, bool), pool_unqualified: bool) -> PtebReport {
        let root = DataRoot::new(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/fixtures/mirror"),
        );
        let words = crate::testing::Words::new();
        let paraphraser = Paraphraser::new(
            Box::new(crate::testing::Scripted {
                answer,
                calls: Default::default(),
            }),
            ParaphraseSettings::default(),
            None,
        );
        let paraphrasing = Paraphrasing {
            paraphraser: &paraphraser,
            judge: None,
            reference: &words,
        };
        let options = Options {
            runs: 2,
            pool_unqualified,
            ..Options::default()
        };
        evaluate(
            &words,
            paraphrasing,
            &root,
            &[("stsb", "test")],
            &options,
            &Silent,
        )
        .unwrap()
    }

    #[test]
    fn unfaithful_paraphrases_are_marked_and_kept_out_of_pooling_and_comparisons() {
        // the words reversed: the same bag of words (cosine 1), a different wording
        let faithful = fixture_run(
            |t, _| {
                (
                    t.split_whitespace().rev().collect::<Vec<_>>().join(" "),
                    false,
                )
            },
            false,
        );
        let q = &faithful.datasets[0].quality;
        assert!(q.verdict.qualified, "{q:?}");
        assert!((q.figures.reference_cosine - 1.0).abs() < 1e-6);
        assert!(q.figures.edit_distance > 0.5);
        assert!(faithful.unqualified.is_empty());
        assert_eq!(faithful.pooled.as_ref().map(|p| p.n), Some(2));

        // every word replaced by a token of its length: nothing left of the meaning
        fn unrelated(text: &str, _: u64) -> (String, bool) {
            let tokens: Vec<String> = text
                .split_whitespace()
                .map(|w| format!("x{}", w.len()))
                .collect();
            (tokens.join(" "), false)
        }
        let unfaithful = fixture_run(unrelated, false);
        let q = &unfaithful.datasets[0].quality;
        assert!(!q.verdict.qualified);
        assert_eq!(q.figures.share_below, 1.0);
        assert!(
            q.verdict.reasons[0].starts_with("reference cosine 0.000 < 0.78"),
            "{q:?}"
        );
        assert_eq!(unfaithful.unqualified, ["stsb/test"]);
        // its numbers stay in the report, but nothing is pooled from them
        assert_eq!(unfaithful.datasets[0].runs.len(), 2);
        assert!(unfaithful.pooled.is_none());
        let error = compare(&unfaithful, &[&unfaithful], RunSeed(1)).unwrap_err();
        assert!(
            error.to_string().contains("passed the quality gate"),
            "{error}"
        );

        // asked to, the pooled statistics take it in and say so
        let pooled_anyway = fixture_run(unrelated, true);
        let pooled = pooled_anyway.pooled.unwrap();
        assert!(pooled.includes_unqualified && pooled.n == 2);
        assert_eq!(pooled_anyway.unqualified, ["stsb/test"]);
    }

    /// Answers with the text's words reversed and records every instruction it was asked with,
    /// with the text.
    struct Recording {
        asked: std::sync::Mutex<Vec<(String, String)>>,
    }

    impl sage_llm::ChatModel for Recording {
        fn identity(&self) -> String {
            "recording".into()
        }
        fn count_tokens(&self, text: &str) -> sage_llm::Result<usize> {
            Ok(text.split_whitespace().count())
        }
        fn complete(
            &self,
            m: &[sage_llm::ChatMessage],
            _: &sage_llm::Sampling,
        ) -> sage_llm::Result<sage_llm::Completion> {
            let (instruction, text) = m[1].content.split_once("\n\nText: ").unwrap();
            self.asked
                .lock()
                .unwrap()
                .push((instruction.to_owned(), text.to_owned()));
            Ok(sage_llm::Completion {
                text: text.split_whitespace().rev().collect::<Vec<_>>().join(" "),
                truncated: false,
            })
        }
    }

    fn fixture_root() -> DataRoot {
        DataRoot::new(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/fixtures/mirror"),
        )
    }

    /// STS17's fixture (8 pairs of each official track): one result per language subset, each
    /// with its languages; a text is asked for in its own language (each side of a
    /// cross-lingual pair in its own); `languages` keeps the subsets wholly in the languages
    /// given; what no language asked for reaches is skipped with a reason.
    #[test]
    fn language_subsets_are_scored_apart_and_paraphrased_in_their_languages() {
        let root = fixture_root();
        // words share no bin across scripts: lengths keep cross-lingual cosines from being all
        // equal (their Spearman undefined)
        struct WordsAndLength(crate::testing::Words);
        impl Embedder for WordsAndLength {
            fn identity(&self) -> &EmbedderIdentity {
                self.0.identity()
            }
            fn dimension(&self) -> usize {
                self.0.dimension() + 1
            }
            fn embed(&self, texts: &[&str]) -> sage_core::Result<ndarray::Array2<f32>> {
                let words = self.0.embed(texts)?;
                let mut m = ndarray::Array2::zeros((texts.len(), self.dimension()));
                for (i, t) in texts.iter().enumerate() {
                    m.row_mut(i)
                        .slice_mut(ndarray::s![..words.ncols()])
                        .assign(&words.row(i));
                    m[[i, words.ncols()]] = t.chars().count() as f32;
                }
                Ok(m)
            }
        }
        let words = WordsAndLength(crate::testing::Words::new());
        let recording = std::sync::Arc::new(Recording {
            asked: Default::default(),
        });
        struct Shared(std::sync::Arc<Recording>);
        impl sage_llm::ChatModel for Shared {
            fn identity(&self) -> String {
                self.0.identity()
            }
            fn count_tokens(&self, text: &str) -> sage_llm::Result<usize> {
                self.0.count_tokens(text)
            }
            fn complete(
                &self,
                m: &[sage_llm::ChatMessage],
                s: &sage_llm::Sampling,
            ) -> sage_llm::Result<sage_llm::Completion> {
                self.0.complete(m, s)
            }
        }
        let paraphraser = Paraphraser::new(
            Box::new(Shared(recording.clone())),
            crate::ParaphraseSettings::default(),
            None,
        );
        let run = |languages: &[&str], datasets: &[(&str, &str)]| {
            evaluate(
                &words,
                Paraphrasing {
                    paraphraser: &paraphraser,
                    judge: None,
                    reference: &words,
                },
                &root,
                datasets,
                &Options {
                    runs: 1,
                    languages: languages.iter().map(|l| (*l).to_owned()).collect(),
                    ..Options::default()
                },
                &Silent,
            )
        };
        let all = run(&[], &[("sts17", "test")]).unwrap();
        let subsets: Vec<(Option<&str>, Vec<&str>, usize)> = all
            .datasets
            .iter()
            .map(|d| {
                (
                    d.subset.as_deref(),
                    d.languages.iter().map(String::as_str).collect(),
                    d.rows.used_rows,
                )
            })
            .collect();
        assert_eq!(
            subsets,
            [
                (Some("ar-ar"), vec!["ara-Arab", "ara-Arab"], 8),
                (Some("en-ar"), vec!["eng-Latn", "ara-Arab"], 8),
                (Some("es-es"), vec!["spa-Latn", "spa-Latn"], 8),
                (Some("es-en"), vec!["spa-Latn", "eng-Latn"], 8),
                (Some("en-en"), vec!["eng-Latn", "eng-Latn"], 8),
                (Some("en-tr"), vec!["eng-Latn", "tur-Latn"], 8),
            ]
        );
        assert_eq!(all.datasets[1].label(), "sts17/test/en-ar");
        assert_eq!(all.datasets[1].name(), "sts17 (en-ar)");
        // every text of a subset's side was asked for in that side's language
        let asked = recording.asked.lock().unwrap().clone();
        let rows: Vec<StsPair> = root.load_mteb::<StsPair>("sts17", "test").unwrap().rows;
        let instruction_for = |text: &str| -> Vec<&str> {
            asked
                .iter()
                .filter(|(_, t)| t == text)
                .map(|(i, _)| i.as_str())
                .collect()
        };
        for row in &rows {
            for (text, language) in [
                (&row.sentence1, &row.languages[0]),
                (&row.sentence2, &row.languages[1]),
            ] {
                let said = instruction_for(text);
                assert!(!said.is_empty(), "{text} was not paraphrased");
                let name = sage_data::languages::english_name(language).unwrap();
                for instruction in said {
                    if name == "English" {
                        assert_eq!(instruction, crate::PromptStyle::English.instruction());
                    } else {
                        assert!(
                            instruction.starts_with(&format!("The text below is in {name}.")),
                            "{text}: {instruction}"
                        );
                    }
                }
            }
        }

        let some = run(&["eng", "ar"], &[("sts17", "test"), ("stsb", "test")]).unwrap();
        let kept: Vec<String> = some.datasets.iter().map(DatasetResult::label).collect();
        assert_eq!(
            kept,
            [
                "sts17/test/ar-ar",
                "sts17/test/en-ar",
                "sts17/test/en-en",
                "stsb/test"
            ]
        );
        assert!(some.skipped.is_empty());
        // a dataset none of whose languages is asked for is skipped, with the reason
        let english = run(&["eng-Latn"], &[("sts17", "test")]).unwrap();
        assert_eq!(english.datasets.len(), 1);
        let german = run(&["de"], &[("sts17", "test")]).unwrap_err().to_string();
        assert!(
            german.contains(
                "nothing to score: sts17/test: none of its languages is among those asked for (de)"
            ),
            "{german}"
        );
        let unknown = run(&["klingon"], &[("sts17", "test")])
            .unwrap_err()
            .to_string();
        assert!(unknown.contains("\"klingon\" is no language"), "{unknown}");

        // a wording that cannot name the language fails on the first non-English subset, named
        let plain = paraphraser.with_prompt(crate::PromptStyle::Wording {
            name: "plain".into(),
            instruction: "Rephrase this.".into(),
        });
        let error = evaluate(
            &words,
            Paraphrasing {
                paraphraser: &plain,
                judge: None,
                reference: &words,
            },
            &root,
            &[("sts17", "test")],
            &Options {
                runs: 1,
                ..Options::default()
            },
            &Silent,
        )
        .unwrap_err()
        .to_string();
        assert!(
            error.starts_with("sts17/test/ar-ar: the prompt wording \"plain\" cannot name the language of Arabic texts"),
            "{error}"
        );
    }

    /// Each wording is a paired condition on the same rows and seeds: a wording that paraphrases
    /// differently moves the scores, one that answers the same does not; the spread, its
    /// interval and each test against the first wording say so.
    #[test]
    fn prompt_ablation_reports_the_spread_and_tests_each_wording() {
        let base = crate::testing::report(
            "m",
            &[
                ("a", 0.80, [0.75, 0.76, 0.74]),
                ("b", 0.70, [0.66, 0.65, 0.67]),
                ("c", 0.60, [0.58, 0.57, 0.59]),
            ],
        );
        let lower = crate::testing::report(
            "m",
            &[
                ("a", 0.80, [0.73, 0.74, 0.72]),
                ("b", 0.70, [0.64, 0.63, 0.65]),
                ("c", 0.60, [0.56, 0.55, 0.57]),
            ],
        );
        let ablation = crate::prompt_ablation(
            &[
                ("default", &base),
                ("variant-1", &lower),
                ("variant-2", &base),
            ],
            RunSeed(1337),
        )
        .unwrap();
        assert_eq!(ablation.units, 9);
        let means: Vec<f64> = ablation.conditions.iter().map(|c| c.mean_score).collect();
        assert!((means[0] - means[1] - 0.02).abs() < 1e-9, "{means:?}");
        assert!((ablation.spread - 0.02).abs() < 1e-9);
        // every paired difference is −0.02: the resampled spread cannot differ
        assert!(
            (ablation.spread_low - 0.02).abs() < 1e-9 && (ablation.spread_high - 0.02).abs() < 1e-9
        );
        let v1 = &ablation.versus_first[0];
        assert_eq!((v1.prompt.as_str(), v1.n), ("variant-1", 9));
        assert!((v1.hodges_lehmann.estimate + 0.02).abs() < 1e-9);
        assert!(v1.p_holm.unwrap() < 0.05);
        let v2 = &ablation.versus_first[1];
        assert!(v2.wilcoxon.is_none() && v2.p_holm.is_none());
        assert_eq!(ablation.conditions[1].datasets["b/test"], 0.64);
        // one wording is no analysis
        let alone = crate::prompt_ablation(&[("default", &base)], RunSeed(1)).unwrap_err();
        assert!(
            alone.to_string().contains("two wordings or more"),
            "{alone}"
        );
    }
}
