//! `sage perturb`: determinism, provenance, parameter ranges, WordNet.

use super::*;

#[test]
fn perturb_is_deterministic_and_reports_provenance() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(
        &dir,
        "texts.jsonl",
        "{\"text\":\"First sentence here. Second one is short! Third?\",\"id\":\"d1\"}\n{\"text\":\"Ünïcödé 🙂 can't stop.\",\"id\":\"d2\"}\n",
    );
    for kind in [
        "random-capitalisation",
        "sentence-shuffle",
        "word-shuffle",
        "token-removal",
        "jumbling",
    ] {
        let a = sage(&["perturb", "--kind", kind, "--seed", "7", "--input", &input]);
        let b = sage(&["perturb", "--kind", kind, "--seed", "7", "--input", &input]);
        assert!(
            a.status.success(),
            "{kind}: {}",
            String::from_utf8_lossy(&a.stderr)
        );
        assert_eq!(a.stdout, b.stdout, "{kind} is not deterministic");
        let lines: Vec<Value> = String::from_utf8(a.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["id"], "d1", "input keys are carried over");
        assert_eq!(lines[1]["seed"], 7);
        assert_eq!(lines[0]["kind"], kind);
    }
    let toggled = ok_lines(&["perturb", "--kind", "negation-toggle", "--input", &input]);
    assert_eq!(
        toggled[0]["text"],
        "First sentence here. Second one is not short! Third?"
    );
    assert_eq!(toggled[1]["text"], "Ünïcödé 🙂 can stop.");
    let needle = ok_lines(&[
        "perturb",
        "--kind",
        "needle-insertion",
        "--param",
        "p=1",
        "--param",
        "pos=0",
        "--input",
        &input,
    ]);
    assert!(needle[0]["text"]
        .as_str()
        .unwrap()
        .starts_with("Lorem ipsum"));
    assert_eq!(needle[0]["needle_tokens"], needle[0]["document_tokens"]);
}

#[test]
fn perturb_errors_are_clear() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(&dir, "t.jsonl", "{\"text\":\"a b\"}\n{\"txt\":\"c\"}\n");
    fails_with(
        &["perturb", "--kind", "word-shuffle", "--input", &input],
        "t.jsonl:2: missing key \"text\"",
    );
    fails_with(
        &[
            "perturb", "--kind", "jumbling", "--param", "n", "--input", &input,
        ],
        "expected key=value",
    );
    fails_with(
        &[
            "perturb",
            "--kind",
            "token-removal",
            "--param",
            "size=2",
            "--input",
            &input,
        ],
        "parameter size = 2",
    );
    fails_with(
        &["perturb", "--kind", "melt", "--input", &input],
        "unknown perturbation \"melt\"",
    );
    fails_with(
        &[
            "perturb",
            "--kind",
            "synonym-replacement",
            "--wordnet",
            "/nonexistent/dict",
            "--input",
            &input,
        ],
        "/nonexistent/dict: no WordNet database",
    );
}

/// Parameters outside their documented range are refused before any text is read, naming the
/// parameter, the value and the range. Before: p=1e9 wrote a 6.5 GB line, p=1e20 panicked
/// ("capacity overflow"), every=0 silently became 1.
#[test]
fn perturbation_parameters_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(&dir, "t.jsonl", "{\"text\":\"a b c d e f\"}\n");
    for (kind, param, needle) in [
        (
            "needle-insertion",
            "p=1e9",
            "parameter p = 1000000000: expected a number in [0, 10]",
        ),
        (
            "needle-insertion",
            "p=1e20",
            "parameter p = 100000000000000000000",
        ),
        ("needle-insertion", "p=-0.5", "parameter p = -0.5"),
        ("needle-insertion", "pos=NaN", "parameter pos = NaN"),
        (
            "character-deletion",
            "every=0",
            "parameter every = 0: expected a whole number in [1, 1e9]",
        ),
        ("character-deletion", "every=2.5", "parameter every = 2.5"),
        (
            "jumbling",
            "n=1e12",
            "parameter n = 1000000000000: expected a whole number in [0, 1e6]",
        ),
        ("random-capitalisation", "p=inf", "parameter p = inf"),
    ] {
        fails_with(
            &[
                "perturb", "--kind", kind, "--param", param, "--input", &input,
            ],
            needle,
        );
    }
    // the largest documented needle still works
    let lines = ok_lines(&[
        "perturb",
        "--kind",
        "needle-insertion",
        "--param",
        "p=10",
        "--input",
        &input,
    ]);
    assert_eq!(
        lines[0]["needle_tokens"].as_u64().unwrap(),
        10 * lines[0]["document_tokens"].as_u64().unwrap()
    );
}

#[test]
fn perturb_with_real_wordnet() {
    let Some(data) = std::env::var_os("SAGE_DATA_DIR") else {
        sage_test_env::skip(
            module_path!(),
            "SAGE_DATA_DIR unset: WordNet perturbation through the CLI not run",
        );
        return;
    };
    let wordnet = Path::new(&data).join("wordnet/dict");
    let dir = tempfile::tempdir().unwrap();
    let input = write(&dir, "t.jsonl", "{\"text\":\"The movie was good.\"}\n");
    let out = ok_lines(&[
        "perturb",
        "--kind",
        "antonym-replacement",
        "--wordnet",
        wordnet.to_str().unwrap(),
        "--input",
        &input,
    ]);
    let text = out[0]["text"].as_str().unwrap();
    assert!(
        text == "The movie was bad." || text == "The movie was evil.",
        "{text}"
    );
    assert_eq!(out[0]["replacement"]["word"], "good");
}
