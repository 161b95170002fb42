//! The two sub-tasks, their sources and the report.

use std::collections::BTreeMap;

use rand::Rng;
use sage_core::{RunSeed, Similarity, Timings};
use sage_data::{DataRoot, RowSelection, SummaryComparison, SummaryRating};
use sage_measures::BinaryScores;
use serde::{Deserialize, Serialize};

use crate::{HumanPrefError, Result};

/// Classification scores of the comparisons (summary_0 preferred = positive).
pub type Scores = BinaryScores;

sage_core::suite_options! {
    /// The options of a human-preference run: the one declaration the flags, `--options`,
    /// bench.toml and Python keywords all read, with each field's range. The seed is the run's.
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Options {
        /// Rows sampled per source (seeded); all when unset.
        pub max_rows: Option<usize> = None, sage_core::OptionSpec::whole(1, 10_000_000);
        /// Least mean-rating difference for two summaries of a document to become a comparison;
        /// when unset, per dataset: SummEval 0.4, REALSumm 0.1, others 10% of the observed range.
        pub margin: Option<f64> = None, sage_core::OptionSpec::at_least(0.0);
    }
}

/// Where one source's comparisons and ratings come from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Source {
    /// A rating dataset: correlations with each of its dimensions, and comparisons derived from
    /// its ratings (see the crate docs).
    Ratings {
        /// Registry name (summary-ratings kind).
        dataset: String,
        /// Split.
        split: String,
        /// Least difference of mean rating for a pair to become a comparison; `None`: 10% of the
        /// observed range of mean ratings.
        margin: Option<f64>,
    },
    /// summarize_from_feedback's layout: a comparisons dataset and an axis-ratings dataset.
    Feedback {
        /// Registry name of the comparisons (summary-comparisons kind).
        comparisons: String,
        /// Its split.
        comparisons_split: String,
        /// Registry name of the axis ratings (summary-axis-ratings kind).
        axis: String,
        /// Its split.
        axis_split: String,
    },
}

impl Source {
    /// SummEval expert ratings (1–5), margin 0.4 (10% of the scale).
    pub fn summeval() -> Source {
        Source::Ratings {
            dataset: "summeval".into(),
            split: "ratings".into(),
            margin: Some(0.4),
        }
    }

    /// REALSumm LitePyramid recall (0–1), margin 0.1 (10% of the scale).
    pub fn realsumm() -> Source {
        Source::Ratings {
            dataset: "realsumm".into(),
            split: "ratings".into(),
            margin: Some(0.1),
        }
    }

    /// The paper's data: summarize_from_feedback comparisons and axis evaluations, both on their
    /// validation split (the only split both tables have).
    pub fn summarize_from_feedback() -> Source {
        Source::Feedback {
            comparisons: "summarize-from-feedback-comparisons".into(),
            comparisons_split: "validation".into(),
            axis: "summarize-from-feedback-axis".into(),
            axis_split: "validation".into(),
        }
    }

    /// The source a dataset name gives: `summarize-from-feedback` (any split) names the paper's
    /// two feedback tables; any other name a rating dataset, `margin` overriding the dataset's
    /// default (SummEval's and REALSumm's above; others 10% of the observed range).
    pub fn named(dataset: &str, split: &str, margin: Option<f64>) -> Source {
        let default_margin = match dataset {
            "summarize-from-feedback" => return Source::summarize_from_feedback(),
            "summeval" => Some(0.4),
            "realsumm" => Some(0.1),
            _ => None,
        };
        Source::Ratings {
            dataset: dataset.to_owned(),
            split: split.to_owned(),
            margin: margin.or(default_margin),
        }
    }

    /// The sources of a default run: the paper's data when it is local, and the shipped human
    /// ratings (SummEval, REALSumm) when they are.
    pub fn available(root: &DataRoot) -> Vec<Source> {
        [
            Source::summarize_from_feedback(),
            Source::summeval(),
            Source::realsumm(),
        ]
        .into_iter()
        .filter(|s| s.is_local(root))
        .collect()
    }

