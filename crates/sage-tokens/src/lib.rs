//! # sage-tokens
//!
//! The cl100k_base tokenizer (OpenAI's `text-embedding-3-*` tokenizer) as SAGE uses it: ROUGE
//! and Jaccard compare cl100k ids, the needle filler is measured in cl100k tokens, token removal
//! cuts cl100k spans. One crate so that every user encodes and decodes the same way.
//!
//! Ours, and it gives tiktoken's ids exactly (the tests hold it to tiktoken-rs, which this crate
//! uses only as that oracle):
//! - the pattern split is done without a regex engine (`pretokenize.rs` says how); it was most
//!   of tiktoken-rs's `encode_ordinary` time;
//! - a piece that is one token (most are) is one lookup of its bytes packed in an integer;
//!   the rest are merged pair by pair as tiktoken merges them;
//! - the ranks are `assets/cl100k_base.ranks`: tiktoken's `cl100k_base.tiktoken` (MIT, OpenAI)
//!   as one length byte and the token's bytes per rank, 744 KB embedded in the binary. build.rs
//!   lays the lookup tables and the pattern's character classes out from it at compile time, so
//!   a process encodes from its first call; tiktoken-rs's base64 file and regex compilation take
//!   ~60 ms, which dominated a short `sage score` run.
#![deny(missing_docs)]

mod pretokenize;
mod tables;

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::LazyLock;

use rustc_hash::FxHashMap;
use tables::{first_slot, packed, spread, table_token};
#[cfg(test)]
use tables::{table_starts, ORDINARY};

/// cl100k_base's ordinary tokens by rank: `[length, bytes...]` for rank 0, 1, ... 100,255.
static TABLE: &[u8] = include_bytes!("../assets/cl100k_base.ranks");

/// cl100k_base's special tokens, which decode to their names (encoding never produces them).
const SPECIAL: [(u32, &str); 5] = [
    (100_257, "<|endoftext|>"),
    (100_258, "<|fim_prefix|>"),
    (100_259, "<|fim_middle|>"),
    (100_260, "<|fim_suffix|>"),
    (100_276, "<|endofprompt|>"),
];

/// Bytes aligned for any integer slice view of them.
#[repr(C, align(16))]
struct Aligned<B: ?Sized>(B);

/// One of build.rs's tables, as a slice of the integers it holds.
macro_rules! built_table {
    ($file:literal, $int:ty) => {{
        static BYTES: &$crate::Aligned<[u8]> =
            &$crate::Aligned(*include_bytes!(concat!(env!("OUT_DIR"), "/", $file)));
        bytemuck::cast_slice::<u8, $int>(&BYTES.0)
    }};
}
pub(crate) use built_table;

/// The ranks of cl100k_base's ordinary tokens, in the forms encoding and decoding need; laid
/// out by build.rs (`tables.rs` says how and why).
struct Ranks {
    /// Rank → where its `[length, bytes...]` starts in [`TABLE`].
    starts: &'static [u32],
    /// The tokens of up to 15 bytes (all but ~1,000), by [`packed`] key.
    short: ShortTokens,
    /// The longer ones.
    long: FxHashMap<&'static [u8], u32>,
    /// The rank of every two-byte token at `first << 8 | second` (`u32::MAX` where there is
    /// none): merging looks these up most.
    pairs: &'static [u32],
}

/// An open-addressing table of packed token bytes → rank (why not a `HashMap<u128, u32>`: with
/// FxHash the packed keys collide).
struct ShortTokens {
    /// rank + 1 per slot (0: empty), at [`tables::first_slot`] or the next free slot after it.
    slots: &'static [u32],
    /// The key of each rank (0 for ranks not stored here).
    keys: &'static [u128],
}

impl ShortTokens {
    #[inline]
    fn get(&self, key: u128) -> Option<u32> {
        let mask = self.slots.len() - 1;
        let mut at = first_slot(key, self.slots.len());
        loop {
            match self.slots[at] {
                0 => return None,
                slot if self.keys[slot as usize - 1] == key => return Some(slot - 1),
                _ => at = (at + 1) & mask,
            }
        }
    }
}

static RANKS: LazyLock<Ranks> = LazyLock::new(|| {
    let starts = built_table!("starts.bin", u32);
    let long = built_table!("long.bin", u32)
        .iter()
        .map(|&rank| (table_token(TABLE, starts[rank as usize]), rank))
        .collect();
    Ranks {
        starts,
        short: ShortTokens {
            slots: built_table!("slots.bin", u32),
            keys: built_table!("keys.bin", u128),
        },
        long,
        pairs: built_table!("pairs.bin", u32),
    }
});

