//! Whether a dataset's paraphrases can be trusted, measured apart from the encoder under test.
//!
//! PTEB's claim rests on paraphrases that keep the meaning. The paper earns it by choosing its
//! paraphraser with an LLM judge grounded in STS gold ratings; a run with a small local
//! paraphraser has no such warrant, and a drop it causes reads like the encoder's failure. So
//! every run of every dataset carries a [`RunQuality`] and every dataset a [`DatasetQuality`]
//! with a [`Verdict`] against a [`QualityGate`]:
//! - always, judge-free: a fixed *reference encoder* (all-MiniLM-L6-v2 by default, never the
//!   encoder under test) compares each distinct original with its paraphrase — mean cosine and
//!   the share of paraphrases below a per-text threshold — plus the paper's normalised word edit
//!   distance and the share of texts that fell back to their original wording;
//! - when a judge is given: its mean 0–5 rating of (original, paraphrase) on run 0, counted only
//!   when the judge itself agrees with STS gold ratings (the paper's check of a judge).
//!
//! A dataset whose paraphrases fail the gate keeps its numbers, marked "paraphraser not
//! qualified", and is left out of the pooled statistics and the encoder comparisons unless
//! [`crate::Options::pool_unqualified`] asks otherwise.

use sage_core::{Embedder, EmbeddingSimilarity, Similarity};
use sage_measures::{mean, normalized_word_edit_distance};
use serde::{Deserialize, Serialize};

use crate::Result;

/// The LLM judge's figures on one dataset.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JudgeResult {
    /// The judge model.
    pub judge: String,
    /// Pairs rated.
    pub pairs: usize,
    /// Answers without a 0–5 number.
    pub unparsable: usize,
    /// Mean rating of (original, paraphrase) over the run-0 sample.
    pub paraphrase_similarity: Option<f64>,
    /// STS datasets: Spearman of the judge's ratings of the original pairs with the gold scores
    /// (the paper's check of a judge).
    pub sts_spearman: Option<f64>,
}

/// The reference encoder's default: small, on every machine the default run has, and not an
/// encoder anyone would pick on PTEB's say-so.
pub const DEFAULT_REFERENCE_ENCODER: &str = "all-MiniLM-L6-v2";

/// What to use instead when a paraphraser fails the gate; the report prints it once.
pub const NOT_QUALIFIED_ADVICE: &str = "use a stronger paraphraser: a larger local instruct GGUF \
     (--paraphraser <folder or .gguf>; the paraphraser option of bench.toml's [suites.pteb]) or a served model through \
     the OpenAI-compatible backend (--paraphraser http://host:port/v1 --llm-model NAME); \
     `sage pteb qualify` scores candidates side by side";

