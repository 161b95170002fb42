//! ALIGN-SIM's lexical perturbations: WordNet synonym and antonym replacement.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use rand::seq::index::sample;
use rand::Rng;
use regex::Regex;

use crate::wordnet::WordNet;
use crate::{ExperimentRng, Perturbation, Perturbed, Provenance, Replacement, Result};

/// NLTK's English stopword list (`nltk.corpus.stopwords.words("english")`, 179 words): these are
/// never replaced.
pub const STOPWORDS: [&str; 179] = [
    "i",
    "me",
    "my",
    "myself",
    "we",
    "our",
    "ours",
    "ourselves",
    "you",
    "you're",
    "you've",
    "you'll",
    "you'd",
    "your",
    "yours",
    "yourself",
    "yourselves",
    "he",
    "him",
    "his",
    "himself",
    "she",
    "she's",
    "her",
    "hers",
    "herself",
    "it",
    "it's",
    "its",
    "itself",
    "they",
    "them",
    "their",
    "theirs",
    "themselves",
    "what",
    "which",
    "who",
    "whom",
    "this",
    "that",
    "that'll",
    "these",
    "those",
    "am",
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "being",
    "have",
    "has",
    "had",
    "having",
    "do",
    "does",
    "did",
    "doing",
    "a",
    "an",
    "the",
    "and",
    "but",
    "if",
    "or",
    "because",
    "as",
    "until",
    "while",
    "of",
    "at",
    "by",
    "for",
    "with",
    "about",
    "against",
    "between",
    "into",
    "through",
    "during",
    "before",
    "after",
    "above",
    "below",
    "to",
    "from",
    "up",
    "down",
    "in",
    "out",
    "on",
    "off",
    "over",
    "under",
    "again",
    "further",
    "then",
    "once",
    "here",
    "there",
    "when",
    "where",
    "why",
    "how",
    "all",
    "any",
    "both",
    "each",
    "few",
    "more",
    "most",
    "other",
    "some",
    "such",
    "no",
    "nor",
    "not",
    "only",
    "own",
    "same",
    "so",
    "than",
    "too",
    "very",
    "s",
    "t",
    "can",
    "will",
    "just",
    "don",
    "don't",
    "should",
    "should've",
    "now",
    "d",
    "ll",
    "m",
    "o",
    "re",
    "ve",
    "y",
    "ain",
    "aren",
    "aren't",
    "couldn",
    "couldn't",
    "didn",
    "didn't",
    "doesn",
    "doesn't",
    "hadn",
    "hadn't",
    "hasn",
    "hasn't",
    "haven",
    "haven't",
    "isn",
    "isn't",
    "ma",
    "mightn",
    "mightn't",
    "mustn",
    "mustn't",
    "needn",
    "needn't",
    "shan",
    "shan't",
    "shouldn",
    "shouldn't",
    "wasn",
    "wasn't",
    "weren",
    "weren't",
    "won",
    "won't",
    "wouldn",
    "wouldn't",
];

/// Words are maximal runs of ASCII letters between word boundaries ("don't" is "don" + "t").
fn word_pattern() -> &'static Regex {
    static WORD: OnceLock<Regex> = OnceLock::new();
    WORD.get_or_init(|| Regex::new(r"\b[A-Za-z]+\b").expect("valid"))
}

/// Distinct candidate words (lower-cased, first-occurrence order): not stopwords, with at least
/// one entry in `lookup`.
fn candidates(
    text: &str,
    lookup: impl Fn(&str) -> Result<Vec<String>>,
) -> Result<Vec<(String, Vec<String>)>> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for m in word_pattern().find_iter(text) {
        let word = m.as_str().to_ascii_lowercase();
        if STOPWORDS.contains(&word.as_str()) || out.iter().any(|(w, _)| *w == word) {
            continue;
        }
        let options = lookup(&word)?;
        if !options.is_empty() {
            out.push((word, options));
        }
    }
    Ok(out)
}

/// Replaces every whole-word occurrence of each key (case-insensitive) by its value, giving the
/// replacement the case of the occurrence's first letter. Returns the text and the counts.
fn replace_words(
    text: &str,
    replacements: &HashMap<String, String>,
) -> (String, HashMap<String, usize>) {
    let mut counts: HashMap<String, usize> = HashMap::new();
    let out = word_pattern().replace_all(text, |caps: &regex::Captures<'_>| {
        let found = &caps[0];
        let key = found.to_ascii_lowercase();
        match replacements.get(&key) {
            Some(new) => {
                *counts.entry(key).or_default() += 1;
                if found.starts_with(|c: char| c.is_ascii_uppercase()) {
                    let mut chars = new.chars();
                    chars
                        .next()
                        .map(|c| c.to_uppercase().chain(chars).collect())
                        .unwrap_or_default()
                } else {
                    new.clone()
                }
            }
            None => found.to_owned(),
        }
    });
    (out.into_owned(), counts)
}

fn apply_choices(text: &str, chosen: Vec<(String, String)>) -> (String, Vec<Replacement>) {
    let map: HashMap<String, String> = chosen.iter().cloned().collect();
    let (out, counts) = replace_words(text, &map);
    let replacements = chosen
        .into_iter()
        .map(|(word, replacement)| Replacement {
            occurrences: counts.get(&word).copied().unwrap_or(0),
            word,
            replacement,
        })
        .collect();
    (out, replacements)
}

