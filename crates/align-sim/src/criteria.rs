//! The criteria, their formulas, and the report.

use std::path::PathBuf;
use std::sync::Arc;

use rand::seq::SliceRandom;
use sage_core::{RunSeed, Similarity};
use sage_data::{DataRoot, LabeledPair, NegationPair, RowSelection};
use sage_measures as measures;
use sage_perturb::{
    AntonymReplacement, Jumbling, Perturbation, Provenance, SynonymReplacement, WordNet,
};
use serde::{Deserialize, Serialize};

use crate::{AlignSimError, Result};

/// The paraphrase datasets of a run that names none (registry name, split): MRPC and PAWS-Wiki.
pub const DEFAULT_DATASETS: [(&str, &str); 2] = [("mrpc", "test"), ("paws-wiki", "test")];

/// Rows sampled per dataset when the options name no other number.
pub const DEFAULT_MAX_ROWS: usize = 1750;

sage_core::suite_options! {
    /// The options of an ALIGN-SIM run: the one declaration the flags, `--options`, bench.toml
    /// and Python keywords all read, with each field's range. The seed is the run's.
    #[derive(Clone, Debug, PartialEq)]
    pub struct Options {
        /// Rows sampled per dataset (seeded).
        pub max_rows: usize = DEFAULT_MAX_ROWS, sage_core::OptionSpec::whole(1, 10_000_000);
        /// The WordNet 3.0 dict folder the synonym and antonym criteria read; `wordnet/dict`
        /// under the data root when unset.
        pub wordnet: Option<PathBuf> = None, sage_core::OptionSpec::any();
    }
}

/// The ε thresholds of criteria 3 and 5.
pub const EPSILONS: [f64; 4] = [0.0, 0.01, 0.05, 0.1];

/// Counts of d values in 40 bins of width 0.05 over [−1, 1] (values outside are clamped into
/// the end bins).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Histogram {
    /// The 41 bin edges.
    pub edges: Vec<f64>,
    /// The 40 counts.
    pub counts: Vec<usize>,
}

/// The histogram of `values` (see [`Histogram`]).
pub fn histogram(values: &[f64]) -> Histogram {
    let bins = 40;
    let edges: Vec<f64> = (0..=bins)
        .map(|i| -1.0 + 2.0 * i as f64 / bins as f64)
        .collect();
    let mut counts = vec![0usize; bins];
    for &v in values {
        let i = (((v + 1.0) / 2.0) * bins as f64).floor();
        counts[(i.max(0.0) as usize).min(bins - 1)] += 1;
    }
    Histogram { edges, counts }
}

/// Shares (0–1) of `values` strictly above each ε of [`EPSILONS`].
pub fn shares_above(values: &[f64]) -> Vec<(f64, f64)> {
    EPSILONS
        .iter()
        .map(|&e| {
            (
                e,
                if values.is_empty() {
                    0.0
                } else {
                    values.iter().filter(|&&d| d > e).count() as f64 / values.len() as f64
                },
            )
        })
        .collect()
}

/// Criterion 1.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParaphraseReport {
    /// Mean similarity of the paraphrase pairs.
    pub paraphrase_mean: f64,
    /// Mean similarity of the random pairs.
    pub random_mean: f64,
    /// paraphrase_mean − random_mean.
    pub difference: f64,
    /// α = 1 − random_mean, the normaliser of criteria 2 and 4.
    pub alpha: f64,
    /// Paraphrase pairs scored.
    pub paraphrase_pairs: usize,
    /// Random pairs scored.
    pub random_pairs: usize,
}

/// Criterion 2, for one n.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SynonymReport {
    /// Words replaced.
    pub words: usize,
    /// Mean sim(S, S_syn).
    pub mean: f64,
    /// α · mean.
    pub normalised: f64,
    /// Sentences scored (at least one word replaced).
    pub samples: usize,
    /// Sentences left out (no word with a synonym).
    pub skipped: usize,
}

/// Criteria 3 and 5: d = sim(S, S_para) − sim(S, S_other).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DifferenceReport {
    /// What S_other is (`antonym`, `jumbling-1`, ...).
    pub against: String,
    /// (ε, share of d > ε).
    pub shares: Vec<(f64, f64)>,
    /// Mean d.
    pub mean_difference: f64,
    /// Histogram of d.
    pub histogram: Histogram,
    /// Samples scored.
    pub samples: usize,
    /// Samples left out (nothing to perturb).
    pub skipped: usize,
}

