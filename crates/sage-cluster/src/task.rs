//! The similarity matrix, subsets, datasets, a whole run.

use std::collections::BTreeSet;

use rand::seq::index;
use sage_core::{RunSeed, Similarity, Timings};
use sage_data::{DataRoot, LabeledText};
use sage_measures as measures;
use serde::{Deserialize, Serialize};

use crate::linkage::{complete_linkage, cut};
use crate::{ClusterError, Result};

/// The clustering sets shipped locally (registry name, split); the MTEB arXiv / bioRxiv /
/// medRxiv / P2P sets join when fetched from the hub (name them with `--dataset`).
pub const DEFAULT_DATASETS: [(&str, &str); 3] = [
    ("reddit", "test"),
    ("stackexchange", "test"),
    ("twentynewsgroups", "test"),
];

sage_core::suite_options! {
    /// Run options: the one declaration the flags, `--options`, bench.toml and Python keywords
    /// all read, with each field's range.
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Options {
        /// Subsets per dataset.
        pub subsets: usize = 5, sage_core::OptionSpec::whole(1, 1_000);
        /// Texts per subset, at most (memory grows with its square: ~5 GB at 50,000).
        pub max_texts: usize = 2000, sage_core::OptionSpec::whole(2, 50_000);
        /// Classes per subset, at most.
        pub max_classes: usize = 50, sage_core::OptionSpec::whole(2, 10_000);
        /// Run seed (the request's, never an option).
        pub seed: RunSeed = RunSeed::default(), sage_core::OptionSpec::run_seed();
    }
}

/// One clustered subset.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SubsetReport {
    /// Texts clustered.
    pub texts: usize,
    /// Classes among them (= clusters asked for).
    pub classes: usize,
    /// Checksum of the subset's texts and labels (sage-data's row checksum).
    pub checksum: String,
    /// Homogeneity.
    pub homogeneity: f64,
    /// Completeness.
    pub completeness: f64,
    /// V-measure.
    pub v_measure: f64,
}

/// One dataset.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DatasetReport {
    /// Registry name and split.
    pub dataset: String,
    /// Rows in the file.
    pub total_rows: usize,
    /// Classes in the file.
    pub total_classes: usize,
    /// Per subset.
    pub subsets: Vec<SubsetReport>,
    /// Mean V-measure over the subsets.
    pub v_measure: f64,
    /// Sample standard deviation over the subsets (0 with one subset).
    pub v_measure_std: f64,
}

/// A whole task-4 run: its options, one [`DatasetReport`] per dataset, the category score with
/// its bootstrap interval (subsets resampled within each dataset: it measures the spread between sampled subsets (with the default 5 it is coarse)) and resamples.
pub type ClusterReport = sage_measures::CategoryReport<Options, DatasetReport>;

/// Bytes a subset of `n` texts needs (see the crate docs).
pub fn memory_estimate(n: usize, symmetric: bool) -> u64 {
    let pairs = (n as u64) * (n as u64).saturating_sub(1) / 2;
    let directions = if symmetric { 1 } else { 2 };
    // (&str, &str) = 32 bytes and an f32 score per scored pair, an f64 distance per pair
    pairs * (directions * 36 + 8)
}

fn available_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Condensed pairwise similarities (i < j, row-major) of `texts`, in one batch; asymmetric
/// similarities averaged over both directions.
pub fn similarity_condensed(similarity: &dyn Similarity, texts: &[&str]) -> Result<Vec<f32>> {
    let n = texts.len();
    let mut pairs: Vec<(&str, &str)> = Vec::with_capacity(n * n.saturating_sub(1) / 2);
    for i in 0..n {
        for j in i + 1..n {
            pairs.push((texts[i], texts[j]));
        }
    }
    if similarity.is_symmetric() {
        return Ok(similarity.score_pairs(&pairs)?);
    }
    let m = pairs.len();
    pairs.extend_from_within(..);
    for p in &mut pairs[m..] {
        *p = (p.1, p.0);
    }
    let scores = similarity.score_pairs(&pairs)?;
    Ok(scores[..m]
        .iter()
        .zip(&scores[m..])
        .map(|(a, b)| 0.5 * (a + b))
        .collect())
}

