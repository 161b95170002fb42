//! A reader of the WordNet 3.0 database files (wndb(5WN) format) with NLTK's morphology.
//!
//! Reads `index.{noun,verb,adj,adv}` (lemma → synset offsets) and the `*.exc` exception lists
//! eagerly, and keeps `data.{noun,verb,adj,adv}` in memory as bytes: a synset offset *is* its
//! byte offset in the data file, so a synset is parsed only when asked for. Opening takes a
//! fraction of a second.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::{PerturbError, Result};

/// A WordNet part of speech (adjective satellites are adjectives).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pos {
    /// n
    Noun,
    /// v
    Verb,
    /// a, s
    Adjective,
    /// r
    Adverb,
}

impl Pos {
    /// In NLTK's order, which fixes the order of synonyms.
    pub const ALL: [Pos; 4] = [Pos::Noun, Pos::Verb, Pos::Adjective, Pos::Adverb];

    fn file_suffix(self) -> &'static str {
        match self {
            Pos::Noun => "noun",
            Pos::Verb => "verb",
            Pos::Adjective => "adj",
            Pos::Adverb => "adv",
        }
    }

    fn from_symbol(symbol: &str) -> Option<Pos> {
        match symbol {
            "n" => Some(Pos::Noun),
            "v" => Some(Pos::Verb),
            "a" | "s" => Some(Pos::Adjective),
            "r" => Some(Pos::Adverb),
            _ => None,
        }
    }

    /// NLTK's `MORPHOLOGICAL_SUBSTITUTIONS`.
    fn detachments(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Pos::Noun => &[
                ("s", ""),
                ("ses", "s"),
                ("ves", "f"),
                ("xes", "x"),
                ("zes", "z"),
                ("ches", "ch"),
                ("shes", "sh"),
                ("men", "man"),
                ("ies", "y"),
            ],
            Pos::Verb => &[
                ("s", ""),
                ("ies", "y"),
                ("es", "e"),
                ("es", ""),
                ("ed", "e"),
                ("ed", ""),
                ("ing", "e"),
                ("ing", ""),
            ],
            Pos::Adjective => &[("er", ""), ("est", ""), ("er", "e"), ("est", "e")],
            Pos::Adverb => &[],
        }
    }

    fn slot(self) -> usize {
        self as usize
    }
}

/// One synset: its words (lemma names, `_` for spaces) and its antonym pointers.
#[derive(Clone, Debug, PartialEq)]
pub struct Synset {
    /// Lemma names in database order.
    pub words: Vec<String>,
    /// Lexical antonym pointers: (source word index, target pos, target offset, target word
    /// index), indices 0-based.
    pub antonyms: Vec<(usize, Pos, u32, usize)>,
}

/// The WordNet database.
pub struct WordNet {
    dir: PathBuf,
    index: [HashMap<String, Vec<u32>>; 4],
    exceptions: [HashMap<String, Vec<String>>; 4],
    data: [Vec<u8>; 4],
}

impl std::fmt::Debug for WordNet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WordNet")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|source| PerturbError::WordNet {
        path: path.to_owned(),
        line: None,
        message: format!("cannot read: {source}"),
    })
}

fn malformed(path: &Path, line: usize, message: impl Into<String>) -> PerturbError {
    PerturbError::WordNet {
        path: path.to_owned(),
        line: Some(line),
        message: message.into(),
    }
}

impl WordNet {
    /// `$SAGE_DATA_DIR/wordnet/dict`, when SAGE_DATA_DIR is set.
    pub fn default_dir() -> Option<PathBuf> {
        std::env::var_os("SAGE_DATA_DIR").map(|d| PathBuf::from(d).join("wordnet/dict"))
    }

