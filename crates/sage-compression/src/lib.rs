//! # sage-compression
//!
//! What an embedding model keeps when its vectors are stored small: the first thing a vector
//! database's user asks after "which model". Each dataset's texts are embedded **once**; the
//! vectors are then stored in each format at each Matryoshka width, and the task is scored on
//! what the store gives back, against float32 at the model's full width:
//!
//! - **formats**: float32, float16, int8 (scalar quantisation: each dimension's range
//!   calibrated, min to max, on a seeded sample of the stored vectors, then cut into 256 steps,
//!   as vector databases do) and binary (the sign of each value, scored by Hamming), with and
//!   without rescoring: `binary-rescored` re-ranks the `rescore_factor · k` best by Hamming with
//!   the float query against the stored signs, the way sentence-transformers' quantisation
//!   example rescored, so the store still holds one bit a value;
//! - **widths**: the model's own truncation and renormalisation (Matryoshka), by default the full
//!   width and its halvings down to 32 values. It runs for every model; a model whose files do
//!   not say it was trained for it gets a note, and its narrower widths read as what truncation
//!   costs such a model;
//! - **per point**: the score, `retention = score / float32 score`, `change = score − float32
//!   score`, each with a paired bootstrap 95% interval (the units are resampled once per
//!   resample, and the float32 and compressed scores of that resample share the draw), and the
//!   bytes one stored vector takes. A retention is reported only where the float32 score and the
//!   low end of its interval are above zero: the noise suite's rule, shared with it
//!   ([`sage_noise::retention_is_defined`]).
//!
//! Which side is stored, per task. A vector that is computed when a question is asked stays as
//! computed; a vector kept in the store is compressed:
//! - **retrieval** (BEIR): the corpus is stored, the queries are asked (binarised for the binary
//!   formats, whose Hamming distance needs bits on both sides); int8 is calibrated on corpus
//!   documents; score NDCG@10 as trec_eval (sage-core's measure);
//! - **classification**: the `train` texts are stored, each text of the named split asks for
//!   its [`sage_noise::NEIGHBOURS`] nearest; score: accuracy of their vote;
//! - **STS** and **pair classification**: both sentences are stored (a store compares what it
//!   holds); scores: Spearman against gold, average precision;
//! - **clustering**: the texts are stored and clustered as SAGE's clustering task clusters them
//!   (complete linkage on `1 − score`, cut at the number of classes); score: V-measure.
//!
//! The store's score of two vectors is their dot product, of the decoded values for float16 and
//! int8 (the vectors are unit length before they are stored) and of the ±1 signs divided by the
//! width for binary. Rescoring has nothing to re-rank where nothing is ranked: in the pair
//! tasks and clustering `binary-rescored` scores as `binary` (and the dataset says so), so that
//! every point of the report's view averages the same datasets.
//!
//! Per dataset the score is the mean retention over its points (float32 at the full width, the
//! reference, left out); the category score is the mean over datasets with a retention, with the
//! bootstrap interval and the resamples the report pairs between models. The category's
//! `points` give each format and width's mean retention over datasets with its interval: the
//! report's bytes-against-score view.
//!
//! **Inference precision.** A model that computes its products at a lower precision
//! (`--precision bf16|int8`) carries its float32 twin ([`Embedder::full_precision`]): the
//! reference is then the twin's float32 vectors at full width, and the model's own float32 at
//! full width is a point like the others, whose retention is what the precision keeps. So one
//! run says what a precision and a stored format cost together, against float32 throughout.
//!
//! A classical metric has no vectors to store: its run says compression is not applicable and
//! has no score, rather than failing.
//!
//! ## Cost
//! Texts are embedded once per dataset (from the embedding cache where it has them); every
//! point is arithmetic on the vectors held in memory: a retrieval run holds its corpus's vectors
//! (4 bytes per value; `max_docs` bounds a large corpus), ranked in blocks.
#![deny(missing_docs)]

mod codec;
mod measure;

use rayon::prelude::*;
use sage_core::{Embedder, RunSeed, SuiteReport, Timings};
use sage_data::{DataRoot, DatasetKind, RowSelection};
use sage_measures::{
    bootstrap_draw, percentile_interval, BootstrapInterval, BootstrapReplicates,
    BOOTSTRAP_RESAMPLES,
};
use sage_noise::{retention, retention_is_defined, Statistic, Task};
use serde::{Deserialize, Serialize};

pub use codec::Format;

/// Errors of this crate: the error every task over data shares.
pub type CompressionError = sage_task::TaskError;

/// Result alias of this crate.
pub type Result<T, E = CompressionError> = std::result::Result<T, E>;