/// Criterion 4.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NegationReport {
    /// Mean sim(negated, affirmative).
    pub mean: f64,
    /// Mean similarity of AFIN's random pairing.
    pub random_mean: f64,
    /// α = 1 − random_mean.
    pub alpha: f64,
    /// α · mean.
    pub normalised: f64,
    /// Which rows were used.
    pub rows: RowSelection,
}

/// Criteria 1, 2, 3 and 5 on one paraphrase dataset.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DatasetReport {
    /// Registry name and split.
    pub dataset: String,
    /// Which rows were used.
    pub rows: RowSelection,
    /// Criterion 1.
    pub paraphrase: ParaphraseReport,
    /// Criterion 2, n = 1, 2, 3.
    pub synonyms: Vec<SynonymReport>,
    /// Criterion 3.
    pub antonym: DifferenceReport,
    /// Criterion 5, n = 1, 2, 3.
    pub jumbling: Vec<DifferenceReport>,
}

/// A whole run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AlignSimReport {
    /// The similarity's name.
    pub similarity: String,
    /// The run seed.
    pub seed: u64,
    /// Per paraphrase dataset.
    pub datasets: Vec<DatasetReport>,
    /// Criterion 4 on AFIN.
    pub negation: NegationReport,
}

impl sage_core::SuiteReport for AlignSimReport {
    /// None: five criteria, no one number (the report ranks each criterion).
    fn score(&self) -> Option<f64> {
        None
    }
    /// Each paraphrase dataset's rows, then AFIN's for negation.
    fn rows_used(&self) -> Vec<sage_core::RowsUsed> {
        self.datasets
            .iter()
            .map(|d| &d.rows)
            .chain([&self.negation.rows])
            .map(|r| r.clone().into())
            .collect()
    }
}

fn mean(values: &[f32]) -> Result<f64> {
    let v: Vec<f64> = values.iter().map(|&x| f64::from(x)).collect();
    Ok(measures::mean(&v)?)
}

/// Criterion 1 on paraphrase (label 1) and negative (label 0) pairs. Random pairs: the negatives
/// with their second sentences permuted by `seed.rng("align-sim/random-pairs")`.
pub fn paraphrase(
    similarity: &dyn Similarity,
    rows: &[LabeledPair],
    seed: RunSeed,
) -> Result<ParaphraseReport> {
    let positives: Vec<(&str, &str)> = rows
        .iter()
        .filter(|r| r.label)
        .map(|r| (r.sentence1.as_str(), r.sentence2.as_str()))
        .collect();
    let negatives: Vec<&LabeledPair> = rows.iter().filter(|r| !r.label).collect();
    if positives.is_empty() || negatives.len() < 2 {
        return Err(AlignSimError::Insufficient(
            "criterion 1 needs paraphrase pairs and at least two negative pairs".into(),
        ));
    }
    let mut seconds: Vec<&str> = negatives.iter().map(|r| r.sentence2.as_str()).collect();
    seconds.shuffle(&mut seed.rng("align-sim/random-pairs"));
    let random: Vec<(&str, &str)> = negatives
        .iter()
        .zip(&seconds)
        .map(|(r, s)| (r.sentence1.as_str(), *s))
        .collect();
    // one batch: batch-normalised metrics score both sides on one scale
    let all: Vec<(&str, &str)> = positives.iter().chain(&random).copied().collect();
    let scores = similarity.score_pairs(&all)?;
    let (p, r) = scores.split_at(positives.len());
    let (paraphrase_mean, random_mean) = (mean(p)?, mean(r)?);
    Ok(ParaphraseReport {
        paraphrase_mean,
        random_mean,
        difference: paraphrase_mean - random_mean,
        alpha: 1.0 - random_mean,
        paraphrase_pairs: positives.len(),
        random_pairs: random.len(),
    })
}

