//! Our cl100k encoder (hand-written pre-tokenizer, packed keys read by overlapping loads, own
//! merge) against tiktoken-rs on any text: the same ids, a count equal to their number, and ids
//! that decode back to the text.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let ours = sage_tokens::encode(text);
    let theirs = tiktoken_rs::cl100k_base_singleton().encode_ordinary(text);
    assert_eq!(ours, theirs, "{text:?}");
    assert_eq!(sage_tokens::count(text), ours.len());
    assert_eq!(sage_tokens::decode_slice(&ours).unwrap(), text);
});
