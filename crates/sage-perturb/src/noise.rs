//! Production-noise channels: the noise real inputs carry (phone typing, OCR, lost casing and
//! punctuation, dropped and swapped words, boilerplate, cut and padded texts), each at a **rate**
//! — the share of its units it touches — or, for padding, a target length.
//!
//! ## How many units a rate touches
//! A channel counts its units in the text (words, letters, confusable sites, ...) and touches
//! `k` of them, chosen uniformly without replacement: `k = ⌊rate × units⌋`, plus one more with
//! probability `rate × units − ⌊rate × units⌋` (stochastic rounding). So a text touches
//! `⌊rate × units⌋` or `⌈rate × units⌉` units, and on average exactly `rate × units`: a
//! 12-word query at 5% gets one typo with probability 0.6 rather than always none or always
//! one. A rate of 0 returns the text unchanged, byte for byte. The provenance
//! ([`Provenance::Noise`]) records the units counted and touched.
//!
//! A *word* is a maximal run of non-whitespace characters; separators are kept as they were.

use std::ops::Range;

use rand::seq::index;
use rand::Rng;

use crate::{ExperimentRng, PerturbError, Perturbation, Perturbed, Provenance, Result};

/// Which of `units` are touched at `rate`: see the module docs.
fn touched(units: usize, rate: f64, rng: &mut ExperimentRng) -> Vec<bool> {
    chosen(units, rate.min(1.0) * units as f64, rng)
}

/// `expected` of `units` (stochastically rounded, at most all), chosen uniformly.
fn chosen(units: usize, expected: f64, rng: &mut ExperimentRng) -> Vec<bool> {
    let mut mask = vec![false; units];
    if units == 0 || expected <= 0.0 {
        return mask;
    }
    let mut k = expected.floor() as usize;
    if rng.gen::<f64>() < expected - expected.floor() {
        k += 1;
    }
    for i in index::sample(rng, units, k.min(units)) {
        mask[i] = true;
    }
    mask
}

fn check_rate(rate: f64) -> Result<()> {
    if (0.0..=1.0).contains(&rate) {
        Ok(())
    } else {
        Err(PerturbError::InvalidParameter {
            name: "rate",
            value: rate.to_string(),
            expected: "a number in [0, 1]".into(),
        })
    }
}

fn noisy(text: String, units: usize, touched: usize) -> Perturbed {
    Perturbed {
        text,
        provenance: Provenance::Noise { units, touched },
    }
}

fn unchanged(text: &str) -> Perturbed {
    noisy(text.to_owned(), 0, 0)
}

/// Byte ranges of the words.
fn words(text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (c.is_whitespace(), start) {
            (false, None) => start = Some(i),
            (true, Some(s)) => {
                out.push(s..i);
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push(s..text.len());
    }
    out
}

/// `text` with each word passed through `edit(word index, word)`: `None` keeps it. Separators
/// are kept as they were.
fn edit_words(
    text: &str,
    spans: &[Range<usize>],
    mut edit: impl FnMut(usize, &str) -> Option<String>,
) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut at = 0;
    for (i, span) in spans.iter().enumerate() {
        out.push_str(&text[at..span.start]);
        let word = &text[span.clone()];
        match edit(i, word) {
            Some(new) => out.push_str(&new),
            None => out.push_str(word),
        }
        at = span.end;
    }
    out.push_str(&text[at..]);
    out
}

/// US QWERTY letter rows; a key's neighbours are the keys that share an edge with it.
const QWERTY: [&[u8]; 3] = [b"qwertyuiop", b"asdfghjkl", b"zxcvbnm"];

/// The letter keys sharing an edge with `c` (lower case); empty for a non-letter. The rows are
/// staggered, so a key touches `c ± 1` in its row, `c` and `c + 1` in the row above and `c − 1`
/// and `c` in the row below (`s`: a, d, w, e, z, x).
pub fn qwerty_neighbours(c: char) -> Vec<char> {
    let lower = c.to_ascii_lowercase();
    let Some((row, col)) = QWERTY.iter().enumerate().find_map(|(r, keys)| {
        keys.iter()
            .position(|&k| char::from(k) == lower)
            .map(|p| (r, p as isize))
    }) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut key = |r: isize, c: isize| {
        if (0..3).contains(&r) {
            let keys = QWERTY[r as usize];
            if (0..keys.len() as isize).contains(&c) {
                out.push(char::from(keys[c as usize]));
            }
        }
    };
    let r = row as isize;
    key(r, col - 1);
    key(r, col + 1);
    key(r - 1, col);
    key(r - 1, col + 1);
    key(r + 1, col - 1);
    key(r + 1, col);
    out
}