fn subset_indices(labels: &[String], k: usize, options: &Options, label: &str) -> Vec<usize> {
    let mut rng = options.seed.rng(&format!("{label}/subset-{k}"));
    let classes: Vec<&str> = labels
        .iter()
        .map(String::as_str)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let chosen: BTreeSet<&str> = if classes.len() > options.max_classes {
        index::sample(&mut rng, classes.len(), options.max_classes)
            .into_iter()
            .map(|i| classes[i])
            .collect()
    } else {
        classes.into_iter().collect()
    };
    let pool: Vec<usize> = (0..labels.len())
        .filter(|&i| chosen.contains(labels[i].as_str()))
        .collect();
    let mut picked: Vec<usize> = if pool.len() > options.max_texts {
        index::sample(&mut rng, pool.len(), options.max_texts)
            .into_iter()
            .map(|i| pool[i])
            .collect()
    } else {
        pool
    };
    picked.sort_unstable();
    picked
}

fn cluster_subset(
    similarity: &dyn Similarity,
    dataset: &str,
    rows: &[&LabeledText],
) -> Result<SubsetReport> {
    let texts: Vec<&str> = rows.iter().map(|r| r.text.as_str()).collect();
    let labels: Vec<&str> = rows.iter().map(|r| r.label.as_str()).collect();
    let classes = labels.iter().collect::<BTreeSet<_>>().len();
    // a split can pass as a whole and still draw a subset of one class or of singletons
    if let Some(why) = measures::unclusterable(&labels) {
        return Err(ClusterError::Insufficient(format!(
            "{dataset}: a subset drawn: {why}; raise --max-texts or --max-classes, or give \
             labels that group more texts"
        )));
    }
    let predicted = cluster_texts(similarity, dataset, &texts, classes)?;
    let v = measures::v_measure(&labels, &predicted)?;
    Ok(SubsetReport {
        texts: texts.len(),
        classes,
        checksum: sage_data::sample::checksum(rows.iter().copied()),
        homogeneity: v.homogeneity,
        completeness: v.completeness,
        v_measure: v.v_measure,
    })
}

/// Each text's cluster (0..k): complete linkage on the distances `1 − similarity` of every
/// pair, cut at `k` clusters (see the crate docs). The one clustering of sage-rs: task 4 and
/// the noise suite both call it. A NaN similarity is an error naming `dataset`.
pub fn cluster_texts(
    similarity: &dyn Similarity,
    dataset: &str,
    texts: &[&str],
    k: usize,
) -> Result<Vec<usize>> {
    let n = texts.len();
    let sims = similarity_condensed(similarity, texts)?;
    let mut distances = Vec::with_capacity(sims.len());
    let (mut i, mut j) = (0usize, 1usize);
    for &s in &sims {
        if s.is_nan() {
            return Err(ClusterError::NotANumber {
                similarity: similarity.name().to_owned(),
                dataset: dataset.to_owned(),
                a: i,
                b: j,
            });
        }
        distances.push((1.0 - f64::from(s)).clamp(0.0, 2.0));
        j += 1;
        if j == n {
            i += 1;
            j = i + 1;
        }
    }
    drop(sims);
    let merges = complete_linkage(&mut distances, n);
    Ok(cut(&merges, n, k))
}

/// Refuses, before anything is scored, a clustering of `texts` texts whose pairwise distances
/// would not fit in the memory available (see the crate docs).
pub fn check_memory(similarity: &dyn Similarity, dataset: &str, texts: usize) -> Result<()> {
    let needed = memory_estimate(texts, similarity.is_symmetric());
    match available_memory() {
        Some(available) if needed > available => Err(ClusterError::TooLarge {
            dataset: dataset.to_owned(),
            texts,
            needed_mb: needed >> 20,
            available_mb: available >> 20,
        }),
        _ => Ok(()),
    }
}

