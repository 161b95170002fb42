//! The conditions, one dataset, a whole run.

use rayon::prelude::*;
use sage_core::{RunSeed, Similarity, Timings};
use sage_data::{DataRoot, DocumentSummary, RowSelection};
use sage_perturb::robustness_set;
use serde::{Deserialize, Serialize};

use crate::{Result, RobustnessError};

/// The paper's datasets (registry name, split): CNN/DailyMail, BillSum, SumPubMed.
pub const DEFAULT_DATASETS: [(&str, &str); 3] = [
    ("billsum", "sample"),
    ("cnn-dailymail", "sample"),
    ("sumpubmed", "sample"),
];

sage_core::suite_options! {
    /// Run options: the one declaration the flags, `--options`, bench.toml and Python keywords
    /// all read, with each field's range.
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Options {
        /// Documents sampled per dataset (seeded); all when unset.
        pub max_rows: Option<usize> = None, sage_core::OptionSpec::whole(1, 10_000_000);
        /// Truncate documents to their first N cl100k tokens before perturbing; whole when unset.
        pub truncate_tokens: Option<usize> = None, sage_core::OptionSpec::whole(1, 1_000_000);
        /// Run seed (the request's, never an option).
        pub seed: RunSeed = RunSeed::default(), sage_core::OptionSpec::run_seed();
    }
}

/// Which conditions one document meets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Conditions {
    /// sim(summary) > every semantic sim.
    pub summary_over_semantic: bool,
    /// Every superficial sim > sim(summary).
    pub superficial_over_summary: bool,
    /// Every superficial sim > every semantic sim.
    pub superficial_over_semantic: bool,
}

/// The three conditions for one document (strict: ties meet none).
pub fn conditions(superficial: &[f32], semantic: &[f32], summary: f32) -> Conditions {
    let min_superficial = superficial.iter().copied().fold(f32::INFINITY, f32::min);
    let max_semantic = semantic.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    Conditions {
        summary_over_semantic: summary > max_semantic,
        superficial_over_summary: min_superficial > summary,
        superficial_over_semantic: min_superficial > max_semantic,
    }
}

/// Mean similarity of the documents to one kind of comparison text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PerturbationMean {
    /// Perturbation id, or `summary`.
    pub against: String,
    /// `superficial`, `semantic` or `summary`.
    pub class: String,
    /// Mean similarity.
    pub mean: f64,
}

/// One dataset.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DatasetReport {
    /// Registry name and split.
    pub dataset: String,
    /// Which rows were used.
    pub rows: RowSelection,
    /// Share of documents with sim(summary) > every semantic sim.
    pub summary_over_semantic: f64,
    /// Share with every superficial sim > sim(summary).
    pub superficial_over_summary: f64,
    /// Share with every superficial sim > every semantic sim.
    pub superficial_over_semantic: f64,
    /// Share meeting all three at once (the paper's prose; not part of the score).
    pub all_three: f64,
    /// Mean of the three shares.
    pub score: f64,
    /// Mean similarity per comparison text (the six perturbations, then the summary).
    pub means: Vec<PerturbationMean>,
    /// Per document, the share of the three conditions it meets (their mean is `score`): the
    /// units of the bootstrap interval.
    #[serde(skip)]
    pub document_scores: Vec<f64>,
}

/// A whole task-2 run: its options, one [`DatasetReport`] per dataset, the category score with
/// its bootstrap interval (documents resampled within each dataset) and resamples.
pub type RobustnessReport = sage_measures::CategoryReport<Options, DatasetReport>;

fn share(flags: impl Iterator<Item = bool>, n: usize) -> f64 {
    flags.filter(|&f| f).count() as f64 / n as f64
}

