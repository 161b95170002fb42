//! The distinct texts of a batch of pairs, numbered, so that a metric prepares each text once.

use rustc_hash::FxHashMap;

/// Numbers the distinct texts of a batch.
///
/// A batch names the same text many times (a clustering subset of n texts is n(n−1)/2 pairs),
/// mostly through the same slice: slices are told apart by address and length first (16 bytes
/// hashed), and only a slice not met before is hashed whole, so that equal texts in different
/// buffers still share one number. Hashing whole texts for every pair was ~45% of a classical
/// clustering job (perf).
pub(crate) struct DistinctTexts<'a> {
    by_slice: FxHashMap<(usize, usize), usize>,
    // Fx, not SipHash: the keys are whole documents, hashed once per distinct slice
    by_content: FxHashMap<&'a str, usize>,
    distinct: Vec<&'a str>,
}

impl<'a> DistinctTexts<'a> {
    pub(crate) fn with_capacity(pairs: usize) -> Self {
        Self {
            by_slice: FxHashMap::with_capacity_and_hasher(pairs.min(1 << 16), Default::default()),
            by_content: FxHashMap::default(),
            distinct: Vec::new(),
        }
    }

    /// The number of `text`: 0, 1, ... in order of first appearance.
    pub(crate) fn id(&mut self, text: &'a str) -> usize {
        let Self {
            by_slice,
            by_content,
            distinct,
        } = self;
        *by_slice
            .entry((text.as_ptr() as usize, text.len()))
            .or_insert_with(|| {
                *by_content.entry(text).or_insert_with(|| {
                    distinct.push(text);
                    distinct.len() - 1
                })
            })
    }

    /// The distinct texts, by number.
    pub(crate) fn distinct(&self) -> &[&'a str] {
        &self.distinct
    }

    /// Each pair as the numbers of its two texts.
    pub(crate) fn number_pairs(&mut self, pairs: &[(&'a str, &'a str)]) -> Vec<(usize, usize)> {
        pairs
            .iter()
            .map(|&(a, b)| (self.id(a), self.id(b)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_texts_in_different_buffers_share_a_number() {
        let (one, other) = (String::from("same words"), String::from("same words"));
        let mut texts = DistinctTexts::with_capacity(4);
        let ids = [
            texts.id(&one),
            texts.id(&other),
            texts.id(&one[..4]),
            texts.id(&other[..4]),
            texts.id(&one),
            texts.id("other words"),
        ];
        assert_eq!(ids, [0, 0, 1, 1, 0, 2]);
        assert_eq!(texts.distinct, ["same words", "same", "other words"]);
    }
}
