//! Dense products on Intel AMX tiles, accurate to a few float32 roundings.
//!
//! Why: at window length (256–512 tokens) an encoder's time is its dense products, and gemm's
//! float32 kernels already run them near the cores' FMA peak, so float32 FMA cannot make them
//! faster. Sapphire Rapids and later have AMX: 8 tile registers and a bf16 dot product that does
//! 16 × 16 × 32 multiply-adds per instruction, several times the float32 FMA rate.
//!
//! bf16 alone keeps 8 bits of a value, far from float32's 24. So each operand is split into two
//! bf16 halves, `x ≈ hi + lo` (`hi` the nearest bf16, `lo` the nearest bf16 to what `hi` missed:
//! 16 bits between them), and a product takes three bf16 products, `hi·hi + lo·hi + hi·lo`,
//! accumulated in float32 by the tile unit; the dropped `lo·lo` term and the splits' remainders
//! are ~2⁻¹⁶ of each term. Measured against float64 on the encoders' shapes: 4e-7 – 1.3e-6 of a
//! row's absolute sum, against 6e-8 – 3.5e-7 for gemm's float32 (both far inside the 1e-4 the
//! golden tests allow against sentence-transformers).
//!
//! Operands are packed as `[hi, lo]` tiles per 32 values of k: the weights once, when the model
//! loads ([`PackedWeight`]: as many bytes as their float32), each product's input rows a group at
//! a time (each 16 × 32 tile's rows contiguous, so a tile is one 1 KiB read). Per 32 values of k
//! the kernel loads the rows' `lo` tiles and the weight's `hi` tiles (4 products), then the
//! rows' `hi` (4 more, with the weight's `hi`), then the weight's `lo` (4 more): 8 tile loads
//! for 12 products, each tile loaded once.
//!
//! Loads, not products, bound the kernel. Tile registers are not renamed, so a load into a
//! register an earlier product still reads waits for that product. Measured here, one core: 12
//! products alone run at 2.4–2.7 TFLOP/s, and with their 8 loads from L1 mostly at 0.5–0.7
//! (the two cores' neighbours move it). An earlier order loaded the rows' `hi` twice (10 loads);
//! loading each tile once was 5–14% faster on the encoders' shapes (best of 25, alternated).
//!
//! The attention's query–key products of a text past 64 tokens run here too ([`head_scores`]):
//! the queries packed as rows, the keys as a weight. Its weights-times-values product stays on
//! float32: the weights would have to be split first, and at head width 32 that split costs
//! more per weight than the float32 product it would replace.
//!
//! The splits round with AVX512-BF16's `vcvtne2ps2bf16`, 32 values per instruction: every CPU
//! with AMX-BF16 has it. Rounding with integer arithmetic was 7–9% of a window-length profile.
//!
//! Every output element sums the same terms in the same order whatever the batch, the thread
//! count or the row's place in the batch: a text's vector does not depend on what it is batched
//! with. It does depend on the CPU: without AMX (or with `SAGE_AMX=0`) gemm's float32 runs.
//! Non-finite inputs give non-finite outputs, as in float32 (an infinity may come out as NaN).

use std::arch::asm;
use std::cell::RefCell;
use std::sync::OnceLock;

use rayon::prelude::*;

/// A tile's rows (of `x`, of the output) and a tile row's bf16 values.
const TILE_ROWS: usize = 16;
const TILE_K: usize = 32;
/// u16 values in one 16 × 32 tile (1 KiB).
const TILE_VALUES: usize = TILE_ROWS * TILE_K;
/// Output columns of one kernel call: two tiles side by side.
const BLOCK_COLUMNS: usize = 2 * TILE_ROWS;
/// Output rows of one kernel call: two tiles stacked.
const BLOCK_ROWS: usize = 2 * TILE_ROWS;

/// u16 values of one 16-row (or 16-column) tile strip across k: a `hi` and a `lo` tile per chunk.
const fn strip_values(chunks: usize) -> usize {
    chunks * 2 * TILE_VALUES
}
/// Rows of `x` one worker packs and multiplies by the whole weight before moving on: their
/// packed tiles (≤ 1.5 MiB at k = 3,072) stay in the core's L2 meanwhile.
const ROW_GROUP: usize = 4 * BLOCK_ROWS;

