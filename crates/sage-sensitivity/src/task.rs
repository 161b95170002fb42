//! The expected curve, one dataset, a whole run.

use rayon::prelude::*;
use sage_core::{RunSeed, Similarity, Timings};
use sage_data::{DataRoot, RowSelection};
use sage_perturb::{sensitivity_set, Perturbation, Provenance};
use serde::{Deserialize, Serialize};

use crate::{Result, SensitivityError};

/// The paper's datasets (registry name, split); ArguAna is used when its BEIR folder is local.
pub const DEFAULT_DATASETS: [(&str, &str); 6] = [
    ("amazon-polarity", "sample"),
    ("arguana", "test"),
    ("billsum", "sample"),
    ("cnn-dailymail", "sample"),
    ("paul-graham-essays", "sample"),
    ("sumpubmed", "sample"),
];

sage_core::suite_options! {
    /// Run options: the one declaration the flags, `--options`, bench.toml and Python keywords
    /// all read, with each field's range.
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Options {
        /// Documents sampled per dataset (seeded); all when unset.
        pub max_rows: Option<usize> = None, sage_core::OptionSpec::whole(1, 10_000_000);
        /// Truncate documents to their first N cl100k tokens before perturbing (the authors'
        /// 2,048); whole when unset.
        pub truncate_tokens: Option<usize> = Some(DEFAULT_TRUNCATE_TOKENS),
            sage_core::OptionSpec::whole(1, 1_000_000).unset_by("whole-documents", "Do not truncate.");
        /// Run seed (the request's, never an option).
        pub seed: RunSeed = RunSeed::default(), sage_core::OptionSpec::run_seed();
    }
}

/// Tokens documents are cut to by default: the authors' 2,048.
pub const DEFAULT_TRUNCATE_TOKENS: usize = 2048;

/// `1 − p/(1 + p)`: the similarity a perturbation of proportion `p` should leave.
pub fn expected_similarity(p: f64) -> f64 {
    1.0 - p / (1.0 + p)
}

/// One (proportion, position) level.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LevelReport {
    /// Proportion inserted or removed.
    pub proportion: f64,
    /// Relative position.
    pub position: f64,
    /// Expected similarity.
    pub expected: f64,
    /// Mean observed similarity.
    pub observed_mean: f64,
    /// Mean |observed − expected|.
    pub mean_absolute_error: f64,
}

/// One point of the degradation curve: a proportion, over every position.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    /// Proportion.
    pub proportion: f64,
    /// Expected similarity.
    pub expected: f64,
    /// Mean observed similarity.
    pub observed_mean: f64,
}

/// One perturbation family on one dataset.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FamilyReport {
    /// `needle-insertion` or `token-removal`.
    pub family: String,
    /// 1 − mean_absolute_error.
    pub score: f64,
    /// Mean |observed − expected| over documents, levels and positions.
    pub mean_absolute_error: f64,
    /// Per (proportion, position).
    pub levels: Vec<LevelReport>,
    /// Per proportion.
    pub curve: Vec<CurvePoint>,
    /// Per document, its mean |observed − expected| over the levels.
    #[serde(skip)]
    pub document_errors: Vec<f64>,
}

/// One dataset.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DatasetReport {
    /// Registry name and split.
    pub dataset: String,
    /// Which rows were used.
    pub rows: RowSelection,
    /// Documents cut by the token cap.
    pub truncated_documents: usize,
    /// Needle insertion.
    pub insertion: FamilyReport,
    /// Token removal.
    pub removal: FamilyReport,
    /// Mean of the two family scores.
    pub score: f64,
    /// Per document, 1 − the mean of its two family errors (their mean is `score`): the units
    /// of the bootstrap interval.
    #[serde(skip)]
    pub document_scores: Vec<f64>,
}

/// A whole task-3 run: its options, one [`DatasetReport`] per dataset, the category score with
/// its bootstrap interval (documents resampled within each dataset) and resamples.
pub type SensitivityReport = sage_measures::CategoryReport<Options, DatasetReport>;