    /// Whether every file this source reads is in the local mirror.
    pub fn is_local(&self, root: &DataRoot) -> bool {
        let local = |name: &str, split: &str| root.has(name, split);
        match self {
            Source::Ratings { dataset, split, .. } => local(dataset, split),
            Source::Feedback {
                comparisons,
                comparisons_split,
                axis,
                axis_split,
            } => local(comparisons, comparisons_split) && local(axis, axis_split),
        }
    }

    /// A short name for reports (`summeval`, `summarize-from-feedback`).
    pub fn name(&self) -> String {
        match self {
            Source::Ratings { dataset, .. } => dataset.clone(),
            Source::Feedback { comparisons, .. } => comparisons
                .strip_suffix("-comparisons")
                .unwrap_or(comparisons)
                .to_owned(),
        }
    }
}

/// How comparisons were derived from ratings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Derivation {
    /// The margin applied.
    pub margin: f64,
    /// Same-document summary pairs considered.
    pub candidate_pairs: usize,
    /// Pairs whose mean ratings differ by at least the margin (the comparisons).
    pub kept_pairs: usize,
}

/// The pairwise sub-task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ComparisonReport {
    /// Accuracy, precision, recall, F1 (+ counts).
    pub classification: Scores,
    /// Comparisons scored.
    pub pairs: usize,
    /// Pairs the similarity could not tell apart (equal scores → summary_1).
    pub ties: usize,
    /// Pairs where the human chose summary_0.
    pub human_chose_0: usize,
    /// Present when the comparisons were built from ratings.
    pub derived: Option<Derivation>,
    /// Rows read (comparisons, or ratings they were derived from).
    pub rows: RowSelection,
}

/// Pearson's r with one rating dimension.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DimensionCorrelation {
    /// The dimension.
    pub dimension: String,
    /// Pearson's r; `None` when undefined (a constant similarity or rating).
    pub pearson: Option<f64>,
    /// 0.5·(r + 1), 0.5 when r is undefined.
    pub mapped: f64,
}

/// The rating sub-task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CorrelationReport {
    /// Per dimension, in the dataset's order.
    pub dimensions: Vec<DimensionCorrelation>,
    /// Summaries scored.
    pub summaries: usize,
    /// Rows read.
    pub rows: RowSelection,
}

/// One source.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SourceReport {
    /// Source name.
    pub name: String,
    /// Where it came from.
    pub source: Source,
    /// Pairwise sub-task.
    pub comparisons: ComparisonReport,
    /// Rating sub-task.
    pub correlations: CorrelationReport,
    /// Mean of accuracy, precision, recall, F1.
    pub classification_mean: f64,
    /// Mean of the mapped correlations.
    pub correlation_mean: f64,
    /// 0.5·classification_mean + 0.5·correlation_mean.
    pub score: f64,
    /// The units the numbers come from (the bootstrap resamples them).
    #[serde(skip)]
    pub units: SourceUnits,
}

/// A whole task-1 run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HumanPrefReport {
    /// The similarity's name.
    pub similarity: String,
    /// Run seed.
    pub seed: u64,
    /// Row cap per dataset.
    pub max_rows: Option<usize>,
    /// Per source.
    pub sources: Vec<SourceReport>,
    /// Category score: mean of the source scores.
    pub score: f64,
    /// Percentile-bootstrap 95% interval of `score`: comparisons and rated summaries resampled
    /// within each source.
    pub ci95: Option<sage_measures::BootstrapInterval>,
    /// Every resample's score behind `ci95`: the report pairs two similarities' resamples
    /// (same seed, same units) into a paired bootstrap of their difference.
    pub bootstrap: Option<sage_measures::BootstrapReplicates>,
    /// Wall-clock phases (the only part that differs between two runs with one seed).
    pub timings: Timings,
}