    /// Opens the database in `dir` (the folder holding `index.noun`, `data.noun`, `noun.exc`, ...).
    pub fn open(dir: impl AsRef<Path>) -> Result<WordNet> {
        let dir = dir.as_ref().to_owned();
        if !dir.join("index.noun").is_file() {
            return Err(PerturbError::WordNet {
                path: dir,
                line: None,
                message:
                    "no WordNet database here (expected index.noun, data.noun, ... of WordNet 3.0)"
                        .into(),
            });
        }
        let mut index: [HashMap<String, Vec<u32>>; 4] = Default::default();
        let mut exceptions: [HashMap<String, Vec<String>>; 4] = Default::default();
        let mut data: [Vec<u8>; 4] = Default::default();
        for pos in Pos::ALL {
            let suffix = pos.file_suffix();
            let path = dir.join(format!("index.{suffix}"));
            index[pos.slot()] = parse_index(&path, &read(&path)?)?;
            let path = dir.join(format!("{suffix}.exc"));
            exceptions[pos.slot()] = parse_exceptions(&path, &read(&path)?)?;
            data[pos.slot()] = read(&dir.join(format!("data.{suffix}")))?;
        }
        Ok(WordNet {
            dir,
            index,
            exceptions,
            data,
        })
    }

    /// The folder the database was read from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Base forms of `word` (lower-cased) that WordNet has for `pos`, as NLTK's `_morphy`:
    /// the exception list first; else the word itself and one round of detachment rules; else
    /// further rounds until something is found.
    pub fn morphy(&self, word: &str, pos: Pos) -> Vec<String> {
        let word = word.to_lowercase();
        let known = |forms: Vec<String>| -> Vec<String> {
            let mut out: Vec<String> = Vec::new();
            for f in forms {
                if self.index[pos.slot()].contains_key(&f) && !out.contains(&f) {
                    out.push(f);
                }
            }
            out
        };
        if let Some(bases) = self.exceptions[pos.slot()].get(&word) {
            return known(
                std::iter::once(word.clone())
                    .chain(bases.iter().cloned())
                    .collect(),
            );
        }
        let detach = |forms: &[String]| -> Vec<String> {
            forms
                .iter()
                .flat_map(|f| {
                    pos.detachments()
                        .iter()
                        .filter(move |(old, _)| f.ends_with(old))
                        .map(move |(old, new)| format!("{}{new}", &f[..f.len() - old.len()]))
                })
                .collect()
        };
        let mut forms = detach(std::slice::from_ref(&word));
        let found = known(
            std::iter::once(word.clone())
                .chain(forms.iter().cloned())
                .collect(),
        );
        if !found.is_empty() {
            return found;
        }
        while !forms.is_empty() {
            forms = detach(&forms);
            let found = known(forms.clone());
            if !found.is_empty() {
                return found;
            }
        }
        Vec::new()
    }

    /// The synset at `offset` of `pos`.
    pub fn synset(&self, pos: Pos, offset: u32) -> Result<Synset> {
        let path = || self.dir.join(format!("data.{}", pos.file_suffix()));
        let bytes = &self.data[pos.slot()];
        let start = offset as usize;
        let bad = |message: String| PerturbError::WordNet {
            path: path(),
            line: None,
            message: format!("synset at byte {offset}: {message}"),
        };
        if start >= bytes.len() {
            return Err(bad("offset past the end of the file".into()));
        }
        let end = bytes[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |p| start + p);
        let line =
            std::str::from_utf8(&bytes[start..end]).map_err(|e| bad(format!("not UTF-8: {e}")))?;
        let fields: Vec<&str> = line.split(' ').collect();
        let field = |i: usize| {
            fields
                .get(i)
                .copied()
                .ok_or_else(|| bad("line ends early".into()))
        };
        if field(0)?.parse::<u32>().ok() != Some(offset) {
            return Err(bad("the line there does not start with its offset".into()));
        }
        let word_count =
            usize::from_str_radix(field(3)?, 16).map_err(|e| bad(format!("word count: {e}")))?;
        let mut words = Vec::with_capacity(word_count);
        for w in 0..word_count {
            let raw = field(4 + 2 * w)?;
            // adjectives may carry a syntactic marker: "long(a)"
            words.push(raw.split('(').next().unwrap_or(raw).to_owned());
        }
        let mut at = 4 + 2 * word_count;
        let pointer_count: usize = field(at)?
            .parse()
            .map_err(|e| bad(format!("pointer count: {e}")))?;
        at += 1;
        let mut antonyms = Vec::new();
        for _ in 0..pointer_count {
            let (symbol, target, target_pos, source_target) =
                (field(at)?, field(at + 1)?, field(at + 2)?, field(at + 3)?);
            at += 4;
            if symbol != "!" {
                continue;
            }
            let target: u32 = target
                .parse()
                .map_err(|e| bad(format!("pointer offset: {e}")))?;
            let target_pos = Pos::from_symbol(target_pos)
                .ok_or_else(|| bad(format!("pointer pos {target_pos:?}")))?;
            let st = u16::from_str_radix(source_target, 16)
                .map_err(|e| bad(format!("pointer words: {e}")))?;
            let (source, target_word) = (usize::from(st >> 8), usize::from(st & 0xff));
            if source > 0 && target_word > 0 {
                antonyms.push((source - 1, target_pos, target, target_word - 1));
            }
        }
        Ok(Synset { words, antonyms })
    }

