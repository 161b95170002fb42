//! Quantized GGUF weight matrices times f32 activations on x86-64 CPUs, bit for bit what candle
//! computes, several times faster: Q4_1 and Q8_0, with AVX-512 VNNI or AVX2.
//!
//! Why: candle multiplies Q4_1 (the type of the default paraphraser, SmolLM2-135M-Instruct
//! Q4_1) with its scalar reference loop; profiled on a PTEB run it took 71% of the time. Its
//! Q8_0 kernel (SmolLM2's output head, a fifth of a run once Q4_1 was fast) is AVX2, one weight
//! row at a time. llama.cpp's way is kept: each activation row is quantized to 8 bits and each
//! 32-value block's integer dot products are exact, so computing them with other instructions
//! cannot change them. The float part is candle's, in its order, for several weight rows at
//! once (one per lane), so the result has the same bits: answers, caches and tests stay those
//! of candle's model. Per block, Q4_1 (against Q8_1 activations) adds
//! `sumi · d_w · d_a + m_w · s_a` to one accumulator; Q8_0 (against Q8_0 activations, candle's
//! AVX2 code) fuses `d_w · d_a` times each of eight partial sums (four values each) into eight
//! accumulators, summed in a fixed tree at the end.
//!
//! The weights are stored interleaved, four values of each of 16 rows side by side, so that one
//! broadcast group of four activation quants meets sixteen rows in one instruction and every
//! lane's integer sum belongs to one row (no horizontal reductions): AVX-512 VNNI's `vpdpbusd`
//! takes all sixteen rows at once, AVX2 two halves of eight (`vpmaddubsw` then `vpmaddwd`).
//! `vpdpbusd` multiplies unsigned by signed bytes: Q8_0 weights are stored plus 128 and
//! 128 × (the activation quants' sum) is taken off again, exactly. AVX2's `vpmaddubsw` would
//! saturate on those biased bytes, so its Q8_0 kernel takes the bias off again and multiplies
//! |w| by the activation with w's sign, as candle's AVX2 code does.
//!
//! Not done: AMX-INT8. The interleaved layout is already AMX's `B` tile layout, and Q4_1 block
//! sums of sixteen activation rows by sixteen weight rows per `tdpbsud` (same bits) were tried
//! on the Sapphire Rapids class machine here: 1.35–1.45× this kernel alone, in cache or
//! streaming the weights, but no change at all on a whole PTEB run (64 STS-B texts, 6.2–6.5 s
//! either way, three runs each), so it was left out.

use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{DType, Tensor};
use half::f16;
use rayon::prelude::*;

const BLOCK: usize = 32;
/// Bytes of a Q4_1 block: f16 scale, f16 minimum, 16 bytes of two nibbles each.
const Q4_1_BYTES: usize = 20;
/// Bytes of a Q8_0 block: f16 scale, 32 signed bytes.
const Q8_0_BYTES: usize = 34;
/// Widths candle's repacked x86 Q8_0 kernel takes: multiples of this (`QK_K`).
const CANDLE_Q8_0_TILE_K: usize = 256;

/// Activation values from which [`Activations::quantize`] runs over every core (an encoder's
/// batch, not a decoding step's few rows).
const PARALLEL_QUANTIZE_VALUES: usize = 1 << 18;

/// Weight rows computed together, one per 32-bit lane of an AVX-512 register.
const GROUP: usize = 16;
/// Values of a row side by side in the interleaved layout (one 32-bit lane).
const QUAD: usize = 4;