/// Task 2 on one dataset's documents. `positions[i]` is the file position of `rows[i]` (keys the
/// perturbation streams).
pub fn evaluate_dataset(
    similarity: &dyn Similarity,
    dataset: &str,
    rows: &[&DocumentSummary],
    positions: &[usize],
    selection: RowSelection,
    options: &Options,
    timings: &mut Timings,
) -> Result<DatasetReport> {
    if rows.is_empty() {
        return Err(RobustnessError::Insufficient(format!(
            "{dataset}: no documents"
        )));
    }
    let set = robustness_set();
    let documents: Vec<String> = rows
        .par_iter()
        .map(|r| match options.truncate_tokens {
            Some(max) => sage_tokens::truncate(&r.text, max),
            None => r.text.clone(),
        })
        .collect();
    // perturbed[d][k]: document d under perturbation k
    let perturbed: Vec<Vec<String>> = timings.time(format!("perturb/{dataset}"), || {
        documents
            .par_iter()
            .zip(positions)
            .map(|(text, &position)| {
                set.iter()
                    .map(|p| {
                        let label = format!("robustness/{}/{}", selection.split_checksum, p.id());
                        let mut rng = options.seed.rng_for_item(&label, position as u64);
                        Ok(p.apply(text, &mut rng)?.text)
                    })
                    .collect::<Result<Vec<String>>>()
            })
            .collect::<Result<_>>()
    })?;
    let width = set.len() + 1;
    let mut batch: Vec<(&str, &str)> = Vec::with_capacity(rows.len() * width);
    for ((doc, variants), row) in documents.iter().zip(&perturbed).zip(rows) {
        batch.extend(variants.iter().map(|v| (doc.as_str(), v.as_str())));
        batch.push((doc.as_str(), row.summary.as_str()));
    }
    let scores = timings.time(format!("score/{dataset}"), || {
        similarity.score_pairs(&batch)
    })?;
    let met: Vec<Conditions> = scores
        .chunks(width)
        .map(|s| conditions(&s[..3], &s[3..6], s[6]))
        .collect();
    let n = met.len();
    let summary_over_semantic = share(met.iter().map(|c| c.summary_over_semantic), n);
    let superficial_over_summary = share(met.iter().map(|c| c.superficial_over_summary), n);
    let superficial_over_semantic = share(met.iter().map(|c| c.superficial_over_semantic), n);
    let all_three = share(
        met.iter().map(|c| {
            c.summary_over_semantic && c.superficial_over_summary && c.superficial_over_semantic
        }),
        n,
    );
    let column_mean =
        |k: usize| scores.chunks(width).map(|s| f64::from(s[k])).sum::<f64>() / n as f64;
    let mut means: Vec<PerturbationMean> = set
        .iter()
        .enumerate()
        .map(|(k, p)| PerturbationMean {
            against: p.id(),
            class: if k < 3 { "superficial" } else { "semantic" }.to_owned(),
            mean: column_mean(k),
        })
        .collect();
    means.push(PerturbationMean {
        against: "summary".into(),
        class: "summary".to_owned(),
        mean: column_mean(set.len()),
    });
    Ok(DatasetReport {
        dataset: format!("{}/{}", selection.dataset, selection.split),
        rows: selection,
        summary_over_semantic,
        superficial_over_summary,
        superficial_over_semantic,
        all_three,
        score: (summary_over_semantic + superficial_over_summary + superficial_over_semantic) / 3.0,
        means,
        document_scores: met
            .iter()
            .map(|c| {
                [
                    c.summary_over_semantic,
                    c.superficial_over_summary,
                    c.superficial_over_semantic,
                ]
                .iter()
                .filter(|&&m| m)
                .count() as f64
                    / 3.0
            })
            .collect(),
    })
}

impl sage_measures::DatasetScore for DatasetReport {
    fn score(&self) -> f64 {
        self.score
    }
    fn units(&self) -> usize {
        self.document_scores.len()
    }
    fn resampled_score(&self, drawn: &[usize]) -> f64 {
        sage_measures::mean_at(&self.document_scores, drawn)
    }
}

impl sage_core::DatasetRows for DatasetReport {
    fn rows_used(&self) -> Vec<sage_core::RowsUsed> {
        vec![self.rows.clone().into()]
    }
}