    /// Every synset of `word` with the base forms it was found under, in NLTK's
    /// `wordnet.synsets(word)` order.
    fn synsets_of(&self, word: &str) -> Result<Vec<(Pos, Vec<String>, Synset)>> {
        let mut out = Vec::new();
        for pos in Pos::ALL {
            let bases = self.morphy(word, pos);
            let mut seen = Vec::new();
            for base in &bases {
                for &offset in &self.index[pos.slot()][base] {
                    if !seen.contains(&offset) {
                        seen.push(offset);
                        out.push((pos, bases.clone(), self.synset(pos, offset)?));
                    }
                }
            }
        }
        Ok(out)
    }

    /// Synonyms of `word` over all parts of speech: every lemma of every synset of the word (in
    /// NLTK's order) other than the word and its base forms, `_` turned into spaces, without
    /// duplicates.
    pub fn synonyms(&self, word: &str) -> Result<Vec<String>> {
        let lower = word.to_lowercase();
        let mut out: Vec<String> = Vec::new();
        for (_, bases, synset) in self.synsets_of(word)? {
            for lemma in &synset.words {
                let name = lemma.replace('_', " ");
                let key = lemma.to_lowercase();
                if key != lower && !bases.contains(&key) && !out.contains(&name) {
                    out.push(name);
                }
            }
        }
        Ok(out)
    }

    /// Antonyms of `word`: the targets of the lexical antonym pointers (`!`) of the word's own
    /// lemmas (those equal to one of its base forms) in every synset of the word.
    pub fn antonyms(&self, word: &str) -> Result<Vec<String>> {
        let mut out: Vec<String> = Vec::new();
        for (_, bases, synset) in self.synsets_of(word)? {
            for &(source, target_pos, target, target_word) in &synset.antonyms {
                let Some(lemma) = synset.words.get(source) else {
                    continue;
                };
                if !bases.contains(&lemma.to_lowercase()) {
                    continue;
                }
                let target = self.synset(target_pos, target)?;
                if let Some(name) = target.words.get(target_word) {
                    let name = name.replace('_', " ");
                    if !out.contains(&name) {
                        out.push(name);
                    }
                }
            }
        }
        Ok(out)
    }
}

fn lines(path: &Path, bytes: &[u8]) -> Result<Vec<(usize, String)>> {
    let text = std::str::from_utf8(bytes).map_err(|e| PerturbError::WordNet {
        path: path.to_owned(),
        line: None,
        message: format!("not UTF-8: {e}"),
    })?;
    // the license header lines start with two spaces
    Ok(text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.is_empty() && !l.starts_with(' '))
        .map(|(i, l)| (i + 1, l.to_owned()))
        .collect())
}

