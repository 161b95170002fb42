//! # sage-noise
//!
//! How much of a task's quality a similarity keeps as the noise of production text grows:
//! typed queries, OCR'd documents, lost casing and punctuation, dropped and swapped words,
//! boilerplate, cut and padded texts. For each **channel** (a rate-parameterised perturbation
//! of [`sage_perturb`]: keyboard typos, OCR confusions, ...) at each **level** (a rate, or for
//! [`FillerPadding`](sage_perturb::FillerPadding) a length in tokens) the task is scored on noisy
//! input and set against its clean score:
//!
//! - `retention = noisy score / clean score`, with a paired bootstrap 95% interval: the units
//!   (queries, pairs) are resampled once per resample, and the clean and noisy scores of that
//!   resample share the draw;
//! - `change = noisy score − clean score`, with its paired interval, at every point;
//! - **when a retention is reported.** A ratio to a clean score near zero says nothing (BM25's
//!   Spearman of −0.015 on a small STS-B sample once read as "loses everything"). A dataset's
//!   retentions, areas and score are reported only when its clean score is clearly above zero:
//!   the clean score and the low end of its paired bootstrap 95% interval are both above zero.
//!   Otherwise they are absent (`null`), the dataset says why in `note` and is left out of the
//!   category score, and its changes are what the report shows. Where the rule holds, a resample
//!   whose own clean score is not above zero has no retention: it is left out of the intervals,
//!   never counted as a retention of 0;
//! - per channel, the **area** under the retention curve: the trapezoid over
//!   `(0, 1), (level₁, retention₁), ...` divided by the largest level, so 1 is "no loss at any
//!   level" and 0.5 "loses everything linearly". Retention is not capped at 1, so neither is the
//!   area: above 1, the noisy scores beat the clean one (on a small sample, or a metric the noise
//!   happens to favour, as ROUGE on the fixtures' few pairs), and the interval says whether
//!   that is more than chance;
//! - per dataset, the mean area over channels; the category score is the mean over datasets,
//!   with the bootstrap interval and the resamples the report pairs between similarities.
//!
//! Where noise lands, per dataset kind:
//! - **retrieval** (BEIR): the queries (and with `noisy_documents`, the documents too: an OCR'd
//!   corpus); score: NDCG@10 as trec_eval (sage-core's measure), queries without a relevant
//!   document left out, as in SAGE's retrieval task;
//! - **STS**: the second sentence of each pair; score: Spearman of similarity against gold;
//! - **pair classification** (and paraphrase pairs): the second sentence; score: average
//!   precision of similarity for the positive label;
//! - **classification**: the texts of the named split; each takes the majority label of its
//!   five most similar clean `train` texts; score: accuracy;
//! - **clustering**: the texts of one seeded subset, clustered as SAGE's clustering task does
//!   (complete linkage cut at the number of classes); score: V-measure.
//!
//! ## Cost
//! A condition costs only the texts it changes. Retrieval ranks every distinct query text of
//! every condition in **one** pass over the corpus, so the corpus is embedded (or read back
//! from the embedding cache) once per run, whatever the number of conditions; a noisy query
//! equal to its clean text reuses the clean ranking. Memory is that of one retrieval run:
//! the corpus is scored in chunks into a top-10 per query text. Pair tasks score each condition
//! in one batch; an embedding model's cache returns the unchanged sentences.
//!
//! Every noisy text comes from the generator `(run seed, "noise/<dataset stream>/<perturbation
//! id>", unit position)`: the same seed gives the same bytes on any thread count.
#![deny(missing_docs)]

mod conditions;
mod labelled;
mod rank;

use rayon::prelude::*;
use sage_core::{Embedder, RunSeed, Similarity, Timings};
use sage_data::{DataRoot, DatasetKind, KindOf, LabeledPair, Row, RowSelection, StsPair};
use sage_measures::{
    average_precision_score, bootstrap_draw, percentile_interval, spearman, BootstrapInterval,
    BootstrapReplicates, BOOTSTRAP_RESAMPLES,
};
use serde::{Deserialize, Serialize};

pub use conditions::{Axis, Condition, DEFAULT_CHANNELS};
pub use labelled::{
    classification_rows, cluster_error, clustering_subset, vote, ClassificationRows,
    CLUSTERING_TEXTS, NEIGHBOURS,
};