/// The subsets clustered of a split whose rows have `labels` (file order) and whose content has
/// `split_checksum`: the whole split when it fits, else `options.subsets` seeded draws (indices
/// into `labels`, ascending). A function of the labels alone, so that the texts can be streamed
/// and only the rows drawn kept.
pub fn subset_plans(labels: &[String], split_checksum: &str, options: &Options) -> Vec<Vec<usize>> {
    // keyed by content, not name: see sage_data::sample
    let label = format!("cluster/{split_checksum}");
    let total_classes = labels.iter().collect::<BTreeSet<_>>().len();
    let whole = labels.len() <= options.max_texts && total_classes <= options.max_classes;
    let subsets = if whole { 1 } else { options.subsets.max(1) };
    (0..subsets)
        .map(|k| subset_indices(labels, k, options, &label))
        .collect()
}

/// Task 4 on one dataset's rows.
pub fn evaluate_dataset(
    similarity: &dyn Similarity,
    dataset: &str,
    split: &str,
    rows: &[LabeledText],
    options: &Options,
    timings: &mut Timings,
) -> Result<DatasetReport> {
    let labels: Vec<String> = rows.iter().map(|r| r.label.clone()).collect();
    let plans = subset_plans(&labels, &sage_data::sample::checksum(rows), options);
    evaluate_plans(
        similarity,
        (dataset, split),
        &labels,
        &plans,
        &|i| &rows[i],
        timings,
    )
}

/// Task 4 on the subsets `plans` of a split whose rows have `labels`; `row(i)` is row `i`.
fn evaluate_plans<'r>(
    similarity: &dyn Similarity,
    (dataset, split): (&str, &str),
    labels: &[String],
    plans: &[Vec<usize>],
    row: &dyn Fn(usize) -> &'r LabeledText,
    timings: &mut Timings,
) -> Result<DatasetReport> {
    if let Some(why) = measures::unclusterable(labels) {
        return Err(ClusterError::Insufficient(format!(
            "{dataset}/{split}: {why}"
        )));
    }
    let total_classes = labels.iter().collect::<BTreeSet<_>>().len();
    let largest = plans.iter().map(Vec::len).max().unwrap_or(0);
    check_memory(similarity, &format!("{dataset}/{split}"), largest)?;
    let mut reports = Vec::new();
    for (k, plan) in plans.iter().enumerate() {
        let subset: Vec<&LabeledText> = plan.iter().map(|&i| row(i)).collect();
        reports.push(
            timings.time(format!("cluster/{dataset}/{split}/subset-{k}"), || {
                cluster_subset(similarity, dataset, &subset)
            })?,
        );
    }
    let values: Vec<f64> = reports.iter().map(|r| r.v_measure).collect();
    let (v_measure, v_measure_std) = if values.len() > 1 {
        let ms = measures::mean_std(&values, 1)?;
        (ms.mean, ms.std)
    } else {
        (values[0], 0.0)
    };
    Ok(DatasetReport {
        dataset: format!("{dataset}/{split}"),
        total_rows: labels.len(),
        total_classes,
        subsets: reports,
        v_measure,
        v_measure_std,
    })
}

impl sage_measures::DatasetScore for DatasetReport {
    fn score(&self) -> f64 {
        self.v_measure
    }
    fn units(&self) -> usize {
        self.subsets.len()
    }
    fn resampled_score(&self, drawn: &[usize]) -> f64 {
        drawn
            .iter()
            .map(|&i| self.subsets[i].v_measure)
            .sum::<f64>()
            / drawn.len() as f64
    }
}