/// (proportion, position) of a sensitivity perturbation, read from what it did.
fn level_of(provenance: &Provenance) -> Option<(f64, f64)> {
    match *provenance {
        Provenance::NeedleInsertion {
            proportion,
            position,
            ..
        } => Some((proportion, position)),
        Provenance::TokenRemoval { size, position, .. } => Some((size, position)),
        _ => None,
    }
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    sum / n.max(1) as f64
}

fn family(
    similarity: &dyn Similarity,
    name: &'static str,
    documents: &[String],
    perturbed: &[Vec<(String, (f64, f64))>],
) -> Result<FamilyReport> {
    let width = perturbed[0].len();
    let batch: Vec<(&str, &str)> = documents
        .iter()
        .zip(perturbed)
        .flat_map(|(doc, copies)| copies.iter().map(move |(c, _)| (doc.as_str(), c.as_str())))
        .collect();
    let observed = similarity.score_pairs(&batch)?;
    let levels: Vec<(f64, f64)> = perturbed[0].iter().map(|(_, level)| *level).collect();
    let level_reports: Vec<LevelReport> = levels
        .iter()
        .enumerate()
        .map(|(k, &(proportion, position))| {
            let expected = expected_similarity(proportion);
            let column = || {
                observed
                    .iter()
                    .skip(k)
                    .step_by(width)
                    .map(|&s| f64::from(s))
            };
            LevelReport {
                proportion,
                position,
                expected,
                observed_mean: mean(column()),
                mean_absolute_error: mean(column().map(|s| (s - expected).abs())),
            }
        })
        .collect();
    let mut proportions: Vec<f64> = levels.iter().map(|l| l.0).collect();
    proportions.dedup();
    let curve = proportions
        .iter()
        .map(|&p| CurvePoint {
            proportion: p,
            expected: expected_similarity(p),
            observed_mean: mean(
                level_reports
                    .iter()
                    .filter(|l| l.proportion == p)
                    .map(|l| l.observed_mean),
            ),
        })
        .collect();
    // every level has one value per document, so the mean of level errors is the overall mean
    let mean_absolute_error = mean(level_reports.iter().map(|l| l.mean_absolute_error));
    let document_errors = observed
        .chunks(width)
        .map(|row| {
            mean(
                row.iter()
                    .zip(&levels)
                    .map(|(&s, &(p, _))| (f64::from(s) - expected_similarity(p)).abs()),
            )
        })
        .collect();
    Ok(FamilyReport {
        family: name.to_owned(),
        score: 1.0 - mean_absolute_error,
        mean_absolute_error,
        levels: level_reports,
        curve,
        document_errors,
    })
}

