//! A float32 dense product for CPUs whose widest vectors are AVX2's (or where `SAGE_CPU`
//! caps them there): the weight packed once, at load, into panels of 16 output columns, and
//! each tile of 6 activation rows times one panel a chain of 12 fused multiply-adds per input
//! value.
//!
//! Why not gemm there: on a Zen 3 EPYC (AVX2, no AVX-512) gemm's AVX2 kernel ran MiniLM's
//! products at 80–83% of one core's FMA peak, where its tile is the same 16 × 6 of
//! accumulators; it packs both operands on every call, and its blocking leaves the packed
//! activations to come from L2 and beyond. A weight is multiplied thousands of times and
//! never changes, so here it is packed once; the activations are read where they lie, six
//! rows at a time, in slices of [`K_SLICE`] values that keep the panel's slice (16 KiB) in L1
//! while every row tile of a chunk passes over it. One panel at a time over all its slices
//! keeps a chunk's outputs for that panel (3 KiB) in L1 between slices; slices outermost
//! left a 1,536-wide chunk's outputs (295 KiB) to fall out of L2, and that shape ran at 0.7×.
//! One core: 45–47 GMAC/s (90–92% of its FMA peak) against gemm's 40–44 (`panel_speed`).
//!
//! Each output is one FMA chain over its row in order, whatever the rows around it, so a
//! text gets the same bits in any batch.

use candle_core::Tensor;
use rayon::prelude::*;

/// Output columns per panel: two 256-bit vectors.
const PANEL: usize = 16;
/// Activation rows per tile: 12 accumulators, 2 panel vectors and a broadcast of the 16
/// registers.
const TILE: usize = 6;
/// Input values per pass over a chunk's row tiles: a panel's slice is 16 KiB.
const K_SLICE: usize = 256;
/// Activation rows per parallel task, a multiple of [`TILE`].
const ROW_CHUNK: usize = 48;

/// A float32 weight `[n, k]` in panels of 16 rows (output columns), each panel
/// `[k][PANEL]`, the last padded with zeros.
pub struct PanelMatrix {
    n: usize,
    k: usize,
    panels: Vec<f32>,
}

impl PanelMatrix {
    /// `weight` `[n, k]`; `None` unless the panels are this CPU's float32 product
    /// ([`applies`]), before anything is copied.
    pub(crate) fn for_this_cpu(weight: &Tensor) -> candle_core::Result<Option<PanelMatrix>> {
        PanelMatrix::of_tensor_if(weight, applies())
    }

    /// `weight` packed wherever the panels run at all (AVX2 and FMA), even where gemm's
    /// 512-bit kernel is faster: their sums are in one order on every such CPU.
    pub(crate) fn in_fixed_order(weight: &Tensor) -> candle_core::Result<Option<PanelMatrix>> {
        PanelMatrix::of_tensor_if(weight, runs_here())
    }

    fn of_tensor_if(weight: &Tensor, runs: bool) -> candle_core::Result<Option<PanelMatrix>> {
        if !runs {
            return Ok(None);
        }
        let (n, k) = weight.dims2()?;
        let values = weight
            .to_dtype(candle_core::DType::F32)?
            .flatten_all()?
            .to_vec1::<f32>()?;
        Ok(Some(PanelMatrix::packed(&values, n, k)))
    }

    /// `weight` packed, whichever the CPU's float32 product (the caller checks AVX2 and FMA
    /// before multiplying).
    fn packed(weight: &[f32], n: usize, k: usize) -> PanelMatrix {
        assert_eq!(weight.len(), n * k, "a weight of [{n}, {k}]");
        let count = n.div_ceil(PANEL);
        let mut panels = vec![0f32; count * k * PANEL];
        for (j, row) in weight.chunks_exact(k.max(1)).enumerate().take(n) {
            let panel = &mut panels[(j / PANEL) * k * PANEL..][..k * PANEL];
            for (i, &v) in row.iter().enumerate() {
                panel[i * PANEL + j % PANEL] = v;
            }
        }
        PanelMatrix { n, k, panels }
    }