/// A `(rows, k)` Q4_1 or Q8_0 matrix laid out for the kernels: weight rows in groups of
/// [`GROUP`] (the last padded). Per group and block, the 32 values of each row, one byte each
/// (Q4_1: unpacked nibbles in the order of the quants they meet, low nibbles then high; Q8_0:
/// the signed value plus 128), are interleaved: byte `(c · GROUP + r) · QUAD + j` is value
/// `c · QUAD + j` of row `r`. The group's scales (and Q4_1's minimums) sit side by side as f32
/// (exact: every f16 is an f32).
pub struct QuantMatrix {
    format: Format,
    rows: usize,
    k: usize,
    /// `[group · blocks_per_row + block]`
    values: Vec<[u8; BLOCK * GROUP]>,
    /// `[group · blocks_per_row + block]`
    scale: Vec<[f32; GROUP]>,
    /// Q4_1's minimums, as `scale`; empty for Q8_0.
    min: Vec<[f32; GROUP]>,
    kernel: Kernel,
}

/// The GGUF block types these kernels take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Q4_1,
    Q8_0,
}

/// The instructions the integer block sums use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kernel {
    Avx2,
    Avx512Vnni,
}

/// One activation block quantized as candle's `BlockQ8_1::from_float` (whose scale and quants
/// are those of `BlockQ8_0::from_float` too).
#[derive(Clone, Copy)]
struct Q8_1Block {
    scale: f32,
    /// f16(sum of the quants) · f16 scale, rounded to f16, as candle stores it (Q8_1).
    sum: f32,
    quants: [i8; BLOCK],
    /// The sums of the quants four by four (Q8_0's offset correction).
    quad_sums: [i32; BLOCK / QUAD],
}

/// Activation rows quantized once for any number of matrices of their width (the query, key
/// and value projections, or gate and up, read the same rows).
pub(crate) struct Activations {
    rows: usize,
    k: usize,
    blocks: Vec<Q8_1Block>,
    device: candle_core::Device,
}

impl Activations {
    /// The rows of `x` `(n, k)`, `k` a multiple of 32, quantized as candle quantizes them.
    pub(crate) fn quantize(x: &Tensor) -> candle_core::Result<Activations> {
        let (rows, k) = x.dims2()?;
        if k % BLOCK != 0 {
            candle_core::bail!("activation width {k} is not a multiple of {BLOCK}");
        }
        let xs = x.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
        #[cfg(target_arch = "x86_64")]
        let quantize: fn(&[f32]) -> Q8_1Block = if crate::cpu::allows(crate::cpu::Level::Avx512)
            && std::is_x86_feature_detected!("avx512f")
        {
            // SAFETY: the CPU has AVX-512F, checked just above.
            |b| unsafe { quantize_block_avx512(b.try_into().expect("32 values")) }
        } else {
            |b| quantize_block(b.try_into().expect("32 values"))
        };
        #[cfg(not(target_arch = "x86_64"))]
        let quantize: fn(&[f32]) -> Q8_1Block =
            |b| quantize_block(b.try_into().expect("32 values"));
        // an encoder's batch (thousands of rows) is quantized over every core, a decoding
        // step's few rows on the caller's thread (a decoding lane is one thread); each block
        // is quantized alone, so the bits are the same either way
        let blocks: Vec<Q8_1Block> = if xs.len() >= PARALLEL_QUANTIZE_VALUES {
            xs.par_chunks_exact(BLOCK).map(quantize).collect()
        } else {
            xs.chunks_exact(BLOCK).map(quantize).collect()
        };
        Ok(Activations {
            rows,
            k,
            blocks,
            device: x.device().clone(),
        })
    }
}

/// candle's `BlockQ8_1::from_float` on one block.
fn quantize_block(block: &[f32; BLOCK]) -> Q8_1Block {
    let amax = block.iter().fold(0f32, |a, &x| a.max(x.abs()));
    let d = amax / ((1 << 7) - 1) as f32;
    let id = if d != 0f32 { 1. / d } else { 0. };
    let mut quants = [0i8; BLOCK];
    for (q, &x) in quants.iter_mut().zip(block) {
        *q = f32::round(x * id) as i8;
    }
    finish_block(d, quants)
}