/// Task 3 on one dataset's documents. `positions[i]` is the file position of `texts[i]`.
pub fn evaluate_dataset(
    similarity: &dyn Similarity,
    dataset: &str,
    texts: &[&str],
    positions: &[usize],
    selection: RowSelection,
    options: &Options,
    timings: &mut Timings,
) -> Result<DatasetReport> {
    if texts.is_empty() {
        return Err(SensitivityError::Insufficient(format!(
            "{dataset}: no documents"
        )));
    }
    let documents: Vec<String> = texts
        .par_iter()
        .map(|t| match options.truncate_tokens {
            Some(max) => sage_tokens::truncate(t, max),
            None => (*t).to_owned(),
        })
        .collect();
    let truncated_documents = documents
        .iter()
        .zip(texts)
        .filter(|(d, t)| d.len() != t.len())
        .count();
    let set = sensitivity_set();
    let (needles, removals): (Vec<&dyn Perturbation>, Vec<&dyn Perturbation>) = set
        .iter()
        .map(|p| p.as_ref())
        .partition(|p| p.id().starts_with("needle"));
    // per document, per perturbation: (perturbed text, (proportion or size, position))
    type Perturbed = Vec<Vec<(String, (f64, f64))>>;
    let perturb = |family: &[&dyn Perturbation]| -> Result<Perturbed> {
        documents
            .par_iter()
            .zip(positions)
            .map(|(text, &position)| {
                family
                    .iter()
                    .map(|p| {
                        let label = format!("sensitivity/{}/{}", selection.split_checksum, p.id());
                        let out = p.apply(
                            text,
                            &mut options.seed.rng_for_item(&label, position as u64),
                        )?;
                        let level = level_of(&out.provenance).expect(
                            "the sensitivity set holds needle insertions and token removals",
                        );
                        Ok((out.text, level))
                    })
                    .collect()
            })
            .collect()
    };
    let inserted = timings.time(format!("perturb/{dataset}"), || perturb(&needles))?;
    let removed = timings.time(format!("perturb/{dataset}"), || perturb(&removals))?;
    let insertion = timings.time(format!("score/{dataset}/needle-insertion"), || {
        family(similarity, "needle-insertion", &documents, &inserted)
    })?;
    let removal = timings.time(format!("score/{dataset}/token-removal"), || {
        family(similarity, "token-removal", &documents, &removed)
    })?;
    Ok(DatasetReport {
        dataset: format!("{}/{}", selection.dataset, selection.split),
        rows: selection,
        truncated_documents,
        score: 0.5 * (insertion.score + removal.score),
        document_scores: insertion
            .document_errors
            .iter()
            .zip(&removal.document_errors)
            .map(|(i, r)| 1.0 - 0.5 * (i + r))
            .collect(),
        insertion,
        removal,
    })
}

