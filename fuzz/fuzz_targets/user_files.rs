//! A user's own file or folder on hostile contents, read the way `sage data check PATH` reads
//! it — layout, columns, kind detection, every row. The first byte picks the layout:
//!
//! - JSON lines, CSV or TSV (and whether a kind and a column mapping are given);
//! - Parquet: the bytes as a `.parquet` file, through sage's own footer and page-header check
//!   (the gate polars sits behind; this build has no polars, so a file the check passes ends in
//!   "needs the `parquet` feature");
//! - a BEIR folder: the bytes split at NUL bytes into corpus.jsonl, queries.jsonl and
//!   qrels/test.tsv.
//!
//! The reader must never panic, and a parse error must name a file of the input and a line that
//! exists in it.
#![no_main]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use libfuzzer_sys::fuzz_target;
use sage_core::RunSeed;
use sage_data::{DataError, DataRoot, PathHints};

const FORMATS: [&str; 3] = ["jsonl", "csv", "tsv"];
const KINDS: [Option<&str>; 4] = [None, Some("sts-pairs"), Some("labeled-texts"), Some("documents")];
const BEIR_FILES: [&str; 3] = ["corpus.jsonl", "queries.jsonl", "qrels/test.tsv"];

/// Lines of `contents` as a reader may count them (CSV also ends a line at a lone \r).
fn lines_of(contents: &[u8]) -> usize {
    contents.iter().filter(|&&b| b == b'\n' || b == b'\r').count() + 1
}

fuzz_target!(|input: &[u8]| {
    let Some((&pick, contents)) = input.split_first() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut hints = PathHints::default();
    // each file written, with its line count
    let mut written: Vec<(PathBuf, usize)> = Vec::new();
    let path = match pick % 8 {
        0..=5 => {
            let format = FORMATS[pick as usize % FORMATS.len()];
            let path = dir.path().join(format!("mine.{format}"));
            std::fs::write(&path, contents).unwrap();
            written.push((path.clone(), lines_of(contents)));
            let mut columns = BTreeMap::new();
            if pick & 0x80 != 0 {
                columns.insert("text".to_owned(), "body".to_owned());
            }
            hints = PathHints {
                kind: KINDS[(pick as usize / 3) % KINDS.len()].map(str::to_owned),
                columns,
            };
            path
        }
        6 => {
            let path = dir.path().join("mine.parquet");
            // a seed's bytes are a real file's; the fuzzer mutates them
            std::fs::write(&path, contents).unwrap();
            written.push((path.clone(), 1));
            path
        }
        _ => {
            let folder = dir.path().join("mine");
            std::fs::create_dir_all(folder.join("qrels")).unwrap();
            let mut parts = contents.splitn(3, |&b| b == 0);
            for file in BEIR_FILES {
                let part = parts.next().unwrap_or_default();
                let at = folder.join(file);
                std::fs::write(&at, part).unwrap();
                written.push((at, lines_of(part)));
            }
            folder
        }
    };
    let mut root = DataRoot::without_mirror();
    let checked = root
        .resolve(path.to_str().unwrap(), &hints)
        .and_then(|(name, split)| root.inspect(&name, &split, Some(5), RunSeed(7)));
    match checked {
        Err(DataError::Parse { path: at, line, message }) => {
            let Some((_, lines)) = written.iter().find(|(p, _)| *p == at) else {
                panic!("{}:{line}: {message} names no file of the input", at.display());
            };
            // Parquet rows are numbered by row, not line: any row the check reached
            if at.extension().is_some_and(|e| e != "parquet") {
                assert!(
                    (1..=*lines).contains(&line),
                    "{}:{line}: {message} (the file has {lines} lines)",
                    at.display()
                );
            }
        }
        Err(DataError::Io { path: at, message }) => {
            assert!(
                at.starts_with(dir.path()) || at == Path::new(""),
                "{}: {message} names no path of the input",
                at.display()
            );
        }
        _ => {}
    }
});
