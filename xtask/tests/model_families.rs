//! Every local model family through the `sage` command: `sage embed`, `sage score --model` and a
//! SAGE task accept a folder of each (small random checkpoints built by
//! tests/python-reference/tiny_models.py; their vectors are checked against sentence-transformers in
//! sage-embed's golden tests).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common;
use common::{run_sage, workspace};

fn run(args: &[&str], cache: &Path) -> String {
    String::from_utf8(run_sage(args, cache).stdout).unwrap()
}

#[test]
fn sage_accepts_a_folder_of_each_family() {
    let what = "every model family through the sage command";
    let Some(tokenizer) = sage_test_env::model_dir_or_skip("all-MiniLM-L6-v2", what) else {
        return;
    };
    let Some(python) = sage_test_env::reference_python_or_skip(what) else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let models = scratch.path().join("models");
    let built = Command::new(python)
        .arg(workspace().join("tests/python-reference/tiny_models.py"))
        .arg(&models)
        .arg(&tokenizer)
        .env("HF_HUB_OFFLINE", "1")
        .env("TRANSFORMERS_OFFLINE", "1")
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let cache = scratch.path().join("cache");
    let pairs = workspace().join("data/fixtures/metric_pairs.jsonl");
    let texts = scratch.path().join("texts.jsonl");
    std::fs::write(&texts, "{\"text\": \"a first text\"}\n{\"text\": \"\"}\n").unwrap();
    let data = workspace().join("data/fixtures/mirror");
    // every family the script builds, so a new one is covered here once it is added there
    let golden: Value =
        serde_json::from_slice(&std::fs::read(models.join("golden.json")).unwrap()).unwrap();
    let families: Vec<&String> = golden["families"].as_object().unwrap().keys().collect();
    assert!(families.len() >= 10, "{families:?}");
    for family in families {
        let folder = models.join(family);
        let folder = folder.to_str().unwrap();
        let embedded = run(
            &[
                "embed",
                "--model",
                folder,
                "--input",
                texts.to_str().unwrap(),
            ],
            &cache,
        );
        assert_eq!(embedded.lines().count(), 2, "{family}");
        let scores = run(
            &[
                "score",
                "--model",
                folder,
                "--input",
                pairs.to_str().unwrap(),
            ],
            &cache,
        );
        assert!(
            scores
                .lines()
                .all(|l| serde_json::from_str::<Value>(l).unwrap()["score"].is_f64()),
            "{family}: {scores}"
        );
        let report: Value = serde_json::from_str(&run(
            &[
                "run",
                "sensitivity",
                "--similarity",
                folder,
                "--max-rows",
                "2",
                "--data-dir",
                data.to_str().unwrap(),
            ],
            &cache,
        ))
        .unwrap();
        assert!(
            report["score"].as_f64().is_some_and(f64::is_finite),
            "{family}: {report}"
        );
        // Matryoshka: a narrower identity of the same model
        let narrow = run(
            &[
                "embed",
                "--model",
                folder,
                "--dimensions",
                "4",
                "--input",
                texts.to_str().unwrap(),
            ],
            &cache,
        );
        let first: Value = serde_json::from_str(narrow.lines().next().unwrap()).unwrap();
        assert_eq!(first["embedding"].as_array().unwrap().len(), 4, "{family}");
    }
}
