//! The guide's examples as a test. Every `sage ...` command in the README's and the guide's shell
//! blocks parses as `sage` takes it (an example never names a flag that is gone, nor misses one
//! that is required); and those that read only the files the checkout ships and need no model
//! run as written, from the checkout's root, and succeed.

#[path = "guide/read.rs"]
mod read;

use std::path::{Path, PathBuf};
use std::process::Command;

use read::{examples, pages, Example};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn all_examples() -> Vec<Example> {
    let mut all = Vec::new();
    for page in pages(&repo()) {
        let text = std::fs::read_to_string(&page).unwrap();
        let shown = page.strip_prefix(repo()).unwrap_or(&page).to_owned();
        all.extend(examples(&shown, &text));
    }
    all
}

#[test]
fn every_guide_example_parses() {
    let all = all_examples();
    let mut failures = Vec::new();
    for example in &all {
        let words = std::iter::once("sage".to_owned()).chain(example.args.iter().cloned());
        if let Err(e) = sage_cli::command().try_get_matches_from(words) {
            use clap::error::ErrorKind::{DisplayHelp, DisplayVersion};
            if !matches!(e.kind(), DisplayHelp | DisplayVersion) {
                let why = e.to_string();
                failures.push(format!(
                    "{}: sage {}: {}",
                    example.at,
                    example.args.join(" "),
                    why.lines().next().unwrap_or("")
                ));
            }
        }
    }
    assert!(all.len() > 30, "only {} examples found", all.len());
    assert!(
        failures.is_empty(),
        "{} of {} examples do not parse:\n{}",
        failures.len(),
        all.len(),
        failures.join("\n")
    );
}

/// An example that needs nothing a reader brings: every path it names is in the checkout, and
/// what it evaluates (if anything) is a classical metric.
fn self_contained(example: &Example) -> bool {
    let args = &example.args;
    let classical = ["levenshtein", "rouge", "jaccard", "bm25"];
    let mut needs_model = false;
    let mut paths_shipped = true;
    let mut named_data = false;
    for (i, word) in args.iter().enumerate() {
        let value = args.get(i + 1).map(String::as_str).unwrap_or("");
        match word.as_str() {
            "--model" | "--compare" | "--paraphraser" | "--judge" => needs_model = true,
            "--similarity" => needs_model |= !classical.contains(&value),
            "--dataset" | "--datasets" | "--input" => {
                named_data = true;
                let path = value.split('#').next().unwrap_or(value);
                paths_shipped &= path.starts_with("data/") && repo().join(path).exists();
            }
            "--data-dir" | "--out" | "--output" | "--config" | "--mteb-output" | "--cache" => {
                paths_shipped = false
            }
            w if w.starts_with('$') => paths_shipped = false,
            _ => {}
        }
    }
    let checks_data = matches!(args.get(..2), Some([a, b]) if a == "data" && b == "check");
    if checks_data {
        // `sage data check PATH...`: its paths are positional
        let mut words = args[2..].iter();
        while let Some(word) = words.next() {
            if word.starts_with("--") {
                words.next();
            } else {
                named_data = true;
                let path = word.split('#').next().unwrap_or(word);
                paths_shipped &= path.starts_with("data/") && repo().join(path).exists();
            }
        }
    }
    let reads_own_data = matches!(
        args.first().map(String::as_str),
        Some("run" | "score" | "embed" | "perturb" | "measure")
    ) || checks_data;
    !needs_model
        && paths_shipped
        && (named_data || !reads_own_data)
        && args.first().is_some_and(|a| a == "run" || a == "data")
        && !matches!(args.get(..2), Some([a, b]) if a == "data" && b == "fetch")
}

#[test]
fn the_self_contained_examples_run_as_written() {
    let runnable: Vec<Example> = all_examples().into_iter().filter(self_contained).collect();
    assert!(
        runnable.len() >= 4,
        "only {} self-contained examples: {runnable:?}",
        runnable.len()
    );
    let mut failures = Vec::new();
    for example in &runnable {
        let output = Command::new(env!("CARGO_BIN_EXE_sage"))
            .args(&example.args)
            .current_dir(repo())
            .env("HF_HUB_OFFLINE", "1")
            .env_remove("SAGE_DATA_DIR")
            .output()
            .unwrap();
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            failures.push(format!(
                "{}: sage {}: {}",
                example.at,
                example.args.join(" "),
                stderr.lines().last().unwrap_or("")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} examples failed:\n{}",
        failures.len(),
        runnable.len(),
        failures.join("\n")
    );
}
