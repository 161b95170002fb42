//! The encoders' int8 product ([`crate::Precision::Int8`]): weights with one scale per output
//! channel, activations with one step and zero point per row (token), quantized when the
//! product starts; each output is one exact integer sum over the whole row, one integer
//! correction and one float multiply.
//!
//! Why this layout and not GGUF's Q8_0 (a scale per 32 values on both sides, which this crate
//! also multiplies, for the chat models): Q8_0 pays a float multiply-add and an offset
//! correction for every 32 products, so on MiniLM's shapes it ran at 1.0–1.6× float32's
//! speed; here the integer unit does all the work. Per-row activation scales with per-channel
//! weight scales are the published accurate int8 recipe for sentence encoders (mean cosine
//! 0.998 against float32, where one scale per tensor, what ONNX Runtime's `quantize_dynamic`
//! uses, keeps 0.91–0.95). Two refinements keep every text's vector within cosine 0.99 of
//! float32's on the models measured: SmoothQuant factors per input channel (the layer norms'
//! outlier channels, [`smoothing_factors`], from activation ranges the encoder records on
//! calibration texts at load) and an asymmetric activation range (a GELU's outputs).
//!
//! Kernels, each exact in its integer sums, so every one gives the same bits (tests compare
//! them): AVX-512 VNNI (`vpdpbusd`, unsigned activation bytes times signed weights, sixteen
//! weight rows per instruction), AVX-VNNI (the same on 256 bits) and AVX2 (`vpmaddubsw` on |a|
//! and w xored with a's sign mask, the activation bytes stored minus 128, then `vpmaddwd`; a
//! per-row correction makes it exact; two quads whose weights cannot overflow a 16-bit sum
//! share one `vpmaddwd`, [`pair_quads`]). Each sum has `zero point · Σw` taken off. The weights
//! are interleaved as the GGUF kernels' are: four values of each of 16 rows side by side, so
//! one broadcast activation quad meets sixteen rows in one instruction.
//!
//! Where one int8 product feeds another through a GELU (a feed-forward block), the first
//! quantizes its rows for the second as each chunk of them is done
//! ([`Int8Matrix::product_then_quantize`]), so the wide inner activation is never stored as
//! float32.

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU64, Ordering};

use candle_core::{DType, Tensor};
use rayon::prelude::*;

use crate::cpu::{self, Level};

/// Weight rows per group: one per 32-bit lane of an AVX-512 register.
const LANES: usize = 16;
/// Values of a row side by side in a lane.
const QUAD: usize = 4;
/// Bytes of one quad of one group: the weights one activation quad meets in one instruction.
const QUAD_BYTES: usize = LANES * QUAD;
/// Largest quantized magnitude: symmetric, so -128 never occurs and the AVX2 path cannot
/// saturate.
const QMAX: f32 = 127.0;
/// Activation rows per parallel task: their quants (1.5 KiB a row at k = 1536) and the whole
/// weight (under 2.4 MiB for BERT-base's widest layer) stay in the caches meanwhile. A multiple
/// of every kernel's row tile.
const ROW_CHUNK: usize = 48;
/// Activation values from which quantization runs over every core.
const PARALLEL_QUANTIZE_VALUES: usize = 1 << 17;

/// The instructions an [`Int8Matrix`]'s sums use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Int8Kernel {
    /// AVX-512 VNNI, 512-bit.
    Avx512Vnni,
    /// AVX-VNNI, 256-bit.
    AvxVnni,
    /// AVX2 `vpmaddubsw` and `vpmaddwd`.
    Avx2,
}

impl Int8Kernel {
    /// Every kernel, fastest first.
    pub(crate) const ALL: [Int8Kernel; 3] = [
        Int8Kernel::Avx512Vnni,
        Int8Kernel::AvxVnni,
        Int8Kernel::Avx2,
    ];

    /// In a result's words.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Int8Kernel::Avx512Vnni => "int8-avx512-vnni",
            Int8Kernel::AvxVnni => "int8-avx-vnni",
            Int8Kernel::Avx2 => "int8-avx2",
        }
    }

    /// Whether this CPU has the kernel's instructions and `SAGE_CPU` allows them.
    pub(crate) fn runs_here(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            match self {
                Int8Kernel::Avx512Vnni => {
                    cpu::allows(Level::Avx512)
                        && std::is_x86_feature_detected!("avx512f")
                        && std::is_x86_feature_detected!("avx512vnni")
                }
                Int8Kernel::AvxVnni => {
                    cpu::allows(Level::AvxVnni) && std::is_x86_feature_detected!("avxvnni")
                }
                Int8Kernel::Avx2 => std::is_x86_feature_detected!("avx2"),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (self, Level::Avx2, cpu::allows);
            false
        }
    }

    /// The fastest kernel allowed here, if any.
    pub(crate) fn best() -> Option<Int8Kernel> {
        Int8Kernel::ALL.into_iter().find(|k| k.runs_here())
    }

    /// What its activation bytes hold: the unsigned quant (`vpdpbusd`'s unsigned side), or
    /// the quant minus 128 as a signed byte (AVX2's sign trick).
    fn signed(self) -> bool {
        self == Int8Kernel::Avx2
    }
}

/// A float32 weight `[n, k]` quantized to int8 with a scale per row (output channel), laid
/// out for the kernels.
pub struct Int8Matrix {
    n: usize,
    k: usize,
    /// `k` in quads (the last padded with zeros).
    quads: usize,
    /// `[group][quad][row of the group][QUAD]`, the rows of the last group padded with zeros.
    values: Vec<i8>,
    /// Per row, padded to whole groups: the weight's step.
    scale: Vec<f32>,
    /// Per row: Σ w, which times an activation row's zero point is taken off its sums.
    sum: Vec<i32>,
    /// Per input channel, `1 / s_j` of the smoothing the weight was quantized with; empty
    /// without.
    unsmooth: Vec<f32>,
    /// AVX2 only (empty for the other kernels, whose quads are in order): each group's
    /// quads as stored, by the activation quad each meets; its first `paired[group]` form
    /// pairs whose 16-bit sums cannot overflow ([`pair_quads`]).
    order: Vec<u32>,
    /// AVX2 only: per group, how many of its stored quads are in pairs (even).
    paired: Vec<usize>,
    kernel: Int8Kernel,
    /// Tells this matrix apart from every other, so that rows quantized for it
    /// ([`Int8Rows`]) are never multiplied by another.
    id: u64,
}

/// Ids of [`Int8Matrix`]es, one each.
static NEXT_MATRIX_ID: AtomicU64 = AtomicU64::new(0);

/// Activation rows quantized for one kernel: `quads · QUAD` bytes a row, each row's step and
/// the zero point its bytes are offset by (for AVX2's signed bytes, the zero point minus 128).
/// For AVX2 a row is two runs of `quads · QUAD` bytes: each signed byte's sign mask (0xff where
/// it is negative), then its magnitude |a| (see [`sums_avx2`]); reading |a| costs a load
/// where computing it cost one of the nine vector instructions per row and quad (8–11% of a
/// standalone loop's time).
struct RowQuants {
    bytes: Vec<u8>,
    scale: Vec<f32>,
    zero: Vec<i32>,
    /// Per row, added to every sum: AVX2's sums take |a| off for each negative byte
    /// ([`sums_avx2`]); zero for the other kernels.
    correction: Vec<i32>,
    row_bytes: usize,
}

impl RowQuants {
    /// Room for `rows` rows quantized for `matrix`.
    fn for_rows(matrix: &Int8Matrix, rows: usize) -> RowQuants {
        let width = matrix.quads * QUAD;
        let row_bytes = if matrix.kernel.signed() {
            2 * width
        } else {
            width
        };
        RowQuants {
            bytes: vec![0u8; rows * row_bytes],
            scale: vec![0f32; rows],
            zero: vec![0i32; rows],
            correction: vec![0i32; rows],
            row_bytes,
        }
    }
}

/// Activation rows quantized for one int8 weight's product by the epilogue of the product
/// before it ([`crate::DenseWeight::product_bias_gelu_for`]); only that weight multiplies them.
pub struct Int8Rows {
    quants: RowQuants,
    matrix: u64,
}

impl Int8Rows {
    /// How many rows.
    pub fn rows(&self) -> usize {
        self.quants.scale.len()
    }
}

impl Int8Matrix {
    /// `weight` `[n, k]` for the fastest kernel allowed here; `None` where there is none.
    /// `smoothing`: see [`Int8Matrix::with_kernel`].
    pub(crate) fn new(
        weight: &Tensor,
        smoothing: Option<&[f32]>,
    ) -> candle_core::Result<Option<Int8Matrix>> {
        match Int8Kernel::best() {
            Some(kernel) => Ok(Some(Int8Matrix::with_kernel(weight, smoothing, kernel)?)),
            None => Ok(None),
        }
    }