/// Whether products run on AMX here: the CPU has AMX-BF16 (and AVX512-BF16, for the splits),
/// Linux lets this process use the tile data, and `SAGE_AMX` is not `0`. Asked once per
/// process.
pub(crate) fn available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        std::env::var("SAGE_AMX").map_or(true, |v| v != "0")
            && crate::cpu::allows(crate::cpu::Level::Native)
            && crate::cpu::amx_detected()
            && std::arch::is_x86_feature_detected!("avx512bf16")
            && tiles_permitted()
    })
}

/// Linux (5.16+) hands out the 8 KiB of tile state only to processes that ask for it.
fn tiles_permitted() -> bool {
    const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
    const XFEATURE_XTILEDATA: libc::c_long = 18;
    // SAFETY: a request for a permission; it changes nothing else and fails on older kernels.
    unsafe {
        libc::syscall(
            libc::SYS_arch_prctl,
            ARCH_REQ_XCOMP_PERM,
            XFEATURE_XTILEDATA,
        ) == 0
    }
}

/// Values `32·chunk ..` of `row` (zero past its end) as two tile rows: `[hi, lo]`, `hi` the
/// bf16 nearest to each value (ties to even), `lo` the bf16 nearest to what `hi` missed.
///
/// With AVX512-BF16 (every CPU with AMX-BF16 has it; [`available`] checks) one instruction
/// rounds 32 values: the split with integer rounding was 7–9% of a window-length profile. The
/// instruction treats subnormal inputs (below 1.2e-38) as zero, which no product here can
/// tell from their exact value.
///
/// Callers without these target features call it only where [`available`] said so.
#[inline]
#[target_feature(enable = "avx512f,avx512bf16")]
fn split_chunk(row: &[f32], chunk: usize) -> [[u16; TILE_K]; 2] {
    use std::arch::x86_64::*;
    let mut values = [0f32; TILE_K];
    let start = chunk * TILE_K;
    // a whole chunk is a copy of constant length, inlined; a runtime length is a memmove call
    // per 32 values (9% of a window-length profile in a version that also split the
    // attention's weights)
    match row.get(start..start + TILE_K) {
        Some(whole) => values.copy_from_slice(whole),
        None => {
            let have = row.len().saturating_sub(start);
            values[..have].copy_from_slice(&row[start.min(row.len())..]);
        }
    }
    let mut halves = [[0u16; TILE_K]; 2];
    // SAFETY: unaligned loads and stores of 32 values inside `values` and `halves`; the
    // bf16 vectors are 32 u16 each, as __m512i is
    unsafe {
        let first = _mm512_loadu_ps(values.as_ptr());
        let second = _mm512_loadu_ps(values.as_ptr().add(16));
        let hi: __m512i = std::mem::transmute(_mm512_cvtne2ps_pbh(second, first));
        // a bf16 is the upper half of the float32 it stands for
        let first_hi = _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(
            _mm512_castsi512_si256(hi),
        )));
        let second_hi = _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(
            _mm512_extracti64x4_epi64::<1>(hi),
        )));
        let lo: __m512i = std::mem::transmute(_mm512_cvtne2ps_pbh(
            _mm512_sub_ps(second, second_hi),
            _mm512_sub_ps(first, first_hi),
        ));
        _mm512_storeu_si512(halves[0].as_mut_ptr().cast(), hi);
        _mm512_storeu_si512(halves[1].as_mut_ptr().cast(), lo);
    }
    halves
}

/// A dense layer's weight [n, k] in the tile layout the kernel reads as its right-hand side:
/// for each 16 output columns and each 32 values of k (zero past k), a `hi` tile then a `lo`
/// tile, each 16 rows of the 16 columns' values at two consecutive k (bf16 pairs, the layout
/// `tdpbf16ps` multiplies).
pub struct PackedWeight {
    n: usize,
    k: usize,
    /// 32-value chunks of k: the kernel's steps.
    chunks: usize,
    values: Vec<u16>,
}