fn same_case(like: char, c: char) -> char {
    if like.is_ascii_uppercase() {
        c.to_ascii_uppercase()
    } else {
        c
    }
}

/// Keyboard typos (Penha et al. 2022, "Evaluating the robustness of retrieval pipelines with
/// query variation generators"; nlpaug's `KeyboardAug`): each touched word (units: words with an
/// ASCII letter) gets one typo, chosen uniformly from: a letter replaced by a QWERTY neighbour
/// ([`qwerty_neighbours`], case kept), a neighbour inserted after a letter, a letter deleted, two
/// adjacent characters transposed. Deletion and transposition need two characters; a
/// one-character word gets a substitution instead.
#[derive(Clone, Copy, Debug)]
pub struct KeyboardTypos {
    /// Share of words given a typo.
    pub rate: f64,
}

impl Perturbation for KeyboardTypos {
    fn id(&self) -> String {
        format!("keyboard-typos(rate={})", self.rate)
    }

    fn apply(&self, text: &str, rng: &mut ExperimentRng) -> Result<Perturbed> {
        check_rate(self.rate)?;
        let spans: Vec<Range<usize>> = words(text)
            .into_iter()
            .filter(|w| text[w.clone()].bytes().any(|b| b.is_ascii_alphabetic()))
            .collect();
        let mask = touched(spans.len(), self.rate, rng);
        let count = mask.iter().filter(|&&m| m).count();
        let out = edit_words(text, &spans, |i, word| mask[i].then(|| typo(word, rng)));
        Ok(noisy(out, spans.len(), count))
    }
}

/// One typo in `word`, which has an ASCII letter.
fn typo(word: &str, rng: &mut ExperimentRng) -> String {
    let mut chars: Vec<char> = word.chars().collect();
    let letters: Vec<usize> = (0..chars.len())
        .filter(|&i| chars[i].is_ascii_alphabetic())
        .collect();
    let at = letters[rng.gen_range(0..letters.len())];
    let mut operation = rng.gen_range(0..4u8);
    if chars.len() < 2 && operation >= 2 {
        operation = 0;
    }
    match operation {
        0 | 1 => {
            let near = qwerty_neighbours(chars[at]);
            let key = same_case(chars[at], near[rng.gen_range(0..near.len())]);
            if operation == 0 {
                chars[at] = key;
            } else {
                chars.insert(at + 1, key);
            }
        }
        2 => {
            chars.remove(at);
        }
        _ => {
            // the letter and its right neighbour, or its left one at the word's end
            let left = if at + 1 < chars.len() { at } else { at - 1 };
            chars.swap(left, left + 1);
        }
    }
    chars.into_iter().collect()
}

/// OCR confusions: glyphs a scanner reads as each other. Sources: nlpaug's OCR table
/// (`nlpaug/res/char/ocr/en.json`) and the confusions most frequent in OCR post-correction
/// corpora (ICDAR 2017/2019: rn/m, cl/d, vv/w, l/1/I, O/0). Each side can become the other.
pub const OCR_CONFUSIONS: &[(&str, &[&str])] = &[
    ("rn", &["m"]),
    ("cl", &["d"]),
    ("vv", &["w"]),
    ("m", &["rn"]),
    ("d", &["cl"]),
    ("w", &["vv"]),
    ("l", &["1", "I"]),
    ("1", &["l", "I"]),
    ("I", &["l", "1"]),
    ("O", &["0"]),
    ("0", &["O"]),
    ("o", &["0"]),
    ("e", &["c"]),
    ("c", &["e"]),
    ("S", &["5"]),
    ("5", &["S"]),
    ("B", &["8"]),
    ("8", &["B"]),
    ("Z", &["2"]),
    ("2", &["Z"]),
    ("g", &["9", "q"]),
    ("h", &["b"]),
    ("b", &["h"]),
    ("u", &["v"]),
    ("v", &["u"]),
];

