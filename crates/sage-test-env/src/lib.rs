//! # sage-test-env
//!
//! What tests that need optional downloads (the data mirror, model folders, a server package)
//! do when those are absent: they say so on a line of their own, and pass.
//!
//! libtest hides what a passing test prints, so a test that returned early looked exactly like
//! one that ran. [`skip`] writes past the capture, straight to the process's standard error, as
//! one line starting with `skipped:` that a CI script can count (`grep -c '^skipped:'`). The
//! helpers below find the usual folders and call it when they are missing.
//!
//! A crate of its own with no dependencies, a dev-dependency only: it used to ship inside
//! sage-core beside `Similarity`, and sage-tokens, below sage-core, kept a copy of the skip line.
#![deny(missing_docs)]

use std::io::Write;
use std::path::PathBuf;

/// Tells, on a line of its own that test capture does not hide, that `what` did not run and why.
pub fn skip(what: &str, why: &str) {
    let line = format!("skipped: {what}: {why}\n");
    // io::stderr() itself is not captured by libtest (only the print macros are)
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// A non-empty path from environment variable `key`.
pub fn env_dir(key: &str) -> Option<PathBuf> {
    std::env::var_os(key)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// `$SAGE_DATA_DIR`, or a skip line for `what` and `None`.
pub fn data_dir_or_skip(what: &str) -> Option<PathBuf> {
    let dir = env_dir("SAGE_DATA_DIR");
    if dir.is_none() {
        skip(
            what,
            "SAGE_DATA_DIR unset (the real data mirror; see ../shared/data)",
        );
    }
    dir
}

/// The folder `name` under `$SAGE_MODELS_DIR`, or a skip line for `what` and `None`.
pub fn model_dir_or_skip(name: &str, what: &str) -> Option<PathBuf> {
    let Some(root) = env_dir("SAGE_MODELS_DIR") else {
        skip(what, &format!("SAGE_MODELS_DIR unset (needs model {name}: a folder of model folders, as bash ../shared/tools/fetch-models.sh fills it)"));
        return None;
    };
    let dir = root.join(name);
    if dir.is_dir() {
        Some(dir)
    } else {
        skip(
            what,
            &format!(
                "{} missing (bash ../shared/tools/fetch-models.sh fills it)",
                dir.display()
            ),
        );
        None
    }
}

/// Both the data mirror and the model folder `model`, or a skip line and `None`.
pub fn data_and_model_or_skip(model: &str, what: &str) -> Option<(PathBuf, PathBuf)> {
    let data = data_dir_or_skip(what)?;
    let model = model_dir_or_skip(model, what)?;
    Some((data, model))
}

/// A Python with torch, transformers and sentence-transformers, for tests that build reference
/// models: `$SAGE_PYTHON`, else the virtual environment `.ci/run` installs
/// (`~/.cache/sage-rs/infinity-venv`); or a skip line for `what` and `None`.
pub fn reference_python_or_skip(what: &str) -> Option<PathBuf> {
    let found = env_dir("SAGE_PYTHON").or_else(|| {
        let venv = env_dir("HOME")?.join(".cache/sage-rs/infinity-venv/bin/python");
        venv.exists().then_some(venv)
    });
    if found.is_none() {
        skip(
            what,
            "no Python with sentence-transformers (set SAGE_PYTHON; .ci/run installs one)",
        );
    }
    found
}

/// Copies the folder `from` into `to` (created), for a test that changes a copy of a fixture.
///
/// # Panics
/// On any I/O error: a test's setup that cannot copy its fixture has nothing to test.
pub fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).expect("create the copy's folder");
    for entry in std::fs::read_dir(from).expect("list the fixture folder") {
        let entry = entry.expect("a fixture entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("its type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy a fixture file");
        }
    }
}