impl Ranks {
    fn get(&self, bytes: &[u8]) -> Option<u32> {
        match packed(bytes) {
            Some(key) => self.short.get(key),
            None => self.long.get(bytes).copied(),
        }
    }

    /// Byte-pair merging of a piece that is not one token, as tiktoken's `_byte_pair_merge`
    /// does it: repeatedly join the adjacent pair whose bytes are the lowest-ranked token (the
    /// first such pair on ties), then emit the parts' ranks.
    fn merge(&self, piece: &[u8], ids: &mut Vec<u32>) {
        let n = piece.len();
        // (start, rank of the bytes from this part's start to the end of the next part)
        let mut parts: Vec<(usize, u32)> = Vec::with_capacity(n + 1);
        parts.extend(piece.windows(2).enumerate().map(|(i, pair)| {
            (
                i,
                self.pairs[usize::from(pair[0]) << 8 | usize::from(pair[1])],
            )
        }));
        parts.push((n - 1, u32::MAX));
        parts.push((n, u32::MAX));
        let rank_at = |parts: &[(usize, u32)], i: usize| -> u32 {
            match parts.get(i + 2) {
                Some(&(end, _)) => self.get(&piece[parts[i].0..end]).unwrap_or(u32::MAX),
                None => u32::MAX,
            }
        };
        loop {
            let (mut lowest, mut at) = (u32::MAX, 0);
            for (i, &(_, rank)) in parts[..parts.len() - 1].iter().enumerate() {
                if rank < lowest {
                    (lowest, at) = (rank, i);
                }
            }
            if lowest == u32::MAX {
                break;
            }
            parts.remove(at + 1);
            parts[at].1 = rank_at(&parts, at);
            if at > 0 {
                parts[at - 1].1 = rank_at(&parts, at - 1);
            }
        }
        ids.extend(parts.windows(2).map(|w| {
            self.get(&piece[w[0].0..w[1].0])
                .expect("every part of a merge is a token")
        }));
    }
}

/// A hasher for packed keys that only runs [`spread`] (FxHash collides on them).
#[derive(Default)]
struct SpreadHasher(u64);

impl std::hash::Hasher for SpreadHasher {
    fn write(&mut self, bytes: &[u8]) {
        // only u128 keys are hashed with this; anything else still gets a sound hash
        for &b in bytes {
            self.0 = spread(u128::from(self.0) << 8 | u128::from(b));
        }
    }

    fn write_u128(&mut self, key: u128) {
        self.0 = spread(key);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Merged pieces this thread has seen, by packed key: a word that is not one token (an
/// upper-cased or misspelt one) is usually met again, and merging it costs ten lookups.
struct MergeMemo {
    ids: HashMap<u128, Box<[u32]>, std::hash::BuildHasherDefault<SpreadHasher>>,
}

/// Enough for a corpus's vocabulary of merged words; past it the memo starts over, so memory
/// stays bounded on hostile input.
const MEMO_LIMIT: usize = 1 << 17;

thread_local! {
    static MEMO: RefCell<MergeMemo> = RefCell::new(MergeMemo { ids: HashMap::default() });
}

/// cl100k_base token ids of `text`, as Python tiktoken's `encode(text, disallowed_special=())`:
/// special-token strings such as `<|endoftext|>` are encoded as ordinary text.
pub fn encode(text: &str) -> Vec<u32> {
    let ranks = &*RANKS;
    let mut ids = Vec::with_capacity(text.len() / 4 + 1);
    MEMO.with(|memo| {
        let memo = &mut memo.borrow_mut().ids;
        pretokenize::pieces(text, |piece| {
            let bytes = piece.as_bytes();
            let Some(key) = packed(bytes) else {
                match ranks.long.get(bytes) {
                    Some(&rank) => ids.push(rank),
                    None => ranks.merge(bytes, &mut ids),
                }
                return;
            };
            if let Some(rank) = ranks.short.get(key) {
                ids.push(rank);
            } else if let Some(merged) = memo.get(&key) {
                ids.extend_from_slice(merged);
            } else {
                let from = ids.len();
                ranks.merge(bytes, &mut ids);
                if memo.len() >= MEMO_LIMIT {
                    memo.clear();
                }
                memo.insert(key, ids[from..].into());
            }
        });
    });
    ids
}

/// Number of cl100k_base tokens of `text`.
pub fn count(text: &str) -> usize {
    encode(text).len()
}

/// A token id that cl100k_base does not have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownToken(pub String);

impl std::fmt::Display for UnknownToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "not a cl100k_base token: {}", self.0)
    }
}

