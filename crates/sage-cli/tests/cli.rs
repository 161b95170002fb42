//! End-to-end tests of the `sage` binary: real files in, JSON out, clear errors.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/fixtures")
}

fn sage(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sage"))
        .args(args)
        .output()
        .expect("sage runs")
}

fn ok_json(args: &[&str]) -> Value {
    let out = sage(args);
    assert!(
        out.status.success(),
        "sage {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

fn fails_with(args: &[&str], needle: &str) {
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

fn write(dir: &tempfile::TempDir, name: &str, content: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, content).unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn score_writes_one_line_per_pair_matching_the_reference() {
    let input = fixtures().join("metric_pairs.jsonl");
    let golden: Vec<Value> = std::fs::read_to_string(fixtures().join("metric_pairs.golden.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let dir = tempfile::tempdir().unwrap();
    for (metric, raw, key) in [
        ("rouge", false, "rouge"),
        ("bm25", false, "bm25"),
        ("bm25", true, "bm25_raw"),
        ("levenshtein", false, "levenshtein"),
    ] {
        let out_path = dir.path().join(format!("{key}.jsonl"));
        let mut args = vec![
            "score",
            "--metric",
            metric,
            "--input",
            input.to_str().unwrap(),
            "--output",
            out_path.to_str().unwrap(),
        ];
        if raw {
            args.push("--raw");
        }
        let out = sage(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let lines: Vec<Value> = std::fs::read_to_string(&out_path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), golden.len());
        for (i, (got, want)) in lines.iter().zip(&golden).enumerate() {
            let (got, want) = (got["score"].as_f64().unwrap(), want[key].as_f64().unwrap());
            // raw BM25 goes through f32: compare relatively
            assert!(
                (got - want).abs() <= 1e-6 * want.abs().max(1.0),
                "{key} line {}: {got} vs {want}",
                i + 1
            );
        }
    }
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .contains(".tmp")
        })
        .collect();
    assert!(leftovers.is_empty());
}

#[test]
fn bad_input_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let missing = write(
        &dir,
        "missing.jsonl",
        "{\"text1\":\"a\",\"text2\":\"b\"}\n{\"text1\":\"a\"}\n",
    );
    fails_with(
        &["score", "--metric", "jaccard", "--input", &missing],
        "missing.jsonl:2: missing key \"text2\"",
    );
    // output line i answers input line i: a blank line is not skipped silently
    let blank = write(
        &dir,
        "blank.jsonl",
        "{\"text1\":\"a\",\"text2\":\"b\"}\n  \n{\"text1\":\"a\",\"text2\":\"c\"}\n",
    );
    fails_with(
        &["score", "--metric", "jaccard", "--input", &blank],
        "blank.jsonl:2: blank line",
    );
    // which copy of a repeated key wins differs between parsers: refuse it, at any depth
    let twice = write(
        &dir,
        "twice.jsonl",
        "{\"text1\":\"a\",\"text2\":\"b\",\"meta\":{\"k\":1,\"k\":2}}\n",
    );
    fails_with(
        &["score", "--metric", "jaccard", "--input", &twice],
        "twice.jsonl:1: not valid JSON: key \"k\" appears twice",
    );
    let top_twice = write(
        &dir,
        "top.jsonl",
        "{\"text1\":\"a\",\"text2\":\"b\",\"text1\":\"z\"}\n",
    );
    fails_with(
        &["score", "--metric", "jaccard", "--input", &top_twice],
        "top.jsonl:1: not valid JSON: key \"text1\" appears twice",
    );
    let garbage = write(
        &dir,
        "garbage.jsonl",
        "{\"text1\":\"a\",\"text2\":\"b\"}\nnot json\n",
    );
    fails_with(
        &["score", "--metric", "rouge", "--input", &garbage],
        "garbage.jsonl:2: not valid JSON",
    );
    let wrong_type = write(&dir, "type.jsonl", "{\"text1\":1,\"text2\":\"b\"}\n");
    fails_with(
        &["score", "--metric", "rouge", "--input", &wrong_type],
        "type.jsonl:1: \"text1\" must be a string",
    );
    let empty = write(&dir, "empty.jsonl", "\n");
    fails_with(
        &["score", "--metric", "levenshtein", "--input", &empty],
        "empty.jsonl: no input lines",
    );
    fails_with(
        &[
            "score",
            "--metric",
            "bm25",
            "--input",
            "/nonexistent/pairs.jsonl",
        ],
        "/nonexistent/pairs.jsonl: cannot open",
    );
    let ok = write(&dir, "ok.jsonl", "{\"text1\":\"a\",\"text2\":\"b\"}\n");
    fails_with(
        &["score", "--metric", "rouge", "--raw", "--input", &ok],
        "raw scores only apply to bm25 (rouge has no batch normalisation)",
    );
    let nan = write(
        &dir,
        "xy.jsonl",
        "{\"x\":1,\"y\":2}\n{\"x\":\"2\",\"y\":1}\n",
    );
    fails_with(
        &["measure", "pearson", "--input", &nan],
        "xy.jsonl:2: \"x\" must be a finite number",
    );
    let constant = write(
        &dir,
        "const.jsonl",
        "{\"x\":1,\"y\":2}\n{\"x\":1,\"y\":1}\n",
    );
    fails_with(
        &["measure", "spearman", "--input", &constant],
        "spearman is undefined",
    );
    let bad_run = write(&dir, "bad.trec", "q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2\n");
    let qrels = fixtures().join("qrels.tsv");
    fails_with(
        &[
            "measure",
            "ndcg",
            "--k",
            "10",
            "--run",
            &bad_run,
            "--qrels",
            qrels.to_str().unwrap(),
        ],
        "bad.trec:2: expected 6 columns",
    );
}

/// Values at the ends of f64's range: r is scale-free, so these give the r of the same data at
/// ordinary scale (scipy: 0.9376778201773178 for x, y of golden.py). Before, 1e155 printed 0.0,
/// near f64::MAX null, and subnormal data was called constant.
#[test]
fn pearson_is_right_at_the_ends_of_the_range() {
    let dir = tempfile::tempdir().unwrap();
    let x = [0.1, 0.4, 0.35, 0.8, 0.8, 0.2, 0.95, 0.5, 0.5, 0.5];
    let y = [1.0, 2.0, 2.5, 4.0, 3.5, 1.5, 5.0, 2.0, 3.0, 2.0];
    for (name, scale, tolerance) in [
        ("big", 1e155, 1e-12),
        ("max", f64::MAX / 5.0, 1e-12),
        ("subnormal", 1e-315, 1e-3),
    ] {
        let lines: String = x
            .iter()
            .zip(&y)
            .map(|(a, b)| format!("{{\"x\":{:e},\"y\":{:e}}}\n", a * scale, b * scale))
            .collect();
        let input = write(&dir, &format!("{name}.jsonl"), &lines);
        let v = ok_json(&["measure", "pearson", "--input", &input]);
        let r = v["value"].as_f64().unwrap_or_else(|| panic!("{name}: {v}"));
        assert!((r - 0.937_677_820_177_318).abs() < tolerance, "{name}: {r}");
    }
}

#[test]
fn correlation_measures_match_scipy() {
    // Golden: tests/python-reference/golden.py, correlation.rs section (scipy 1.17.1)
    let x = [0.1, 0.4, 0.35, 0.8, 0.8, 0.2, 0.95, 0.5, 0.5, 0.5];
    let y = [1.0, 2.0, 2.5, 4.0, 3.5, 1.5, 5.0, 2.0, 3.0, 2.0];
    let dir = tempfile::tempdir().unwrap();
    let lines: String = x
        .iter()
        .zip(y)
        .map(|(a, b)| format!("{{\"x\":{a},\"y\":{b},\"id\":\"extra keys are ignored\"}}\n"))
        .collect();
    let input = write(&dir, "xy.jsonl", &lines);
    let p = ok_json(&["measure", "pearson", "--input", &input]);
    assert!((p["value"].as_f64().unwrap() - 0.937_677_820_177_318).abs() < 1e-12);
    let s = ok_json(&["measure", "spearman", "--input", &input]);
    assert!((s["value"].as_f64().unwrap() - 0.884_739_495_645_627_5).abs() < 1e-12);
    assert_eq!(s["n"], 10);
    let w = ok_json(&["measure", "wilcoxon", "--input", &input]);
    assert!(w["p_value"].as_f64().unwrap() > 0.0);
    let hl = ok_json(&[
        "measure",
        "hodges-lehmann",
        "--input",
        &input,
        "--resamples",
        "200",
        "--seed",
        "9",
    ]);
    let again = ok_json(&[
        "measure",
        "hodges-lehmann",
        "--input",
        &input,
        "--resamples",
        "200",
        "--seed",
        "9",
    ]);
    assert_eq!(hl, again);
    assert!(hl["ci_low"].as_f64().unwrap() <= hl["estimate"].as_f64().unwrap());
}

#[test]
fn v_measure_and_classification() {
    // Golden: tests/python-reference/golden.py, clustering.rs section (scikit-learn 1.9.1)
    let t = ["a", "a", "a", "b", "b", "b", "c", "c", "c", "c"];
    let p = [0, 0, 1, 1, 1, 1, 2, 2, 0, 3];
    let dir = tempfile::tempdir().unwrap();
    let lines: String = t
        .iter()
        .zip(p)
        .map(|(a, b)| format!("{{\"label_true\":\"{a}\",\"label_pred\":{b}}}\n"))
        .collect();
    let input = write(&dir, "labels.jsonl", &lines);
    let v = ok_json(&["measure", "v-measure", "--input", &input]);
    assert!((v["v_measure"].as_f64().unwrap() - 0.568_241_032_922_968).abs() < 1e-12);
    let bin = write(
        &dir,
        "bin.jsonl",
        "{\"label_true\":1,\"label_pred\":true}\n{\"label_true\":0,\"label_pred\":true}\n",
    );
    let c = ok_json(&["measure", "classification", "--input", &bin]);
    assert_eq!(c["precision"], 0.5);
    assert_eq!(c["recall"], 1.0);
}

#[test]
fn ranking_measures_match_pytrec_eval() {
    // Golden: tests/python-reference/golden.py, "fixture" lines (pytrec_eval-terrier): 4 evaluated
    // queries (q5 judged but not retrieved, q9 retrieved but not judged), tied scores.
    let run = fixtures().join("run.trec");
    let qrels = fixtures().join("qrels.tsv");
    let (run, qrels) = (run.to_str().unwrap(), qrels.to_str().unwrap());
    for (measure, k, want) in [
        ("ndcg", Some("10"), 0.218_268_782_900_304_7),
        ("map", None, 0.186_060_728_118_998_76),
        ("mrr", None, 0.369_047_619_047_619),
    ] {
        let mut args = vec![
            "measure",
            measure,
            "--run",
            run,
            "--qrels",
            qrels,
            "--per-query",
        ];
        if let Some(k) = k {
            args.extend(["--k", k]);
        }
        let v = ok_json(&args);
        assert!(
            (v["value"].as_f64().unwrap() - want).abs() < 1e-12,
            "{measure}: {v}"
        );
        assert_eq!(v["queries"], 4);
        assert_eq!(v["run_queries_without_judgements"], 1);
        assert_eq!(v["judged_queries_not_in_run"], 1);
        assert_eq!(v["per_query"].as_object().unwrap().len(), 4);
    }
    fails_with(
        &["measure", "ndcg", "--run", run, "--qrels", qrels],
        "ndcg needs --k",
    );
}

#[test]
fn score_reads_standard_input() {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_sage"))
        .args(["score", "--metric", "levenshtein", "--input", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"{\"text1\":\"kitten\",\"text2\":\"sitting\"}\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    // Levenshtein.ratio("kitten", "sitting") = 0.6153846153846154 (python-Levenshtein 0.27.5)
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!((v["score"].as_f64().unwrap() - 0.615_384_615_384_615_4).abs() < 1e-6);
}

/// Files saved by editors that write a UTF-8 byte-order mark, and with Windows line ends, read
/// as the same records.
#[test]
fn a_byte_order_mark_and_crlf_are_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let marked = write(
        &dir,
        "bom.jsonl",
        "\u{FEFF}{\"text1\":\"kitten\",\"text2\":\"sitting\"}\r\n{\"text1\":\"a\",\"text2\":\"a\"}\r\n",
    );
    let out = sage(&["score", "--metric", "levenshtein", "--input", &marked]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let scores: Vec<f64> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["score"]
                .as_f64()
                .unwrap()
        })
        .collect();
    assert_eq!(scores.len(), 2);
    assert!((scores[0] - 0.615_384_615_384_615_4).abs() < 1e-6);
    assert_eq!(scores[1], 1.0);
}

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

fn ok_lines(args: &[&str]) -> Vec<Value> {
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

/// Levenshtein work is bounded: its size is said before a long run starts, and past the limit
/// the run is refused unless --allow-long (two 5 MB texts ran for minutes, unannounced).
#[test]
fn long_levenshtein_work_is_announced_or_refused() {
    let dir = tempfile::tempdir().unwrap();
    let pair = |n: usize| {
        let a: String = "abcdefghij".repeat(n / 10);
        let b: String = "bcdefghija".repeat(n / 10);
        format!("{{\"text1\":\"{a}\",\"text2\":\"{b}\"}}\n")
    };
    let huge = write(
        &dir,
        "huge.jsonl",
        &format!("{{\"text1\":\"a\",\"text2\":\"b\"}}\n{}", pair(2_000_000)),
    );
    fails_with(
        &["score", "--metric", "levenshtein", "--input", &huge],
        "huge.jsonl: levenshtein on 2 pairs needs ~6.3e10 bit-parallel steps (the largest pair, line 2",
    );
    fails_with(
        &["score", "--metric", "levenshtein", "--input", &huge],
        "pass --allow-long to run it",
    );
    let long = write(&dir, "long.jsonl", &pair(260_000));
    let out = sage(&["score", "--metric", "levenshtein", "--input", &long]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("levenshtein on 1 pairs needs ~1.1e9"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let score: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(score["score"].as_f64().unwrap() > 0.8);
}

/// `sage cache verify` / `repair` on what a user may have: a missing file, a file redb cannot
/// read (an error and exit 1, never a panic; repair moves it aside), a sound cache.
#[test]
fn cache_verify_and_repair() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none.redb");
    fails_with(
        &["cache", "verify", "--cache", missing.to_str().unwrap()],
        "none.redb: no such cache file",
    );
    let garbage = write(&dir, "garbage.redb", &"not a redb file at all ".repeat(400));
    fails_with(&["cache", "verify", "--cache", &garbage], "garbage.redb");
    let repaired = ok_json(&["cache", "repair", "--cache", &garbage]);
    let aside = repaired["moved_to"].as_str().expect("moved aside");
    assert!(Path::new(aside).exists() && !Path::new(&garbage).exists());
    let Some(model) = models_dir() else {
        sage_core::test_support::skip(
            "cache_verify_and_repair",
            "SAGE_MODELS_DIR lacks all-MiniLM-L6-v2: the sound-cache part not run",
        );
        return;
    };
    let cache = dir.path().join("sound.redb");
    let texts = write(&dir, "t.jsonl", "{\"text\":\"one\"}\n{\"text\":\"two\"}\n");
    let out = sage(&[
        "embed",
        "--model",
        model.to_str().unwrap(),
        "--cache",
        cache.to_str().unwrap(),
        "--input",
        &texts,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sound = ok_json(&["cache", "verify", "--cache", cache.to_str().unwrap()]);
    assert_eq!(sound["entries"], 2);
    assert_eq!(sound["corrupt"], 0);

    // `sage cache merge` folds it into another cache, once
    let merged = dir.path().join("merged.redb");
    let merge = |source: &str| {
        ok_json(&[
            "cache",
            "merge",
            "--cache",
            merged.to_str().unwrap(),
            source,
        ])
    };
    let first = merge(cache.to_str().unwrap());
    assert_eq!(
        (first["copied"].as_u64(), first["sources"].as_u64()),
        (Some(2), Some(1))
    );
    let again = merge(cache.to_str().unwrap());
    assert_eq!(
        (again["copied"].as_u64(), again["already_present"].as_u64()),
        (Some(0), Some(2))
    );
    fails_with(
        &["cache", "merge", "--cache", merged.to_str().unwrap(), aside],
        aside,
    );
    let merged_check = ok_json(&["cache", "verify", "--cache", merged.to_str().unwrap()]);
    assert_eq!(merged_check["entries"], 2);
}

/// Task parameters outside their documented range are refused before any data is read, the
/// flag, the value and the range named (a 1,000,000-text clustering subset asked for ~4 TB).
#[test]
fn task_parameters_are_bounded() {
    for (args, needle) in [
        (
            &[
                "run",
                "clustering",
                "--similarity",
                "jaccard",
                "--max-texts",
                "1000000",
            ][..],
            "invalid value '1000000' for '--max-texts <MAX_TEXTS>': 1000000 is not in 2..=50000",
        ),
        (
            &[
                "run",
                "clustering",
                "--similarity",
                "jaccard",
                "--subsets",
                "0",
            ][..],
            "'--subsets <SUBSETS>': 0 is not in 1..=1000",
        ),
        (
            &[
                "run",
                "retrieval",
                "--similarity",
                "bm25",
                "--pair-budget",
                "0",
            ][..],
            "'--pair-budget <PAIR_BUDGET>': 0 is not in 1000..=100000000",
        ),
        (
            &[
                "run",
                "sensitivity",
                "--similarity",
                "rouge",
                "--max-rows",
                "0",
            ][..],
            "'--max-rows <MAX_ROWS>': 0 is not in 1..=10000000",
        ),
        (
            &[
                "measure",
                "hodges-lehmann",
                "--input",
                "xy.jsonl",
                "--resamples",
                "1000000000000",
            ][..],
            "'--resamples <RESAMPLES>': 1000000000000 is not in 1..=1000000",
        ),
    ] {
        let out = sage(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
}

#[test]
fn perturb_with_real_wordnet() {
    let Some(data) = std::env::var_os("SAGE_DATA_DIR") else {
        sage_core::test_support::skip(
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

fn models_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("SAGE_MODELS_DIR")?).join("all-MiniLM-L6-v2");
    dir.is_dir().then_some(dir)
}

#[test]
fn embed_writes_npy_and_jsonl_and_reuses_the_cache() {
    let Some(model) = models_dir() else {
        sage_core::test_support::skip(
            module_path!(),
            "SAGE_MODELS_DIR/all-MiniLM-L6-v2 missing: sage embed not run",
        );
        return;
    };
    let model = model.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let input = write(&dir, "t.jsonl", "{\"text\":\"A man is playing a guitar.\"}\n{\"text\":\"A man plays the guitar.\"}\n{\"text\":\"Stocks fell.\"}\n");
    let cache = dir.path().join("cache.redb");
    let npy = dir.path().join("out.npy");
    let first = sage(&[
        "embed",
        "--model",
        model,
        "--input",
        &input,
        "--output",
        npy.to_str().unwrap(),
        "--cache",
        cache.to_str().unwrap(),
    ]);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert!(String::from_utf8_lossy(&first.stderr).contains("0 hits, 3 embedded"));
    let bytes = std::fs::read(&npy).unwrap();
    assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
    let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let header = std::str::from_utf8(&bytes[10..10 + header_len]).unwrap();
    assert!(
        header.contains("'shape': (3, 384)") && (10 + header_len).is_multiple_of(64),
        "{header}"
    );
    assert_eq!(bytes.len(), 10 + header_len + 3 * 384 * 4);

    let second = sage(&[
        "embed",
        "--model",
        model,
        "--input",
        &input,
        "--cache",
        cache.to_str().unwrap(),
    ]);
    assert!(String::from_utf8_lossy(&second.stderr).contains("3 hits, 0 embedded"));
    let lines: Vec<Value> = String::from_utf8(second.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let first_row: Vec<f32> = bytes[10 + header_len..10 + header_len + 384 * 4]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let cached_row: Vec<f32> = lines[0]["embedding"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect();
    assert_eq!(first_row, cached_row, "the cache returns the same vectors");

    let pairs = write(&dir, "p.jsonl", "{\"text1\":\"A man is playing a guitar.\",\"text2\":\"A man plays the guitar.\"}\n{\"text1\":\"A man is playing a guitar.\",\"text2\":\"Stocks fell.\"}\n");
    let scores = ok_lines(&["score", "--model", model, "--no-cache", "--input", &pairs]);
    assert!(
        scores[0]["score"].as_f64().unwrap() > 0.9 && scores[1]["score"].as_f64().unwrap() < 0.3,
        "{scores:?}"
    );
    fails_with(
        &[
            "embed",
            "--model",
            model,
            "--input",
            &input,
            "--output",
            "x.csv",
            "--no-cache",
        ],
        "--output must end in .npy or .jsonl",
    );
}

#[test]
fn missing_models_say_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(&dir, "t.jsonl", "{\"text\":\"a\"}\n");
    let out = Command::new(env!("CARGO_BIN_EXE_sage"))
        .args([
            "embed",
            "--model",
            "acme/not-a-model",
            "--no-cache",
            "--input",
            &input,
        ])
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_HOME", dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr.contains("HF_HUB_OFFLINE")
            && stderr.contains("huggingface-cli download acme/not-a-model"),
        "{stderr}"
    );
}

#[test]
fn data_list_and_check_on_the_fixture_mirror() {
    let mirror = fixtures().join("mirror");
    let mirror = mirror.to_str().unwrap();
    let out = sage(&["data", "list", "--json", "--data-dir", mirror]);
    assert!(out.status.success());
    let entries: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(entries.len() > 80);
    let stsb = entries.iter().find(|e| e["name"] == "stsb").unwrap();
    assert_eq!(
        stsb["present"], false,
        "the fixture mirror has stsb's test split only"
    );
    let checked = ok_lines(&[
        "data",
        "check",
        "scifact",
        "en-rg-65",
        "--data-dir",
        mirror,
        "--max-rows",
        "1",
        "--seed",
        "3",
    ]);
    assert_eq!(checked[0]["judgements"], 2);
    assert_eq!(
        (
            checked[1]["total_rows"].as_u64(),
            checked[1]["used_rows"].as_u64()
        ),
        (Some(6), Some(1))
    );
    let stsb = ok_lines(&["data", "check", "stsb", "--data-dir", mirror]);
    assert_eq!(
        (stsb.len(), stsb[0]["split"].as_str()),
        (1, Some("test")),
        "only the local split is checked"
    );
    fails_with(
        &["data", "check", "sickr", "--data-dir", mirror],
        "dataset sickr is not in the local mirror",
    );
    fails_with(
        &["data", "check", "nope", "--data-dir", mirror],
        "unknown dataset \"nope\"",
    );
}

#[test]
fn run_align_sim_with_a_metric() {
    let Some(data) = std::env::var_os("SAGE_DATA_DIR") else {
        sage_core::test_support::skip(
            module_path!(),
            "SAGE_DATA_DIR unset: sage run align-sim not run",
        );
        return;
    };
    let out = ok_json(&[
        "run",
        "align-sim",
        "--similarity",
        "rouge",
        "--max-rows",
        "40",
        "--data-dir",
        Path::new(&data).to_str().unwrap(),
    ]);
    assert_eq!(out["similarity"], "rouge");
    assert_eq!(out["datasets"].as_array().unwrap().len(), 2);
    assert_eq!(out["datasets"][0]["jumbling"].as_array().unwrap().len(), 3);
    assert_eq!(out["negation"]["rows"]["used_rows"], 40);
    fails_with(
        &[
            "run",
            "align-sim",
            "--similarity",
            "rouge",
            "--dataset",
            "mrpc",
            "--data-dir",
            Path::new(&data).to_str().unwrap(),
        ],
        "dataset mrpc: name a split, as mrpc/SPLIT (splits: train, test)",
    );
}

#[test]
fn pteb_names_what_is_missing() {
    let mirror = fixtures().join("mirror");
    let mirror = mirror.to_str().unwrap();
    // no such paraphraser: the path is named
    fails_with(
        &[
            "run",
            "pteb",
            "--model",
            "no-such-encoder-folder",
            "--paraphraser",
            "/no/such/model.gguf",
            "--data-dir",
            mirror,
            "--no-paraphrase-cache",
            "--no-cache",
        ],
        "/no/such/model.gguf",
    );
    // a server needs the model it should run
    fails_with(
        &[
            "run",
            "pteb",
            "--model",
            "x",
            "--paraphraser",
            "http://127.0.0.1:9/v1",
            "--data-dir",
            mirror,
            "--no-paraphrase-cache",
        ],
        "--llm-model",
    );
    // a file that is not GGUF: the file is named
    let dir = tempfile::tempdir().unwrap();
    let gguf = dir.path().join("m.gguf");
    std::fs::write(&gguf, b"not a gguf").unwrap();
    fails_with(
        &[
            "run",
            "pteb",
            "--model",
            "x",
            "--paraphraser",
            gguf.to_str().unwrap(),
            "--data-dir",
            mirror,
            "--no-paraphrase-cache",
        ],
        "m.gguf",
    );
}

/// `sage pteb qualify` on the fixture STS-B with the real SmolLM2 as paraphraser and judge and
/// MiniLM as the reference encoder: the selection tables on stdout, the figures as JSON; a
/// missing reference encoder is named.
#[test]
fn pteb_qualify_prints_the_selection_table() {
    let what = "pteb_qualify_prints_the_selection_table";
    let Some(llm) = sage_core::test_support::model_dir_or_skip("SmolLM2-135M-Instruct-GGUF", what)
    else {
        return;
    };
    let Some(minilm) = sage_core::test_support::model_dir_or_skip("all-MiniLM-L6-v2", what) else {
        return;
    };
    let mirror = fixtures().join("mirror");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("qualify.json");
    let llm = llm.to_str().unwrap();
    let mut args = vec![
        "pteb",
        "qualify",
        "--paraphraser",
        llm,
        "--judge",
        llm,
        "--dataset",
        "stsb/test",
        "--max-rows",
        "3",
        "--data-dir",
        mirror.to_str().unwrap(),
        "--no-paraphrase-cache",
        "--quality-encoder",
        minilm.to_str().unwrap(),
    ];
    let out = sage(&[args.as_slice(), &["--output", json.to_str().unwrap()]].concat());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for header in [
        "| judge | STS Spearman | unparsable | s/pair | qualified |",
        "| paraphraser | judge similarity | edit distance | s/text | reference cosine |",
        "| gguf:SmolLM2-135M-Instruct.Q4_1.gguf | stsb/test | 6 |",
    ] {
        assert!(stdout.contains(header), "{header:?} missing from\n{stdout}");
    }
    let figures: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let candidate = &figures["paraphrasers"][0];
    assert_eq!(candidate["datasets"][0]["texts"], 6);
    let cosine = candidate["figures"]["reference_cosine"].as_f64().unwrap();
    assert!((-1.0..=1.0).contains(&cosine), "{candidate}");
    assert_eq!(figures["judges"][0]["pairs"], 3);
    // the yardstick must be there
    let last = args.len() - 1;
    args[last] = "/no/such/encoder";
    fails_with(&args, "/no/such/encoder");
}

/// The report marks a dataset whose paraphrases failed PTEB's quality gate, says why and what to
/// use instead, and says the pooled statistics are over the qualified datasets.
#[test]
fn the_report_marks_datasets_whose_paraphraser_is_not_qualified() {
    let dir = tempfile::tempdir().unwrap();
    let dataset = |name: &str, original: f64, mean: f64, cosine: f64, reasons: &[&str]| {
        serde_json::json!({
            "dataset": name, "split": "test", "task": "sts", "metric": "cosine_spearman",
            "rows": {
                "dataset": name, "split": "test", "total_rows": 10, "used_rows": 10,
                "max_rows": null, "seed": 1337, "empty_text_rows": 0, "checksum": "c"
            },
            "original": original, "paraphrased": {"mean": mean, "std": 0.01, "n": 2, "ddof": 1},
            "delta": mean - original, "fallbacks": 0, "runs": [], "examples": [],
            "quality": {
                "reference_encoder": "all-MiniLM-L6-v2", "reference_cosine": cosine,
                "share_below": if reasons.is_empty() { 0.05 } else { 0.4 },
                "edit_distance": 0.5, "fallback_share": 0.0, "judge": null,
                "verdict": {"qualified": reasons.is_empty(), "reasons": reasons, "notes": []}
            }
        })
    };
    let envelope = serde_json::json!({
        "schema": "sage-rs/result/1",
        "harness_version": "0.1.0",
        "similarity": {"name": "all-MiniLM-L6-v2", "kind": "model", "spec": "all-MiniLM-L6-v2"},
        "suite": "pteb", "task": "mteb", "seed": 1337, "quick": true, "score": null,
        "datasets": [], "notes": [],
        "parameters": {"data_dir": "data", "sage_args": ["run", "pteb"]},
        "run": {
            "git_revision": null, "timestamp": "2026-11-24T19:00:00Z", "wall_seconds": 1.0,
            "host": {"arch": "x86_64", "cores": 2, "cpu": null, "gpus": [], "os": "linux"}
        },
        // a whole PTEB report (the report reads it into pteb's type), the settings at their
        // defaults
        "report": {
            "suite": "pteb",
            "encoder": {
                "model_id": "all-MiniLM-L6-v2", "revision": null, "pooling": "mean",
                "normalize": true, "max_length": 256
            },
            "paraphraser": pteb::ParaphraserIdentity {
                backend: "gguf:SmolLM2-135M-Instruct".into(),
                settings: pteb::ParaphraseSettings::default(),
                instruction: "Paraphrase.".into(),
            },
            "options": pteb::Options::default(),
            "seeds": [1337, 1338],
            "datasets": [
                dataset("stsb", 0.85, 0.80, 0.86, &[]),
                dataset("biosses", 0.80, 0.51, 0.70, &["reference cosine 0.700 < 0.78"]),
            ],
            "pooled": {
                "n": 2, "includes_unqualified": false, "mean_delta": -0.05,
                "hodges_lehmann": {
                    "estimate": -0.05, "ci_low": -0.06, "ci_high": -0.04, "confidence": 0.95,
                    "resamples": 1000, "seed": 1337, "n": 2
                },
                "wilcoxon": null
            },
            "unqualified": ["biosses/test"],
            "fallbacks": 0,
            "timings": sage_core::Timings::default()
        }
    });
    let suite = dir.path().join("all-MiniLM-L6-v2/pteb");
    std::fs::create_dir_all(&suite).unwrap();
    std::fs::write(suite.join("mteb.json"), envelope.to_string()).unwrap();
    let out = sage(&["report", dir.path().to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    let row = |name: &str| {
        md.lines()
            .find(|l| l.starts_with(&format!("| all-MiniLM-L6-v2 | {name} |")))
            .unwrap_or_else(|| panic!("no {name} row in\n{md}"))
            .to_owned()
    };
    let biosses = row("biosses");
    assert!(biosses.contains("0.510 ± 0.010 †"), "{biosses}");
    assert!(
        biosses.contains("paraphraser not qualified: reference cosine 0.700 < 0.78"),
        "{biosses}"
    );
    assert!(biosses.contains("0.700 (40% low)"), "{biosses}");
    let stsb = row("stsb");
    assert!(
        stsb.contains("| qualified |") && !stsb.contains('†'),
        "{stsb}"
    );
    assert!(row("pooled").contains("qualified datasets"), "{md}");
    assert!(md.contains("† paraphraser not qualified"), "{md}");
    assert!(md.contains("sage pteb qualify"), "{md}");
    let csv = std::fs::read_to_string(dir.path().join("summary.csv")).unwrap();
    assert!(
        csv.contains("all-MiniLM-L6-v2,pteb,mteb,biosses,reference cosine,0.7"),
        "{csv}"
    );
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(html.contains("paraphraser not qualified"));

    // with MTEB's published results beside: the model's STSBenchmark score goes next to its
    // original stsb score; BIOSSES has none here
    let mteb = tempfile::tempdir().unwrap();
    let published = mteb
        .path()
        .join("results/sentence-transformers__all-MiniLM-L6-v2/8b3219a9");
    std::fs::create_dir_all(&published).unwrap();
    std::fs::write(
        published.join("STSBenchmark.json"),
        r#"{"task_name": "STSBenchmark", "scores": {"test": [{"main_score": 0.8203, "hf_subset": "default", "languages": ["eng-Latn"]}]}}"#,
    )
    .unwrap();
    let out = sage(&[
        "report",
        dir.path().to_str().unwrap(),
        "--mteb-results",
        mteb.path().to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(
        md.contains("| Original | MTEB published | Paraphrased |"),
        "{md}"
    );
    let row = |name: &str| {
        md.lines()
            .find(|l| l.starts_with(&format!("| all-MiniLM-L6-v2 | {name} |")))
            .unwrap_or_else(|| panic!("no {name} row in\n{md}"))
            .to_owned()
    };
    assert!(
        row("stsb").contains("| 0.850 | 0.820 | 0.800 ± 0.010 |"),
        "{}",
        row("stsb")
    );
    assert!(
        row("biosses").contains("| 0.800 | — | 0.510 ± 0.010 †"),
        "{}",
        row("biosses")
    );
    let cells = |line: String| line.matches('|').count();
    assert_eq!(cells(row("pooled")), cells(row("stsb")), "{md}");
    let csv = std::fs::read_to_string(dir.path().join("summary.csv")).unwrap();
    assert!(
        csv.contains("all-MiniLM-L6-v2,pteb,mteb,stsb,mteb published,0.8203"),
        "{csv}"
    );
    // a broken MTEB file is named, and nothing is written over
    std::fs::write(published.join("STS12.json"), "{").unwrap();
    let out = sage(&[
        "report",
        dir.path().to_str().unwrap(),
        "--mteb-results",
        mteb.path().to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("STS12.json:1: not an MTEB task result"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every suite names what it evaluates with `--similarity` (a metric or a model); `--model` is
/// the same for a model, and evalrank's old `--similarity cos` still works, with a note.
#[test]
fn every_suite_takes_what_it_evaluates_as_similarity() {
    let mirror = fixtures().join("mirror");
    let mirror = mirror.to_str().unwrap();
    // a metric where a suite ranks vectors: said, whatever the suite
    for suite in [
        &["run", "evalrank", "--level", "word"][..],
        &["run", "pteb", "--paraphraser", "none.gguf"][..],
    ] {
        let mut args = suite.to_vec();
        args.extend(["--similarity", "jaccard", "--data-dir", mirror]);
        let out = sage(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(
            stderr.contains("jaccard") && !stderr.contains("panicked"),
            "{args:?}: {stderr}"
        );
    }
    fails_with(
        &[
            "run",
            "align-sim",
            "--similarity",
            "jaccard",
            "--model",
            "jaccard",
            "--data-dir",
            mirror,
        ],
        "not both",
    );
    let Some(model) = models_dir() else {
        sage_core::test_support::skip(
            "every_suite_takes_what_it_evaluates_as_similarity",
            "SAGE_MODELS_DIR lacks all-MiniLM-L6-v2: the model part not run",
        );
        return;
    };
    let model = model.to_str().unwrap();
    let run = |args: &[&str]| {
        let out = sage(args);
        assert!(
            out.status.success(),
            "sage {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        (
            serde_json::from_slice::<Value>(&out.stdout).unwrap(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let common = ["--level", "word", "--no-cache", "--data-dir", mirror];
    let mut new = vec!["run", "evalrank", "--similarity", model];
    new.extend(common);
    let mut old = vec!["run", "evalrank", "--similarity", "l2", "--model", model];
    old.extend(common);
    let mut new_l2 = new.clone();
    new_l2.extend(["--vector-similarity", "l2"]);
    let (with_new, _) = run(&new_l2);
    let (with_old, note) = run(&old);
    assert!(
        note.contains("--similarity l2 is --vector-similarity l2 now"),
        "{note}"
    );
    let scores = |v: &Value| v["scores"].clone();
    assert_eq!(scores(&with_new), scores(&with_old));
    let (cosine, _) = run(&new);
    assert!(scores(&cosine)["mrr"].as_f64().is_some());
    // align-sim over a model named by --similarity, as over a metric
    let (align, _) = run(&[
        "run",
        "align-sim",
        "--similarity",
        model,
        // a sample with the paraphrase and negative pairs criterion 1 needs
        "--max-rows",
        "8",
        "--no-cache",
        "--data-dir",
        mirror,
    ]);
    assert!(align["similarity"]
        .as_str()
        .unwrap()
        .contains("all-MiniLM-L6-v2"));
}

/// `sage models fetch` builds a model folder from a hub cache (offline, as on a machine that was
/// given a copied cache) that embeds exactly like the folder the cache was made from; a second
/// fetch keeps it; a model the hub lacks in sage's layout is refused with where to get it.
#[test]
fn models_fetch_builds_a_working_folder_from_the_hub_cache() {
    let Some(source) = sage_core::test_support::model_dir_or_skip(
        "paraphrase-MiniLM-L3-v2",
        "models_fetch_builds_a_working_folder_from_the_hub_cache",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let repo = dir
        .path()
        .join("hub/models--sentence-transformers--paraphrase-MiniLM-L3-v2");
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs/main"), "0123abc\n").unwrap();
    let listed = sage(&["models", "fetch", "--list"]);
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.contains("\"glove.6B.50d\""), "{listed}");
    // the snapshot holds every file the folder takes, copied from the local model
    for name in [
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "vocab.txt",
        "modules.json",
        "1_Pooling/config.json",
        "sentence_bert_config.json",
    ] {
        let to = repo.join("snapshots/0123abc").join(name);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(source.join(name), to).unwrap();
    }
    let models = dir.path().join("models");
    let fetch = || {
        let out = Command::new(env!("CARGO_BIN_EXE_sage"))
            .args(["models", "fetch", "paraphrase-MiniLM-L3-v2", "--dest"])
            .arg(&models)
            .env("HF_HUB_CACHE", dir.path().join("hub"))
            .env("HF_HUB_OFFLINE", "1")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    assert_eq!(fetch()["status"], "fetched");
    assert_eq!(fetch()["status"], "present");

    let input = write(
        &dir,
        "texts.jsonl",
        "{\"text\": \"A cat sat on the mat.\"}\n{\"text\": \"Stocks fell sharply.\"}\n",
    );
    let embed = |model: &Path| {
        let out = sage(&[
            "embed",
            "--model",
            model.to_str().unwrap(),
            "--input",
            &input,
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    assert_eq!(
        embed(&models.join("paraphrase-MiniLM-L3-v2")),
        embed(&source)
    );
    fails_with(&["models", "fetch", "glove.6B.50d"], "glove.6B.zip");
    fails_with(&["models", "fetch", "minilm"], "all-MiniLM-L6-v2");
}
