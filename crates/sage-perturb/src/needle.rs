//! Information-sensitivity perturbations: lorem-ipsum needle insertion and contiguous token
//! removal, both measured in cl100k_base tokens.

use std::sync::OnceLock;

use crate::{ExperimentRng, PerturbError, Perturbation, Perturbed, Provenance, Result};

/// Words of lorem ipsum generated for the filler: ~100k cl100k tokens, enough for a needle as
/// long as any document of the SAGE corpora.
const FILLER_WORDS: usize = 50_000;

/// The filler's cl100k tokens: `lipsum::lipsum(50_000)` — Cicero-based Markov text that starts
/// "Lorem ipsum dolor sit amet", generated from lipsum's fixed-seed ChaCha RNG, so identical on
/// every run and machine (pinned by a test; Cargo.lock pins the lipsum version).
pub fn filler_tokens() -> &'static [u32] {
    static TOKENS: OnceLock<Vec<u32>> = OnceLock::new();
    TOKENS.get_or_init(|| sage_tokens::encode(&lipsum::lipsum(FILLER_WORDS)))
}

/// The first `k` filler tokens decoded to a string. Past the end of the filler (a document of
/// over ~100k tokens at p = 1) the filler repeats from its start.
pub fn filler(k: usize) -> Result<String> {
    let tokens = filler_tokens();
    let ids: Vec<u32> = tokens.iter().copied().cycle().take(k).collect();
    Ok(sage_tokens::decode_slice(&ids)?)
}

/// The largest needle, as a share of the document: 10 documents' worth of filler (SAGE uses at
/// most 1). Bounded so that a typo (`p=1e9`) is an error before any work, not a 6 GB line or an
/// allocation failure.
pub const MAX_NEEDLE_PROPORTION: f64 = 10.0;

/// `value` in [0, max], else an error naming the parameter.
pub(crate) fn check_unit(name: &'static str, value: f64, max: f64) -> Result<()> {
    if (0.0..=max).contains(&value) {
        Ok(())
    } else {
        Err(PerturbError::InvalidParameter {
            name,
            value: value.to_string(),
            expected: format!("a number in [0, {max}]"),
        })
    }
}

/// Inserts lorem-ipsum filler of `k = max(⌊proportion × N⌋, 1)` cl100k tokens, N the document's
/// token count, at code-point index `⌊position × len(text)⌋` (SAGE: proportions 0.15, 0.5, 1.0;
/// positions 0, 0.5, 1.0). The filler is inserted verbatim, with no added spaces, exactly as the
/// reference's `text[:i] + needle + text[i:]`.
#[derive(Clone, Copy, Debug)]
pub struct NeedleInsertion {
    /// Filler length as a share of the document's token count.
    pub proportion: f64,
    /// Where to insert, as a share of the document's length in code points.
    pub position: f64,
}

impl Perturbation for NeedleInsertion {
    fn id(&self) -> String {
        format!(
            "needle-insertion(p={},pos={})",
            self.proportion, self.position
        )
    }

    fn apply(&self, text: &str, _rng: &mut ExperimentRng) -> Result<Perturbed> {
        check_unit("proportion", self.proportion, MAX_NEEDLE_PROPORTION)?;
        check_unit("position", self.position, 1.0)?;
        let document_tokens = sage_tokens::count(text);
        // same float expression as the reference: int(p * N), int(pos * len(text))
        let needle_tokens = ((self.proportion * document_tokens as f64) as usize).max(1);
        let chars = text.chars().count();
        let char_index = ((self.position * chars as f64) as usize).min(chars);
        let byte_index = text
            .char_indices()
            .nth(char_index)
            .map_or(text.len(), |(b, _)| b);
        let needle = filler(needle_tokens)?;
        let mut out = String::with_capacity(text.len() + needle.len());
        out.push_str(&text[..byte_index]);
        out.push_str(&needle);
        out.push_str(&text[byte_index..]);
        Ok(Perturbed {
            text: out,
            provenance: Provenance::NeedleInsertion {
                proportion: self.proportion,
                position: self.position,
                document_tokens,
                needle_tokens,
                char_index,
            },
        })
    }
}

/// Removes a contiguous span of `⌊N × size⌋` cl100k tokens starting at token
/// `⌊N × position × (1 − size)⌋` and decodes the rest (SAGE: sizes 0.15, 0.5, 0.9; positions
/// 0, 0.5, 1.0). A character cut by the span's edges is removed whole (see
/// [`sage_tokens::decode_slice`]): the output never contains a U+FFFD the input did not have.
#[derive(Clone, Copy, Debug)]
pub struct TokenRemoval {
    /// Share of the tokens removed.
    pub size: f64,
    /// Where the span starts, as a share of the room left for it.
    pub position: f64,
}