/// ALIGN-SIM synonym replacement: `words` distinct non-stopword words that have a WordNet
/// synonym (any part of speech), chosen uniformly at random, each replaced at every occurrence by
/// one of its synonyms chosen uniformly at random. A text with fewer candidates gets all of them.
#[derive(Clone, Debug)]
pub struct SynonymReplacement {
    /// The database.
    pub wordnet: Arc<WordNet>,
    /// How many distinct words to replace (1, 2 or 3 in the paper).
    pub words: usize,
}

impl Perturbation for SynonymReplacement {
    fn id(&self) -> String {
        format!("synonym-replacement(n={})", self.words)
    }

    fn apply(&self, text: &str, rng: &mut ExperimentRng) -> Result<Perturbed> {
        let pool = candidates(text, |w| self.wordnet.synonyms(w))?;
        let picked = sample(rng, pool.len(), self.words.min(pool.len()));
        let chosen: Vec<(String, String)> = picked
            .iter()
            .map(|i| {
                let (word, synonyms) = &pool[i];
                (
                    word.clone(),
                    synonyms[rng.gen_range(0..synonyms.len())].clone(),
                )
            })
            .collect();
        let (out, replacements) = apply_choices(text, chosen);
        Ok(Perturbed {
            text: out,
            provenance: Provenance::SynonymReplacement {
                requested: self.words,
                candidates: pool.len(),
                replacements,
            },
        })
    }
}

/// ALIGN-SIM antonym replacement: one non-stopword word that has a WordNet antonym (a lexical
/// `!` pointer of the word's own lemma), chosen uniformly at random, replaced at every occurrence
/// by one of its antonyms. A text without such a word is returned unchanged and its provenance
/// has no replacement: callers skip it.
#[derive(Clone, Debug)]
pub struct AntonymReplacement {
    /// The database.
    pub wordnet: Arc<WordNet>,
}

impl Perturbation for AntonymReplacement {
    fn id(&self) -> String {
        "antonym-replacement".to_owned()
    }

    fn apply(&self, text: &str, rng: &mut ExperimentRng) -> Result<Perturbed> {
        let pool = candidates(text, |w| self.wordnet.antonyms(w))?;
        if pool.is_empty() {
            return Ok(Perturbed {
                text: text.to_owned(),
                provenance: Provenance::AntonymReplacement { replacement: None },
            });
        }
        let (word, antonyms) = &pool[rng.gen_range(0..pool.len())];
        let antonym = antonyms[rng.gen_range(0..antonyms.len())].clone();
        let (out, mut replacements) = apply_choices(text, vec![(word.clone(), antonym)]);
        Ok(Perturbed {
            text: out,
            provenance: Provenance::AntonymReplacement {
                replacement: replacements.pop(),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wordnet::tests::real;
    use sage_core::RunSeed;

    #[test]
    fn stopword_list_is_nltks() {
        let mut sorted = STOPWORDS.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 179);
    }

    #[test]
    fn synonyms_replace_every_occurrence_keeping_case() {
        let Some(wn) = real() else { return };
        let s = SynonymReplacement {
            wordnet: Arc::new(wn),
            words: 1,
        };
        let text = "Happy people are happy. The happy end.";
        let out = s.apply(text, &mut RunSeed(1).rng("syn")).unwrap();
        let Provenance::SynonymReplacement {
            replacements,
            candidates,
            ..
        } = &out.provenance
        else {
            panic!()
        };
        assert!(*candidates >= 2, "happy, people, end all have synonyms");
        assert_eq!(replacements.len(), 1);
        let r = &replacements[0];
        assert!(text.to_lowercase().matches(&r.word).count() >= r.occurrences);
        assert!(
            !out.text
                .to_lowercase()
                .split(|c: char| !c.is_alphabetic())
                .any(|w| w == r.word),
            "{}",
            out.text
        );
        if r.word == "happy" {
            assert_eq!(r.occurrences, 3);
            assert!(out.text.starts_with(|c: char| c.is_uppercase()));
        }
    }

    #[test]
    fn antonym_replacement_and_no_candidate() {
        let Some(wn) = real() else { return };
        let a = AntonymReplacement {
            wordnet: Arc::new(wn),
        };
        let out = a
            .apply("The movie was good.", &mut RunSeed(1).rng("ant"))
            .unwrap();
        assert!(
            out.text == "The movie was evil." || out.text == "The movie was bad.",
            "{}",
            out.text
        );
        let none = a.apply("the of and", &mut RunSeed(1).rng("ant")).unwrap();
        assert_eq!(none.text, "the of and");
        assert_eq!(
            none.provenance,
            Provenance::AntonymReplacement { replacement: None }
        );
    }

    #[test]
    fn replacement_helper_is_whole_word_and_case_aware() {
        let map: HashMap<String, String> = [("cat".to_owned(), "feline".to_owned())].into();
        let (out, counts) = replace_words("Cat, cat, concatenate CAT", &map);
        assert_eq!(out, "Feline, feline, concatenate Feline");
        assert_eq!(counts["cat"], 3);
    }
}