    /// `x · selfᵀ` for `x` `[rows, k]`: `[rows, n]`.
    pub(crate) fn product(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let (rows, k) = x.dims2()?;
        if k != self.k {
            candle_core::bail!("dense product: input width {k}, weight width {}", self.k);
        }
        let x = x.to_dtype(candle_core::DType::F32)?.contiguous()?;
        let (storage, layout) = x.storage_and_layout();
        let out = self.product_of(crate::fused::cpu_f32(&storage, layout)?, rows);
        drop(storage);
        Tensor::from_vec(out, (rows, self.n), x.device())
    }

    /// `x · selfᵀ` for `x` `[rows, k]` row-major: `[rows, n]`.
    fn product_of(&self, x: &[f32], rows: usize) -> Vec<f32> {
        let (n, k) = (self.n, self.k);
        assert_eq!(x.len(), rows * k, "activations of [{rows}, {k}]");
        let mut out: Vec<f32> = Vec::with_capacity(rows * n);
        let (chunks, panels) = (rows.div_ceil(ROW_CHUNK), n.div_ceil(PANEL));
        // a few rows (one short text) are one chunk: the panels are split too, so that every
        // core works, as gemm's calls do
        let groups = (2 * rayon::current_num_threads())
            .div_ceil(chunks.max(1))
            .clamp(1, panels.max(1));
        let per_group = panels.div_ceil(groups);
        let start = SharedOut(out.as_mut_ptr());
        (0..chunks * groups).into_par_iter().for_each(|task| {
            let (chunk, group) = (task / groups, task % groups);
            let first = chunk * ROW_CHUNK;
            let count = (rows - first).min(ROW_CHUNK);
            let panels = group * per_group..((group + 1) * per_group).min(panels);
            // SAFETY: `new` (or a test) checked AVX2 and FMA; the chunk's rows are inside `x`,
            // and its outputs inside `out`'s capacity; no two tasks share a row and a panel
            unsafe {
                self.chunk(
                    &x[first * k..(first + count) * k],
                    count,
                    panels,
                    start.at(first * n),
                )
            };
        });
        // SAFETY: the tasks cover every row and panel, and `chunk` writes each of their values
        unsafe { out.set_len(rows * n) };
        out
    }

    /// `rows` rows of `x` times `panels`, into those panels' columns of `rows` rows of `out`
    /// (row stride `n`), every one of which it writes.
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA; `out` must have room for `rows · n` values.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn chunk(&self, x: &[f32], rows: usize, panels: std::ops::Range<usize>, out: *mut f32) {
        let (n, k) = (self.n, self.k);
        for p in panels {
            let panel = &self.panels[p * k * PANEL..(p + 1) * k * PANEL];
            let cols = (n - p * PANEL).min(PANEL);
            for start in (0..k.max(1)).step_by(K_SLICE) {
                let slice = start..(start + K_SLICE).min(k);
                let mut r = 0;
                while r < rows {
                    let tile = (rows - r).min(TILE);
                    // SAFETY: rows r..r + tile are inside x and out; the panel's slice is
                    // inside `panel`
                    unsafe {
                        let x = x.as_ptr().add(r * k);
                        let out = out.add(r * n + p * PANEL);
                        macro_rules! tiles {
                            ($($t:literal)+) => {
                                match tile {
                                    $($t => tile_avx2::<$t>(x, k, panel, slice.clone(), out, n, cols),)+
                                    _ => unreachable!("tiles are at most {TILE} rows"),
                                }
                            };
                        }
                        tiles!(1 2 3 4 5 6);
                    }
                    r += tile;
                }
            }
        }
    }
}

/// The output's start, shared by the tasks, which write disjoint rows and panels of it.
struct SharedOut(*mut f32);

// SAFETY: the tasks write disjoint parts of the buffer, which outlives them
unsafe impl Send for SharedOut {}
// SAFETY: as for Send
unsafe impl Sync for SharedOut {}

impl SharedOut {
    /// The value `offset` values in (a method, so that closures capture the whole struct).
    fn at(&self, offset: usize) -> *mut f32 {
        self.0.wrapping_add(offset)
    }
}

