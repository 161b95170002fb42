//! Q4_1 weight matrices times f32 activations on x86-64 CPUs with AVX2, bit for bit what
//! candle computes, several times faster.
//!
//! Why: candle has SIMD kernels for most GGUF types but multiplies Q4_1 (the type of the
//! default paraphraser, SmolLM2-135M-Instruct Q4_1) with its scalar reference loop; profiled
//! on a PTEB run it took 71% of the time. llama.cpp's way is kept: each activation row is
//! quantized to Q8_1 and each 32-value block's integer dot product is exact, so computing that
//! integer with AVX2 instead of a scalar loop cannot change it. The float part of each block
//! (`sumi · d_w · d_a + m_w · s_a`, accumulated block by block) is candle's, in its order, for
//! several weight rows at once (one per lane), so the result has the same bits: answers, caches
//! and tests stay those of candle's model.
//!
//! The weights are stored interleaved, four values of each of 16 rows side by side, so that one
//! broadcast group of four activation quants meets sixteen rows in one instruction and every
//! lane's integer sum belongs to one row (no horizontal reductions): AVX-512 VNNI's `vpdpbusd`
//! takes all sixteen rows at once, AVX2 two halves of eight (`vpmaddubsw` then `vpmaddwd`).

use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{DType, Tensor};
use half::f16;
use rayon::prelude::*;

const BLOCK: usize = 32;
/// Bytes of a Q4_1 block: f16 scale, f16 minimum, 16 bytes of two nibbles each.
const Q4_1_BYTES: usize = 20;

/// Weight rows computed together, one per 32-bit lane of an AVX-512 register.
const GROUP: usize = 16;
/// Values of a row side by side in the interleaved layout (one 32-bit lane).
const QUAD: usize = 4;

/// A `(rows, k)` Q4_1 matrix laid out for the kernels: weight rows in groups of [`GROUP`] (the
/// last padded with zero blocks). Per group and block, the 32 values of each row, unpacked to
/// one byte each in the order of the Q8_1 quants they meet (low nibbles, then high), are
/// interleaved: byte `(c · GROUP + r) · QUAD + j` is value `c · QUAD + j` of row `r`. The
/// group's scales and minimums sit side by side as f32 (exact: every f16 is an f32).
pub(crate) struct Q4_1Matrix {
    rows: usize,
    k: usize,
    /// `[group · blocks_per_row + block]`
    values: Vec<[u8; BLOCK * GROUP]>,
    /// `[group · blocks_per_row + block]`
    scale: Vec<[f32; GROUP]>,
    min: Vec<[f32; GROUP]>,
    kernel: Kernel,
}

/// The instructions the integer block sums use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kernel {
    Avx2,
    Avx512Vnni,
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
        let kernel = best_kernel()?;
        if tensor.dtype() != GgmlDType::Q4_1 || !tensor.device().is_cpu() {
            return None;
        }
        let (rows, k) = tensor.shape().dims2().ok()?;
        if k % BLOCK != 0 {
            return None;
        }
        let data = tensor.data().ok()?;
        let per_row = k / BLOCK;
        if data.len() != rows * per_row * Q4_1_BYTES {
            return None;
        }
        let groups = rows.div_ceil(GROUP);
        let mut matrix = Q4_1Matrix {
            rows,
            k,
            values: vec![[0u8; BLOCK * GROUP]; groups * per_row],
            scale: vec![[0f32; GROUP]; groups * per_row],
            min: vec![[0f32; GROUP]; groups * per_row],
            kernel,
        };
        for (row, blocks) in data.chunks_exact(per_row * Q4_1_BYTES).enumerate() {
            let (group, lane) = (row / GROUP, row % GROUP);
            for (b, block) in blocks.chunks_exact(Q4_1_BYTES).enumerate() {
                let at = group * per_row + b;
                matrix.scale[at][lane] = f16::from_le_bytes([block[0], block[1]]).to_f32();
                matrix.min[at][lane] = f16::from_le_bytes([block[2], block[3]]).to_f32();
                let values = &mut matrix.values[at];
                let mut put = |value: usize, byte: u8| {
                    let (c, j) = (value / QUAD, value % QUAD);
                    values[(c * GROUP + lane) * QUAD + j] = byte;
                };
                for (j, &byte) in block[4..].iter().enumerate() {
                    put(j, byte & 0x0F);
                    put(j + BLOCK / 2, byte >> 4);
                }
            }
        }
        Some(matrix)
    }

    /// The same matrix computed with `kernel` (tests compare the kernels).
    #[cfg(test)]
    fn with_kernel(mut self, kernel: Kernel) -> Q4_1Matrix {
        self.kernel = kernel;
        self
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
        // one task per group of columns, whose weights stay in L1 while every activation row
        // passes over them; each output is computed alone, so neither the split nor the
        // thread count can change a bit
        let mut by_group = vec![[0f32; GROUP]; self.rows.div_ceil(GROUP) * n];
        by_group
            .par_chunks_mut(n)
            .enumerate()
            .for_each(|(group, out)| {
                let blocks = group * per_row..(group + 1) * per_row;
                for (r, out) in out.iter_mut().enumerate() {
                    let a = &activations[r * per_row..(r + 1) * per_row];
                    let (values, scale, min) = (
                        &self.values[blocks.clone()],
                        &self.scale[blocks.clone()],
                        &self.min[blocks.clone()],
                    );
                    // SAFETY: best_kernel checked that the CPU has the kernel's instructions.
                    *out = unsafe {
                        match self.kernel {
                            Kernel::Avx2 => group_dots_avx2(values, scale, min, a),
                            Kernel::Avx512Vnni => group_dots_vnni(values, scale, min, a),
                        }
                    };
                }
            });
        let mut out = vec![0f32; n * self.rows];
        for (group, rows) in by_group.chunks_exact(n).enumerate() {
            for (r, lanes) in rows.iter().enumerate() {
                let first = group * GROUP;
                let width = GROUP.min(self.rows - first);
                out[r * self.rows + first..r * self.rows + first + width]
                    .copy_from_slice(&lanes[..width]);
            }
        }
        Tensor::from_vec(out, (n, self.rows), x.device())
    }
}

