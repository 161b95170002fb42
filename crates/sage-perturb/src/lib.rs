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
//! | [`KeyboardTypos`] | rate of words: one QWERTY typo each | noise |
//! | [`OcrConfusions`] | rate of confusable sites ([`OCR_CONFUSIONS`]) | noise |
//! | [`CharacterNoise`] | rate of characters: drop, double, swap | noise |
//! | [`Casing`] (`lower-case`, `upper-case`, `random-case`) | rate of words / letters | noise |
//! | [`PunctuationLoss`], [`WhitespaceLoss`] | rate of marks / separators removed | noise |
//! | [`WordDrop`], [`WordSwap`] | rate of words dropped / moved by adjacent swaps | noise |
//! | [`Boilerplate`] | rate: items of [`BOILERPLATE`] per word | noise |
//! | [`Truncation`] | rate of cl100k tokens cut from the end | noise |
//! | [`FillerPadding`] | target length in cl100k tokens, text position | noise |
//!
//! The noise channels share one rule for how many units a rate touches (stochastic rounding of
//! rate × units, exactly the identity at rate 0): see [`KeyboardTypos`]'s module, `noise.rs`.
//!
//! [`robustness_set`], [`sensitivity_set`] and [`retrieval_set`] build the exact lists the SAGE
//! tasks use; [`PerturbationSpec`] parses `kind` + `key=value` parameters (the `sage perturb`
//! command line).
#![deny(missing_docs)]

mod lexical;
mod needle;
mod negation;
mod noise;
mod shuffle;
mod surface;
pub mod wordnet;

use std::path::PathBuf;
use std::sync::Arc;

pub use lexical::{AntonymReplacement, SynonymReplacement, STOPWORDS};
pub use needle::{filler, filler_tokens, NeedleInsertion, TokenRemoval};
pub use negation::{NegationToggle, Toggle};
pub use noise::{
    qwerty_neighbours, Boilerplate, CaseMode, Casing, CharacterNoise, FillerPadding, KeyboardTypos,
    OcrConfusions, PunctuationLoss, Truncation, WhitespaceLoss, WordDrop, WordSwap, BOILERPLATE,
    MAX_PADDED_TOKENS, OCR_CONFUSIONS,
};
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

/// Perturbs every text, text `i` with the generator derived from `(seed, perturbation id, i)`:
/// the same seed gives the same bytes on any machine and any number of threads. An error comes
/// with the index of the text that caused it.
pub fn perturb_texts(
    perturbation: &dyn Perturbation,
    texts: &[&str],
    seed: sage_core::RunSeed,
) -> std::result::Result<Vec<Perturbed>, (usize, PerturbError)> {
    use rayon::prelude::*;
    let id = perturbation.id();
    texts
        .par_iter()
        .enumerate()
        .map(|(i, text)| {
            perturbation
                .apply(text, &mut seed.rng_for_item(&id, i as u64))
                .map_err(|e| (i, e))
        })
        .collect()
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
    /// A production-noise channel: the units it counted (words, letters, sites, tokens) and
    /// how many it touched.
    Noise {
        units: usize,
        touched: usize,
    },
    FillerPadding {
        text_tokens: usize,
        filler_tokens: usize,
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

/// A numeric parameter of a perturbation kind with its documented range: the one place both
/// `--help` and [`PerturbationSpec::build`] read it from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Parameter {
    /// The name in `key=value`.
    pub name: &'static str,
    /// The value when none is given.
    pub default: f64,
    /// Smallest valid value.
    pub min: f64,
    /// Largest valid value: bounded so that a typo (`p=1e9`) is an error before any work, not
    /// hours of it or a terabyte allocation.
    pub max: f64,
    /// Whether only whole numbers are valid (a count).
    pub whole: bool,
}

impl Parameter {
    const fn unit(name: &'static str, default: f64) -> Parameter {
        Parameter {
            name,
            default,
            min: 0.0,
            max: 1.0,
            whole: false,
        }
    }

    const fn count(name: &'static str, default: f64, min: f64, max: f64) -> Parameter {
        Parameter {
            name,
            default,
            min,
            max,
            whole: true,
        }
    }

    /// What a valid value is, in words: `a number in [0, 1]`, `a whole number in [1, 1e9]`.
    pub fn expected(&self) -> String {
        if self.whole {
            format!("a whole number in [{}, {:e}]", self.min, self.max)
        } else {
            format!("a number in [{}, {}]", self.min, self.max)
        }
    }

    /// `value` if it is valid, else the error naming the parameter, the value and the range.
    pub fn check(&self, value: f64) -> Result<f64> {
        let whole_enough = !self.whole || value.fract() == 0.0;
        if (self.min..=self.max).contains(&value) && whole_enough {
            Ok(value)
        } else {
            Err(PerturbError::InvalidParameter {
                name: self.name,
                value: value.to_string(),
                expected: self.expected(),
            })
        }
    }
}

/// A perturbation kind as the command line names it: its parameters and how it is built, so
/// that a new kind is one entry of [`PerturbationSpec::KINDS`].
#[derive(Clone, Copy, Debug)]
pub struct Kind {
    /// The name, e.g. `needle-insertion`.
    pub name: &'static str,
    /// Its parameters, in the order help shows them.
    pub parameters: &'static [Parameter],
    /// Whether it reads WordNet.
    pub needs_wordnet: bool,
    /// Builds it from checked parameter values.
    pub build: fn(&mut Arguments) -> Result<Box<dyn Perturbation>>,
}

/// A kind's parameter values, checked against their ranges, and WordNet on demand: what a
/// [`Kind::build`] reads.
pub struct Arguments<'a> {
    parameters: &'static [Parameter],
    values: Vec<f64>,
    wordnet: Option<Box<dyn FnOnce() -> Result<Arc<WordNet>> + 'a>>,
}