sage_core::suite_options! {
    /// Thresholds a dataset's paraphrases must meet.
    ///
    /// The defaults, and why (cosines are all-MiniLM-L6-v2's, measured on 2,200 pairs sampled from
    /// the shipped STS test sets — 300 from each of STS-B, SICK-R, STS12–16 and 100 of BIOSSES —
    /// with gold scores put on a 0–5 scale):
    /// - `low_cosine` 0.66: the 10th percentile of the cosine of human-rated "mostly equivalent"
    ///   pairs (gold ≥ 4; their mean is 0.827, median 0.858). A paraphrase below it is less alike
    ///   than 90% of the pairs people call near-equivalent.
    /// - `max_share_below` 0.2: a paraphraser as faithful as gold-≥4 pairs puts ~10% of its texts
    ///   below `low_cosine`; one at the level of "roughly equivalent" pairs (gold 3–4, mean cosine
    ///   0.725) puts ~25% there. 0.2 lies between.
    /// - `min_reference_cosine` 0.78: between the mean cosine of gold 3–4 pairs (0.725) and of
    ///   gold ≥ 4 pairs (0.827). The paper's chosen paraphraser is rated 4.26/5 by its judge.
    /// - `min_edit_distance` 0.25: paraphrases must change the wording, or the paraphrased
    ///   condition measures nothing; the least-changing of the paper's three paraphrasers
    ///   (gpt-oss-20b) has 0.55, the chosen one 0.81. 0.25 is about half the lowest.
    /// - `max_fallback_share` 0.1: a fallback is the original text, so more than a tenth of them
    ///   dilutes the paraphrased condition.
    /// - `min_judge_rating` 4.0: "mostly equivalent" on the STS scale; the paper's candidates were
    ///   rated 4.26–4.44.
    /// - `min_judge_sts_spearman` 0.8: the paper's size ablation finds a 12B judge (0.83) as good as
    ///   the 27B one (0.83) and calls 4B (0.73) and 1B (0.33) substantial drops.
    #[derive(Clone, Debug, PartialEq)]
    pub struct QualityGate {
        /// Least mean reference-encoder cosine of (original, paraphrase).
        pub min_reference_cosine: f64 = 0.78, sage_core::OptionSpec::between(-1.0, 1.0);
        /// A paraphrase whose reference cosine to its original is below this counts as
        /// unfaithful.
        pub low_cosine: f64 = 0.66, sage_core::OptionSpec::between(-1.0, 1.0);
        /// Largest share of paraphrases below `low_cosine`.
        pub max_share_below: f64 = 0.2, sage_core::OptionSpec::between(0.0, 1.0);
        /// Least mean normalised word edit distance.
        pub min_edit_distance: f64 = 0.25, sage_core::OptionSpec::between(0.0, 1.0);
        /// Largest share of texts that kept their original wording after every attempt failed.
        pub max_fallback_share: f64 = 0.1, sage_core::OptionSpec::between(0.0, 1.0);
        /// Least mean judge rating (0-5), when a qualified judge rated.
        pub min_judge_rating: f64 = 4.0, sage_core::OptionSpec::between(0.0, 5.0);
        /// Least Spearman of the judge's ratings with STS gold scores for its ratings to count.
        pub min_judge_sts_spearman: f64 = 0.8, sage_core::OptionSpec::between(-1.0, 1.0);
        /// Languages the reference encoder covers (eng, or eng-Latn; the default encoder,
        /// all-MiniLM-L6-v2, is English): its cosines count for a subset wholly in them, and
        /// elsewhere are reported, not counted, the verdict saying so. Empty: every language
        /// (a multilingual reference encoder).
        pub reference_languages: Vec<String> = vec!["eng".to_owned()], sage_core::OptionSpec::any();
        /// Languages the LLM judge rates (as `reference_languages`): its rating counts for a
        /// subset wholly in them, and elsewhere is reported, not counted, the verdict saying so.
        /// Empty: every language (a multilingual judge).
        pub judge_languages: Vec<String> = vec!["eng".to_owned()], sage_core::OptionSpec::any();
    }
}

/// A subset's languages once each (`ara-Arab`, `eng-Latn and ara-Arab`), for a note.
fn distinct(languages: &[String]) -> String {
    let mut once: Vec<&str> = Vec::new();
    for l in languages {
        if !once.contains(&l.as_str()) {
            once.push(l);
        }
    }
    once.join(" and ")
}

impl QualityGate {
    /// Every threshold in its declared range (cosines and the Spearman in [-1, 1], shares and
    /// edit distance in [0, 1], the rating in [0, 5]).
    pub fn check(&self) -> Result<()> {
        sage_core::CheckOptions::check(self).map_err(|e| {
            crate::PtebError::Task(match e {
                sage_core::SageError::InvalidArgument(why) => format!("quality gate: {why}"),
                other => format!("quality gate: {other}"),
            })
        })
    }