/// [`quantize_block`] with AVX-512: every step is exact or correctly rounded (the maximum, one
/// product per value, rounding half away from zero), so the quants and scales are the same.
///
/// # Safety
/// The CPU must have AVX-512F: callers reach this only after `is_x86_feature_detected!` says so.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn quantize_block_avx512(block: &[f32; BLOCK]) -> Q8_1Block {
    use std::arch::x86_64::*;
    let lo = _mm512_loadu_ps(block.as_ptr());
    let hi = _mm512_loadu_ps(block.as_ptr().add(16));
    let amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(lo), _mm512_abs_ps(hi)));
    let d = amax / ((1 << 7) - 1) as f32;
    let id = if d != 0f32 { 1. / d } else { 0. };
    let round = |x: __m512| {
        let y = _mm512_mul_ps(x, _mm512_set1_ps(id));
        let whole = _mm512_roundscale_ps::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(y);
        // y - whole is exact (|y| <= 127.x): a half or more goes one away from zero
        let away = _mm512_cmp_ps_mask::<_CMP_GE_OQ>(
            _mm512_abs_ps(_mm512_sub_ps(y, whole)),
            _mm512_set1_ps(0.5),
        );
        let step = _mm512_or_ps(_mm512_set1_ps(1.0), _mm512_and_ps(y, _mm512_set1_ps(-0.0)));
        _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(_mm512_mask_add_ps(
            whole, away, whole, step,
        )))
    };
    let mut quants = [0i8; BLOCK];
    _mm_storeu_si128(quants.as_mut_ptr().cast(), round(lo));
    _mm_storeu_si128(quants.as_mut_ptr().add(16).cast(), round(hi));
    finish_block(d, quants)
}

/// The block of scale `d` and `quants`, with its sums.
fn finish_block(d: f32, quants: [i8; BLOCK]) -> Q8_1Block {
    let d16 = f16::from_f32(d);
    let sum: i32 = quants.iter().map(|&q| i32::from(q)).sum();
    // half's f16 product: the f32 product rounded to f16
    let s16 = f16::from_f32(f16::from_f32(sum as f32).to_f32() * d16.to_f32());
    let mut quad_sums = [0i32; BLOCK / QUAD];
    for (c, q) in quants.chunks_exact(QUAD).enumerate() {
        quad_sums[c] = q.iter().map(|&v| i32::from(v)).sum();
    }
    Q8_1Block {
        scale: d16.to_f32(),
        sum: s16.to_f32(),
        quants,
        quad_sums,
    }
}

impl QuantMatrix {
    /// The matrix of `tensor` when it is a 2-D Q4_1 or Q8_0 tensor in memory and the CPU has
    /// AVX2 and FMA; `None` otherwise (candle's own path then runs).
    pub(crate) fn from_qtensor(tensor: &QTensor) -> Option<QuantMatrix> {
        let kernel = best_kernel()?;
        let (rows, k) = tensor.shape().dims2().ok()?;
        // candle has a VNNI Q8_0 kernel of its own (activations quantized per 256 values, so
        // other bits) for widths of whole 256-value superblocks and rows in sixteens, on CPUs
        // with AVX-512 VNNI or AVX-VNNI: there it is as fast, and its bits are the reference
        if tensor.dtype() == GgmlDType::Q8_0
            && k % CANDLE_Q8_0_TILE_K == 0
            && rows % GROUP == 0
            && candle_has_vnni()
        {
            return None;
        }
        QuantMatrix::laid_out(tensor, kernel)
    }