/// Errors of this crate: the error every task over perturbed data shares.
pub type NoiseError = sage_task::TaskError;

/// Result alias of this crate.
pub type Result<T, E = NoiseError> = std::result::Result<T, E>;

/// The kinds of dataset the suite reads.
pub const KINDS: [DatasetKind; 6] = [
    DatasetKind::Beir,
    DatasetKind::StsPairs,
    DatasetKind::PairClassification,
    DatasetKind::ParaphrasePairs,
    DatasetKind::Classification,
    DatasetKind::Clustering,
];

/// The datasets a run without datasets uses: SciFact's queries and STS-B's pairs.
pub const DEFAULT_DATASETS: [(&str, &str); 2] = [("scifact", "test"), ("stsb", "test")];

sage_core::suite_options! {
    /// Run options: the one declaration the flags, `--options`, bench.toml and Python keywords
    /// all read. The channels, rates and lengths are checked together ([`Options::check`]),
    /// before any work.
    #[derive(Clone, Debug, PartialEq)]
    pub struct Options {
        /// The channels swept over `rates`: perturbation kinds with a `rate` parameter (by
        /// default [`DEFAULT_CHANNELS`], the twelve production-noise channels).
        pub channels: Vec<String> = DEFAULT_CHANNELS.iter().map(|c| (*c).to_owned()).collect(),
            sage_core::OptionSpec::any();
        /// Rates in [0, 1]. Rate 0 is the clean condition and always part of each curve.
        pub rates: Vec<f64> = vec![0.0, 0.05, 0.1, 0.2, 0.4], sage_core::OptionSpec::any();
        /// Lengths in cl100k tokens the texts are padded to with filler, at most 320,000;
        /// empty: no length channel.
        pub lengths: Vec<usize> = vec![128, 256, 512], sage_core::OptionSpec::any();
        /// Where a padded text sits in its filler: the share of filler before it (0.5, the
        /// middle).
        pub length_position: f64 = 0.5, sage_core::OptionSpec::between(0.0, 1.0);
        /// Retrieval: noise the documents too (an OCR'd corpus), at the cost of scoring the
        /// corpus once per condition (by default queries only).
        pub noisy_documents: bool = false, sage_core::OptionSpec::any();
        /// Retrieval: queries sampled (seeded); all judged ones when unset.
        pub max_queries: Option<usize> = None, sage_core::OptionSpec::any();
        /// Retrieval: corpus documents sampled (seeded), every relevant one kept; all when unset.
        pub max_docs: Option<usize> = None, sage_core::OptionSpec::any();
        /// Pair tasks: pairs sampled (seeded); classification: texts classified; all when unset.
        /// Clustering: texts clustered ([`CLUSTERING_TEXTS`] when unset).
        pub max_rows: Option<usize> = None, sage_core::OptionSpec::any();
        /// Classification: `train` texts sampled (seeded) as the labelled neighbours; all when
        /// unset.
        pub max_reference: Option<usize> = Some(2000), sage_core::OptionSpec::any();
        /// Most query-document pairs a classical metric scores in one batch.
        pub pair_budget: usize = 1 << 20, sage_core::OptionSpec::any();
        /// Run seed (the request's, never an option).
        pub seed: RunSeed = RunSeed::default(), sage_core::OptionSpec::run_seed();
    }
    also_check = conditions_read;
}

/// The sweep these options ask for reads (every channel known, every rate and length in range).
fn conditions_read(options: &Options) -> sage_core::Result<()> {
    conditions::build(options)
        .map(drop)
        .map_err(|e| sage_core::SageError::InvalidArgument(e.to_string()))
}

impl Options {
    /// The conditions these options sweep, every parameter checked: an unknown channel, a
    /// channel without a rate, a rate outside [0, 1] or a length past the bound is an error
    /// naming it, before any data is read.
    pub fn check(&self) -> Result<Vec<Condition>> {
        conditions::build(self)
    }
}

/// One (channel, level) point of a curve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// The rate, or the length in tokens.
    pub level: f64,
    /// The perturbation's id (`keyboard-typos(rate=0.2)`).
    pub perturbation: String,
    /// The task's score on the noisy input.
    pub score: f64,
    /// `score / clean score`; absent where the clean score is not clearly above zero (see the
    /// crate docs).
    pub retention: Option<f64>,
    /// Paired bootstrap 95% interval of the retention.
    pub ci95: Option<BootstrapInterval>,
    /// `score − clean score`, reported everywhere.
    #[serde(default)]
    pub change: f64,
    /// Paired bootstrap 95% interval of the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change_ci95: Option<BootstrapInterval>,
    /// Share of the noisy texts that differ from their clean text.
    pub changed: f64,
    /// Share of the channel's units touched (words, letters, sites, tokens), over every noisy
    /// text; absent for padding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub touched: Option<f64>,
}