/// The fastest kernel this CPU runs, if any.
fn best_kernel() -> Option<Kernel> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512vnni") {
            return Some(Kernel::Avx512Vnni);
        }
        if std::is_x86_feature_detected!("avx2") {
            return Some(Kernel::Avx2);
        }
    }
    None
}

/// `sumf += sumi · d_w · d_a + m_w · s_a` on eight lanes: candle's float operations (no fused
/// multiply-add), in its order.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn accumulate_8(
    acc: std::arch::x86_64::__m256,
    sumi: std::arch::x86_64::__m256i,
    scale: &[f32],
    min: &[f32],
    block: &Q8_1Block,
) -> std::arch::x86_64::__m256 {
    use std::arch::x86_64::*;
    // SAFETY: the slices hold at least eight values (a half of a GROUP-wide array).
    let (scale, min) = unsafe {
        (
            _mm256_loadu_ps(scale[..8].as_ptr()),
            _mm256_loadu_ps(min[..8].as_ptr()),
        )
    };
    let scaled = _mm256_mul_ps(
        _mm256_mul_ps(_mm256_cvtepi32_ps(sumi), scale),
        _mm256_set1_ps(block.scale),
    );
    let offset = _mm256_mul_ps(min, _mm256_set1_ps(block.sum));
    _mm256_add_ps(acc, _mm256_add_ps(scaled, offset))
}

/// The activation quants `4c .. 4c + 4` as one 32-bit lane value.
fn quad(block: &Q8_1Block, c: usize) -> i32 {
    let q = &block.quants[c * QUAD..c * QUAD + QUAD];
    i32::from_le_bytes([q[0] as u8, q[1] as u8, q[2] as u8, q[3] as u8])
}

/// The dot products of one activation row with a group of [`GROUP`] weight rows, eight rows
/// (one per lane) at a time. Per lane the float operations are candle's, in its order; the
/// integer block sums are exact whatever their order.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn group_dots_avx2(
    values: &[[u8; BLOCK * GROUP]],
    scale: &[[f32; GROUP]],
    min: &[[f32; GROUP]],
    a: &[Q8_1Block],
) -> [f32; GROUP] {
    use std::arch::x86_64::*;
    let ones = _mm256_set1_epi16(1);
    let mut out = [0f32; GROUP];
    for half in 0..GROUP / 8 {
        let mut acc = _mm256_setzero_ps();
        for (b, block) in a.iter().enumerate() {
            let mut sumi = _mm256_setzero_si256();
            for c in 0..BLOCK / QUAD {
                // SAFETY: chunk c of the block is GROUP · QUAD bytes; this half reads 32 of them.
                let w = unsafe {
                    _mm256_loadu_si256(values[b][(c * GROUP + half * 8) * QUAD..].as_ptr().cast())
                };
                // u8 · i8 pairs into i16 (at most 2 · 15 · 128, no saturation), then into i32
                let pairs = _mm256_maddubs_epi16(w, _mm256_set1_epi32(quad(block, c)));
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(pairs, ones));
            }
            let lanes = half * 8..half * 8 + 8;
            acc = accumulate_8(acc, sumi, &scale[b][lanes.clone()], &min[b][lanes], block);
        }
        // SAFETY: out holds GROUP values; this half writes eight.
        unsafe { _mm256_storeu_ps(out[half * 8..].as_mut_ptr(), acc) };
    }
    out
}