impl Perturbation for TokenRemoval {
    fn id(&self) -> String {
        format!("token-removal(size={},pos={})", self.size, self.position)
    }

    fn apply(&self, text: &str, _rng: &mut ExperimentRng) -> Result<Perturbed> {
        check_unit("size", self.size, 1.0)?;
        check_unit("position", self.position, 1.0)?;
        let tokens = sage_tokens::encode(text);
        let n = tokens.len();
        // same float expressions as the reference: int(N * size), int(N * pos * (1 - size))
        let removed = ((n as f64 * self.size) as usize).min(n);
        let start = ((n as f64 * self.position * (1.0 - self.size)) as usize).min(n - removed);
        let mut out = sage_tokens::decode_slice(&tokens[..start])?;
        out.push_str(&sage_tokens::decode_slice(&tokens[start + removed..])?);
        Ok(Perturbed {
            text: out,
            provenance: Provenance::TokenRemoval {
                size: self.size,
                position: self.position,
                document_tokens: n,
                start_token: start,
                removed_tokens: removed,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sage_core::RunSeed;

    fn rng() -> ExperimentRng {
        RunSeed(0).rng("needle")
    }

    #[test]
    fn filler_is_fixed_lorem_ipsum_with_a_varied_vocabulary() {
        let head = filler(12).unwrap();
        assert!(head.starts_with("Lorem ipsum dolor sit amet"), "{head}");
        let tokens = filler_tokens();
        assert!(tokens.len() > 90_000, "{}", tokens.len());
        let mut distinct = tokens[..5_000].to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        assert!(
            distinct.len() > 800,
            "only {} distinct tokens in the first 5,000",
            distinct.len()
        );
        // Pinned: a different filler changes every sensitivity score.
        assert_eq!(fnv(&filler(2_000).unwrap()), FILLER_FNV);
    }

    fn fnv(s: &str) -> u64 {
        s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        })
    }

    const FILLER_FNV: u64 = 2_010_254_039_139_901_872;

    #[test]
    fn needle_goes_where_asked() {
        let text = "abcdefghij"; // 10 code points, 1 token? (counted, not assumed)
        let n = sage_tokens::count(text);
        for (position, index) in [(0.0, 0), (0.5, 5), (1.0, 10)] {
            let out = NeedleInsertion {
                proportion: 1.0,
                position,
            }
            .apply(text, &mut rng())
            .unwrap();
            let needle = filler(n.max(1)).unwrap();
            let mut want = text.to_owned();
            want.insert_str(index, &needle);
            assert_eq!(out.text, want);
        }
        let empty = NeedleInsertion {
            proportion: 0.15,
            position: 0.5,
        }
        .apply("", &mut rng())
        .unwrap();
        assert_eq!(empty.text, filler(1).unwrap());
    }

    #[test]
    fn needle_counts_code_points_not_bytes() {
        let text = "ééééé"; // 5 code points, 10 bytes
        let out = NeedleInsertion {
            proportion: 0.15,
            position: 0.5,
        }
        .apply(text, &mut rng())
        .unwrap();
        assert!(
            out.text.starts_with("éé") && !out.text.starts_with("ééé"),
            "{}",
            out.text
        );
        assert!(out.text.ends_with("ééé"));
    }

    #[test]
    fn removal_cuts_the_documented_span() {
        let text = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty";
        let tokens = sage_tokens::encode(text);
        assert_eq!(tokens.len(), 20); // each " word" is one token
                                      // N=20, size=0.5 -> 10 removed, pos=0.5 -> start ⌊20·0.5·0.5⌋ = 5
        let out = TokenRemoval {
            size: 0.5,
            position: 0.5,
        }
        .apply(text, &mut rng())
        .unwrap();
        assert_eq!(
            out.text,
            "one two three four five sixteen seventeen eighteen nineteen twenty"
        );
        let all = TokenRemoval {
            size: 1.0,
            position: 0.5,
        }
        .apply(text, &mut rng())
        .unwrap();
        assert_eq!(all.text, "");
        let end = TokenRemoval {
            size: 0.15,
            position: 1.0,
        }
        .apply(text, &mut rng())
        .unwrap();
        assert_eq!(end.text, "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen");
    }

    #[test]
    fn bad_parameters_are_errors() {
        assert!(TokenRemoval {
            size: 1.5,
            position: 0.0
        }
        .apply("x", &mut rng())
        .is_err());
        assert!(NeedleInsertion {
            proportion: 0.5,
            position: -0.1
        }
        .apply("x", &mut rng())
        .is_err());
        assert!(NeedleInsertion {
            proportion: f64::NAN,
            position: 0.1
        }
        .apply("x", &mut rng())
        .is_err());
    }
}