    /// `tensor` (Q4_1 or Q8_0, 2-D, in memory) in the kernels' interleaved layout.
    fn laid_out(tensor: &QTensor, kernel: Kernel) -> Option<QuantMatrix> {
        let (format, block_bytes) = match tensor.dtype() {
            GgmlDType::Q4_1 => (Format::Q4_1, Q4_1_BYTES),
            GgmlDType::Q8_0 => (Format::Q8_0, Q8_0_BYTES),
            _ => return None,
        };
        let (rows, k) = tensor.shape().dims2().ok()?;
        if !tensor.device().is_cpu() {
            return None;
        }
        if k % BLOCK != 0 {
            return None;
        }
        let data = tensor.data().ok()?;
        let per_row = k / BLOCK;
        if data.len() != rows * per_row * block_bytes {
            return None;
        }
        let groups = rows.div_ceil(GROUP);
        let mut matrix = QuantMatrix {
            format,
            rows,
            k,
            values: vec![[0u8; BLOCK * GROUP]; groups * per_row],
            scale: vec![[0f32; GROUP]; groups * per_row],
            min: match format {
                Format::Q4_1 => vec![[0f32; GROUP]; groups * per_row],
                Format::Q8_0 => Vec::new(),
            },
            kernel,
        };
        for (row, blocks) in data.chunks_exact(per_row * block_bytes).enumerate() {
            let (group, lane) = (row / GROUP, row % GROUP);
            for (b, block) in blocks.chunks_exact(block_bytes).enumerate() {
                let at = group * per_row + b;
                matrix.scale[at][lane] = f16::from_le_bytes([block[0], block[1]]).to_f32();
                let values = &mut matrix.values[at];
                let mut put = |value: usize, byte: u8| {
                    let (c, j) = (value / QUAD, value % QUAD);
                    values[(c * GROUP + lane) * QUAD + j] = byte;
                };
                match format {
                    Format::Q4_1 => {
                        matrix.min[at][lane] = f16::from_le_bytes([block[2], block[3]]).to_f32();
                        for (j, &byte) in block[4..].iter().enumerate() {
                            put(j, byte & 0x0F);
                            put(j + BLOCK / 2, byte >> 4);
                        }
                    }
                    Format::Q8_0 => {
                        for (j, &byte) in block[2..].iter().enumerate() {
                            put(j, (byte as i8 as i16 + 128) as u8);
                        }
                    }
                }
            }
        }
        Some(matrix)
    }

    /// The same matrix computed with `kernel` (tests compare the kernels).
    #[cfg(test)]
    fn with_kernel(mut self, kernel: Kernel) -> QuantMatrix {
        self.kernel = kernel;
        self
    }

    /// The block type, as a result names the kernel: `q4_1` or `q8_0`.
    pub(crate) fn format_name(&self) -> &'static str {
        match self.format {
            Format::Q4_1 => "q4_1",
            Format::Q8_0 => "q8_0",
        }
    }

    /// `x · selfᵀ` for `x` of shape `(n, k)`: `(n, rows)`.
    pub(crate) fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let mut outputs = QuantMatrix::forward_all(&[self], &Activations::quantize(x)?)?;
        Ok(outputs.pop().expect("one output per matrix"))
    }

    /// [`QuantMatrix::forward`] of several matrices of the same width on activations quantized
    /// once, in one parallel pass (a token's decoding step is a few hundred small products, and
    /// each parallel pass costs the workers a wake-up).
    pub(crate) fn forward_all(
        matrices: &[&QuantMatrix],
        x: &Activations,
    ) -> candle_core::Result<Vec<Tensor>> {
        let (n, k) = (x.rows, x.k);
        for matrix in matrices {
            if k != matrix.k {
                candle_core::bail!(
                    "{:?} matmul: input width {k}, matrix width {}",
                    matrix.format,
                    matrix.k
                );
            }
        }
        let per_row = k / BLOCK;
        let activations = &x.blocks;
        // (matrix, group) of every task, in order
        let tasks: Vec<(usize, usize)> = matrices
            .iter()
            .enumerate()
            .flat_map(|(i, m)| (0..m.rows.div_ceil(GROUP)).map(move |group| (i, group)))
            .collect();
        // one task per group of columns, whose weights stay in L1 while every activation row
        // passes over them; each output is computed alone, so neither the split nor the
        // thread count can change a bit
        let mut by_group = vec![[0f32; GROUP]; tasks.len() * n];
        by_group
            .par_chunks_mut(n)
            .zip(tasks.par_iter())
            .for_each(|(out, &(i, group))| {
                let blocks = group * per_row..(group + 1) * per_row;
                for (r, out) in out.iter_mut().enumerate() {
                    let a = &activations[r * per_row..(r + 1) * per_row];
                    *out = matrices[i].group_dots(blocks.clone(), a);
                }
            });
        let mut tasks_done = 0;
        let mut outputs = Vec::with_capacity(matrices.len());
        for matrix in matrices {
            let groups = matrix.rows.div_ceil(GROUP);
            let mine = &by_group[tasks_done * n..(tasks_done + groups) * n];
            tasks_done += groups;
            let mut out = vec![0f32; n * matrix.rows];
            for (group, rows) in mine.chunks_exact(n).enumerate() {
                for (r, lanes) in rows.iter().enumerate() {
                    let first = group * GROUP;
                    let width = GROUP.min(matrix.rows - first);
                    out[r * matrix.rows + first..r * matrix.rows + first + width]
                        .copy_from_slice(&lanes[..width]);
                }
            }
            outputs.push(Tensor::from_vec(out, (n, matrix.rows), &x.device)?);
        }
        Ok(outputs)
    }
}