fn parse_index(path: &Path, bytes: &[u8]) -> Result<HashMap<String, Vec<u32>>> {
    let mut index = HashMap::new();
    for (n, line) in lines(path, bytes)? {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let count = |i: usize, what: &str| -> Result<usize> {
            fields
                .get(i)
                .and_then(|f| f.parse().ok())
                .ok_or_else(|| malformed(path, n, format!("bad {what}")))
        };
        let synsets = count(2, "synset count")?;
        let pointers = count(3, "pointer count")?;
        // lemma pos synset_cnt p_cnt ptr×p_cnt sense_cnt tagsense_cnt offset×synset_cnt
        if fields.len() != 6 + pointers + synsets {
            return Err(malformed(
                path,
                n,
                format!(
                    "expected {} fields, found {}",
                    6 + pointers + synsets,
                    fields.len()
                ),
            ));
        }
        let offsets = fields[fields.len() - synsets..]
            .iter()
            .map(|f| {
                f.parse::<u32>()
                    .map_err(|e| malformed(path, n, format!("synset offset {f:?}: {e}")))
            })
            .collect::<Result<Vec<_>>>()?;
        index.insert(fields[0].to_owned(), offsets);
    }
    Ok(index)
}

fn parse_exceptions(path: &Path, bytes: &[u8]) -> Result<HashMap<String, Vec<String>>> {
    let mut map = HashMap::new();
    for (n, line) in lines(path, bytes)? {
        let mut fields = line.split_whitespace();
        let inflected = fields
            .next()
            .ok_or_else(|| malformed(path, n, "empty line"))?;
        let bases: Vec<String> = fields.map(str::to_owned).collect();
        if bases.is_empty() {
            return Err(malformed(path, n, "an inflected form without a base form"));
        }
        map.insert(inflected.to_owned(), bases);
    }
    Ok(map)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The real WordNet 3.0 database, when SAGE_DATA_DIR is set (CI sets it).
    pub(crate) fn real() -> Option<WordNet> {
        match WordNet::default_dir() {
            Some(dir) => Some(WordNet::open(dir).expect("SAGE_DATA_DIR/wordnet/dict opens")),
            None => {
                sage_test_env::skip(
                    module_path!(),
                    "SAGE_DATA_DIR unset: WordNet tests on the real database not run",
                );
                None
            }
        }
    }

    #[test]
    fn morphy_matches_nltk() {
        let Some(wn) = real() else { return };
        // nltk 3.10.4 wordnet._morphy(word, pos)
        assert_eq!(wn.morphy("running", Pos::Verb), ["run"]);
        assert_eq!(wn.morphy("ran", Pos::Verb), ["run"]);
        assert_eq!(wn.morphy("dogs", Pos::Noun), ["dog"]);
        assert_eq!(wn.morphy("geese", Pos::Noun), ["goose"]);
        assert_eq!(
            wn.morphy("better", Pos::Adjective),
            ["better", "good", "well"]
        );
        assert_eq!(wn.morphy("churches", Pos::Noun), ["church"]);
        assert!(wn.morphy("qwxzz", Pos::Noun).is_empty());
    }

    #[test]
    fn synonyms_and_antonyms_match_nltk() {
        let Some(wn) = real() else { return };
        // nltk: [l.name() for s in wn.synsets("happy") for l in s.lemmas()] minus "happy"
        assert_eq!(
            wn.synonyms("happy").unwrap(),
            ["felicitous", "glad", "well-chosen"]
        );
        assert_eq!(wn.antonyms("happy").unwrap(), ["unhappy"]);
        // only the pointers of the lemma "good" itself: not goodness→badness, not well→ill
        assert_eq!(wn.antonyms("good").unwrap(), ["evil", "bad"]);
        assert!(wn
            .synonyms("car")
            .unwrap()
            .contains(&"automobile".to_owned()));
        assert!(wn.synonyms("zzzz").unwrap().is_empty());
    }

    #[test]
    fn missing_database_is_a_clear_error() {
        let err = WordNet::open("/nonexistent/wordnet")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("/nonexistent/wordnet") && err.contains("no WordNet database"),
            "{err}"
        );
    }

    #[test]
    fn malformed_index_names_file_and_line() {
        let err = parse_index(
            Path::new("index.noun"),
            b"  license header\ndog n 1 0 1 0 02084071\ncat n 2 0 1 0 1\n",
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "index.noun:3: expected 8 fields, found 7");
    }
}
