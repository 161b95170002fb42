//! ROUGE-1/ROUGE-2 F-measure over cl100k tokens, as SAGE computes it with `rouge_score` 0.1.2.

use crate::tokens::{
    sorted_with_bigrams, token_similarity, two_multiset_intersections, TokenPairMetric,
};

/// `(ROUGE-1 F + ROUGE-2 F) / 2` as `rouge_score.rouge_scorer.RougeScorer(["rouge1", "rouge2"],
/// tokenizer=<cl100k encoder>)` computes them: n-gram counts over cl100k token ids (no stemming,
/// no lower-casing: a custom tokenizer bypasses both), precision = overlap / max(|pred|, 1),
/// recall = overlap / max(|target|, 1), F = 2PR/(P+R) or 0. Symmetric; two empty texts score 0,
/// as in rouge_score.
#[derive(Clone, Copy, Debug, Default)]
pub struct Rouge;

pub(crate) struct RougeProfile {
    unigrams: Vec<u32>,
    bigrams: Vec<u64>,
}

fn fmeasure(overlap: usize, reference_len: usize, candidate_len: usize) -> f64 {
    let precision = overlap as f64 / candidate_len.max(1) as f64;
    let recall = overlap as f64 / reference_len.max(1) as f64;
    if precision + recall > 0.0 {
        2.0 * precision * recall / (precision + recall)
    } else {
        0.0
    }
}

impl TokenPairMetric for Rouge {
    type Prepared = RougeProfile;

    fn prepare(&self, tokens: Vec<u32>) -> RougeProfile {
        let (unigrams, bigrams) = sorted_with_bigrams(tokens);
        RougeProfile { unigrams, bigrams }
    }

    fn compare(&self, r: &RougeProfile, c: &RougeProfile) -> f64 {
        let (unigrams, bigrams) =
            two_multiset_intersections((&r.unigrams, &c.unigrams), (&r.bigrams, &c.bigrams));
        let rouge1 = fmeasure(unigrams, r.unigrams.len(), c.unigrams.len());
        let rouge2 = fmeasure(bigrams, r.bigrams.len(), c.bigrams.len());
        (rouge1 + rouge2) / 2.0
    }
}

token_similarity!(Rouge, "rouge");
