//! The overall ranking's numbers: the cells it ranks and the comparisons that say which of its
//! differences are real. Their own module because both the answer, which computes them, and the
//! quality–cost view, which weighs the best against the others, read them.

use sage_measures::PairedDifference;
use serde::Serialize;

/// Family-wise error rate of the ranking's comparisons.
pub const ALPHA: f64 = 0.05;

/// A score with its 95% interval when there is one.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Cell {
    /// The score.
    pub score: f64,
    /// The bootstrap 95% interval (low, high).
    pub ci95: Option<(f64, f64)>,
}

/// One similarity in the ranking.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Ranked {
    /// 1 for the highest overall score.
    pub rank: usize,
    /// The similarity.
    pub similarity: String,
    /// Its overall score (mean of the five categories) with its interval.
    pub overall: Cell,
}

/// A paired-bootstrap comparison of two ranked similarities' overall scores.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    /// The higher-ranked similarity.
    pub higher: String,
    /// The lower-ranked similarity.
    pub lower: String,
    /// higher − lower: the difference, its interval and its bootstrap p-value.
    pub difference: PairedDifference,
    /// The p-value Holm-corrected over every comparison of the ranking.
    pub p_holm: f64,
    /// Whether the difference is significant at [`ALPHA`] after the correction.
    pub significant: bool,
}

/// The overall ranking and which of its differences are real.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Ranking {
    /// Similarities with all five categories, best first.
    pub ranked: Vec<Ranked>,
    /// Every pair of ranked similarities that could be paired, higher first.
    pub comparisons: Vec<Comparison>,
    /// Family-wise error rate of `significant`.
    pub alpha: f64,
    /// Why a similarity or a pair is missing from the ranking or the comparisons.
    pub not_compared: Vec<String>,
    /// Units resampled per category (documents, queries, pairs and summaries, subsets), from
    /// the top-ranked similarity's results: few units make every interval optimistic.
    pub units: Vec<(String, usize)>,
}