    /// `weight` laid out for `kernel` (the caller checked that it runs here). `smoothing`, one
    /// factor `s_j` per input channel (SmoothQuant's): the weight's column `j` is multiplied by
    /// `s_j` before it is quantized and each activation's channel `j` divided by it, so the
    /// product is unchanged while an activation channel of outliers no longer takes a row's
    /// whole range.
    pub(crate) fn with_kernel(
        weight: &Tensor,
        smoothing: Option<&[f32]>,
        kernel: Int8Kernel,
    ) -> candle_core::Result<Int8Matrix> {
        let (n, k) = weight.dims2()?;
        let mut w = weight
            .to_dtype(DType::F32)?
            .flatten_all()?
            .to_vec1::<f32>()?;
        let mut unsmooth = Vec::new();
        if let Some(factors) = smoothing {
            if factors.len() != k || factors.iter().any(|f| !(f.is_finite() && *f > 0.0)) {
                candle_core::bail!(
                    "int8 smoothing: {} factors for width {k}, or one not finite and positive",
                    factors.len()
                );
            }
            for row in w.chunks_exact_mut(k.max(1)) {
                for (v, f) in row.iter_mut().zip(factors) {
                    *v *= f;
                }
            }
            unsmooth = factors.iter().map(|f| 1.0 / f).collect();
        }
        let quads = k.div_ceil(QUAD);
        let groups = n.div_ceil(LANES);
        let mut values = vec![0i8; groups * quads * QUAD_BYTES];
        let mut scale = vec![0f32; groups * LANES];
        let mut sums = vec![0i32; groups * LANES];
        for (r, row) in w.chunks_exact(k.max(1)).enumerate().take(n) {
            let amax = row.iter().fold(0f32, |a, &x| a.max(x.abs()));
            let step = amax / QMAX;
            let inverse = if step > 0.0 { 1.0 / step } else { 0.0 };
            let (group, lane) = (r / LANES, r % LANES);
            let mut sum = 0i32;
            for (i, &x) in row.iter().enumerate() {
                let q = (x * inverse).round_ties_even().clamp(-QMAX, QMAX) as i8;
                sum += i32::from(q);
                let at = (group * quads + i / QUAD) * QUAD_BYTES + lane * QUAD + i % QUAD;
                values[at] = q;
            }
            scale[r] = step;
            sums[r] = sum;
        }
        let (mut order, mut paired) = (Vec::new(), Vec::new());
        if kernel == Int8Kernel::Avx2 && quads > 0 {
            order.reserve(groups * quads);
            for group in values.chunks_exact_mut(quads * QUAD_BYTES) {
                let (group_order, group_paired) = pair_quads(group);
                let natural = group.to_vec();
                for (at, &c) in group.chunks_exact_mut(QUAD_BYTES).zip(&group_order) {
                    at.copy_from_slice(&natural[c as usize * QUAD_BYTES..][..QUAD_BYTES]);
                }
                order.extend(group_order);
                paired.push(group_paired);
            }
        }
        Ok(Int8Matrix {
            n,
            k,
            quads,
            values,
            scale,
            sum: sums,
            unsmooth,
            order,
            paired,
            kernel,
            id: NEXT_MATRIX_ID.fetch_add(1, Ordering::Relaxed),
        })
    }

    /// The kernel in a result's words.
    pub(crate) fn kernel_name(&self) -> &'static str {
        self.kernel.name()
    }

    /// `x · selfᵀ` for `x` `[rows, k]`: `[rows, n]`. Each output is computed in one order
    /// whatever the rows around it and whichever kernel runs, so a batch gives each row the
    /// bits it gets alone, on every CPU.
    pub(crate) fn product(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let a = self.quantize_input(x)?;
        self.product_of_quants(&a, x.device())
    }

    /// `x` `[rows, k]` quantized for this matrix's product, read in place.
    fn quantize_input(&self, x: &Tensor) -> candle_core::Result<RowQuants> {
        let (rows, k) = x.dims2()?;
        if k != self.k {
            candle_core::bail!("int8 product: input width {k}, matrix width {}", self.k);
        }
        // read in place: a batch's activations are tens of MiB, a copy costs as much as the
        // quantization
        let x = x.to_dtype(DType::F32)?.contiguous()?;
        let (storage, layout) = x.storage_and_layout();
        Ok(self.quantize(crate::fused::cpu_f32(&storage, layout)?, rows))
    }

    /// The product of rows already quantized for this matrix.
    fn product_of_quants(
        &self,
        a: &RowQuants,
        device: &candle_core::Device,
    ) -> candle_core::Result<Tensor> {
        let (rows, width) = (a.scale.len(), self.n);
        // not zeroed first: the zeroing was 2.5% of an int8 forward pass at window length, for
        // values every chunk overwrites
        let mut out: Vec<f32> = Vec::with_capacity(rows * width);
        if width > 0 && rows > 0 {
            out.spare_capacity_mut()[..rows * width]
                .par_chunks_mut(ROW_CHUNK * width)
                .enumerate()
                .for_each(|(chunk, out)| self.chunk(a, chunk * ROW_CHUNK, out));
        }
        // SAFETY: the chunks cover the first `rows · width` values, and `chunk` writes every
        // value of its rows (its groups cover the width)
        unsafe { out.set_len(rows * width) };
        Tensor::from_vec(out, (rows, width), device)
    }

    /// `epilogue(x · selfᵀ)`, each row quantized for `next`'s product as soon as its chunk
    /// of rows is done, while it is in cache: the float32 rows never leave a per-task
    /// scratch. A feed-forward block's inner activation is 4 × its width (25 MB a 4,096-token
    /// batch of MiniLM), which the unfused path writes, rereads for the epilogue and rereads
    /// again to quantize. The bytes are those of [`Int8Matrix::product`], the epilogue and
    /// then `next`'s quantization, run apart.
    pub(crate) fn product_then_quantize(
        &self,
        x: &Tensor,
        epilogue: &crate::fused::Epilogue,
        next: &Int8Matrix,
    ) -> candle_core::Result<Int8Rows> {
        let width = self.n;
        if next.k != width {
            candle_core::bail!(
                "int8 product: output width {width} feeds a product of width {}",
                next.k
            );
        }
        epilogue.check(x.dims2()?.0, width)?;
        let a = self.quantize_input(x)?;
        let rows = a.scale.len();
        let mut b = RowQuants::for_rows(next, rows);
        if width > 0 && rows > 0 {
            let row_bytes = b.row_bytes;
            b.bytes
                .par_chunks_mut(ROW_CHUNK * row_bytes)
                .zip(b.scale.par_chunks_mut(ROW_CHUNK))
                .zip(b.zero.par_chunks_mut(ROW_CHUNK))
                .zip(b.correction.par_chunks_mut(ROW_CHUNK))
                .enumerate()
                .for_each_init(
                    || (Vec::<MaybeUninit<f32>>::new(), Vec::new()),
                    |(scratch, smoothed), (chunk, (((bytes, scale), zero), correction))| {
                        let first = chunk * ROW_CHUNK;
                        let values = scale.len() * width;
                        scratch.resize(values, MaybeUninit::uninit());
                        self.chunk(&a, first, &mut scratch[..values]);
                        // SAFETY: `chunk` wrote every value of its rows
                        let done = unsafe {
                            std::slice::from_raw_parts_mut(scratch.as_mut_ptr().cast(), values)
                        };
                        crate::fused::with_wide_vectors(
                            #[inline(always)]
                            || {
                                for (i, row) in done.chunks_exact_mut(width).enumerate() {
                                    epilogue.row(row, first + i);
                                }
                            },
                        );
                        let rows_out = bytes
                            .chunks_exact_mut(row_bytes)
                            .zip(scale.iter_mut())
                            .zip(zero.iter_mut().zip(correction.iter_mut()));
                        for (row, ((bytes, scale), offsets)) in
                            done.chunks_exact(width).zip(rows_out)
                        {
                            next.quantize_one(row, smoothed, bytes, scale, offsets);
                        }
                    },
                );
        }
        Ok(Int8Rows {
            quants: b,
            matrix: next.id,
        })
    }

    /// The product of rows quantized for this matrix by [`Int8Matrix::product_then_quantize`].
    pub(crate) fn product_of_rows(&self, rows: &Int8Rows) -> candle_core::Result<Tensor> {
        if rows.matrix != self.id {
            candle_core::bail!("int8 product: the rows were quantized for another weight");
        }
        self.product_of_quants(&rows.quants, &candle_core::Device::Cpu)
    }

    /// Each row of `xs` quantized by [`Int8Matrix::quantize_one`].
    fn quantize(&self, xs: &[f32], rows: usize) -> RowQuants {
        let mut out = RowQuants::for_rows(self, rows);
        let rows_out = out
            .bytes
            .chunks_exact_mut(out.row_bytes.max(1))
            .zip(out.scale.iter_mut())
            .zip(out.zero.iter_mut().zip(out.correction.iter_mut()));
        let k = self.k.max(1);
        if xs.len() >= PARALLEL_QUANTIZE_VALUES {
            xs.par_chunks_exact(k)
                .zip(rows_out.collect::<Vec<_>>())
                .for_each_init(Vec::new, |smoothed, (x, ((q, s), offsets))| {
                    self.quantize_one(x, smoothed, q, s, offsets)
                });
        } else {
            let mut smoothed = Vec::new();
            for (x, ((q, s), offsets)) in xs.chunks_exact(k).zip(rows_out) {
                self.quantize_one(x, &mut smoothed, q, s, offsets);
            }
        }
        out
    }

    /// One row `x` (smoothed first, where the weight was; `smoothed` is scratch) quantized by
    /// [`quantize_row`] into `q` in the kernel's byte form ([`RowQuants`]), its step into `s`
    /// and its zero point and correction into `zero` and `correction`.
    fn quantize_one(
        &self,
        x: &[f32],
        smoothed: &mut Vec<f32>,
        q: &mut [u8],
        s: &mut f32,
        (zero, correction): (&mut i32, &mut i32),
    ) {
        let (k, signed) = (self.k, self.kernel.signed());
        let x = if self.unsmooth.is_empty() {
            x
        } else {
            smoothed.clear();
            smoothed.extend(x.iter().zip(&self.unsmooth).map(|(v, u)| v * u));
            &smoothed[..]
        };
        let (q, magnitudes) = q.split_at_mut(self.quads * QUAD);
        let (step, zero_point) = quantize_row(x, &mut q[..k], signed);
        // the padding quads: a zero activation
        let shift = if signed { 128 } else { 0 };
        q[k..].fill((zero_point - shift) as u8);
        // empty unless signed: there the bytes become their sign masks, beside their
        // magnitudes, and the padding counts too (its weights are zeros, but not once xored)
        let mut negative = 0;
        for (m, v) in magnitudes.iter_mut().zip(q.iter_mut()) {
            let a = *v as i8;
            *m = a.unsigned_abs();
            negative += if a < 0 { i32::from(*m) } else { 0 };
            *v = if a < 0 { 0xff } else { 0 };
        }
        *s = step;
        *zero = zero_point - shift;
        *correction = negative;
    }

    /// Rows `first ..` of `a` (as many as `out` holds) times every weight group, into `out`,
    /// every value of which it writes.
    fn chunk(&self, a: &RowQuants, first: usize, out: &mut [MaybeUninit<f32>]) {
        let width = self.n;
        let rows = out.len() / width;
        let groups = width.div_ceil(LANES);
        let row = |r: usize| &a.bytes[(first + r) * a.row_bytes..(first + r + 1) * a.row_bytes];
        let mut sums = [[0i32; 2 * LANES]; ROW_CHUNK];
        let mut g = 0;
        while g < groups {
            let pair = (groups - g).min(self.kernel.groups_per_pass());
            let w = &self.values[g * self.quads * QUAD_BYTES..];
            let cols = g * LANES..((g + pair) * LANES).min(width);
            // the weights of a slice of K_SLICE quads (12 KiB for two groups) stay in L1
            // while every row tile of the chunk passes over them
            for slice in (0..self.quads).step_by(K_SLICE) {
                let quads = slice..(slice + K_SLICE).min(self.quads);
                let mut r = 0;
                while r < rows {
                    let tile = (rows - r).min(self.kernel.row_tile());
                    let mut tile_rows: [&[u8]; ROW_TILE_MAX] = [&[]; ROW_TILE_MAX];
                    for (i, slot) in tile_rows[..tile].iter_mut().enumerate() {
                        *slot = row(r + i);
                    }
                    let sums = &mut sums[r..r + tile];
                    self.sums(w, g, pair, quads.clone(), &tile_rows[..tile], sums);
                    r += tile;
                }
            }
            let (weight_sum, weight_step) = (&self.sum[cols.clone()], &self.scale[cols.clone()]);
            for (i, sums) in sums[..rows].iter().enumerate() {
                let (step, zero) = (a.scale[first + i], a.zero[first + i]);
                let correction = a.correction[first + i];
                let out = &mut out[i * width..(i + 1) * width][cols.clone()];
                // slices zipped, not indexed, so that the loop vectorizes
                for (((out, &sum), &weight_sum), &weight_step) in
                    out.iter_mut().zip(sums).zip(weight_sum).zip(weight_step)
                {
                    out.write((sum + correction - zero * weight_sum) as f32 * (step * weight_step));
                }
            }
            g += pair;
        }
    }

    /// The integer products of `rows` (at most the kernel's tile) with `pair` weight groups
    /// from `w` (group `g` on) over `quads`, added to `sums[row][group · 16 + lane]` (set
    /// there by the first slice): exact, so their order does not matter.
    fn sums(
        &self,
        w: &[i8],
        g: usize,
        pair: usize,
        quads: std::ops::Range<usize>,
        rows: &[&[u8]],
        sums: &mut [[i32; 2 * LANES]],
    ) {
        debug_assert!(w.len() >= pair * self.quads * QUAD_BYTES);
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the kernel was chosen (or checked by the tests) to run on this CPU; `w` holds
        // `pair` groups of `quads` quads and each row `quads` quads (asserted in debug builds).
        unsafe {
            macro_rules! tiles {
                ($f:ident, $g:literal, $($n:literal)+) => {
                    match rows.len() {
                        $($n => $f::<$n, $g>(w, self.quads, quads.clone(), rows, sums),)+
                        _ => unreachable!("row tiles are at most the kernel's"),
                    }
                };
            }
            match (self.kernel, pair) {
                (Int8Kernel::Avx512Vnni, 2) => tiles!(sums_avx512_vnni, 2, 1 2 3 4 5 6 7 8),
                (Int8Kernel::Avx512Vnni, _) => tiles!(sums_avx512_vnni, 1, 1 2 3 4 5 6 7 8),
                (Int8Kernel::AvxVnni, _) => tiles!(sums_avx_vnni, 1, 1 2 3 4),
                (Int8Kernel::Avx2, _) => {
                    let order = &self.order[g * self.quads..(g + 1) * self.quads];
                    let paired = self.paired[g];
                    match rows.len() {
                        1 => sums_avx2::<1>(w, self.quads, quads, order, paired, rows, sums),
                        2 => sums_avx2::<2>(w, self.quads, quads, order, paired, rows, sums),
                        _ => unreachable!("row tiles are at most the kernel's"),
                    }
                }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (w, g, pair, quads, rows, sums);
            unreachable!("no int8 kernel runs off x86-64")
        }
    }
}

