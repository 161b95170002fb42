//! Complete linkage on precomputed distances, and the cut at k clusters.

use kodama::Method;

/// The merges of complete-linkage clustering of `n` observations whose pairwise distances are
/// given condensed (row-major upper triangle, i < j). Cluster labels follow scipy: observations
/// are 0..n, the cluster made by merge s is n + s. Consumes the distances (kodama works in place).
pub fn complete_linkage(condensed: &mut [f64], n: usize) -> Vec<(usize, usize)> {
    kodama::linkage(condensed, n, Method::Complete)
        .steps()
        .iter()
        .map(|s| (s.cluster1, s.cluster2))
        .collect()
}

/// Flat labels for `k` clusters: the first n − k merges applied (the last k − 1 undone), as
/// scikit-learn's `_hc_cut`. Labels are numbered by first appearance.
pub fn cut(merges: &[(usize, usize)], n: usize, k: usize) -> Vec<usize> {
    let k = k.clamp(1, n.max(1));
    let mut parent: Vec<usize> = (0..n + merges.len()).collect();
    fn find(parent: &mut [usize], mut x: usize) -> usize {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    }
    for (s, &(a, b)) in merges.iter().take(n.saturating_sub(k)).enumerate() {
        let (ra, rb) = (find(&mut parent, a), find(&mut parent, b));
        parent[ra] = n + s;
        parent[rb] = n + s;
    }
    let mut label_of_root = std::collections::HashMap::new();
    (0..n)
        .map(|i| {
            let root = find(&mut parent, i);
            let next = label_of_root.len();
            *label_of_root.entry(root).or_insert(next)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ten points in the plane (rounded draws of numpy's default_rng(0).uniform(0, 10)),
    /// Euclidean distances; labels from scikit-learn 1.9.1
    /// `AgglomerativeClustering(n_clusters=k, metric="precomputed", linkage="complete")`.
    const POINTS: [(f64, f64); 10] = [
        (6.37, 2.7),
        (0.41, 0.17),
        (8.13, 9.13),
        (6.07, 7.29),
        (5.44, 9.35),
        (8.16, 0.03),
        (8.57, 0.34),
        (7.3, 1.76),
        (8.63, 5.41),
        (3.0, 4.23),
    ];
    const SKLEARN: [(usize, [usize; 10]); 3] = [
        (2, [0, 0, 1, 1, 1, 0, 0, 0, 1, 0]),
        (3, [2, 1, 0, 0, 0, 2, 2, 2, 0, 1]),
        (4, [2, 0, 1, 1, 1, 2, 2, 2, 3, 0]),
    ];

    fn condensed() -> Vec<f64> {
        let mut d = Vec::new();
        for (i, &a) in POINTS.iter().enumerate() {
            for &b in &POINTS[i + 1..] {
                d.push(((a.0 - b.0).powi(2) + (a.1 - b.1).powi(2)).sqrt());
            }
        }
        d
    }

    /// Same partition up to renaming.
    fn same_partition(a: &[usize], b: &[usize]) -> bool {
        (0..a.len()).all(|i| (0..a.len()).all(|j| (a[i] == a[j]) == (b[i] == b[j])))
    }

    #[test]
    fn equals_sklearn_complete_linkage_on_precomputed_distances() {
        let merges = complete_linkage(&mut condensed(), POINTS.len());
        assert_eq!(merges.len(), POINTS.len() - 1);
        for (k, expected) in SKLEARN {
            let labels = cut(&merges, POINTS.len(), k);
            assert!(same_partition(&labels, &expected), "k={k}: {labels:?}");
            assert_eq!(labels.iter().max().unwrap() + 1, k);
        }
    }

    #[test]
    fn complete_not_single_linkage() {
        // points 0, 1, 2.1, 3.3, 5.3 on a line. Single linkage at k = 2 cuts the widest gap
        // (3.3 | 5.3). Complete linkage merges {0, 1} at 1, {2.1, 3.3} at 1.2, then
        // {2.1, 3.3} with 5.3 at 3.2 (< 3.3, the diameter {0, 1} ∪ {2.1, 3.3} would have)
        let xs: [f64; 5] = [0.0, 1.0, 2.1, 3.3, 5.3];
        let mut d = Vec::new();
        for i in 0..xs.len() {
            for j in i + 1..xs.len() {
                d.push((xs[i] - xs[j]).abs());
            }
        }
        let labels = cut(&complete_linkage(&mut d, 5), 5, 2);
        assert!(same_partition(&labels, &[0, 0, 1, 1, 1]), "{labels:?}");
    }

    #[test]
    fn cut_extremes() {
        let merges = complete_linkage(&mut condensed(), 10);
        assert_eq!(cut(&merges, 10, 10), (0..10).collect::<Vec<_>>());
        assert_eq!(cut(&merges, 10, 1), vec![0; 10]);
    }
}