/// OCR confusions from [`OCR_CONFUSIONS`]. Units: the sites where an entry matches, found left
/// to right, two-character entries before one-character ones, not overlapping; each touched
/// site becomes one of its entry's replacements (uniform).
#[derive(Clone, Copy, Debug)]
pub struct OcrConfusions {
    /// Share of confusable sites replaced.
    pub rate: f64,
}

impl Perturbation for OcrConfusions {
    fn id(&self) -> String {
        format!("ocr-confusions(rate={})", self.rate)
    }

    fn apply(&self, text: &str, rng: &mut ExperimentRng) -> Result<Perturbed> {
        check_rate(self.rate)?;
        if self.rate == 0.0 {
            return Ok(unchanged(text));
        }
        // (byte range, table entry) of every site
        let mut sites: Vec<(Range<usize>, usize)> = Vec::new();
        let mut at = 0;
        while at < text.len() {
            let rest = &text[at..];
            match OCR_CONFUSIONS
                .iter()
                .position(|(from, _)| rest.starts_with(from))
            {
                Some(entry) => {
                    let end = at + OCR_CONFUSIONS[entry].0.len();
                    sites.push((at..end, entry));
                    at = end;
                }
                None => at += rest.chars().next().map_or(1, char::len_utf8),
            }
        }
        let mask = touched(sites.len(), self.rate, rng);
        let mut out = String::with_capacity(text.len() + 8);
        let mut at = 0;
        let mut count = 0;
        for ((range, entry), hit) in sites.iter().zip(&mask) {
            if !hit {
                continue;
            }
            let choices = OCR_CONFUSIONS[*entry].1;
            out.push_str(&text[at..range.start]);
            out.push_str(choices[rng.gen_range(0..choices.len())]);
            at = range.end;
            count += 1;
        }
        out.push_str(&text[at..]);
        Ok(noisy(out, sites.len(), count))
    }
}

/// Character noise (nlpaug's `RandomCharAug`): each touched character (units: non-whitespace
/// characters) is dropped, doubled, or swapped with the character after it (when that is not
/// whitespace; else doubled), uniformly. A touched character moved by its left neighbour's
/// swap counts as touched and is not edited again.
#[derive(Clone, Copy, Debug)]
pub struct CharacterNoise {
    /// Share of non-whitespace characters touched.
    pub rate: f64,
}

impl Perturbation for CharacterNoise {
    fn id(&self) -> String {
        format!("character-noise(rate={})", self.rate)
    }

    fn apply(&self, text: &str, rng: &mut ExperimentRng) -> Result<Perturbed> {
        check_rate(self.rate)?;
        let chars: Vec<char> = text.chars().collect();
        let units: Vec<usize> = (0..chars.len())
            .filter(|&i| !chars[i].is_whitespace())
            .collect();
        let mask = touched(units.len(), self.rate, rng);
        let mut hit = vec![false; chars.len()];
        for (&i, &m) in units.iter().zip(&mask) {
            hit[i] = m;
        }
        let mut out = String::with_capacity(text.len() + 8);
        let mut count = 0;
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if !hit[i] {
                out.push(c);
                i += 1;
                continue;
            }
            count += 1;
            match rng.gen_range(0..3u8) {
                0 => i += 1,
                2 if i + 1 < chars.len() && !chars[i + 1].is_whitespace() => {
                    out.push(chars[i + 1]);
                    out.push(c);
                    // a touched neighbour is moved by this swap: touched, not edited again
                    count += usize::from(hit[i + 1]);
                    i += 2;
                }
                _ => {
                    out.push(c);
                    out.push(c);
                    i += 1;
                }
            }
        }
        Ok(noisy(out, units.len(), count))
    }
}

/// How [`Casing`] changes case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaseMode {
    /// Touched words lower-cased (units: words with an upper-case letter) — tickets and chat.
    Lower,
    /// Touched words upper-cased (units: words with a lower-case letter) — shouted text, legacy
    /// systems.
    Upper,
    /// Touched letters case-swapped (units: letters that have the other case).
    Random,
}