/// SmoothQuant's per-channel factors with its migration strength 0.5: `s_j = √(a_j / w_j)`,
/// `a_j` the activations' largest magnitude in channel `j`, `w_j` the weight column's. A
/// channel that never moved or a zero column keeps 1.
pub(crate) fn smoothing_factors(
    weight: &Tensor,
    activation_max: &[f32],
) -> candle_core::Result<Vec<f32>> {
    let (_, k) = weight.dims2()?;
    if activation_max.len() != k {
        candle_core::bail!(
            "int8 smoothing: {} activation maxima for a weight of width {k}",
            activation_max.len()
        );
    }
    let w = weight
        .to_dtype(DType::F32)?
        .flatten_all()?
        .to_vec1::<f32>()?;
    let mut column_max = vec![0f32; k];
    for row in w.chunks_exact(k.max(1)) {
        for (m, v) in column_max.iter_mut().zip(row) {
            *m = m.max(v.abs());
        }
    }
    Ok(activation_max
        .iter()
        .zip(&column_max)
        .map(|(&a, &w)| {
            let s = (a / w).sqrt();
            if a > 0.0 && w > 0.0 && s.is_finite() && s > 0.0 {
                s
            } else {
                1.0
            }
        })
        .collect())
}

/// `x` quantized to unsigned bytes over its own range (zero included, so that a zero is
/// exact): step `(max − min) / 255`, zero point `round(−min / step)`, each value
/// `round(x / step) + zero point` (to nearest, ties to even), clamped to 0..=255; stored minus
/// 128 as signed bytes where `signed`. Its step and zero point. Asymmetric because a GELU's
/// outputs (the last product's inputs) reach below zero only to −0.17: a symmetric range
/// would leave half its levels unused. The vector path does the same operations on every
/// value, so the bytes are the plain loop's.
fn quantize_row(x: &[f32], q: &mut [u8], signed: bool) -> (f32, i32) {
    let (low, high) = range(x);
    let step = (high - low) / LEVELS;
    let inverse = if step > 0.0 { 1.0 / step } else { 0.0 };
    let zero = (-low * inverse).round_ties_even().clamp(0.0, LEVELS) as i32;
    let flip = if signed { 0x80 } else { 0 };
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above); `q` is as long as `x`
        done = unsafe { quantize_avx2(x, q, inverse, zero, flip) };
    }
    for (q, &v) in q[done..].iter_mut().zip(&x[done..]) {
        *q = quantize_value(v, inverse, zero) ^ flip;
    }
    (step, zero)
}

/// Unsigned levels of an activation byte, less one.
const LEVELS: f32 = 255.0;

/// One value's byte: the plain rule [`quantize_avx2`] follows.
#[inline(always)]
fn quantize_value(v: f32, inverse: f32, zero: i32) -> u8 {
    ((v * inverse).round_ties_even() as i32 + zero).clamp(0, 255) as u8
}

/// The smallest and largest value of `x`, and zero (exact whatever the order).
fn range(x: &[f32]) -> (f32, f32) {
    let mut done = 0;
    let (mut low, mut high) = (0f32, 0f32);
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above)
        (low, high, done) = unsafe { range_avx2(x) };
    }
    for &v in &x[done..] {
        low = low.min(v);
        high = high.max(v);
    }
    (low, high)
}

