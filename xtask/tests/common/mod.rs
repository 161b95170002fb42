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
