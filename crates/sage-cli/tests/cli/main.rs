//! End-to-end tests of the `sage` binary: real files in, JSON out, clear errors.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

mod gpu;
mod measures;
mod models;
mod perturb;
mod suites;

pub(crate) fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/fixtures")
}

pub(crate) fn sage(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sage"))
        .args(args)
        .output()
        .expect("sage runs")
}

pub(crate) fn ok_json(args: &[&str]) -> Value {
    let out = sage(args);
    assert!(
        out.status.success(),
        "sage {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

pub(crate) fn fails_with(args: &[&str], needle: &str) {
    let out = sage(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "sage {args:?} should fail; stderr: {stderr}"
    );
    assert!(
        stderr.contains(needle),
        "stderr of sage {args:?} lacks {needle:?}: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

pub(crate) fn write(dir: &tempfile::TempDir, name: &str, content: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, content).unwrap();
    path.to_str().unwrap().to_owned()
}

pub(crate) fn ok_lines(args: &[&str]) -> Vec<Value> {
    let out = sage(args);
    assert!(
        out.status.success(),
        "sage {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub(crate) fn models_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("SAGE_MODELS_DIR")?).join("all-MiniLM-L6-v2");
    dir.is_dir().then_some(dir)
}
