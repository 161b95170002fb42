use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

use serde::{Deserialize, Serialize};

use crate::checks::ensure_same_len;
use sage_core::Result;

/// Homogeneity, completeness and their harmonic mean, the V-measure (β = 1).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct VMeasure {
    /// 1 − H(C|K)/H(C): each cluster holds one class.
    pub homogeneity: f64,
    /// 1 − H(K|C)/H(K): each class sits in one cluster.
    pub completeness: f64,
    /// Harmonic mean of homogeneity and completeness.
    pub v_measure: f64,
}

/// Why a clustering of texts with the classes `labels` says nothing, or `None` when it can. One
/// class makes every clustering homogeneous and, into one cluster, complete; a class for every
/// text does the same for a clustering into as many clusters. V-measure is then 1 whatever the
/// similarity, a score that would pass silently as perfect. Every task that clusters refuses such
/// labels with this reason.
pub fn unclusterable<T: Eq + Hash>(labels: &[T]) -> Option<String> {
    let classes = labels
        .iter()
        .collect::<std::collections::HashSet<_>>()
        .len();
    if labels.len() < 2 {
        Some(format!(
            "{} text{}: clustering needs at least two",
            labels.len(),
            if labels.len() == 1 { "" } else { "s" }
        ))
    } else if classes == 1 {
        Some(format!(
            "all {} texts have one label: one class leaves nothing to cluster (V-measure is 1 \
             for any clustering)",
            labels.len()
        ))
    } else if classes == labels.len() {
        Some(format!(
            "each of the {} texts has a label of its own: no two texts share a class to be \
             clustered together (V-measure is 1 for any clustering into that many clusters)",
            labels.len()
        ))
    } else {
        None
    }
}

/// As scikit-learn's `homogeneity_completeness_v_measure(labels_true, labels_pred)`: natural-log
/// entropies; a zero entropy makes its ratio 1; empty input gives (1, 1, 1).
pub fn v_measure<T: Eq + Hash, P: Eq + Hash>(
    labels_true: &[T],
    labels_pred: &[P],
) -> Result<VMeasure> {
    ensure_same_len("v-measure", labels_true.len(), labels_pred.len())?;
    if labels_true.is_empty() {
        return Ok(VMeasure {
            homogeneity: 1.0,
            completeness: 1.0,
            v_measure: 1.0,
        });
    }
    let classes = dense_ids(labels_true);
    let clusters = dense_ids(labels_pred);
    let n_classes = classes.iter().max().map_or(0, |m| m + 1);
    let n_clusters = clusters.iter().max().map_or(0, |m| m + 1);
    let mut class_count = vec![0u64; n_classes];
    let mut cluster_count = vec![0u64; n_clusters];
    // ordered: the mutual information is a float sum, and a hash map's per-process order made
    // its last bits differ run to run
    let mut joint: BTreeMap<(usize, usize), u64> = BTreeMap::new();
    for (&c, &k) in classes.iter().zip(&clusters) {
        class_count[c] += 1;
        cluster_count[k] += 1;
        *joint.entry((c, k)).or_insert(0) += 1;
    }
    let n = labels_true.len() as f64;
    let entropy = |counts: &[u64]| -> f64 {
        counts
            .iter()
            .filter(|&&c| c > 0)
            .map(|&c| -(c as f64 / n) * ((c as f64).ln() - n.ln()))
            .sum()
    };
    let h_class = entropy(&class_count);
    let h_cluster = entropy(&cluster_count);
    let mutual_information: f64 = joint
        .iter()
        .map(|(&(c, k), &nij)| {
            let nij = nij as f64;
            let outer = class_count[c] as f64 * cluster_count[k] as f64;
            (nij / n) * (nij.ln() + n.ln() - outer.ln())
        })
        .sum::<f64>()
        .max(0.0);
    let homogeneity = if h_class == 0.0 {
        1.0
    } else {
        mutual_information / h_class
    };
    let completeness = if h_cluster == 0.0 {
        1.0
    } else {
        mutual_information / h_cluster
    };
    let v_measure = if homogeneity + completeness == 0.0 {
        0.0
    } else {
        2.0 * homogeneity * completeness / (homogeneity + completeness)
    };
    Ok(VMeasure {
        homogeneity,
        completeness,
        v_measure,
    })
}

fn dense_ids<L: Eq + Hash>(labels: &[L]) -> Vec<usize> {
    let mut ids: HashMap<&L, usize> = HashMap::new();
    labels
        .iter()
        .map(|l| {
            let next = ids.len();
            *ids.entry(l).or_insert(next)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assert_close;

    /// Same labels, same bits: every call, every process.
    #[test]
    fn is_bit_identical_across_calls() {
        let truth: Vec<usize> = (0..3000).map(|i| (i * 7919) % 23).collect();
        let predicted: Vec<usize> = (0..3000).map(|i| (i * 104_729 + i / 5) % 31).collect();
        let first = v_measure(&truth, &predicted).unwrap();
        for _ in 0..20 {
            let again = v_measure(&truth, &predicted).unwrap();
            assert_eq!(again.v_measure.to_bits(), first.v_measure.to_bits());
            assert_eq!(again.homogeneity.to_bits(), first.homogeneity.to_bits());
        }
    }

    #[test]
    fn matches_sklearn() {
        // Golden values: tests/python-reference/golden.py (scikit-learn 1.9.1).
        let t = ["a", "a", "a", "b", "b", "b", "c", "c", "c", "c"];
        let p = [0, 0, 1, 1, 1, 1, 2, 2, 0, 3];
        let v = v_measure(&t, &p).unwrap();
        assert_close(v.homogeneity, GOLD_H, 1e-12);
        assert_close(v.completeness, GOLD_C, 1e-12);
        assert_close(v.v_measure, GOLD_V, 1e-12);
    }

    const GOLD_H: f64 = 0.618_065_646_292_154_3;
    const GOLD_C: f64 = 0.525_850_251_868_233_1;
    const GOLD_V: f64 = 0.568_241_032_922_968;

    #[test]
    fn degenerate_partitions() {
        let one = v_measure(&[1, 1, 1], &[0, 0, 0]).unwrap();
        assert_eq!(
            (one.homogeneity, one.completeness, one.v_measure),
            (1.0, 1.0, 1.0)
        );
        // every point its own cluster: perfectly homogeneous, completeness below 1
        let split = v_measure(&[1, 1, 2, 2], &[0, 1, 2, 3]).unwrap();
        assert_eq!(split.homogeneity, 1.0);
        assert!(split.completeness < 1.0);
        let empty: [u8; 0] = [];
        assert_eq!(v_measure(&empty, &empty).unwrap().v_measure, 1.0);
        // which is why a task refuses such labels before it scores them
        assert!(unclusterable(&[1, 1, 1]).unwrap().contains("one label"));
        assert!(unclusterable(&[1, 2, 3])
            .unwrap()
            .contains("a label of its own"));
        assert!(unclusterable(&[1]).unwrap().contains("at least two"));
        assert_eq!(unclusterable(&[1, 1, 2]), None);
    }
}
