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
//! tiktoken-rs's fancy-regex uses, laid out by build.rs. Tests hold the result to tiktoken-rs on the shipped corpora
//! and on random hostile Unicode.

use std::sync::LazyLock;

use crate::tables::class;

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

/// The class table of build.rs (`tables::class` values).
struct Classes {
    /// The class of every code point below U+10000.
    basic: &'static [u8],
    /// Classes other than `Other` above U+FFFF, as sorted `[first, last, class]` ranges.
    astral: &'static [[u32; 3]],
}

static CLASSES: LazyLock<Classes> = LazyLock::new(|| Classes {
    basic: crate::built_table!("classes_basic.bin", u8),
    astral: bytemuck::cast_slice(crate::built_table!("classes_astral.bin", u32)),
});

/// A class from its table value.
fn from_table(value: u32) -> Class {
    match value as u8 {
        class::LETTER => Class::Letter,
        class::NUMBER => Class::Number,
        class::NEWLINE => Class::Newline,
        class::SPACE => Class::Space,
        _ => Class::Other,
    }
}

fn class_of(c: char, classes: &Classes) -> Class {
    let code = u32::from(c);
    if code < 0x1_0000 {
        return from_table(u32::from(classes.basic[code as usize]));
    }
    match classes.astral.binary_search_by(|&[first, last, _]| {
        if last < code {
            std::cmp::Ordering::Less
        } else if first > code {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    }) {
        Ok(i) => from_table(classes.astral[i][2]),
        Err(_) => Class::Other,
    }
}

/// The class of each ASCII character, without a table lookup through [`CLASSES`].
const ASCII: [Class; 128] = {
    let mut table = [Class::Other; 128];
    let mut c = 0;
    while c < 128 {
        let b = c as u8;
        table[c] = if b.is_ascii_alphabetic() {
            Class::Letter
        } else if b.is_ascii_digit() {
            Class::Number
        } else if b == b'\r' || b == b'\n' {
            Class::Newline
        } else if matches!(b, b' ' | b'\t' | 0x0B | 0x0C) {
            Class::Space
        } else {
            Class::Other
        };
        c += 1;
    }
    table
};

/// The text being split, read a character at a time from byte positions.
struct Text<'a> {
    bytes: &'a [u8],
    text: &'a str,
    classes: &'a Classes,
}