/// [`range`] of the whole groups of 8 values of `x`, and how many values that was.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn range_avx2(x: &[f32]) -> (f32, f32, usize) {
    use std::arch::x86_64::*;
    let (mut low, mut high) = (_mm256_setzero_ps(), _mm256_setzero_ps());
    let whole = x.len() / 8 * 8;
    for at in (0..whole).step_by(8) {
        // SAFETY: at + 8 <= whole <= x.len()
        let v = unsafe { _mm256_loadu_ps(x.as_ptr().add(at)) };
        low = _mm256_min_ps(low, v);
        high = _mm256_max_ps(high, v);
    }
    let (mut lows, mut highs) = ([0f32; 8], [0f32; 8]);
    // SAFETY: both arrays hold 8 values
    unsafe {
        _mm256_storeu_ps(lows.as_mut_ptr(), low);
        _mm256_storeu_ps(highs.as_mut_ptr(), high);
    }
    let low = lows.iter().fold(0f32, |a, &v| a.min(v));
    let high = highs.iter().fold(0f32, |a, &v| a.max(v));
    (low, high, whole)
}

/// The whole groups of 32 values of [`quantize_row`] with AVX2; how many it did.
///
/// # Safety
/// The CPU must have AVX2; `q` must be at least as long as `x`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn quantize_avx2(x: &[f32], q: &mut [u8], inverse: f32, zero: i32, flip: u8) -> usize {
    use std::arch::x86_64::*;
    let scale = _mm256_set1_ps(inverse);
    let zero = _mm256_set1_epi32(zero);
    let flip = _mm256_set1_epi8(flip as i8);
    // packs interleave the 128-bit lanes: this puts the 32 bytes back in order
    let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    let whole = x.len() / 32 * 32;
    for at in (0..whole).step_by(32) {
        let level = |i: usize| {
            // SAFETY: at + i + 8 <= whole <= x.len()
            let v = _mm256_mul_ps(unsafe { _mm256_loadu_ps(x.as_ptr().add(at + i)) }, scale);
            // the default rounding mode: to nearest, ties to even (|v| ≤ 255.x: no overflow)
            _mm256_add_epi32(_mm256_cvtps_epi32(v), zero)
        };
        // the saturating packs clamp to 0..=255 as the plain rule does
        let words = _mm256_packs_epi32(level(0), level(8));
        let words_high = _mm256_packs_epi32(level(16), level(24));
        let bytes = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(words, words_high), order);
        // SAFETY: q holds at least `whole` bytes
        unsafe {
            _mm256_storeu_si256(q.as_mut_ptr().add(at).cast(), _mm256_xor_si256(bytes, flip))
        };
    }
    whole
}

/// The largest row tile of any kernel.
const ROW_TILE_MAX: usize = 8;
/// Quads of a row multiplied in one pass over a chunk's row tiles (384 values). Even, so that
/// no pair of AVX2's stored quads ([`pair_quads`]) straddles two slices.
const K_SLICE: usize = 96;

impl Int8Kernel {
    /// Activation rows that share each weight load: as many as the accumulators leave
    /// registers for (AVX-512: 8 rows by 2 groups, 16 of 32 zmm; AVX-VNNI: 4 rows by one group
    /// of two halves, 8 of 16 ymm). AVX2 takes 2: a pair of quads holds four weight halves
    /// and four broadcasts a row, and with 3 rows the compiler spilled an accumulator to the
    /// stack in the model's loop (alone, 2 rows ran at 139 GMAC/s and 3 at 134 on a Zen 5
    /// core).
    fn row_tile(self) -> usize {
        match self {
            Int8Kernel::Avx512Vnni => 8,
            Int8Kernel::AvxVnni => 4,
            Int8Kernel::Avx2 => 2,
        }
    }

    /// Weight groups one pass over a row tile multiplies.
    fn groups_per_pass(self) -> usize {
        match self {
            Int8Kernel::Avx512Vnni => 2,
            Int8Kernel::AvxVnni | Int8Kernel::Avx2 => 1,
        }
    }
}

/// The activation quad `c` of `row` as one 32-bit lane value.
///
/// # Safety
/// `row` holds at least `4c + 4` bytes.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn quad(row: &[u8], c: usize) -> i32 {
    // SAFETY: the caller's bound
    unsafe { std::ptr::read_unaligned(row.as_ptr().add(c * QUAD).cast::<i32>()) }
}

/// `R` rows times `G` groups with AVX-512 VNNI: per quad, `G` weight loads serve `R`
/// broadcasts, `R · G` accumulators.
///
/// # Safety
/// The CPU must have AVX-512F and AVX-512 VNNI; `w` must hold `G · quads` quads of 64 bytes
/// and each row `quads` quads of unsigned activation bytes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vnni")]
unsafe fn sums_avx512_vnni<const R: usize, const G: usize>(
    w: &[i8],
    stride: usize,
    quads: std::ops::Range<usize>,
    rows: &[&[u8]],
    sums: &mut [[i32; 2 * LANES]],
) {
    use std::arch::x86_64::*;
    let mut acc = [[_mm512_setzero_si512(); G]; R];
    if quads.start > 0 {
        for r in 0..R {
            for g in 0..G {
                // SAFETY: sums[r] holds 32 lanes, group g the 16 from g · 16
                acc[r][g] = unsafe { _mm512_loadu_si512(sums[r][g * LANES..].as_ptr().cast()) };
            }
        }
    }
    let base = w.as_ptr();
    for c in quads {
        let mut wv = [_mm512_setzero_si512(); G];
        for (g, wv) in wv.iter_mut().enumerate() {
            // SAFETY: quad c of group g is inside `w` (the caller's bound)
            *wv = unsafe { _mm512_loadu_si512(base.add((g * stride + c) * QUAD_BYTES).cast()) };
        }
        for r in 0..R {
            // SAFETY: row r holds `quads` quads
            let a = _mm512_set1_epi32(unsafe { quad(rows[r], c) });
            for g in 0..G {
                acc[r][g] = _mm512_dpbusd_epi32(acc[r][g], a, wv[g]);
            }
        }
    }
    for r in 0..R {
        for g in 0..G {
            // SAFETY: sums[r] holds 32 lanes, group g the 16 from g · 16
            unsafe { _mm512_storeu_si512(sums[r][g * LANES..].as_mut_ptr().cast(), acc[r][g]) };
        }
    }
}

/// [`sums_avx512_vnni`] on 256 bits with AVX-VNNI: each group is two halves of eight rows.
///
/// # Safety
/// The CPU must have AVX-VNNI; the bounds of [`sums_avx512_vnni`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avxvnni")]
unsafe fn sums_avx_vnni<const R: usize, const G: usize>(
    w: &[i8],
    stride: usize,
    quads: std::ops::Range<usize>,
    rows: &[&[u8]],
    sums: &mut [[i32; 2 * LANES]],
) {
    use std::arch::x86_64::*;
    let mut acc = load_halves::<R, G>(sums, quads.start > 0);
    let base = w.as_ptr();
    for c in quads {
        // SAFETY: quad c of each of the G groups is inside `w` (the caller's bound)
        let wv = unsafe { weight_halves::<G>(base, stride, c) };
        for r in 0..R {
            // SAFETY: row r holds `quads` quads
            let a = _mm256_set1_epi32(unsafe { quad(rows[r], c) });
            for g in 0..G {
                for h in 0..2 {
                    acc[r][g][h] = _mm256_dpbusd_avx_epi32(acc[r][g][h], a, wv[g][h]);
                }
            }
        }
    }
    store_halves(&acc, sums);
}

