//! The LCS of several short patterns against one shared text at once, a pattern per vector
//! lane: SAGE retrieval's case, where every query (a pattern of a few words) meets every
//! document, and the Levenshtein ratio spent 85% of a retrieval job in the one-pair LCS (perf).
//!
//! Each lane holds its own pattern's bit-parallel state (up to [`MOST_WORDS`] 64-bit words), and
//! the text is read once for all lanes. The match masks are laid out interleaved, `[character]
//! [word][lane]`, so a text character's masks for every lane are one vector load, and no lane
//! ever needs another's: the words' carries run down each lane on their own (compare masks on
//! AVX-512, all-ones lanes on AVX2). A pattern's words past its length have no matches, and
//! only its own bits are counted, so patterns of different lengths share a batch.
//!
//! The LCS is the one-pair path's, so the ratio is too, bit for bit (tests compare them).
// Off x86-64 there is no kernel (`LanesKernel` has no variant), so nothing here runs there.
#![cfg_attr(
    not(target_arch = "x86_64"),
    allow(dead_code, unused_variables, unreachable_code)
)]

use crate::bit_parallel::WordsKernel;

/// Patterns longer than this many 64-bit words (256 characters) take the one-pair path.
pub(crate) const MOST_WORDS: usize = 4;

/// A vector kernel for patterns in lanes, if this CPU (and `SAGE_CPU`) has one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LanesKernel {
    /// 4 patterns per 256-bit vector.
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// 8 patterns per 512-bit vector.
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

impl LanesKernel {
    /// The widest kernel this CPU has and `SAGE_CPU` allows (the long states' choice, one
    /// rule for both); `None` off x86-64 (or without AVX2), where every pair takes the
    /// one-pair path.
    pub(crate) fn best() -> Option<LanesKernel> {
        LanesKernel::of(WordsKernel::best())
    }

    /// Every kernel this CPU can run, whatever `SAGE_CPU` says (for tests and benches).
    #[cfg(test)]
    pub(crate) fn available() -> Vec<LanesKernel> {
        WordsKernel::available()
            .into_iter()
            .filter_map(LanesKernel::of)
            .collect()
    }

    /// The lanes kernel of the same instruction set.
    fn of(kernel: WordsKernel) -> Option<LanesKernel> {
        match kernel {
            WordsKernel::Scalar => None,
            #[cfg(target_arch = "x86_64")]
            WordsKernel::Avx2 => Some(LanesKernel::Avx2),
            #[cfg(target_arch = "x86_64")]
            WordsKernel::Avx512 => Some(LanesKernel::Avx512),
        }
    }

    /// Patterns per batch.
    pub(crate) fn lanes(self) -> usize {
        match self {
            #[cfg(target_arch = "x86_64")]
            LanesKernel::Avx2 => 4,
            #[cfg(target_arch = "x86_64")]
            LanesKernel::Avx512 => 8,
        }
    }
}

/// A text as the lanes read it: each character as the row of its masks, ASCII characters as
/// themselves and the others as 128 + their place among the text's distinct others. Built once
/// per text, for all its batches: the hot loop then reads a row number, with no search and no
/// branch, and a pattern's characters that are not in the text are never stored.
pub(crate) struct LaneText {
    rows: Vec<u32>,
    /// The text's characters past ASCII, sorted, distinct.
    others: Vec<char>,
}

impl LaneText {
    pub(crate) fn new(text: &[char]) -> LaneText {
        let mut others: Vec<char> = text.iter().copied().filter(|c| !c.is_ascii()).collect();
        others.sort_unstable();
        others.dedup();
        let rows = text
            .iter()
            .map(|&c| match c.is_ascii() {
                true => c as u32,
                false => 128 + others.binary_search(&c).expect("collected above") as u32,
            })
            .collect();
        LaneText { rows, others }
    }

    /// The row of pattern character `c`, if the text has it.
    fn row_of(&self, c: char) -> Option<usize> {
        if c.is_ascii() {
            Some(c as usize)
        } else {
            self.others.binary_search(&c).ok().map(|k| 128 + k)
        }
    }
}

/// A pattern as the lanes take it: its length and each distinct character's match masks,
/// built once per pattern for all the batches it is in (a clustering subset's sentence is the
/// pattern of a thousand batches). Setting a batch's table from these is a store per
/// character and word, where setting it bit by bit from the characters was a read-modify-write
/// per character, chained through memory wherever a character repeats (35% of a clustering job).
pub(crate) struct LanePattern {
    len: usize,
    masks: Vec<(char, [u64; MOST_WORDS])>,
}