    /// The verdict on a dataset's measured quality; `judge_spearman` is the judge's agreement
    /// with STS gold over the whole evaluation (`None`: not measured, so its rating cannot
    /// count); `languages` the dataset's (a language subset's; empty: English), which decide
    /// whether the reference encoder's cosines count ([`QualityGate::reference_languages`]).
    pub fn verdict(
        &self,
        quality: &QualityFigures,
        judge: Option<&JudgeResult>,
        judge_spearman: Option<f64>,
        languages: &[String],
    ) -> Verdict {
        let mut reasons = Vec::new();
        let mut notes = Vec::new();
        if sage_data::languages::all_among(languages, &self.reference_languages) {
            if quality.reference_cosine < self.min_reference_cosine {
                reasons.push(format!(
                    "reference cosine {:.3} < {}",
                    quality.reference_cosine, self.min_reference_cosine
                ));
            }
            if quality.share_below > self.max_share_below {
                reasons.push(format!(
                    "{:.1}% of paraphrases below cosine {} (most {:.1}%)",
                    100.0 * quality.share_below,
                    self.low_cosine,
                    100.0 * self.max_share_below
                ));
            }
        } else {
            notes.push(format!(
                "reference cosine {:.3} not counted: the reference encoder covers {} (the gate's \
                 reference_languages), not {}; name a multilingual quality_encoder and its \
                 languages to check these paraphrases",
                quality.reference_cosine,
                self.reference_languages.join(", "),
                distinct(languages)
            ));
        }
        if quality.edit_distance < self.min_edit_distance {
            reasons.push(format!(
                "edit distance {:.3} < {} (paraphrases too close to the originals)",
                quality.edit_distance, self.min_edit_distance
            ));
        }
        if quality.fallback_share > self.max_fallback_share {
            reasons.push(format!(
                "{:.1}% fallbacks to the original text (most {:.1}%)",
                100.0 * quality.fallback_share,
                100.0 * self.max_fallback_share
            ));
        }
        let judged_here = sage_data::languages::all_among(languages, &self.judge_languages);
        if let Some(rating) = judge
            .and_then(|j| j.paraphrase_similarity)
            .filter(|_| !judged_here)
        {
            notes.push(format!(
                "judge rating {rating:.2} not counted: the judge rates {} (the gate's \
                 judge_languages), not {}",
                self.judge_languages.join(", "),
                distinct(languages)
            ));
        }
        if let Some(rating) = judge
            .and_then(|j| j.paraphrase_similarity)
            .filter(|_| judged_here)
        {
            match judge_spearman {
                Some(rho) if rho >= self.min_judge_sts_spearman => {
                    if rating < self.min_judge_rating {
                        reasons.push(format!(
                            "judge rating {rating:.2} < {}",
                            self.min_judge_rating
                        ));
                    }
                }
                Some(rho) => notes.push(format!(
                    "judge rating {rating:.2} not counted: the judge's STS Spearman {rho:.3} < {}",
                    self.min_judge_sts_spearman
                )),
                None => notes.push(format!(
                    "judge rating {rating:.2} not counted: the judge was not checked against \
                     STS gold (no STS dataset in the run)"
                )),
            }
        }
        Verdict {
            qualified: reasons.is_empty(),
            reasons,
            notes,
        }
    }
}

/// The judge-free figures of paraphrase quality, for one run or averaged over a dataset's runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QualityFigures {
    /// Mean reference-encoder cosine of each distinct original with its paraphrase.
    pub reference_cosine: f64,
    /// Share of those below the gate's `low_cosine`.
    pub share_below: f64,
    /// Mean normalised word edit distance (the paper's ED).
    pub edit_distance: f64,
    /// Share of distinct texts that fell back to their original wording.
    pub fallback_share: f64,
}

/// One run's paraphrase quality.
pub type RunQuality = QualityFigures;

/// Pass or fail, and why.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Every threshold met.
    pub qualified: bool,
    /// The thresholds missed (empty when qualified).
    pub reasons: Vec<String>,
    /// What the gate saw but did not count (an unchecked judge).
    pub notes: Vec<String>,
}

/// A dataset's paraphrase quality over its runs, and the verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DatasetQuality {
    /// The reference encoder's model id.
    pub reference_encoder: String,
    /// Means over the runs.
    #[serde(flatten)]
    pub figures: QualityFigures,
    /// The judge's figures (run 0), when a judge was given.
    pub judge: Option<JudgeResult>,
    /// Against the gate in the options.
    pub verdict: Verdict,
}