/// Applies `perturbation` to each text with its per-item generator; `None` where it changed
/// nothing (no candidate word).
fn perturb_all(
    perturbation: &dyn Perturbation,
    texts: &[&str],
    seed: RunSeed,
) -> Result<Vec<Option<String>>> {
    let id = perturbation.id();
    texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let out = perturbation.apply(text, &mut seed.rng_for_item(&id, i as u64))?;
            let changed = match &out.provenance {
                Provenance::SynonymReplacement { replacements, .. } => !replacements.is_empty(),
                Provenance::AntonymReplacement { replacement } => replacement.is_some(),
                Provenance::Jumbling { swaps } => !swaps.is_empty(),
                _ => true,
            };
            Ok(changed.then_some(out.text))
        })
        .collect()
}

/// d = sim(S, S_para) − sim(S, S_other) for the samples `others` has, in one batch.
fn differences(
    similarity: &dyn Similarity,
    against: String,
    pairs: &[(&str, &str)],
    others: &[Option<String>],
) -> Result<DifferenceReport> {
    let kept: Vec<(usize, &str)> = others
        .iter()
        .enumerate()
        .filter_map(|(i, o)| o.as_deref().map(|t| (i, t)))
        .collect();
    let mut batch: Vec<(&str, &str)> = kept.iter().map(|&(i, _)| pairs[i]).collect();
    batch.extend(kept.iter().map(|&(i, other)| (pairs[i].0, other)));
    let scores = similarity.score_pairs(&batch)?;
    let (para, other) = scores.split_at(kept.len());
    let d: Vec<f64> = para
        .iter()
        .zip(other)
        .map(|(a, b)| f64::from(*a) - f64::from(*b))
        .collect();
    Ok(DifferenceReport {
        against,
        shares: shares_above(&d),
        mean_difference: if d.is_empty() {
            0.0
        } else {
            measures::mean(&d)?
        },
        histogram: histogram(&d),
        samples: kept.len(),
        skipped: others.len() - kept.len(),
    })
}

/// Criteria 1, 2, 3, 5 on `rows` of one dataset.
pub fn evaluate_dataset(
    similarity: &dyn Similarity,
    wordnet: &Arc<WordNet>,
    rows: &[LabeledPair],
    selection: RowSelection,
    seed: RunSeed,
) -> Result<DatasetReport> {
    let paraphrase = paraphrase(similarity, rows, seed)?;
    let pairs: Vec<(&str, &str)> = rows
        .iter()
        .filter(|r| r.label)
        .map(|r| (r.sentence1.as_str(), r.sentence2.as_str()))
        .collect();
    let sentences: Vec<&str> = pairs.iter().map(|p| p.0).collect();
    let mut synonyms = Vec::new();
    for words in 1..=3 {
        let perturbed = perturb_all(
            &SynonymReplacement {
                wordnet: wordnet.clone(),
                words,
            },
            &sentences,
            seed,
        )?;
        let batch: Vec<(&str, &str)> = sentences
            .iter()
            .zip(&perturbed)
            .filter_map(|(s, p)| p.as_deref().map(|p| (*s, p)))
            .collect();
        let m = if batch.is_empty() {
            0.0
        } else {
            mean(&similarity.score_pairs(&batch)?)?
        };
        synonyms.push(SynonymReport {
            words,
            mean: m,
            normalised: paraphrase.alpha * m,
            samples: batch.len(),
            skipped: sentences.len() - batch.len(),
        });
    }
    let antonyms = perturb_all(
        &AntonymReplacement {
            wordnet: wordnet.clone(),
        },
        &sentences,
        seed,
    )?;
    let antonym = differences(similarity, "antonym".into(), &pairs, &antonyms)?;
    let mut jumbling = Vec::new();
    for swaps in 1..=3 {
        let jumbled = perturb_all(&Jumbling { swaps }, &sentences, seed)?;
        jumbling.push(differences(
            similarity,
            format!("jumbling-{swaps}"),
            &pairs,
            &jumbled,
        )?);
    }
    Ok(DatasetReport {
        dataset: format!("{}/{}", selection.dataset, selection.split),
        rows: selection,
        paraphrase,
        synonyms,
        antonym,
        jumbling,
    })
}

