//! Ranking measures in trec_eval's conventions (what pytrec_eval and hence BEIR/MTEB report).
//!
//! trec_eval orders a run by score descending and breaks ties by document id *descending*
//! (byte-wise), ignoring the ranks written in the run file. Every function here applies that
//! order itself, so callers pass documents in any order.

use std::cmp::Ordering;
use std::collections::HashMap;

use sage_core::{Result, SageError};

/// One retrieved document of a run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RankedDoc<'a> {
    /// Document id.
    pub id: &'a str,
    /// Retrieval score, higher is better.
    pub score: f64,
}

/// Sorts a run into trec_eval's order: score descending, then id descending.
pub fn trec_order(run: &mut [RankedDoc<'_>]) {
    run.sort_by(|a, b| match b.score.total_cmp(&a.score) {
        Ordering::Equal => b.id.as_bytes().cmp(a.id.as_bytes()),
        other => other,
    });
}

fn ordered<'a>(run: &[RankedDoc<'a>]) -> Vec<RankedDoc<'a>> {
    let mut sorted = run.to_vec();
    trec_order(&mut sorted);
    sorted
}

fn relevance(qrels: &HashMap<String, i32>, id: &str) -> i32 {
    qrels.get(id).copied().unwrap_or(0)
}

/// trec_eval's `ndcg_cut.k` with graded relevance: gain = relevance level (levels ≤ 0 gain
/// nothing), discount log2(rank + 1), ideal ranking from the judged documents. 0 when no judged
/// document is relevant.
pub fn ndcg_at_k(run: &[RankedDoc<'_>], qrels: &HashMap<String, i32>, k: usize) -> Result<f64> {
    check_k(k)?;
    let discount = |rank0: usize| 1.0 / ((rank0 + 2) as f64).log2();
    let dcg: f64 = ordered(run)
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, d)| f64::from(relevance(qrels, d.id).max(0)) * discount(i))
        .sum();
    let mut ideal: Vec<i32> = qrels.values().copied().filter(|&r| r > 0).collect();
    ideal.sort_unstable_by(|a, b| b.cmp(a));
    let idcg: f64 = ideal
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, &r)| f64::from(r) * discount(i))
        .sum();
    Ok(if idcg > 0.0 { dcg / idcg } else { 0.0 })
}