/// Casing noise: lower, upper, or random case. Characters whose other case is longer (ß → SS)
/// expand, as Python's `str.upper` does.
#[derive(Clone, Copy, Debug)]
pub struct Casing {
    /// Lower, upper or random.
    pub mode: CaseMode,
    /// Share of units touched.
    pub rate: f64,
}

impl Perturbation for Casing {
    fn id(&self) -> String {
        let name = match self.mode {
            CaseMode::Lower => "lower-case",
            CaseMode::Upper => "upper-case",
            CaseMode::Random => "random-case",
        };
        format!("{name}(rate={})", self.rate)
    }

    fn apply(&self, text: &str, rng: &mut ExperimentRng) -> Result<Perturbed> {
        check_rate(self.rate)?;
        if self.mode == CaseMode::Random {
            let swappable = |c: char| c.is_lowercase() || c.is_uppercase();
            let units = text.chars().filter(|&c| swappable(c)).count();
            let mask = touched(units, self.rate, rng);
            let mut unit = 0;
            let mut out = String::with_capacity(text.len() + 4);
            for c in text.chars() {
                if !swappable(c) {
                    out.push(c);
                    continue;
                }
                if mask[unit] {
                    if c.is_uppercase() {
                        out.extend(c.to_lowercase());
                    } else {
                        out.extend(c.to_uppercase());
                    }
                } else {
                    out.push(c);
                }
                unit += 1;
            }
            let count = mask.iter().filter(|&&m| m).count();
            return Ok(noisy(out, units, count));
        }
        let lower = self.mode == CaseMode::Lower;
        let spans: Vec<Range<usize>> = words(text)
            .into_iter()
            .filter(|w| {
                text[w.clone()].chars().any(|c| {
                    if lower {
                        c.is_uppercase()
                    } else {
                        c.is_lowercase()
                    }
                })
            })
            .collect();
        let mask = touched(spans.len(), self.rate, rng);
        let count = mask.iter().filter(|&&m| m).count();
        let out = edit_words(text, &spans, |i, word| {
            mask[i].then(|| {
                if lower {
                    word.to_lowercase()
                } else {
                    word.to_uppercase()
                }
            })
        });
        Ok(noisy(out, spans.len(), count))
    }
}

/// Punctuation as text extraction and chat lose it: ASCII punctuation and the common Unicode
/// marks (quotes, dashes, ellipsis, guillemets, inverted marks).
fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation() || "‘’“”–—…«»¿¡·•".contains(c)
}

/// Punctuation loss: each touched punctuation character removed (units: ASCII punctuation and
/// the common Unicode marks: quotes, dashes, ellipsis, guillemets, inverted marks, bullets).
#[derive(Clone, Copy, Debug)]
pub struct PunctuationLoss {
    /// Share of punctuation characters removed.
    pub rate: f64,
}

impl Perturbation for PunctuationLoss {
    fn id(&self) -> String {
        format!("punctuation-loss(rate={})", self.rate)
    }

    fn apply(&self, text: &str, rng: &mut ExperimentRng) -> Result<Perturbed> {
        check_rate(self.rate)?;
        let units = text.chars().filter(|&c| is_punctuation(c)).count();
        let mask = touched(units, self.rate, rng);
        let mut unit = 0;
        let out: String = text
            .chars()
            .filter(|&c| {
                if !is_punctuation(c) {
                    return true;
                }
                unit += 1;
                !mask[unit - 1]
            })
            .collect();
        let count = mask.iter().filter(|&&m| m).count();
        Ok(noisy(out, units, count))
    }
}

/// Whitespace loss (PDF and OCR extraction joining words): each touched separator (units: the
/// whitespace runs between two words) removed, joining its words.
#[derive(Clone, Copy, Debug)]
pub struct WhitespaceLoss {
    /// Share of word separators removed.
    pub rate: f64,
}

impl Perturbation for WhitespaceLoss {
    fn id(&self) -> String {
        format!("whitespace-loss(rate={})", self.rate)
    }