impl Arguments<'_> {
    /// The value of parameter `name` (given, else its default).
    ///
    /// # Panics
    /// When the kind has no such parameter: the kind's table entry and its builder disagree.
    pub fn value(&self, name: &str) -> f64 {
        let i = self
            .parameters
            .iter()
            .position(|p| p.name == name)
            .expect("a parameter of the kind's table");
        self.values[i]
    }

    /// A whole-number parameter: whole and within its range, so exact as `usize`.
    pub fn count(&self, name: &str) -> usize {
        self.value(name) as usize
    }

    /// WordNet, opened on first use.
    pub fn wordnet(&mut self) -> Result<Arc<WordNet>> {
        match self.wordnet.take() {
            Some(open) => open(),
            None => Err(PerturbError::Spec("WordNet was asked for twice".into())),
        }
    }
}

impl Kind {
    /// `p=0.15 (0 to 10) pos=0.5 (0 to 1)`, and whether WordNet is needed, for `--help`.
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> = self
            .parameters
            .iter()
            .map(|p| {
                let whole = if p.whole { "whole, " } else { "" };
                if p.max >= 1e6 {
                    format!("{}={} ({whole}{} to {:e})", p.name, p.default, p.min, p.max)
                } else {
                    format!("{}={} ({whole}{} to {})", p.name, p.default, p.min, p.max)
                }
            })
            .collect();
        if self.needs_wordnet {
            parts.push("(needs WordNet)".into());
        }
        parts.join(" ")
    }
}

const fn kind(
    name: &'static str,
    parameters: &'static [Parameter],
    build: fn(&mut Arguments) -> Result<Box<dyn Perturbation>>,
) -> Kind {
    Kind {
        name,
        parameters,
        needs_wordnet: false,
        build,
    }
}

/// The one parameter of a noise channel: the share of its units touched.
const RATE: &[Parameter] = &[Parameter::unit("rate", 0.1)];