/// Criterion 4 on AFIN rows: α from pairing each negated sentence with a shuffled affirmative.
pub fn negation(
    similarity: &dyn Similarity,
    rows: &[NegationPair],
    selection: RowSelection,
    seed: RunSeed,
) -> Result<NegationReport> {
    if rows.len() < 2 {
        return Err(AlignSimError::Insufficient(
            "criterion 4 needs at least two AFIN rows".into(),
        ));
    }
    let mut shuffled: Vec<&str> = rows.iter().map(|r| r.affirmative.as_str()).collect();
    shuffled.shuffle(&mut seed.rng("align-sim/afin-random-pairs"));
    let mut batch: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r.sentence.as_str(), r.affirmative.as_str()))
        .collect();
    batch.extend(
        rows.iter()
            .zip(&shuffled)
            .map(|(r, a)| (r.sentence.as_str(), *a)),
    );
    let scores = similarity.score_pairs(&batch)?;
    let (true_pairs, random) = scores.split_at(rows.len());
    let (m, random_mean) = (mean(true_pairs)?, mean(random)?);
    let alpha = 1.0 - random_mean;
    Ok(NegationReport {
        mean: m,
        random_mean,
        alpha,
        normalised: alpha * m,
        rows: selection,
    })
}

/// All five criteria: criteria 1, 2, 3, 5 on each of `datasets` (registry name, split), criterion
/// 4 on AFIN's test split; at most `max_rows` rows of each, sampled with `seed`.
pub fn evaluate(
    similarity: &dyn Similarity,
    root: &DataRoot,
    wordnet: Arc<WordNet>,
    datasets: &[(&str, &str)],
    max_rows: Option<usize>,
    seed: RunSeed,
) -> Result<AlignSimReport> {
    let mut reports = Vec::new();
    for &(name, split) in datasets {
        let sampled = root
            .rows::<LabeledPair>(name, split)?
            .sample(max_rows, seed)?;
        reports.push(evaluate_dataset(
            similarity,
            &wordnet,
            &sampled.rows,
            sampled.selection,
            seed,
        )?);
    }
    let afin = root
        .rows::<NegationPair>("afin", "test")?
        .sample(max_rows, seed)?;
    let negation = negation(similarity, &afin.rows, afin.selection, seed)?;
    Ok(AlignSimReport {
        similarity: similarity.name().to_owned(),
        seed: seed.0,
        datasets: reports,
        negation,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Word-overlap similarity: |shared words| / |words of the longer text| — easy to compute by
    /// hand.
    struct Overlap;

    impl Similarity for Overlap {
        fn name(&self) -> &str {
            "overlap"
        }
        fn score(&self, a: &str, b: &str) -> sage_core::Result<f32> {
            let (wa, wb): (Vec<&str>, Vec<&str>) = (
                a.split_whitespace().collect(),
                b.split_whitespace().collect(),
            );
            let shared = wa.iter().filter(|w| wb.contains(w)).count();
            Ok(shared as f32 / wa.len().max(wb.len()).max(1) as f32)
        }
    }

    fn pair(a: &str, b: &str, label: bool) -> LabeledPair {
        LabeledPair {
            sentence1: a.into(),
            sentence2: b.into(),
            label,
            ..LabeledPair::default()
        }
    }

    #[test]
    fn paraphrase_criterion_by_hand() {
        let rows = [
            pair("a b c d", "a b c e", true), // 3/4
            pair("x y", "x y", true),         // 1
            pair("p q", "r s", false),
            pair("p t", "p u", false),
        ];
        let r = paraphrase(&Overlap, &rows, RunSeed(1)).unwrap();
        assert!((r.paraphrase_mean - 0.875).abs() < 1e-6);
        // random pairs: negatives' second sentences permuted; whatever the permutation, the
        // firsts "p q" / "p t" share at most "p" with "r s" / "p u"
        let possible = [0.0, 0.25, 0.5];
        assert!(
            possible.iter().any(|&m| (r.random_mean - m).abs() < 1e-6),
            "{}",
            r.random_mean
        );
        assert!((r.alpha - (1.0 - r.random_mean)).abs() < 1e-12);
        assert!((r.difference - (r.paraphrase_mean - r.random_mean)).abs() < 1e-12);
        assert_eq!(
            paraphrase(&Overlap, &rows, RunSeed(1)).unwrap(),
            r,
            "seeded"
        );
    }

    #[test]
    fn shares_and_histogram_by_hand() {
        let d = [-0.2, 0.0, 0.005, 0.03, 0.07, 0.5, 1.0];
        let shares = shares_above(&d);
        let expect = [5.0 / 7.0, 4.0 / 7.0, 3.0 / 7.0, 2.0 / 7.0];
        for ((e, s), want) in shares.iter().zip(expect) {
            assert!((s - want).abs() < 1e-12, "ε={e}: {s} vs {want}");
        }
        let h = histogram(&d);
        assert_eq!((h.edges.len(), h.counts.len()), (41, 40));
        assert_eq!(h.counts.iter().sum::<usize>(), 7);
        assert_eq!(h.counts[16], 1, "-0.2 falls in [-0.2, -0.15)");
        assert_eq!(h.counts[20], 3, "0, 0.005, 0.03 fall in [0, 0.05)");
        assert_eq!(h.counts[39], 1, "1.0 is clamped into the last bin");
    }

    #[test]
    fn differences_leave_out_unperturbed_samples() {
        let pairs = [("a b c d", "a b c x"), ("e f", "e f")];
        let others = [Some("a b y z".to_owned()), None];
        let r = differences(&Overlap, "antonym".into(), &pairs, &others).unwrap();
        // d = 3/4 − 2/4
        assert_eq!((r.samples, r.skipped), (1, 1));
        assert!((r.mean_difference - 0.25).abs() < 1e-6);
    }

    #[test]
    fn negation_criterion_by_hand() {
        let rows = [
            NegationPair {
                sentence: "i did not go".into(),
                affirmative: "i stayed".into(),
            },
            NegationPair {
                sentence: "he is not here".into(),
                affirmative: "he is absent".into(),
            },
        ];
        let sel = RowSelection {
            dataset: "afin".into(),
            split: "test".into(),
            total_rows: 2,
            used_rows: 2,
            max_rows: None,
            seed: 1,
            empty_text_rows: 0,
            checksum: String::new(),
            split_checksum: String::new(),
            files: Vec::new(),
        };
        let r = negation(&Overlap, &rows, sel, RunSeed(1)).unwrap();
        // true pairs: 1/4 and 2/4
        assert!((r.mean - 0.375).abs() < 1e-6);
        assert!((r.normalised - r.alpha * r.mean).abs() < 1e-12);
    }
}

#[cfg(test)]
mod real_data {
    use super::*;

    /// All five criteria on 120 sampled rows per dataset for the classical metrics, GloVe
    /// bag-of-words and all-MiniLM-L6-v2 (CI sets SAGE_DATA_DIR and SAGE_MODELS_DIR).
    #[test]
    fn all_criteria_on_real_data() {
        let Some((root, runs)) = sage_testkit::real_runs(
            module_path!(),
            (),
            &[("glove.6B.50d", ()), ("all-MiniLM-L6-v2", ())],
        ) else {
            return;
        };
        let wordnet = Arc::new(WordNet::open(root.root().unwrap().join("wordnet/dict")).unwrap());
        for (similarity, ()) in &runs {
            let report = evaluate(
                similarity.as_ref(),
                &root,
                wordnet.clone(),
                &[("mrpc", "test"), ("paws-wiki", "test")],
                Some(120),
                RunSeed(1337),
            )
            .unwrap();
            for d in &report.datasets {
                assert_eq!(d.synonyms.len(), 3);
                assert_eq!(d.jumbling.len(), 3);
                assert!(
                    d.antonym.samples > 0 && d.synonyms[0].samples > 0,
                    "{}: {d:?}",
                    report.similarity
                );
                assert!((0.0..=1.0).contains(&d.paraphrase.paraphrase_mean));
            }
            assert!(report.negation.rows.used_rows == 120);
            let mrpc = &report.datasets[0];
            eprintln!(
                "{:<18} mrpc: para-random {:+.3} syn1 {:.3} anto d>0 {:.2} jumble1 d>0 {:.2} | paws: para-random {:+.3} | afin neg {:.3}",
                report.similarity,
                mrpc.paraphrase.difference,
                mrpc.synonyms[0].normalised,
                mrpc.antonym.shares[0].1,
                mrpc.jumbling[0].shares[0].1,
                report.datasets[1].paraphrase.difference,
                report.negation.normalised
            );
        }
    }
}
