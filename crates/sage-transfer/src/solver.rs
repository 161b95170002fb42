//! L-BFGS for L2-regularised logistic regression, binary and multinomial, with the loss and its
//! gradient taken in one pass over the rows.
//!
//! The objective is linfa-logistic's and scikit-learn's (see [`crate::classifier`]). linfa
//! evaluates the loss and the gradient in separate passes over the rows, and its `Xᵀ r` walks the
//! row-major features column by column; a fit here reads each row once per evaluation, so an
//! inner k-fold (hundreds of fits a task) costs a fraction of linfa's time for the same weights
//! (a test holds the two to the same optimum). The rows are cut into fixed blocks, summed in
//! block order, so the result does not depend on the thread count.

use ndarray::ArrayView2;
use rayon::prelude::*;

/// A feature value as the rows hold it: single precision, as the model's vectors come (the
/// products |u − v| and u ∗ v of a pair too), half the memory a pass over the rows reads; every
/// sum is taken in double precision.
pub(crate) type Feature = f32;

/// Rows a block of the parallel loss: large enough to amortise a task, fixed so that sums are
/// taken in the same order on any thread count.
const BLOCK: usize = 2048;

/// Past steps L-BFGS keeps.
const MEMORY: usize = 10;

/// A logistic regression problem: rows, classes, regularisation.
pub(crate) struct Problem<'x, 'y> {
    pub(crate) x: ArrayView2<'x, Feature>,
    pub(crate) y: &'y [usize],
    /// 2: one weight vector (class 1's score); more: one per class.
    pub(crate) classes: usize,
    /// `1/C`.
    pub(crate) alpha: f64,
}

impl Problem<'_, '_> {
    /// Score columns: 1 for a binary problem, else one per class.
    pub(crate) fn outputs(&self) -> usize {
        if self.classes == 2 {
            1
        } else {
            self.classes
        }
    }

    /// Weights' length: per output, the features then the intercept.
    pub(crate) fn len(&self) -> usize {
        self.outputs() * (self.x.ncols() + 1)
    }

    /// The inverse of a bound on the Hessian's diagonal: `σ'' ≤ 1/4` for each item (the softmax's
    /// too), so `¼ Σᵢ xᵢⱼ² + α` for a feature's weight and `¼ n` for an intercept.
    fn inverse_diagonal(&self) -> Vec<f64> {
        let d = self.x.ncols();
        let mut squares = vec![0.0; d];
        for row in self.x.rows() {
            for (s, &v) in squares.iter_mut().zip(row) {
                let v = f64::from(v);
                *s += v * v;
            }
        }
        let mut out = Vec::with_capacity(self.len());
        for _ in 0..self.outputs() {
            out.extend(squares.iter().map(|s| 1.0 / (0.25 * s + self.alpha)));
            out.push(1.0 / (0.25 * self.x.nrows().max(1) as f64));
        }
        out
    }

    /// The loss and its gradient at `w` (per output: features, then intercept).
    fn loss_grad(&self, w: &[f64], grad: &mut [f64]) -> f64 {
        let d = self.x.ncols();
        let m = self.outputs();
        let n = self.x.nrows();
        let blocks: Vec<(f64, Vec<f64>)> = (0..n.div_ceil(BLOCK))
            .into_par_iter()
            .map(|b| {
                let mut g = vec![0.0; w.len()];
                let mut loss = 0.0;
                let mut z = vec![0.0; m];
                for i in b * BLOCK..((b + 1) * BLOCK).min(n) {
                    let row = self.x.row(i);
                    let row = row.as_slice().expect("rows are contiguous");
                    for (k, zk) in z.iter_mut().enumerate() {
                        let wk = &w[k * (d + 1)..(k + 1) * (d + 1)];
                        *zk = dot(row, &wk[..d]) + wk[d];
                    }
                    let label = self.y[i];
                    if m == 1 {
                        // y ∈ {−1, +1}: loss log(1 + e^(−y z)), d/dz = −y σ(−y z)
                        let s = if label == 1 { 1.0 } else { -1.0 };
                        let t = -s * z[0];
                        loss += softplus(t);
                        let r = -s * sigmoid(t);
                        axpy(r, row, &mut g[..d]);
                        g[d] += r;
                    } else {
                        let top = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                        let sum: f64 = z.iter().map(|v| (v - top).exp()).sum();
                        let lse = top + sum.ln();
                        loss += lse - z[label];
                        for (k, zk) in z.iter().enumerate() {
                            let r = (zk - lse).exp() - f64::from(u8::from(k == label));
                            let gk = &mut g[k * (d + 1)..(k + 1) * (d + 1)];
                            axpy(r, row, &mut gk[..d]);
                            gk[d] += r;
                        }
                    }
                }
                (loss, g)
            })
            .collect();
        grad.iter_mut().for_each(|v| *v = 0.0);
        let mut loss = 0.0;
        for (l, g) in blocks {
            loss += l;
            for (a, b) in grad.iter_mut().zip(&g) {
                *a += b;
            }
        }
        for k in 0..m {
            let wk = &w[k * (d + 1)..k * (d + 1) + d];
            let gk = &mut grad[k * (d + 1)..k * (d + 1) + d];
            loss += 0.5 * self.alpha * dot(wk, wk);
            axpy(self.alpha, wk, gk);
        }
        loss
    }
}

fn softplus(t: f64) -> f64 {
    if t > 0.0 {
        t + (-t).exp().ln_1p()
    } else {
        t.exp().ln_1p()
    }
}