impl QuantMatrix {
    /// One activation row against one group of weight rows (its `blocks`), by this matrix's
    /// format and kernel.
    fn group_dots(&self, blocks: std::ops::Range<usize>, a: &[Q8_1Block]) -> [f32; GROUP] {
        let (values, scale) = (&self.values[blocks.clone()], &self.scale[blocks.clone()]);
        #[cfg(target_arch = "x86_64")]
        // SAFETY: best_kernel checked that the CPU has the kernel's instructions.
        unsafe {
            match (self.format, self.kernel) {
                (Format::Q4_1, Kernel::Avx2) => {
                    group_dots_avx2(values, scale, &self.min[blocks], a)
                }
                (Format::Q4_1, Kernel::Avx512Vnni) => {
                    group_dots_vnni(values, scale, &self.min[blocks], a)
                }
                (Format::Q8_0, Kernel::Avx2) => q8_0_dots_avx2(values, scale, a),
                (Format::Q8_0, Kernel::Avx512Vnni) => q8_0_dots_vnni(values, scale, a),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (values, scale, a);
            unreachable!("best_kernel finds no kernel off x86-64")
        }
    }
}

/// The fastest kernel this CPU runs, if any.
fn best_kernel() -> Option<Kernel> {
    #[cfg(target_arch = "x86_64")]
    {
        if crate::cpu::allows(crate::cpu::Level::Avx512)
            && std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512vnni")
        {
            return Some(Kernel::Avx512Vnni);
        }
        // FMA: candle's AVX2 Q8_0 code, whose bits the Q8_0 kernel gives, needs it too
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            return Some(Kernel::Avx2);
        }
    }
    None
}

