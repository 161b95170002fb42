//! Post-processing of embeddings from the paper: whitening and removing the top principal
//! components (ABTT, "all-but-the-top"), both fitted on the embedded set itself.

use ndarray::{Array1, Array2, Axis};
use serde::{Deserialize, Serialize};

/// A post-processing of the embedded vectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum PostProcess {
    /// Vectors as the model gives them.
    #[default]
    None,
    /// `x ↦ (x − μ) · U · diag(1/√s)`, with `U diag(s) Uᵀ` the covariance of the embedded set
    /// (BERT-whitening).
    Whitening,
    /// `x ↦ (x − μ) − Σ_{i ≤ k} (uᵢᵀ(x − μ)) uᵢ` for the top-k principal directions uᵢ (Mu et al.,
    /// 2018); k = 2 by default.
    Abtt {
        /// Components removed.
        k: usize,
    },
}

impl PostProcess {
    /// Fits on `vectors` (rows) and returns them transformed (unchanged, without a copy, for
    /// `None`).
    pub fn apply(self, vectors: Array2<f32>) -> Array2<f32> {
        if self == PostProcess::None {
            return vectors;
        }
        let x: Array2<f64> = vectors.mapv(f64::from);
        let mean = x.mean_axis(Axis(0)).expect("non-empty");
        let centred = &x - &mean;
        let n = centred.nrows().max(1) as f64;
        let covariance = centred.t().dot(&centred) / n;
        let (values, vectors_u) = symmetric_eigen(&covariance);
        let out = match self {
            PostProcess::None => unreachable!("handled above"),
            PostProcess::Whitening => {
                // eigenvalues at numerical zero would blow up: floor them like the reference's
                // SVD does implicitly through the smallest representable positive value
                let scale: Array1<f64> = values.mapv(|s| 1.0 / s.max(1e-12).sqrt());
                centred.dot(&vectors_u) * &scale
            }
            PostProcess::Abtt { k } => {
                let top = vectors_u
                    .slice(ndarray::s![.., ..k.min(vectors_u.ncols())])
                    .to_owned();
                let projection = centred.dot(&top).dot(&top.t());
                &centred - &projection
            }
        };
        out.mapv(|v| v as f32)
    }

    /// Name for reports.
    pub fn name(self) -> String {
        match self {
            PostProcess::None => "none".into(),
            PostProcess::Whitening => "whitening".into(),
            PostProcess::Abtt { k } => format!("abtt-{k}"),
        }
    }
}

/// Eigen-decomposition of a symmetric matrix by cyclic Jacobi rotations: eigenvalues in
/// descending order and the matching unit eigenvectors as columns.
pub fn symmetric_eigen(a: &Array2<f64>) -> (Array1<f64>, Array2<f64>) {
    let n = a.nrows();
    let mut m = a.clone();
    let mut v = Array2::<f64>::eye(n);
    let total: f64 = m.iter().map(|x| x * x).sum::<f64>().max(f64::MIN_POSITIVE);
    for _sweep in 0..100 {
        let off: f64 = (0..n)
            .flat_map(|p| (0..n).filter(move |&q| q != p).map(move |q| (p, q)))
            .map(|(p, q)| m[[p, q]] * m[[p, q]])
            .sum();
        if off <= 1e-24 * total {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = m[[p, q]];
                if apq.abs() <= f64::MIN_POSITIVE {
                    continue;
                }
                let theta = (m[[q, q]] - m[[p, p]]) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                // m ← Jᵀ m J with J the rotation in the (p, q) plane that zeroes m[p][q]
                for k in 0..n {
                    let (mkp, mkq) = (m[[k, p]], m[[k, q]]);
                    m[[k, p]] = c * mkp - s * mkq;
                    m[[k, q]] = s * mkp + c * mkq;
                }
                for k in 0..n {
                    let (mpk, mqk) = (m[[p, k]], m[[q, k]]);
                    m[[p, k]] = c * mpk - s * mqk;
                    m[[q, k]] = s * mpk + c * mqk;
                }
                for k in 0..n {
                    let (vkp, vkq) = (v[[k, p]], v[[k, q]]);
                    v[[k, p]] = c * vkp - s * vkq;
                    v[[k, q]] = s * vkp + c * vkq;
                }
            }
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| m[[j, j]].total_cmp(&m[[i, i]]));
    let values = Array1::from_iter(order.iter().map(|&i| m[[i, i]]));
    let vectors = v.select(Axis(1), &order);
    (values, vectors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jacobi_diagonalises_a_symmetric_matrix() {
        let b = Array2::from_shape_fn((6, 6), |(i, j)| {
            ((i * 7 + j * 3) % 5) as f64 - 2.0 + if i == j { 0.5 } else { 0.0 }
        });
        let a = &b + &b.t();
        let (values, vectors) = symmetric_eigen(&a);
        let rebuilt = vectors.dot(&Array2::from_diag(&values)).dot(&vectors.t());
        assert!(
            (&rebuilt - &a).iter().all(|d| d.abs() < 1e-9),
            "{rebuilt:?}"
        );
        let identity = vectors.t().dot(&vectors);
        assert!((&identity - &Array2::<f64>::eye(6))
            .iter()
            .all(|d| d.abs() < 1e-9));
        assert!(values.windows(2).into_iter().all(|w| w[0] >= w[1]));
    }

    #[test]
    fn whitening_gives_identity_covariance_and_abtt_removes_the_top_direction() {
        let x = Array2::from_shape_fn((200, 4), |(i, j)| {
            let t = i as f32 * 0.37;
            [
                t.sin() * 5.0,
                t.cos() + 0.1 * j as f32,
                (t * 1.7).sin() * 0.5,
                (t * 0.3).cos() * 2.0,
            ][j] + 3.0
        });
        let w = PostProcess::Whitening.apply(x.clone()).mapv(f64::from);
        let mean = w.mean_axis(Axis(0)).unwrap();
        let c = (&w - &mean).t().dot(&(&w - &mean)) / 200.0;
        assert!(
            (&c - &Array2::<f64>::eye(4)).iter().all(|d| d.abs() < 1e-3),
            "{c:?}"
        );
        let a = PostProcess::Abtt { k: 1 }.apply(x).mapv(f64::from);
        let ca = a.t().dot(&a) / 200.0;
        let (values, _) = symmetric_eigen(&ca);
        assert!(values[3].abs() < 1e-3, "one direction is gone: {values:?}");
    }
}
