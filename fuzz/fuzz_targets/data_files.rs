//! Every dataset loader on hostile file contents: a copy of the fixture mirror in which one file
//! (chosen by the first byte) is replaced by the rest of the input, then loaded the way
//! `sage data inspect` loads it, or opened as WordNet and asked for synonyms and antonyms.
//!
//! The loader must never panic, and a parse error must name the replaced file and a line that
//! exists in it. The file is put back after every run, so each input is tried on its own.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use sage_core::RunSeed;
use sage_data::{DataError, DataRoot, DatasetKind, REGISTRY};
use sage_perturb::WordNet;

struct Target {
    dataset: &'static str,
    split: &'static str,
    file: PathBuf,
    original: Vec<u8>,
    wordnet: bool,
}

struct Mirror {
    _dir: tempfile::TempDir,
    root: DataRoot,
    targets: Vec<Target>,
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), dest).unwrap();
        }
    }
}

fn mirror() -> &'static Mirror {
    static MIRROR: OnceLock<Mirror> = OnceLock::new();
    MIRROR.get_or_init(|| {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/fixtures/mirror");
        let dir = tempfile::tempdir().unwrap();
        copy_tree(&fixtures, dir.path());
        let root = DataRoot::new(dir.path());
        let mut targets = Vec::new();
        for entry in REGISTRY {
            let split = entry.splits[0];
            if !root.is_local(entry, split) {
                continue;
            }
            let base = root.root().unwrap().join(entry.local_path(split));
            let files: Vec<PathBuf> = match entry.kind {
                DatasetKind::Beir => vec![
                    base.join("corpus.jsonl"),
                    base.join("queries.jsonl"),
                    base.join("qrels").join(format!("{split}.tsv")),
                ],
                DatasetKind::WordNet => ["index.noun", "data.noun", "noun.exc", "index.adj", "data.adj"]
                    .iter()
                    .map(|f| base.join(f))
                    .collect(),
                _ => vec![base],
            };
            for file in files {
                targets.push(Target {
                    dataset: entry.name,
                    split,
                    original: std::fs::read(&file).unwrap(),
                    file,
                    wordnet: entry.kind == DatasetKind::WordNet,
                });
            }
        }
        assert!(targets.len() > 10, "the fixture mirror has the loaders' files");
        Mirror {
            _dir: dir,
            root,
            targets,
        }
    })
}

fuzz_target!(|input: &[u8]| {
    let Some((&pick, contents)) = input.split_first() else {
        return;
    };
    let mirror = mirror();
    let target = &mirror.targets[pick as usize % mirror.targets.len()];
    std::fs::write(&target.file, contents).unwrap();
    let lines = contents.iter().filter(|&&b| b == b'\n').count() + 1;
    if target.wordnet {
        if let Ok(wordnet) = WordNet::open(target.file.parent().unwrap()) {
            for word in ["good", "dog", "run", "bad", "quickly"] {
                let _ = wordnet.synonyms(word);
                let _ = wordnet.antonyms(word);
            }
        }
    } else {
        match mirror
            .root
            .inspect(target.dataset, target.split, Some(5), RunSeed(7))
        {
            Err(DataError::Parse { path, line, message }) if path == target.file => {
                assert!(
                    (1..=lines).contains(&line),
                    "{}:{line}: {message} (the file has {lines} lines)",
                    path.display()
                );
            }
            Err(DataError::Parse { path, .. }) => {
                // a BEIR qrels line names a missing id in the other files; any other file is wrong
                assert!(
                    target.file.ends_with("corpus.jsonl")
                        || target.file.ends_with("queries.jsonl"),
                    "error names {} after {} changed",
                    path.display(),
                    target.file.display()
                );
            }
            _ => {}
        }
    }
    std::fs::write(&target.file, &target.original).unwrap();
});