/// The default datasets that are in the local mirror.
pub fn available(root: &DataRoot) -> Vec<(&'static str, &'static str)> {
    root.partition_local(&DEFAULT_DATASETS).0
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

/// Task 3 on each of `datasets` (registry name, split; any document-bearing kind).
pub fn evaluate(
    similarity: &dyn Similarity,
    root: &DataRoot,
    datasets: &[(&str, &str)],
    options: Options,
) -> Result<SensitivityReport> {
    SensitivityReport::over_datasets(
        "sensitivity",
        similarity.name(),
        options.seed,
        options,
        datasets,
        |name, split, options, timings| {
            let sampled = root
                .document_rows(name, split)?
                .sample(options.max_rows, options.seed)?;
            let texts: Vec<&str> = sampled.rows.iter().map(|d| d.text.as_str()).collect();
            evaluate_dataset(
                similarity,
                name,
                &texts,
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

    /// A constant, or the ratio of the shorter to the longer cl100k token count.
    struct Probe(Option<f32>);

    impl Similarity for Probe {
        fn name(&self) -> &str {
            "probe"
        }
        fn score(&self, a: &str, b: &str) -> sage_core::Result<f32> {
            Ok(self.0.unwrap_or_else(|| {
                let (x, y) = (sage_tokens::count(a) as f32, sage_tokens::count(b) as f32);
                x.min(y) / x.max(y)
            }))
        }
    }

    use sage_testkit::fixtures;

    fn run_on(similarity: &dyn Similarity, texts: &[&str]) -> DatasetReport {
        let positions: Vec<usize> = (0..texts.len()).collect();
        let selection = RowSelection {
            dataset: "hand".into(),
            split: "made".into(),
            total_rows: texts.len(),
            used_rows: texts.len(),
            max_rows: None,
            seed: 0,
            empty_text_rows: 0,
            checksum: String::new(),
            split_checksum: "hand-made".into(),
            files: Vec::new(),
        };
        evaluate_dataset(
            similarity,
            "hand",
            texts,
            &positions,
            selection,
            &Options::default(),
            &mut Timings::default(),
        )
        .unwrap()
    }

    #[test]
    fn expected_curve() {
        assert_eq!(expected_similarity(0.0), 1.0);
        assert!((expected_similarity(0.5) - 2.0 / 3.0).abs() < 1e-15);
        assert_eq!(expected_similarity(1.0), 0.5);
    }

    #[test]
    fn a_constant_similarity_of_one_scores_the_mean_distance_to_the_curve() {
        let r = run_on(
            &Probe(Some(1.0)),
            &["one two three four five six seven eight nine ten"],
        );
        // by hand: 1 − mean(1 − 1/(1+p)) over p = 0.15, 0.5, 1.0 (insertion) and 0.15, 0.5, 0.9
        let insertion_mae = (0.15 / 1.15 + 0.5 / 1.5 + 1.0 / 2.0) / 3.0;
        let removal_mae = (0.15 / 1.15 + 0.5 / 1.5 + 0.9 / 1.9) / 3.0;
        assert!((r.insertion.mean_absolute_error - insertion_mae).abs() < 1e-6);
        assert!((r.removal.mean_absolute_error - removal_mae).abs() < 1e-6);
        assert!((r.score - (1.0 - 0.5 * (insertion_mae + removal_mae))).abs() < 1e-6);
        assert_eq!(r.insertion.levels.len(), 9);
        assert_eq!(r.insertion.curve.len(), 3);
        assert_eq!(r.removal.curve[2].proportion, 0.9);
    }

    #[test]
    fn a_token_count_ratio_follows_the_insertion_curve() {
        // inserting k = pN tokens leaves N/(N + k) = 1/(1 + p) of the tokens: the expected curve,
        // up to flooring and tokens merged at the insertion point
        let doc = "word ".repeat(400);
        let r = run_on(&Probe(None), &[doc.trim_end()]);
        assert!(r.insertion.mean_absolute_error < 0.01, "{:?}", r.insertion);
        // removing pN tokens leaves 1 − p, below 1/(1 + p): the removal error is the gap
        let gap = ((1.0 / 1.15 - 0.85) + (1.0 / 1.5 - 0.5) + (1.0 / 1.9 - 0.1)) / 3.0;
        assert!(
            (r.removal.mean_absolute_error - gap).abs() < 0.01,
            "{:?}",
            r.removal
        );
    }

    #[test]
    fn reports_are_byte_identical_across_runs() {
        let root = fixtures();
        let datasets = available(&root);
        assert!(
            datasets.contains(&("cnn-dailymail", "sample")),
            "{datasets:?}"
        );
        let run = || {
            let mut r = evaluate(
                Metric::BM25.similarity().as_ref(),
                &root,
                &datasets,
                Options::default(),
            )
            .unwrap();
            r.timings = Timings::default();
            serde_json::to_vec(&r).unwrap()
        };
        assert_eq!(run(), run());
    }

    /// Task 3 on the shipped documents: the four classical metrics on 40 documents per dataset,
    /// all-MiniLM-L6-v2 on 3 (CI sets SAGE_DATA_DIR and SAGE_MODELS_DIR).
    #[test]
    fn real_documents() {
        let Some((root, runs)) =
            sage_testkit::real_runs(module_path!(), 40, &[("all-MiniLM-L6-v2", 4)])
        else {
            return;
        };
        let datasets = available(&root);
        assert!(datasets.len() >= 5, "{datasets:?}");
        for (similarity, n) in &runs {
            let r = evaluate(
                similarity.as_ref(),
                &root,
                &datasets,
                Options {
                    max_rows: Some(*n),
                    ..Options::default()
                },
            )
            .unwrap();
            for d in &r.datasets {
                assert!((0.0..=1.0).contains(&d.score), "{d:?}");
            }
            eprintln!(
                "{:<18} sensitivity {:.3} | {} | {:.1} s",
                r.similarity,
                r.score,
                r.datasets
                    .iter()
                    .map(|d| format!(
                        "{} ins {:.3} rem {:.3}",
                        d.dataset, d.insertion.score, d.removal.score
                    ))
                    .collect::<Vec<_>>()
                    .join(" | "),
                r.timings.total_seconds()
            );
        }
    }
}