/// Whether the panels are this CPU's float32 product: it has AVX2 and FMA, and AVX-512 is
/// absent or capped by `SAGE_CPU` (gemm's 512-bit kernel is the faster where it runs).
fn applies() -> bool {
    runs_here() && !crate::wide_vectors()
}

/// Whether this CPU can run the panels (AVX2 and FMA), whatever `SAGE_CPU` allows beyond.
fn runs_here() -> bool {
    std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")
}

/// The panels in a result's words.
pub(crate) const KERNEL_NAME: &str = "f32-avx2-panels";

/// `R` rows from `x` (row stride `k`) times one panel over `slice`, into `out` (row stride
/// `n`, its first `cols` ≤ 16 columns): the sums go on from `out` past the first slice.
///
/// # Safety
/// The CPU must have AVX2 and FMA; the rows, the panel's slice and the output rows must be
/// inside their buffers.
#[target_feature(enable = "avx2,fma")]
unsafe fn tile_avx2<const R: usize>(
    x: *const f32,
    k: usize,
    panel: &[f32],
    slice: std::ops::Range<usize>,
    out: *mut f32,
    n: usize,
    cols: usize,
) {
    use std::arch::x86_64::*;
    let mut acc = [[_mm256_setzero_ps(); 2]; R];
    // a partial panel's outputs pass through here: its row in `out` is shorter than 16
    let mut edge = [[0f32; PANEL]; R];
    if slice.start > 0 {
        for (r, (acc, edge)) in acc.iter_mut().zip(&mut edge).enumerate() {
            // SAFETY: row r's first `cols` outputs are inside `out` (the caller's bound)
            unsafe {
                let from = if cols == PANEL {
                    out.add(r * n).cast_const()
                } else {
                    std::ptr::copy_nonoverlapping(out.add(r * n), edge.as_mut_ptr(), cols);
                    edge.as_ptr()
                };
                *acc = [_mm256_loadu_ps(from), _mm256_loadu_ps(from.add(8))];
            }
        }
    }
    let w = panel.as_ptr();
    for i in slice {
        // SAFETY: value i of the panel is inside it; value i of each row is inside x
        unsafe {
            let wv = [
                _mm256_loadu_ps(w.add(i * PANEL)),
                _mm256_loadu_ps(w.add(i * PANEL + 8)),
            ];
            for (r, acc) in acc.iter_mut().enumerate() {
                let a = _mm256_broadcast_ss(&*x.add(r * k + i));
                acc[0] = _mm256_fmadd_ps(a, wv[0], acc[0]);
                acc[1] = _mm256_fmadd_ps(a, wv[1], acc[1]);
            }
        }
    }
    for (r, (acc, edge)) in acc.iter().zip(&mut edge).enumerate() {
        // SAFETY: as for the loads
        unsafe {
            let to = if cols == PANEL {
                out.add(r * n)
            } else {
                edge.as_mut_ptr()
            };
            _mm256_storeu_ps(to, acc[0]);
            _mm256_storeu_ps(to.add(8), acc[1]);
            if cols < PANEL {
                std::ptr::copy_nonoverlapping(edge.as_ptr(), out.add(r * n), cols);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use candle_core::{Device, Tensor};
    use rand::{Rng, SeedableRng};

    use super::*;

    fn avx2_and_fma() -> bool {
        std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")
    }

    fn draw(rows: usize, n: usize, k: usize, seed: u64) -> (Vec<f32>, Vec<f32>) {
        let mut rng = sage_core::ExperimentRng::seed_from_u64(seed);
        let w = (0..n * k).map(|_| rng.gen_range(-1f32..1.)).collect();
        let x = (0..rows * k).map(|_| rng.gen_range(-1f32..1.)).collect();
        (w, x)
    }

    /// Against a double-precision product, on shapes with a partial panel, a partial tile, a
    /// partial chunk, several slices and a partial one, and one input value; and a row alone
    /// gets the bits it gets in the batch.
    #[test]
    fn the_panels_give_the_product_and_each_row_its_bits_in_any_batch() {
        if !avx2_and_fma() {
            sage_test_env::skip("float32 panels", "no AVX2 and FMA on this CPU");
            return;
        }
        // (rows, n, k); the small ones split their panels between tasks
        let shapes = [
            (53, 1152, 384),
            (7, 37, 600),
            (100, 16, 1),
            (1, 5, 257),
            (3, 384, 1536),
        ];
        for (i, (rows, n, k)) in shapes.into_iter().enumerate() {
            let (w, x) = draw(rows, n, k, 90 + i as u64);
            // `new` declines on an AVX-512 CPU; the panels run on any AVX2 one
            let panels = PanelMatrix::packed(&w, n, k);
            let got = panels.product_of(&x, rows);
            for (r, row) in x.chunks_exact(k).enumerate() {
                for (j, weights) in w.chunks_exact(k).enumerate() {
                    let want: f64 = row
                        .iter()
                        .zip(weights)
                        .map(|(&a, &b)| f64::from(a) * f64::from(b))
                        .sum();
                    let got = f64::from(got[r * n + j]);
                    assert!(
                        (got - want).abs() <= 1e-6 * k as f64,
                        "({rows}, {n}, {k}) [{r}, {j}]: {got} against {want}"
                    );
                }
            }
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            for r in [0, rows / 2, rows - 1] {
                let alone = panels.product_of(&x[r * k..(r + 1) * k], 1);
                assert_eq!(
                    bits(&alone),
                    bits(&got[r * n..(r + 1) * n]),
                    "row {r} of ({rows}, {n}, {k})"
                );
            }
        }
    }

    /// int8's calibration multiplies through the panels on every CPU that runs them, AVX-512
    /// and `SAGE_CPU` notwithstanding, so that its ranges are the same bits everywhere.
    #[test]
    fn the_fixed_order_is_the_panels_wherever_they_run() {
        if !avx2_and_fma() {
            sage_test_env::skip("float32 in fixed order", "no AVX2 and FMA on this CPU");
            return;
        }
        let (rows, n, k) = (9, 40, 300);
        let (w, x) = draw(rows, n, k, 7);
        let weight = Tensor::from_vec(w.clone(), (n, k), &Device::Cpu).unwrap();
        let fixed = crate::DenseWeight::f32_in_fixed_order(&weight).unwrap();
        assert_eq!(fixed.kernel(), Some(KERNEL_NAME));
        let x_tensor = Tensor::from_vec(x.clone(), (rows, k), &Device::Cpu).unwrap();
        let got = fixed.product(&x_tensor).unwrap();
        let want = PanelMatrix::packed(&w, n, k).product_of(&x, rows);
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            bits(&got.flatten_all().unwrap().to_vec1::<f32>().unwrap()),
            bits(&want)
        );
    }

    /// The panels against gemm's float32 on MiniLM's shapes at 4,096 rows, the fastest of
    /// 15: a measurement to read (`--ignored --nocapture`; `RAYON_NUM_THREADS=1` for one
    /// core), nothing asserted.
    #[test]
    #[ignore = "a measurement: numbers to read"]
    fn panel_speed() {
        if !avx2_and_fma() {
            sage_test_env::skip("panel_speed", "no AVX2 and FMA on this CPU");
            return;
        }
        let rows = 4096;
        let shapes = [(1152, 384), (1536, 384), (384, 1536), (16, 1536)];
        for (i, (n, k)) in shapes.into_iter().enumerate() {
            let (w, x) = draw(rows, n, k, 31 + i as u64);
            let gemm =
                crate::DenseWeight::F32(Tensor::from_vec(w.clone(), (n, k), &Device::Cpu).unwrap());
            let x = Tensor::from_vec(x, (rows, k), &Device::Cpu).unwrap();
            let panels = PanelMatrix::packed(&w, n, k);
            let g = crate::tests::fastest_seconds(15, || {
                gemm.product(&x).unwrap();
            });
            let p = crate::tests::fastest_seconds(15, || {
                panels.product(&x).unwrap();
            });
            let macs = (rows * n * k) as f64;
            eprintln!(
                "({n}, {k}) x {rows}: gemm {:.1} GMAC/s, panels {:.1} GMAC/s ({:.2}x)",
                macs / g / 1e9,
                macs / p / 1e9,
                g / p
            );
        }
    }
}