/// Measures one run: `originals` are the distinct texts, `paraphrases` theirs in the same
/// order, `fallbacks` how many kept their original wording.
pub fn measure_run(
    reference: &dyn Embedder,
    gate: &QualityGate,
    originals: &[&str],
    paraphrases: &[&str],
    fallbacks: u64,
) -> Result<RunQuality> {
    debug_assert_eq!(originals.len(), paraphrases.len());
    let pairs: Vec<(&str, &str)> = originals
        .iter()
        .copied()
        .zip(paraphrases.iter().copied())
        .collect();
    let cosines: Vec<f64> = EmbeddingSimilarity::cosine(reference)
        .score_pairs(&pairs)?
        .into_iter()
        .map(f64::from)
        .collect();
    let distances: Vec<f64> = pairs
        .iter()
        .map(|(o, p)| normalized_word_edit_distance(o, p))
        .collect();
    let below = cosines.iter().filter(|&&c| c < gate.low_cosine).count();
    let texts = originals.len().max(1) as f64;
    Ok(QualityFigures {
        reference_cosine: mean(&cosines)?,
        share_below: below as f64 / texts,
        edit_distance: mean(&distances)?,
        fallback_share: fallbacks as f64 / texts,
    })
}

/// The mean of each figure over runs.
pub fn mean_figures(runs: &[&QualityFigures]) -> Result<QualityFigures> {
    let of = |f: fn(&QualityFigures) -> f64| mean(&runs.iter().map(|r| f(r)).collect::<Vec<_>>());
    Ok(QualityFigures {
        reference_cosine: of(|r| r.reference_cosine)?,
        share_below: of(|r| r.share_below)?,
        edit_distance: of(|r| r.edit_distance)?,
        fallback_share: of(|r| r.fallback_share)?,
    })
}