fn sigmoid(t: f64) -> f64 {
    if t >= 0.0 {
        1.0 / (1.0 + (-t).exp())
    } else {
        let e = t.exp();
        e / (1.0 + e)
    }
}

/// Sixteen accumulators: four vectors of four, enough independent sums to keep the
/// multiply-add units busy; the sum's order is fixed.
fn dot<T: Copy + Into<f64>>(a: &[T], b: &[f64]) -> f64 {
    const LANES: usize = 16;
    let mut acc = [0.0f64; LANES];
    let chunks = a.len() / LANES;
    for (ca, cb) in a.chunks_exact(LANES).zip(b.chunks_exact(LANES)) {
        for l in 0..LANES {
            acc[l] += ca[l].into() * cb[l];
        }
    }
    let mut tail = 0.0;
    for i in LANES * chunks..a.len() {
        tail += a[i].into() * b[i];
    }
    let mut half = LANES;
    while half > 1 {
        half /= 2;
        for l in 0..half {
            acc[l] += acc[l + half];
        }
    }
    acc[0] + tail
}

fn axpy<T: Copy + Into<f64>>(a: f64, x: &[T], y: &mut [f64]) {
    for (yi, &xi) in y.iter_mut().zip(x) {
        *yi += a * xi.into();
    }
}

fn max_abs(v: &[f64]) -> f64 {
    v.iter().fold(0.0f64, |m, x| m.max(x.abs()))
}

/// How a fit ended.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Fitted {
    /// Iterations taken.
    pub(crate) iterations: usize,
    /// Whether the gradient met the tolerance (else: no step could lower the loss, which for
    /// this convex loss is its optimum to the precision of floating point, or the cap was hit).
    pub(crate) converged: bool,
}

/// Minimises the problem's loss from `w` (changed in place) until every gradient component is
/// at most `tolerance` per row, or `max_iterations` are taken.
pub(crate) fn minimise(
    problem: &Problem<'_, '_>,
    w: &mut [f64],
    tolerance: f64,
    max_iterations: usize,
) -> Fitted {
    let gtol = tolerance * problem.x.nrows().max(1) as f64;
    let inverse_diagonal = problem.inverse_diagonal();
    let mut g = vec![0.0; w.len()];
    let mut f = problem.loss_grad(w, &mut g);
    let mut history: Vec<(Vec<f64>, Vec<f64>, f64)> = Vec::with_capacity(MEMORY);
    let mut trial = vec![0.0; w.len()];
    let mut g_trial = vec![0.0; w.len()];
    for iteration in 0..max_iterations {
        if max_abs(&g) <= gtol {
            return Fitted {
                iterations: iteration,
                converged: true,
            };
        }
        // the two-loop recursion: direction = −H g
        let mut q = g.clone();
        let mut alphas = Vec::with_capacity(history.len());
        for (s, y, rho) in history.iter().rev() {
            let a = rho * dot(s, &q);
            axpy(-a, y, &mut q);
            alphas.push(a);
        }
        // the starting inverse Hessian: the diagonal bound's inverse, scaled by the latest
        // curvature (Jacobi-preconditioned L-BFGS: the optimum is the same, the steps fewer)
        let gamma = match history.last() {
            Some((s, y, _)) => {
                let ydy: f64 = y
                    .iter()
                    .zip(&inverse_diagonal)
                    .map(|(v, h)| v * v * h)
                    .sum();
                dot(s, y) / ydy
            }
            None => 1.0,
        };
        for (v, h) in q.iter_mut().zip(&inverse_diagonal) {
            *v *= gamma * h;
        }
        for ((s, y, rho), a) in history.iter().zip(alphas.iter().rev()) {
            let b = rho * dot(y, &q);
            axpy(a - b, s, &mut q);
        }
        let slope = -dot(&g, &q);
        if slope >= 0.0 {
            // not a descent direction (rounding): start the memory afresh
            history.clear();
            continue;
        }
        // backtracking until the loss falls enough (Armijo)
        let mut step = 1.0;
        let mut accepted = None;
        for _ in 0..60 {
            for ((t, wi), qi) in trial.iter_mut().zip(w.iter()).zip(&q) {
                *t = wi - step * qi;
            }
            let f_trial = problem.loss_grad(&trial, &mut g_trial);
            if f_trial <= f + 1e-4 * step * slope {
                accepted = Some(f_trial);
                break;
            }
            step *= 0.5;
        }
        let Some(f_new) = accepted else {
            if !history.is_empty() {
                // the memory's direction may be the trouble: once more along the
                // preconditioned gradient alone
                history.clear();
                continue;
            }
            // not even the gradient's direction lowers the loss: the optimum, to floating point
            return Fitted {
                iterations: iteration,
                converged: false,
            };
        };
        let s: Vec<f64> = trial.iter().zip(w.iter()).map(|(a, b)| a - b).collect();
        let y: Vec<f64> = g_trial.iter().zip(&g).map(|(a, b)| a - b).collect();
        let sy = dot(&s, &y);
        if sy > 1e-12 * dot(&y, &y).max(f64::MIN_POSITIVE) {
            if history.len() == MEMORY {
                history.remove(0);
            }
            history.push((s, y, 1.0 / sy));
        }
        w.copy_from_slice(&trial);
        g.copy_from_slice(&g_trial);
        f = f_new;
    }
    Fitted {
        iterations: max_iterations,
        converged: max_abs(&g) <= gtol,
    }
}
