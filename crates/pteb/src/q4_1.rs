//! Q4_1 weight matrices times f32 activations on x86-64 CPUs with AVX2, bit for bit what
//! candle computes, several times faster.
//!
//! Why: candle has SIMD kernels for most GGUF types but multiplies Q4_1 (the type of the
//! default paraphraser, SmolLM2-135M-Instruct Q4_1) with its scalar reference loop; profiled
//! on a PTEB run it took 71% of the time. llama.cpp's way is kept: each activation row is
//! quantized to Q8_1 and each 32-value block's integer dot product is exact, so computing that
//! integer with AVX2 instead of a scalar loop cannot change it. The float part of each block
//! (`sumi · d_w · d_a + m_w · s_a`, accumulated block by block) is written in candle's order,
//! so the result has the same bits: answers, caches and tests stay those of candle's model.

use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{DType, Tensor};
use half::f16;
use rayon::prelude::*;

const BLOCK: usize = 32;
/// Bytes of a Q4_1 block: f16 scale, f16 minimum, 16 bytes of two nibbles each.
const Q4_1_BYTES: usize = 20;

/// A `(rows, k)` Q4_1 matrix unpacked for the kernel: scales and minimums as f32 (exact: every
/// f16 is an f32), nibbles as stored.
pub(crate) struct Q4_1Matrix {
    rows: usize,
    k: usize,
    scale: Vec<f32>,
    min: Vec<f32>,
    nibbles: Vec<[u8; 16]>,
}

/// One activation block quantized as candle's `BlockQ8_1::from_float`.
#[derive(Clone, Copy)]
struct Q8_1Block {
    scale: f32,
    /// f16(sum of the quants) · f16 scale, rounded to f16, as candle stores it.
    sum: f32,
    quants: [i8; BLOCK],
}

fn quantize_row(xs: &[f32], out: &mut Vec<Q8_1Block>) {
    for block in xs.chunks_exact(BLOCK) {
        let amax = block.iter().fold(0f32, |a, &x| a.max(x.abs()));
        let d = amax / ((1 << 7) - 1) as f32;
        let id = if d != 0f32 { 1. / d } else { 0. };
        let d16 = f16::from_f32(d);
        let mut quants = [0i8; BLOCK];
        let mut sum = 0i32;
        for j in 0..BLOCK / 2 {
            quants[j] = f32::round(block[j] * id) as i8;
            quants[j + BLOCK / 2] = f32::round(block[j + BLOCK / 2] * id) as i8;
            sum += i32::from(quants[j]) + i32::from(quants[j + BLOCK / 2]);
        }
        // half's f16 product: the f32 product rounded to f16
        let s16 = f16::from_f32(f16::from_f32(sum as f32).to_f32() * d16.to_f32());
        out.push(Q8_1Block {
            scale: d16.to_f32(),
            sum: s16.to_f32(),
            quants,
        });
    }
}

impl Q4_1Matrix {
    /// The matrix of `tensor` when it is a 2-D Q4_1 tensor on the CPU and this CPU has AVX2;
    /// `None` otherwise (candle's own path then runs).
    pub(crate) fn from_qtensor(tensor: &QTensor) -> Option<Q4_1Matrix> {
        if tensor.dtype() != GgmlDType::Q4_1 || !tensor.device().is_cpu() || !has_avx2() {
            return None;
        }
        let (rows, k) = tensor.shape().dims2().ok()?;
        if k % BLOCK != 0 {
            return None;
        }
        let data = tensor.data().ok()?;
        if data.len() != rows * k / BLOCK * Q4_1_BYTES {
            return None;
        }
        let blocks = data.len() / Q4_1_BYTES;
        let mut matrix = Q4_1Matrix {
            rows,
            k,
            scale: Vec::with_capacity(blocks),
            min: Vec::with_capacity(blocks),
            nibbles: Vec::with_capacity(blocks),
        };
        for block in data.chunks_exact(Q4_1_BYTES) {
            matrix
                .scale
                .push(f16::from_le_bytes([block[0], block[1]]).to_f32());
            matrix
                .min
                .push(f16::from_le_bytes([block[2], block[3]]).to_f32());
            matrix
                .nibbles
                .push(block[4..Q4_1_BYTES].try_into().expect("16 bytes"));
        }
        Some(matrix)
    }

