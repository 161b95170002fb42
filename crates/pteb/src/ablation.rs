//! What the prompt-sensitivity analysis reports (the paper's section 3.2.8 and Table 12;
//! computed by [`crate::prompt_ablation`] from the runs' reports): PTEB run once per
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

use sage_measures::{HodgesLehmann, Wilcoxon};
use serde::{Deserialize, Serialize};

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