impl std::error::Error for UnknownToken {}

/// The bytes a sequence of token ids stands for (may end or start inside a UTF-8 character).
pub fn decode_bytes(tokens: &[u32]) -> Result<Vec<u8>, UnknownToken> {
    let ranks = &*RANKS;
    let mut bytes = Vec::with_capacity(tokens.len() * 4);
    for &id in tokens {
        match ranks.starts.get(id as usize) {
            Some(&start) => bytes.extend_from_slice(table_token(TABLE, start)),
            None => match SPECIAL.iter().find(|(special, _)| *special == id) {
                Some((_, name)) => bytes.extend_from_slice(name.as_bytes()),
                None => return Err(UnknownToken(id.to_string())),
            },
        }
    }
    Ok(bytes)
}

/// Decodes a *contiguous slice* of a text's tokens to a string.
///
/// A byte-level BPE may cut a multi-byte character between two tokens, so a slice can start or
/// end inside a character. The rule: **a character any of whose bytes lies outside the slice is
/// dropped whole** — leading UTF-8 continuation bytes and a trailing incomplete sequence are
/// removed, and no U+FFFD is ever introduced. (Python tiktoken's `decode` would insert U+FFFD
/// there.) Bytes that are invalid in the middle of the slice cannot occur for slices of
/// `encode(text)`; should arbitrary ids produce them, they are replaced by U+FFFD.
pub fn decode_slice(tokens: &[u32]) -> Result<String, UnknownToken> {
    let bytes = decode_bytes(tokens)?;
    let start = bytes.iter().take_while(|&&b| is_continuation(b)).count();
    let end = bytes.len() - incomplete_tail(&bytes[start..]);
    Ok(String::from_utf8_lossy(&bytes[start..end]).into_owned())
}

/// The first `max_tokens` cl100k tokens of `text` (the whole text when it is shorter), decoded
/// by [`decode_slice`]'s rule — as SAGE's authors truncate documents before the sensitivity
/// perturbations.
pub fn truncate(text: &str, max_tokens: usize) -> String {
    let tokens = encode(text);
    if tokens.len() <= max_tokens {
        return text.to_owned();
    }
    decode_slice(&tokens[..max_tokens]).expect("ids from encode are cl100k ids")
}

fn is_continuation(byte: u8) -> bool {
    byte & 0b1100_0000 == 0b1000_0000
}

/// Length of an unfinished multi-byte sequence at the end of `bytes` (0 when it ends cleanly).
fn incomplete_tail(bytes: &[u8]) -> usize {
    // A UTF-8 sequence is at most 4 bytes: look back at most 3 for its lead byte.
    for back in 1..=bytes.len().min(4) {
        let b = bytes[bytes.len() - back];
        if is_continuation(b) {
            continue;
        }
        let needed = match b {
            0x00..=0x7F => 1,
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            _ => 4,
        };
        return if needed > back { back } else { 0 };
    }
    0
}

#[cfg(test)]
mod tests {
    /// The loads give what copying the bytes into a zeroed buffer gives.
    #[test]
    fn packed_keys_are_the_bytes_and_length() {
        let text = b"0123456789abcdefgh";
        for n in 0..16 {
            let mut buffer = [0u8; 16];
            buffer[..n].copy_from_slice(&text[..n]);
            buffer[15] = n as u8;
            assert_eq!(packed(&text[..n]), Some(u128::from_le_bytes(buffer)), "{n}");
        }
        assert_eq!(packed(&text[..16]), None);
    }

    #[test]
    fn truncate_keeps_the_first_tokens() {
        let text = "one two three four five";
        assert_eq!(super::truncate(text, 2), "one two");
        assert_eq!(super::truncate(text, 100), text);
        assert_eq!(super::truncate(text, 0), "");
    }

    use super::*;
    use proptest::prelude::*;

