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
//! - the lookups are what costs once the split is fast: the rank table is megabytes, and each
//!   lookup there missed L2 and the TLB. So a thread keeps the pieces it met lately in a
//!   128 KB direct-mapped cache (words are Zipf-distributed), and a 128 KB filter answers most
//!   "is this no token?" questions that merging asks (`PieceCache`, `tables::filter_bits`);
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
use tables::{filter_bits, first_slot, packed, spread, table_token};
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
    /// The rank of each byte (every byte is a token).
    single_bytes: &'static [u32],
}

/// An open-addressing table of packed token bytes → rank (why not a `HashMap<u128, u32>`: with
/// FxHash the packed keys collide).
///
/// Keys and ranks are parallel arrays by slot, so a probe's loads do not wait on each other:
/// one miss per lookup where a rank-indexed key array took two in a row.
struct ShortTokens {
    /// [`tables::filter_bits`] of every key, asked before the table.
    filter: &'static [u64],
    /// The key in each slot (0: empty; no piece packs to 0, its length byte is at least 1): at
    /// [`tables::first_slot`] or the next free slot after it.
    keys: &'static [u128],
    /// rank + 1 per slot.
    slots: &'static [u32],
}

impl ShortTokens {
    #[inline]
    fn get(&self, key: u128) -> Option<u32> {
        if filter_bits(key)
            .iter()
            .any(|&bit| self.filter[bit / 64] & 1 << (bit % 64) == 0)
        {
            return None;
        }
        let mask = self.keys.len() - 1;
        let mut at = first_slot(key, self.keys.len());
        loop {
            match self.keys[at] {
                0 => return None,
                k if k == key => return Some(self.slots[at] - 1),
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
            filter: built_table!("filter.bin", u64),
            slots: built_table!("slots.bin", u32),
            keys: built_table!("keys.bin", u128),
        },
        long,
        pairs: built_table!("pairs.bin", u32),
        single_bytes: built_table!("single_bytes.bin", u32),
    }
});