/// One channel's retention curve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChannelReport {
    /// The perturbation kind.
    pub channel: String,
    /// What the levels are.
    pub axis: Axis,
    /// The levels in ascending order, the clean level (0) first.
    pub points: Vec<Point>,
    /// Area under the retention curve over `[0, largest level]`, divided by the largest level;
    /// absent where the retention is.
    pub area: Option<f64>,
    /// Its paired bootstrap 95% interval.
    pub area_ci95: Option<BootstrapInterval>,
    /// Every resample's area (drawn like the category's resamples): the report pairs two
    /// similarities' resamples into a paired bootstrap of their difference.
    pub area_bootstrap: Option<BootstrapReplicates>,
}

/// The task a dataset's kind gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Task {
    /// BEIR: queries ranked against the corpus, NDCG@10.
    Retrieval,
    /// STS pairs: Spearman of similarity against gold.
    Sts,
    /// Labelled pairs: average precision of similarity for the positive label.
    PairClassification,
    /// Labelled texts: accuracy of the nearest `train` neighbours' vote.
    Classification,
    /// Labelled texts: V-measure of complete-linkage clusters.
    Clustering,
}

impl Task {
    /// The score's name.
    pub fn measure(self) -> &'static str {
        match self {
            Task::Retrieval => "ndcg_at_10",
            Task::Sts => "cosine_spearman",
            Task::PairClassification => "average_precision",
            Task::Classification => "knn_accuracy",
            Task::Clustering => "v_measure",
        }
    }
}

/// One dataset.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DatasetReport {
    /// `name/split`.
    pub dataset: String,
    /// The task.
    pub task: Task,
    /// The score's name ([`Task::measure`]).
    pub measure: String,
    /// What the noise lands on (`queries`, `queries and documents`, `sentence2`, `texts`).
    pub noisy: String,
    /// Units scored and resampled (queries, pairs, texts).
    pub units: usize,
    /// Pair, classification and clustering tasks: the rows used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<RowSelection>,
    /// Classification: the `train` rows the texts are classified against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<RowSelection>,
    /// Retrieval: documents in the corpus file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corpus_total: Option<usize>,
    /// Retrieval: documents ranked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corpus_used: Option<usize>,
    /// Retrieval: checksum of the ranked documents' ids and texts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corpus_checksum: Option<String>,
    /// Retrieval: the checks of the set's files ([`sage_data::verify`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub corpus_files: Vec<sage_core::FileCheck>,
    /// The score on clean input.
    pub clean: f64,
    /// Paired bootstrap 95% interval of the clean score (the units resampled as for every point).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clean_ci95: Option<BootstrapInterval>,
    /// One curve per channel.
    pub channels: Vec<ChannelReport>,
    /// Mean area over channels; absent where the clean score is not clearly above zero.
    pub score: Option<f64>,
    /// Why the dataset has no retention, where it has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl DatasetReport {
    /// A report with its scores still to fill in ([`finish`] does).
    fn empty(dataset: String, task: Task, noisy: &str, units: usize) -> DatasetReport {
        DatasetReport {
            dataset,
            task,
            measure: task.measure().to_owned(),
            noisy: noisy.to_owned(),
            units,
            rows: None,
            reference: None,
            corpus_total: None,
            corpus_used: None,
            corpus_checksum: None,
            corpus_files: Vec::new(),
            clean: 0.0,
            clean_ci95: None,
            channels: Vec::new(),
            score: None,
            note: None,
        }
    }

    fn with_rows(self, rows: RowSelection) -> DatasetReport {
        DatasetReport {
            rows: Some(rows),
            ..self
        }
    }
}