    #[test]
    fn encodes_like_python_tiktoken() {
        // tiktoken 0.14.0: enc.encode("Hello world! <|endoftext|>", disallowed_special=())
        assert_eq!(
            encode("Hello world! <|endoftext|>"),
            [9906, 1917, 0, 83739, 8862, 728, 428, 91, 29]
        );
        assert_eq!(count(""), 0);
        assert!(decode_slice(&[u32::MAX]).is_err());
    }

    #[test]
    fn a_cut_character_is_dropped_whole() {
        // "日" is 3 bytes; find a text where a token boundary falls inside a character
        let text = "x😀y 日本語 ok";
        let ids = encode(text);
        let full = decode_slice(&ids).unwrap();
        assert_eq!(full, text);
        for cut in 0..=ids.len() {
            let (head, tail) = (
                decode_slice(&ids[..cut]).unwrap(),
                decode_slice(&ids[cut..]).unwrap(),
            );
            assert!(!head.contains('\u{FFFD}') && !tail.contains('\u{FFFD}'));
            assert!(text.starts_with(&head), "{head:?}");
            assert!(text.ends_with(&tail), "{tail:?}");
        }
    }

    /// The embedded rank table is tiktoken's, rank by rank. With SAGE_TOKENS_WRITE_TABLE set,
    /// rewrites assets/cl100k_base.ranks from tiktoken-rs first (then rebuild to embed it).
    #[test]
    fn the_embedded_rank_table_is_tiktokens() {
        let bpe = tiktoken_rs::cl100k_base_singleton();
        let expected: Vec<Vec<u8>> = (0..ORDINARY)
            .map(|rank| bpe.decode_bytes(&[rank]).unwrap())
            .collect();
        if std::env::var_os("SAGE_TOKENS_WRITE_TABLE").is_some() {
            let mut table = Vec::new();
            for token in &expected {
                table.push(u8::try_from(token.len()).unwrap());
                table.extend_from_slice(token);
            }
            let path =
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/cl100k_base.ranks");
            std::fs::write(path, table).unwrap();
        }
        let embedded = table_starts(TABLE);
        assert_eq!(embedded.len(), expected.len());
        for (rank, (&start, theirs)) in embedded.iter().zip(&expected).enumerate() {
            assert_eq!(table_token(TABLE, start), theirs, "rank {rank}");
        }
        assert!(
            bpe.decode_bytes(&[ORDINARY]).is_err(),
            "cl100k grew past 100,256 tokens"
        );
        for (id, name) in SPECIAL {
            assert_eq!(
                decode_bytes(&[id]).unwrap(),
                bpe.decode_bytes(&[id]).unwrap(),
                "{name}"
            );
        }
    }

    /// tiktoken-rs's own encoder: the oracle for ours.
    fn tiktoken(text: &str) -> Vec<u32> {
        tiktoken_rs::cl100k_base_singleton().encode_ordinary(text)
    }