impl PackedWeight {
    /// `weight` [n, k] row-major; `None` where n is not a multiple of 32 (gemm runs those).
    pub(crate) fn of(weight: &[f32], n: usize, k: usize) -> Option<PackedWeight> {
        if !available()
            || n == 0
            || k == 0
            || !n.is_multiple_of(BLOCK_COLUMNS)
            || weight.len() != n * k
        {
            return None;
        }
        let chunks = k.div_ceil(TILE_K);
        let column_tiles = n / TILE_ROWS;
        let mut values = vec![0u16; column_tiles * strip_values(chunks)];
        values
            .par_chunks_mut(strip_values(chunks))
            .enumerate()
            .for_each(|(tile, strip)| {
                let row = |column: usize| &weight[(tile * TILE_ROWS + column) * k..][..k];
                // SAFETY: `available` said this CPU has AVX512-BF16
                unsafe { pack_columns(row, chunks, strip) };
            });
        Some(PackedWeight {
            n,
            k,
            chunks,
            values,
        })
    }

    /// The output width.
    pub(crate) fn n(&self) -> usize {
        self.n
    }

    /// The input width.
    pub(crate) fn k(&self) -> usize {
        self.k
    }
}

/// One column tile of a right-hand operand: columns `column(0)` .. `column(15)` (each its k
/// values; zero past their end) as a `strip` of `chunks` × `[hi, lo]` tiles.
///
/// A tile row holds one pair of consecutive k for each of the 16 columns, so a tile is the
/// transpose of the 16 columns' split halves read as 16 × 16 bf16 pairs: a 16 × 16 transpose
/// of 32-bit lanes in 64 shuffles. Writing the 1,024 halves one by one (as an earlier version
/// did) was 3.4% of a window-length profile, through the keys the attention's scores pack.
#[target_feature(enable = "avx512f,avx512bf16")]
fn pack_columns<'a>(column: impl Fn(usize) -> &'a [f32], chunks: usize, strip: &mut [u16]) {
    use std::arch::x86_64::*;
    let columns: [&[f32]; TILE_ROWS] = std::array::from_fn(column);
    for chunk in 0..chunks {
        let halves: [[[u16; TILE_K]; 2]; TILE_ROWS] =
            std::array::from_fn(|c| split_chunk(columns[c], chunk));
        for part in 0..2 {
            let tile = &mut strip[(2 * chunk + part) * TILE_VALUES..][..TILE_VALUES];
            // SAFETY: each load reads one column's 32 halves (64 bytes) and each store writes
            // one 64-byte tile row inside `tile`
            unsafe {
                let rows: [__m512i; TILE_ROWS] =
                    std::array::from_fn(|c| _mm512_loadu_si512(halves[c][part].as_ptr().cast()));
                for (p, row) in transpose_16x16(rows).iter().enumerate() {
                    _mm512_storeu_si512(tile[p * TILE_K..].as_mut_ptr().cast(), *row);
                }
            }
        }
    }
}

