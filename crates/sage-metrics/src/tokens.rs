//! cl100k_base tokenization and the batch machinery shared by the token-based metrics.

use rayon::prelude::*;
use sage_core::Result;

use crate::distinct::DistinctTexts;

pub use sage_tokens::encode as cl100k;

/// A similarity computed from the cl100k token ids of both texts.
///
/// Each distinct text of a batch is tokenized and prepared once, then every pair is compared; both
/// steps run in parallel.
pub(crate) trait TokenPairMetric: Sync {
    /// What a text is reduced to before comparison (sorted n-grams, a token set, ...).
    type Prepared: Send + Sync;
    fn prepare(&self, tokens: Vec<u32>) -> Self::Prepared;
    fn compare(&self, reference: &Self::Prepared, candidate: &Self::Prepared) -> f64;
}

pub(crate) fn score_token_pairs<M: TokenPairMetric>(
    metric: &M,
    pairs: &[(&str, &str)],
) -> Result<Vec<f64>> {
    let mut texts = DistinctTexts::with_capacity(pairs.len());
    let rows = texts.number_pairs(pairs);
    let prepared: Vec<M::Prepared> = texts
        .distinct()
        .par_iter()
        .map(|t| metric.prepare(cl100k(t)))
        .collect();
    Ok(rows
        .par_iter()
        .map(|&(a, b)| metric.compare(&prepared[a], &prepared[b]))
        .collect())
}

/// Implements [`sage_core::Similarity`] for a symmetric, per-pair [`TokenPairMetric`].
macro_rules! token_similarity {
    ($metric:ty, $name:literal) => {
        impl sage_core::Similarity for $metric {
            fn name(&self) -> &str {
                $name
            }

            fn score(&self, reference: &str, candidate: &str) -> sage_core::Result<f32> {
                use $crate::tokens::{cl100k, TokenPairMetric};
                Ok(self.compare(
                    &self.prepare(cl100k(reference)),
                    &self.prepare(cl100k(candidate)),
                ) as f32)
            }

            fn score_pairs(&self, pairs: &[(&str, &str)]) -> sage_core::Result<Vec<f32>> {
                Ok($crate::tokens::score_token_pairs(self, pairs)?
                    .into_iter()
                    .map(|s| s as f32)
                    .collect())
            }
        }
    };
}
pub(crate) use token_similarity;

/// Sorted copy of `tokens` (a multiset in merge-friendly form).
///
/// From [`RADIX_FROM`] values on, an LSD radix sort with digits of at most 11 bits over the
/// largest value's width (cl100k's ids take 17 bits: two passes of 9). At a 450-token text it
/// takes half the time of `sort_unstable`, and sorting was ~13% of a ROUGE run (perf); on short
/// texts the comparison sort is faster.
pub(crate) fn sorted(mut tokens: Vec<u32>) -> Vec<u32> {
    const MAX_DIGIT: u32 = 11;
    if tokens.len() < RADIX_FROM {
        tokens.sort_unstable();
        return tokens;
    }
    let largest = tokens.iter().copied().max().unwrap_or(0);
    let bits = (u32::BITS - largest.leading_zeros()).max(1);
    let passes = bits.div_ceil(MAX_DIGIT);
    let digit = bits.div_ceil(passes);
    let mask = (1u32 << digit) - 1;
    let mut counts = [0u32; 1 << MAX_DIGIT];
    let counts = &mut counts[..1 << digit];
    let mut scratch = vec![0u32; tokens.len()];
    for pass in 0..passes {
        let shift = pass * digit;
        let bucket = |t: u32| ((t >> shift) & mask) as usize;
        counts.fill(0);
        for &t in &tokens {
            counts[bucket(t)] += 1;
        }
        // each bucket's first place
        let mut start = 0;
        for count in counts.iter_mut() {
            (start, *count) = (start + *count, start);
        }
        for &t in &tokens {
            let place = &mut counts[bucket(t)];
            scratch[*place as usize] = t;
            *place += 1;
        }
        std::mem::swap(&mut tokens, &mut scratch);
    }
    tokens
}

/// Values from which [`sorted`] radix-sorts: below ~100 `sort_unstable` was as fast or faster.
const RADIX_FROM: usize = 128;

/// Sorted bigrams of `tokens`, each packed in a u64.
pub(crate) fn sorted_bigrams(tokens: &[u32]) -> Vec<u64> {
    let mut bigrams: Vec<u64> = tokens
        .windows(2)
        .map(|w| (u64::from(w[0]) << 32) | u64::from(w[1]))
        .collect();
    bigrams.sort_unstable();
    bigrams
}

/// Σ min(count_a(x), count_b(x)) over two sorted multisets.
///
/// Branch-free steps: which side advances is data the CPU cannot predict, and the branching
/// merge was most of a clustering job's time (2 million pairs per subset; perf).
pub(crate) fn multiset_intersection<T: Ord + Copy>(a: &[T], b: &[T]) -> usize {
    let (mut i, mut j, mut common) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        common += usize::from(x == y);
        i += usize::from(x <= y);
        j += usize::from(y <= x);
    }
    common
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multiset_intersection_counts_multiplicity() {
        assert_eq!(multiset_intersection(&[1, 1, 2, 5], &[1, 1, 1, 2, 3]), 3);
        assert_eq!(multiset_intersection::<u32>(&[], &[1]), 0);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 300, rng_seed: proptest::test_runner::RngSeed::Fixed(30), ..Default::default() })]
        /// Both of [`sorted`]'s paths, narrow and full-width values (one to three radix passes).
        #[test]
        fn sorted_is_sort_unstable(
            values in proptest::collection::vec(proptest::prelude::any::<u32>(), 0..600),
            shift in 0u32..32,
        ) {
            let values: Vec<u32> = values.into_iter().map(|v| v >> shift).collect();
            let mut want = values.clone();
            want.sort_unstable();
            proptest::prop_assert_eq!(sorted(values), want);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 2000, rng_seed: proptest::test_runner::RngSeed::Fixed(29), ..Default::default() })]
        #[test]
        fn multiset_intersection_is_the_sum_of_smaller_counts(
            a in proptest::collection::vec(0u64..12, 0..40),
            b in proptest::collection::vec(0u64..12, 0..40),
        ) {
            let count = |v: &[u64], x: u64| v.iter().filter(|&&y| y == x).count();
            let expected: usize = (0..12).map(|x| count(&a, x).min(count(&b, x))).sum();
            let (mut a, mut b) = (a, b);
            a.sort_unstable();
            b.sort_unstable();
            proptest::prop_assert_eq!(multiset_intersection(&a, &b), expected);
        }
    }
}