impl LanePattern {
    /// `chars` is 1 to 256 code points.
    pub(crate) fn new(chars: &[char]) -> LanePattern {
        assert!((1..=64 * MOST_WORDS).contains(&chars.len()));
        let mut positions: Vec<(char, usize)> =
            chars.iter().enumerate().map(|(i, &c)| (c, i)).collect();
        positions.sort_unstable();
        let mut masks: Vec<(char, [u64; MOST_WORDS])> = Vec::new();
        for (c, i) in positions {
            if masks.last().is_none_or(|&(last, _)| last != c) {
                masks.push((c, [0; MOST_WORDS]));
            }
            let (_, words) = masks.last_mut().expect("pushed above");
            words[i / 64] |= 1u64 << (i % 64);
        }
        LanePattern {
            len: chars.len(),
            masks,
        }
    }

    /// Its length in code points.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

/// A batch's buffers, reused from one batch to the next.
#[derive(Default)]
pub(crate) struct LanesScratch {
    /// `[row][word][lane]` masks.
    masks: Vec<u64>,
    /// The final states, `[word][lane]`.
    state: Vec<u64>,
}

/// Writes the LCS of each pattern (1 to `kernel.lanes()` of them) with `text` into `lcs`.
pub(crate) fn lcs_lanes(
    kernel: LanesKernel,
    text: &LaneText,
    patterns: &[&LanePattern],
    lcs: &mut [usize],
    s: &mut LanesScratch,
) {
    let lanes = kernel.lanes();
    assert!(!patterns.is_empty() && patterns.len() <= lanes && lcs.len() == patterns.len());
    let words = patterns
        .iter()
        .map(|p| p.len.div_ceil(64))
        .max()
        .expect("a pattern");
    let row = words * lanes;
    let rows = 128 + text.others.len();
    // one memset of the table: clearing only the words the patterns set took a second pass
    // over them, and was slower on a clustering job's sentences
    s.masks.clear();
    s.masks.resize(rows * row, 0);
    for (lane, pattern) in patterns.iter().enumerate() {
        for (c, masks) in &pattern.masks {
            // a pattern character the text lacks matches nothing: no row
            if let Some(r) = text.row_of(*c) {
                for (w, &m) in masks.iter().take(words).enumerate() {
                    s.masks[r * row + w * lanes + lane] = m;
                }
            }
        }
    }

    s.state.clear();
    s.state.resize(row, !0u64);
    let table = &s.masks[..rows * row];
    match kernel {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `best`/`available` chose this kernel only where the CPU has AVX2; every row
        // number of `text` is below `rows`
        LanesKernel::Avx2 => unsafe { x86::run_avx2(&mut s.state, words, &text.rows, table) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above, with AVX-512F
        LanesKernel::Avx512 => unsafe { x86::run_avx512(&mut s.state, words, &text.rows, table) },
    }

    for (lane, (pattern, out)) in patterns.iter().zip(lcs.iter_mut()).enumerate() {
        *out = (0..words)
            .map(|w| {
                let bits = pattern.len.saturating_sub(64 * w).min(64);
                let valid = if bits == 64 { !0 } else { (1u64 << bits) - 1 };
                (!s.state[w * lanes + lane] & valid).count_ones() as usize
            })
            .sum();
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// Picks the loop for the pattern's words (1 to 4), each held in a register.
    macro_rules! by_words {
        ($words:expr, $run:ident, $($arg:expr),*) => {
            match $words {
                1 => $run::<1>($($arg),*),
                2 => $run::<2>($($arg),*),
                3 => $run::<3>($($arg),*),
                4 => $run::<4>($($arg),*),
                _ => unreachable!("at most MOST_WORDS words"),
            }
        };
    }
    const _: () = assert!(
        super::MOST_WORDS == 4,
        "by_words! has an arm for each count"
    );

    /// # Safety
    /// The CPU must have AVX2; `words` is 1 to 4, `state` is 4 × `words` long, and every row
    /// number is below `table.len() / (4 × words)`.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn run_avx2(state: &mut [u64], words: usize, rows: &[u32], table: &[u64]) {
        // SAFETY: the caller's AVX2 and rows
        unsafe { by_words!(words, avx2_words, state, rows, table) }
    }

    /// # Safety
    /// As [`run_avx2`]'s, with `W` words.
    #[target_feature(enable = "avx2")]
    unsafe fn avx2_words<const W: usize>(state: &mut [u64], rows: &[u32], table: &[u64]) {
        debug_assert!(rows
            .iter()
            .all(|&r| (r as usize + 1) * 4 * W <= table.len()));
        assert_eq!(state.len(), 4 * W);
        let zero = _mm256_setzero_si256();
        let mut vectors = [_mm256_set1_epi64x(-1); W];
        for &r in rows {
            // SAFETY: row r is inside the table (the caller's promise)
            let masks = unsafe { table.as_ptr().add(r as usize * 4 * W) };
            // −1 in the lanes whose previous word carried out
            let mut carry = zero;
            for (w, v) in vectors.iter_mut().enumerate() {
                // SAFETY: word w's 4 lanes of row r, inside the table
                let m = unsafe { _mm256_loadu_si256(masks.add(4 * w).cast()) };
                let old = *v;
                let u = _mm256_and_si256(old, m);
                let sum = _mm256_add_epi64(old, u);
                if W == 1 {
                    *v = _mm256_or_si256(sum, _mm256_andnot_si256(m, old));
                    continue;
                }
                // old + u carries out where `u | (old & !sum)` has its top bit (u ⊆ old)
                let wrapped =
                    _mm256_cmpgt_epi64(zero, _mm256_or_si256(u, _mm256_andnot_si256(sum, old)));
                let sum = _mm256_sub_epi64(sum, carry);
                // the carry's +1 wraps an all-ones sum to 0, and carries on
                carry = _mm256_or_si256(
                    wrapped,
                    _mm256_and_si256(carry, _mm256_cmpeq_epi64(sum, zero)),
                );
                *v = _mm256_or_si256(sum, _mm256_andnot_si256(m, old));
            }
        }
        for (v, out) in vectors.iter().zip(state.chunks_exact_mut(4)) {
            // SAFETY: a 4-word chunk
            unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), *v) };
        }
    }

    /// # Safety
    /// The CPU must have AVX-512F; `words` is 1 to 4, `state` is 8 × `words` long, and every
    /// row number is below `table.len() / (8 × words)`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn run_avx512(state: &mut [u64], words: usize, rows: &[u32], table: &[u64]) {
        // SAFETY: the caller's AVX-512F and rows
        unsafe { by_words!(words, avx512_words, state, rows, table) }
    }

    /// # Safety
    /// As [`run_avx512`]'s, with `W` words.
    #[target_feature(enable = "avx512f")]
    unsafe fn avx512_words<const W: usize>(state: &mut [u64], rows: &[u32], table: &[u64]) {
        debug_assert!(rows
            .iter()
            .all(|&r| (r as usize + 1) * 8 * W <= table.len()));
        assert_eq!(state.len(), 8 * W);
        let (zero, ones) = (_mm512_setzero_si512(), _mm512_set1_epi64(-1));
        let mut vectors = [ones; W];
        for &r in rows {
            // SAFETY: row r is inside the table (the caller's promise)
            let masks = unsafe { table.as_ptr().add(r as usize * 8 * W) };
            // the lanes whose previous word carried out
            let mut carry: __mmask8 = 0;
            for (w, v) in vectors.iter_mut().enumerate() {
                // SAFETY: word w's 8 lanes of row r, inside the table
                let m = unsafe { _mm512_loadu_si512(masks.add(8 * w).cast()) };
                let old = *v;
                let u = _mm512_and_si512(old, m);
                let sum = _mm512_add_epi64(old, u);
                if W == 1 {
                    // sum | (old & !m)
                    *v = _mm512_ternarylogic_epi64::<0xF4>(sum, old, m);
                    continue;
                }
                let wrapped = _mm512_cmplt_epu64_mask(sum, old);
                // sum − (−1) in the lanes a carry enters; an all-ones sum wraps to 0 and carries on
                let sum = _mm512_mask_sub_epi64(sum, carry, sum, ones);
                carry = wrapped | _mm512_mask_cmpeq_epi64_mask(carry, sum, zero);
                *v = _mm512_ternarylogic_epi64::<0xF4>(sum, old, m);
            }
        }
        for (v, out) in vectors.iter().zip(state.chunks_exact_mut(8)) {
            // SAFETY: an 8-word chunk
            unsafe { _mm512_storeu_si512(out.as_mut_ptr().cast(), *v) };
        }
    }
}
