//! bfloat16 dense products: the weight rounded to bf16 once, when its model loads, the
//! activations rounded to bf16 at each product, the products summed in float32.
//!
//! Two paths, and [`Bf16Matrix::kernel_name`] says which ran:
//! - `avx512-bf16`: `vdpbf16ps` (AVX512-BF16), two bf16 products per float32 lane per
//!   instruction, twice the float32 FMA's rate, and half the bytes of weight to read. The
//!   weights are interleaved as the integer kernels' (`quantized.rs`): a pair of values of each
//!   of 16 rows side by side, so one broadcast pair of activations meets sixteen rows in one
//!   instruction.
//! - `bf16-emulated`: without AVX512-BF16, the same products in float32 (the weight's bf16
//!   values widened back to f32 at load, the activations rounded to bf16 and widened), through
//!   the float32 product. A bf16 × bf16 product is exact in f32, so this computes the values
//!   the instruction computes, up to the order of the float32 sums; it is *slower* than f32
//!   (one more pass over the activations), and is there so that bf16 means the same numbers on
//!   every CPU, not for speed.

use candle_core::{DType, Device, Tensor};
use half::bf16;
use rayon::prelude::*;

/// Weight rows computed together, one per float32 lane of an AVX-512 register.
#[cfg(target_arch = "x86_64")]
const GROUP: usize = 16;

/// Activation rows per task of the AVX512-BF16 product (as the int8 product's).
#[cfg(target_arch = "x86_64")]
const ROW_CHUNK: usize = 64;

/// Activation rows sharing each weight load in the AVX512-BF16 kernel.
#[cfg(target_arch = "x86_64")]
const TILE: usize = 8;

/// A dense layer's weight `[n, k]` in bf16, laid out for this CPU's bf16 product.
pub struct Bf16Matrix {
    n: usize,
    k: usize,
    layout: Layout,
}

enum Layout {
    /// AVX512-BF16: per group of 16 rows (the last padded with zeros) and pair of columns `c`,
    /// the 32-bit word `c · 16 + r` holds values `2c` and `2c + 1` of row `r` (`k` padded to
    /// even).
    #[cfg(target_arch = "x86_64")]
    Paired(Vec<u32>),
    /// Anywhere else: the bf16 values widened back to f32, `[n, k]`.
    Widened(Tensor),
}

/// Whether this CPU has AVX512-BF16 (and `SAGE_BF16_EMULATED` is unset or `0`, and
/// `SAGE_CPU` allows AVX-512: switches for comparing the two paths on one machine).
pub fn avx512_bf16_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        crate::cpu::allows(crate::cpu::Level::Avx512)
            && std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512bf16")
            && std::env::var("SAGE_BF16_EMULATED").map_or(true, |v| v.is_empty() || v == "0")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// `values` rounded to bf16 (to nearest, ties to even, as `half` and the hardware round).
fn round(values: &[f32]) -> Vec<bf16> {
    values.iter().map(|&v| bf16::from_f32(v)).collect()
}

/// `v` rounded to the nearest bf16 (ties to even), as an f32: `half`'s rounding, written on
/// the bits so that a loop over it vectorises. NaN stays NaN.
#[inline]
pub(crate) fn to_bf16_and_back(v: f32) -> f32 {
    if v.is_nan() {
        return v;
    }
    let bits = v.to_bits();
    let rounded = bits.wrapping_add(0x7FFF + ((bits >> 16) & 1));
    f32::from_bits(rounded & 0xFFFF_0000)
}

impl Bf16Matrix {
    /// `weight` [n, k], float32 on the CPU, rounded to bf16: laid out for AVX512-BF16 where
    /// the CPU has it, widened back to f32 otherwise.
    pub fn new(weight: &Tensor) -> candle_core::Result<Bf16Matrix> {
        Bf16Matrix::with_path(weight, avx512_bf16_available())
    }

    /// [`Bf16Matrix::new`] on the path asked for (the tests run both where they can).
    pub(crate) fn with_path(weight: &Tensor, fast: bool) -> candle_core::Result<Bf16Matrix> {
        let (n, k) = weight.dims2()?;
        let values = round(
            &weight
                .to_dtype(DType::F32)?
                .flatten_all()?
                .to_vec1::<f32>()?,
        );
        #[cfg(target_arch = "x86_64")]
        if fast {
            let pairs = k.div_ceil(2);
            let groups = n.div_ceil(GROUP);
            let mut words = vec![0u32; groups * pairs * GROUP];
            for (row, values) in values.chunks_exact(k.max(1)).enumerate().take(n) {
                let (group, lane) = (row / GROUP, row % GROUP);
                for c in 0..pairs {
                    let low = values[2 * c].to_bits();
                    let high = values.get(2 * c + 1).map_or(0, |v| v.to_bits());
                    words[(group * pairs + c) * GROUP + lane] =
                        u32::from(low) | (u32::from(high) << 16);
                }
            }
            return Ok(Bf16Matrix {
                n,
                k,
                layout: Layout::Paired(words),
            });
        }
        let _ = fast;
        let widened: Vec<f32> = values.iter().map(|v| v.to_f32()).collect();
        Ok(Bf16Matrix {
            n,
            k,
            layout: Layout::Widened(Tensor::from_vec(widened, (n, k), &Device::Cpu)?),
        })
    }