impl sage_core::SuiteReport for HumanPrefReport {
    fn score(&self) -> Option<f64> {
        Some(self.score)
    }
    /// Each source's comparison rows, then its rating rows (the same rows when the comparisons
    /// were derived from the ratings).
    fn rows_used(&self) -> Vec<sage_core::RowsUsed> {
        self.sources
            .iter()
            .flat_map(|s| [&s.comparisons.rows, &s.correlations.rows])
            .map(|r| r.clone().into())
            .collect()
    }
}

/// The prediction rule: `true` (summary_0) only when it scores strictly higher.
pub fn predict(summary_0: f32, summary_1: f32) -> bool {
    summary_0 > summary_1
}

/// What a source's score is computed from, unit by unit: the report computes its numbers from
/// every unit, the bootstrap from resampled ones, through the same [`SourceUnits::scores`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SourceUnits {
    /// Per comparison: the human chose summary 0.
    pub truth: Vec<bool>,
    /// Per comparison: summary 0 predicted (it scored strictly higher).
    pub predicted: Vec<bool>,
    /// Per rated summary: its similarity to the source.
    pub similarities: Vec<f64>,
    /// Per dimension, per rated summary: the human rating.
    pub ratings: Vec<Vec<f64>>,
    /// The dimensions, in `ratings` order.
    pub dimensions: Vec<String>,
}

impl SourceUnits {
    /// The classification scores of the comparisons `pairs` and the correlation of each
    /// dimension over the summaries `summaries` (indices, repeats allowed).
    pub fn scores(
        &self,
        pairs: &[usize],
        summaries: &[usize],
    ) -> Result<(Scores, Vec<DimensionCorrelation>)> {
        let truth: Vec<bool> = pairs.iter().map(|&i| self.truth[i]).collect();
        let predicted: Vec<bool> = pairs.iter().map(|&i| self.predicted[i]).collect();
        let classification = sage_measures::binary_classification(&truth, &predicted)?;
        let correlations = correlations_of(self, summaries)?;
        Ok((classification, correlations))
    }

    /// The source score (0.5·mean classification + 0.5·mean mapped correlation) of a draw.
    fn score(&self, pairs: &[usize], summaries: &[usize]) -> f64 {
        match self.scores(pairs, summaries) {
            Ok((c, correlations)) => source_score(&c, &correlations).2,
            Err(_) => f64::NAN,
        }
    }
}

/// (classification mean, correlation mean, source score).
fn source_score(c: &Scores, correlations: &[DimensionCorrelation]) -> (f64, f64, f64) {
    let classification_mean = mean(&[c.accuracy, c.precision, c.recall, c.f1]);
    let correlation_mean = mean(&correlations.iter().map(|d| d.mapped).collect::<Vec<_>>());
    (
        classification_mean,
        correlation_mean,
        0.5 * classification_mean + 0.5 * correlation_mean,
    )
}

/// Scores every comparison in one batch (sources × both summaries): (human chose summary 0,
/// summary 0 predicted) per comparison, and the number of ties.
fn compare_units(
    similarity: &dyn Similarity,
    rows: &[SummaryComparison],
) -> Result<(Vec<bool>, Vec<bool>, usize)> {
    if rows.is_empty() {
        return Err(HumanPrefError::Insufficient(
            "no comparisons to score".into(),
        ));
    }
    let mut batch: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r.post.as_str(), r.summary_0.as_str()))
        .collect();
    batch.extend(rows.iter().map(|r| (r.post.as_str(), r.summary_1.as_str())));
    let scores = similarity.score_pairs(&batch)?;
    let (s0, s1) = scores.split_at(rows.len());
    let predicted: Vec<bool> = s0.iter().zip(s1).map(|(&a, &b)| predict(a, b)).collect();
    let truth: Vec<bool> = rows.iter().map(|r| r.choice == 0).collect();
    let ties = s0.iter().zip(s1).filter(|(a, b)| a == b).count();
    Ok((truth, predicted, ties))
}

