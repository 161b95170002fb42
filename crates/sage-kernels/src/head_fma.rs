//! One (text, head) of `fused::fused_attention` with FMA, in blocks of queries (six
//! with AVX2, twelve with AVX-512): their scores against every key, their softmax and their
//! context, before the next block.
//!
//! Why: the two gemm calls per (text, head) this replaces ran at about two thirds of gemm's
//! efficiency on the dense layers (14% of an all-MiniLM-L6-v2 pass at 256 tokens on an AVX2
//! core, for 10% of its multiply-adds). Each call packs its operands for a product only 32
//! deep (a head's width), and the scores went through memory three more times between them
//! (scale, softmax, and gemm's packing of the weights as the second product's left side). Here
//! the keys and values are packed once per task, a block's scores (a few KiB) stay in L1 from their products to the context, the 1/√d scale is applied as they are
//! stored, and the softmax's division is one multiply per context value rather than per score.
//!
//! Numbers: each score is one FMA chain over the head's width in order, each context value one
//! over the keys in order, so a value does not depend on the vector width, the block a query
//! falls in, or the other texts of the batch (the 256- and 512-bit blocks give the same bits).
//!
//! One kernel at two widths: the [`Lanes`] operations, inlined into an entry compiled for AVX2
//! or for AVX-512. A portable version (fixed-size arrays and `mul_add`, left to LLVM's
//! vectoriser) ran at half the speed of these intrinsics and was dropped.

use std::arch::x86_64::*;

/// The vector width a head's blocks run at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Width {
    /// 256-bit AVX2 and FMA: six queries per block.
    Avx2,
    /// 512-bit AVX-512F: twelve queries per block.
    Avx512,
}

impl Width {
    /// The widest this CPU runs for heads `head_dim` wide (whole vectors: 8 values for AVX2, 16
    /// for AVX-512, where [`crate::wide_vectors`] and `allow_wide`), if any: AVX2 and FMA are
    /// every x86-64-v3 build's target, checked at run time for builds that lower it.
    pub(crate) fn widest(head_dim: usize, allow_wide: bool) -> Option<Width> {
        if head_dim == 0
            || !std::is_x86_feature_detected!("avx2")
            || !std::is_x86_feature_detected!("fma")
        {
            return None;
        }
        if allow_wide && head_dim.is_multiple_of(16) && crate::wide_vectors() {
            Some(Width::Avx512)
        } else if head_dim.is_multiple_of(8) {
            Some(Width::Avx2)
        } else {
            None
        }
    }
}

/// One task's packed keys and values and its block of scores, reused from task to task.
#[derive(Default)]
pub(crate) struct HeadScratch {
    /// `[key panel][dimension][panel]`, the keys past the text's last zero.
    keys: Vec<f32>,
    /// `[column panel][key][its columns]`: panels two vectors wide, the last one vector wide
    /// where the head's width is an odd number of vectors.
    values: Vec<f32>,
    /// `[rows of a block][padded keys]`.
    scores: Vec<f32>,
}

/// What one (text, head) task reads.
pub(crate) struct Head<'a> {
    /// The text's QKV rows, `width` apart.
    pub rows: &'a [f32],
    pub width: usize,
    pub tokens: usize,
    pub head_dim: usize,
    /// Columns of the head's queries, keys and values within a row.
    pub queries: usize,
    pub keys: usize,
    pub values: usize,
    pub inverse_scale: f32,
    /// The head's `[span, span]` score bias, and `span`.
    pub bias: Option<(&'a [f32], usize)>,
}

/// The head's context rows, softmax(q·kᵀ/√d + bias)·v, written to `out` (row i at
/// `out + i · out_stride`, `head_dim` values), with `width`'s blocks.
///
/// # Safety
/// `width` came from [`Width::widest`] for `head.head_dim`; `head.rows` holds `tokens` rows of
/// `width` with the three column ranges inside; `out` is valid for writes of those rows.
pub(crate) unsafe fn attend(
    width: Width,
    head: &Head,
    out: *mut f32,
    out_stride: usize,
    scratch: &mut HeadScratch,
) {
    // SAFETY: the caller's bounds; `widest` checked the CPU's features
    unsafe {
        match width {
            Width::Avx2 => attend_avx2(head, out, out_stride, scratch),
            Width::Avx512 => attend_avx512(head, out, out_stride, scratch),
        }
    }
}

/// [`attend`] at 256 bits.
///
/// # Safety
/// As [`attend`]'s, with AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
unsafe fn attend_avx2(head: &Head, out: *mut f32, out_stride: usize, scratch: &mut HeadScratch) {
    // SAFETY: the caller's
    unsafe { attend_with::<Avx2>(head, out, out_stride, scratch) }
}

