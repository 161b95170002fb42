//! Superficial perturbations (meaning kept): random capitalisation, character deletion,
//! numerisation.

use rand::Rng;
use unicode_segmentation::UnicodeSegmentation;

use crate::{ExperimentRng, Perturbation, Perturbed, Provenance, Result};

/// Each character upper-cased with probability `probability` (default 0.25), never case-swapped.
///
/// One uniform draw per character (code point), as the reference's
/// `c.upper() if random() < p else c`. Characters whose upper case is longer (ß → SS) expand, as
/// Python's `str.upper` does.
#[derive(Clone, Copy, Debug)]
pub struct RandomCapitalisation {
    /// Probability that a character is upper-cased.
    pub probability: f64,
}

impl Default for RandomCapitalisation {
    fn default() -> Self {
        RandomCapitalisation { probability: 0.25 }
    }
}

impl Perturbation for RandomCapitalisation {
    fn id(&self) -> String {
        format!("random-capitalisation(p={})", self.probability)
    }

    fn apply(&self, text: &str, rng: &mut ExperimentRng) -> Result<Perturbed> {
        let mut out = String::with_capacity(text.len());
        let mut changed = 0usize;
        for c in text.chars() {
            if rng.gen::<f64>() < self.probability {
                let before = out.len();
                out.extend(c.to_uppercase());
                changed += usize::from(out[before..] != *c.encode_utf8(&mut [0; 4]));
            } else {
                out.push(c);
            }
        }
        Ok(Perturbed {
            text: out,
            provenance: Provenance::RandomCapitalisation {
                characters_changed: changed,
            },
        })
    }
}

/// Every `every`-th character (default 10) of each sentence removed, unless it is whitespace, so
/// word boundaries survive.
///
/// Positions count code points from the start of each sentence (Unicode sentence boundaries,
/// UAX #29, the same splitter as sentence shuffling), whitespace included: in each sentence the
/// characters at 1-based positions 10, 20, 30, ... are removed when they are not whitespace.
#[derive(Clone, Copy, Debug)]
pub struct CharacterDeletion {
    /// Period of the deletion.
    pub every: usize,
}

impl Default for CharacterDeletion {
    fn default() -> Self {
        CharacterDeletion { every: 10 }
    }
}

impl Perturbation for CharacterDeletion {
    fn id(&self) -> String {
        format!("character-deletion(every={})", self.every)
    }

    fn apply(&self, text: &str, _rng: &mut ExperimentRng) -> Result<Perturbed> {
        let every = self.every.max(1);
        let mut out = String::with_capacity(text.len());
        let mut removed = 0usize;
        for sentence in text.split_sentence_bounds() {
            for (i, c) in sentence.chars().enumerate() {
                if (i + 1) % every == 0 && !c.is_whitespace() {
                    removed += 1;
                } else {
                    out.push(c);
                }
            }
        }
        Ok(Perturbed {
            text: out,
            provenance: Provenance::CharacterDeletion {
                characters_removed: removed,
            },
        })
    }
}

/// Lower-case `e → 3`, `i → 1`, `a → 4`, `o → 0`; nothing else changes.
#[derive(Clone, Copy, Debug, Default)]
pub struct Numerisation;

impl Perturbation for Numerisation {
    fn id(&self) -> String {
        "numerisation".to_owned()
    }

    fn apply(&self, text: &str, _rng: &mut ExperimentRng) -> Result<Perturbed> {
        let mut replaced = 0usize;
        let out = text
            .chars()
            .map(|c| {
                let digit = match c {
                    'e' => '3',
                    'i' => '1',
                    'a' => '4',
                    'o' => '0',
                    other => return other,
                };
                replaced += 1;
                digit
            })
            .collect();
        Ok(Perturbed {
            text: out,
            provenance: Provenance::Numerisation {
                characters_replaced: replaced,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sage_core::RunSeed;

    fn rng() -> ExperimentRng {
        RunSeed(1).rng("test")
    }

    #[test]
    fn capitalisation_only_raises_case() {
        let text = "the quick brown fox jumps over the lazy dog. THE END.";
        let out = RandomCapitalisation::default()
            .apply(text, &mut rng())
            .unwrap();
        assert_eq!(out.text.to_lowercase(), text.to_lowercase());
        for (a, b) in text.chars().zip(out.text.chars()) {
            assert!(a == b || b == a.to_ascii_uppercase(), "{a} became {b}");
        }
        let Provenance::RandomCapitalisation { characters_changed } = out.provenance else {
            panic!()
        };
        let raised = text
            .chars()
            .zip(out.text.chars())
            .filter(|(a, b)| a != b)
            .count();
        assert_eq!(characters_changed, raised);
        assert!(raised > 0);
    }

    #[test]
    fn capitalisation_rate_is_a_quarter() {
        let text = "a".repeat(20_000);
        let out = RandomCapitalisation::default()
            .apply(&text, &mut rng())
            .unwrap();
        let upper = out.text.chars().filter(|c| *c == 'A').count() as f64 / 20_000.0;
        assert!((upper - 0.25).abs() < 0.015, "{upper}");
    }

    #[test]
    fn deletion_counts_per_sentence_and_spares_spaces() {
        // hand-checked: positions 10 and 20 of each sentence; position 10 of the second sentence is
        // a space and survives
        let text = "abcdefghijklmnopqrstuvwxyz. Second se tence here.";
        let out = CharacterDeletion::default()
            .apply(text, &mut rng())
            .unwrap();
        // sentence 1 "abcdefghijklmnopqrstuvwxyz. " loses j (10) and t (20)
        // sentence 2 "Second se tence here." keeps the space at 10, loses the last e (20)
        assert_eq!(out.text, "abcdefghiklmnopqrsuvwxyz. Second se tence her.");
        assert_eq!(
            out.provenance,
            Provenance::CharacterDeletion {
                characters_removed: 3
            }
        );
    }

    #[test]
    fn numerisation_replaces_lower_case_vowels_only() {
        let out = Numerisation
            .apply("A tale of Eire, Oslo and Iowa.", &mut rng())
            .unwrap();
        assert_eq!(out.text, "A t4l3 0f E1r3, Osl0 4nd I0w4.");
    }
}