/// Scores every comparison in one batch (sources × both summaries) and classifies:
/// (scores, ties, comparisons where the human chose summary 0).
pub fn compare(
    similarity: &dyn Similarity,
    rows: &[SummaryComparison],
) -> Result<(Scores, usize, usize)> {
    let (truth, predicted, ties) = compare_units(similarity, rows)?;
    let human_chose_0 = truth.iter().filter(|&&t| t).count();
    Ok((
        sage_measures::binary_classification(&truth, &predicted)?,
        ties,
        human_chose_0,
    ))
}

/// sim(source, summary) of every rated summary (one batch) and its ratings per dimension.
fn rating_units(
    similarity: &dyn Similarity,
    rows: &[SummaryRating],
    dimensions: &[&str],
) -> Result<(Vec<f64>, Vec<Vec<f64>>)> {
    if rows.len() < 2 {
        return Err(HumanPrefError::Insufficient(
            "rating correlations need at least two rated summaries".into(),
        ));
    }
    let batch: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r.source.as_str(), r.summary.as_str()))
        .collect();
    let sims: Vec<f64> = similarity
        .score_pairs(&batch)?
        .into_iter()
        .map(f64::from)
        .collect();
    let ratings = dimensions
        .iter()
        .map(|&dimension| {
            rows.iter()
                .map(|r| {
                    r.ratings.get(dimension).copied().ok_or_else(|| {
                        HumanPrefError::Insufficient(format!(
                            "summary of {} by {} has no {dimension:?} rating",
                            r.doc_id, r.system
                        ))
                    })
                })
                .collect::<Result<Vec<f64>>>()
        })
        .collect::<Result<_>>()?;
    Ok((sims, ratings))
}

/// Pearson's r between `sim(source, summary)` and each of `dimensions`, one batch.
pub fn correlate(
    similarity: &dyn Similarity,
    rows: &[SummaryRating],
    dimensions: &[&str],
) -> Result<Vec<DimensionCorrelation>> {
    let (similarities, ratings) = rating_units(similarity, rows, dimensions)?;
    let units = SourceUnits {
        similarities,
        ratings,
        dimensions: dimensions.iter().map(|d| d.to_string()).collect(),
        ..SourceUnits::default()
    };
    let all: Vec<usize> = (0..rows.len()).collect();
    correlations_of(&units, &all)
}

/// Pearson's r of similarity and each dimension's rating over the summaries `summaries`.
fn correlations_of(units: &SourceUnits, summaries: &[usize]) -> Result<Vec<DimensionCorrelation>> {
    let sims: Vec<f64> = summaries.iter().map(|&i| units.similarities[i]).collect();
    units
        .dimensions
        .iter()
        .zip(&units.ratings)
        .map(|(dimension, ratings)| {
            let ratings: Vec<f64> = summaries.iter().map(|&i| ratings[i]).collect();
            let pearson = match sage_measures::pearson(&sims, &ratings) {
                Ok(r) => Some(r),
                Err(sage_core::SageError::Undefined { .. }) => None,
                Err(e) => return Err(e.into()),
            };
            Ok(DimensionCorrelation {
                dimension: dimension.clone(),
                pearson,
                mapped: pearson.map_or(0.5, |r| 0.5 * (r + 1.0)),
            })
        })
        .collect()
}

