//! What the workspace-level tests share: where the workspace, its target dir and the debug `sage`
//! binary are.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| workspace().join("target"), PathBuf::from)
}

/// The debug `sage` that `cargo test --workspace` builds for sage-cli's tests (built here when
/// absent), so no test starts a release build.
pub fn sage() -> PathBuf {
    let bin = target_dir().join("debug").join("sage");
    if !bin.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .current_dir(workspace())
            .args(["build", "--package", "sage-cli", "--bin", "sage"])
            .status()
            .unwrap();
        assert!(status.success(), "building sage failed");
    }
    bin
}

/// `sage ARGS` with the embedding cache at `cache` and no OpenAI key in the environment; fails
/// the test, with sage's message, when it fails.
pub fn run_sage(args: &[&str], cache: &Path) -> std::process::Output {
    let out = Command::new(sage())
        .args(args)
        .env("SAGE_CACHE_DIR", cache)
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "sage {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `cargo xtask bench-all --quick` of `config` (a file's path) through the debug `sage`, results
/// in `out`, the embedding cache at `cache`, on the fixtures.
pub fn bench_all_quick(
    config: &Path,
    out: &Path,
    cache: &Path,
    extra: &[&str],
) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
        .current_dir(workspace())
        .args(["bench-all", "--quick"])
        .args(extra)
        .arg("--sage")
        .arg(sage())
        .arg("--config")
        .arg(config)
        .arg("--out")
        .arg(out)
        .env("SAGE_CACHE_DIR", cache)
        .env_remove("SAGE_DATA_DIR")
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap()
}

/// The shipped bench.toml cut down to `model` alone on SAGE sensitivity (no metric, no EvalRank,
/// no PTEB): one job, or one job and ALIGN-SIM's.
pub fn sensitivity_only_config(model: &str) -> String {
    std::fs::read_to_string(workspace().join("bench.toml"))
        .unwrap()
        .replace("models = [\"auto\"]", &format!("models = [{model:?}]"))
        .replace("metrics = [\"levenshtein\", \"rouge\", \"jaccard\", \"bm25\"]", "metrics = []")
        .replace(
            "tasks = [\"human-pref\", \"robustness\", \"sensitivity\", \"clustering\", \"retrieval\"]",
            "tasks = [\"sensitivity\"]",
        )
        .replace("levels = [\"word\", \"sentence\"]", "levels = []")
        .replace("enabled = true", "enabled = false")
}
