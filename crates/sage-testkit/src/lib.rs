//! # sage-testkit
//!
//! What the tests of the task crates share, written once: the fixtures mirror every unit test
//! reads, and the set-up of the real-data tests (the data mirror, the classical metrics and local
//! models by cosine). A dev-dependency only.
//!
//! A real-data test needs optional downloads (`$SAGE_DATA_DIR`, model folders under
//! `$SAGE_MODELS_DIR`). When one is absent [`real_runs`] prints a counted `skipped:` line (see
//! [`sage_test_env::skip`]) and returns `None`, so the test neither fails for a missing
//! download nor passes silently.
#![deny(missing_docs)]

use std::path::PathBuf;

use sage_core::{EmbeddingSimilarity, Similarity};
use sage_data::DataRoot;
use sage_embed::{load_embedder, ResolveOptions, TransformerOptions};
use sage_metrics::Metric;
use sage_test_env::{data_dir_or_skip, model_dir_or_skip};

/// The small mirror shipped in the repository (`data/fixtures/mirror`).
pub fn fixtures() -> DataRoot {
    DataRoot::new(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/fixtures/mirror"))
}

/// The similarities a real-data test runs, each with the sample size (or other setting) the test
/// gives it.
pub type Runs<T> = Vec<(Box<dyn Similarity>, T)>;

/// The real data mirror and what a task's real-data test runs on it: the classical metrics
/// ([`Metric::BUILT_IN`]) each with `metrics`, then each of `models` (a folder name under
/// `$SAGE_MODELS_DIR`, compared by cosine) with its own setting. When the mirror or a model is
/// absent: a `skipped:` line naming `what`, and `None`.
///
/// # Panics
/// When a model folder is there but does not load: that is a failure, not a missing download.
pub fn real_runs<T: Clone>(
    what: &str,
    metrics: T,
    models: &[(&str, T)],
) -> Option<(DataRoot, Runs<T>)> {
    let root = DataRoot::new(data_dir_or_skip(what)?);
    let dirs: Vec<PathBuf> = models
        .iter()
        .map(|(name, _)| model_dir_or_skip(name, what))
        .collect::<Option<_>>()?;
    let mut runs: Runs<T> = Metric::BUILT_IN
        .iter()
        .map(|m| (m.similarity(), metrics.clone()))
        .collect();
    for (dir, (_, setting)) in dirs.iter().zip(models) {
        let embedder = load_embedder(
            &dir.display().to_string(),
            &ResolveOptions::default(),
            TransformerOptions::default(),
        )
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        runs.push((
            Box::new(EmbeddingSimilarity::cosine(embedder)),
            setting.clone(),
        ));
    }
    Some((root, runs))
}

/// A temporary mirror with a classification set (train and test) and a clustering set whose classes use
/// separate words, so that every similarity gets the clean task right.
pub fn labelled_mirror() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let classes = [
        (
            "card",
            [
                "my card was declined at the shop",
                "card payment declined again",
                "why was my card payment declined",
                "the card does not work in shops",
            ],
        ),
        (
            "transfer",
            [
                "transfer to my friend is pending",
                "bank transfer still pending today",
                "how long does a transfer take",
                "pending transfer has not arrived",
            ],
        ),
        (
            "pin",
            [
                "forgot the pin of my account",
                "how do i reset my pin",
                "change pin number please",
                "pin blocked after wrong tries",
            ],
        ),
    ];
    let line = |text: &str, label: &str| {
        serde_json::json!({ "text": text, "label": label }).to_string() + "\n"
    };
    let mut train = String::new();
    let mut test = String::new();
    let mut cluster = String::new();
    for (label, texts) in classes {
        for t in texts {
            train += &line(t, label);
            cluster += &line(t, label);
        }
        test += &line(&format!("{} {}", texts[0], label), label);
        test += &line(&format!("{label} {}", texts[1]), label);
    }
    let write = |path: &str, body: &str| {
        let file = dir.path().join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, body).unwrap();
    };
    write("classification/banking77/train.jsonl", &train);
    write("classification/banking77/test.jsonl", &test);
    write("clustering/twentynewsgroups/test.jsonl", &cluster);
    dir
}