/// The datasets a run without datasets uses: SciFact's queries and STS-B's pairs.
pub const DEFAULT_DATASETS: [(&str, &str); 2] = [("scifact", "test"), ("stsb", "test")];

/// The narrowest width the default halvings reach.
pub const NARROWEST_DEFAULT_WIDTH: usize = 32;

/// The kinds of dataset the suite reads: the noise suite's.
pub const KINDS: [DatasetKind; 6] = sage_noise::KINDS;

sage_core::suite_options! {
    /// Run options: the one declaration the flags, `--options`, bench.toml and Python keywords
    /// all read.
    #[derive(Clone, Debug, PartialEq)]
    pub struct Options {
        /// Stored-vector formats, each run at every width (float32 at the full width, the
        /// reference, is always scored).
        pub formats: Vec<Format> = Format::ALL.to_vec(), sage_core::OptionSpec::any();
        /// Matryoshka widths, each at most the model's; empty: the full width and its halvings
        /// down to 32.
        pub widths: Vec<usize> = Vec::new(), sage_core::OptionSpec::any();
        /// Stored vectors int8's ranges are calibrated on (a seeded sample; all when fewer).
        pub calibration: usize = 1000, sage_core::OptionSpec::whole(1, 10_000_000);
        /// binary-rescored: candidates re-ranked per query, as a multiple of the k scored.
        pub rescore_factor: usize = 4, sage_core::OptionSpec::whole(1, 1000);
        /// Retrieval: queries sampled (seeded); all judged ones when unset.
        pub max_queries: Option<usize> = None, sage_core::OptionSpec::any();
        /// Retrieval: corpus documents sampled (seeded), every relevant one kept; all when unset.
        pub max_docs: Option<usize> = None, sage_core::OptionSpec::any();
        /// Pair tasks: pairs sampled (seeded); classification: texts classified; all when unset.
        /// Clustering: texts clustered (1,000 when unset).
        pub max_rows: Option<usize> = None, sage_core::OptionSpec::any();
        /// Classification: `train` texts sampled (seeded) as the stored neighbours; all when
        /// unset.
        pub max_reference: Option<usize> = Some(2000), sage_core::OptionSpec::any();
        /// Run seed (the request's, never an option).
        pub seed: RunSeed = RunSeed::default(), sage_core::OptionSpec::run_seed();
    }
    also_check = formats_named;
}

/// At least one format, each once.
fn formats_named(options: &Options) -> sage_core::Result<()> {
    if options.formats.is_empty() {
        return Err(sage_core::SageError::InvalidArgument(
            "formats: name at least one of float32, float16, int8, binary, binary-rescored".into(),
        ));
    }
    if options.widths.contains(&0) {
        return Err(sage_core::SageError::InvalidArgument(
            "widths: a width is at least 1 value".into(),
        ));
    }
    Ok(())
}

impl Options {
    /// The widths scored for a model `dimension` wide, widest first, the full width always
    /// among them (the reference); an error for a width past it.
    pub fn widths_for(&self, dimension: usize) -> Result<Vec<usize>> {
        let mut widths = if self.widths.is_empty() {
            std::iter::successors(Some(dimension), |w| Some(w / 2))
                .take_while(|&w| w >= NARROWEST_DEFAULT_WIDTH.min(dimension) && w > 0)
                .collect::<Vec<_>>()
        } else {
            if let Some(w) = self.widths.iter().find(|&&w| w > dimension) {
                return Err(CompressionError::Insufficient(format!(
                    "widths: {w} is wider than the model's {dimension} values"
                )));
            }
            let mut w = self.widths.clone();
            w.push(dimension);
            w
        };
        widths.sort_unstable_by(|a, b| b.cmp(a));
        widths.dedup();
        Ok(widths)
    }
}

/// One (format, width) point of a dataset.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Values kept of each vector.
    pub width: usize,
    /// Bytes one stored vector takes.
    pub bytes: usize,
    /// The task's score on what the store gives back.
    pub score: f64,
    /// `score / float32 score at the full width`; absent where that score is not clearly above
    /// zero.
    pub retention: Option<f64>,
    /// Paired bootstrap 95% interval of the retention.
    pub ci95: Option<BootstrapInterval>,
    /// `score − float32 score at the full width`.
    pub change: f64,
    /// Paired bootstrap 95% interval of the change.
    pub change_ci95: Option<BootstrapInterval>,
}

/// One format's points, widest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FormatCurve {
    /// The format.
    pub format: Format,
    /// One point per width.
    pub points: Vec<Point>,
}

