//! `sage score` and `sage measure`: golden values, input errors, the long-work guard.

use super::*;

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
