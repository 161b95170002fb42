//! A user's own file on hostile contents: JSON lines, CSV or TSV (the first byte picks the format,
//! and whether a kind and a column mapping are given), read the way `sage data check PATH` reads
//! it — layout, columns, kind detection, every row.
//!
//! The reader must never panic, and a parse error must name the file and a line that exists in it.
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use sage_core::RunSeed;
use sage_data::{DataError, DataRoot, PathHints};

const FORMATS: [&str; 3] = ["jsonl", "csv", "tsv"];
const KINDS: [Option<&str>; 4] = [None, Some("sts-pairs"), Some("labeled-texts"), Some("documents")];

fuzz_target!(|input: &[u8]| {
    let Some((&pick, contents)) = input.split_first() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let format = FORMATS[pick as usize % FORMATS.len()];
    let path = dir.path().join(format!("mine.{format}"));
    std::fs::write(&path, contents).unwrap();
    let mut columns = BTreeMap::new();
    if pick & 0x80 != 0 {
        columns.insert("text".to_owned(), "body".to_owned());
    }
    let hints = PathHints {
        kind: KINDS[(pick as usize / 3) % KINDS.len()].map(str::to_owned),
        columns,
    };
    // CSV also ends a line at a lone \r
    let lines = contents.iter().filter(|&&b| b == b'\n' || b == b'\r').count() + 1;
    let mut root = DataRoot::without_mirror();
    let checked = root
        .resolve(path.to_str().unwrap(), &hints)
        .and_then(|(name, split)| root.inspect(&name, &split, Some(5), RunSeed(7)));
    if let Err(DataError::Parse { path: at, line, message }) = checked {
        assert_eq!(at, path, "{message}");
        assert!(
            (1..=lines).contains(&line),
            "{}:{line}: {message} (the file has {lines} lines)",
            at.display()
        );
    }
});
