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
