//! The embedding cache reading a damaged file: a real cache file (written at start-up by the
//! cache itself) with bytes overwritten and perhaps cut short, as a failing disk or a killed copy
//! leaves it. Opening it may fail with an error; `check_cache` may report it; but every vector
//! the cache returns must be the embedder's own, bit for bit: a damaged entry is recomputed,
//! never returned.
//!
//! A page that names itself (or an ancestor) as its child sent redb's tree walks into endless
//! recursion, a stack overflow no catch survives: every open now has redb check each page
//! against its checksum first (`sage_cache::open_checked`).
//!
//! redb panics on some damage; the cache catches those panics and reports the file. libFuzzer
//! aborts on every panic, caught or not, so this target replaces its panic hook with one that
//! stays quiet: an uncaught panic still aborts, through libfuzzer-sys's own catch.
#![no_main]

use std::path::PathBuf;
use std::sync::{Once, OnceLock};

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use ndarray::Array2;
use sage_core::{Embedder, EmbedderIdentity};
use sage_embed::{check_cache, CachedEmbedder};

/// Vectors from the text's bytes: deterministic, distinct, finite.
struct Toy(EmbedderIdentity);

impl Embedder for Toy {
    fn identity(&self) -> &EmbedderIdentity {
        &self.0
    }
    fn dimension(&self) -> usize {
        4
    }
    fn embed(&self, texts: &[&str]) -> sage_core::Result<Array2<f32>> {
        Ok(Array2::from_shape_fn((texts.len(), 4), |(i, j)| {
            let b = texts[i].as_bytes();
            b.iter().skip(j).step_by(4).map(|&x| f32::from(x)).sum::<f32>() + j as f32 * 0.5
        }))
    }
}

fn toy() -> Toy {
    Toy(EmbedderIdentity {
        model_id: "fuzz/toy".into(),
        revision: None,
        pooling: "sum".into(),
        normalize: false,
        max_length: 0,
    })
}

fn texts() -> Vec<String> {
    (0..48).map(|i| format!("text number {i} {}", "x".repeat(i))).collect()
}

struct Template {
    dir: tempfile::TempDir,
    bytes: Vec<u8>,
}

fn template() -> &'static Template {
    static TEMPLATE: OnceLock<Template> = OnceLock::new();
    TEMPLATE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("template.redb");
        let texts = texts();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let cache = CachedEmbedder::open(toy(), &path).unwrap();
        cache.embed(&refs).unwrap();
        drop(cache);
        Template {
            bytes: std::fs::read(&path).unwrap(),
            dir,
        }
    })
}

#[derive(Arbitrary, Debug)]
struct Damage {
    /// (offset, byte): offsets wrap around the file's length
    writes: Vec<(u32, u8)>,
    /// cut the file to this many bytes (wrapping), when set
    truncate: Option<u32>,
}

fuzz_target!(|damage: Damage| {
    static QUIET: Once = Once::new();
    QUIET.call_once(|| std::panic::set_hook(Box::new(|_| {})));
    let template = template();
    let mut bytes = template.bytes.clone();
    for &(offset, value) in damage.writes.iter().take(32) {
        let i = offset as usize % bytes.len();
        bytes[i] = value;
    }
    if let Some(cut) = damage.truncate {
        bytes.truncate(cut as usize % (bytes.len() + 1));
    }
    let path: PathBuf = template.dir.path().join("damaged.redb");
    std::fs::write(&path, &bytes).unwrap();

    let _ = check_cache(&path, false);
    let texts = texts();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let truth = toy().embed(&refs).unwrap();
    if let Ok(cache) = CachedEmbedder::open(toy(), &path) {
        if let Ok(vectors) = cache.embed(&refs) {
            for (got, want) in vectors.iter().zip(truth.iter()) {
                assert_eq!(got.to_bits(), want.to_bits(), "the cache returned a changed vector");
            }
        }
    }
    let _ = std::fs::remove_file(&path);
});
