//! One (text, head) of [`crate::fused::fused_attention`] past
//! [`crate::fused::LOOP_MAX_TOKENS`] with AVX2 and FMA, in blocks of six queries: their scores
//! against every key, their softmax and their context, before the next six.
//!
//! Why: the two gemm calls per (text, head) this replaces ran at about two thirds of gemm's
//! efficiency on the dense layers (14% of an all-MiniLM-L6-v2 pass at 256 tokens on an AVX2
//! core, for 10% of its multiply-adds). Each call packs its operands for a product only 32
//! deep (a head's width), and the scores went through memory three more times between them
//! (scale, softmax, and gemm's packing of the weights as the second product's left side). Here
//! the keys and values are packed once per task, a block's scores (six rows of at most 2 KiB)
//! stay in L1 from their products to the context, the 1/√d scale is applied as they are
//! stored, and the softmax's division is one multiply per context value rather than per score.
//!
//! Numbers: each score is one FMA chain over the head's width in order, each context value one
//! over the keys in order, so a value does not depend on the vector width, the block a query
//! falls in, or the other texts of the batch.

use std::arch::x86_64::*;

/// Queries per block: six rows times two 8-lane vectors are 12 accumulators of the 16 ymm
/// registers, leaving the loaded keys (or values) and a broadcast.
const ROWS: usize = 6;
/// Keys per score tile, and context columns per pass: two 8-lane vectors.
const PANEL: usize = 16;

/// Whether [`attend`] runs here: the CPU has AVX2 and FMA (every x86-64-v3 build's target,
/// checked at run time for builds that lower it), and the head's width is whole vectors.
pub(crate) fn applies(head_dim: usize) -> bool {
    head_dim > 0
        && head_dim.is_multiple_of(8)
        && std::is_x86_feature_detected!("avx2")
        && std::is_x86_feature_detected!("fma")
}

/// One task's packed keys and values and its block of scores, reused from task to task.
#[derive(Default)]
pub(crate) struct HeadScratch {
    /// `[key panel][dimension][PANEL]`, the keys past the text's last zero.
    keys: Vec<f32>,
    /// `[column panel][key][PANEL]` (the last panel 8 wide where the head's width is an odd
    /// number of vectors).
    values: Vec<f32>,
    /// `[ROWS][padded keys]`.
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
/// `out + i · out_stride`, `head_dim` values).
///
/// # Safety
/// [`applies`]`(head.head_dim)`; `head.rows` holds `tokens` rows of `width` with the three
/// column ranges inside; `out` is valid for writes of those rows.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn attend(
    head: &Head,
    out: *mut f32,
    out_stride: usize,
    scratch: &mut HeadScratch,
) {
    let tokens = head.tokens;
    let padded = tokens.div_ceil(PANEL) * PANEL;
    // SAFETY: the caller's bounds
    unsafe { pack(head, padded, scratch) };
    if scratch.scores.len() < ROWS * padded {
        scratch.scores.resize(ROWS * padded, 0.0);
    }
    let mut first = 0;
    while first < tokens {
        let rows = (tokens - first).min(ROWS);
        let block = Block {
            head,
            first,
            padded,
            keys: &scratch.keys,
            values: &scratch.values,
        };
        // SAFETY: the caller's bounds; `scores` holds ROWS padded rows
        unsafe {
            let scores = scratch.scores.as_mut_ptr();
            match rows {
                1 => block.run::<1>(scores, out, out_stride),
                2 => block.run::<2>(scores, out, out_stride),
                3 => block.run::<3>(scores, out, out_stride),
                4 => block.run::<4>(scores, out, out_stride),
                5 => block.run::<5>(scores, out, out_stride),
                _ => block.run::<ROWS>(scores, out, out_stride),
            }
        }
        first += rows;
    }
}

/// The head's keys into `scratch.keys` (transposed, eight by eight, into panels of `PANEL`
/// keys, zeros past the last) and its values into `scratch.values` (column panels).
///
/// # Safety
/// As [`attend`]'s.
#[target_feature(enable = "avx2,fma")]
unsafe fn pack(head: &Head, padded: usize, scratch: &mut HeadScratch) {
    let (tokens, head_dim, width) = (head.tokens, head.head_dim, head.width);
    // every value is written below: the panels' keys, then the padding
    scratch.keys.resize(padded * head_dim, 0.0);
    let keys = scratch.keys.as_mut_ptr();
    let key_row = |j: usize| head.rows[j * width + head.keys..][..head_dim].as_ptr();
    let whole = tokens / 8 * 8;
    for j in (0..whole).step_by(8) {
        let panel = keys.wrapping_add(j / PANEL * head_dim * PANEL + j % PANEL);
        for d in (0..head_dim).step_by(8) {
            // SAFETY: keys j..j + 8 are rows of the text, d + 8 ≤ head_dim; the panel holds
            // head_dim rows of PANEL
            unsafe {
                let rows: [__m256; 8] =
                    std::array::from_fn(|i| _mm256_loadu_ps(key_row(j + i).add(d)));
                for (i, column) in transpose(rows).into_iter().enumerate() {
                    _mm256_storeu_ps(panel.add((d + i) * PANEL), column);
                }
            }
        }
    }
    for j in whole..padded {
        let panel = &mut scratch.keys[j / PANEL * head_dim * PANEL..][..head_dim * PANEL];
        for d in 0..head_dim {
            panel[d * PANEL + j % PANEL] = if j < tokens {
                head.rows[j * width + head.keys + d]
            } else {
                0.0
            };
        }
    }
    scratch.values.resize(tokens * head_dim, 0.0);
    let mut to = scratch.values.as_mut_ptr();
    for c in (0..head_dim).step_by(PANEL) {
        let wide = head_dim - c >= PANEL;
        for j in 0..tokens {
            // SAFETY: the row's values from column c, a whole panel (or one vector); `values`
            // holds tokens · head_dim, written panel by panel
            unsafe {
                let from = head.rows[j * width + head.values + c..].as_ptr();
                _mm256_storeu_ps(to, _mm256_loadu_ps(from));
                if wide {
                    _mm256_storeu_ps(to.add(8), _mm256_loadu_ps(from.add(8)));
                    to = to.add(PANEL);
                } else {
                    to = to.add(8);
                }
            }
        }
    }
}