/// The transpose of a 16 × 16 matrix of 32-bit values, one row per vector: pairs of rows
/// interleaved by 32 then 64 bits leave each 128-bit lane holding four rows of one column, and
/// two rounds of lane shuffles gather a column's four lanes.
#[inline]
#[target_feature(enable = "avx512f")]
fn transpose_16x16(rows: [std::arch::x86_64::__m512i; 16]) -> [std::arch::x86_64::__m512i; 16] {
    use std::arch::x86_64::*;
    // pairs: lane L of `paired[2i]` is rows 2i, 2i+1 at columns 4L, 4L+1; of `paired[2i+1]`,
    // the same rows at columns 4L+2, 4L+3
    let paired: [__m512i; 16] = std::array::from_fn(|i| {
        let (a, b) = (rows[i & !1], rows[i | 1]);
        if i % 2 == 0 {
            _mm512_unpacklo_epi32(a, b)
        } else {
            _mm512_unpackhi_epi32(a, b)
        }
    });
    // quads: lane L of `quads[4g + j]` is rows 4g..4g+3 of column 4L + j
    let quads: [__m512i; 16] = std::array::from_fn(|i| {
        let (g, j) = (i / 4, i % 4);
        let (a, b) = (paired[4 * g + j / 2], paired[4 * g + 2 + j / 2]);
        if j % 2 == 0 {
            _mm512_unpacklo_epi64(a, b)
        } else {
            _mm512_unpackhi_epi64(a, b)
        }
    });
    // column 4L + j: lane L of quads[j], quads[4 + j], quads[8 + j], quads[12 + j], in order
    std::array::from_fn(|column| {
        let (lane, j) = (column / 4, column % 4);
        let (a, b, c, d) = (quads[j], quads[4 + j], quads[8 + j], quads[12 + j]);
        let (ab, cd) = if lane < 2 {
            (
                _mm512_shuffle_i32x4::<0x44>(a, b),
                _mm512_shuffle_i32x4::<0x44>(c, d),
            )
        } else {
            (
                _mm512_shuffle_i32x4::<0xEE>(a, b),
                _mm512_shuffle_i32x4::<0xEE>(c, d),
            )
        };
        if lane % 2 == 0 {
            _mm512_shuffle_i32x4::<0x88>(ab, cd)
        } else {
            _mm512_shuffle_i32x4::<0xDD>(ab, cd)
        }
    })
}

/// Sizes `tiles` for `count` left-hand rows of `chunks` 32-value chunks, rounded up to 32 rows.
/// The padding rows past the last keep whatever was there before: an output row of a tile
/// product reads only its own input row, and the padding rows' outputs are cut off.
fn size_rows(tiles: &mut Vec<u16>, count: usize, chunks: usize) {
    tiles.resize(count.div_ceil(BLOCK_ROWS) * 2 * strip_values(chunks), 0);
}

/// Left-hand row `index`, `row` (zero past its end), into `tiles` sized by [`size_rows`]: for
/// each 16 rows and each 32 values of k, a `hi` tile then a `lo` tile.
#[inline]
#[target_feature(enable = "avx512f,avx512bf16")]
fn pack_row(row: &[f32], index: usize, chunks: usize, tiles: &mut [u16]) {
    let (tile_row, within) = (index / TILE_ROWS, index % TILE_ROWS);
    let base = tile_row * strip_values(chunks) + within * TILE_K;
    for chunk in 0..chunks {
        for (part, halves) in split_chunk(row, chunk).iter().enumerate() {
            let at = base + (2 * chunk + part) * TILE_VALUES;
            tiles[at..at + TILE_K].copy_from_slice(halves);
        }
    }
}

/// Packs `rows` (row-major, `k` wide, at most [`ROW_GROUP`]) into `tiles` as [`pack_row`] does.
#[target_feature(enable = "avx512f,avx512bf16")]
fn pack_rows(rows: &[f32], k: usize, chunks: usize, tiles: &mut Vec<u16>) {
    size_rows(tiles, rows.len() / k, chunks);
    for (index, row) in rows.chunks_exact(k).enumerate() {
        pack_row(row, index, chunks, tiles);
    }
}