    fn apply(&self, text: &str, rng: &mut ExperimentRng) -> Result<Perturbed> {
        check_rate(self.rate)?;
        let spans = words(text);
        let units = spans.len().saturating_sub(1);
        let mask = touched(units, self.rate, rng);
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (i, span) in spans.iter().enumerate() {
            // the separator before word i is unit i − 1
            if i == 0 || !mask[i - 1] {
                out.push_str(&text[at..span.start]);
            }
            out.push_str(&text[span.clone()]);
            at = span.end;
        }
        out.push_str(&text[at..]);
        let count = mask.iter().filter(|&&m| m).count();
        Ok(noisy(out, units, count))
    }
}

/// Word drop: each touched word removed with the separator before it (the first word kept
/// keeps the text's leading whitespace).
#[derive(Clone, Copy, Debug)]
pub struct WordDrop {
    /// Share of words removed.
    pub rate: f64,
}

impl Perturbation for WordDrop {
    fn id(&self) -> String {
        format!("word-drop(rate={})", self.rate)
    }

    fn apply(&self, text: &str, rng: &mut ExperimentRng) -> Result<Perturbed> {
        check_rate(self.rate)?;
        if self.rate == 0.0 {
            return Ok(unchanged(text));
        }
        let spans = words(text);
        let mask = touched(spans.len(), self.rate, rng);
        let leading = spans.first().map_or(text.len(), |s| s.start);
        let mut out = String::with_capacity(text.len());
        out.push_str(&text[..leading]);
        let mut first = true;
        let mut previous_end = leading;
        for (span, &drop) in spans.iter().zip(&mask) {
            if !drop {
                if !first {
                    out.push_str(&text[previous_end..span.start]);
                }
                out.push_str(&text[span.clone()]);
                first = false;
            }
            previous_end = span.end;
        }
        out.push_str(&text[spans.last().map_or(text.len(), |s| s.end)..]);
        let count = mask.iter().filter(|&&m| m).count();
        Ok(noisy(out, spans.len(), count))
    }
}

/// Local word-order swaps: the words are paired (1st with 2nd, 3rd with 4th, ...) and each
/// touched pair swaps its words, separators kept. Units are words; a swap touches two, so
/// `rate × words / 2` pairs are swapped (stochastic rounding, at most every pair).
#[derive(Clone, Copy, Debug)]
pub struct WordSwap {
    /// Share of words moved.
    pub rate: f64,
}

impl Perturbation for WordSwap {
    fn id(&self) -> String {
        format!("word-swap(rate={})", self.rate)
    }

    fn apply(&self, text: &str, rng: &mut ExperimentRng) -> Result<Perturbed> {
        check_rate(self.rate)?;
        let spans = words(text);
        let pairs = spans.len() / 2;
        let mask = chosen(pairs, self.rate.min(1.0) * spans.len() as f64 / 2.0, rng);
        let out = edit_words(text, &spans, |i, _| {
            let pair = i / 2;
            (pair < pairs && mask[pair]).then(|| {
                let other = if i % 2 == 0 { i + 1 } else { i - 1 };
                text[spans[other].clone()].to_owned()
            })
        });
        let count = 2 * mask.iter().filter(|&&m| m).count();
        Ok(noisy(out, spans.len(), count))
    }
}

/// What [`Boilerplate`] inserts: markup, entities, emoji, tracking URLs, mail signatures and
/// footers, as scraped pages, e-mails and chat exports carry them.
pub const BOILERPLATE: &[&str] = &[
    "<div>",
    "</p>",
    "<br/>",
    "&nbsp;",
    "<span class=\"x\">",
    "🙂",
    "👍",
    "🔥",
    "https://example.com/track?id=8841&utm_source=mail",
    "www.example.org",
    "-- Sent from my iPhone",
    "Best regards, J.",
    "[image: logo.png]",
    "Unsubscribe",
    "Click here to read more",
    "#ad",
    "@support",
];

/// Boilerplate: items of [`BOILERPLATE`] (uniform) inserted at word boundaries. Units are the
/// words; `rate × words` items are inserted (stochastic rounding), each at its own boundary
/// (before a word, or after the last), separated by a space.
#[derive(Clone, Copy, Debug)]
pub struct Boilerplate {
    /// Items inserted per word.
    pub rate: f64,
}

impl Perturbation for Boilerplate {
    fn id(&self) -> String {
        format!("boilerplate(rate={})", self.rate)
    }