/// The 8 × 8 transpose of `rows`.
#[target_feature(enable = "avx2")]
fn transpose(rows: [__m256; 8]) -> [__m256; 8] {
    let [r0, r1, r2, r3, r4, r5, r6, r7] = rows;
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

/// Queries `first ..` of a head, with its packed keys and values.
struct Block<'a> {
    head: &'a Head<'a>,
    first: usize,
    padded: usize,
    keys: &'a [f32],
    values: &'a [f32],
}

impl Block<'_> {
    /// `R` queries' scores, softmax and context.
    ///
    /// # Safety
    /// As [`attend`]'s; `scores` holds `R · padded` values.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn run<const R: usize>(&self, scores: *mut f32, out: *mut f32, out_stride: usize) {
        let head = self.head;
        let (tokens, head_dim, padded) = (head.tokens, head.head_dim, self.padded);
        let queries: [*const f32; R] = std::array::from_fn(|r| {
            head.rows[(self.first + r) * head.width + head.queries..][..head_dim].as_ptr()
        });
        let scale = _mm256_set1_ps(head.inverse_scale);
        for panel in 0..padded / PANEL {
            let keys = self.keys[panel * head_dim * PANEL..].as_ptr();
            let mut acc = [[_mm256_setzero_ps(); 2]; R];
            for d in 0..head_dim {
                // SAFETY: the panel holds head_dim rows of PANEL keys; each query head_dim
                // values
                unsafe {
                    let k = keys.add(d * PANEL);
                    let (k0, k1) = (_mm256_loadu_ps(k), _mm256_loadu_ps(k.add(8)));
                    for (acc, query) in acc.iter_mut().zip(&queries) {
                        let q = _mm256_broadcast_ss(&*query.add(d));
                        acc[0] = _mm256_fmadd_ps(q, k0, acc[0]);
                        acc[1] = _mm256_fmadd_ps(q, k1, acc[1]);
                    }
                }
            }
            for (r, acc) in acc.iter().enumerate() {
                // SAFETY: row r of the block's scores holds `padded` values
                unsafe {
                    let at = scores.add(r * padded + panel * PANEL);
                    _mm256_storeu_ps(at, _mm256_mul_ps(acc[0], scale));
                    _mm256_storeu_ps(at.add(8), _mm256_mul_ps(acc[1], scale));
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
            *inverse = crate::fused::exponentiate_in_place(row).recip();
        }
        for c in (0..head_dim).step_by(PANEL) {
            let values = self.values[c * tokens..].as_ptr();
            // SAFETY: the column panel from `c` holds `tokens` rows of its width
            unsafe {
                if head_dim - c >= PANEL {
                    self.context::<R, 2>(values, scores, &inverse_sums, out.add(c), out_stride);
                } else {
                    self.context::<R, 1>(values, scores, &inverse_sums, out.add(c), out_stride);
                }
            }
        }
    }

    /// `R` rows of `V` 8-lane vectors of context from a column panel of `values` and the
    /// block's exponentiated scores, each row times its inverse sum.
    ///
    /// # Safety
    /// As [`Block::run`]'s; `values` holds `tokens` rows of `8 · V` values.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn context<const R: usize, const V: usize>(
        &self,
        values: *const f32,
        scores: *const f32,
        inverse_sums: &[f32; R],
        out: *mut f32,
        out_stride: usize,
    ) {
        let mut acc = [[_mm256_setzero_ps(); V]; R];
        for j in 0..self.head.tokens {
            // SAFETY: row j of the panel; row r of the scores holds `tokens` values
            unsafe {
                let v: [__m256; V] =
                    std::array::from_fn(|h| _mm256_loadu_ps(values.add(j * 8 * V + 8 * h)));
                for (r, acc) in acc.iter_mut().enumerate() {
                    let p = _mm256_broadcast_ss(&*scores.add(r * self.padded + j));
                    for h in 0..V {
                        acc[h] = _mm256_fmadd_ps(p, v[h], acc[h]);
                    }
                }
            }
        }
        for (r, acc) in acc.iter().enumerate() {
            let inverse = _mm256_set1_ps(inverse_sums[r]);
            for (h, &acc) in acc.iter().enumerate() {
                // SAFETY: the block's row r of the output, 8 · V values from the panel's column
                unsafe {
                    _mm256_storeu_ps(
                        out.add((self.first + r) * out_stride + 8 * h),
                        _mm256_mul_ps(acc, inverse),
                    )
                };
            }
        }
    }
}