/// Whether candle multiplies Q8_0 with VNNI instructions itself (its `repack_x86` tiers).
fn candle_has_vnni() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        (std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512vnni"))
            || std::is_x86_feature_detected!("avxvnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
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
/// (one per lane) per register, both halves of the group in one pass over the blocks so that
/// each activation quad is broadcast once. Per lane the float operations are candle's, in its
/// order; the integer block sums are exact whatever their order.
///
/// A block's eight `vpmaddubsw` results are summed as i16 and widened once: each i16 lane is
/// at most 8 chunks · 2 products · 15 · 128 = 30,720 in magnitude, below 32,767, so the sum
/// is exact, and the multiply unit does one instruction per 32 products instead of two.
///
/// # Safety
/// The CPU must have AVX2: callers reach this only after `is_x86_feature_detected!` says so.
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
    let (mut acc_low, mut acc_high) = (_mm256_setzero_ps(), _mm256_setzero_ps());
    for (b, block) in a.iter().enumerate() {
        let (mut pairs_low, mut pairs_high) = (_mm256_setzero_si256(), _mm256_setzero_si256());
        for c in 0..BLOCK / QUAD {
            let quads = _mm256_set1_epi32(quad(block, c));
            // SAFETY: chunk c of the block is GROUP · QUAD = 64 bytes, read as two halves.
            let (w_low, w_high) = unsafe {
                let chunk = values[b][c * GROUP * QUAD..].as_ptr();
                (
                    _mm256_loadu_si256(chunk.cast()),
                    _mm256_loadu_si256(chunk.add(32).cast()),
                )
            };
            pairs_low = _mm256_add_epi16(pairs_low, _mm256_maddubs_epi16(w_low, quads));
            pairs_high = _mm256_add_epi16(pairs_high, _mm256_maddubs_epi16(w_high, quads));
        }
        let (sumi_low, sumi_high) = (
            _mm256_madd_epi16(pairs_low, ones),
            _mm256_madd_epi16(pairs_high, ones),
        );
        acc_low = accumulate_8(acc_low, sumi_low, &scale[b][..8], &min[b][..8], block);
        acc_high = accumulate_8(acc_high, sumi_high, &scale[b][8..], &min[b][8..], block);
    }
    let mut out = [0f32; GROUP];
    // SAFETY: out holds GROUP = 16 values.
    unsafe {
        _mm256_storeu_ps(out.as_mut_ptr(), acc_low);
        _mm256_storeu_ps(out[8..].as_mut_ptr(), acc_high);
    }
    out
}

/// [`group_dots_avx2`] with AVX-512 VNNI: sixteen rows per instruction.
///
/// # Safety
/// The CPU must have AVX-512F and AVX-512 VNNI: callers reach this only after
/// `is_x86_feature_detected!` says so.
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

/// The Q8_0 dot products of one activation row with a group of [`GROUP`] weight rows, with
/// AVX-512 VNNI. Per lane, candle's AVX2 `vec_dot_q8_0_q8_0`: per block, `d_w · d_a` fused into
/// eight accumulators times the eight partial sums of four values; at the end its tree
/// `((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7))`.
///
/// # Safety
/// The CPU must have AVX-512F and AVX-512 VNNI: callers reach this only after
/// `is_x86_feature_detected!` says so.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vnni")]
unsafe fn q8_0_dots_vnni(
    values: &[[u8; BLOCK * GROUP]],
    scale: &[[f32; GROUP]],
    a: &[Q8_1Block],
) -> [f32; GROUP] {
    use std::arch::x86_64::*;
    let mut acc = [_mm512_setzero_ps(); BLOCK / QUAD];
    for (b, block) in a.iter().enumerate() {
        // SAFETY: scale rows hold GROUP = 16 values.
        let d_w = unsafe { _mm512_loadu_ps(scale[b].as_ptr()) };
        let d = _mm512_mul_ps(d_w, _mm512_set1_ps(block.scale));
        for (c, acc) in acc.iter_mut().enumerate() {
            // SAFETY: chunk c of the block is GROUP · QUAD = 64 bytes.
            let w = unsafe { _mm512_loadu_si512(values[b][c * GROUP * QUAD..].as_ptr().cast()) };
            // (w + 128) · a summed, less 128 · Σa: w · a summed, exactly
            let biased =
                _mm512_dpbusd_epi32(_mm512_setzero_si512(), w, _mm512_set1_epi32(quad(block, c)));
            let sumi = _mm512_sub_epi32(biased, _mm512_set1_epi32(128 * block.quad_sums[c]));
            *acc = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(sumi), *acc);
        }
    }
    let low = _mm512_add_ps(_mm512_add_ps(acc[0], acc[4]), _mm512_add_ps(acc[2], acc[6]));
    let high = _mm512_add_ps(_mm512_add_ps(acc[1], acc[5]), _mm512_add_ps(acc[3], acc[7]));
    let mut out = [0f32; GROUP];
    // SAFETY: out holds 16 values.
    unsafe { _mm512_storeu_ps(out.as_mut_ptr(), _mm512_add_ps(low, high)) };
    out
}

