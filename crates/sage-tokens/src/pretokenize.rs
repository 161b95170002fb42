//! cl100k_base's pre-tokenisation without a regex engine.
//!
//! tiktoken splits text with
//! `'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s`
//! before byte-pair merging; run by fancy-regex (the lookahead rules out the linear-time
//! engine) it is most of tiktoken-rs's encoding time. Every character is a letter (`\p{L}`), a
//! number (`\p{N}`), `\r`/`\n`, other white space (`\s`) or something else, and every
//! alternative is a short rule over those classes, so [`pieces`] walks the text once and
//! applies the alternatives in the regex's order, with the regex's backtracking worked out by
//! hand (comments at each rule). The classes come from regex-syntax, the same Unicode tables
//! tiktoken-rs's fancy-regex uses. Tests hold the result to tiktoken-rs on the shipped corpora
//! and on random hostile Unicode.

use std::sync::LazyLock;

/// What the pattern tells characters apart by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Class {
    Letter,
    Number,
    /// `\r` or `\n`.
    Newline,
    /// White space other than `\r` and `\n`.
    Space,
    /// Anything else (punctuation, symbols, marks, controls).
    Other,
}

struct Classes {
    /// The class of every code point below U+10000.
    basic: Vec<Class>,
    /// Classes other than `Other` above U+FFFF, as sorted `(first, last, class)` ranges.
    astral: Vec<(u32, u32, Class)>,
}

fn ranges(pattern: &str) -> Vec<(u32, u32)> {
    let hir = regex_syntax::ParserBuilder::new()
        .build()
        .parse(pattern)
        .expect("a Unicode class pattern");
    match hir.kind() {
        regex_syntax::hir::HirKind::Class(regex_syntax::hir::Class::Unicode(class)) => class
            .ranges()
            .iter()
            .map(|r| (u32::from(r.start()), u32::from(r.end())))
            .collect(),
        other => unreachable!("{pattern} parses to a class, not {other:?}"),
    }
}

static CLASSES: LazyLock<Classes> = LazyLock::new(|| {
    let mut basic = vec![Class::Other; 0x1_0000];
    let mut astral = Vec::new();
    // later assignments win; letters, numbers and white space are disjoint in Unicode anyway
    for (pattern, class) in [
        (r"\s", Class::Space),
        (r"\p{N}", Class::Number),
        (r"\p{L}", Class::Letter),
    ] {
        for (first, last) in ranges(pattern) {
            for c in first..=last.min(0xFFFF) {
                basic[c as usize] = class;
            }
            if last > 0xFFFF {
                astral.push((first.max(0x1_0000), last, class));
            }
        }
    }
    basic['\r' as usize] = Class::Newline;
    basic['\n' as usize] = Class::Newline;
    astral.sort_unstable_by_key(|r| r.0);
    Classes { basic, astral }
});

fn class_of(c: char, classes: &Classes) -> Class {
    let code = u32::from(c);
    if code < 0x1_0000 {
        return classes.basic[code as usize];
    }
    match classes.astral.binary_search_by(|&(first, last, _)| {
        if last < code {
            std::cmp::Ordering::Less
        } else if first > code {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    }) {
        Ok(i) => classes.astral[i].2,
        Err(_) => Class::Other,
    }
}

/// One character of the text being split.
#[derive(Clone, Copy)]
pub(crate) struct Char {
    start: usize,
    value: char,
    class: Class,
}

/// `'(?i:[sdmt]|ll|ve|re)` after the apostrophe at `chars[i]`: the contraction's length in
/// characters, apostrophe included. Unicode case folding makes `ſ` (U+017F) an `s`.
fn contraction(chars: &[Char], i: usize) -> Option<usize> {
    let at = |k: usize| chars.get(i + k).map(|c| c.value);
    match at(1)? {
        's' | 'S' | 'ſ' | 'd' | 'D' | 'm' | 'M' | 't' | 'T' => Some(2),
        first => {
            let second = at(2)?;
            let pair = (first.to_ascii_lowercase(), second.to_ascii_lowercase());
            matches!(pair, ('l', 'l') | ('v', 'e') | ('r', 'e')).then_some(3)
        }
    }
}

/// The end (exclusive, in characters) of the run of `class` starting at `from`.
fn run_end(chars: &[Char], from: usize, class: impl Fn(Class) -> bool) -> usize {
    from + chars[from..].iter().take_while(|c| class(c.class)).count()
}

/// The piece that starts at `chars[i]`: its end, in characters.
fn piece_end(chars: &[Char], i: usize) -> usize {
    let n = chars.len();
    let class = chars[i].class;
    let next = chars.get(i + 1).map(|c| c.class);
    // '(?i:[sdmt]|ll|ve|re)
    if chars[i].value == '\'' {
        if let Some(len) = contraction(chars, i) {
            return i + len;
        }
    }
    // [^\r\n\p{L}\p{N}]?+\p{L}++ : a letter run, or one non-newline, non-letter, non-number
    // character and a letter run (possessive: once that character is taken, letters must follow)
    if class == Class::Letter {
        return run_end(chars, i, |k| k == Class::Letter);
    }
    if matches!(class, Class::Space | Class::Other) && next == Some(Class::Letter) {
        return run_end(chars, i + 1, |k| k == Class::Letter);
    }
    // \p{N}{1,3}+
    if class == Class::Number {
        return run_end(chars, i, |k| k == Class::Number).min(i + 3);
    }
    // ` ?[^\s\p{L}\p{N}]++[\r\n]*+` : the optional space only helps when such a run follows it
    let symbols_from = if class == Class::Other {
        Some(i)
    } else if chars[i].value == ' ' && next == Some(Class::Other) {
        Some(i + 1)
    } else {
        None
    };
    if let Some(from) = symbols_from {
        let end = run_end(chars, from, |k| k == Class::Other);
        return run_end(chars, end, |k| k == Class::Newline);
    }
    // white space from here on
    let end = run_end(chars, i, |k| matches!(k, Class::Space | Class::Newline));
    // \s++$
    if end == n {
        return n;
    }
    // \s*[\r\n] : backtracking gives up spaces until a newline ends the match: the last one
    if let Some(last) = (i..end).rev().find(|&k| chars[k].class == Class::Newline) {
        return last + 1;
    }
    // \s+(?!\S) : all but the last space before the non-space; else \s : one
    if end - i >= 2 {
        end - 1
    } else {
        i + 1
    }
}

/// Calls `each` with the pieces of `text`, in order, as cl100k_base's pattern splits it.
pub(crate) fn pieces(text: &str, scratch: &mut Vec<Char>, mut each: impl FnMut(&str)) {
    let classes = &*CLASSES;
    scratch.clear();
    scratch.extend(text.char_indices().map(|(start, value)| Char {
        start,
        value,
        class: class_of(value, classes),
    }));
    let chars = &scratch[..];
    let mut i = 0;
    while i < chars.len() {
        let end = piece_end(chars, i);
        let to = chars.get(end).map_or(text.len(), |c| c.start);
        each(&text[chars[i].start..to]);
        i = end;
    }
}

/// Scratch space for [`pieces`].
pub(crate) type Scratch = Vec<Char>;