/// `x · weightᵀ` for `x` [rows, k] row-major: [rows, n] row-major. The caller checked
/// [`available`] and that `x` is `weight.k()` wide.
pub(crate) fn product(x: &[f32], weight: &PackedWeight) -> Vec<f32> {
    let (k, n) = (weight.k, weight.n);
    let rows = x.len() / k;
    let padded_rows = rows.div_ceil(BLOCK_ROWS) * BLOCK_ROWS;
    let mut out: Vec<f32> = Vec::with_capacity(padded_rows * n);
    let destination = SharedOut(out.as_mut_ptr());
    thread_local! {
        static TILES: RefCell<Vec<u16>> = const { RefCell::new(Vec::new()) };
    }
    (0..padded_rows.div_ceil(ROW_GROUP))
        .into_par_iter()
        .for_each(|group| {
            let first = group * ROW_GROUP;
            let group_rows = (padded_rows - first).min(ROW_GROUP);
            let real_rows = rows.saturating_sub(first).min(group_rows);
            TILES.with_borrow_mut(|tiles| {
                // covers group_rows: they are real_rows rounded up to 32
                // SAFETY: the caller checked `available`: this CPU has AVX512-BF16
                unsafe {
                    pack_rows(
                        &x[first * k..(first + real_rows) * k],
                        k,
                        weight.chunks,
                        tiles,
                    );
                }
                let _config = TileConfig::load();
                // SAFETY: `tiles` holds group_rows packed rows and the weight n / 16 column
                // tiles, both of `chunks`; rows first.. of `out`'s padded capacity hold
                // group_rows × n floats, and no other group writes them.
                unsafe {
                    blocks_product(
                        tiles,
                        &weight.values,
                        weight.chunks,
                        (group_rows, n),
                        destination.at(first * n),
                    );
                }
            });
        });
    // SAFETY: every block of every padded row was written above; the first rows × n are kept.
    unsafe { out.set_len(rows * n) };
    out
}

/// One text's rows of the QKV projection, and where one head's queries and keys sit in them.
pub(crate) struct HeadInput<'a> {
    /// The text's `tokens` rows, `width` apart.
    pub rows: &'a [f32],
    pub width: usize,
    pub tokens: usize,
    /// The columns of the head's queries and keys.
    pub queries: usize,
    pub keys: usize,
    pub head_dim: usize,
}

/// A worker's buffers for [`head_scores`], reused from one (text, head) to the next.
#[derive(Default)]
pub(crate) struct HeadScratch {
    queries: Vec<u16>,
    keys: Vec<u16>,
    scores: Vec<f32>,
}

/// One head's query–key products over one text, on tiles: the scores and their row stride;
/// row i's first `tokens` values are query i's products with the text's keys (the rest of the
/// row is padding). The caller checked [`available`].
///
/// Split as the dense products are (`hi·hi + lo·hi + hi·lo`): each score is within a few
/// float32 roundings of the exact one and depends on its own text only. Only this product runs
/// on tiles: the weights times the values would need the weights split first, and at head
/// width 32 that split (per weight) costs more than the float32 product it replaces.
pub(crate) fn head_scores<'s>(
    input: HeadInput,
    scratch: &'s mut HeadScratch,
) -> (&'s mut [f32], usize) {
    let HeadInput {
        rows,
        width,
        tokens,
        queries,
        keys,
        head_dim,
    } = input;
    let padded = tokens.div_ceil(BLOCK_ROWS) * BLOCK_ROWS;
    let chunks = head_dim.div_ceil(TILE_K);
    let row = |i: usize, at: usize| &rows[i * width + at..][..head_dim];

    size_rows(&mut scratch.queries, tokens, chunks);
    for i in 0..tokens {
        // SAFETY: the caller checked `available`: this CPU has AVX512-BF16
        unsafe { pack_row(row(i, queries), i, chunks, &mut scratch.queries) };
    }
    // the keys are the scores' columns; those past the text are zero (their scores are unread)
    let strip = strip_values(chunks);
    scratch.keys.resize(padded / TILE_ROWS * strip, 0);
    for (tile, columns) in scratch.keys.chunks_exact_mut(strip).enumerate() {
        let key = |column: usize| {
            let key = tile * TILE_ROWS + column;
            if key < tokens {
                row(key, keys)
            } else {
                &[]
            }
        };
        // SAFETY: as above
        unsafe { pack_columns(key, chunks, columns) };
    }
    scratch.scores.resize(padded * padded, 0.0);
    let _config = TileConfig::load();
    // SAFETY: the queries' tiles hold `padded` rows and the keys' `padded` columns, both of
    // `chunks`; the scores are padded × padded.
    unsafe {
        blocks_product(
            &scratch.queries,
            &scratch.keys,
            chunks,
            (padded, padded),
            scratch.scores.as_mut_ptr(),
        );
    }
    (&mut scratch.scores, padded)
}

