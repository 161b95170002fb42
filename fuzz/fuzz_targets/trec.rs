//! The TREC readers (`sage_data::trec`: qrels of BEIR and trec_eval, TREC runs) on any bytes:
//! never a panic; an error names the file and a line it has; what is read keeps its lines in
//! order, one judgement or retrieved document per (query, document).
#![no_main]

use std::collections::HashSet;
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use sage_data::trec::{parse_qrels, parse_run};
use sage_data::DataError;

fn line_exists(e: &DataError, lines: usize) {
    if let DataError::Parse { line, message, .. } = e {
        assert!((1..=lines).contains(line), "line {line} of {lines}: {message}");
    }
    assert!(e.to_string().starts_with("input.tsv"), "{e}");
}

fuzz_target!(|bytes: &[u8]| {
    let path = Path::new("input.tsv");
    let lines = bytes.iter().filter(|&&b| b == b'\n').count() + 1;
    match parse_qrels(path, bytes) {
        Ok(judgements) => {
            assert!(judgements.windows(2).all(|w| w[0].line < w[1].line));
            let pairs: HashSet<_> = judgements.iter().map(|j| (&j.query, &j.doc)).collect();
            assert_eq!(pairs.len(), judgements.len());
        }
        Err(e) => line_exists(&e, lines),
    }
    match parse_run(path, bytes) {
        Ok(run) => {
            assert!(run.iter().all(|r| r.score.is_finite()));
            let pairs: HashSet<_> = run.iter().map(|r| (&r.query, &r.doc)).collect();
            assert_eq!(pairs.len(), run.len());
        }
        Err(e) => line_exists(&e, lines),
    }
});