/// [`attend`] at 512 bits.
///
/// # Safety
/// As [`attend`]'s, with AVX-512 F, BW, DQ and VL.
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
unsafe fn attend_avx512(head: &Head, out: *mut f32, out_stride: usize, scratch: &mut HeadScratch) {
    // SAFETY: the caller's
    unsafe { attend_with::<Avx512>(head, out, out_stride, scratch) }
}

/// The vector operations of the blocks at one width; inlined into an entry compiled for it.
trait Lanes {
    type V: Copy;
    /// f32 lanes of a vector.
    const LANES: usize;
    /// Queries per block: `ROWS` times two vectors of accumulators, with the two loaded
    /// vectors and a broadcast, fill the registers (16 ymm, 32 zmm).
    const ROWS: usize;
    unsafe fn zero() -> Self::V;
    unsafe fn load(at: *const f32) -> Self::V;
    unsafe fn store(at: *mut f32, v: Self::V);
    unsafe fn splat(at: *const f32) -> Self::V;
    unsafe fn fmadd(a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    unsafe fn mul(a: Self::V, b: Self::V) -> Self::V;
}

/// 256 bits.
struct Avx2;
/// 512 bits.
struct Avx512;

impl Lanes for Avx2 {
    type V = __m256;
    const LANES: usize = 8;
    const ROWS: usize = 6;
    #[inline(always)]
    unsafe fn zero() -> __m256 {
        // SAFETY: (all of these) the entry's features; the caller's pointers
        unsafe { _mm256_setzero_ps() }
    }
    #[inline(always)]
    unsafe fn load(at: *const f32) -> __m256 {
        unsafe { _mm256_loadu_ps(at) }
    }
    #[inline(always)]
    unsafe fn store(at: *mut f32, v: __m256) {
        unsafe { _mm256_storeu_ps(at, v) }
    }
    #[inline(always)]
    unsafe fn splat(at: *const f32) -> __m256 {
        unsafe { _mm256_broadcast_ss(&*at) }
    }
    #[inline(always)]
    unsafe fn fmadd(a: __m256, b: __m256, c: __m256) -> __m256 {
        unsafe { _mm256_fmadd_ps(a, b, c) }
    }
    #[inline(always)]
    unsafe fn mul(a: __m256, b: __m256) -> __m256 {
        unsafe { _mm256_mul_ps(a, b) }
    }
}

impl Lanes for Avx512 {
    type V = __m512;
    const LANES: usize = 16;
    const ROWS: usize = 12;
    #[inline(always)]
    unsafe fn zero() -> __m512 {
        // SAFETY: (all of these) the entry's features; the caller's pointers
        unsafe { _mm512_setzero_ps() }
    }
    #[inline(always)]
    unsafe fn load(at: *const f32) -> __m512 {
        unsafe { _mm512_loadu_ps(at) }
    }
    #[inline(always)]
    unsafe fn store(at: *mut f32, v: __m512) {
        unsafe { _mm512_storeu_ps(at, v) }
    }
    #[inline(always)]
    unsafe fn splat(at: *const f32) -> __m512 {
        unsafe { _mm512_set1_ps(*at) }
    }
    #[inline(always)]
    unsafe fn fmadd(a: __m512, b: __m512, c: __m512) -> __m512 {
        unsafe { _mm512_fmadd_ps(a, b, c) }
    }
    #[inline(always)]
    unsafe fn mul(a: __m512, b: __m512) -> __m512 {
        unsafe { _mm512_mul_ps(a, b) }
    }
}

/// [`attend`] with `S`'s vectors: pack, then the blocks.
///
/// # Safety
/// As [`attend`]'s; the entry's features are `S`'s.
#[inline(always)]
unsafe fn attend_with<S: Lanes>(
    head: &Head,
    out: *mut f32,
    out_stride: usize,
    scratch: &mut HeadScratch,
) {
    let tokens = head.tokens;
    let panel = 2 * S::LANES;
    let padded = tokens.div_ceil(panel) * panel;
    // SAFETY: the caller's bounds
    unsafe { pack(head, panel, padded, scratch) };
    if scratch.scores.len() < S::ROWS * padded {
        scratch.scores.resize(S::ROWS * padded, 0.0);
    }
    let mut first = 0;
    while first < tokens {
        let rows = (tokens - first).min(S::ROWS);
        let block = Block {
            head,
            first,
            padded,
            keys: &scratch.keys,
            values: &scratch.values,
        };
        let scores = scratch.scores.as_mut_ptr();
        // SAFETY: the caller's bounds; `scores` holds S::ROWS padded rows
        unsafe {
            macro_rules! rows {
                ($($r:literal)+) => {
                    match rows {
                        $($r => block.run::<S, $r>(scores, out, out_stride),)+
                        _ => unreachable!("a block has 1 to 12 rows"),
                    }
                };
            }
            rows!(1 2 3 4 5 6 7 8 9 10 11 12);
        }
        first += rows;
    }
}

/// The head's keys into `scratch.keys` (transposed, eight by eight, into panels of `panel`
/// keys, zeros past the last) and its values into `scratch.values` (column panels).
///
/// # Safety
/// As [`attend`]'s, with AVX2; `panel` is a multiple of 8, `padded` of `panel`.
#[inline(always)]
unsafe fn pack(head: &Head, panel: usize, padded: usize, scratch: &mut HeadScratch) {
    let (tokens, head_dim, width) = (head.tokens, head.head_dim, head.width);
    // every value is written below: the panels' keys, then the padding
    scratch.keys.resize(padded * head_dim, 0.0);
    let keys = scratch.keys.as_mut_ptr();
    let key_row = |j: usize| head.rows[j * width + head.keys..][..head_dim].as_ptr();
    let whole = tokens / 8 * 8;
    for j in (0..whole).step_by(8) {
        let at = keys.wrapping_add(j / panel * head_dim * panel + j % panel);
        for d in (0..head_dim).step_by(8) {
            // SAFETY: keys j..j + 8 are rows of the text, d + 8 ≤ head_dim; the panel holds
            // head_dim rows of `panel`
            unsafe {
                let rows: [__m256; 8] =
                    std::array::from_fn(|i| _mm256_loadu_ps(key_row(j + i).add(d)));
                for (i, column) in transpose(rows).into_iter().enumerate() {
                    _mm256_storeu_ps(at.add((d + i) * panel), column);
                }
            }
        }
    }
    for j in whole..padded {
        let keys = &mut scratch.keys[j / panel * head_dim * panel..][..head_dim * panel];
        for d in 0..head_dim {
            keys[d * panel + j % panel] = if j < tokens {
                head.rows[j * width + head.keys + d]
            } else {
                0.0
            };
        }
    }
    scratch.values.resize(tokens * head_dim, 0.0);
    let mut to = scratch.values.as_mut_ptr();
    for c in (0..head_dim).step_by(panel) {
        let columns = (head_dim - c).min(panel);
        for j in 0..tokens {
            let from = head.rows[j * width + head.values + c..][..columns].as_ptr();
            for k in (0..columns).step_by(8) {
                // SAFETY: the row's `columns` values from column c (a multiple of 8);
                // `values` holds tokens · head_dim, written panel by panel
                unsafe { _mm256_storeu_ps(to.add(k), _mm256_loadu_ps(from.add(k))) };
            }
            to = to.wrapping_add(columns);
        }
    }
}

/// The 8 × 8 transpose of `rows`.
#[inline(always)]
unsafe fn transpose(rows: [__m256; 8]) -> [__m256; 8] {
    let [r0, r1, r2, r3, r4, r5, r6, r7] = rows;
    // SAFETY: the callers' AVX2
    unsafe {
        let (t0, t1) = (_mm256_unpacklo_ps(r0, r1), _mm256_unpackhi_ps(r0, r1));
        let (t2, t3) = (_mm256_unpacklo_ps(r2, r3), _mm256_unpackhi_ps(r2, r3));
        let (t4, t5) = (_mm256_unpacklo_ps(r4, r5), _mm256_unpackhi_ps(r4, r5));
        let (t6, t7) = (_mm256_unpacklo_ps(r6, r7), _mm256_unpackhi_ps(r6, r7));
        let s0 = _mm256_shuffle_ps::<0x44>(t0, t2);
        let s1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
        let s2 = _mm256_shuffle_ps::<0x44>(t1, t3);
        let s3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
        let s4 = _mm256_shuffle_ps::<0x44>(t4, t6);
        let s5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
        let s6 = _mm256_shuffle_ps::<0x44>(t5, t7);
        let s7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
        [
            _mm256_permute2f128_ps::<0x20>(s0, s4),
            _mm256_permute2f128_ps::<0x20>(s1, s5),
            _mm256_permute2f128_ps::<0x20>(s2, s6),
            _mm256_permute2f128_ps::<0x20>(s3, s7),
            _mm256_permute2f128_ps::<0x31>(s0, s4),
            _mm256_permute2f128_ps::<0x31>(s1, s5),
            _mm256_permute2f128_ps::<0x31>(s2, s6),
            _mm256_permute2f128_ps::<0x31>(s3, s7),
        ]
    }
}

/// Queries `first ..` of a head, with its packed keys and values.
struct Block<'a> {
    head: &'a Head<'a>,
    first: usize,
    padded: usize,
    keys: &'a [f32],
    values: &'a [f32],
}