impl sage_core::DatasetRows for DatasetReport {
    /// A retrieval dataset's ranked corpus, then the rows of a pair or text task and the
    /// reference rows a classification is scored against.
    fn rows_used(&self) -> Vec<sage_core::RowsUsed> {
        let corpus = match (&self.corpus_checksum, self.corpus_total, self.corpus_used) {
            (Some(checksum), Some(total), Some(used)) => {
                Some(sage_core::RowsUsed::Corpus(sage_core::CorpusSelection {
                    dataset: self.dataset.clone(),
                    corpus_checksum: checksum.clone(),
                    corpus_total: total,
                    corpus_used: used,
                    queries: self.units,
                    files: self.corpus_files.clone(),
                }))
            }
            _ => None,
        };
        let rows = [&self.rows, &self.reference]
            .into_iter()
            .flatten()
            .map(|r| r.clone().into());
        corpus.into_iter().chain(rows).collect()
    }
}

/// A whole run: options, one [`DatasetReport`] per dataset, the mean of their scores with its
/// bootstrap interval and resamples, and the timings.
pub type NoiseReport = sage_measures::CategoryReport<Options, DatasetReport>;

/// What scores: the similarity (pair tasks, a classical metric's ranking, the report's name)
/// and, for an embedding model, its embedder, which retrieval uses to embed the corpus once.
#[derive(Clone, Copy)]
pub struct Scorer<'a> {
    /// The similarity.
    pub similarity: &'a dyn Similarity,
    /// The embedding model behind `similarity`, compared by cosine; `None` for a metric.
    pub embedder: Option<&'a dyn Embedder>,
}

/// A dataset's per-unit values under every condition, and how they become a score.
struct Measured {
    report: DatasetReport,
    statistic: Statistic,
    /// `values[0]` clean, then one per condition, one value per unit.
    values: Vec<Vec<f64>>,
    /// What each condition changed.
    tallies: Vec<conditions::Tally>,
}

/// How per-unit values become a dataset score: the one reading of a task's units that every
/// suite measuring a retention against a reference (noise, compression) resamples.
pub enum Statistic {
    /// Mean (NDCG@10 per query).
    Mean,
    /// Spearman against gold; 0 when the similarity is constant.
    Spearman(Vec<f64>),
    /// Average precision for the positive label.
    AveragePrecision(Vec<bool>),
    /// V-measure of the values (cluster ids) against these labels.
    VMeasure(Vec<String>),
}

impl Statistic {
    /// The score of the units `drawn` (indices into `values`, with repeats for a resample).
    pub fn of(&self, values: &[f64], drawn: &[usize]) -> f64 {
        let picked: Vec<f64> = drawn.iter().map(|&i| values[i]).collect();
        match self {
            Statistic::Mean => picked.iter().sum::<f64>() / picked.len().max(1) as f64,
            Statistic::Spearman(gold) => {
                // a similarity that gives every pair one value (every second sentence dropped)
                // ranks nothing: score 0, not undefined; constant gold is the data's and stays
                // undefined
                if picked.iter().all(|&v| v == picked[0]) {
                    return 0.0;
                }
                let g: Vec<f64> = drawn.iter().map(|&i| gold[i]).collect();
                spearman(&picked, &g).unwrap_or(f64::NAN)
            }
            Statistic::AveragePrecision(truth) => {
                let t: Vec<bool> = drawn.iter().map(|&i| truth[i]).collect();
                average_precision_score(&t, &picked).unwrap_or(f64::NAN)
            }
            Statistic::VMeasure(labels) => {
                let truth: Vec<&str> = drawn.iter().map(|&i| labels[i].as_str()).collect();
                // cluster ids are small integers stored exactly
                let clusters: Vec<u64> = picked.iter().map(|&c| c as u64).collect();
                sage_measures::v_measure(&truth, &clusters).map_or(f64::NAN, |v| v.v_measure)
            }
        }
    }
}

/// `noisy / clean`, undefined (NaN, left out of every interval) unless the clean score is above
/// zero.
pub fn retention(noisy: f64, clean: f64) -> f64 {
    if clean > 0.0 {
        noisy / clean
    } else {
        f64::NAN
    }
}

/// The crate docs' rule: a retention is reported only when the clean score and the low end of
/// its interval are above zero (a clean score without an interval has none).
pub fn retention_is_defined(clean: f64, clean_ci95: Option<&BootstrapInterval>) -> bool {
    // no interval (too few resamples with a score) is no evidence either
    clean > 0.0 && clean_ci95.is_some_and(|ci| ci.low > 0.0)
}