/// The judge's agreement with STS gold over an evaluation: the mean of its per-dataset
/// Spearmans (`None` for a dataset without one), `None` when no dataset has one.
pub fn judge_sts_spearman(per_dataset: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    let rhos: Vec<f64> = per_dataset.into_iter().flatten().collect();
    mean(&rhos).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(cosine: f64, below: f64, distance: f64, fallbacks: f64) -> QualityFigures {
        QualityFigures {
            reference_cosine: cosine,
            share_below: below,
            edit_distance: distance,
            fallback_share: fallbacks,
        }
    }

    fn judged(rating: f64) -> JudgeResult {
        JudgeResult {
            judge: "judge".into(),
            pairs: 10,
            unparsable: 0,
            paraphrase_similarity: Some(rating),
            sts_spearman: None,
        }
    }

    /// The reference encoder's cosines count where it covers the languages, and are reported,
    /// not counted, where it does not; the other thresholds hold everywhere.
    #[test]
    fn reference_cosines_count_only_in_the_encoders_languages() {
        let gate = QualityGate::default();
        let arabic = ["ara-Arab".to_owned(), "ara-Arab".to_owned()];
        let english = ["eng-Latn".to_owned(), "eng-Latn".to_owned()];
        let low_cosine = figures(0.40, 0.9, 0.6, 0.0);
        let verdict = gate.verdict(&low_cosine, None, None, &arabic);
        assert!(verdict.qualified, "{verdict:?}");
        assert!(
            verdict.notes[0].starts_with(
                "reference cosine 0.400 not counted: the reference encoder covers eng"
            ),
            "{verdict:?}"
        );
        assert!(!gate.verdict(&low_cosine, None, None, &english).qualified);
        let unchanged = figures(0.40, 0.9, 0.1, 0.0);
        assert!(!gate.verdict(&unchanged, None, None, &arabic).qualified);
        // a multilingual reference encoder: every language counts
        let everywhere = QualityGate {
            reference_languages: Vec::new(),
            ..QualityGate::default()
        };
        assert!(
            !everywhere
                .verdict(&low_cosine, None, None, &arabic)
                .qualified
        );
        // the judge likewise: its low rating fails an English subset, not an Arabic one
        let good = figures(0.85, 0.1, 0.6, 0.0);
        let low = judged(2.0);
        assert!(
            !gate
                .verdict(&good, Some(&low), Some(0.9), &english)
                .qualified
        );
        let verdict = gate.verdict(&good, Some(&low), Some(0.9), &arabic);
        assert!(verdict.qualified, "{verdict:?}");
        assert!(
            verdict.notes.iter().any(|n| n
                == "judge rating 2.00 not counted: the judge rates eng (the gate's \
                    judge_languages), not ara-Arab"),
            "{verdict:?}"
        );
    }

    #[test]
    fn every_threshold_can_fail_a_dataset_and_says_why() {
        let gate = QualityGate::default();
        let good = figures(0.85, 0.1, 0.6, 0.0);
        assert!(gate.verdict(&good, None, None, &[]).qualified);
        for (bad, says) in [
            (
                figures(0.70, 0.1, 0.6, 0.0),
                "reference cosine 0.700 < 0.78",
            ),
            (
                figures(0.85, 0.3, 0.6, 0.0),
                "30.0% of paraphrases below cosine 0.66",
            ),
            (figures(0.85, 0.1, 0.1, 0.0), "edit distance 0.100 < 0.25"),
            (figures(0.85, 0.1, 0.6, 0.2), "20.0% fallbacks"),
        ] {
            let verdict = gate.verdict(&bad, None, None, &[]);
            assert!(!verdict.qualified);
            assert_eq!(verdict.reasons.len(), 1, "{verdict:?}");
            assert!(verdict.reasons[0].contains(says), "{verdict:?}");
        }
    }

    #[test]
    fn a_judge_counts_only_when_it_agrees_with_sts_gold() {
        let gate = QualityGate::default();
        let good = figures(0.85, 0.1, 0.6, 0.0);
        let low = judged(3.1);
        let verdict = gate.verdict(&good, Some(&low), Some(0.85), &[]);
        assert!(!verdict.qualified);
        assert!(verdict.reasons[0].contains("judge rating 3.10 < 4"));
        // a judge that fails the STS check is reported, not counted
        let verdict = gate.verdict(&good, Some(&low), Some(0.3), &[]);
        assert!(verdict.qualified && verdict.notes[0].contains("STS Spearman 0.300"));
        let verdict = gate.verdict(&good, Some(&low), None, &[]);
        assert!(verdict.qualified && verdict.notes[0].contains("not checked"));
        assert!(
            gate.verdict(&good, Some(&judged(4.3)), Some(0.9), &[])
                .qualified
        );
    }

    #[test]
    fn thresholds_out_of_range_are_refused() {
        assert!(QualityGate::default().check().is_ok());
        let gate = QualityGate {
            max_share_below: 1.5,
            ..QualityGate::default()
        };
        assert!(gate
            .check()
            .unwrap_err()
            .to_string()
            .contains("max_share_below = 1.5"));
    }

    #[test]
    fn a_run_is_measured_with_the_reference_encoder() {
        let reference = crate::testing::Words::new();
        let gate = QualityGate::default();
        let originals = ["the cat sat on the mat", "a dog ran in the park"];
        let copied = measure_run(&reference, &gate, &originals, &originals, 2).unwrap();
        assert!((copied.reference_cosine - 1.0).abs() < 1e-6);
        assert_eq!(
            (
                copied.share_below,
                copied.edit_distance,
                copied.fallback_share
            ),
            (0.0, 0.0, 1.0)
        );
        let unrelated = ["quantum flux capacitor", "stock markets fell sharply"];
        let off = measure_run(&reference, &gate, &originals, &unrelated, 0).unwrap();
        assert!(off.reference_cosine < 0.5, "{off:?}");
        assert_eq!((off.share_below, off.edit_distance), (1.0, 1.0));
    }
}