impl Ranks {
    /// Byte-pair merging of a piece that is not one token, as tiktoken's `_byte_pair_merge`
    /// does it: repeatedly join the adjacent pair whose bytes are the lowest-ranked token (the
    /// first such pair on ties), then emit the parts' ranks. `token` is the rank of bytes that
    /// are one token (asked of runs of three bytes or more; the pairs come from
    /// [`Ranks::pairs`]).
    fn merge(&self, piece: &[u8], ids: &mut Vec<u32>, mut token: impl FnMut(&[u8]) -> Option<u32>) {
        /// A run of the piece's bytes that is one token.
        struct Part {
            start: usize,
            token: u32,
            /// The rank of this part joined with the next one (`u32::MAX`: not a token).
            joined: u32,
        }
        let n = piece.len();
        let mut parts: Vec<Part> = Vec::with_capacity(n + 1);
        parts.extend(piece.iter().enumerate().map(|(i, &byte)| Part {
            start: i,
            token: self.single_bytes[usize::from(byte)],
            joined: piece.get(i + 1).map_or(u32::MAX, |&next| {
                self.pairs[usize::from(byte) << 8 | usize::from(next)]
            }),
        }));
        // where the last part ends
        parts.push(Part {
            start: n,
            token: u32::MAX,
            joined: u32::MAX,
        });
        let mut joined = |parts: &[Part], i: usize| -> u32 {
            match parts.get(i + 2) {
                Some(end) => token(&piece[parts[i].start..end.start]).unwrap_or(u32::MAX),
                None => u32::MAX,
            }
        };
        loop {
            let (mut lowest, mut at) = (u32::MAX, 0);
            for (i, part) in parts[..parts.len() - 1].iter().enumerate() {
                if part.joined < lowest {
                    (lowest, at) = (part.joined, i);
                }
            }
            if lowest == u32::MAX {
                break;
            }
            parts[at].token = lowest;
            parts.remove(at + 1);
            parts[at].joined = joined(&parts, at);
            if at > 0 {
                parts[at - 1].joined = joined(&parts, at - 1);
            }
        }
        ids.extend(parts[..parts.len() - 1].iter().map(|part| part.token));
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

/// What [`PieceCache`] knows of a piece: its rank when it is one token; else, with the high bit
/// set, either where its merged ids are in [`PieceCache::merged_ids`] (`start << 4 | length`: a
/// piece of ≤ 15 bytes merges to ≤ 15 tokens) or, all bits set, only that it is not one token.
#[derive(Clone, Copy, PartialEq, Eq)]
struct PieceIds(u64);

impl PieceIds {
    const NOT_ONE_TOKEN: Self = Self(u64::MAX);
    const SPAN: u64 = 1 << 63;

    fn rank(rank: u32) -> Self {
        Self(u64::from(rank))
    }

    fn span(start: usize, len: usize) -> Self {
        Self(Self::SPAN | (start as u64) << 4 | len as u64)
    }

    fn one_token(self) -> Option<u32> {
        (self.0 & Self::SPAN == 0).then_some(self.0 as u32)
    }

    /// Appends the ids, unless all that is known is [`PieceIds::NOT_ONE_TOKEN`].
    #[inline]
    fn emit(self, merged_ids: &[u32], ids: &mut Vec<u32>) -> bool {
        if self.0 & Self::SPAN == 0 {
            ids.push(self.0 as u32);
        } else if self != Self::NOT_ONE_TOKEN {
            let start = ((self.0 & !Self::SPAN) >> 4) as usize;
            ids.extend_from_slice(&merged_ids[start..start + (self.0 & 0xF) as usize]);
        } else {
            return false;
        }
        true
    }
}

/// A slot of [`PieceCache::recent`] that holds no piece (no piece packs to key 0).
const EMPTY_SLOT: (u128, PieceIds) = (0, PieceIds(0));

/// Slots of [`PieceCache::recent`]: 128 KB, well within a core's L2 cache (512 KB here).
const RECENT_SLOTS: usize = 1 << 12;

/// The pieces this thread met lately, in front of the rank tables.
///
/// Why: the short-token table is ~5 MB, so a lookup there misses the L2 cache, and those misses
/// were most of the encoding time on news text (perf). Words are Zipf-distributed: a small
/// direct-mapped cache of the last pieces answers most lookups from L2. It also keeps merged
/// pieces: a word that is not one token (an upper-cased or misspelt one) is usually met again,
/// and merging it costs ten lookups, whose parts (`PRES`, `IDENT`) the cache answers too.
struct PieceCache {
    /// `(key, what is known)` at `spread(key) % RECENT_SLOTS`; key 0 is empty (no piece packs
    /// to 0: its length byte is at least 1).
    recent: Box<[(u128, PieceIds)]>,
    /// Every merged piece since the last reset, by packed key.
    merged: HashMap<u128, PieceIds, std::hash::BuildHasherDefault<SpreadHasher>>,
    /// The ids the spans of `merged` point into.
    merged_ids: Vec<u32>,
}

/// Enough for a corpus's vocabulary of merged words; past it the cache starts over, so memory
/// stays bounded on hostile input.
const MERGED_LIMIT: usize = 1 << 17;

impl PieceCache {
    fn new() -> Self {
        Self {
            recent: vec![EMPTY_SLOT; RECENT_SLOTS].into_boxed_slice(),
            merged: HashMap::default(),
            merged_ids: Vec::new(),
        }
    }

    /// Appends the ids of a piece of ≤ 15 bytes, packed as `key`.
    #[inline]
    fn encode_short(&mut self, ranks: &Ranks, key: u128, bytes: &[u8], ids: &mut Vec<u32>) {
        let slot = first_slot(key, RECENT_SLOTS);
        let (cached_key, known) = self.recent[slot];
        let one_token = if cached_key == key {
            if known.emit(&self.merged_ids, ids) {
                return;
            }
            None
        } else {
            ranks.short.get(key)
        };
        let found = match one_token {
            Some(rank) => PieceIds::rank(rank),
            None => match self.merged.get(&key) {
                Some(&span) => span,
                None => self.merge(ranks, key, bytes),
            },
        };
        self.recent[slot] = (key, found);
        found.emit(&self.merged_ids, ids);
    }

    #[cold]
    fn merge(&mut self, ranks: &Ranks, key: u128, bytes: &[u8]) -> PieceIds {
        if self.merged.len() >= MERGED_LIMIT {
            // the recent slots may point into what is dropped
            self.merged.clear();
            self.merged_ids.clear();
            self.recent.fill(EMPTY_SLOT);
        }
        let start = self.merged_ids.len();
        let recent = &mut self.recent;
        ranks.merge(bytes, &mut self.merged_ids, |part| {
            one_token(recent, ranks, part)
        });
        let span = PieceIds::span(start, self.merged_ids.len() - start);
        self.merged.insert(key, span);
        span
    }
}

/// The rank of `bytes` if they are one token, through the recent slots.
fn one_token(recent: &mut [(u128, PieceIds)], ranks: &Ranks, bytes: &[u8]) -> Option<u32> {
    let Some(key) = packed(bytes) else {
        return ranks.long.get(bytes).copied();
    };
    let slot = first_slot(key, RECENT_SLOTS);
    let (cached_key, known) = recent[slot];
    if cached_key == key {
        return known.one_token();
    }
    let rank = ranks.short.get(key);
    recent[slot] = (key, rank.map_or(PieceIds::NOT_ONE_TOKEN, PieceIds::rank));
    rank
}

thread_local! {
    static CACHE: RefCell<PieceCache> = RefCell::new(PieceCache::new());
}

/// cl100k_base token ids of `text`, as Python tiktoken's `encode(text, disallowed_special=())`:
/// special-token strings such as `<|endoftext|>` are encoded as ordinary text.
pub fn encode(text: &str) -> Vec<u32> {
    let ranks = &*RANKS;
    let mut ids = Vec::with_capacity(text.len() / 4 + 1);
    CACHE.with(|cache| {
        let cache = &mut *cache.borrow_mut();
        pretokenize::pieces(text, |piece| {
            let bytes = piece.as_bytes();
            match packed(bytes) {
                Some(key) => cache.encode_short(ranks, key, bytes, &mut ids),
                None => match ranks.long.get(bytes) {
                    Some(&rank) => ids.push(rank),
                    None => {
                        let recent = &mut cache.recent;
                        ranks.merge(bytes, &mut ids, |part| one_token(recent, ranks, part));
                    }
                },
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

    /// Every token is found by its bytes, through the filter and the parallel slot arrays, and
    /// every byte's rank is the one-byte token's.
    #[test]
    fn every_token_is_found_by_its_bytes() {
        let ranks = &*RANKS;
        for (rank, &start) in (0u32..).zip(ranks.starts) {
            let bytes = table_token(TABLE, start);
            let found = match packed(bytes) {
                Some(key) => ranks.short.get(key),
                None => ranks.long.get(bytes).copied(),
            };
            assert_eq!(found, Some(rank), "{bytes:?}");
            if let [byte] = bytes {
                assert_eq!(ranks.single_bytes[usize::from(*byte)], rank);
            }
        }
    }

    /// Past [`MERGED_LIMIT`] merged pieces the cache starts over, and the ids stay tiktoken's,
    /// for words met before the reset and after it.
    #[test]
    fn the_piece_cache_starts_over_without_changing_ids() {
        // upper-case four-letter words: most are no token, so each is merged and kept
        let word = |i: usize| -> String {
            let mut w = String::from(" ");
            let mut n = i;
            for _ in 0..4 {
                w.push(char::from(b'A' + (n % 26) as u8));
                n /= 26;
            }
            w
        };
        let chunk = |from: usize| -> String { (from..from + 10_000).map(word).collect() };
        let first = chunk(0);
        assert_eq!(encode(&first), tiktoken(&first));
        let mut from = 10_000;
        let mut reset = false;
        while from < 26usize.pow(4) - 10_000 && !reset {
            let text = chunk(from);
            let before = CACHE.with(|c| c.borrow().merged.len());
            assert_eq!(encode(&text), tiktoken(&text), "words {from}..");
            reset = CACHE.with(|c| c.borrow().merged.len()) < before;
            from += 10_000;
        }
        assert!(reset, "{from} words never filled the cache");
        assert_eq!(encode(&first), tiktoken(&first));
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
            None => sage_test_env::skip(
                module_path!(),
                "SAGE_DATA_DIR unset: only data/fixtures compared",
            ),
        }
        assert!(texts.len() > 1_000, "{} texts", texts.len());
        for text in &texts {
            assert_eq!(encode(text), tiktoken(text), "{text:?}");
        }
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