/// The integer sums with AVX2 alone, of activation bytes a stored minus 128. `vpmaddubsw`
/// multiplies unsigned bytes by signed ones, so it gets |a| and the weight with a's sign, and
/// `vpmaddwd` against ones widens and adds its 16-bit pairs. The sign is put on the weight by
/// an xor with a's sign mask (0xff where a < 0), which gives −w − 1, not −w: each negative
/// byte's sum comes out |a| short, the same for every weight row, and [`RowQuants`]' per-row
/// correction adds it back. The xor runs on any vector port where `vpsignb` (the exact
/// negation) competes with the multiplies: on a Zen 3 core the loop went from 70 to 81
/// GMAC/s (`avx2_loop_bounds`). Nothing saturates: a pair is at most 2 · 128 · 126 = 32,256
/// and at least 2 · 128 · (−128) = −32,768, both 16-bit values.
///
/// The quads stored first in a group, in pairs ([`pair_quads`]), have their two
/// `vpmaddubsw` results added in 16 bits and widened by one `vpmaddwd`: seven vector
/// instructions for two quads where the single loop takes eight, and three multiplies where
/// it takes four. Alone on a Zen 5 core that ran at 139 GMAC/s against the single loop's 122
/// (1.14×, `avx2_loop_bounds`); in all-MiniLM-L6-v2 at AVX2 it took 3% off the whole
/// process at every length (farm-bench, 5 alternated runs). Their weights were paired so that
/// the 16-bit sum of four products cannot overflow whatever the activations are; the quads no
/// pair fits take the single loop after them. The sums stay exact, so the bits are the other
/// kernels'. (Giving up a bit of the weights or activations instead, so that any two quads
/// pair, took all-MiniLM-L6-v2's lowest cosine on the calibration texts from 0.9989 to
/// 0.9895 or 0.9883, below the 0.99 int8 must keep.)
///
/// # Safety
/// The CPU must have AVX2; `w` must hold `stride` quads of 64 bytes, stored in `order`, and
/// each row `stride` quads of sign masks followed by as many of magnitudes; `quads` starts at
/// an even quad, `paired` is even and the stored quads before it form pairs that
/// [`pair_quads`] allowed.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sums_avx2<const R: usize>(
    w: &[i8],
    stride: usize,
    quads: std::ops::Range<usize>,
    order: &[u32],
    paired: usize,
    rows: &[&[u8]],
    sums: &mut [[i32; 2 * LANES]],
) {
    use std::arch::x86_64::*;
    let ones = _mm256_set1_epi16(1);
    let mut acc = load_halves::<R, 1>(sums, quads.start > 0);
    let base = w.as_ptr();
    let pairs_end = paired.clamp(quads.start, quads.end);
    for c in (quads.start..pairs_end).step_by(2) {
        // SAFETY: c + 1 < pairs_end <= quads.end <= order.len() (the caller's bound)
        let (first, second) = unsafe {
            (
                *order.get_unchecked(c) as usize,
                *order.get_unchecked(c + 1) as usize,
            )
        };
        // SAFETY: stored quads c and c + 1 are inside `w` (the caller's bound)
        let [wa] = unsafe { weight_halves::<1>(base, stride, c) };
        let [wb] = unsafe { weight_halves::<1>(base, stride, c + 1) };
        for r in 0..R {
            // SAFETY: row r holds `stride` quads of sign masks and as many of magnitudes;
            // `order` holds quads below `stride`
            let (negative_a, magnitude_a, negative_b, magnitude_b) = unsafe {
                (
                    _mm256_set1_epi32(quad(rows[r], first)),
                    _mm256_set1_epi32(quad(rows[r], stride + first)),
                    _mm256_set1_epi32(quad(rows[r], second)),
                    _mm256_set1_epi32(quad(rows[r], stride + second)),
                )
            };
            for h in 0..2 {
                let pairs = _mm256_add_epi16(
                    _mm256_maddubs_epi16(magnitude_a, _mm256_xor_si256(wa[h], negative_a)),
                    _mm256_maddubs_epi16(magnitude_b, _mm256_xor_si256(wb[h], negative_b)),
                );
                acc[r][0][h] = _mm256_add_epi32(acc[r][0][h], _mm256_madd_epi16(pairs, ones));
            }
        }
    }
    for (c, &at) in order.iter().enumerate().take(quads.end).skip(pairs_end) {
        let at = at as usize;
        // SAFETY: stored quad c is inside `w` (the caller's bound)
        let [wv] = unsafe { weight_halves::<1>(base, stride, c) };
        for r in 0..R {
            // SAFETY: as above
            let (negative, magnitude) = unsafe {
                (
                    _mm256_set1_epi32(quad(rows[r], at)),
                    _mm256_set1_epi32(quad(rows[r], stride + at)),
                )
            };
            for h in 0..2 {
                let flipped = _mm256_xor_si256(wv[h], negative);
                let pairs = _mm256_maddubs_epi16(magnitude, flipped);
                acc[r][0][h] = _mm256_add_epi32(acc[r][0][h], _mm256_madd_epi16(pairs, ones));
            }
        }
    }
    store_halves(&acc, sums);
}

/// The largest sum of four weight magnitudes, each plus one, that two quads' 16-bit pairs
/// may add up to: times an activation magnitude of at most 128, 128 · 255 = 32,640 fits 16
/// signed bits (xored, a weight w meets |a| as w or −w − 1, at most |w| + 1 either way).
const PAIR_BUDGET: u16 = 255;

/// A group's quads (`group`: `[quad][row of the group][QUAD]`) ordered for [`sums_avx2`]:
/// the quad each stored position takes, and how many of the first positions form pairs. Two
/// quads pair where, in every row and each half quad (the two values one 16-bit pair of
/// `vpmaddubsw` holds), their magnitudes plus one add up to at most [`PAIR_BUDGET`].
/// Greedy: the quad with the largest magnitudes first, with the first of the smallest ones
/// that fits it. On all-MiniLM-L6-v2's smoothed weights it pairs 98.7–100% of each
/// matrix's quads, where pairing them as they come would pair about 76%. Deterministic: it
/// reads only the weights.
fn pair_quads(group: &[i8]) -> (Vec<u32>, usize) {
    /// Partners tried per quad: the smallest-magnitude quads left, where a fit is likeliest.
    const TRIES: usize = 16;
    let quads = group.len() / QUAD_BYTES;
    // per quad: each lane's half-quad budget used (two halves of LANES rows)
    let used: Vec<[u16; 2 * LANES]> = group
        .chunks_exact(QUAD_BYTES)
        .map(|quad| {
            std::array::from_fn(|i| {
                let (lane, half) = (i / 2, i % 2);
                let at = lane * QUAD + half * 2;
                (quad[at].unsigned_abs() as u16 + 1) + (quad[at + 1].unsigned_abs() as u16 + 1)
            })
        })
        .collect();
    let largest = |c: usize| used[c].iter().copied().max().unwrap_or(0);
    let mut left: Vec<usize> = (0..quads).collect();
    left.sort_by_key(|&c| (largest(c), c));
    let (mut pairs, mut singles) = (Vec::new(), Vec::new());
    while let Some(c) = left.pop() {
        let fits = left.iter().take(TRIES).position(|&d| {
            used[c]
                .iter()
                .zip(&used[d])
                .all(|(a, b)| a + b <= PAIR_BUDGET)
        });
        match fits {
            Some(i) => {
                let d = left.remove(i);
                pairs.push((c.min(d), c.max(d)));
            }
            None => singles.push(c),
        }
    }
    // in activation order, which the kernel then reads forward
    pairs.sort_unstable();
    singles.sort_unstable();
    let paired = 2 * pairs.len();
    let order = pairs
        .into_iter()
        .flat_map(|(a, b)| [a, b])
        .chain(singles)
        .map(|c| c as u32)
        .collect();
    (order, paired)
}

/// Quad `c` of `G` weight groups `stride` quads apart from `base`, each as two 256-bit halves
/// (rows 0–7 and 8–15).
///
/// # Safety
/// The CPU must have AVX; the `G` quads of 64 bytes must be inside the weight `base` points
/// into.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn weight_halves<const G: usize>(
    base: *const i8,
    stride: usize,
    c: usize,
) -> [[std::arch::x86_64::__m256i; 2]; G] {
    use std::arch::x86_64::*;
    std::array::from_fn(|g| {
        // SAFETY: the caller's bound
        unsafe {
            let at = base.add((g * stride + c) * QUAD_BYTES);
            [
                _mm256_loadu_si256(at.cast()),
                _mm256_loadu_si256(at.add(32).cast()),
            ]
        }
    })
}

/// 256-bit accumulators (two halves of eight lanes per group): zeros, or `sums` to go on from.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn load_halves<const R: usize, const G: usize>(
    sums: &[[i32; 2 * LANES]],
    go_on: bool,
) -> [[[std::arch::x86_64::__m256i; 2]; G]; R] {
    use std::arch::x86_64::*;
    // SAFETY: setzero needs only AVX, which the callers' AVX2 implies
    let mut acc = [[[unsafe { _mm256_setzero_si256() }; 2]; G]; R];
    if go_on {
        for r in 0..R {
            for g in 0..G {
                for h in 0..2 {
                    // SAFETY: sums[r] holds 32 lanes; half h of group g is the 8 from
                    // g · 16 + 8h
                    acc[r][g][h] =
                        unsafe { _mm256_loadu_si256(sums[r][g * LANES + h * 8..].as_ptr().cast()) };
                }
            }
        }
    }
    acc
}