/// One dataset.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DatasetReport {
    /// `name/split`.
    pub dataset: String,
    /// The task.
    pub task: Task,
    /// The score's name.
    pub measure: String,
    /// Which vectors are stored (`documents`, `train texts`, `both sentences`, `texts`).
    pub stored: String,
    /// Units scored and resampled (queries, pairs, texts).
    pub units: usize,
    /// Stored vectors int8's ranges were calibrated on.
    pub calibrated_on: usize,
    /// Pair, classification and clustering tasks: the rows used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<RowSelection>,
    /// Classification: the `train` rows stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<RowSelection>,
    /// Retrieval: documents in the corpus file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corpus_total: Option<usize>,
    /// Retrieval: documents stored and ranked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corpus_used: Option<usize>,
    /// Retrieval: checksum of the ranked documents' ids and texts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corpus_checksum: Option<String>,
    /// Retrieval: the checks of the set's files ([`sage_data::verify`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub corpus_files: Vec<sage_core::FileCheck>,
    /// The float32 score at the full width: the reference.
    pub reference_score: f64,
    /// Its paired bootstrap 95% interval.
    pub reference_ci95: Option<BootstrapInterval>,
    /// One curve per format.
    pub formats: Vec<FormatCurve>,
    /// Mean retention over the points (the reference left out); absent where the reference
    /// score is not clearly above zero.
    pub score: Option<f64>,
    /// Why the dataset has no retention, or which formats do not apply to its task.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl sage_core::DatasetRows for DatasetReport {
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

/// A format and width over every dataset that scored it: the bytes-against-score view's point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SummaryPoint {
    /// The format.
    pub format: Format,
    /// Values kept of each vector.
    pub width: usize,
    /// Bytes one stored vector takes.
    pub bytes: usize,
    /// Mean retention over the datasets with one; absent when none has.
    pub retention: Option<f64>,
    /// Its paired bootstrap 95% interval (the datasets' units resampled as for the score).
    pub ci95: Option<BootstrapInterval>,
    /// Datasets behind the mean.
    pub datasets: usize,
}

/// A whole run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompressionReport {
    /// The similarity's name.
    pub similarity: String,
    /// Run seed.
    pub seed: u64,
    /// The options.
    pub options: Options,
    /// Whether the similarity has vectors to store (false for a classical metric).
    pub applicable: bool,
    /// The model's width.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dimension: Option<usize>,
    /// Whether the model says it was trained for Matryoshka truncation (absent: it cannot say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matryoshka_trained: Option<bool>,
    /// Where and in what precision the model computed (`cpu f32`, `cpu int8 q8_0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub computed: Option<String>,
    /// Where the model computes at a lower precision: how its float32 twin, whose float32
    /// vectors at full width are the reference, computed. Absent: the reference is the model's
    /// own float32 at full width.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// What a reader should know first: not applicable, or widths a model was not trained for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Per format and width, over datasets: the bytes-against-score view.
    pub points: Vec<SummaryPoint>,
    /// Per dataset.
    pub datasets: Vec<DatasetReport>,
    /// Mean of the dataset scores (NaN, written `null`, when no dataset has a retention or the
    /// run is not applicable).
    #[serde(deserialize_with = "sage_measures::null_as_nan")]
    pub score: f64,
    /// Its percentile-bootstrap 95% interval.
    pub ci95: Option<BootstrapInterval>,
    /// Every resample's score behind `ci95`, for the report's paired differences.
    pub bootstrap: Option<BootstrapReplicates>,
    /// Wall-clock phases.
    pub timings: Timings,
}

impl SuiteReport for CompressionReport {
    fn score(&self) -> Option<f64> {
        self.applicable.then_some(self.score)
    }
    fn rows_used(&self) -> Vec<sage_core::RowsUsed> {
        self.datasets
            .iter()
            .flat_map(sage_core::DatasetRows::rows_used)
            .collect()
    }
}

/// The run of a similarity with no vectors (a classical metric): not applicable, no score.
pub fn not_applicable(similarity: &str, options: Options) -> CompressionReport {
    CompressionReport {
        similarity: similarity.to_owned(),
        seed: options.seed.0,
        options,
        applicable: false,
        dimension: None,
        matryoshka_trained: None,
        computed: None,
        reference: None,
        // the file names the similarity: one wording for every metric, counted once
        notes: vec![
            "a classical metric stores no vectors, so compression is not applicable".to_owned(),
        ],
        points: Vec::new(),
        datasets: Vec::new(),
        score: f64::NAN,
        ci95: None,
        bootstrap: None,
        timings: Timings::default(),
    }
}

