//! # sage-perturb
//!
//! Every text perturbation of SAGE, ALIGN-SIM and SAGE's retrieval augmentation, behind one trait,
//! [`Perturbation`]: `apply(text, rng)` returns the new text and a [`Provenance`] saying what
//! changed, so reports can show it. Each is a pure function of the text and the generator:
//! callers derive the generator from the run seed (`RunSeed::rng_for_item(perturbation id,
//! item index)`), which makes results independent of thread count. No perturbation panics on
//! any UTF-8 input.
//!
//! | perturbation | parameters | used by |
//! |---|---|---|
//! | [`RandomCapitalisation`] | probability 0.25 | SAGE robustness (superficial), SAGE retrieval |
//! | [`CharacterDeletion`] | every 10th character per sentence, spaces kept | SAGE robustness (superficial), SAGE retrieval |
//! | [`Numerisation`] | e→3, i→1, a→4, o→0 | SAGE robustness (superficial), SAGE retrieval |
//! | [`NegationToggle`] | rule table (see type) | SAGE robustness (semantic), SAGE retrieval |
//! | [`SentenceShuffle`] | — | SAGE robustness (semantic), SAGE retrieval |
//! | [`WordShuffle`] | — | SAGE robustness (semantic), SAGE retrieval |
//! | [`NeedleInsertion`] | proportion {0.15, 0.5, 1.0} (retrieval: {0.15, 0.5}) × position {0, 0.5, 1} | SAGE sensitivity, SAGE retrieval |
//! | [`TokenRemoval`] | size {0.15, 0.5, 0.9} (retrieval: {0.15, 0.5}) × position {0, 0.5, 1} | SAGE sensitivity, SAGE retrieval |
//! | [`SynonymReplacement`] | n ∈ {1, 2, 3} words, WordNet | ALIGN-SIM criterion 2 |
//! | [`AntonymReplacement`] | one word, WordNet | ALIGN-SIM criterion 3 |
//! | [`Jumbling`] | n ∈ {1, 2, 3} swaps | ALIGN-SIM criterion 5 |
//!
//! [`robustness_set`], [`sensitivity_set`] and [`retrieval_set`] build the exact lists the SAGE
//! tasks use; [`PerturbationSpec`] parses `kind` + `key=value` parameters (the `sage perturb`
//! command line).
#![deny(missing_docs)]

mod lexical;
mod needle;
mod negation;
mod shuffle;
mod surface;
pub mod wordnet;

use std::path::PathBuf;
use std::sync::Arc;

pub use lexical::{AntonymReplacement, SynonymReplacement, STOPWORDS};
pub use needle::{filler, filler_tokens, NeedleInsertion, TokenRemoval};
pub use negation::{NegationToggle, Toggle};
pub use sage_core::ExperimentRng;
use serde::{Deserialize, Serialize};
pub use shuffle::{Jumbling, SentenceShuffle, WordShuffle};
pub use surface::{CharacterDeletion, Numerisation, RandomCapitalisation};
pub use wordnet::WordNet;

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PerturbError {
    /// A parameter outside its domain.
    #[error("parameter {name} = {value}: expected {expected}")]
    InvalidParameter {
        /// Parameter name.
        name: &'static str,
        /// The value given.
        value: String,
        /// What is allowed.
        expected: String,
    },
    /// An unknown perturbation kind or parameter.
    #[error("{0}")]
    Spec(String),
    /// The WordNet database is missing or malformed.
    #[error("{}{}: {message}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    WordNet {
        /// The file or folder.
        path: PathBuf,
        /// 1-based line, when known.
        line: Option<usize>,
        /// What was wrong.
        message: String,
    },
    /// A token id that is not cl100k_base's.
    #[error(transparent)]
    Token(#[from] sage_tokens::UnknownToken),
    /// An error from sage-core.
    #[error(transparent)]
    Core(#[from] sage_core::SageError),
}

/// Result alias of this crate.
pub type Result<T, E = PerturbError> = std::result::Result<T, E>;

/// A text perturbation.
pub trait Perturbation: Send + Sync {
    /// A stable id including the parameters, e.g. `needle-insertion(p=0.15,pos=0.5)`: used in
    /// reports and as the label from which per-item generators are derived.
    fn id(&self) -> String;

    /// The perturbed text and what changed. Deterministic in `(text, rng state)`.
    fn apply(&self, text: &str, rng: &mut ExperimentRng) -> Result<Perturbed>;
}

/// A perturbed text with its provenance.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Perturbed {
    /// The new text.
    pub text: String,
    /// What was done to get it.
    pub provenance: Provenance,
}