/// 256-bit accumulators (two halves of eight lanes per group) into `sums`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn store_halves<const R: usize, const G: usize>(
    acc: &[[[std::arch::x86_64::__m256i; 2]; G]; R],
    sums: &mut [[i32; 2 * LANES]],
) {
    use std::arch::x86_64::*;
    for r in 0..R {
        for g in 0..G {
            for h in 0..2 {
                // SAFETY: sums[r] holds 32 lanes; half h of group g is the 8 from g · 16 + 8h
                unsafe {
                    _mm256_storeu_si256(
                        sums[r][g * LANES + h * 8..].as_mut_ptr().cast(),
                        acc[r][g][h],
                    )
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use candle_core::Device;
    use rand::{Rng, SeedableRng};

    use super::*;

    /// A seeded weight and activations with a few large values and exact zeros (as after a
    /// layer norm and GELU).
    fn draw(n: usize, k: usize, rows: usize, seed: u64) -> (Tensor, Tensor) {
        let mut rng = sage_core::ExperimentRng::seed_from_u64(seed);
        let w: Vec<f32> = (0..n * k).map(|_| rng.gen_range(-0.1f32..0.1)).collect();
        let x: Vec<f32> = (0..rows * k)
            .map(|i| match i % 89 {
                0 => 6.0,
                1 => 0.0,
                _ => rng.gen_range(-2f32..2.),
            })
            .collect();
        (
            Tensor::from_vec(w, (n, k), &Device::Cpu).unwrap(),
            Tensor::from_vec(x, (rows, k), &Device::Cpu).unwrap(),
        )
    }

    /// The integer sums and float steps written out plainly: what every kernel must give,
    /// bit for bit.
    fn plain(w: &Tensor, x: &Tensor) -> Vec<f32> {
        let weights = |row: &[f32]| {
            let step = row.iter().fold(0f32, |a, &v| a.max(v.abs())) / QMAX;
            let inverse = if step > 0.0 { 1.0 / step } else { 0.0 };
            let q: Vec<i32> = row
                .iter()
                .map(|&v| (v * inverse).round_ties_even().clamp(-QMAX, QMAX) as i32)
                .collect();
            (q, step)
        };
        let activations = |row: &[f32]| {
            let low = row.iter().fold(0f32, |a, &v| a.min(v));
            let high = row.iter().fold(0f32, |a, &v| a.max(v));
            let step = (high - low) / 255.0;
            let inverse = if step > 0.0 { 1.0 / step } else { 0.0 };
            let zero = (-low * inverse).round_ties_even().clamp(0.0, 255.0) as i32;
            let q: Vec<i32> = row
                .iter()
                .map(|&v| ((v * inverse).round_ties_even() as i32 + zero).clamp(0, 255))
                .collect();
            (q, step, zero)
        };
        let (w, x) = (w.to_vec2::<f32>().unwrap(), x.to_vec2::<f32>().unwrap());
        let w: Vec<_> = w.iter().map(|r| weights(r)).collect();
        x.iter()
            .flat_map(|row| {
                let (a, step, zero) = activations(row);
                w.iter()
                    .map(move |(q, s)| {
                        let sum: i32 = a.iter().zip(q).map(|(a, q)| a * q).sum();
                        let sum_w: i32 = q.iter().sum();
                        (sum - zero * sum_w) as f32 * (step * s)
                    })
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Shapes: MiniLM's qkv and feed-forward layers, an odd width (a padded group, a lone
    /// group at the end, a width not a multiple of four), rows that do not fill a tile.
    const SHAPES: [(usize, usize, usize); 5] = [
        (1152, 384, 53),
        (384, 1536, 19),
        (48, 64, 9),
        (17, 30, 5),
        (5, 7, 1),
    ];

    /// Every int8 kernel this CPU runs; `None`, with a skip printed, where there is none.
    fn kernels_here() -> Option<Vec<Int8Kernel>> {
        let here: Vec<Int8Kernel> = Int8Kernel::ALL
            .into_iter()
            .filter(|k| k.runs_here())
            .collect();
        if here.is_empty() {
            sage_test_env::skip("int8 kernels", "no AVX2 on this CPU");
            return None;
        }
        Some(here)
    }

    #[test]
    fn every_kernel_here_gives_the_plain_sums_bit_for_bit() {
        let Some(here) = kernels_here() else {
            return;
        };
        for (i, (n, k, rows)) in SHAPES.into_iter().enumerate() {
            let (w, x) = draw(n, k, rows, 40 + i as u64);
            let want = plain(&w, &x);
            for &kernel in &here {
                let m = Int8Matrix::with_kernel(&w, None, kernel).unwrap();
                let got = m.product(&x).unwrap().flatten_all().unwrap();
                let got = got.to_vec1::<f32>().unwrap();
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                assert!(
                    bits(&got) == bits(&want),
                    "{} ({n}, {k}) x {rows}",
                    kernel.name()
                );
            }
        }
    }

    /// SmoothQuant's factors are √(activation range ÷ weight range) per channel, 1 where
    /// either is zero; a weight quantized with them and its activations divided by them is
    /// the same product, and on activations with an outlier channel a closer one.
    #[test]
    fn smoothing_moves_an_outlier_channel_into_the_weight() {
        let Some(kernel) = Int8Kernel::best() else {
            sage_test_env::skip("int8 smoothing", "no AVX2 on this CPU");
            return;
        };
        let w = Tensor::new(&[[0.5f32, -0.1, 0.0], [0.25, 0.2, 0.0]], &Device::Cpu).unwrap();
        let factors = smoothing_factors(&w, &[8.0, 0.2, 3.0]).unwrap();
        assert_eq!(factors, [4.0, 1.0, 1.0]);
        assert!(smoothing_factors(&w, &[1.0]).is_err());
        assert!(Int8Matrix::with_kernel(&w, Some(&[1.0, 0.0, 1.0]), kernel).is_err());
        // channel 0 of every token carries an outlier 40 times the rest
        let (n, k, rows) = (64, 384, 40);
        let (w, x) = draw(n, k, rows, 47);
        let mut values = x.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        for row in values.chunks_exact_mut(k) {
            row[0] = 80.0 * row[0].signum().max(0.5);
        }
        let x = Tensor::from_vec(values, (rows, k), &Device::Cpu).unwrap();
        let reference = x.matmul(&w.t().unwrap()).unwrap();
        let error = |m: &Int8Matrix| {
            let y = m.product(&x).unwrap();
            let d = (y - &reference).unwrap().sqr().unwrap().sum_all().unwrap();
            let norm = reference.sqr().unwrap().sum_all().unwrap();
            (d.to_scalar::<f32>().unwrap() / norm.to_scalar::<f32>().unwrap()).sqrt()
        };
        let maxima: Vec<f32> = (0..k)
            .map(|j| {
                let column = x.narrow(1, j, 1).unwrap().abs().unwrap();
                column.max_all().unwrap().to_scalar::<f32>().unwrap()
            })
            .collect();
        let plain = error(&Int8Matrix::with_kernel(&w, None, kernel).unwrap());
        let factors = smoothing_factors(&w, &maxima).unwrap();
        let smoothed = error(&Int8Matrix::with_kernel(&w, Some(&factors), kernel).unwrap());
        assert!(
            smoothed < plain / 2.0,
            "smoothed {smoothed:e}, plain {plain:e}"
        );
        assert!(smoothed < 1e-2, "{smoothed:e}");
    }

    /// What one core's AVX2 loops can do, data in L1, one thread: the bounds the int8 and f32
    /// speeds are read against (performance.md). GMAC/s of 3 rows × 16 outputs over 384
    /// values: the weights signed by `vpsignb` with |a| computed per row and quad (the kernel
    /// two changes ago) or read (the one before), the weights xored with a's sign mask (this
    /// kernel: the same instructions whatever bytes the mask holds), and unsigned bytes
    /// straight into `vpmaddubsw`, which may saturate (ONNX Runtime's AVX2 u8s8 loop, not
    /// exact); and GFLOP/s of twelve independent FMA chains (the float32 peak). A measurement
    /// to read (`--ignored --nocapture`), nothing asserted.
    #[cfg(target_arch = "x86_64")]
    #[test]
    #[ignore = "a measurement: numbers to read"]
    fn avx2_loop_bounds() {
        use std::arch::x86_64::*;
        if !std::is_x86_feature_detected!("avx2") || !std::is_x86_feature_detected!("fma") {
            sage_test_env::skip("avx2_loop_bounds", "no AVX2 and FMA on this CPU");
            return;
        }
        const QUADS: usize = 96;
        const ROWS: usize = 3;
        #[derive(Clone, Copy)]
        enum Loop {
            ComputedMagnitude,
            StoredMagnitude,
            SignMask,
            Saturating,
            PairedUnsigned,
        }
        #[target_feature(enable = "avx2")]
        fn sums(form: Loop, w: &[i8], a: &[[u8; 2 * QUADS * QUAD]; ROWS]) -> [i32; 8] {
            let ones = _mm256_set1_epi16(1);
            let mut acc = [[_mm256_setzero_si256(); 2]; ROWS];
            if matches!(form, Loop::PairedUnsigned) {
                for c in (0..QUADS).step_by(2) {
                    // SAFETY: w holds QUADS quads of 64 bytes, each row 2 · QUADS quads
                    unsafe {
                        let at = w.as_ptr().add(c * QUAD_BYTES);
                        let halves = [
                            [
                                _mm256_loadu_si256(at.cast()),
                                _mm256_loadu_si256(at.add(64).cast()),
                            ],
                            [
                                _mm256_loadu_si256(at.add(32).cast()),
                                _mm256_loadu_si256(at.add(96).cast()),
                            ],
                        ];
                        for (row, acc) in a.iter().zip(&mut acc) {
                            let m0 = _mm256_set1_epi32(quad(row, QUADS + c));
                            let m1 = _mm256_set1_epi32(quad(row, QUADS + c + 1));
                            for (acc, half) in acc.iter_mut().zip(&halves) {
                                let pairs = _mm256_add_epi16(
                                    _mm256_maddubs_epi16(m0, half[0]),
                                    _mm256_maddubs_epi16(m1, half[1]),
                                );
                                *acc = _mm256_add_epi32(*acc, _mm256_madd_epi16(pairs, ones));
                            }
                        }
                    }
                }
            } else {
                for c in 0..QUADS {
                    // SAFETY: w holds QUADS quads of 64 bytes, each row 2 · QUADS quads
                    unsafe {
                        let at = w.as_ptr().add(c * QUAD_BYTES);
                        let halves = [
                            _mm256_loadu_si256(at.cast()),
                            _mm256_loadu_si256(at.add(32).cast()),
                        ];
                        for (row, acc) in a.iter().zip(&mut acc) {
                            let signed = _mm256_set1_epi32(quad(row, c));
                            let magnitude = match form {
                                Loop::ComputedMagnitude => _mm256_sign_epi8(signed, signed),
                                Loop::SignMask => _mm256_set1_epi32(quad(row, QUADS + c)),
                                _ => _mm256_set1_epi32(quad(row, QUADS + c)),
                            };
                            for (acc, &half) in acc.iter_mut().zip(&halves) {
                                let weights = match form {
                                    Loop::Saturating => half,
                                    Loop::SignMask => _mm256_xor_si256(half, signed),
                                    _ => _mm256_sign_epi8(half, signed),
                                };
                                let pairs = _mm256_maddubs_epi16(magnitude, weights);
                                *acc = _mm256_add_epi32(*acc, _mm256_madd_epi16(pairs, ones));
                            }
                        }
                    }
                }
            }
            let mut out = [0i32; 8];
            let total = acc
                .iter()
                .flatten()
                .fold(_mm256_setzero_si256(), |t, &a| _mm256_add_epi32(t, a));
            // SAFETY: out holds 8 lanes
            unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), total) };
            out
        }
        #[target_feature(enable = "avx2,fma")]
        fn fma_chains(steps: usize) -> f32 {
            // opaque values, so that nothing is folded at compile time
            let m = _mm256_set1_ps(std::hint::black_box(0.999_9));
            let c = _mm256_set1_ps(std::hint::black_box(1e-4));
            let mut chains: [__m256; 12] =
                std::array::from_fn(|i| _mm256_set1_ps(std::hint::black_box(i as f32)));
            for _ in 0..steps {
                for chain in &mut chains {
                    *chain = _mm256_fmadd_ps(*chain, m, c);
                }
            }
            let mut lanes = [0f32; 8];
            let total = chains
                .iter()
                .fold(_mm256_setzero_ps(), |t, &v| _mm256_add_ps(t, v));
            // SAFETY: lanes holds 8 values
            unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), total) };
            lanes[0]
        }
        let mut rng = sage_core::ExperimentRng::seed_from_u64(27);
        let w: Vec<i8> = (0..QUADS * QUAD_BYTES)
            .map(|_| rng.gen_range(-127i8..=127))
            .collect();
        let mut a = [[0u8; 2 * QUADS * QUAD]; ROWS];
        for row in &mut a {
            let (signed, magnitude) = row.split_at_mut(QUADS * QUAD);
            for (s, m) in signed.iter_mut().zip(magnitude) {
                *s = rng.gen();
                *m = (*s as i8).unsigned_abs();
            }
        }
        const REPEATS: usize = 20_000;
        for (name, form) in [
            ("vpsignb, |a| computed (exact)", Loop::ComputedMagnitude),
            ("vpsignb, |a| stored (exact)", Loop::StoredMagnitude),
            (
                "xor with a's sign mask, |a| stored (the kernel; exact with its correction)",
                Loop::SignMask,
            ),
            ("unsigned, saturating (not exact)", Loop::Saturating),
            (
                "two quads added in int16, unsigned (exact only with 6-bit weights)",
                Loop::PairedUnsigned,
            ),
        ] {
            let seconds = crate::tests::fastest_seconds(7, || {
                for _ in 0..REPEATS {
                    // SAFETY: AVX2 was checked above
                    std::hint::black_box(unsafe {
                        sums(form, std::hint::black_box(&w), std::hint::black_box(&a))
                    });
                }
            });
            let macs = (REPEATS * ROWS * LANES * QUADS * QUAD) as f64;
            eprintln!("int8 AVX2 {name}: {:.1} GMAC/s", macs / seconds / 1e9);
        }
        // the kernel itself, over the same bytes, its quads all paired and all single
        let order: Vec<u32> = (0..QUADS as u32).collect();
        let rows: Vec<&[u8]> = a.iter().map(|r| &r[..]).collect();
        for (name, paired) in [
            ("sums_avx2, all paired", QUADS),
            ("sums_avx2, all single", 0),
        ] {
            for tile in [2usize, 3] {
                let mut out = [[0i32; 2 * LANES]; 3];
                let seconds = crate::tests::fastest_seconds(7, || {
                    for _ in 0..REPEATS {
                        // SAFETY: AVX2 was checked above; w holds QUADS quads, each row
                        // 2 · QUADS
                        unsafe {
                            match tile {
                                2 => sums_avx2::<2>(
                                    &w,
                                    QUADS,
                                    0..QUADS,
                                    &order,
                                    paired,
                                    &rows[..2],
                                    &mut out[..2],
                                ),
                                _ => sums_avx2::<3>(
                                    &w,
                                    QUADS,
                                    0..QUADS,
                                    &order,
                                    paired,
                                    &rows,
                                    &mut out,
                                ),
                            }
                        }
                        std::hint::black_box(&mut out);
                    }
                });
                let macs = (REPEATS * tile * LANES * QUADS * QUAD) as f64;
                eprintln!(
                    "int8 AVX2 {name}, {tile} rows: {:.1} GMAC/s",
                    macs / seconds / 1e9
                );
            }
        }
        let steps = 20_000_000;
        // SAFETY: AVX2 and FMA were checked above
        let seconds = crate::tests::fastest_seconds(7, || {
            std::hint::black_box(unsafe { fma_chains(std::hint::black_box(steps)) });
        });
        eprintln!(
            "f32 FMA peak (12 chains of 8 lanes): {:.1} GFLOP/s",
            (steps * 12 * 8 * 2) as f64 / seconds / 1e9
        );
    }

    /// The pairs at the 16-bit edge: activations at their row's minimum (byte 0, stored as
    /// −128) against weights at +127, which AVX2's xor turns into −128, so every
    /// `vpmaddubsw` pair is exactly −32,768; and against −127 (126 once xored). A kernel that
    /// saturated or lost the correction would differ from the plain sums.
    #[test]
    fn pairs_at_the_sixteen_bit_edge_are_exact() {
        let Some(here) = kernels_here() else {
            return;
        };
        let k = 70;
        let w: Vec<f32> = [0.1f32, -0.1, 0.05]
            .iter()
            .flat_map(|&v| std::iter::repeat_n(v, k))
            .collect();
        // rows of −1 with one +1 (bytes 0 and 255), of +1 with one −1, and a mixed row
        let mut x = vec![-1f32; k];
        x[k - 1] = 1.0;
        x.extend(std::iter::repeat_n(1f32, k - 1));
        x.push(-1.0);
        x.extend((0..k).map(|i| if i % 3 == 0 { 1.0 } else { -1.0 }));
        let w = Tensor::from_vec(w, (3, k), &Device::Cpu).unwrap();
        let x = Tensor::from_vec(x, (3, k), &Device::Cpu).unwrap();
        let want = plain(&w, &x);
        for &kernel in &here {
            let m = Int8Matrix::with_kernel(&w, None, kernel).unwrap();
            let got = m.product(&x).unwrap().flatten_all().unwrap();
            let got = got.to_vec1::<f32>().unwrap();
            assert_eq!(got, want, "{}", kernel.name());
        }
        // and the plain sums are the product: the row of −1s against 0.1s is −(k − 2) · 0.1
        assert!(
            (want[0] + (k as f32 - 2.0) * 0.1).abs() < 0.05,
            "{}",
            want[0]
        );
    }

    #[test]
    fn rows_quantized_as_they_are_produced_give_the_unfused_bits() {
        let Some(here) = kernels_here() else {
            return;
        };
        let (inner, width, out) = (40, 24, 9);
        let bias: Vec<f32> = (0..inner).map(|j| j as f32 * 0.03 - 0.5).collect();
        // a smoothed second weight: its quantization divides each channel first
        let factors: Vec<f32> = (0..inner).map(|j| 0.5 + (j % 4) as f32 * 0.75).collect();
        for &kernel in &here {
            // one row, a chunk less one, and two chunks and a part
            for (i, rows) in [1, ROW_CHUNK - 1, 2 * ROW_CHUNK + 5]
                .into_iter()
                .enumerate()
            {
                let (w1, x) = draw(inner, width, rows, 70 + i as u64);
                let (w2, _) = draw(out, inner, 1, 80 + i as u64);
                let first = Int8Matrix::with_kernel(&w1, None, kernel).unwrap();
                let second = Int8Matrix::with_kernel(&w2, Some(&factors), kernel).unwrap();
                for exact in [true, false] {
                    let unfused = crate::fused::bias_gelu(first.product(&x).unwrap(), &bias, exact)
                        .and_then(|inner| second.product(&inner))
                        .unwrap()
                        .flatten_all()
                        .unwrap()
                        .to_vec1::<f32>()
                        .unwrap();
                    let epilogue = crate::fused::Epilogue::BiasGelu { bias: &bias, exact };
                    let quantized = first.product_then_quantize(&x, &epilogue, &second).unwrap();
                    assert_eq!(quantized.rows(), rows);
                    let fused = second
                        .product_of_rows(&quantized)
                        .unwrap()
                        .flatten_all()
                        .unwrap()
                        .to_vec1::<f32>()
                        .unwrap();
                    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(
                        bits(&fused),
                        bits(&unfused),
                        "{kernel:?}, {rows} rows, exact GELU {exact}"
                    );
                    // the same shape, but another weight: refused
                    let other = Int8Matrix::with_kernel(&w2, Some(&factors), kernel).unwrap();
                    let refused = other.product_of_rows(&quantized).unwrap_err();
                    assert!(refused.to_string().contains("another weight"), "{refused}");
                }
                let narrow = Int8Matrix::with_kernel(&w1, None, kernel).unwrap();
                let epilogue = crate::fused::Epilogue::BiasGelu {
                    bias: &bias,
                    exact: true,
                };
                let mismatch = first
                    .product_then_quantize(&x, &epilogue, &narrow)
                    .err()
                    .expect("a product of width 40 cannot feed one of width 24");
                assert!(
                    mismatch.to_string().contains("feeds a product of width 24"),
                    "{mismatch}"
                );
            }
        }
    }

    /// A weight shaped like a trained one: most values near zero, one large value a row
    /// (which sets its scale), so that most quads pair and some do not.
    fn bell_weight(n: usize, k: usize, seed: u64) -> Tensor {
        let mut rng = sage_core::ExperimentRng::seed_from_u64(seed);
        let w: Vec<f32> = (0..n * k)
            .map(|i| match (i % k) % 53 {
                0 => 0.3,
                // every 5th row a run of large values, which no quad can pair with
                1..=4 if (i / k).is_multiple_of(5) => -0.28,
                _ => (0..3).map(|_| rng.gen_range(-0.05f32..0.05)).sum(),
            })
            .collect();
        Tensor::from_vec(w, (n, k), &Device::Cpu).unwrap()
    }

    /// Every pair [`pair_quads`] makes keeps the 16-bit budget in every row and half quad;
    /// its order holds each quad once; on a bell-shaped weight it pairs most quads but not
    /// the large ones; the same weight gives the same order.
    #[test]
    fn quads_pair_only_within_the_sixteen_bit_budget() {
        let (n, k) = (48, 384);
        let w = bell_weight(n, k, 7);
        let m = Int8Matrix::with_kernel(&w, None, Int8Kernel::Avx2).unwrap();
        let again = Int8Matrix::with_kernel(&w, None, Int8Kernel::Avx2).unwrap();
        assert_eq!(m.order, again.order);
        assert_eq!(m.values, again.values);
        let natural = Int8Matrix::with_kernel(&w, None, Int8Kernel::Avx512Vnni).unwrap();
        assert!(natural.order.is_empty() && natural.paired.is_empty());
        let quads = m.quads;
        let (mut paired, mut total) = (0, 0);
        for (g, group_order) in m.order.chunks_exact(quads).enumerate() {
            let mut seen = group_order.to_vec();
            seen.sort_unstable();
            assert_eq!(seen, (0..quads as u32).collect::<Vec<_>>(), "group {g}");
            let stored = &m.values[g * quads * QUAD_BYTES..][..quads * QUAD_BYTES];
            // the stored quads are the natural layout's, moved
            let original = &natural.values[g * quads * QUAD_BYTES..][..quads * QUAD_BYTES];
            for (position, &c) in group_order.iter().enumerate() {
                assert_eq!(
                    &stored[position * QUAD_BYTES..][..QUAD_BYTES],
                    &original[c as usize * QUAD_BYTES..][..QUAD_BYTES]
                );
            }
            let p = m.paired[g];
            assert_eq!(p % 2, 0);
            for pair in stored[..p * QUAD_BYTES].chunks_exact(2 * QUAD_BYTES) {
                for lane in 0..LANES {
                    for half in 0..2 {
                        let budget: u16 = [0, QUAD_BYTES]
                            .iter()
                            .flat_map(|&q| [0, 1].map(|i| q + lane * QUAD + half * 2 + i))
                            .map(|at| pair[at].unsigned_abs() as u16 + 1)
                            .sum();
                        assert!(budget <= PAIR_BUDGET, "group {g} lane {lane}: {budget}");
                    }
                }
            }
            paired += p;
            total += quads;
        }
        let share = paired as f64 / total as f64;
        assert!(share > 0.6 && share < 1.0, "{share}");
    }

    /// On bell-shaped weights (pairs and single quads in one group) and at the budget's edge
    /// (four products of 128 × 63 or 64 in one 16-bit sum), every kernel gives the plain
    /// sums bit for bit.
    #[test]
    fn paired_quads_give_the_plain_sums_bit_for_bit() {
        let Some(here) = kernels_here() else {
            return;
        };
        let (n, k, rows) = (40, 392, 7);
        let w = bell_weight(n, k, 9);
        let (_, x) = draw(n, k, rows, 11);
        // the edge: quads of 63s (half-quad budget 128) and of 63s and 62s (127), scale set
        // by a 127, so that their pairs use the whole budget of 255; the rows of −1s (each
        // byte 0, |a| = 128, its sign turning 63 into −64) make four products of −128 · 64,
        // −128 · 64, −128 · 64 and −128 · 63, −32,640 in one 16-bit sum
        let edge_k = 64;
        let edge: Vec<f32> = (0..16 * edge_k)
            .map(|i| {
                let (row, col) = (i / edge_k, i % edge_k);
                let v = match col {
                    0 => 127.0,
                    _ if col % 8 < 4 => 63.0,
                    _ => [63.0, 62.0, 62.0, 63.0][col % 4],
                };
                if row % 2 == 0 {
                    v
                } else {
                    -v
                }
            })
            .collect();
        let edge = Tensor::from_vec(edge, (16, edge_k), &Device::Cpu).unwrap();
        let edge_x: Vec<f32> = (0..3 * edge_k)
            .map(|i| match (i / edge_k, i % edge_k) {
                (0, c) if c == edge_k - 1 => 1.0,
                (0, _) => -1.0,
                (1, 0) => -1.0,
                (1, _) => 1.0,
                (_, c) if c % 3 == 0 => 1.0,
                _ => -1.0,
            })
            .collect();
        let edge_x = Tensor::from_vec(edge_x, (3, edge_k), &Device::Cpu).unwrap();
        let edge_pairs = Int8Matrix::with_kernel(&edge, None, Int8Kernel::Avx2).unwrap();
        let first_pair = &edge_pairs.values[..2 * QUAD_BYTES];
        let budget: u16 = [0, 1, QUAD_BYTES, QUAD_BYTES + 1]
            .iter()
            .map(|&at| first_pair[at].unsigned_abs() as u16 + 1)
            .sum();
        assert!(
            edge_pairs.paired[0] >= 2 && budget == PAIR_BUDGET,
            "{budget}"
        );
        for (w, x) in [(&w, &x), (&edge, &edge_x)] {
            let want = plain(w, x);
            for &kernel in &here {
                let m = Int8Matrix::with_kernel(w, None, kernel).unwrap();
                let got = m.product(x).unwrap().flatten_all().unwrap();
                assert_eq!(got.to_vec1::<f32>().unwrap(), want, "{}", kernel.name());
            }
        }
    }

    #[test]
    fn all_zero_rows_and_weights_give_zeros() {
        let Some(kernel) = Int8Kernel::best() else {
            sage_test_env::skip("int8 zeros", "no AVX2 on this CPU");
            return;
        };
        let w = Tensor::zeros((20, 32), DType::F32, &Device::Cpu).unwrap();
        let x = Tensor::ones((3, 32), DType::F32, &Device::Cpu).unwrap();
        let m = Int8Matrix::with_kernel(&w, None, kernel).unwrap();
        let y = m.product(&x).unwrap().flatten_all().unwrap();
        assert!(y.to_vec1::<f32>().unwrap().iter().all(|&v| v == 0.0));
        let y = m.product(&x.zeros_like().unwrap()).unwrap();
        assert!(y
            .flatten_all()
            .unwrap()
            .to_vec1::<f32>()
            .unwrap()
            .iter()
            .all(|&v| v == 0.0));
        // a weight of width zero: every output is an empty sum
        for kernel in kernels_here().unwrap_or_default() {
            let w = Tensor::zeros((20, 0), DType::F32, &Device::Cpu).unwrap();
            let x = Tensor::zeros((3, 0), DType::F32, &Device::Cpu).unwrap();
            let m = Int8Matrix::with_kernel(&w, None, kernel).unwrap();
            let y = m.product(&x).unwrap();
            assert_eq!(y.dims(), [3, 20], "{}", kernel.name());
            let y = y.flatten_all().unwrap().to_vec1::<f32>().unwrap();
            assert!(y.iter().all(|&v| v == 0.0), "{}", kernel.name());
        }
    }
}