/// [`group_dots_avx2`] with AVX-512 VNNI: sixteen rows per instruction.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vnni")]
unsafe fn group_dots_vnni(
    values: &[[u8; BLOCK * GROUP]],
    scale: &[[f32; GROUP]],
    min: &[[f32; GROUP]],
    a: &[Q8_1Block],
) -> [f32; GROUP] {
    use std::arch::x86_64::*;
    let mut acc = _mm512_setzero_ps();
    for (b, block) in a.iter().enumerate() {
        let mut sumi = _mm512_setzero_si512();
        for c in 0..BLOCK / QUAD {
            // SAFETY: chunk c of the block is GROUP · QUAD = 64 bytes.
            let w = unsafe { _mm512_loadu_si512(values[b][c * GROUP * QUAD..].as_ptr().cast()) };
            sumi = _mm512_dpbusd_epi32(sumi, w, _mm512_set1_epi32(quad(block, c)));
        }
        // SAFETY: scale and min rows hold GROUP = 16 values.
        let (s, m) = unsafe {
            (
                _mm512_loadu_ps(scale[b].as_ptr()),
                _mm512_loadu_ps(min[b].as_ptr()),
            )
        };
        let scaled = _mm512_mul_ps(
            _mm512_mul_ps(_mm512_cvtepi32_ps(sumi), s),
            _mm512_set1_ps(block.scale),
        );
        let offset = _mm512_mul_ps(m, _mm512_set1_ps(block.sum));
        acc = _mm512_add_ps(acc, _mm512_add_ps(scaled, offset));
    }
    let mut out = [0f32; GROUP];
    // SAFETY: out holds 16 values.
    unsafe { _mm512_storeu_ps(out.as_mut_ptr(), acc) };
    out
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn group_dots_avx2(
    _: &[[u8; BLOCK * GROUP]],
    _: &[[f32; GROUP]],
    _: &[[f32; GROUP]],
    _: &[Q8_1Block],
) -> [f32; GROUP] {
    unreachable!("best_kernel finds no kernel off x86-64")
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn group_dots_vnni(
    _: &[[u8; BLOCK * GROUP]],
    _: &[[f32; GROUP]],
    _: &[[f32; GROUP]],
    _: &[Q8_1Block],
) -> [f32; GROUP] {
    unreachable!("best_kernel finds no kernel off x86-64")
}

#[cfg(test)]
mod tests {
    use candle_core::quantized::QMatMul;
    use candle_core::{Device, Module};
    use rand::{Rng, SeedableRng};

    use super::*;

    #[test]
    fn the_same_bits_as_candles_q4_1_matmul() {
        let Some(best) = best_kernel() else {
            eprintln!("no AVX2 here: candle's path runs, nothing to compare");
            return;
        };
        // every kernel this CPU runs
        let kernels: Vec<Kernel> = [Kernel::Avx2, best].into_iter().collect();
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
            let ours: Vec<Vec<f32>> = kernels
                .iter()
                .map(|&kernel| {
                    let m = Q4_1Matrix::from_qtensor(&w).unwrap().with_kernel(kernel);
                    m.forward(&x)
                        .unwrap()
                        .flatten_all()
                        .unwrap()
                        .to_vec1()
                        .unwrap()
                })
                .collect();
            let theirs = QMatMul::from_qtensor(w).unwrap().forward(&x).unwrap();
            let theirs: Vec<f32> = theirs.flatten_all().unwrap().to_vec1().unwrap();
            for (kernel, ours) in kernels.iter().zip(ours) {
                assert_eq!(ours, theirs, "{kernel:?}: ({rows}, {k}) x {n} rows");
            }
        }
    }

    #[test]
    fn other_types_are_left_to_candle() {
        let w = Tensor::ones((4, 64), DType::F32, &Device::Cpu).unwrap();
        let q = QTensor::quantize(&w, GgmlDType::Q4_0).unwrap();
        assert!(Q4_1Matrix::from_qtensor(&q).is_none());
    }
}