    fn apply(&self, text: &str, rng: &mut ExperimentRng) -> Result<Perturbed> {
        check_rate(self.rate)?;
        if self.rate == 0.0 {
            return Ok(unchanged(text));
        }
        let spans = words(text);
        // boundary b < words is before word b; boundary `words` is after the last
        let boundaries = spans.len() + 1;
        let mask = touched(spans.len(), self.rate, rng);
        let k = mask.iter().filter(|&&m| m).count().min(boundaries);
        let mut at_boundary = vec![false; boundaries];
        for b in index::sample(rng, boundaries, k) {
            at_boundary[b] = true;
        }
        let mut out = String::with_capacity(text.len() + 32 * k);
        let mut at = 0;
        for (b, &insert) in at_boundary.iter().enumerate() {
            let start = spans.get(b).map_or(text.len(), |s| s.start);
            out.push_str(&text[at..start]);
            if insert {
                let item = BOILERPLATE[rng.gen_range(0..BOILERPLATE.len())];
                if b == spans.len() && !spans.is_empty() {
                    out.push(' ');
                    out.push_str(item);
                } else {
                    out.push_str(item);
                    out.push(' ');
                }
            }
            if let Some(span) = spans.get(b) {
                out.push_str(&text[span.clone()]);
                at = span.end;
            } else {
                at = text.len();
            }
        }
        out.push_str(&text[at..]);
        Ok(noisy(out, spans.len(), k))
    }
}

/// Truncation: the last `rate` of the text's cl100k tokens cut (stochastic rounding), as an
/// input limit or a broken upload cuts a text; decoded by [`sage_tokens::decode_slice`]'s rule
/// (a character split by the cut is dropped whole).
#[derive(Clone, Copy, Debug)]
pub struct Truncation {
    /// Share of tokens cut from the end.
    pub rate: f64,
}

impl Perturbation for Truncation {
    fn id(&self) -> String {
        format!("truncation(rate={})", self.rate)
    }

    fn apply(&self, text: &str, rng: &mut ExperimentRng) -> Result<Perturbed> {
        check_rate(self.rate)?;
        if self.rate == 0.0 {
            return Ok(unchanged(text));
        }
        let tokens = sage_tokens::encode(text);
        let cut = touched(tokens.len(), self.rate, rng)
            .iter()
            .filter(|&&m| m)
            .count();
        let kept = tokens.len() - cut;
        let out = if cut == 0 {
            text.to_owned()
        } else {
            sage_tokens::decode_slice(&tokens[..kept])?
        };
        Ok(noisy(out, tokens.len(), cut))
    }
}

/// Most cl100k tokens [`FillerPadding`] pads to: ten times the longest window of today's
/// open embedding models (32k), so a typo (`tokens=1e12`) is an error, not an allocation failure.
pub const MAX_PADDED_TOKENS: f64 = 320_000.0;

/// Length noise, LongEmbed-style (Zhu et al. 2024): the text placed inside irrelevant filler
/// (SAGE's lorem-ipsum, [`crate::filler`]) so that the whole is `tokens` cl100k tokens long,
/// with the share `position` of the filler before the text (0: the text first, 1: last),
/// separated by spaces. A text already that long, or `tokens = 0`, is unchanged.
#[derive(Clone, Copy, Debug)]
pub struct FillerPadding {
    /// Target length in cl100k tokens.
    pub tokens: usize,
    /// Share of the filler placed before the text.
    pub position: f64,
}

impl Perturbation for FillerPadding {
    fn id(&self) -> String {
        format!(
            "filler-padding(tokens={},pos={})",
            self.tokens, self.position
        )
    }