/// Task 2 on each of `datasets` (registry name, split; document+summary kind).
pub fn evaluate(
    similarity: &dyn Similarity,
    root: &DataRoot,
    datasets: &[(&str, &str)],
    options: Options,
) -> Result<RobustnessReport> {
    RobustnessReport::over_datasets(
        "robustness",
        similarity.name(),
        options.seed,
        options,
        datasets,
        |name, split, options, timings| {
            let sampled = root
                .rows::<DocumentSummary>(name, split)?
                .sample(options.max_rows, options.seed)?;
            let rows: Vec<&DocumentSummary> = sampled.rows.iter().collect();
            evaluate_dataset(
                similarity,
                name,
                &rows,
                &sampled.positions,
                sampled.selection,
                options,
                timings,
            )
        },
    )
}

#[cfg(test)]
mod tests {

    use sage_metrics::Metric;

    use super::*;

    struct Constant;

    impl Similarity for Constant {
        fn name(&self) -> &str {
            "constant"
        }
        fn score(&self, _: &str, _: &str) -> sage_core::Result<f32> {
            Ok(0.7)
        }
    }

    use sage_testkit::fixtures;

    #[test]
    fn conditions_by_hand() {
        // the ideal order: superficial > summary > semantic
        let ideal = conditions(&[0.9, 0.95, 0.8], &[0.3, 0.5, 0.4], 0.6);
        assert!(
            ideal.summary_over_semantic
                && ideal.superficial_over_summary
                && ideal.superficial_over_semantic
        );
        // one superficial below the summary, but above every semantic
        let c = conditions(&[0.9, 0.55, 0.8], &[0.3, 0.5, 0.4], 0.6);
        assert_eq!(
            (
                c.summary_over_semantic,
                c.superficial_over_summary,
                c.superficial_over_semantic
            ),
            (true, false, true)
        );
        // ties meet nothing
        let tied = conditions(&[0.5; 3], &[0.5; 3], 0.5);
        assert!(
            !tied.summary_over_semantic
                && !tied.superficial_over_summary
                && !tied.superficial_over_semantic
        );
    }

    #[test]
    fn a_constant_similarity_scores_zero() {
        let r = evaluate(
            &Constant,
            &fixtures(),
            &[("cnn-dailymail", "sample")],
            Options::default(),
        )
        .unwrap();
        assert_eq!(r.score, 0.0);
        assert!(r.datasets[0]
            .means
            .iter()
            .all(|m| (m.mean - 0.7).abs() < 1e-6));
    }

    #[test]
    fn reports_are_byte_identical_across_runs_and_sample_sizes_keep_perturbations() {
        let root = fixtures();
        let run = |max_rows| {
            let mut r = evaluate(
                Metric::LEVENSHTEIN.similarity().as_ref(),
                &root,
                &[("cnn-dailymail", "sample")],
                Options {
                    max_rows,
                    seed: RunSeed(11),
                    ..Options::default()
                },
            )
            .unwrap();
            r.timings = Timings::default();
            r
        };
        let a = serde_json::to_vec(&run(None)).unwrap();
        assert_eq!(a, serde_json::to_vec(&run(None)).unwrap());
        let r = run(None);
        assert_eq!(r.datasets[0].means.len(), 7);
        assert!((0.0..=1.0).contains(&r.score));
    }

    /// Task 2 on the shipped samples: the four classical metrics on 60 documents per dataset,
    /// all-MiniLM-L6-v2 on 10 (CI sets SAGE_DATA_DIR and SAGE_MODELS_DIR).
    #[test]
    fn real_documents() {
        let Some((root, runs)) =
            sage_testkit::real_runs(module_path!(), 60, &[("all-MiniLM-L6-v2", 20)])
        else {
            return;
        };
        for (similarity, n) in &runs {
            let r = evaluate(
                similarity.as_ref(),
                &root,
                &DEFAULT_DATASETS,
                Options {
                    max_rows: Some(*n),
                    ..Options::default()
                },
            )
            .unwrap();
            for d in &r.datasets {
                assert_eq!(d.rows.used_rows, *n);
                assert!((0.0..=1.0).contains(&d.score));
            }
            eprintln!(
                "{:<18} robustness {:.3} | {} | {:.1} s",
                r.similarity,
                r.score,
                r.datasets
                    .iter()
                    .map(|d| format!("{} {:.3}", d.dataset, d.score))
                    .collect::<Vec<_>>()
                    .join(" "),
                r.timings.total_seconds()
            );
        }
    }
}