    /// `x · selfᵀ` for `x` of shape `(n, k)`: `(n, rows)`.
    pub(crate) fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let (n, k) = x.dims2()?;
        if k != self.k {
            candle_core::bail!("Q4_1 matmul: input width {k}, matrix width {}", self.k);
        }
        let xs = x.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
        let per_row = k / BLOCK;
        let mut activations = Vec::with_capacity(n * per_row);
        for row in xs.chunks_exact(k) {
            quantize_row(row, &mut activations);
        }
        // columns in chunks small enough that a chunk's weights stay in L1 while every
        // activation row passes over them; each output is computed alone, so the split (and
        // the thread count) cannot change a bit
        const COLUMNS: usize = 16;
        let mut transposed = vec![0f32; self.rows * n];
        transposed
            .par_chunks_mut(COLUMNS * n)
            .enumerate()
            .for_each(|(chunk, out)| {
                let first = chunk * COLUMNS;
                for (c, out_column) in out.chunks_exact_mut(n).enumerate() {
                    let w = (first + c) * per_row..(first + c + 1) * per_row;
                    for (r, out) in out_column.iter_mut().enumerate() {
                        let a = &activations[r * per_row..(r + 1) * per_row];
                        // SAFETY: from_qtensor checked AVX2.
                        *out = unsafe {
                            dot_avx2(
                                &self.nibbles[w.clone()],
                                &self.scale[w.clone()],
                                &self.min[w.clone()],
                                a,
                            )
                        };
                    }
                }
            });
        let mut out = vec![0f32; n * self.rows];
        for (c, column) in transposed.chunks_exact(n).enumerate() {
            for (r, &v) in column.iter().enumerate() {
                out[r * self.rows + c] = v;
            }
        }
        Tensor::from_vec(out, (n, self.rows), x.device())
    }
}

fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dot_avx2(nibbles: &[[u8; 16]], scale: &[f32], min: &[f32], a: &[Q8_1Block]) -> f32 {
    use std::arch::x86_64::*;
    let low = _mm_set1_epi8(0x0F);
    let ones = _mm256_set1_epi16(1);
    let mut sumf = 0f32;
    for b in 0..a.len() {
        let packed = _mm_loadu_si128(nibbles[b].as_ptr().cast());
        // value j pairs with quant j (low nibbles) and j + 16 (high nibbles), as in ggml
        let lo = _mm_and_si128(packed, low);
        let hi = _mm_and_si128(_mm_srli_epi16(packed, 4), low);
        let weights = _mm256_set_m128i(hi, lo);
        let quants = _mm256_loadu_si256(a[b].quants.as_ptr().cast());
        // u8 · i8 pairs into i16 (at most 2 · 15 · 128, no saturation), then into i32
        let pairs = _mm256_maddubs_epi16(weights, quants);
        let quads = _mm256_madd_epi16(pairs, ones);
        let half = _mm_add_epi32(
            _mm256_castsi256_si128(quads),
            _mm256_extracti128_si256(quads, 1),
        );
        let half = _mm_add_epi32(half, _mm_unpackhi_epi64(half, half));
        let half = _mm_add_epi32(half, _mm_shuffle_epi32(half, 1));
        let sumi = _mm_cvtsi128_si32(half);
        // candle's expression, in its order (Rust never fuses a multiply and an add)
        sumf += sumi as f32 * scale[b] * a[b].scale + min[b] * a[b].sum;
    }
    sumf
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn dot_avx2(_: &[[u8; 16]], _: &[f32], _: &[f32], _: &[Q8_1Block]) -> f32 {
    unreachable!("from_qtensor returns None without AVX2")
}

#[cfg(test)]
mod tests {
    use candle_core::quantized::QMatMul;
    use candle_core::{Device, Module};
    use rand::{Rng, SeedableRng};

    use super::*;

    #[test]
    fn the_same_bits_as_candles_q4_1_matmul() {
        if !has_avx2() {
            eprintln!("no AVX2 here: candle's path runs, nothing to compare");
            return;
        }
        let mut rng = sage_core::ExperimentRng::seed_from_u64(5);
        let device = Device::Cpu;
        for (rows, k, n) in [(64, 576, 1), (33, 576, 7), (96, 1536, 32), (5, 64, 3)] {
            let w: Vec<f32> = (0..rows * k).map(|_| rng.gen_range(-1f32..1.)).collect();
            let w = QTensor::quantize(
                &Tensor::from_vec(w, (rows, k), &device).unwrap(),
                GgmlDType::Q4_1,
            )
            .unwrap();
            // activations with a few large values and exact zeros, as after a norm and SiLU
            let x: Vec<f32> = (0..n * k)
                .map(|i| match i % 97 {
                    0 => 40.0,
                    1 => 0.0,
                    _ => rng.gen_range(-3f32..3.),
                })
                .collect();
            let x = Tensor::from_vec(x, (n, k), &device).unwrap();
            let ours = Q4_1Matrix::from_qtensor(&w).unwrap().forward(&x).unwrap();
            let theirs = QMatMul::from_qtensor(w).unwrap().forward(&x).unwrap();
            let ours: Vec<f32> = ours.flatten_all().unwrap().to_vec1().unwrap();
            let theirs: Vec<f32> = theirs.flatten_all().unwrap().to_vec1().unwrap();
            assert_eq!(ours, theirs, "({rows}, {k}) x {n} rows");
        }
    }

    #[test]
    fn other_types_are_left_to_candle() {
        let w = Tensor::ones((4, 64), DType::F32, &Device::Cpu).unwrap();
        let q = QTensor::quantize(&w, GgmlDType::Q4_0).unwrap();
        assert!(Q4_1Matrix::from_qtensor(&q).is_none());
    }
}