/// [`q8_0_dots_vnni`] with AVX2, eight rows per register. Per lane, candle's AVX2
/// `vec_dot_q8_0_q8_0` exactly: |w| times the activation with w's sign (`vpmaddubsw` cannot
/// saturate: |w|, |a| ≤ 128 and 127), eight accumulators of four values each, the same tree.
///
/// # Safety
/// The CPU must have AVX2 and FMA: callers reach this only after
/// `is_x86_feature_detected!` says so.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn q8_0_dots_avx2(
    values: &[[u8; BLOCK * GROUP]],
    scale: &[[f32; GROUP]],
    a: &[Q8_1Block],
) -> [f32; GROUP] {
    use std::arch::x86_64::*;
    let ones = _mm256_set1_epi16(1);
    let bias = _mm256_set1_epi8(i8::MIN);
    let mut out = [0f32; GROUP];
    for half in 0..GROUP / 8 {
        let mut acc = [_mm256_setzero_ps(); BLOCK / QUAD];
        for (b, block) in a.iter().enumerate() {
            // SAFETY: scale rows hold GROUP = 16 values; this half reads eight.
            let d_w = unsafe { _mm256_loadu_ps(scale[b][half * 8..].as_ptr()) };
            let d = _mm256_mul_ps(d_w, _mm256_set1_ps(block.scale));
            for (c, acc) in acc.iter_mut().enumerate() {
                // SAFETY: chunk c of the block is GROUP · QUAD bytes; this half reads 32.
                let biased = unsafe {
                    _mm256_loadu_si256(values[b][(c * GROUP + half * 8) * QUAD..].as_ptr().cast())
                };
                let w = _mm256_xor_si256(biased, bias);
                let quads = _mm256_set1_epi32(quad(block, c));
                let pairs =
                    _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(quads, w));
                let sumi = _mm256_madd_epi16(pairs, ones);
                *acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(sumi), *acc);
            }
        }
        let low = _mm256_add_ps(_mm256_add_ps(acc[0], acc[4]), _mm256_add_ps(acc[2], acc[6]));
        let high = _mm256_add_ps(_mm256_add_ps(acc[1], acc[5]), _mm256_add_ps(acc[3], acc[7]));
        // SAFETY: out holds GROUP values; this half writes eight.
        unsafe { _mm256_storeu_ps(out[half * 8..].as_mut_ptr(), _mm256_add_ps(low, high)) };
    }
    out
}

#[cfg(test)]
mod tests {
    use candle_core::quantized::QMatMul;
    use candle_core::{Device, Module};
    use rand::{Rng, SeedableRng};

    use super::*;

