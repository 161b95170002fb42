//! Every metric on any texts: scores are finite and in [0, 1]; the pairwise metrics score a batch
//! as they score each pair alone, and score (a, b) as (b, a); the bit-parallel Levenshtein ratio
//! (unsafe carry chains over many words) equals a plain dynamic-programming LCS.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sage_metrics::{levenshtein_ratio, Metric};

/// python-Levenshtein's ratio the textbook way: 1 − indel / (|a| + |b|) over code points.
fn ratio_by_table(a: &str, b: &str) -> f64 {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let mut row = vec![0usize; b.len() + 1];
    for &x in &a {
        let mut diagonal = 0;
        for (j, &y) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if x == y {
                diagonal + 1
            } else {
                above.max(row[j])
            };
            diagonal = above;
        }
    }
    let lcs = row[b.len()];
    let total = a.len() + b.len();
    1.0 - (total - 2 * lcs) as f64 / total as f64
}

fuzz_target!(|pairs: Vec<(String, String)>| {
    let pairs: Vec<(&str, &str)> = pairs
        .iter()
        .take(8)
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    for (a, b) in &pairs {
        if a.chars().count() * b.chars().count() <= 4_000_000 {
            let fast = levenshtein_ratio(a, b);
            let slow = ratio_by_table(a, b);
            assert!((fast - slow).abs() < 1e-12, "{a:?} {b:?}: {fast} vs {slow}");
        }
    }
    for metric in Metric::BUILT_IN {
        let similarity = metric.similarity();
        let batch = similarity.score_pairs(&pairs).unwrap();
        assert_eq!(batch.len(), pairs.len());
        for (score, (a, b)) in batch.iter().zip(&pairs) {
            assert!(
                score.is_finite() && (0.0..=1.0).contains(score),
                "{metric} {a:?} {b:?}: {score}"
            );
            if metric != Metric::BM25 {
                // BM25 is normalised over its batch, so only the pairwise metrics compare alone
                let alone = similarity.score(a, b).unwrap();
                assert_eq!(alone.to_bits(), score.to_bits(), "{metric}: batch != single");
                let swapped = similarity.score(b, a).unwrap();
                assert_eq!(alone.to_bits(), swapped.to_bits(), "{metric}: not symmetric");
            }
        }
    }
});
