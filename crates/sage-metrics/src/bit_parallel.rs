//! The long-pattern step of the bit-parallel LCS: every word of the state through one text
//! character, `S ← (S + (S & M)) | (S & !M)` as one multi-word addition, on the widest words
//! this CPU (and `SAGE_CPU`) allows.
//!
//! The addition's carries are what keeps it from being lane-parallel. The scalar path chains
//! them through the add-with-carry flag, one 64-bit word per step. The vector paths add 4
//! (AVX2) or 8 (AVX-512) words at once and then resolve the carries between them:
//!
//! - a lane *generates* a carry where its sum wrapped, and *propagates* one where its sum is
//!   all ones (the two never meet in one lane: `S + (S & M)` is at most 2⁶⁵ − 2);
//! - with both as bit masks (AVX-512's compare masks, AVX2's `movmskpd` of the lanes' sign
//!   bits), one integer addition, `((generate << 1 | carry in) + propagate) ^ propagate`,
//!   gives the lanes that receive a carry, whatever chain of all-ones words it crosses, and
//!   bit 8 (4) of the sum the carry into the next vector;
//! - those lanes get 1 added: under the mask (AVX-512) or as a 16-entry table's vector (AVX2).
//!
//! Up to 8 vectors (`MOST_VECTORS_IN_REGISTERS`) the state stays in registers through the whole
//! text. The vector paths are bound by the latency from one character to the next (~23 cycles
//! here), where the scalar path is bound by its instructions per word, so they pay on long
//! patterns: 1.3x at 1,350 characters, 1.3-1.4x (AVX2) and 2.1x (AVX-512) at 3,000 and more
//! (`levenshtein`'s `kernel_speed`).
//!
//! Every path gives the same state bits (the tests compare each with the scalar one and with
//! the dynamic programme).

/// How a character advances a state of more than 4 words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WordsKernel {
    /// 64-bit words through the add-with-carry flag (any CPU).
    Scalar,
    /// 4 words per 256-bit vector.
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// 8 words per 512-bit vector, carries resolved in mask registers.
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

impl WordsKernel {
    /// The widest kernel this CPU has and `SAGE_CPU` allows.
    pub(crate) fn best() -> WordsKernel {
        #[cfg(target_arch = "x86_64")]
        {
            use sage_core::cpu::{allows, Level};
            if allows(Level::Avx512) && std::is_x86_feature_detected!("avx512f") {
                return WordsKernel::Avx512;
            }
            if std::is_x86_feature_detected!("avx2") {
                return WordsKernel::Avx2;
            }
        }
        WordsKernel::Scalar
    }

    /// Every kernel this CPU can run, whatever `SAGE_CPU` says (for tests and benches).
    #[cfg(test)]
    pub(crate) fn available() -> Vec<WordsKernel> {
        #[allow(unused_mut)]
        let mut kernels = vec![WordsKernel::Scalar];
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx2") {
                kernels.push(WordsKernel::Avx2);
            }
            if std::is_x86_feature_detected!("avx512f") {
                kernels.push(WordsKernel::Avx512);
            }
        }
        kernels
    }

    /// The state's words come in multiples of this (a vector's words). The words past the
    /// pattern's start at 0 and have no matches: they only receive carries, and carries move
    /// toward higher words, so the pattern's words never see them (nor are they counted).
    pub(crate) fn lanes(self) -> usize {
        match self {
            WordsKernel::Scalar => 1,
            #[cfg(target_arch = "x86_64")]
            WordsKernel::Avx2 => 4,
            #[cfg(target_arch = "x86_64")]
            WordsKernel::Avx512 => 8,
        }
    }

    /// Runs every character of `text` through `state`; `masks_of(c)` is the pattern's match
    /// masks of `c`, as many words as the state, or `None` where `c` is not in the pattern.
    pub(crate) fn run<'m>(
        self,
        state: &mut [u64],
        text: &[char],
        masks_of: impl Fn(char) -> Option<&'m [u64]>,
    ) {
        debug_assert_eq!(state.len() % self.lanes(), 0);
        match self {
            WordsKernel::Scalar => {
                for &c in text {
                    if let Some(masks) = masks_of(c) {
                        advance_scalar(state, masks);
                    }
                }
            }
            #[cfg(target_arch = "x86_64")]
            WordsKernel::Avx2 => {
                debug_assert!(std::is_x86_feature_detected!("avx2"));
                // SAFETY: `available`/`best` give this kernel only where the CPU has AVX2
                unsafe { x86::run_avx2(state, text, masks_of) }
            }
            #[cfg(target_arch = "x86_64")]
            WordsKernel::Avx512 => {
                debug_assert!(std::is_x86_feature_detected!("avx512f"));
                // SAFETY: given only where the CPU has AVX-512F
                unsafe { x86::run_avx512(state, text, masks_of) }
            }
        }
    }
}