    fn apply(&self, text: &str, _rng: &mut ExperimentRng) -> Result<Perturbed> {
        crate::needle::check_unit("position", self.position, 1.0)?;
        let length = sage_tokens::count(text);
        if self.tokens <= length {
            return Ok(Perturbed {
                text: text.to_owned(),
                provenance: Provenance::FillerPadding {
                    text_tokens: length,
                    filler_tokens: 0,
                },
            });
        }
        let padding = self.tokens - length;
        let before = (self.position * padding as f64).round() as usize;
        let filler = crate::filler(padding)?;
        // cut the filler at a space near the share asked for, so no word is split
        let cut = filler
            .char_indices()
            .filter(|(_, c)| *c == ' ')
            .map(|(i, _)| i)
            .min_by_key(|&i| i.abs_diff(before * filler.len() / padding))
            .unwrap_or(0);
        let (head, tail) = filler.split_at(if before == 0 {
            0
        } else if before == padding {
            filler.len()
        } else {
            cut
        });
        let mut out = String::with_capacity(filler.len() + text.len() + 2);
        let head = head.trim();
        let tail = tail.trim();
        out.push_str(head);
        if !head.is_empty() {
            out.push(' ');
        }
        out.push_str(text);
        if !tail.is_empty() {
            out.push(' ');
        }
        out.push_str(tail);
        Ok(Perturbed {
            text: out,
            provenance: Provenance::FillerPadding {
                text_tokens: length,
                filler_tokens: padding,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use sage_core::RunSeed;

    use super::*;
    use crate::{PerturbationSpec, WordNet};

    /// Every kind whose parameter is a rate: the production-noise channels.
    fn channels(rate: f64) -> Vec<Box<dyn Perturbation>> {
        PerturbationSpec::KINDS
            .iter()
            .filter(|k| k.parameters.iter().any(|p| p.name == "rate"))
            .map(|k| {
                PerturbationSpec {
                    kind: k.name.into(),
                    params: vec![("rate".into(), rate.to_string())],
                }
                .build(|| -> Result<std::sync::Arc<WordNet>> { unreachable!() })
                .unwrap()
            })
            .collect()
    }

    const TEXTS: [&str; 6] = [
        "Modern clinical trials of vitamin D, in 2019: did they work?",
        "",
        "   leading and trailing   ",
        "ß straße ÀÉÎ — “quoted” … ¿qué?",
        "one",
        "Line one.\nLine two, with\ttabs and 0O1lI symbols; rn cl vv.",
    ];

    #[test]
    fn the_noise_channels_are_twelve_and_rate_zero_is_the_identity() {
        assert_eq!(channels(0.0).len(), 12);
        for channel in channels(0.0) {
            for text in TEXTS {
                let out = channel.apply(text, &mut RunSeed(7).rng("t")).unwrap();
                assert_eq!(out.text, text, "{}", channel.id());
            }
        }
    }

    #[test]
    fn touched_units_are_the_rate_rounded_either_way_and_the_share_on_average() {
        for rate in [0.05, 0.1, 0.2, 0.4, 1.0] {
            for channel in channels(rate) {
                // word swaps touch words two at a time, and an odd last word never
                let step = if channel.id().starts_with("word-swap") {
                    2.0
                } else {
                    1.0
                };
                let (mut units, mut hit, mut expected) = (0usize, 0usize, 0.0);
                for i in 0..400u64 {
                    let text = TEXTS[i as usize % TEXTS.len()];
                    let out = channel
                        .apply(text, &mut RunSeed(3).rng_for_item("share", i))
                        .unwrap();
                    let Provenance::Noise { units: u, touched } = out.provenance else {
                        panic!("{}: {:?}", channel.id(), out.provenance);
                    };
                    let most = (u as f64 / step).floor() * step;
                    let exact = (rate * u as f64).min(most);
                    let floor = (exact / step).floor() * step;
                    let ceil = (exact / step).ceil() * step;
                    assert!(
                        touched as f64 >= floor && touched as f64 <= ceil,
                        "{}: {touched} of {u} at {rate} on {text:?}",
                        channel.id()
                    );
                    units += u;
                    hit += touched;
                    expected += exact;
                }
                let (share, expected) = (hit as f64 / units as f64, expected / units as f64);
                // four binomial standard errors: stochastic rounding varies less than a binomial
                let tolerance = 4.0 * (step * rate * (1.0 - rate) / units as f64).sqrt() + 1e-9;
                assert!(
                    (share - expected).abs() <= tolerance,
                    "{}: share {share} at rate {rate}, expected {expected}",
                    channel.id()
                );
            }
        }
    }

    #[test]
    fn what_is_touched_shows_in_the_text() {
        let seed = RunSeed(11);
        let text = "The Quick, brown fox; jumps over the lazy dog!";
        let run = |p: &dyn Perturbation| p.apply(text, &mut seed.rng("x")).unwrap().text;
        let dropped = run(&WordDrop { rate: 0.5 });
        // 9 words at 0.5: 4 or 5 dropped
        assert!(
            (4..=5).contains(&dropped.split_whitespace().count()),
            "{dropped}"
        );
        assert_eq!(run(&WordDrop { rate: 1.0 }), "");
        assert_eq!(
            run(&Casing {
                mode: CaseMode::Lower,
                rate: 1.0
            }),
            text.to_lowercase()
        );
        assert_eq!(
            run(&Casing {
                mode: CaseMode::Upper,
                rate: 1.0
            }),
            text.to_uppercase()
        );
        assert_eq!(
            run(&PunctuationLoss { rate: 1.0 }),
            "The Quick brown fox jumps over the lazy dog"
        );
        assert_eq!(
            run(&WhitespaceLoss { rate: 1.0 }),
            "TheQuick,brownfox;jumpsoverthelazydog!"
        );
        let swapped = run(&WordSwap { rate: 1.0 });
        assert_eq!(swapped, "Quick, The fox; brown over jumps lazy the dog!");
        let cut = run(&Truncation { rate: 0.5 });
        assert!(text.starts_with(&cut) && cut.len() < text.len(), "{cut}");
        let typos = run(&KeyboardTypos { rate: 1.0 });
        assert_ne!(typos, text);
        let ocr = OcrConfusions { rate: 1.0 }
            .apply("modern", &mut seed.rng("x"))
            .unwrap()
            .text;
        // m → rn, o → 0, d → cl, e → c, rn → m
        assert_eq!(ocr, "rn0clcm");
        let boiler = run(&Boilerplate { rate: 1.0 });
        assert!(BOILERPLATE.iter().any(|b| boiler.contains(b)), "{boiler}");
        for word in text.split_whitespace() {
            assert!(boiler.contains(word), "{word} kept in {boiler}");
        }
    }

    #[test]
    fn qwerty_neighbours_share_an_edge() {
        assert_eq!(qwerty_neighbours('s'), ['a', 'd', 'w', 'e', 'z', 'x']);
        assert_eq!(qwerty_neighbours('Q'), ['w', 'a']);
        assert_eq!(qwerty_neighbours('m'), ['n', 'j', 'k']);
        assert!(qwerty_neighbours('1').is_empty());
    }

    #[test]
    fn padding_reaches_the_target_length_with_the_text_where_asked() {
        let text = "vitamin D lowers the risk of fractures";
        let seed = RunSeed(1);
        for (position, at_start, at_end) in
            [(0.0, true, false), (1.0, false, true), (0.5, false, false)]
        {
            let out = FillerPadding {
                tokens: 300,
                position,
            }
            .apply(text, &mut seed.rng("p"))
            .unwrap();
            assert_eq!(out.text.starts_with(text), at_start, "{position}");
            assert_eq!(out.text.ends_with(text), at_end, "{position}");
            assert!(out.text.contains(text));
            let tokens = sage_tokens::count(&out.text) as i64;
            assert!((tokens - 300).abs() <= 3, "{tokens} tokens at {position}");
        }
        let same = FillerPadding {
            tokens: 3,
            position: 0.5,
        }
        .apply(text, &mut seed.rng("p"))
        .unwrap();
        assert_eq!(same.text, text);
    }

    proptest! {
        #[test]
        fn any_text_same_seed_same_bytes_on_any_thread_count(text in "\\PC{0,80}", seed: u64, rate in 0.0f64..=1.0) {
            for channel in channels(rate) {
                let texts = [text.as_str(), "a b c d e f", text.as_str()];
                let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap()
                    .install(|| crate::perturb_texts(channel.as_ref(), &texts, RunSeed(seed)).unwrap());
                let four = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap()
                    .install(|| crate::perturb_texts(channel.as_ref(), &texts, RunSeed(seed)).unwrap());
                prop_assert_eq!(&one, &four);
                // a text that had no replacement character gets none
                if !text.contains('\u{fffd}') {
                    prop_assert!(!one[0].text.contains('\u{fffd}'), "{}", channel.id());
                }
            }
        }
    }
}