/// The output, written by every worker at disjoint blocks.
struct SharedOut(*mut f32);
// SAFETY: workers write disjoint row groups of it.
unsafe impl Sync for SharedOut {}
impl SharedOut {
    fn at(&self, offset: usize) -> *mut f32 {
        // SAFETY: offsets are inside the output's capacity (see `product`).
        unsafe { self.0.add(offset) }
    }
}

/// `left` (rows packed by [`pack_row`]) times `right` (columns packed as [`PackedWeight`]
/// packs them), both `chunks` of k, into `out`: `rows × columns` floats, row-major. Row by row
/// block: one 32-row block's tiles (48 KiB at k = 384) stay near the core while the column
/// blocks stream past them, 7–20% faster than the other order on the encoders' shapes (one
/// thread, best of 15 runs, alternated), where each row block was read again for every column
/// block.
///
/// # Safety
/// AMX available and configured by [`TileConfig`]; `left` holds `rows` (a multiple of 32) rows
/// and `right` `columns` (a multiple of 32) columns of `chunks`; `out` holds `rows × columns`
/// floats.
unsafe fn blocks_product(
    left: &[u16],
    right: &[u16],
    chunks: usize,
    (rows, columns): (usize, usize),
    out: *mut f32,
) {
    let strip = strip_values(chunks);
    for row_block in 0..rows / BLOCK_ROWS {
        let left = left[row_block * 2 * strip..].as_ptr();
        for column_block in 0..columns / BLOCK_COLUMNS {
            let right = (
                right[2 * column_block * strip..].as_ptr(),
                right[(2 * column_block + 1) * strip..].as_ptr(),
            );
            // SAFETY: `left` holds 2 × 2 × chunks tiles from this row block, each `right` 2 ×
            // chunks; the 32 × 32 block written is inside `out` (the caller's promise).
            unsafe {
                block_product(
                    left,
                    strip * 2,
                    right,
                    chunks,
                    out.add(row_block * BLOCK_ROWS * columns + column_block * BLOCK_COLUMNS),
                    columns * 4,
                );
            }
        }
    }
}

/// The tile registers' shapes, loaded for the life of the guard: every tile 16 rows of 64
/// bytes (`tmm0`–`tmm3` the 2 × 2 output tiles, `tmm4`/`tmm5` the rows' tiles, `tmm6`/`tmm7`
/// the weight's).
struct TileConfig;

impl TileConfig {
    fn load() -> TileConfig {
        #[repr(C, align(64))]
        struct Palette([u8; 64]);
        let mut palette = [0u8; 64];
        palette[0] = 1;
        for tile in 0..8 {
            palette[16 + 2 * tile] = 64;
            palette[48 + tile] = TILE_ROWS as u8;
        }
        let palette = Palette(palette);
        // SAFETY: a valid palette-1 configuration; `available` said the tiles are usable.
        unsafe { asm!("ldtilecfg [{}]", in(reg) &palette, options(nostack, readonly)) };
        TileConfig
    }
}

impl Drop for TileConfig {
    fn drop(&mut self) {
        // SAFETY: releases the tile state this thread configured.
        unsafe { asm!("tilerelease", options(nostack, nomem)) };
    }
}

