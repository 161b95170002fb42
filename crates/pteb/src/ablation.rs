//! The prompt-sensitivity analysis (the paper's section 3.2.8 and Table 12): PTEB run once per
//! wording of the paraphrase prompt, on the same rows and seeds, so each wording is a paired
//! condition. The paper reports a mean score and edit distance per wording and calls the
//! differences limited; here the claim is a number per encoder: the spread between the wordings'
//! mean scores with its bootstrap interval, and each wording against the first with the
//! Hodges–Lehmann shift and the Wilcoxon signed-rank test, Holm-corrected (the tests of the
//! paper's Table 7).
//!
//! The paired unit is one (dataset or language subset, run seed): the same rows paraphrased with
//! the same seed under each wording. Datasets whose paraphrases failed the quality gate under
//! any wording are left out unless the options pool them, as everywhere else in PTEB.

use std::collections::BTreeMap;

use rand::Rng;
use sage_core::RunSeed;
use sage_measures::{
    hodges_lehmann_bootstrap, holm, mean, percentile, wilcoxon, HodgesLehmann, Wilcoxon,
    BOOTSTRAP_RESAMPLES,
};
use serde::{Deserialize, Serialize};

use crate::evaluate::PtebReport;
use crate::{PtebError, Result};

/// One wording's results.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PromptCondition {
    /// The wording's name (`default`, `variant-1`, a user's file stem).
    pub prompt: String,
    /// Its instruction text.
    pub instruction: String,
    /// Mean paraphrased score over the paired units (the paper's "PTEB STS score" when the
    /// datasets are its STS sets).
    pub mean_score: f64,
    /// Mean word-level edit distance between originals and paraphrases over the datasets.
    pub mean_edit_distance: f64,
    /// Texts that kept their original wording after every attempt failed, over all runs.
    pub fallbacks: u64,
    /// Each dataset's mean paraphrased score over runs, by its label (`sts17/test/en-en`).
    pub datasets: BTreeMap<String, f64>,
}

/// One wording against the first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PromptVersus {
    /// The wording.
    pub prompt: String,
    /// Paired units.
    pub n: usize,
    /// Its scores minus the first wording's: median of the Walsh averages, bootstrap interval.
    pub hodges_lehmann: HodgesLehmann,
    /// Signed-rank test of the paired scores; `None` when every pair is equal.
    pub wilcoxon: Option<Wilcoxon>,
    /// Holm-adjusted p-value over the wordings compared.
    pub p_holm: Option<f64>,
}

/// The analysis over all wordings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PromptAblation {
    /// One per wording, in the order asked for; the first is the reference.
    pub conditions: Vec<PromptCondition>,
    /// Paired units each wording was scored on.
    pub units: usize,
    /// Highest minus lowest mean score of the wordings.
    pub spread: f64,
    /// 95% percentile bootstrap interval of the spread, resampling the paired units.
    pub spread_low: f64,
    /// Upper end.
    pub spread_high: f64,
    /// Each later wording against the first.
    pub versus_first: Vec<PromptVersus>,
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