/// The compression suite on each of `datasets` (`name`, `split`) for `embedder`.
pub fn evaluate(
    embedder: &dyn Embedder,
    similarity: &dyn sage_core::Similarity,
    root: &DataRoot,
    datasets: &[(&str, &str)],
    options: Options,
) -> Result<CompressionReport> {
    formats_named(&options)?;
    if datasets.is_empty() {
        return Err(CompressionError::Insufficient("no dataset named".into()));
    }
    let dimension = embedder.dimension();
    let widths = options.widths_for(dimension)?;
    let grid = measure::Grid::new(&options.formats, &widths);
    let twin = embedder.full_precision()?;
    if let Some(twin) = twin {
        if twin.dimension() != dimension {
            return Err(CompressionError::Insufficient(format!(
                "{}: its float32 twin gives {} values, the model {dimension}",
                embedder.identity().model_id,
                twin.dimension()
            )));
        }
    }
    let models = measure::Models {
        model: embedder,
        twin,
    };
    let mut timings = Timings::default();
    let mut measured = Vec::new();
    for &(name, split) in datasets {
        measured.push(measure::dataset(
            models,
            similarity,
            root,
            (name, split),
            &grid,
            &options,
            &mut timings,
        )?);
    }
    let trained = embedder.matryoshka_trained();
    let mut notes = Vec::new();
    if widths.len() > 1 && trained != Some(true) {
        notes.push(format!(
            "{} {}: its widths below {dimension} show what cutting its vectors costs a model \
             that was not trained for it",
            embedder.identity().model_id,
            match trained {
                Some(false) => "does not say it was trained for Matryoshka truncation",
                _ => "cannot say whether it was trained for Matryoshka truncation",
            }
        ));
    }
    let mut report = finish(
        similarity.name(),
        measured,
        &grid,
        twin.is_some(),
        options,
        timings,
    )?;
    report.dimension = Some(dimension);
    report.computed = embedder.compute();
    report.reference = twin.and_then(|t| t.compute());
    report.matryoshka_trained = trained;
    report.notes = notes;
    Ok(report)
}

/// Per dataset, its per-unit values at every point of the grid and how they become a score.
pub(crate) struct Measured {
    pub(crate) report: DatasetReport,
    pub(crate) statistic: Statistic,
    /// Per grid point, one value per unit.
    pub(crate) values: Vec<Vec<f64>>,
    /// The reference's values: float32 at full width, of the full-precision twin where the
    /// model computes at a lower precision, else the model's own (`values[0]`).
    pub(crate) reference: Vec<f64>,
}

