//! An embedding server's answer (`sage_remote::answer::read`) on any bytes, for every
//! protocol, any text count and any known width: an error, or exactly one finite vector per
//! text, all of one width (the known one, else at most `MAX_WIDTH`). Never a panic or an abort;
//! what is held stays within `texts × width` floats, so libFuzzer's memory limit (run.sh) would
//! catch an answer parsed whole.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sage_remote::answer::{read, MAX_WIDTH};
use sage_remote::Protocol;

const PROTOCOLS: [Protocol; 4] = [
    Protocol::OpenAi,
    Protocol::Voyage,
    Protocol::Cohere,
    Protocol::Gemini,
];

fuzz_target!(|bytes: &[u8]| {
    let [protocol, count, width, body @ ..] = bytes else {
        return;
    };
    let protocol = PROTOCOLS[usize::from(*protocol) % 4];
    let count = usize::from(*count % 9);
    let width = (*width > 0 && *width < 128).then_some(usize::from(*width % 16) + 1);
    if let Ok(answer) = read(protocol, body, count, width) {
        assert_eq!(answer.vectors.len(), count);
        let expected = width.unwrap_or_else(|| answer.vectors.first().map_or(0, Vec::len));
        for vector in &answer.vectors {
            assert_eq!(vector.len(), expected);
            assert!(!vector.is_empty() && vector.len() <= MAX_WIDTH);
            assert!(vector.iter().all(|x| x.is_finite()));
        }
    }
});