impl PerturbationSpec {
    /// Every kind with its parameters, defaults and ranges.
    pub const KINDS: &'static [Kind] = &[
        kind(
            "random-capitalisation",
            &[Parameter::unit("p", 0.25)],
            |a| {
                Ok(Box::new(RandomCapitalisation {
                    probability: a.value("p"),
                }))
            },
        ),
        kind(
            "character-deletion",
            &[Parameter::count("every", 10.0, 1.0, 1e9)],
            |a| {
                Ok(Box::new(CharacterDeletion {
                    every: a.count("every"),
                }))
            },
        ),
        kind("numerisation", &[], |_| Ok(Box::new(Numerisation))),
        kind("negation-toggle", &[], |_| Ok(Box::new(NegationToggle))),
        kind("sentence-shuffle", &[], |_| Ok(Box::new(SentenceShuffle))),
        kind("word-shuffle", &[], |_| Ok(Box::new(WordShuffle))),
        kind(
            "needle-insertion",
            &[
                Parameter {
                    max: needle::MAX_NEEDLE_PROPORTION,
                    ..Parameter::unit("p", 0.15)
                },
                Parameter::unit("pos", 0.5),
            ],
            |a| {
                Ok(Box::new(NeedleInsertion {
                    proportion: a.value("p"),
                    position: a.value("pos"),
                }))
            },
        ),
        kind(
            "token-removal",
            &[Parameter::unit("size", 0.15), Parameter::unit("pos", 0.5)],
            |a| {
                Ok(Box::new(TokenRemoval {
                    size: a.value("size"),
                    position: a.value("pos"),
                }))
            },
        ),
        Kind {
            name: "synonym-replacement",
            parameters: &[Parameter::count("n", 1.0, 0.0, 1e6)],
            needs_wordnet: true,
            build: |a| {
                Ok(Box::new(SynonymReplacement {
                    wordnet: a.wordnet()?,
                    words: a.count("n"),
                }))
            },
        },
        Kind {
            name: "antonym-replacement",
            parameters: &[],
            needs_wordnet: true,
            build: |a| {
                Ok(Box::new(AntonymReplacement {
                    wordnet: a.wordnet()?,
                }))
            },
        },
        kind("jumbling", &[Parameter::count("n", 1.0, 0.0, 1e6)], |a| {
            Ok(Box::new(Jumbling {
                swaps: a.count("n"),
            }))
        }),
        kind("keyboard-typos", RATE, |a| {
            Ok(Box::new(KeyboardTypos {
                rate: a.value("rate"),
            }))
        }),
        kind("ocr-confusions", RATE, |a| {
            Ok(Box::new(OcrConfusions {
                rate: a.value("rate"),
            }))
        }),
        kind("character-noise", RATE, |a| {
            Ok(Box::new(CharacterNoise {
                rate: a.value("rate"),
            }))
        }),
        kind("lower-case", RATE, |a| {
            Ok(Box::new(Casing {
                mode: CaseMode::Lower,
                rate: a.value("rate"),
            }))
        }),
        kind("upper-case", RATE, |a| {
            Ok(Box::new(Casing {
                mode: CaseMode::Upper,
                rate: a.value("rate"),
            }))
        }),
        kind("random-case", RATE, |a| {
            Ok(Box::new(Casing {
                mode: CaseMode::Random,
                rate: a.value("rate"),
            }))
        }),
        kind("punctuation-loss", RATE, |a| {
            Ok(Box::new(PunctuationLoss {
                rate: a.value("rate"),
            }))
        }),
        kind("whitespace-loss", RATE, |a| {
            Ok(Box::new(WhitespaceLoss {
                rate: a.value("rate"),
            }))
        }),
        kind("word-drop", RATE, |a| {
            Ok(Box::new(WordDrop {
                rate: a.value("rate"),
            }))
        }),
        kind("word-swap", RATE, |a| {
            Ok(Box::new(WordSwap {
                rate: a.value("rate"),
            }))
        }),
        kind("boilerplate", RATE, |a| {
            Ok(Box::new(Boilerplate {
                rate: a.value("rate"),
            }))
        }),
        kind("truncation", RATE, |a| {
            Ok(Box::new(Truncation {
                rate: a.value("rate"),
            }))
        }),
        kind(
            "filler-padding",
            &[
                Parameter::count("tokens", 512.0, 0.0, noise::MAX_PADDED_TOKENS),
                Parameter::unit("pos", 0.5),
            ],
            |a| {
                Ok(Box::new(FillerPadding {
                    tokens: a.count("tokens"),
                    position: a.value("pos"),
                }))
            },
        ),
    ];

    /// Builds the perturbation, opening WordNet (for the kinds that need it) from `wordnet_dir`,
    /// else from `$SAGE_DATA_DIR/wordnet/dict`.
    pub fn build_with_wordnet_dir(
        &self,
        wordnet_dir: Option<PathBuf>,
    ) -> Result<Box<dyn Perturbation>> {
        self.build(|| {
            let dir = wordnet_dir.or_else(WordNet::default_dir).ok_or_else(|| {
                PerturbError::Spec(format!(
                    "{} needs WordNet: give the WordNet 3.0 dict folder (--wordnet DIR, wordnet=) or set SAGE_DATA_DIR (uses $SAGE_DATA_DIR/wordnet/dict)",
                    self.kind
                ))
            })?;
            Ok(Arc::new(WordNet::open(dir)?))
        })
    }

    /// Builds the perturbation; `wordnet` is opened only for the kinds that need it.
    pub fn build<'w>(
        &self,
        wordnet: impl FnOnce() -> Result<Arc<WordNet>> + 'w,
    ) -> Result<Box<dyn Perturbation>> {
        let Some(kind) = Self::KINDS.iter().find(|k| k.name == self.kind) else {
            let kinds: Vec<&str> = Self::KINDS.iter().map(|k| k.name).collect();
            return Err(PerturbError::Spec(format!(
                "unknown perturbation {:?}; kinds: {}",
                self.kind,
                kinds.join(", ")
            )));
        };
        if let Some((k, _)) = self
            .params
            .iter()
            .find(|(k, _)| !kind.parameters.iter().any(|p| p.name == k))
        {
            return Err(PerturbError::Spec(format!(
                "{} takes no parameter {k:?}",
                self.kind
            )));
        }
        // Every parameter is checked here, before any text is read: a bad one costs nothing.
        let mut values = Vec::with_capacity(kind.parameters.len());
        for parameter in kind.parameters {
            let value = match self.params.iter().find(|(k, _)| k == parameter.name) {
                None => parameter.default,
                Some((_, v)) => v
                    .parse::<f64>()
                    .map_err(|_| PerturbError::InvalidParameter {
                        name: parameter.name,
                        value: v.clone(),
                        expected: parameter.expected(),
                    })?,
            };
            values.push(parameter.check(value)?);
        }
        (kind.build)(&mut Arguments {
            parameters: kind.parameters,
            values,
            wordnet: Some(Box::new(wordnet)),
        })
    }
}

#[cfg(test)]
mod tests;