/// Comparisons from ratings: every two summaries of one document (documents in order of first
/// appearance, pairs in file order) whose mean rating over `dimensions` differs by at least
/// `margin`, the better one being the human choice. Which one is summary_0 is a coin flip from
/// `seed` per candidate pair.
pub fn comparisons_from_ratings(
    rows: &[SummaryRating],
    dimensions: &[&str],
    margin: f64,
    seed: RunSeed,
    label: &str,
) -> (Vec<SummaryComparison>, usize) {
    let mean_rating = |r: &SummaryRating| {
        let values: Vec<f64> = dimensions
            .iter()
            .filter_map(|d| r.ratings.get(*d).copied())
            .collect();
        values.iter().sum::<f64>() / values.len().max(1) as f64
    };
    let mut by_doc: Vec<(&str, Vec<usize>)> = Vec::new();
    let mut index: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, r) in rows.iter().enumerate() {
        let slot = *index.entry(&r.doc_id).or_insert_with(|| {
            by_doc.push((&r.doc_id, Vec::new()));
            by_doc.len() - 1
        });
        by_doc[slot].1.push(i);
    }
    let mut out = Vec::new();
    let mut candidates = 0usize;
    for (doc, members) in &by_doc {
        for (a, &i) in members.iter().enumerate() {
            for &j in &members[a + 1..] {
                let pair = candidates as u64;
                candidates += 1;
                let (ri, rj) = (&rows[i], &rows[j]);
                let (mi, mj) = (mean_rating(ri), mean_rating(rj));
                if (mi - mj).abs() < margin {
                    continue;
                }
                let swap = seed.rng_for_item(label, pair).gen_bool(0.5);
                let (first, second, first_better) = if swap {
                    (rj, ri, mj > mi)
                } else {
                    (ri, rj, mi > mj)
                };
                out.push(SummaryComparison {
                    id: format!("{doc}:{}|{}", first.system, second.system),
                    post: ri.source.clone(),
                    summary_0: first.summary.clone(),
                    summary_1: second.summary.clone(),
                    choice: if first_better { 0 } else { 1 },
                });
            }
        }
    }
    (out, candidates)
}

fn dimensions_of(root: &DataRoot, dataset: &str) -> Result<Vec<String>> {
    let dimensions = root.dimensions(dataset)?;
    if dimensions.is_empty() {
        return Err(HumanPrefError::Insufficient(format!(
            "{dataset} has no rating dimensions"
        )));
    }
    Ok(dimensions)
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len().max(1) as f64
}

/// Scores a source's comparisons and rated summaries: its units, and the comparison ties.
fn score_units(
    similarity: &dyn Similarity,
    name: &str,
    comparisons: &[SummaryComparison],
    rated: &[SummaryRating],
    dimensions: &[&str],
    timings: &mut Timings,
) -> Result<(SourceUnits, usize)> {
    let (truth, predicted, ties) = timings.time(format!("comparisons/{name}"), || {
        compare_units(similarity, comparisons)
    })?;
    let (similarities, ratings) = timings.time(format!("correlations/{name}"), || {
        rating_units(similarity, rated, dimensions)
    })?;
    let units = SourceUnits {
        truth,
        predicted,
        similarities,
        ratings,
        dimensions: dimensions.iter().map(|d| d.to_string()).collect(),
    };
    Ok((units, ties))
}

