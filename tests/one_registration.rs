//! A suite and a metric that sage-rs does not ship, each registered by one line in
//! `toys/main.rs`, run through `sage run` and through bench-all's job list: nothing else in the
//! workspace names them, so what runs here is what a user's crate gets from the registry.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const SAGE: &str = env!("CARGO_BIN_EXE_sage-with-toys");

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

fn fixtures() -> PathBuf {
    workspace().join("data/fixtures/mirror")
}

fn sage(args: &[&str]) -> Output {
    Command::new(SAGE).args(args).output().unwrap()
}

fn succeeded(output: &Output) -> String {
    assert!(
        output.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn the_listings_name_what_was_registered_after_the_shipped_ones() {
    let suites = json_lines(&succeeded(&sage(&["suites"])));
    let last = suites.last().unwrap();
    assert_eq!(last["name"], "sts-spearman");
    assert_eq!(last["takes_metrics"], true);
    assert_eq!(last["default_datasets"], serde_json::json!(["stsb/test"]));
    assert_eq!(last["result_suite"], "sts-spearman");
    assert_eq!(last["result_task"], "sts-spearman");
    assert!(suites.iter().any(|s| s["name"] == "robustness"));
    let metrics: Vec<Value> = json_lines(&succeeded(&sage(&["metrics"])))
        .into_iter()
        .map(|m| m["name"].clone())
        .collect();
    assert_eq!(
        metrics,
        ["bm25", "jaccard", "levenshtein", "rouge", "shared-letters"]
    );
}

#[test]
fn sage_run_takes_the_registered_suite_and_metric() {
    let dir = tempfile::tempdir().unwrap();
    let data = fixtures().display().to_string();
    let run = |out: &Path, options: &[&str]| {
        let mut args = vec![
            "run",
            "sts-spearman",
            "--similarity",
            "shared-letters",
            "--data-dir",
            &data,
            "--seed",
            "7",
        ];
        args.extend(options);
        let out = out.display().to_string();
        args.extend(["--output", &out]);
        succeeded(&sage(&args));
    };
    let one = dir.path().join("one.json");
    let two = dir.path().join("two.json");
    // the fixtures' STS-B holds 3 pairs: 2 of them, sampled
    run(&one, &["--option", "max_rows=2"]);
    run(&two, &["--options", r#"{"max_rows": 2}"#]);
    let read =
        |path: &Path| -> Value { serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap() };
    let (file, other) = (read(&one), read(&two));
    assert_eq!(
        file["report"], other["report"],
        "--option and --options differ"
    );
    // --output writes the result file `sage report` reads: the report in its envelope, with the
    // rows it used and where it goes in a results folder
    assert_eq!(file["schema"], sage_core::RESULT_SCHEMA);
    assert_eq!(file["similarity"]["name"], "shared-letters");
    assert_eq!(file["similarity"]["kind"], "metric");
    assert_eq!(file["suite"], "sts-spearman");
    assert_eq!(file["seed"], 7);
    assert_eq!(file["score"], file["report"]["score"]);
    let report = &file["report"];
    assert_eq!(report["similarity"], "shared-letters");
    assert_eq!(report["seed"], 7);
    assert_eq!(report["max_rows"], 2);
    assert_eq!(report["datasets"][0]["dataset"], "stsb/test");
    assert_eq!(report["datasets"][0]["rows"]["used_rows"], 2);
    assert_eq!(report["datasets"][0]["rows"]["total_rows"], 3);
    let score = report["score"].as_f64().unwrap();
    assert!((-1.0..=1.0).contains(&score), "{score}");

    // the suite's own options are checked, by name
    let bad = sage(&[
        "run",
        "sts-spearman",
        "--similarity",
        "shared-letters",
        "--data-dir",
        &data,
        "--option",
        "max_row=8",
    ]);
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(!bad.status.success());
    assert!(
        stderr.contains("sts-spearman: options") && stderr.contains("max_row"),
        "{stderr}"
    );
    // a misspelt suite is named with the registered ones
    let bad = sage(&["run", "sts-spearmen", "--similarity", "shared-letters"]);
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.contains("\"sts-spearmen\"") && stderr.contains("sts-spearman"),
        "{stderr}"
    );

    // the registered metric in a shipped suite
    let robustness = succeeded(&sage(&[
        "run",
        "robustness",
        "--similarity",
        "shared-letters",
        "--max-rows",
        "3",
        "--data-dir",
        &data,
    ]));
    let robustness: Value = serde_json::from_str(&robustness).unwrap();
    assert_eq!(robustness["similarity"], "shared-letters");
    assert!(robustness["score"].is_f64());
}

#[test]
fn bench_all_plans_and_reports_the_registered_suite_and_metric() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = std::fs::read_to_string(workspace().join("bench.toml")).unwrap();
    for (from, to) in [
        (
            "data_dir = \"\"",
            format!("data_dir = {:?}", fixtures().display().to_string()),
        ),
        (
            "metrics = [\"levenshtein\", \"rouge\", \"jaccard\", \"bm25\"]",
            "metrics = [\"shared-letters\"]".to_owned(),
        ),
        ("models = [\"auto\"]", "models = []".to_owned()),
        // of SAGE's tasks robustness alone; EvalRank and PTEB take no metric
        (
            "[suites.human-pref]\n",
            "[suites.human-pref]\nenabled = false\n".to_owned(),
        ),
        (
            "[suites.sensitivity]\n",
            "[suites.sensitivity]\nenabled = false\n".to_owned(),
        ),
        (
            "[suites.clustering]\n",
            "[suites.clustering]\nenabled = false\n".to_owned(),
        ),
        (
            "[suites.retrieval]\n",
            "[suites.retrieval]\nenabled = false\n".to_owned(),
        ),
    ] {
        assert!(config.contains(from), "bench.toml has no {from:?}");
        config = config.replacen(from, &to, 1);
    }
    config.push_str("\n[suites.sts-spearman]\noptions = { max_rows = 10 }\n");
    let config_path = dir.path().join("toys.toml");
    std::fs::write(&config_path, config).unwrap();
    let out = dir.path().join("results");
    let args: Vec<String> = [
        "bench-all",
        "--quick",
        "--sage",
        SAGE,
        "--config",
        &config_path.display().to_string(),
        "--out",
        &out.display().to_string(),
    ]
    .map(String::from)
    .to_vec();

    // the job list comes from the toys' `sage suites` and `sage metrics`
    xtask::run(&args).unwrap();

    let read = |path: &str| -> Value {
        let path = out.join(path);
        serde_json::from_slice(
            &std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
        )
        .unwrap()
    };
    let toy = read("shared-letters/sts-spearman/sts-spearman.json");
    assert_eq!(toy["suite"], "sts-spearman");
    assert_eq!(toy["similarity"]["kind"], "metric");
    assert_eq!(toy["report"]["max_rows"], 10);
    assert_eq!(toy["datasets"][0]["dataset"], "stsb");
    assert_eq!(toy["score"], toy["report"]["score"]);
    // the shipped suites bench-all was asked for ran on the registered metric
    assert_eq!(
        read("shared-letters/sage/robustness.json")["similarity"]["name"],
        "shared-letters"
    );
    assert!(out.join("shared-letters/align-sim/criteria.json").is_file());

    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    let other = report
        .lines()
        .find(|l| l.contains("sts-spearman/sts-spearman"))
        .unwrap_or_else(|| panic!("the toy suite is not in report.md:\n{report}"));
    assert!(other.contains("shared-letters"), "{other}");
    assert!(
        other.contains(&format!("{:.3}", toy["score"].as_f64().unwrap())),
        "{other}"
    );
}
