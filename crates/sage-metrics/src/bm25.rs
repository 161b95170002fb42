//! BM25Plus of a candidate against a one-document corpus, as SAGE uses `rank_bm25`.

use sage_core::{Result, Similarity};

use crate::tokens::{cl100k, score_token_pairs, sorted, TokenPairMetric};

/// How raw BM25 scores of a batch are mapped to similarities.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Bm25Normalisation {
    /// `(s − min) / (max − min)` over the batch being scored, as SAGE does. A batch whose raw
    /// scores are all equal (including a batch of one pair) carries no ranking information and
    /// maps every pair to 0.5, never NaN.
    #[default]
    MinMax,
    /// The raw BM25Plus score (≥ 0, unbounded).
    Raw,
}

/// `rank_bm25.BM25Plus([reference_tokens], k1=1.5, b=0.75, delta=1).get_scores(candidate_tokens)[0]`
/// with cl100k token ids as tokens, min–max normalised over the batch by default.
///
/// With a one-document corpus every reference token has IDF ln((1 + 1) / 1) = ln 2 and the
/// document length equals the average, so each candidate token (with repetition) that occurs
/// `tf` times in the reference adds `ln 2 · (δ + tf·(k1 + 1) / (k1 + tf))`; candidate tokens
/// absent from the reference add nothing (rank_bm25 gives them IDF 0). An empty reference scores
/// 0 (rank_bm25 returns NaN there: 0/0 average length).
///
/// Asymmetric: the reference is the corpus, the candidate the query. Scores of one batch are
/// comparable with each other only; score everything that is compared in one call.
#[derive(Clone, Copy, Debug)]
pub struct Bm25Plus {
    /// Term-frequency saturation (1.5).
    pub k1: f64,
    /// Length normalisation (0.75).
    pub b: f64,
    /// The lower bound added for every matched term (1.0).
    pub delta: f64,
    /// Batch normalisation.
    pub normalisation: Bm25Normalisation,
}

impl Default for Bm25Plus {
    fn default() -> Self {
        Bm25Plus {
            k1: 1.5,
            b: 0.75,
            delta: 1.0,
            normalisation: Bm25Normalisation::MinMax,
        }
    }
}

impl Bm25Plus {
    /// rank_bm25's defaults, returning raw (un-normalised) scores.
    pub fn raw() -> Self {
        Bm25Plus {
            normalisation: Bm25Normalisation::Raw,
            ..Bm25Plus::default()
        }
    }

    /// Raw scores of every pair, in input order.
    pub fn raw_scores(&self, pairs: &[(&str, &str)]) -> Result<Vec<f64>> {
        score_token_pairs(self, pairs)
    }

    fn finish(&self, raw: Vec<f64>) -> Vec<f32> {
        match self.normalisation {
            Bm25Normalisation::Raw => raw.into_iter().map(|s| s as f32).collect(),
            Bm25Normalisation::MinMax => min_max(&raw),
        }
    }
}

/// Min–max normalisation with the constant-batch rule of [`Bm25Normalisation::MinMax`].
pub fn min_max(raw: &[f64]) -> Vec<f32> {
    let min = raw.iter().copied().fold(f64::INFINITY, f64::min);
    let max = raw.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let range = max - min;
    raw.iter()
        .map(|&s| {
            if range > 0.0 {
                ((s - min) / range) as f32
            } else {
                0.5
            }
        })
        .collect()
}

impl TokenPairMetric for Bm25Plus {
    type Prepared = Vec<u32>;

    fn prepare(&self, tokens: Vec<u32>) -> Vec<u32> {
        sorted(tokens)
    }

    fn compare(&self, reference: &Vec<u32>, candidate: &Vec<u32>) -> f64 {
        if reference.is_empty() {
            return 0.0;
        }
        // corpus of one document: its length is the average length
        let idf = std::f64::consts::LN_2;
        let length_norm = self.k1 * (1.0 - self.b + self.b);
        let (mut i, mut j, mut score) = (0, 0, 0.0);
        while i < reference.len() && j < candidate.len() {
            let (r, c) = (reference[i], candidate[j]);
            if r < c {
                i += 1;
            } else if r > c {
                j += 1;
            } else {
                let tf_end = i + reference[i..].iter().take_while(|&&t| t == r).count();
                let q_end = j + candidate[j..].iter().take_while(|&&t| t == c).count();
                let tf = (tf_end - i) as f64;
                let term = idf * (self.delta + tf * (self.k1 + 1.0) / (length_norm + tf));
                score += (q_end - j) as f64 * term;
                i = tf_end;
                j = q_end;
            }
        }
        score
    }
}

impl Similarity for Bm25Plus {
    fn name(&self) -> &str {
        match self.normalisation {
            Bm25Normalisation::MinMax => "bm25",
            Bm25Normalisation::Raw => "bm25-raw",
        }
    }

    fn score(&self, reference: &str, candidate: &str) -> Result<f32> {
        let raw = self.compare(
            &self.prepare(cl100k(reference)),
            &self.prepare(cl100k(candidate)),
        );
        Ok(self.finish(vec![raw])[0])
    }

    fn score_pairs(&self, pairs: &[(&str, &str)]) -> Result<Vec<f32>> {
        Ok(self.finish(self.raw_scores(pairs)?))
    }

    fn score_pairs_for_ranking(&self, pairs: &[(&str, &str)]) -> Result<Vec<f32>> {
        Ok(self
            .raw_scores(pairs)?
            .into_iter()
            .map(|s| s as f32)
            .collect())
    }

    fn is_symmetric(&self) -> bool {
        false
    }
}