impl sage_core::DatasetRows for DatasetReport {
    fn rows_used(&self) -> Vec<sage_core::RowsUsed> {
        self.subsets
            .iter()
            .map(|s| {
                sage_core::RowsUsed::Subset(sage_core::SubsetSelection {
                    dataset: self.dataset.clone(),
                    total_rows: self.total_rows,
                    texts: s.texts,
                    classes: s.classes,
                    checksum: s.checksum.clone(),
                })
            })
            .collect()
    }
}

/// Task 4 on each of `datasets` (registry name, split; clustering kind).
pub fn evaluate(
    similarity: &dyn Similarity,
    root: &DataRoot,
    datasets: &[(&str, &str)],
    options: Options,
) -> Result<ClusterReport> {
    ClusterReport::over_datasets(
        "clustering",
        similarity.name(),
        options.seed,
        options,
        datasets,
        |name, split, options, timings| {
            // the labels first, then only the rows the subsets draw (a user's file is streamed)
            let mut plans = Vec::new();
            let (labels, drawn) = timings.time(format!("load/{name}/{split}"), || {
                root.rows::<LabeledText>(name, split)?.pick(
                    |r| r.label.clone(),
                    |labels, split_checksum| {
                        plans = subset_plans(labels, split_checksum, options);
                        let union: BTreeSet<usize> = plans.iter().flatten().copied().collect();
                        union.into_iter().collect()
                    },
                )
            })?;
            let row = |i: usize| {
                let at = drawn
                    .positions
                    .binary_search(&i)
                    .expect("every row of a plan was kept");
                &drawn.rows[at]
            };
            evaluate_plans(similarity, (name, split), &labels, &plans, &row, timings)
        },
    )
}

#[cfg(test)]
mod tests {

    use sage_metrics::Metric;

    use super::*;

    /// Shared words / words of the longer text, or (asymmetric) len(a) / (len(a) + len(b)).
    struct Probe {
        asymmetric: bool,
    }

    impl Similarity for Probe {
        fn name(&self) -> &str {
            "probe"
        }
        fn score(&self, a: &str, b: &str) -> sage_core::Result<f32> {
            if self.asymmetric {
                return Ok(a.len() as f32 / (a.len() + b.len()) as f32);
            }
            let (wa, wb): (Vec<&str>, Vec<&str>) = (
                a.split_whitespace().collect(),
                b.split_whitespace().collect(),
            );
            let shared = wa.iter().filter(|w| wb.contains(w)).count();
            Ok(shared as f32 / wa.len().max(wb.len()) as f32)
        }
        fn is_symmetric(&self) -> bool {
            !self.asymmetric
        }
    }

    fn text(t: &str, l: &str) -> LabeledText {
        LabeledText {
            text: t.into(),
            label: l.into(),
            ..LabeledText::default()
        }
    }

    #[test]
    fn two_obvious_topics_cluster_perfectly() {
        let rows = [
            text("cats purr and cats nap", "pets"),
            text("cats nap in the sun", "pets"),
            text("dogs and cats play", "pets"),
            text("stocks fell on monday", "markets"),
            text("stocks rose as markets rallied", "markets"),
            text("markets and stocks", "markets"),
        ];
        let r = evaluate_dataset(
            &Probe { asymmetric: false },
            "hand",
            "made",
            &rows,
            &Options::default(),
            &mut Timings::default(),
        )
        .unwrap();
        assert_eq!(r.subsets.len(), 1);
        assert_eq!((r.subsets[0].texts, r.subsets[0].classes), (6, 2));
        assert!((r.v_measure - 1.0).abs() < 1e-12, "{}", r.v_measure);
    }

    /// One class, or a class per text, once scored V-measure 1.0 with no word said.
    #[test]
    fn labels_that_leave_nothing_to_cluster_are_refused() {
        for (labels, said) in [
            (["a", "a", "a", "a"], "have one label"),
            (["a", "b", "c", "d"], "a label of its own"),
        ] {
            let rows: Vec<LabeledText> = labels
                .iter()
                .enumerate()
                .map(|(i, l)| text(&format!("text {i}"), l))
                .collect();
            let e = evaluate_dataset(
                &Probe { asymmetric: false },
                "mine",
                "test",
                &rows,
                &Options::default(),
                &mut Timings::default(),
            )
            .unwrap_err()
            .to_string();
            assert!(e.contains("mine/test") && e.contains(said), "{e}");
        }
    }