/// Both sub-tasks on one source, at most `max_rows` rows of each dataset (seeded sample; rating
/// datasets are sampled by whole documents, see [`sage_data::sample_grouped`]).
pub fn evaluate_source(
    similarity: &dyn Similarity,
    root: &DataRoot,
    source: &Source,
    max_rows: Option<usize>,
    seed: RunSeed,
    timings: &mut Timings,
) -> Result<SourceReport> {
    let name = source.name();
    let (units, ties, derived, comparison_rows, rating_rows) = match source {
        Source::Ratings {
            dataset,
            split,
            margin,
        } => {
            let dimensions = dimensions_of(root, dataset)?;
            let dimensions: Vec<&str> = dimensions.iter().map(String::as_str).collect();
            // whole documents, so that a capped run still has within-document pairs
            let sampled = root.rows::<SummaryRating>(dataset, split)?.sample_grouped(
                max_rows,
                seed,
                |r| r.doc_id.clone(),
            )?;
            let (rows, selection) = (sampled.rows, sampled.selection);
            let margin = margin.unwrap_or_else(|| {
                let means: Vec<f64> = rows
                    .iter()
                    .map(|r| {
                        mean(
                            &dimensions
                                .iter()
                                .filter_map(|d| r.ratings.get(*d).copied())
                                .collect::<Vec<_>>(),
                        )
                    })
                    .collect();
                let (lo, hi) = means
                    .iter()
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &m| {
                        (l.min(m), h.max(m))
                    });
                0.1 * (hi - lo).max(0.0)
            });
            let (derived, candidates) = comparisons_from_ratings(
                &rows,
                &dimensions,
                margin,
                seed,
                &format!("human-pref/orientation/{}", selection.split_checksum),
            );
            let (units, ties) =
                score_units(similarity, &name, &derived, &rows, &dimensions, timings)?;
            let derivation = Derivation {
                margin,
                candidate_pairs: candidates,
                kept_pairs: derived.len(),
            };
            (units, ties, Some(derivation), selection.clone(), selection)
        }
        Source::Feedback {
            comparisons,
            comparisons_split,
            axis,
            axis_split,
        } => {
            let sampled = root
                .rows::<SummaryComparison>(comparisons, comparisons_split)?
                .sample(max_rows, seed)?;
            let (rows, selection) = (sampled.rows, sampled.selection);
            let dimensions = dimensions_of(root, axis)?;
            let dimensions: Vec<&str> = dimensions.iter().map(String::as_str).collect();
            let axis = root
                .rows::<SummaryRating>(axis, axis_split)?
                .sample(max_rows, seed)?;
            let (axis_rows, axis_selection) = (axis.rows, axis.selection);
            let (units, ties) =
                score_units(similarity, &name, &rows, &axis_rows, &dimensions, timings)?;
            (units, ties, None, selection, axis_selection)
        }
    };
    let all_pairs: Vec<usize> = (0..units.truth.len()).collect();
    let all_summaries: Vec<usize> = (0..units.similarities.len()).collect();
    let (classification, dimensions) = units.scores(&all_pairs, &all_summaries)?;
    let (classification_mean, correlation_mean, score) = source_score(&classification, &dimensions);
    Ok(SourceReport {
        name,
        source: source.clone(),
        comparisons: ComparisonReport {
            classification,
            pairs: all_pairs.len(),
            ties,
            human_chose_0: units.truth.iter().filter(|&&t| t).count(),
            derived,
            rows: comparison_rows,
        },
        correlations: CorrelationReport {
            dimensions,
            summaries: all_summaries.len(),
            rows: rating_rows,
        },
        classification_mean,
        correlation_mean,
        score,
        units,
    })
}

/// Task 1 on every source.
pub fn evaluate(
    similarity: &dyn Similarity,
    root: &DataRoot,
    sources: &[Source],
    max_rows: Option<usize>,
    seed: RunSeed,
) -> Result<HumanPrefReport> {
    if sources.is_empty() {
        return Err(HumanPrefError::Insufficient(format!(
            "no human-preference source is local under {}",
            root.describe()
        )));
    }
    let mut timings = Timings::default();
    let reports = sources
        .iter()
        .map(|s| evaluate_source(similarity, root, s, max_rows, seed, &mut timings))
        .collect::<Result<Vec<_>>>()?;
    let score = mean(&reports.iter().map(|r| r.score).collect::<Vec<_>>());
    // two groups per source: its comparisons, its rated summaries
    let sizes: Vec<usize> = reports
        .iter()
        .flat_map(|r| [r.units.truth.len(), r.units.similarities.len()])
        .collect();
    let bootstrap = sage_measures::bootstrap_replicates(
        &sizes,
        |drawn| {
            mean(
                &reports
                    .iter()
                    .zip(drawn.chunks(2))
                    .map(|(r, d)| r.units.score(&d[0], &d[1]))
                    .collect::<Vec<_>>(),
            )
        },
        sage_measures::BOOTSTRAP_RESAMPLES,
        seed,
        "human-pref/bootstrap",
    )?;
    Ok(HumanPrefReport {
        similarity: similarity.name().to_owned(),
        seed: seed.0,
        max_rows,
        sources: reports,
        score,
        ci95: sage_measures::ci95(bootstrap.as_ref())?,
        bootstrap,
        timings,
    })
}