/// The noise suite on each of `datasets` (`name`, `split`; BEIR, STS or labelled pairs).
pub fn evaluate(
    scorer: Scorer,
    root: &DataRoot,
    datasets: &[(&str, &str)],
    options: Options,
) -> Result<NoiseReport> {
    let conditions = options.check()?;
    if datasets.is_empty() {
        return Err(NoiseError::Insufficient("no dataset named".into()));
    }
    let mut timings = Timings::default();
    let mut measured = Vec::new();
    for &(name, split) in datasets {
        let kind = root.kind(name)?;
        measured.push(match kind {
            DatasetKind::Beir => {
                let sampling = sage_retrieval::Sampling {
                    max_docs: options.max_docs,
                    max_queries: options.max_queries,
                    seed: options.seed,
                };
                let set =
                    sage_retrieval::load_ranking_set(root, name, split, sampling, &mut timings)?;
                rank::retrieval(scorer, &set, &conditions, &options, &mut timings)?
            }
            DatasetKind::StsPairs => {
                let (rows, selection) = sampled::<StsPair>(
                    root,
                    (name, split),
                    (options.max_rows, options.seed),
                    &mut timings,
                )?;
                let gold: Vec<f64> = rows.iter().map(|r| r.score).collect();
                let pairs = rows
                    .into_iter()
                    .map(|r| (r.sentence1, r.sentence2))
                    .collect::<Vec<_>>();
                let task = (Task::Sts, Statistic::Spearman(gold));
                pair_task(
                    scorer,
                    task,
                    &pairs,
                    selection,
                    &conditions,
                    &options,
                    &mut timings,
                )?
            }
            DatasetKind::PairClassification | DatasetKind::ParaphrasePairs => {
                let (rows, selection) = sampled::<LabeledPair>(
                    root,
                    (name, split),
                    (options.max_rows, options.seed),
                    &mut timings,
                )?;
                let truth: Vec<bool> = rows.iter().map(|r| r.label).collect();
                let pairs = rows
                    .into_iter()
                    .map(|r| (r.sentence1, r.sentence2))
                    .collect::<Vec<_>>();
                let task = (Task::PairClassification, Statistic::AveragePrecision(truth));
                pair_task(
                    scorer,
                    task,
                    &pairs,
                    selection,
                    &conditions,
                    &options,
                    &mut timings,
                )?
            }
            DatasetKind::Classification => labelled::classification(
                scorer,
                root,
                (name, split),
                &conditions,
                &options,
                &mut timings,
            )?,
            DatasetKind::Clustering => labelled::clustering(
                scorer,
                root,
                (name, split),
                &conditions,
                &options,
                &mut timings,
            )?,
            other => {
                return Err(NoiseError::Insufficient(format!(
                    "{name}: the noise suite reads retrieval (BEIR), STS, pair-classification, \
                     classification and clustering datasets; this one holds {}",
                    other.name()
                )))
            }
        });
    }
    finish(
        scorer.similarity.name(),
        measured,
        options,
        &conditions,
        timings,
    )
}

/// The rows of `name/split` a pair task scores: `max_rows` of them, seeded.
pub fn sampled<T: Row + KindOf + Clone + 'static>(
    root: &DataRoot,
    (name, split): (&str, &str),
    (max_rows, seed): (Option<usize>, RunSeed),
    timings: &mut Timings,
) -> Result<(Vec<T>, RowSelection)> {
    timings.time(format!("load/{name}/{split}"), || {
        Ok(root
            .rows::<T>(name, split)?
            .sample(max_rows, seed)?
            .into_parts())
    })
}