    /// The path in a result's words: `avx512-bf16` or `bf16-emulated`.
    pub fn kernel_name(&self) -> &'static str {
        match self.layout {
            #[cfg(target_arch = "x86_64")]
            Layout::Paired(_) => "avx512-bf16",
            Layout::Widened(_) => "bf16-emulated",
        }
    }

    /// `x · Wᵀ` for `x` [rows, k] (f32): [rows, n], each product of bf16 values, summed in f32.
    pub fn product(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let (rows, k) = x.dims2()?;
        if k != self.k {
            candle_core::bail!(
                "bf16 product: x [{rows}, {k}] against weight [{}, {}]",
                self.n,
                self.k
            );
        }
        let xs = x.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
        match &self.layout {
            #[cfg(target_arch = "x86_64")]
            Layout::Paired(words) => {
                let out = self.paired_product(words, &xs, rows);
                Tensor::from_vec(out, (rows, self.n), x.device())
            }
            Layout::Widened(weight) => {
                let mut rounded = xs;
                rounded
                    .par_chunks_mut(1 << 14)
                    .for_each(|chunk| chunk.iter_mut().for_each(|v| *v = to_bf16_and_back(*v)));
                let rounded = Tensor::from_vec(rounded, (rows, k), x.device())?;
                crate::fused::dense_product(&rounded, weight, None)
            }
        }
    }

    /// The AVX512-BF16 product: tasks of [`ROW_CHUNK`] activation rows, each over every weight
    /// group, [`TILE`] rows per weight load; each output is summed in the same order whatever
    /// its tile.
    #[cfg(target_arch = "x86_64")]
    fn paired_product(&self, words: &[u32], xs: &[f32], rows: usize) -> Vec<f32> {
        let (n, k) = (self.n, self.k);
        let pairs = k.div_ceil(2);
        // the activations as bf16 pairs, one 32-bit word per pair
        let a: Vec<u32> = xs
            .chunks_exact(k.max(1))
            .take(rows)
            .flat_map(|row| {
                (0..pairs).map(move |c| {
                    let low = bf16::from_f32(row[2 * c]).to_bits();
                    let high = row
                        .get(2 * c + 1)
                        .map_or(0, |&v| bf16::from_f32(v).to_bits());
                    u32::from(low) | (u32::from(high) << 16)
                })
            })
            .collect();
        let mut out = vec![0f32; rows * n];
        if n == 0 {
            return out;
        }
        out.par_chunks_mut(ROW_CHUNK * n)
            .enumerate()
            .for_each(|(chunk, out)| {
                let first = chunk * ROW_CHUNK;
                let count = out.len() / n;
                let row = |r: usize| &a[(first + r) * pairs..(first + r + 1) * pairs];
                for group in 0..n.div_ceil(GROUP) {
                    let w = &words[group * pairs * GROUP..(group + 1) * pairs * GROUP];
                    let lanes = GROUP.min(n - group * GROUP);
                    let mut put = |r: usize, dots: &[f32; GROUP]| {
                        let at = r * n + group * GROUP;
                        out[at..at + lanes].copy_from_slice(&dots[..lanes]);
                    };
                    let mut r = 0;
                    while r + TILE <= count {
                        let tile: [&[u32]; TILE] = std::array::from_fn(|i| row(r + i));
                        // SAFETY: this layout is built only where the CPU has AVX512-BF16.
                        let dots = unsafe { bf16_tile(w, tile) };
                        for (i, dots) in dots.iter().enumerate() {
                            put(r + i, dots);
                        }
                        r += TILE;
                    }
                    while r < count {
                        // SAFETY: as above.
                        let [dots] = unsafe { bf16_tile(w, [row(r)]) };
                        put(r, &dots);
                        r += 1;
                    }
                }
            });
        out
    }
}

/// `R` activation rows (bf16 pairs) against one group of 16 weight rows (`w`, pairs × 16
/// words): `vdpbf16ps` adds both products of a pair to each row's float32 lane.
///
/// # Safety
/// The CPU must have AVX-512F and AVX512-BF16: the paired layout is built only where
/// `is_x86_feature_detected!` says so.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bf16")]
unsafe fn bf16_tile<const R: usize>(w: &[u32], a: [&[u32]; R]) -> [[f32; GROUP]; R] {
    use std::arch::x86_64::*;
    let mut acc = [_mm512_setzero_ps(); R];
    for (c, w) in w.chunks_exact(GROUP).enumerate() {
        // SAFETY: a chunk holds GROUP = 16 words.
        let w: __m512bh = std::mem::transmute(unsafe { _mm512_loadu_si512(w.as_ptr().cast()) });
        for (acc, row) in acc.iter_mut().zip(&a) {
            let pair: __m512bh = std::mem::transmute(_mm512_set1_epi32(row[c] as i32));
            *acc = _mm512_dpbf16_ps(*acc, pair, w);
        }
    }
    let mut out = [[0f32; GROUP]; R];
    for (out, acc) in out.iter_mut().zip(acc) {
        // SAFETY: out holds 16 values.
        unsafe { _mm512_storeu_ps(out.as_mut_ptr(), acc) };
    }
    out
}
