use serde::{Deserialize, Serialize};

use crate::checks::{ensure_at_least, ensure_same_len};
use sage_core::Result;

/// Accuracy, precision, recall and F1 of binary predictions.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct BinaryScores {
    /// Share of predictions equal to the truth.
    pub accuracy: f64,
    /// TP / (TP + FP); 0 when nothing was predicted positive.
    pub precision: f64,
    /// TP / (TP + FN); 0 when nothing is truly positive.
    pub recall: f64,
    /// Harmonic mean of precision and recall; 0 when both are 0.
    pub f1: f64,
    /// True positives.
    pub true_positives: usize,
    /// False positives.
    pub false_positives: usize,
    /// False negatives.
    pub false_negatives: usize,
    /// True negatives.
    pub true_negatives: usize,
}

/// Binary classification scores with `true` as the positive class, as scikit-learn's
/// `accuracy_score`, `precision_score`, `recall_score`, `f1_score` (default `zero_division`,
/// which yields 0 for an undefined ratio).
pub fn binary_classification(truth: &[bool], predicted: &[bool]) -> Result<BinaryScores> {
    ensure_same_len("binary classification", truth.len(), predicted.len())?;
    ensure_at_least("binary classification", 1, truth.len())?;
    let (mut tp, mut fp, mut fneg, mut tn) = (0usize, 0usize, 0usize, 0usize);
    for (&t, &p) in truth.iter().zip(predicted) {
        match (t, p) {
            (true, true) => tp += 1,
            (false, true) => fp += 1,
            (true, false) => fneg += 1,
            (false, false) => tn += 1,
        }
    }
    let ratio = |num: usize, den: usize| {
        if den == 0 {
            0.0
        } else {
            num as f64 / den as f64
        }
    };
    let precision = ratio(tp, tp + fp);
    let recall = ratio(tp, tp + fneg);
    // sklearn computes F1 from counts, 2TP / (2TP + FP + FN), which equals 2PR/(P+R) when defined.
    let f1 = ratio(2 * tp, 2 * tp + fp + fneg);
    Ok(BinaryScores {
        accuracy: ratio(tp + tn, truth.len()),
        precision,
        recall,
        f1,
        true_positives: tp,
        false_positives: fp,
        false_negatives: fneg,
        true_negatives: tn,
    })
}

/// scikit-learn's `average_precision_score` for binary labels (`true` positive): the sum over
/// distinct score thresholds, highest first, of (recall gain) × precision at that threshold.
/// Tied scores form one threshold, so their order does not matter. 0 when no label is positive
/// (scikit-learn warns and returns 0 there too, in recent versions).
pub fn average_precision_score(truth: &[bool], scores: &[f64]) -> Result<f64> {
    ensure_same_len("average precision", truth.len(), scores.len())?;
    ensure_at_least("average precision", 1, truth.len())?;
    let positives = truth.iter().filter(|&&t| t).count();
    if positives == 0 {
        return Ok(0.0);
    }
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    let (mut tp, mut seen, mut ap, mut last_recall) = (0usize, 0usize, 0.0, 0.0);
    let mut i = 0;
    while i < order.len() {
        let threshold = scores[order[i]];
        while i < order.len() && scores[order[i]] == threshold {
            tp += usize::from(truth[order[i]]);
            seen += 1;
            i += 1;
        }
        let recall = tp as f64 / positives as f64;
        ap += (recall - last_recall) * (tp as f64 / seen as f64);
        last_recall = recall;
    }
    Ok(ap)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assert_close;

    #[test]
    fn matches_sklearn() {
        // Golden values: tests/python-reference/golden.py (scikit-learn 1.9.1).
        let t = [
            true, false, true, true, false, false, true, false, true, true,
        ];
        let p = [
            true, true, false, true, false, false, true, true, true, false,
        ];
        let s = binary_classification(&t, &p).unwrap();
        assert_close(s.accuracy, 0.6, 1e-12);
        assert_close(s.precision, 0.666_666_666_666_666_6, 1e-12);
        assert_close(s.recall, 0.666_666_666_666_666_6, 1e-12);
        assert_close(s.f1, 0.666_666_666_666_666_6, 1e-12);
    }

    #[test]
    fn undefined_ratios_are_zero_like_sklearn() {
        let s = binary_classification(&[false, false], &[false, false]).unwrap();
        assert_eq!(
            (s.accuracy, s.precision, s.recall, s.f1),
            (1.0, 0.0, 0.0, 0.0)
        );
        assert!(binary_classification(&[], &[]).is_err());
    }

    #[test]
    fn average_precision_matches_sklearn() {
        // sklearn 1.9.1 average_precision_score on the same inputs
        let t = |v: &[u8]| v.iter().map(|&x| x == 1).collect::<Vec<_>>();
        let ap = |truth: &[u8], scores: &[f64]| average_precision_score(&t(truth), scores).unwrap();
        crate::assert_close(
            ap(&[1, 0, 1, 1, 0, 0, 1], &[0.9, 0.9, 0.3, 0.5, 0.5, 0.1, 0.8]),
            0.6083333333333333,
            1e-12,
        );
        crate::assert_close(ap(&[0, 1, 0, 1], &[0.2; 4]), 0.5, 1e-12);
        crate::assert_close(
            ap(&[1, 0, 0, 1, 0], &[0.1, 0.4, 0.35, 0.8, 0.05]),
            0.75,
            1e-12,
        );
        assert_eq!(ap(&[0, 0], &[0.1, 0.2]), 0.0);
    }
}
