//! The word-vector loader on any file: GloVe text, fastText `.vec` or word2vec binary (the first
//! byte picks the name the file gets, so the rest is read in that format). Loading either fails
//! with an error naming the file, or gives an embedder whose every vector is finite: a NaN in a
//! vector file would surface as a `null` score far from its cause.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use sage_core::Embedder;
use sage_embed::{ResolvedModel, WordVectors};

fn scratch() -> &'static tempfile::TempDir {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().unwrap())
}

const NAMES: [&str; 3] = ["glove.fuzz.txt", "vectors.vec", "vectors.bin"];

fuzz_target!(|input: &[u8]| {
    let Some((&pick, contents)) = input.split_first() else {
        return;
    };
    let dir = scratch().path().join("model");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(NAMES[pick as usize % NAMES.len()]);
    std::fs::write(&file, contents).unwrap();
    let model = ResolvedModel {
        dir: dir.clone(),
        name: "fuzz".into(),
        revision: None,
    };
    match WordVectors::load(&model) {
        Err(e) => {
            let message = e.to_string();
            assert!(message.contains(&*file.to_string_lossy()), "{message}");
        }
        Ok(vectors) => {
            let texts = ["the", "a b c", "", "unknown words here", "don't."];
            let rows = vectors.embed(&texts).unwrap();
            assert_eq!(rows.nrows(), texts.len());
            assert!(rows.iter().all(|v| v.is_finite()), "a vector is not finite");
        }
    }
});