    /// Ours and candle's product of a random `(rows, k)` matrix of `dtype` with `n` activation
    /// rows (a few large values and exact zeros, as after a norm and SiLU), for every kernel
    /// this CPU runs.
    fn compare(
        dtype: GgmlDType,
        shapes: &[(usize, usize, usize)],
        kernels: &[Kernel],
        rng: &mut impl Rng,
    ) {
        let device = Device::Cpu;
        for &(rows, k, n) in shapes {
            let w: Vec<f32> = (0..rows * k).map(|_| rng.gen_range(-1f32..1.)).collect();
            let w = QTensor::quantize(&Tensor::from_vec(w, (rows, k), &device).unwrap(), dtype)
                .unwrap();
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
                    let m = QuantMatrix::from_qtensor(&w).unwrap().with_kernel(kernel);
                    let y = m.forward(&x).unwrap();
                    y.flatten_all().unwrap().to_vec1().unwrap()
                })
                .collect();
            let theirs = QMatMul::from_qtensor(w).unwrap().forward(&x).unwrap();
            let theirs: Vec<f32> = theirs.flatten_all().unwrap().to_vec1().unwrap();
            for (kernel, ours) in kernels.iter().zip(ours) {
                assert_eq!(
                    ours, theirs,
                    "{dtype:?} {kernel:?}: ({rows}, {k}) x {n} rows"
                );
            }
        }
    }

    #[test]
    fn the_same_bits_as_candles_q4_1_matmul() {
        let Some(best) = best_kernel() else {
            sage_test_env::skip(
                "the_same_bits_as_candles_q4_1_matmul",
                "no AVX2 on this CPU: candle's path runs, nothing to compare",
            );
            return;
        };
        let mut rng = sage_core::ExperimentRng::seed_from_u64(5);
        let shapes = [(64, 576, 1), (33, 576, 7), (96, 1536, 32), (5, 64, 3)];
        compare(GgmlDType::Q4_1, &shapes, &[Kernel::Avx2, best], &mut rng);
    }

    #[test]
    fn the_same_bits_as_candles_q8_0_matmul() {
        let Some(best) = best_kernel() else {
            sage_test_env::skip(
                "the_same_bits_as_candles_q8_0_matmul",
                "no AVX2 on this CPU: candle's path runs, nothing to compare",
            );
            return;
        };
        let mut rng = sage_core::ExperimentRng::seed_from_u64(6);
        // SmolLM2's output head is (49152, 576)
        let shapes = [
            (64, 576, 1),
            (33, 576, 7),
            (96, 576, 32),
            (40, 1536, 5),
            (5, 64, 3),
        ];
        compare(GgmlDType::Q8_0, &shapes, &[Kernel::Avx2, best], &mut rng);
        // where candle has its own VNNI kernel, candle runs; without VNNI, candle's AVX2 rows
        // are the reference there too
        let w = Tensor::ones((96, 1536), DType::F32, &Device::Cpu).unwrap();
        let q = QTensor::quantize(&w, GgmlDType::Q8_0).unwrap();
        assert_eq!(QuantMatrix::from_qtensor(&q).is_none(), candle_has_vnni());
        if !candle_has_vnni() {
            compare(GgmlDType::Q8_0, &[(96, 1536, 3)], &[Kernel::Avx2], &mut rng);
        }
    }

    /// The AVX-512 quantizer against candle's scalar rule on random blocks and on ties: with
    /// a maximum of 127 the scale is 1, so x.5 must round away from zero.
    #[test]
    fn the_vector_quantizer_gives_the_scalar_blocks() {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx512f") {
            let mut rng = sage_core::ExperimentRng::seed_from_u64(8);
            let mut blocks: Vec<[f32; BLOCK]> = (0..500)
                .map(|i| {
                    let scale = [1e-6f32, 0.3, 7.0, 2e4][i % 4];
                    std::array::from_fn(|_| rng.gen_range(-scale..scale))
                })
                .collect();
            let ties: [f32; 8] = [127.0, 0.5, -0.5, 2.5, -2.5, 126.5, -126.5, 0.49999997];
            blocks.push(std::array::from_fn(|j| ties[j % ties.len()]));
            blocks.push([0.0; BLOCK]);
            for block in &blocks {
                let want = quantize_block(block);
                // SAFETY: the CPU has AVX-512F, checked above.
                let got = unsafe { quantize_block_avx512(block) };
                assert_eq!(got.quants, want.quants, "{block:?}");
                assert_eq!(got.quad_sums, want.quad_sums);
                assert_eq!(got.scale.to_bits(), want.scale.to_bits());
                assert_eq!(got.sum.to_bits(), want.sum.to_bits());
            }
            let tie = quantize_block(&blocks[500]);
            assert_eq!(&tie.quants[..8], &[127, 1, -1, 3, -3, 127, -127, 0]);
            return;
        }
        eprintln!("no AVX-512 here: the scalar quantizer runs, nothing to compare");
    }

    #[test]
    fn other_types_are_left_to_candle() {
        let w = Tensor::ones((4, 64), DType::F32, &Device::Cpu).unwrap();
        let q = QTensor::quantize(&w, GgmlDType::Q4_0).unwrap();
        assert!(QuantMatrix::from_qtensor(&q).is_none());
        let q = QTensor::quantize(&w, GgmlDType::Q4K).unwrap_or(q);
        assert!(QuantMatrix::from_qtensor(&q).is_none());
    }
}