#[cfg(test)]
mod tests {

    use sage_metrics::Metric;

    use super::*;

    /// Scores a pair by the candidate's length, or a constant.
    struct ByLength(bool);

    impl Similarity for ByLength {
        fn name(&self) -> &str {
            "by-length"
        }
        fn score(&self, _: &str, candidate: &str) -> sage_core::Result<f32> {
            Ok(if self.0 { candidate.len() as f32 } else { 0.25 })
        }
    }

    fn comparison(s0: &str, s1: &str, choice: u8) -> SummaryComparison {
        SummaryComparison {
            id: "x".into(),
            post: "post".into(),
            summary_0: s0.into(),
            summary_1: s1.into(),
            choice,
        }
    }

    fn rating(doc: &str, summary: &str, system: &str, r: f64) -> SummaryRating {
        SummaryRating {
            doc_id: doc.into(),
            source: format!("source of {doc}"),
            summary: summary.into(),
            system: system.into(),
            ratings: [("a".to_owned(), r), ("b".to_owned(), 2.0 * r)].into(),
        }
    }

    use sage_testkit::fixtures;

    #[test]
    fn comparisons_by_hand_with_ties_to_summary_1() {
        let rows = [
            comparison("longer", "short", 0), // predicted 0, truth 0: TP
            comparison("longer", "short", 1), // predicted 0, truth 1: FP
            comparison("abc", "xyz", 0),      // tie → predicted 1, truth 0: FN
            comparison("ab", "abcd", 1),      // predicted 1, truth 1: TN
        ];
        let (s, ties, chose_0) = compare(&ByLength(true), &rows).unwrap();
        assert_eq!(
            (
                s.true_positives,
                s.false_positives,
                s.false_negatives,
                s.true_negatives
            ),
            (1, 1, 1, 1)
        );
        assert_eq!(
            (s.accuracy, s.precision, s.recall, s.f1),
            (0.5, 0.5, 0.5, 0.5)
        );
        assert_eq!((ties, chose_0), (1, 2));
    }

    #[test]
    fn a_constant_similarity_predicts_summary_1_and_correlates_with_nothing() {
        let rows = [comparison("a", "b", 0), comparison("a", "b", 1)];
        let (s, ties, _) = compare(&ByLength(false), &rows).unwrap();
        assert_eq!(
            (s.accuracy, s.precision, s.recall, s.f1, ties),
            (0.5, 0.0, 0.0, 0.0, 2)
        );
        let ratings = [rating("d", "x", "m1", 1.0), rating("d", "xy", "m2", 3.0)];
        let c = correlate(&ByLength(false), &ratings, &["a", "b"]).unwrap();
        assert!(c.iter().all(|d| d.pearson.is_none() && d.mapped == 0.5));
    }

    #[test]
    fn correlations_by_hand() {
        // lengths 1, 2, 4 against ratings 1, 2, 3: r = 0.98198 (scipy.stats.pearsonr)
        let ratings = [
            rating("d", "x", "m1", 1.0),
            rating("d", "xy", "m2", 2.0),
            rating("d", "wxyz", "m3", 3.0),
        ];
        let c = correlate(&ByLength(true), &ratings, &["a"]).unwrap();
        let r = c[0].pearson.unwrap();
        assert!((r - 0.981_980_506_061_965_9).abs() < 1e-12, "{r}");
        assert!((c[0].mapped - 0.5 * (r + 1.0)).abs() < 1e-15);
    }