impl Text<'_> {
    /// The character at byte `at` (a character boundary), its class and the next position.
    #[inline]
    fn at(&self, at: usize) -> Option<(char, Class, usize)> {
        let &first = self.bytes.get(at)?;
        if first < 0x80 {
            return Some((char::from(first), ASCII[usize::from(first)], at + 1));
        }
        self.beyond_ascii(at)
    }

    /// [`Text::at`] for a character past ASCII: out of line, so that the ASCII path inlines.
    #[inline(never)]
    fn beyond_ascii(&self, at: usize) -> Option<(char, Class, usize)> {
        let c = self.text[at..].chars().next()?;
        Some((c, class_of(c, self.classes), at + c.len_utf8()))
    }

    fn class(&self, at: usize) -> Option<Class> {
        self.at(at).map(|(_, class, _)| class)
    }

    /// The end of the run of letters starting at byte `from`: ASCII letters a byte at a time,
    /// the rest through [`Text::at`].
    #[inline]
    fn letters_end(&self, mut from: usize) -> usize {
        loop {
            while self.bytes.get(from).is_some_and(u8::is_ascii_alphabetic) {
                from += 1;
            }
            if self.bytes.get(from).is_none_or(|&b| b < 0x80) {
                return from;
            }
            match self.beyond_ascii(from) {
                Some((_, Class::Letter, next)) => from = next,
                _ => return from,
            }
        }
    }

    /// The end of the run of characters of `class` starting at byte `from`.
    #[inline]
    fn run_end(&self, mut from: usize, class: impl Fn(Class) -> bool) -> usize {
        while let Some((_, k, next)) = self.at(from) {
            if !class(k) {
                break;
            }
            from = next;
        }
        from
    }

    /// `'(?i:[sdmt]|ll|ve|re)` after the apostrophe ending at `after`: the contraction's end.
    /// Unicode case folding makes `ſ` (U+017F) an `s`.
    fn contraction(&self, after: usize) -> Option<usize> {
        let (first, _, next) = self.at(after)?;
        match first {
            's' | 'S' | 'ſ' | 'd' | 'D' | 'm' | 'M' | 't' | 'T' => Some(next),
            _ => {
                let (second, _, end) = self.at(next)?;
                let pair = (first.to_ascii_lowercase(), second.to_ascii_lowercase());
                matches!(pair, ('l', 'l') | ('v', 'e') | ('r', 'e')).then_some(end)
            }
        }
    }

    /// The end of the piece that starts at byte `i`.
    ///
    /// Most pieces of most text are an ASCII word with or without one leading space or
    /// punctuation character: those are told apart here from the bytes alone, and the rest go
    /// through every rule in [`Text::any_piece_end`].
    #[inline]
    fn piece_end(&self, i: usize) -> usize {
        let first = self.bytes[i];
        // [^\r\n\p{L}\p{N}]?+\p{L}++ with an ASCII start; an apostrophe may begin a
        // contraction instead, which comes first in the pattern
        let letters_from = if first.is_ascii_alphabetic() {
            i + 1
        } else if first < 0x80
            && first != b'\''
            && matches!(ASCII[usize::from(first)], Class::Space | Class::Other)
            && self.bytes.get(i + 1).is_some_and(u8::is_ascii_alphabetic)
        {
            i + 2
        } else {
            return self.any_piece_end(i);
        };
        self.letters_end(letters_from)
    }

    /// [`Text::piece_end`] by every rule of the pattern.
    #[inline(never)]
    fn any_piece_end(&self, i: usize) -> usize {
        let n = self.bytes.len();
        let (value, class, after) = self.at(i).expect("i is inside the text");
        let next = self.class(after);
        // '(?i:[sdmt]|ll|ve|re)
        if value == '\'' {
            if let Some(end) = self.contraction(after) {
                return end;
            }
        }
        // [^\r\n\p{L}\p{N}]?+\p{L}++ : a letter run, or one non-newline, non-letter,
        // non-number character and a letter run (possessive: once that character is taken,
        // letters must follow)
        if class == Class::Letter
            || (matches!(class, Class::Space | Class::Other) && next == Some(Class::Letter))
        {
            return self.letters_end(after);
        }
        // \p{N}{1,3}+
        if class == Class::Number {
            let mut end = after;
            for _ in 0..2 {
                match self.at(end) {
                    Some((_, Class::Number, following)) => end = following,
                    _ => break,
                }
            }
            return end;
        }
        // ` ?[^\s\p{L}\p{N}]++[\r\n]*+` : the optional space only helps when such a run
        // follows it
        let symbols_from = if class == Class::Other {
            Some(i)
        } else if value == ' ' && next == Some(Class::Other) {
            Some(after)
        } else {
            None
        };
        if let Some(from) = symbols_from {
            let end = self.run_end(from, |k| k == Class::Other);
            return self.run_end(end, |k| k == Class::Newline);
        }
        // white space from here on: its run, and the end of its last newline
        let (mut end, mut newline_end, mut last_start) = (i, None, i);
        while let Some((_, k, following)) = self.at(end) {
            match k {
                Class::Newline => newline_end = Some(following),
                Class::Space => {}
                _ => break,
            }
            last_start = end;
            end = following;
        }
        // \s++$
        if end == n {
            return n;
        }
        // \s*[\r\n] : backtracking gives up spaces until a newline ends the match: the last
        if let Some(end) = newline_end {
            return end;
        }
        // \s+(?!\S) : all but the last space before the non-space; else \s : one
        if last_start > i {
            last_start
        } else {
            after
        }
    }
}

/// Calls `each` with the pieces of `text`, in order, as cl100k_base's pattern splits it.
pub(crate) fn pieces(text: &str, mut each: impl FnMut(&str)) {
    let text = Text {
        bytes: text.as_bytes(),
        text,
        classes: &CLASSES,
    };
    let mut i = 0;
    while i < text.bytes.len() {
        let end = text.piece_end(i);
        each(&text.text[i..end]);
        i = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ASCII shortcut agrees with the Unicode tables (\x1C-\x1F are not `\s` there, though
    /// Python's `isspace` says they are).
    #[test]
    fn ascii_classes_agree_with_the_unicode_tables() {
        let mut classes: Vec<Class> = (0u8..128)
            .map(|b| class_of(char::from(b), &CLASSES))
            .collect();
        classes[usize::from(b'\r')] = Class::Newline;
        classes[usize::from(b'\n')] = Class::Newline;
        assert_eq!(classes, ASCII.to_vec());
    }
}