/// A pair task: the second sentence of each pair noised, every condition scored in one batch.
fn pair_task(
    scorer: Scorer,
    (task, statistic): (Task, Statistic),
    pairs: &[(String, String)],
    selection: RowSelection,
    conditions: &[Condition],
    options: &Options,
    timings: &mut Timings,
) -> Result<Measured> {
    let seed = options.seed;
    let dataset = format!("{}/{}", selection.dataset, selection.split);
    if pairs.len() < 2 {
        return Err(NoiseError::Insufficient(format!(
            "{dataset}: {} pairs; a correlation or a ranking needs at least 2",
            pairs.len()
        )));
    }
    // keyed by the split's content, as the other tasks' streams
    let stream = format!("noise/{}", selection.split_checksum);
    let seconds: Vec<&str> = pairs.iter().map(|(_, b)| b.as_str()).collect();
    let score = |texts: &[&str]| -> Result<Vec<f64>> {
        let batch: Vec<(&str, &str)> = pairs
            .iter()
            .zip(texts)
            .map(|((a, _), b)| (a.as_str(), *b))
            .collect();
        Ok(scorer
            .similarity
            .score_pairs(&batch)?
            .into_iter()
            .map(f64::from)
            .collect())
    };
    let clean = timings.time(format!("score/{dataset}/clean"), || score(&seconds))?;
    let mut values = vec![clean];
    let mut noisy_texts = Vec::new();
    for condition in conditions {
        let noisy = condition.apply(&stream, &seconds, seed)?;
        let same = noisy.texts.iter().zip(&seconds).all(|(n, c)| n == c);
        let v = if same {
            values[0].clone()
        } else {
            let texts: Vec<&str> = noisy.texts.iter().map(String::as_str).collect();
            timings.time(format!("score/{dataset}/{}", condition.id()), || {
                score(&texts)
            })?
        };
        values.push(v);
        noisy_texts.push(noisy.tally);
    }
    Ok(Measured {
        report: DatasetReport::empty(dataset, task, "sentence2", pairs.len()).with_rows(selection),
        statistic,
        values,
        tallies: noisy_texts,
    })
}

