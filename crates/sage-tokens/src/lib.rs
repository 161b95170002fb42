//! # sage-tokens
//!
//! The cl100k_base tokenizer (OpenAI's `text-embedding-3-*` tokenizer) as SAGE uses it: ROUGE
//! and Jaccard compare cl100k ids, the needle filler is measured in cl100k tokens, token removal
//! cuts cl100k spans. One crate so that every user encodes and decodes the same way.
//!
//! The ranks come embedded in tiktoken-rs; nothing is downloaded. The encoder is built once per
//! process (~50 ms) and shared by all threads.
#![deny(missing_docs)]

/// cl100k_base token ids of `text`, as Python tiktoken's `encode(text, disallowed_special=())`:
/// special-token strings such as `<|endoftext|>` are encoded as ordinary text.
pub fn encode(text: &str) -> Vec<u32> {
    tiktoken_rs::cl100k_base_singleton().encode_ordinary(text)
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
    tiktoken_rs::cl100k_base_singleton()
        .decode_bytes(tokens)
        .map_err(|e| UnknownToken(e.to_string()))
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