/// trec_eval's `map` for one query: mean over the relevant documents (level ≥ 1) of the precision
/// at the rank where each is retrieved (0 for those never retrieved). 0 when none is relevant.
pub fn average_precision(run: &[RankedDoc<'_>], qrels: &HashMap<String, i32>) -> f64 {
    let relevant_total = qrels.values().filter(|&&r| r >= 1).count();
    if relevant_total == 0 {
        return 0.0;
    }
    let mut found = 0usize;
    let mut sum = 0.0;
    for (i, d) in ordered(run).iter().enumerate() {
        if relevance(qrels, d.id) >= 1 {
            found += 1;
            sum += found as f64 / (i + 1) as f64;
        }
    }
    sum / relevant_total as f64
}

/// trec_eval's `recip_rank`: 1 / rank of the first relevant document (level ≥ 1), 0 when none is
/// retrieved; with `cutoff`, only the first `cutoff` documents count (MRR@k).
pub fn reciprocal_rank(
    run: &[RankedDoc<'_>],
    qrels: &HashMap<String, i32>,
    cutoff: Option<usize>,
) -> Result<f64> {
    if let Some(k) = cutoff {
        check_k(k)?;
    }
    Ok(ordered(run)
        .iter()
        .take(cutoff.unwrap_or(usize::MAX))
        .position(|d| relevance(qrels, d.id) >= 1)
        .map_or(0.0, |i| 1.0 / (i + 1) as f64))
}

/// Mean of 1/rank over 1-based ranks (EvalRank's MRR).
pub fn mean_reciprocal_rank(ranks: &[usize]) -> Result<f64> {
    check_ranks(ranks)?;
    Ok(ranks.iter().map(|&r| 1.0 / r as f64).sum::<f64>() / ranks.len() as f64)
}

/// Share of 1-based ranks that are ≤ k (EvalRank's Hits@k).
pub fn hits_at_k(ranks: &[usize], k: usize) -> Result<f64> {
    check_k(k)?;
    check_ranks(ranks)?;
    Ok(ranks.iter().filter(|&&r| r <= k).count() as f64 / ranks.len() as f64)
}

fn check_k(k: usize) -> Result<()> {
    if k == 0 {
        Err(SageError::InvalidArgument(
            "a rank cutoff k must be at least 1".into(),
        ))
    } else {
        Ok(())
    }
}

fn check_ranks(ranks: &[usize]) -> Result<()> {
    if ranks.is_empty() {
        return Err(SageError::TooFewValues {
            what: "rank measure",
            needed: 1,
            got: 0,
        });
    }
    if ranks.contains(&0) {
        return Err(SageError::InvalidArgument(
            "ranks are 1-based; got rank 0".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assert_close;

    fn qrels(pairs: &[(&str, i32)]) -> HashMap<String, i32> {
        pairs.iter().map(|(d, r)| (d.to_string(), *r)).collect()
    }

    fn run<'a>(pairs: &[(&'a str, f64)]) -> Vec<RankedDoc<'a>> {
        pairs
            .iter()
            .map(|&(id, score)| RankedDoc { id, score })
            .collect()
    }

    #[test]
    fn ties_break_by_descending_id() {
        let mut r = run(&[("d1", 1.0), ("d3", 1.0), ("d2", 2.0), ("d10", 1.0)]);
        trec_order(&mut r);
        let ids: Vec<&str> = r.iter().map(|d| d.id).collect();
        assert_eq!(ids, ["d2", "d3", "d10", "d1"]);
    }

    #[test]
    fn matches_pytrec_eval() {
        // Golden values: tests/python-reference/golden.py (pytrec_eval-terrier, trec_eval 9.0.8),
        // query q1 of its run: graded relevance, tied scores, an unjudged and a missed document.
        let q = qrels(&[("d1", 2), ("d2", 1), ("d4", 0), ("d5", 1), ("d9", 3)]);
        let r = run(&[
            ("d1", 0.9),
            ("d2", 0.5),
            ("d3", 0.5),
            ("d4", 0.7),
            ("d5", 0.2),
            ("d6", 0.5),
        ]);
        assert_close(ndcg_at_k(&r, &q, 10).unwrap(), GOLD_NDCG10, 1e-12);
        assert_close(ndcg_at_k(&r, &q, 3).unwrap(), GOLD_NDCG3, 1e-12);
        assert_close(average_precision(&r, &q), GOLD_AP, 1e-12);
        assert_close(reciprocal_rank(&r, &q, None).unwrap(), 1.0, 1e-12);
    }

    const GOLD_NDCG10: f64 = 0.528_269_801_093_484_5;
    const GOLD_NDCG3: f64 = 0.420_003_991_507_928_16;
    const GOLD_AP: f64 = 0.475;

    #[test]
    fn no_relevant_document_scores_zero() {
        let q = qrels(&[("d1", 0)]);
        let r = run(&[("d1", 1.0)]);
        assert_eq!(ndcg_at_k(&r, &q, 10).unwrap(), 0.0);
        assert_eq!(average_precision(&r, &q), 0.0);
        assert_eq!(reciprocal_rank(&r, &q, None).unwrap(), 0.0);
    }

    #[test]
    fn reciprocal_rank_respects_cutoff() {
        let q = qrels(&[("b", 1)]);
        let r = run(&[("a", 3.0), ("c", 2.0), ("b", 1.0)]);
        assert_close(reciprocal_rank(&r, &q, None).unwrap(), 1.0 / 3.0, 1e-15);
        assert_eq!(reciprocal_rank(&r, &q, Some(2)).unwrap(), 0.0);
    }

    #[test]
    fn rank_lists() {
        assert_close(
            mean_reciprocal_rank(&[1, 2, 4]).unwrap(),
            (1.0 + 0.5 + 0.25) / 3.0,
            1e-15,
        );
        assert_close(hits_at_k(&[1, 2, 4, 11], 3).unwrap(), 0.5, 1e-15);
        assert!(mean_reciprocal_rank(&[]).is_err());
        assert!(hits_at_k(&[0], 1).is_err());
        assert!(hits_at_k(&[1], 0).is_err());
    }
}