/// One character through every word: the words' sums chained through the carry flag.
#[inline]
// `_addcarry_u64` is a safe call on newer compilers and an unsafe one on older ones the MSRV allows
#[allow(unused_unsafe)]
fn advance_scalar(state: &mut [u64], masks: &[u64]) {
    #[cfg(target_arch = "x86_64")]
    {
        // The add-with-carry instruction chains the words' carries through the flag, where the
        // portable form turns each carry into a value and back; BLOCK words at a time, their
        // additions back to back, so that nothing between them overwrites the flag. 1.5x the
        // portable form on SAGE's robustness documents.
        use std::arch::x86_64::_addcarry_u64;
        const BLOCK: usize = 8;
        let mut carry = 0u8;
        let mut words = state.chunks_exact_mut(BLOCK);
        let mut ms = masks.chunks_exact(BLOCK);
        for (w, m) in (&mut words).zip(&mut ms) {
            let u: [u64; BLOCK] = std::array::from_fn(|k| w[k] & m[k]);
            let mut sum = [0u64; BLOCK];
            for k in 0..BLOCK {
                // SAFETY: `_addcarry_u64` needs only x86-64's baseline instruction set
                carry = unsafe { _addcarry_u64(carry, w[k], u[k], &mut sum[k]) };
            }
            for k in 0..BLOCK {
                w[k] = sum[k] | (w[k] & !u[k]);
            }
        }
        for (word, &m) in words.into_remainder().iter_mut().zip(ms.remainder()) {
            let u = *word & m;
            let mut sum = 0u64;
            // SAFETY: as above
            carry = unsafe { _addcarry_u64(carry, *word, u, &mut sum) };
            *word = sum | (*word & !u);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mut carry = 0u64;
        for (word, &m) in state.iter_mut().zip(masks) {
            let u = *word & m;
            let (sum, c1) = word.overflowing_add(u);
            let (sum, c2) = sum.overflowing_add(carry);
            carry = u64::from(c1 | c2);
            *word = sum | (*word & !u);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// States of up to this many vectors stay in registers through the whole text. A state in
    /// memory is stored at one character and loaded back at the next, and that round trip sat on
    /// the path from each character to the next.
    const MOST_VECTORS_IN_REGISTERS: usize = 8;
    /// The two loops over a text for one instruction set (`$lanes` words per `$vector`, its
    /// `$step` advancing one vector through one character): the state held in `N` registers,
    /// or read and written per character.
    macro_rules! state_loops {
        ($feature:literal, $vector:ty, $lanes:literal, $zero:ident, $load:ident, $store:ident,
         $step:ident, $in_registers:ident, $in_memory:ident) => {
            #[target_feature(enable = $feature)]
            fn $in_registers<'m, const N: usize>(
                state: &mut [u64],
                text: &[char],
                masks_of: impl Fn(char) -> Option<&'m [u64]>,
            ) {
                assert_eq!(state.len(), $lanes * N);
                let mut vectors: [$vector; N] = [$zero(); N];
                for (v, words) in vectors.iter_mut().zip(state.chunks_exact($lanes)) {
                    // SAFETY: a chunk of one vector's words
                    *v = unsafe { $load(words.as_ptr().cast()) };
                }
                for &c in text {
                    let Some(masks) = masks_of(c) else {
                        continue;
                    };
                    assert_eq!(masks.len(), $lanes * N);
                    let mut carry = 0;
                    for (k, v) in vectors.iter_mut().enumerate() {
                        // SAFETY: vector k's words of a row of N vectors
                        let m = unsafe { $load(masks.as_ptr().add($lanes * k).cast()) };
                        *v = $step(*v, m, &mut carry);
                    }
                }
                for (v, words) in vectors.iter().zip(state.chunks_exact_mut($lanes)) {
                    // SAFETY: a chunk of one vector's words
                    unsafe { $store(words.as_mut_ptr().cast(), *v) };
                }
            }

            #[target_feature(enable = $feature)]
            fn $in_memory<'m>(
                state: &mut [u64],
                text: &[char],
                masks_of: impl Fn(char) -> Option<&'m [u64]>,
            ) {
                for &c in text {
                    let Some(masks) = masks_of(c) else {
                        continue;
                    };
                    let mut carry = 0;
                    for (w, m) in state
                        .chunks_exact_mut($lanes)
                        .zip(masks.chunks_exact($lanes))
                    {
                        // SAFETY: both chunks are one vector's words
                        unsafe {
                            let old = $load(w.as_ptr().cast());
                            let m = $load(m.as_ptr().cast());
                            $store(w.as_mut_ptr().cast(), $step(old, m, &mut carry));
                        }
                    }
                }
            }
        };
    }

    const _: () = assert!(
        MOST_VECTORS_IN_REGISTERS == 8,
        "by_vectors! has an arm for each count up to it"
    );

    /// Picks the loop for the state's number of vectors: held in registers (`N` of them), or
    /// read and written per character past [`MOST_VECTORS_IN_REGISTERS`].
    macro_rules! by_vectors {
        ($vectors:expr, $in_registers:ident, $in_memory:ident, $($arg:expr),*) => {
            match $vectors {
                1 => $in_registers::<1>($($arg),*),
                2 => $in_registers::<2>($($arg),*),
                3 => $in_registers::<3>($($arg),*),
                4 => $in_registers::<4>($($arg),*),
                5 => $in_registers::<5>($($arg),*),
                6 => $in_registers::<6>($($arg),*),
                7 => $in_registers::<7>($($arg),*),
                8 => $in_registers::<8>($($arg),*),
                _ => $in_memory($($arg),*),
            }
        };
    }

    /// # Safety
    /// The CPU must have AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn run_avx2<'m>(
        state: &mut [u64],
        text: &[char],
        masks_of: impl Fn(char) -> Option<&'m [u64]>,
    ) {
        by_vectors!(
            state.len() / 4,
            avx2_in_registers,
            avx2_in_memory,
            state,
            text,
            masks_of
        )
    }

    /// −1 in the lanes whose bit is set in the index.
    static LANES_OF_BITS: [[i64; 4]; 16] = {
        let mut table = [[0i64; 4]; 16];
        let mut bits = 0;
        while bits < 16 {
            let mut lane = 0;
            while lane < 4 {
                if bits & (1 << lane) != 0 {
                    table[bits][lane] = -1;
                }
                lane += 1;
            }
            bits += 1;
        }
        table
    };

    /// One vector of 4 words through one character; `carry` (0 or 1) enters its first word
    /// and is left as what leaves its last. The carries are resolved as in AVX-512's step,
    /// on the lanes' sign bits (`movmskpd`); a branch taken only where a carry lands on an
    /// all-ones word was slower: that happens at 10% of the steps on English text.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn avx2_step(old: __m256i, m: __m256i, carry: &mut u32) -> __m256i {
        let u = _mm256_and_si256(old, m);
        let sum = _mm256_add_epi64(old, u);
        // a + b carries out of its top bit where `(a & b) | ((a | b) & !sum)` has it set; here
        // b = u ⊆ a = old, so that is `u | (old & !sum)`, read off the sign bits
        let wrapped = _mm256_or_si256(u, _mm256_andnot_si256(sum, old));
        let full = _mm256_cmpeq_epi64(sum, _mm256_set1_epi64x(-1));
        let generate = _mm256_movemask_pd(_mm256_castsi256_pd(wrapped)) as u32;
        let propagate = _mm256_movemask_pd(_mm256_castsi256_pd(full)) as u32;
        let chained = ((generate << 1) | *carry) + propagate;
        let into = (chained ^ propagate) & 0xf;
        *carry = chained >> 4;
        // SAFETY: a row of 4 of the table (`into` < 16)
        let into = unsafe { _mm256_loadu_si256(LANES_OF_BITS[into as usize].as_ptr().cast()) };
        _mm256_or_si256(_mm256_sub_epi64(sum, into), _mm256_andnot_si256(m, old))
    }

    state_loops!(
        "avx2",
        __m256i,
        4,
        _mm256_setzero_si256,
        _mm256_loadu_si256,
        _mm256_storeu_si256,
        avx2_step,
        avx2_in_registers,
        avx2_in_memory
    );

    /// # Safety
    /// The CPU must have AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn run_avx512<'m>(
        state: &mut [u64],
        text: &[char],
        masks_of: impl Fn(char) -> Option<&'m [u64]>,
    ) {
        by_vectors!(
            state.len() / 8,
            avx512_in_registers,
            avx512_in_memory,
            state,
            text,
            masks_of
        )
    }

    /// One vector of 8 words through one character; `carry` (0 or 1) enters its first word
    /// and is left as what leaves its last.
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn avx512_step(old: __m512i, m: __m512i, carry: &mut u32) -> __m512i {
        let ones = _mm512_set1_epi64(-1);
        let u = _mm512_and_si512(old, m);
        let sum = _mm512_add_epi64(old, u);
        let generate = u32::from(_mm512_cmplt_epu64_mask(sum, old));
        let propagate = u32::from(_mm512_cmpeq_epi64_mask(sum, ones));
        let chained = ((generate << 1) | *carry) + propagate;
        let into = ((chained ^ propagate) & 0xff) as u8;
        *carry = chained >> 8;
        // sum − (−1) in the lanes a carry enters
        let sum = _mm512_mask_sub_epi64(sum, into, sum, ones);
        // sum | (old & !m)
        _mm512_ternarylogic_epi64::<0xF4>(sum, old, m)
    }

    state_loops!(
        "avx512f",
        __m512i,
        8,
        _mm512_setzero_si512,
        _mm512_loadu_si512,
        _mm512_storeu_si512,
        avx512_step,
        avx512_in_registers,
        avx512_in_memory
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Every kernel leaves the scalar kernel's state bits, on states and masks drawn to hit
    /// every carry case (all-ones words, so carries that travel several words; words of few
    /// zeros; zero words, as the padding past a pattern starts), in registers and, past 8
    /// vectors (40 words for AVX2, 72 for AVX-512), in memory.
    #[test]
    fn every_kernel_leaves_the_scalar_state() {
        if WordsKernel::available().len() < 2 {
            sage_test_env::skip("Levenshtein's vector kernels", "no AVX2 on this CPU");
            return;
        }
        let mut rng = sage_core::ExperimentRng::seed_from_u64(41);
        for kernel in WordsKernel::available() {
            for words in [8usize, 16, 24, 40, 72] {
                for _ in 0..200 {
                    let draw = |rng: &mut sage_core::ExperimentRng| -> u64 {
                        match rng.gen_range(0..5) {
                            0 => !0,
                            1 => !0 ^ (1 << rng.gen_range(0..64)),
                            2 => 0,
                            _ => rng.gen(),
                        }
                    };
                    let state: Vec<u64> = (0..words).map(|_| draw(&mut rng)).collect();
                    let table: Vec<Vec<u64>> = (0..3)
                        .map(|_| (0..words).map(|_| draw(&mut rng)).collect())
                        .collect();
                    let text: Vec<char> = (0..20)
                        .map(|_| ['a', 'b', 'c', 'z'][rng.gen_range(0..4)])
                        .collect();
                    let masks_of = |c: char| match c {
                        'a' => Some(table[0].as_slice()),
                        'b' => Some(table[1].as_slice()),
                        'c' => Some(table[2].as_slice()),
                        _ => None,
                    };
                    let mut want = state.clone();
                    WordsKernel::Scalar.run(&mut want, &text, masks_of);
                    let mut got = state.clone();
                    kernel.run(&mut got, &text, masks_of);
                    assert_eq!(got, want, "{kernel:?}, {words} words");
                }
            }
        }
    }
}