/// One 32 × 32 output block: `chunks` steps of 12 tile products, each step two row tiles'
/// `[hi, lo]` (`left`, the second row tile `left_gap` bytes after it) by two weight column
/// tiles' `[hi, lo]` (`right`): lo·hi, hi·hi, hi·lo, in that order, so that each register is
/// loaded once per step; each step 2 KiB further on every side.
///
/// # Safety
/// AMX available and configured by [`TileConfig`]; `left`, `left + left_gap` and the `right`
/// pointers hold `2 × chunks` tiles; `out` is 32 rows of at least 32 floats at a stride of
/// `out_stride` bytes.
unsafe fn block_product(
    left: *const u16,
    left_gap: usize,
    right: (*const u16, *const u16),
    chunks: usize,
    out: *mut f32,
    out_stride: usize,
) {
    unsafe {
        asm!(
            "tilezero tmm0",
            "tilezero tmm1",
            "tilezero tmm2",
            "tilezero tmm3",
            "2:",
            // rows' lo × weight's hi
            "tileloadd tmm6, [{b0} + {row}*1]",
            "tileloadd tmm4, [{a0} + {row}*1 + 1024]",
            "tileloadd tmm7, [{b1} + {row}*1]",
            "tileloadd tmm5, [{a1} + {row}*1 + 1024]",
            "tdpbf16ps tmm0, tmm4, tmm6",
            "tdpbf16ps tmm1, tmm4, tmm7",
            "tileloadd tmm4, [{a0} + {row}*1]",
            "tdpbf16ps tmm2, tmm5, tmm6",
            "tdpbf16ps tmm3, tmm5, tmm7",
            "tileloadd tmm5, [{a1} + {row}*1]",
            // rows' hi × weight's hi
            "tdpbf16ps tmm0, tmm4, tmm6",
            "tdpbf16ps tmm1, tmm4, tmm7",
            "tdpbf16ps tmm2, tmm5, tmm6",
            "tileloadd tmm6, [{b0} + {row}*1 + 1024]",
            "tdpbf16ps tmm3, tmm5, tmm7",
            "tileloadd tmm7, [{b1} + {row}*1 + 1024]",
            // rows' hi × weight's lo
            "tdpbf16ps tmm0, tmm4, tmm6",
            "tdpbf16ps tmm2, tmm5, tmm6",
            "tdpbf16ps tmm1, tmm4, tmm7",
            "tdpbf16ps tmm3, tmm5, tmm7",
            "add {a0}, 2048",
            "add {a1}, 2048",
            "add {b0}, 2048",
            "add {b1}, 2048",
            "dec {chunks}",
            "jnz 2b",
            "tilestored [{c00} + {c_stride}*1], tmm0",
            "tilestored [{c01} + {c_stride}*1], tmm1",
            "tilestored [{c10} + {c_stride}*1], tmm2",
            "tilestored [{c11} + {c_stride}*1], tmm3",
            a0 = inout(reg) left => _,
            a1 = inout(reg) left.byte_add(left_gap) => _,
            b0 = inout(reg) right.0 => _,
            b1 = inout(reg) right.1 => _,
            row = in(reg) 64usize,
            chunks = inout(reg) chunks => _,
            c00 = in(reg) out,
            c01 = in(reg) out.add(TILE_ROWS),
            c10 = in(reg) out.byte_add(TILE_ROWS * out_stride),
            c11 = in(reg) out.byte_add(TILE_ROWS * out_stride).add(TILE_ROWS),
            c_stride = in(reg) out_stride,
            options(nostack)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Seeded values in [-1, 1).
    fn values(count: usize, seed: u64) -> Vec<f32> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        (0..count).map(|_| rng.gen_range(-1.0..1.0)).collect()
    }

    /// Whether this CPU runs the kernel; a skip line where it does not.
    fn here_or_skip(what: &str) -> bool {
        if !available() {
            sage_test_env::skip(
                what,
                "this CPU has no AMX-BF16 (or SAGE_AMX=0): gemm runs its products",
            );
        }
        available()
    }

    #[test]
    fn packed_columns_are_pairs_of_k_by_column() {
        if !here_or_skip("amx::pack_columns") {
            return;
        }
        // 16 columns of 45 values (a whole chunk and a part one), one of them shorter and one
        // empty, as a text's last key tile has past its end
        let data: Vec<Vec<f32>> = (0..TILE_ROWS as u64)
            .map(|c| match c {
                5 => values(20, 100 + c),
                11 => Vec::new(),
                _ => values(45, 100 + c),
            })
            .collect();
        let chunks = 2;
        let mut strip = vec![u16::MAX; strip_values(chunks)];
        // SAFETY: `available` said this CPU has AVX512-BF16
        unsafe { pack_columns(|c| data[c].as_slice(), chunks, &mut strip) };
        for (c, column) in data.iter().enumerate() {
            for chunk in 0..chunks {
                // SAFETY: as above
                let halves = unsafe { split_chunk(column, chunk) };
                for (part, half) in halves.iter().enumerate() {
                    let tile = &strip[(2 * chunk + part) * TILE_VALUES..][..TILE_VALUES];
                    for (kk, value) in half.iter().enumerate() {
                        // tile row kk / 2 holds every column's pair (kk - kk % 2, + 1)
                        let at = (kk / 2) * 2 * TILE_ROWS + c * 2 + kk % 2;
                        assert_eq!(
                            tile[at], *value,
                            "column {c}, chunk {chunk}, part {part}, k {kk}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn split_halves_hold_sixteen_bits() {
        if !here_or_skip("amx::split_chunk") {
            return;
        }
        // 45 values: a whole chunk, then a part one padded with zeros
        let row = values(45, 7);
        for chunk in 0..2 {
            // SAFETY: `available` said this CPU has AVX512-BF16
            let [hi, lo] = unsafe { split_chunk(&row, chunk) };
            for (i, (hi, lo)) in hi.iter().zip(&lo).enumerate() {
                let x = row.get(chunk * TILE_K + i).copied().unwrap_or(0.0);
                let back = f32::from_bits((*hi as u32) << 16) + f32::from_bits((*lo as u32) << 16);
                assert!((back - x).abs() <= x.abs() * 2f32.powi(-16), "{x}: {back}");
                // hi is the nearest bf16: what it misses is at most half its last place
                let hi = f32::from_bits((*hi as u32) << 16);
                assert!((x - hi).abs() <= x.abs() * 2f32.powi(-8), "{x}: hi {hi}");
            }
        }
    }

    #[test]
    fn product_is_within_float32_roundings_of_the_exact_one() {
        if !here_or_skip("amx::product accuracy") {
            return;
        }
        // odd sizes: rows not a multiple of 32 or of a row group, k not a multiple of 32
        for (rows, k, n) in [
            (1, 384, 384),
            (45, 100, 64),
            (300, 768, 96),
            (129, 1536, 32),
        ] {
            let x = values(rows * k, rows as u64);
            let weight: Vec<f32> = values(n * k, k as u64).iter().map(|w| w * 0.05).collect();
            let packed = PackedWeight::of(&weight, n, k).unwrap();
            let ours = product(&x, &packed);
            assert_eq!(ours.len(), rows * n);
            for r in 0..rows {
                for j in 0..n {
                    let terms = (0..k).map(|kk| x[r * k + kk] as f64 * weight[j * k + kk] as f64);
                    let exact: f64 = terms.clone().sum();
                    let scale: f64 = terms.map(f64::abs).sum();
                    let error = (ours[r * n + j] as f64 - exact).abs();
                    assert!(
                        error <= 4e-6 * scale,
                        "[{rows}, {k}, {n}] ({r}, {j}): {error} of {scale}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_row_comes_out_the_same_in_any_batch_and_on_any_thread_count() {
        if !here_or_skip("amx::product batch independence") {
            return;
        }
        let (k, n) = (384, 128);
        let weight = values(n * k, 3);
        let packed = PackedWeight::of(&weight, n, k).unwrap();
        let batch = values(300 * k, 4);
        let together = product(&batch, &packed);
        for row in [0, 17, 150, 299] {
            let alone = product(&batch[row * k..][..k], &packed);
            assert_eq!(alone, together[row * n..][..n], "row {row}");
        }
        let one_thread = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        assert_eq!(one_thread.install(|| product(&batch, &packed)), together);
    }

    #[test]
    fn widths_the_kernel_does_not_cover_are_left_to_gemm() {
        assert!(PackedWeight::of(&values(48 * 8, 1), 48, 8).is_none());
        // and nothing is packed where the CPU cannot run the kernel
        assert_eq!(
            PackedWeight::of(&values(64 * 8, 1), 64, 8).is_some(),
            available()
        );
    }
}