impl Block<'_> {
    /// `R` queries' scores, softmax and context with `S`'s vectors.
    ///
    /// # Safety
    /// As [`attend`]'s; `scores` holds `R · padded` values; the entry's features are `S`'s.
    #[inline(always)]
    unsafe fn run<S: Lanes, const R: usize>(
        &self,
        scores: *mut f32,
        out: *mut f32,
        out_stride: usize,
    ) {
        let head = self.head;
        let (tokens, head_dim, padded) = (head.tokens, head.head_dim, self.padded);
        let (lanes, panel) = (S::LANES, 2 * S::LANES);
        let queries: [*const f32; R] = std::array::from_fn(|r| {
            head.rows[(self.first + r) * head.width + head.queries..][..head_dim].as_ptr()
        });
        // SAFETY: (the loops) the panels hold head_dim rows of `panel` keys, each query
        // head_dim values, row r of the block's scores `padded` values
        unsafe {
            let scale = S::splat(&head.inverse_scale);
            for p in 0..padded / panel {
                let keys = self.keys[p * head_dim * panel..].as_ptr();
                let mut acc = [[S::zero(); 2]; R];
                for d in 0..head_dim {
                    let k = keys.add(d * panel);
                    let (k0, k1) = (S::load(k), S::load(k.add(lanes)));
                    for (acc, query) in acc.iter_mut().zip(&queries) {
                        let q = S::splat(query.add(d));
                        acc[0] = S::fmadd(q, k0, acc[0]);
                        acc[1] = S::fmadd(q, k1, acc[1]);
                    }
                }
                for (r, acc) in acc.iter().enumerate() {
                    let at = scores.add(r * padded + p * panel);
                    S::store(at, S::mul(acc[0], scale));
                    S::store(at.add(lanes), S::mul(acc[1], scale));
                }
            }
        }
        let mut inverse_sums = [0f32; R];
        for (r, inverse) in inverse_sums.iter_mut().enumerate() {
            // SAFETY: row r of the block's scores, its first `tokens` values written above
            let row = unsafe { std::slice::from_raw_parts_mut(scores.add(r * padded), tokens) };
            if let Some((bias, span)) = head.bias {
                for (s, b) in row
                    .iter_mut()
                    .zip(&bias[(self.first + r) * span..][..tokens])
                {
                    *s += b;
                }
            }
            *inverse = crate::vector_math::exponentiate_in_place(row).recip();
        }
        for c in (0..head_dim).step_by(panel) {
            let values = self.values[c * tokens..].as_ptr();
            // SAFETY: the column panel from `c` holds `tokens` rows of its width
            unsafe {
                if head_dim - c >= panel {
                    self.context::<S, R, 2>(values, scores, &inverse_sums, out.add(c), out_stride);
                } else {
                    self.context::<S, R, 1>(values, scores, &inverse_sums, out.add(c), out_stride);
                }
            }
        }
    }

    /// `R` rows of `V` vectors of context from a column panel of `values` and the block's
    /// exponentiated scores, each row times its inverse sum.
    ///
    /// # Safety
    /// As [`Block::run`]'s; `values` holds `tokens` rows of `V` vectors.
    #[inline(always)]
    unsafe fn context<S: Lanes, const R: usize, const V: usize>(
        &self,
        values: *const f32,
        scores: *const f32,
        inverse_sums: &[f32; R],
        out: *mut f32,
        out_stride: usize,
    ) {
        let lanes = S::LANES;
        // SAFETY: row j of the panel; row r of the scores holds `tokens` values; the block's
        // row r of the output, V vectors from the panel's column
        unsafe {
            let mut acc = [[S::zero(); V]; R];
            for j in 0..self.head.tokens {
                let v: [S::V; V] =
                    std::array::from_fn(|h| S::load(values.add((j * V + h) * lanes)));
                for (r, acc) in acc.iter_mut().enumerate() {
                    let p = S::splat(scores.add(r * self.padded + j));
                    for h in 0..V {
                        acc[h] = S::fmadd(p, v[h], acc[h]);
                    }
                }
            }
            for (r, acc) in acc.iter().enumerate() {
                let inverse = S::splat(&inverse_sums[r]);
                for (h, &acc) in acc.iter().enumerate() {
                    S::store(
                        out.add((self.first + r) * out_stride + h * lanes),
                        S::mul(acc, inverse),
                    );
                }
            }
        }
    }
}