/// One replaced word.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Replacement {
    /// The word replaced (lower-cased).
    pub word: String,
    /// What replaced it.
    pub replacement: String,
    /// How many occurrences were replaced.
    pub occurrences: usize,
}

/// What a perturbation changed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[allow(missing_docs)] // the fields are named for what they count
pub enum Provenance {
    RandomCapitalisation {
        characters_changed: usize,
    },
    CharacterDeletion {
        characters_removed: usize,
    },
    Numerisation {
        characters_replaced: usize,
    },
    NegationToggle {
        toggles: Vec<Toggle>,
    },
    /// `order[slot]` = index of the original sentence now in `slot`.
    SentenceShuffle {
        order: Vec<usize>,
    },
    /// `order[slot]` = index of the original word now in `slot`.
    WordShuffle {
        order: Vec<usize>,
    },
    NeedleInsertion {
        proportion: f64,
        position: f64,
        document_tokens: usize,
        needle_tokens: usize,
        char_index: usize,
    },
    TokenRemoval {
        size: f64,
        position: f64,
        document_tokens: usize,
        start_token: usize,
        removed_tokens: usize,
    },
    SynonymReplacement {
        requested: usize,
        candidates: usize,
        replacements: Vec<Replacement>,
    },
    AntonymReplacement {
        replacement: Option<Replacement>,
    },
    /// Word positions swapped, in order.
    Jumbling {
        swaps: Vec<(usize, usize)>,
    },
}

/// SAGE's six transformation-robustness perturbations: three superficial, then three semantic.
pub fn robustness_set() -> Vec<Box<dyn Perturbation>> {
    vec![
        Box::new(RandomCapitalisation::default()),
        Box::new(CharacterDeletion::default()),
        Box::new(Numerisation),
        Box::new(NegationToggle),
        Box::new(SentenceShuffle),
        Box::new(WordShuffle),
    ]
}

const POSITIONS: [f64; 3] = [0.0, 0.5, 1.0];

/// SAGE's information-sensitivity perturbations: needle insertion at proportions
/// {0.15, 0.5, 1.0} and token removal at sizes {0.15, 0.5, 0.9}, each at positions {0, 0.5, 1}.
pub fn sensitivity_set() -> Vec<Box<dyn Perturbation>> {
    information_set(&[0.15, 0.5, 1.0], &[0.15, 0.5, 0.9])
}

/// SAGE's 18 retrieval-robustness perturbations: the six robustness transforms, then needle
/// insertion and token removal at {0.15, 0.5} × positions {0, 0.5, 1}.
pub fn retrieval_set() -> Vec<Box<dyn Perturbation>> {
    let mut set = robustness_set();
    set.extend(information_set(&[0.15, 0.5], &[0.15, 0.5]));
    set
}

fn information_set(proportions: &[f64], sizes: &[f64]) -> Vec<Box<dyn Perturbation>> {
    let mut set: Vec<Box<dyn Perturbation>> = Vec::new();
    for &proportion in proportions {
        for position in POSITIONS {
            set.push(Box::new(NeedleInsertion {
                proportion,
                position,
            }));
        }
    }
    for &size in sizes {
        for position in POSITIONS {
            set.push(Box::new(TokenRemoval { size, position }));
        }
    }
    set
}

/// A perturbation named by kind and `key=value` parameters, as on the command line.
#[derive(Clone, Debug, PartialEq)]
pub struct PerturbationSpec {
    /// One of [`PerturbationSpec::KINDS`].
    pub kind: String,
    /// `key=value` parameters.
    pub params: Vec<(String, String)>,
}