    #[test]
    fn asymmetric_similarities_are_averaged_over_both_directions() {
        let texts = ["a", "bbb", "cc"];
        let s = similarity_condensed(&Probe { asymmetric: true }, &texts).unwrap();
        // every pair: (|a|/(|a|+|b|) + |b|/(|a|+|b|)) / 2 = 0.5
        assert_eq!(s, vec![0.5, 0.5, 0.5]);
    }

    #[test]
    fn memory_estimate_grows_with_the_square() {
        assert_eq!(memory_estimate(2000, true), 1_999_000 * 44);
        assert_eq!(memory_estimate(2000, false), 1_999_000 * 80);
        assert_eq!(memory_estimate(1, true), 0);
        let e = ClusterError::TooLarge {
            dataset: "reddit/test".into(),
            texts: 100_000,
            needed_mb: 209_808,
            available_mb: 20_000,
        };
        assert!(e.to_string().contains("lower --max-texts"));
    }

    #[test]
    fn subsets_are_seeded_and_bounded() {
        let rows: Vec<LabeledText> = (0..300)
            .map(|i| text(&format!("text {i}"), &format!("class {}", i % 30)))
            .collect();
        let options = Options {
            subsets: 3,
            max_texts: 50,
            max_classes: 10,
            seed: RunSeed(5),
        };
        let labels: Vec<String> = rows.iter().map(|r| r.label.clone()).collect();
        let a = subset_indices(&labels, 0, &options, "t");
        assert_eq!(a, subset_indices(&labels, 0, &options, "t"));
        assert_ne!(a, subset_indices(&labels, 1, &options, "t"));
        assert_eq!(a.len(), 50);
        let classes: BTreeSet<&str> = a.iter().map(|&i| rows[i].label.as_str()).collect();
        assert!(classes.len() <= 10);
    }

    #[test]
    fn fixture_run_is_byte_identical_across_runs() {
        let root = sage_testkit::fixtures();
        let run = || {
            let mut r = evaluate(
                Metric::BM25.similarity().as_ref(),
                &root,
                &[("twentynewsgroups", "test")],
                Options::default(),
            )
            .unwrap();
            r.timings = Timings::default();
            serde_json::to_vec(&r).unwrap()
        };
        let first = run();
        assert_eq!(first, run());
    }

    /// Task 4 on the shipped sets: 2 subsets of up to 400 texts from up to 10 classes, for the
    /// four classical metrics and all-MiniLM-L6-v2 (CI sets SAGE_DATA_DIR and SAGE_MODELS_DIR).
    #[test]
    fn real_sets() {
        let Some((root, runs)) =
            sage_testkit::real_runs(module_path!(), (), &[("all-MiniLM-L6-v2", ())])
        else {
            return;
        };
        let options = Options {
            subsets: 2,
            max_texts: 400,
            max_classes: 10,
            seed: RunSeed(1337),
        };
        for (similarity, ()) in &runs {
            let r = evaluate(similarity.as_ref(), &root, &DEFAULT_DATASETS, options).unwrap();
            for d in &r.datasets {
                assert_eq!(d.subsets.len(), 2);
                assert!(d.subsets.iter().all(|s| s.texts == 400 && s.classes == 10));
            }
            eprintln!(
                "{:<18} clustering {:.3} | {} | {:.1} s",
                r.similarity,
                r.score,
                r.datasets
                    .iter()
                    .map(|d| format!("{} {:.3}±{:.3}", d.dataset, d.v_measure, d.v_measure_std))
                    .collect::<Vec<_>>()
                    .join(" "),
                r.timings.total_seconds()
            );
        }
    }
}