/// Scores, retentions, curves and areas from every dataset's per-unit values, with the paired
/// bootstrap: resample `b` draws each dataset's units once ([`bootstrap_draw`]) and every
/// condition's retention, every area and the category score of that resample come from that
/// one draw.
fn finish(
    similarity: &str,
    measured: Vec<Measured>,
    options: Options,
    conditions: &[Condition],
    mut timings: Timings,
) -> Result<NoiseReport> {
    const LABEL: &str = "noise/bootstrap";
    let seed = options.seed;
    let sizes: Vec<usize> = measured.iter().map(|m| m.report.units).collect();
    let channels = conditions::channels(conditions);
    // per resample: per dataset, the clean score and every condition's score on that draw
    let resampled: Vec<Vec<(f64, Vec<f64>)>> = timings.time("bootstrap", || {
        (0..BOOTSTRAP_RESAMPLES)
            .into_par_iter()
            .map(|b| {
                let drawn = bootstrap_draw(&sizes, seed, LABEL, b);
                measured
                    .iter()
                    .zip(&drawn)
                    .map(|(m, d)| {
                        let clean = m.statistic.of(&m.values[0], d);
                        let noisy = m.values[1..].iter().map(|v| m.statistic.of(v, d)).collect();
                        (clean, noisy)
                    })
                    .collect()
            })
            .collect()
    });
    let defined = |v: f64| Some(v).filter(|v| v.is_finite());
    let replicates = |values: Vec<Option<f64>>| BootstrapReplicates {
        label: LABEL.to_owned(),
        seed: seed.0,
        group_sizes: sizes.clone(),
        values,
    };
    let mut reports = Vec::new();
    // per dataset whose retention is defined, per resample: the dataset score
    let mut dataset_resamples: Vec<Vec<f64>> = Vec::new();
    for (g, m) in measured.into_iter().enumerate() {
        let all: Vec<usize> = (0..m.report.units).collect();
        let clean = m.statistic.of(&m.values[0], &all);
        let clean_resamples: Vec<Option<f64>> = resampled.iter().map(|r| defined(r[g].0)).collect();
        let clean_ci95 = percentile_interval(&clean_resamples, 0.95)?;
        let has_retention = retention_is_defined(clean, clean_ci95.as_ref());
        // resample b's retention of condition c, under the rule
        let resampled_retention = |b: usize, c: usize| {
            let (clean_b, noisy_b) = &resampled[b][g];
            retention(noisy_b[c], *clean_b)
        };
        let mut curves = Vec::new();
        let mut area_resamples: Vec<Vec<f64>> = Vec::new();
        for (channel, axis, members) in &channels {
            // the clean point, unless the channel ran at level 0 itself
            let mut points = Vec::new();
            if !members.iter().any(|&c| conditions[c].level == 0.0) {
                points.push(Point {
                    level: 0.0,
                    perturbation: "clean".into(),
                    score: clean,
                    retention: has_retention.then(|| retention(clean, clean)),
                    ci95: None,
                    change: 0.0,
                    change_ci95: None,
                    changed: 0.0,
                    touched: None,
                });
            }
            for &c in members {
                let score = m.statistic.of(&m.values[c + 1], &all);
                let changes: Vec<Option<f64>> = resampled
                    .iter()
                    .map(|r| defined(r[g].1[c] - r[g].0))
                    .collect();
                let ci95 = if has_retention {
                    let ci: Vec<Option<f64>> = (0..resampled.len())
                        .map(|b| defined(resampled_retention(b, c)))
                        .collect();
                    percentile_interval(&ci, 0.95)?
                } else {
                    None
                };
                let tally = &m.tallies[c];
                points.push(Point {
                    level: conditions[c].level,
                    perturbation: conditions[c].id(),
                    score,
                    retention: has_retention.then(|| retention(score, clean)),
                    ci95,
                    change: score - clean,
                    change_ci95: percentile_interval(&changes, 0.95)?,
                    changed: tally.changed as f64 / tally.texts.max(1) as f64,
                    touched: tally
                        .units
                        .map(|(units, touched)| touched as f64 / units.max(1) as f64),
                });
            }
            // a level asked for twice: one point
            points.sort_by(|a, b| a.level.total_cmp(&b.level));
            points.dedup_by(|b, a| a.level == b.level);
            if !has_retention {
                curves.push(ChannelReport {
                    channel: channel.clone(),
                    axis: *axis,
                    points,
                    area: None,
                    area_ci95: None,
                    area_bootstrap: None,
                });
                continue;
            }
            let area = conditions::area(
                points
                    .iter()
                    .map(|p| (p.level, p.retention.expect("defined above"))),
            );
            let areas: Vec<f64> = (0..resampled.len())
                .map(|b| {
                    let mut curve: Vec<(f64, f64)> = members
                        .iter()
                        .map(|&c| (conditions[c].level, resampled_retention(b, c)))
                        .collect();
                    if !curve.iter().any(|p| p.0 == 0.0) {
                        curve.push((0.0, 1.0));
                    }
                    curve.sort_by(|a, b| a.0.total_cmp(&b.0));
                    curve.dedup_by(|b, a| a.0 == b.0);
                    conditions::area(curve.into_iter())
                })
                .collect();
            let area_replicates = replicates(areas.iter().map(|&a| defined(a)).collect());
            curves.push(ChannelReport {
                channel: channel.clone(),
                axis: *axis,
                points,
                area: Some(area),
                area_ci95: area_replicates.interval(0.95)?,
                area_bootstrap: Some(area_replicates),
            });
            area_resamples.push(areas);
        }
        let (score, note) = if has_retention {
            let areas: Vec<f64> = curves.iter().filter_map(|c| c.area).collect();
            dataset_resamples.push(
                (0..BOOTSTRAP_RESAMPLES)
                    .map(|b| {
                        area_resamples.iter().map(|a| a[b]).sum::<f64>()
                            / area_resamples.len() as f64
                    })
                    .collect(),
            );
            (Some(sage_measures::mean(&areas)?), None)
        } else {
            let interval = clean_ci95.map_or(String::new(), |ci| {
                format!(" [{:.3}, {:.3}]", ci.low, ci.high)
            });
            (
                None,
                Some(format!(
                    "clean {} {clean:.3}{interval} is not clearly above zero: a retention \
                     (noisy / clean) would say nothing, so only the changes (noisy − clean) are \
                     reported, and the dataset is left out of the category score",
                    m.report.measure
                )),
            )
        };
        reports.push(DatasetReport {
            clean,
            clean_ci95,
            channels: curves,
            score,
            note,
            ..m.report
        });
    }
    let scored: Vec<f64> = reports.iter().filter_map(|r| r.score).collect();
    // no dataset with a retention: no category score (null), never a made-up one
    let score = if scored.is_empty() {
        f64::NAN
    } else {
        scored.iter().sum::<f64>() / scored.len() as f64
    };
    let overall = (!dataset_resamples.is_empty()).then(|| {
        replicates(
            (0..BOOTSTRAP_RESAMPLES)
                .map(|b| {
                    defined(
                        dataset_resamples.iter().map(|d| d[b]).sum::<f64>()
                            / dataset_resamples.len() as f64,
                    )
                })
                .collect(),
        )
    });
    Ok(NoiseReport::new(
        similarity, seed, options, reports, score, overall, timings,
    )?)
}

#[cfg(test)]
mod tests;
