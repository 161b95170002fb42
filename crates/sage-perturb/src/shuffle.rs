//! Order perturbations: sentence shuffle, word shuffle, word-pair jumbling.

use rand::seq::SliceRandom;
use rand::Rng;
use unicode_segmentation::UnicodeSegmentation;

use crate::{ExperimentRng, Perturbation, Perturbed, Provenance, Result};

/// A uniformly random permutation of the sentences (Unicode sentence boundaries, UAX #29).
///
/// Sentences move; the whitespace between them stays where it was, so paragraph breaks keep
/// their places and no two sentences run together. Like the reference's `random.shuffle`, the
/// permutation may be the identity (always so for a one-sentence text).
#[derive(Clone, Copy, Debug, Default)]
pub struct SentenceShuffle;

impl Perturbation for SentenceShuffle {
    fn id(&self) -> String {
        "sentence-shuffle".to_owned()
    }

    fn apply(&self, text: &str, rng: &mut ExperimentRng) -> Result<Perturbed> {
        // Whitespace between sentences stays in place: `gaps[k]` follows sentence slot k,
        // `lead` precedes the first. UAX #29 makes a lone line break its own "sentence"; such
        // whitespace-only pieces join the gap they sit in.
        let mut lead = String::new();
        let mut sentences: Vec<&str> = Vec::new();
        let mut gaps: Vec<String> = Vec::new();
        for bound in text.split_sentence_bounds() {
            let body = bound.trim();
            let leading = &bound[..bound.len() - bound.trim_start().len()];
            gaps.last_mut()
                .unwrap_or(&mut lead)
                .push_str(if body.is_empty() { bound } else { leading });
            if !body.is_empty() {
                sentences.push(body);
                gaps.push(bound[leading.len() + body.len()..].to_owned());
            }
        }
        let mut order: Vec<usize> = (0..sentences.len()).collect();
        order.shuffle(rng);
        let mut out = lead;
        for (slot, &source) in order.iter().enumerate() {
            out.push_str(sentences[source]);
            out.push_str(&gaps[slot]);
        }
        Ok(Perturbed {
            text: out,
            provenance: Provenance::SentenceShuffle { order },
        })
    }
}

/// A uniformly random permutation of all whitespace-separated words, joined by single spaces (the
/// reference's `" ".join(shuffled(text.split()))`).
#[derive(Clone, Copy, Debug, Default)]
pub struct WordShuffle;

impl Perturbation for WordShuffle {
    fn id(&self) -> String {
        "word-shuffle".to_owned()
    }

    fn apply(&self, text: &str, rng: &mut ExperimentRng) -> Result<Perturbed> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let mut order: Vec<usize> = (0..words.len()).collect();
        order.shuffle(rng);
        let out = order
            .iter()
            .map(|&i| words[i])
            .collect::<Vec<_>>()
            .join(" ");
        Ok(Perturbed {
            text: out,
            provenance: Provenance::WordShuffle { order },
        })
    }
}

/// ALIGN-SIM's jumbling: `swaps` random swaps of two distinct word positions (whitespace words,
/// joined by single spaces). Fewer than two words: unchanged.
#[derive(Clone, Copy, Debug)]
pub struct Jumbling {
    /// Number of swaps (1, 2 or 3 in the paper).
    pub swaps: usize,
}

impl Perturbation for Jumbling {
    fn id(&self) -> String {
        format!("jumbling(n={})", self.swaps)
    }

    fn apply(&self, text: &str, rng: &mut ExperimentRng) -> Result<Perturbed> {
        let mut words: Vec<&str> = text.split_whitespace().collect();
        let mut swaps = Vec::new();
        if words.len() >= 2 {
            for _ in 0..self.swaps {
                let i = rng.gen_range(0..words.len());
                let mut j = rng.gen_range(0..words.len() - 1);
                if j >= i {
                    j += 1;
                }
                words.swap(i, j);
                swaps.push((i, j));
            }
        }
        Ok(Perturbed {
            text: words.join(" "),
            provenance: Provenance::Jumbling { swaps },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sage_core::RunSeed;

    #[test]
    fn sentence_shuffle_moves_sentences_not_separators() {
        let text = "  First one. Second one!\n\nThird one? Fourth.";
        let out = SentenceShuffle
            .apply(text, &mut RunSeed(5).rng("s"))
            .unwrap();
        let Provenance::SentenceShuffle { order } = &out.provenance else {
            panic!()
        };
        let sentences = ["First one.", "Second one!", "Third one?", "Fourth."];
        let separators = [" ", "\n\n", " ", ""];
        let body: String = order
            .iter()
            .enumerate()
            .map(|(slot, &s)| format!("{}{}", sentences[s], separators[slot]))
            .collect();
        let want = format!("  {body}");
        assert_eq!(out.text, want);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, [0, 1, 2, 3]);
    }

    #[test]
    fn word_shuffle_is_a_permutation() {
        let text = "  one two\tthree\nfour five  ";
        let out = WordShuffle.apply(text, &mut RunSeed(5).rng("w")).unwrap();
        let mut got: Vec<&str> = out.text.split(' ').collect();
        got.sort_unstable();
        assert_eq!(got, ["five", "four", "one", "three", "two"]);
    }

    #[test]
    fn jumbling_swaps_distinct_positions() {
        let out = Jumbling { swaps: 1 }
            .apply("a b c d e", &mut RunSeed(2).rng("j"))
            .unwrap();
        let Provenance::Jumbling { swaps } = &out.provenance else {
            panic!()
        };
        assert_eq!(swaps.len(), 1);
        let (i, j) = swaps[0];
        assert_ne!(i, j);
        let mut words = ["a", "b", "c", "d", "e"];
        words.swap(i, j);
        assert_eq!(out.text, words.join(" "));
        assert_eq!(
            Jumbling { swaps: 3 }
                .apply("solo", &mut RunSeed(2).rng("j"))
                .unwrap()
                .text,
            "solo"
        );
    }
}