    #[test]
    fn derived_comparisons_keep_pairs_beyond_the_margin_with_the_better_as_choice() {
        let rows = [
            rating("d1", "s1", "m1", 1.0),
            rating("d1", "s2", "m2", 1.2),
            rating("d1", "s3", "m3", 3.0),
            rating("d2", "t1", "m1", 2.0),
        ];
        // mean over a, b = 1.5 r: 1.5, 1.8, 4.5; margin 1 keeps (s1, s3), (s2, s3) only
        let (pairs, candidates) =
            comparisons_from_ratings(&rows, &["a", "b"], 1.0, RunSeed(7), "t");
        assert_eq!((pairs.len(), candidates), (2, 3));
        for p in &pairs {
            let chosen = if p.choice == 0 {
                &p.summary_0
            } else {
                &p.summary_1
            };
            assert_eq!(chosen, "s3");
            assert_eq!(p.post, "source of d1");
        }
        let again = comparisons_from_ratings(&rows, &["a", "b"], 1.0, RunSeed(7), "t").0;
        assert_eq!(pairs, again);
    }

    #[test]
    fn orientation_is_balanced_over_many_pairs() {
        let rows: Vec<SummaryRating> = (0..40)
            .map(|i| rating("d", &format!("s{i}"), &format!("m{i}"), i as f64))
            .collect();
        let (pairs, _) = comparisons_from_ratings(&rows, &["a"], 0.5, RunSeed(1), "t");
        let zeros = pairs.iter().filter(|p| p.choice == 0).count();
        let share = zeros as f64 / pairs.len() as f64;
        assert!((0.4..0.6).contains(&share), "{share}");
    }

    #[test]
    fn fixture_run_is_byte_identical_across_runs_and_in_range() {
        let root = fixtures();
        let sources = Source::available(&root);
        assert_eq!(sources.len(), 3, "{sources:?}");
        let run = || {
            let mut r = evaluate(
                Metric::JACCARD.similarity().as_ref(),
                &root,
                &sources,
                None,
                RunSeed(3),
            )
            .unwrap();
            r.timings = Timings::default();
            serde_json::to_vec(&r).unwrap()
        };
        let first = run();
        assert_eq!(first, run());
        let report: serde_json::Value = serde_json::from_slice(&first).unwrap();
        let score = report["score"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&score));
        let feedback = &report["sources"][0];
        assert_eq!(feedback["name"], "summarize-from-feedback");
        assert_eq!(feedback["comparisons"]["pairs"], 4);
        assert_eq!(
            feedback["correlations"]["dimensions"]
                .as_array()
                .unwrap()
                .len(),
            4
        );
    }

    /// Task 1 on the shipped SummEval and REALSumm ratings: the four classical metrics on every
    /// row, all-MiniLM-L6-v2 on 100 sampled rows per dataset (CI sets SAGE_DATA_DIR and
    /// SAGE_MODELS_DIR).
    #[test]
    fn real_ratings() {
        let Some((root, runs)) =
            sage_testkit::real_runs(module_path!(), None, &[("all-MiniLM-L6-v2", Some(100))])
        else {
            return;
        };
        let sources = [Source::summeval(), Source::realsumm()];
        for (similarity, max_rows) in &runs {
            let r = evaluate(
                similarity.as_ref(),
                &root,
                &sources,
                *max_rows,
                RunSeed(1337),
            )
            .unwrap();
            for s in &r.sources {
                assert!(s.comparisons.pairs > 100, "{}: {s:?}", s.name);
                assert!((0.0..=1.0).contains(&s.score));
            }
            eprintln!(
                "{:<18} human-pref {:.3} | summeval acc {:.3} r(coh,con,flu,rel) {:?} | realsumm acc {:.3} r {:?}",
                r.similarity,
                r.score,
                r.sources[0].comparisons.classification.accuracy,
                r.sources[0].correlations.dimensions.iter().map(|d| d.pearson.map(|p| (p * 1000.0).round() / 1000.0)).collect::<Vec<_>>(),
                r.sources[1].comparisons.classification.accuracy,
                r.sources[1].correlations.dimensions.iter().map(|d| d.pearson.map(|p| (p * 1000.0).round() / 1000.0)).collect::<Vec<_>>(),
            );
        }
    }
}