/// Scores, retentions and intervals from every dataset's values, with the paired bootstrap:
/// resample `b` draws each dataset's units once and every point's retention, every dataset's
/// score and the category's come from that draw.
fn finish(
    similarity: &str,
    measured: Vec<Measured>,
    grid: &measure::Grid,
    twin: bool,
    options: Options,
    mut timings: Timings,
) -> Result<CompressionReport> {
    const LABEL: &str = "compression/bootstrap";
    let seed = options.seed;
    let sizes: Vec<usize> = measured.iter().map(|m| m.report.units).collect();
    let reference = grid.reference();
    // per resample, per dataset, per point: the score
    let resampled: Vec<Vec<Vec<f64>>> = timings.time("bootstrap", || {
        (0..BOOTSTRAP_RESAMPLES)
            .into_par_iter()
            .map(|b| {
                let drawn = bootstrap_draw(&sizes, seed, LABEL, b);
                measured
                    .iter()
                    .zip(&drawn)
                    .map(|(m, d)| {
                        std::iter::once(&m.reference)
                            .chain(&m.values)
                            .map(|v| m.statistic.of(v, d))
                            .collect()
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
    // per dataset with a retention: per point, per resample, the retention
    let mut point_resamples: Vec<Vec<Vec<f64>>> = Vec::new();
    let mut dataset_resamples: Vec<Vec<f64>> = Vec::new();
    for (g, m) in measured.into_iter().enumerate() {
        let all: Vec<usize> = (0..m.report.units).collect();
        let scores: Vec<f64> = m.values.iter().map(|v| m.statistic.of(v, &all)).collect();
        let clean = m.statistic.of(&m.reference, &all);
        // resample b's reference score is r[g][0], point p's r[g][p + 1]
        let clean_resamples: Vec<Option<f64>> =
            resampled.iter().map(|r| defined(r[g][0])).collect();
        let clean_ci95 = percentile_interval(&clean_resamples, 0.95)?;
        let has_retention = retention_is_defined(clean, clean_ci95.as_ref());
        let mut curves: Vec<FormatCurve> = Vec::new();
        let mut retentions: Vec<Vec<f64>> = Vec::new();
        for (p, &(format, width)) in grid.points.iter().enumerate() {
            let score = scores[p];
            let changes: Vec<Option<f64>> = resampled
                .iter()
                .map(|r| defined(r[g][p + 1] - r[g][0]))
                .collect();
            let per_resample: Vec<f64> = resampled
                .iter()
                .map(|r| retention(r[g][p + 1], r[g][0]))
                .collect();
            let ci95 = if has_retention {
                percentile_interval(
                    &per_resample.iter().map(|&v| defined(v)).collect::<Vec<_>>(),
                    0.95,
                )?
            } else {
                None
            };
            retentions.push(per_resample);
            let point = Point {
                width,
                bytes: format.bytes(width),
                score,
                retention: has_retention.then(|| retention(score, clean)),
                ci95,
                change: score - clean,
                change_ci95: percentile_interval(&changes, 0.95)?,
            };
            match curves.iter_mut().find(|c| c.format == format) {
                Some(curve) => curve.points.push(point),
                None => curves.push(FormatCurve {
                    format,
                    points: vec![point],
                }),
            }
        }
        let mut notes = m.report.notes.clone();
        // the reference point is the reference itself, unless a twin computed the reference
        let compared: Vec<usize> = (0..grid.points.len())
            .filter(|&p| twin || p != reference)
            .collect();
        let score = if has_retention && !compared.is_empty() {
            let mean = compared
                .iter()
                .map(|&p| retention(scores[p], clean))
                .sum::<f64>()
                / compared.len() as f64;
            dataset_resamples.push(
                (0..BOOTSTRAP_RESAMPLES)
                    .map(|b| {
                        compared.iter().map(|&p| retentions[p][b]).sum::<f64>()
                            / compared.len() as f64
                    })
                    .collect(),
            );
            point_resamples.push(retentions);
            Some(mean)
        } else {
            if !has_retention {
                let interval = clean_ci95.map_or(String::new(), |ci| {
                    format!(" [{:.3}, {:.3}]", ci.low, ci.high)
                });
                notes.push(format!(
                    "float32 {} {clean:.3}{interval} is not clearly above zero: a retention \
                     would say nothing, so only the changes are reported, and the dataset is \
                     left out of the score",
                    m.report.measure
                ));
            }
            None
        };
        reports.push(DatasetReport {
            reference_score: clean,
            reference_ci95: clean_ci95,
            formats: curves,
            score,
            notes,
            ..m.report
        });
    }
    // the view's points: each format and width's mean retention over the datasets with one
    let points = grid
        .points
        .iter()
        .enumerate()
        .map(|(p, &(format, width))| {
            let having: Vec<&Vec<f64>> = point_resamples.iter().map(|d| &d[p]).collect();
            let of_datasets: Vec<f64> = reports
                .iter()
                .filter_map(|r| {
                    r.formats
                        .iter()
                        .find(|c| c.format == format)?
                        .points
                        .iter()
                        .find(|q| q.width == width)?
                        .retention
                })
                .collect();
            let retention = (!of_datasets.is_empty())
                .then(|| of_datasets.iter().sum::<f64>() / of_datasets.len() as f64);
            let ci95 = if having.is_empty() {
                None
            } else {
                let values: Vec<Option<f64>> = (0..BOOTSTRAP_RESAMPLES)
                    .map(|b| {
                        defined(having.iter().map(|d| d[b]).sum::<f64>() / having.len() as f64)
                    })
                    .collect();
                percentile_interval(&values, 0.95)?
            };
            Ok(SummaryPoint {
                format,
                width,
                bytes: format.bytes(width),
                retention,
                ci95,
                datasets: of_datasets.len(),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let scored: Vec<f64> = reports.iter().filter_map(|r| r.score).collect();
    let score = if scored.is_empty() {
        f64::NAN
    } else {
        scored.iter().sum::<f64>() / scored.len() as f64
    };
    let bootstrap = (!dataset_resamples.is_empty()).then(|| {
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
    let ci95 = sage_measures::ci95(bootstrap.as_ref())?;
    Ok(CompressionReport {
        similarity: similarity.to_owned(),
        seed: seed.0,
        options,
        applicable: true,
        dimension: None,
        matryoshka_trained: None,
        computed: None,
        reference: None,
        notes: Vec::new(),
        points,
        datasets: reports,
        score,
        ci95,
        bootstrap,
        timings,
    })
}

#[cfg(test)]
mod tests;