    /// Every string value of every JSON line under `dir` (recursively).
    fn corpus_texts(dir: &std::path::Path, out: &mut Vec<String>) {
        fn strings(v: &serde_json::Value, out: &mut Vec<String>) {
            match v {
                serde_json::Value::String(s) => out.push(s.clone()),
                serde_json::Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
                serde_json::Value::Object(o) => o.values().for_each(|x| strings(x, out)),
                _ => {}
            }
        }
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                corpus_texts(&path, out);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                for line in std::fs::read_to_string(&path).unwrap().lines() {
                    if let Ok(v) = serde_json::from_str(line) {
                        strings(&v, out);
                    }
                }
            }
        }
    }

    #[test]
    fn encodes_the_shipped_corpora_as_tiktoken_does() {
        let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/fixtures");
        let mut texts = Vec::new();
        corpus_texts(&fixtures, &mut texts);
        match std::env::var_os("SAGE_DATA_DIR") {
            Some(dir) => corpus_texts(std::path::Path::new(&dir), &mut texts),
            None => sage_core_free_skip("SAGE_DATA_DIR unset: only data/fixtures compared"),
        }
        assert!(texts.len() > 1_000, "{} texts", texts.len());
        for text in &texts {
            assert_eq!(encode(text), tiktoken(text), "{text:?}");
        }
    }

    /// The skip line sage_core::test_support writes (this crate sits below sage-core).
    fn sage_core_free_skip(why: &str) {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "skipped: {}: {why}", module_path!());
    }

    /// Characters where the pattern's rules meet: each class, the contraction letters and their
    /// Unicode case folds, every kind of white space, marks, astral letters and numbers.
    fn hostile_char() -> impl Strategy<Value = char> {
        prop::sample::select(vec![
            'a',
            'Z',
            's',
            'S',
            'ſ',
            'l',
            'L',
            'v',
            'e',
            'r',
            'd',
            'm',
            't',
            'T',
            'k',
            'K',
            '\'',
            '’',
            '"',
            '.',
            ',',
            '!',
            '-',
            '(',
            ')',
            '#',
            '0',
            '7',
            '٣',
            'Ⅻ',
            '²',
            '½',
            ' ',
            ' ',
            ' ',
            '\t',
            '\r',
            '\n',
            '\u{0B}',
            '\u{0C}',
            '\u{85}',
            '\u{A0}',
            '\u{1680}',
            '\u{2000}',
            '\u{2028}',
            '\u{2029}',
            '\u{202F}',
            '\u{3000}',
            '\u{200B}',
            '\u{FEFF}',
            '\u{301}',
            '\u{308}',
            'é',
            'ß',
            'İ',
            'Ω',
            'я',
            '東',
            '京',
            'ア',
            'ー',
            '한',
            'ع',
            '\u{1D400}',
            '\u{1D7CE}',
            '\u{10400}',
            '\u{1F600}',
            '\u{1F3FD}',
            '\u{E000}',
            '\u{0}',
            '\u{7F}',
            '<',
            '|',
            '>',
        ])
    }

    /// tiktoken-rs's cl100k_base pattern, run by the regex engine tiktoken-rs runs it with.
    static PATTERN: std::sync::LazyLock<fancy_regex::Regex> = std::sync::LazyLock::new(|| {
        fancy_regex::Regex::new(
            r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s",
        )
        .unwrap()
    });

    /// Pieces as the regex splits `text`, and as ours does: ids alone can hide a wrong split
    /// when both splits merge to the same tokens.
    fn both_splits(text: &str) -> (Vec<String>, Vec<String>) {
        let theirs = PATTERN
            .find_iter(text)
            .map(|m| m.unwrap().as_str().to_owned())
            .collect();
        let mut ours = Vec::new();
        pretokenize::pieces(text, |p| ours.push(p.to_owned()));
        (ours, theirs)
    }

    #[test]
    fn splits_where_the_pattern_splits() {
        for text in [
            "don't 'Sup 'ſun 'LL 'vE 're'd",
            "a  b\t\tc \n\n d  ",
            "x \r\n\r\n  ",
            "12345 ٣٣٣٣ Ⅻ²",
            " !!!\n\n?? ...",
            "\u{A0}word \u{3000}東京",
            "e\u{301}\u{301}x",
            "  ",
        ] {
            let (ours, theirs) = both_splits(text);
            assert_eq!(ours, theirs, "{text:?}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 3000, rng_seed: proptest::test_runner::RngSeed::Fixed(5), ..ProptestConfig::default() })]
        #[test]
        fn splits_hostile_unicode_where_the_pattern_splits(chars in prop::collection::vec(hostile_char(), 0..60)) {
            let text: String = chars.into_iter().collect();
            let (ours, theirs) = both_splits(&text);
            prop_assert_eq!(ours, theirs, "{:?}", text);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 3000, rng_seed: proptest::test_runner::RngSeed::Fixed(11), ..ProptestConfig::default() })]
        #[test]
        fn encodes_hostile_unicode_as_tiktoken_does(chars in prop::collection::vec(hostile_char(), 0..60)) {
            let text: String = chars.into_iter().collect();
            prop_assert_eq!(encode(&text), tiktoken(&text), "{:?}", text);
        }

        #[test]
        fn encodes_any_text_as_tiktoken_does(text in "\\PC{0,80}|[ \t\r\n\\PC]{0,80}") {
            prop_assert_eq!(encode(&text), tiktoken(&text), "{:?}", text);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, rng_seed: proptest::test_runner::RngSeed::Fixed(3), ..ProptestConfig::default() })]
        #[test]
        fn slices_decode_to_substrings_without_replacement_characters(text in "\\PC{0,60}", a in 0usize..80, b in 0usize..80) {
            let ids = encode(&text);
            prop_assert_eq!(decode_slice(&ids).unwrap(), text.clone());
            let (lo, hi) = (a.min(b).min(ids.len()), a.max(b).min(ids.len()));
            let piece = decode_slice(&ids[lo..hi]).unwrap();
            prop_assert!(text.contains(&piece));
        }
    }
}
