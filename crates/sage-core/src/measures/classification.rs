use serde::{Deserialize, Serialize};

use crate::error::{ensure_at_least, ensure_same_len};
use crate::Result;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measures::assert_close;

    #[test]
    fn matches_sklearn() {
        // Golden values: tests/reference/golden.py (scikit-learn 1.9.1).
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
}