impl PerturbationSpec {
    /// Every kind with its parameters and defaults.
    pub const KINDS: [(&'static str, &'static str); 11] = [
        ("random-capitalisation", "p=0.25 (0 to 1)"),
        ("character-deletion", "every=10 (whole, 1 to 1e9)"),
        ("numerisation", ""),
        ("negation-toggle", ""),
        ("sentence-shuffle", ""),
        ("word-shuffle", ""),
        ("needle-insertion", "p=0.15 (0 to 10) pos=0.5 (0 to 1)"),
        ("token-removal", "size=0.15 (0 to 1) pos=0.5 (0 to 1)"),
        (
            "synonym-replacement",
            "n=1 (whole, 0 to 1e6; needs WordNet)",
        ),
        ("antonym-replacement", "(needs WordNet)"),
        ("jumbling", "n=1 (whole, 0 to 1e6)"),
    ];

    /// Builds the perturbation; `wordnet` is opened only for the kinds that need it.
    pub fn build(
        &self,
        wordnet: impl FnOnce() -> Result<Arc<WordNet>>,
    ) -> Result<Box<dyn Perturbation>> {
        let mut used = Vec::new();
        // Every parameter is checked here, before any text is read: a bad one costs nothing.
        let mut number = |name: &'static str, default: f64, max: f64| -> Result<f64> {
            used.push(name);
            let value = match self.params.iter().find(|(k, _)| k == name) {
                None => default,
                Some((_, v)) => v
                    .parse::<f64>()
                    .map_err(|_| PerturbError::InvalidParameter {
                        name,
                        value: v.clone(),
                        expected: "a number".into(),
                    })?,
            };
            needle::check_unit(name, value, max)?;
            Ok(value)
        };
        // counts are bounded too: a typo must not become hours of work or memory
        let count = |x: f64, name: &'static str, min: f64, max: f64| -> Result<usize> {
            if x.fract() == 0.0 && (min..=max).contains(&x) {
                Ok(x as usize)
            } else {
                Err(PerturbError::InvalidParameter {
                    name,
                    value: x.to_string(),
                    expected: format!("a whole number in [{min}, {max:e}]"),
                })
            }
        };
        let built: Box<dyn Perturbation> = match self.kind.as_str() {
            "random-capitalisation" => Box::new(RandomCapitalisation {
                probability: number("p", 0.25, 1.0)?,
            }),
            "character-deletion" => Box::new(CharacterDeletion {
                every: count(number("every", 10.0, f64::MAX)?, "every", 1.0, 1e9)?,
            }),
            "numerisation" => Box::new(Numerisation),
            "negation-toggle" => Box::new(NegationToggle),
            "sentence-shuffle" => Box::new(SentenceShuffle),
            "word-shuffle" => Box::new(WordShuffle),
            "needle-insertion" => Box::new(NeedleInsertion {
                proportion: number("p", 0.15, needle::MAX_NEEDLE_PROPORTION)?,
                position: number("pos", 0.5, 1.0)?,
            }),
            "token-removal" => Box::new(TokenRemoval {
                size: number("size", 0.15, 1.0)?,
                position: number("pos", 0.5, 1.0)?,
            }),
            "jumbling" => Box::new(Jumbling {
                swaps: count(number("n", 1.0, f64::MAX)?, "n", 0.0, 1e6)?,
            }),
            "synonym-replacement" => {
                let words = count(number("n", 1.0, f64::MAX)?, "n", 0.0, 1e6)?;
                Box::new(SynonymReplacement {
                    wordnet: wordnet()?,
                    words,
                })
            }
            "antonym-replacement" => Box::new(AntonymReplacement {
                wordnet: wordnet()?,
            }),
            other => {
                let kinds: Vec<&str> = Self::KINDS.iter().map(|(k, _)| *k).collect();
                return Err(PerturbError::Spec(format!(
                    "unknown perturbation {other:?}; kinds: {}",
                    kinds.join(", ")
                )));
            }
        };
        if let Some((k, _)) = self
            .params
            .iter()
            .find(|(k, _)| !used.contains(&k.as_str()))
        {
            return Err(PerturbError::Spec(format!(
                "{} takes no parameter {k:?}",
                self.kind
            )));
        }
        Ok(built)
    }
}

#[cfg(test)]
mod tests;
