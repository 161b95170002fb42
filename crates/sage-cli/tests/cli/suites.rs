//! `sage run`, `sage data` and `sage pteb`: suites, datasets, task options, the report.

use super::*;

/// Task parameters outside their documented range are refused before any model is loaded or
/// data read, the option, the value and the range named (a 1,000,000-text clustering subset
/// asked for ~4 TB). The ranges are the suites' own (each options struct's `check`, which
/// `--options`, bench.toml and Python meet too): a flag only spells an option.
#[test]
fn task_parameters_are_bounded() {
    // neither exists: a range error must come first
    let nowhere = [
        "--similarity",
        "/no/such/model",
        "--data-dir",
        "/no/such/mirror",
    ];
    for (args, needle) in [
        (
            &["run", "clustering", "--max-texts", "1000000"][..],
            "clustering: options: max_texts = 1000000 is outside its range 2 to 50000",
        ),
        (
            &["run", "clustering", "--subsets", "0"][..],
            "clustering: options: subsets = 0 is outside its range 1 to 1000",
        ),
        (
            &["run", "retrieval", "--pair-budget", "0"][..],
            "retrieval: options: pair_budget = 0 is outside its range 1000 to 100000000",
        ),
        (
            &["run", "sensitivity", "--max-rows", "0"][..],
            "sensitivity: options: max_rows = 0 is outside its range 1 to 10000000",
        ),
        (
            &["run", "align-sim", "--max-rows", "0"][..],
            "align-sim: options: max_rows = 0 is outside its range 1 to 10000000",
        ),
        (
            &["run", "evalrank", "--level", "sentence", "--abtt-k", "0"][..],
            "evalrank: options: abtt_k = 0 is outside its range 1 to 1000",
        ),
        (
            &[
                "run",
                "pteb",
                "--paraphraser",
                "/no/such.gguf",
                "--runs",
                "0",
            ][..],
            "pteb: options: runs = 0 is outside its range 1 to 1000",
        ),
    ] {
        let args: Vec<&str> = args.iter().chain(&nowhere).copied().collect();
        let out = sage(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
    // a measure's arguments are bounded by the command line itself
    let out = sage(&[
        "measure",
        "hodges-lehmann",
        "--input",
        "xy.jsonl",
        "--resamples",
        "1000000000000",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("'--resamples <RESAMPLES>': 1000000000000 is not in 1..=1000000"),
        "{stderr}"
    );
}

/// Every shipped suite takes `--options` and `--option` like a suite registered elsewhere, and
/// its flags are aliases laid over them: a value given only in `--options` reaches the suite's
/// check (a flag left at its default does not replace it), and the flag given replaces it. Seen
/// through the range checks, which run before any model or data is touched.
#[test]
fn shipped_suites_take_options_under_their_flags() {
    let nowhere = [
        "--similarity",
        "/no/such/model",
        "--data-dir",
        "/no/such/mirror",
    ];
    for (suite, bad, fixed, needle) in [
        (
            &["clustering"][..],
            r#"{"subsets": 0}"#,
            &["--subsets", "2"][..],
            "clustering: options: subsets = 0",
        ),
        (
            &["retrieval"][..],
            r#"{"pair_budget": 0}"#,
            &["--pair-budget", "5000"][..],
            "retrieval: options: pair_budget = 0",
        ),
        (
            &["sensitivity"][..],
            r#"{"truncate_tokens": 0}"#,
            &["--whole-documents"][..],
            "sensitivity: options: truncate_tokens = 0",
        ),
        (
            &["align-sim"][..],
            r#"{"max_rows": 0}"#,
            &["--max-rows", "5"][..],
            "align-sim: options: max_rows = 0",
        ),
        (
            &["evalrank"][..],
            r#"{"level": "word", "abtt_k": 0}"#,
            &["--abtt-k", "3"][..],
            "evalrank: options: abtt_k = 0",
        ),
        (
            &["pteb"][..],
            r#"{"paraphraser": "/no/such.gguf", "runs": 0}"#,
            &["--runs", "2"][..],
            "pteb: options: runs = 0",
        ),
    ] {
        let run = |extra: &[&str]| {
            let mut args = vec!["run"];
            args.extend(suite);
            args.extend(["--options", bad]);
            args.extend(extra);
            args.extend(nowhere);
            let out = sage(&args);
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            )
        };
        let (code, stderr) = run(&[]);
        assert_eq!(code, Some(1), "{suite:?}: {stderr}");
        assert!(
            stderr.contains(needle),
            "{suite:?} --options {bad}: {stderr}"
        );
        // the flag replaces the option: the run gets past the check (to the missing model or
        // data)
        let (code, stderr) = run(fixed);
        assert_eq!(code, Some(1), "{suite:?}: {stderr}");
        assert!(
            !stderr.contains("options:"),
            "{suite:?} {fixed:?}: {stderr}"
        );
    }
    // --option KEY=VALUE over --options, as for a suite registered elsewhere
    fails_with(
        &[
            "run",
            "clustering",
            "--options",
            r#"{"subsets": 2}"#,
            "--option",
            "max_texts=1",
            "--similarity",
            "jaccard",
        ],
        "clustering: options: max_texts = 1",
    );
    // evalrank's level may come from the options instead of --level, but from somewhere
    fails_with(
        &[
            "run",
            "evalrank",
            "--option",
            "abtt_k=2",
            "--similarity",
            "x",
        ],
        "level",
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
    // every hub copy at a commit, so no listed dataset moves under a result
    for e in entries.iter().filter(|e| !e["hub"].is_null()) {
        let revision = e["hub"]["revision"].as_str().unwrap();
        assert!(
            revision.len() == 40 && revision.bytes().all(|b| b.is_ascii_hexdigit()),
            "{}: {revision}",
            e["name"]
        );
    }
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
        sage_test_env::skip(
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
    let Some(llm) = sage_test_env::model_dir_or_skip("SmolLM2-135M-Instruct-GGUF", what) else {
        return;
    };
    let Some(minilm) = sage_test_env::model_dir_or_skip("all-MiniLM-L6-v2", what) else {
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
    let ablation = serde_json::json!({
        "conditions": [
            {"prompt": "default", "instruction": "Paraphrase.", "mean_score": 0.80,
             "mean_edit_distance": 0.50, "fallbacks": 0, "datasets": {"stsb/test": 0.80}},
            {"prompt": "variant-1", "instruction": "Rewrite.", "mean_score": 0.78,
             "mean_edit_distance": 0.55, "fallbacks": 1, "datasets": {"stsb/test": 0.78}}
        ],
        "units": 2, "spread": 0.02, "spread_low": 0.01, "spread_high": 0.03,
        "versus_first": [{
            "prompt": "variant-1", "n": 2,
            "hodges_lehmann": {
                "estimate": -0.02, "ci_low": -0.03, "ci_high": -0.01, "confidence": 0.95,
                "resamples": 1000, "seed": 1337, "n": 2
            },
            "wilcoxon": null, "p_holm": null
        }]
    });
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
            // the paper's aggregation (pteb::aggregate::by_task of the two datasets' runs)
            "by_task": [{
                "languages": "english", "task": "sts", "original": 0.825, "paraphrased": 0.655,
                "datasets": [
                    {"dataset": "stsb", "subsets": [], "original": 0.85,
                     "paraphrased": [0.79, 0.81], "delta": -0.05, "delta_std": 0.014142,
                     "includes_unqualified": false},
                    {"dataset": "biosses", "subsets": [], "original": 0.8,
                     "paraphrased": [0.5, 0.52], "delta": -0.29, "delta_std": 0.014142,
                     "includes_unqualified": true}
                ]
            }],
            // the prompt-sensitivity analysis of the run: two wordings
            "prompt_ablation": ablation,
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
    // the prompt-sensitivity table: each wording's score, the spread with its interval on the
    // first, the shift against the first on the others
    assert!(
        md.contains("paraphrase-prompt sensitivity (Table 12 layout)"),
        "{md}"
    );
    let default = row("default");
    assert!(
        default.contains("| 0.800 | 0.500 |")
            && default.contains("0.020 [0.010, 0.030] over 2 pairs"),
        "{default}"
    );
    let variant = row("variant-1");
    assert!(variant.contains("HL -0.020 [-0.030, -0.010]"), "{variant}");
    assert!(md.contains("† paraphraser not qualified"), "{md}");
    assert!(md.contains("sage pteb qualify"), "{md}");
    // the paper's Tables 9 and 10: the task's means, then each dataset's change ± std over runs
    assert!(
        md.contains("by task and language (Tables 9 and 10 layout)"),
        "{md}"
    );
    assert!(
        md.contains(
            "| all-MiniLM-L6-v2 | English | sts | all 2 dataset(s) | 0.825 | 0.655 | -0.170 |"
        ),
        "{md}"
    );
    assert!(
        md.contains(
            "| all-MiniLM-L6-v2 | English | sts | biosses | 0.800 | 0.510 | -0.290 ± 0.014 † |"
        ),
        "{md}"
    );
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
        sage_test_env::skip(
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
    // written to a folder that does not exist yet
    let results = tempfile::tempdir().unwrap();
    let file = results.path().join("MiniLM/align-sim/criteria.json");
    let written = sage(&[
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
        "--output",
        file.to_str().unwrap(),
    ]);
    assert!(
        written.status.success(),
        "{}",
        String::from_utf8_lossy(&written.stderr)
    );
    let envelope: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert!(envelope["report"]["similarity"]
        .as_str()
        .unwrap()
        .contains("all-MiniLM-L6-v2"));
    // without a cache the result still says what the model embedded, none of it cached
    let work = &envelope["run"]["embedding"][0];
    assert!(work["model"].as_str().unwrap().contains("all-MiniLM-L6-v2"));
    assert!(work["embedded"].as_u64().unwrap() > 0, "{work}");
    assert_eq!(work["cached"], 0);
    assert!(work["seconds"].as_f64().unwrap() > 0.0, "{work}");
}

/// `sage suites check` answers what bench-all asks of every configured run before its first job:
/// the run's result file (EvalRank's per level), what this machine lacks for it (PTEB's
/// paraphraser, or a server without its model name, said as a reason, not an error), and an
/// option the suite refuses as an error naming it. Nothing is loaded or run.
#[test]
fn a_suite_run_is_checked_before_anything_runs() {
    let checked = ok_json(&["suites", "check", "evalrank", "--option", "level=sentence"]);
    assert_eq!(checked["result_suite"], "evalrank");
    assert_eq!(checked["result_task"], "sentence");
    assert!(checked["missing"].is_null(), "{checked}");
    let checked = ok_json(&["suites", "check", "clustering"]);
    assert_eq!(
        (&checked["result_suite"], &checked["result_task"]),
        (&"sage".into(), &"clustering".into())
    );

    let here = tempfile::tempdir().unwrap();
    let paraphraser = here.path().join("llm");
    std::fs::create_dir(&paraphraser).unwrap();
    let pteb = |options: Value| {
        ok_json(&["suites", "check", "pteb", "--options", &options.to_string()])["missing"].clone()
    };
    let encoder = here.path().display().to_string();
    let missing = pteb(serde_json::json!({
        "paraphraser": here.path().join("no-such.gguf"),
        "quality_encoder": encoder,
    }));
    assert!(
        missing.as_str().unwrap().contains("no-such.gguf"),
        "{missing}"
    );
    let missing = pteb(serde_json::json!({
        "paraphraser": "http://127.0.0.1:9/v1",
        "quality_encoder": encoder,
    }));
    assert!(missing.as_str().unwrap().contains("llm_model"), "{missing}");
    let missing = pteb(serde_json::json!({
        "paraphraser": paraphraser,
        "quality_encoder": here.path().join("no-encoder"),
    }));
    assert!(
        missing.as_str().unwrap().contains("reference encoder"),
        "{missing}"
    );
    let missing = pteb(serde_json::json!({"paraphraser": paraphraser, "quality_encoder": encoder}));
    assert!(missing.is_null(), "{missing}");

    fails_with(
        &["suites", "check", "retrieval", "--option", "mode=sideways"],
        "retrieval: options",
    );
    fails_with(&["suites", "check", "pteb"], "paraphraser");
    fails_with(&["suites", "check", "no-such-suite"], "no-such-suite");
}

/// Issue 81, point 0: a model run at float32 and at int8 is two similarities everywhere the
/// report names it: each result file says `NAME@int8` for the variant, the cost table has a
/// row for each with its own run's speed and, for the variant, what it keeps of float32, the
/// stored-small sentence one clause per model, and the page's plots name both.
#[test]
fn a_model_at_two_precisions_is_two_rows_with_their_own_speeds() {
    let what = "a_model_at_two_precisions_is_two_rows_with_their_own_speeds";
    let Some(minilm) = sage_test_env::model_dir_or_skip("all-MiniLM-L6-v2", what) else {
        return;
    };
    let minilm = minilm.to_str().unwrap();
    let mirror = fixtures().join("mirror");
    let mirror = mirror.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut medians = Vec::new();
    for (precision, name) in [
        ("f32", "all-MiniLM-L6-v2"),
        ("int8", "all-MiniLM-L6-v2@int8"),
    ] {
        for suite in ["throughput", "compression"] {
            let folder = dir.path().join(name).join(suite);
            std::fs::create_dir_all(&folder).unwrap();
            let file = folder.join(format!("{suite}.json"));
            let args = [
                "run",
                suite,
                "--similarity",
                minilm,
                "--precision",
                precision,
                "--data-dir",
                mirror,
                "--max-rows",
                "16",
                "--no-cache",
                "--output",
                file.to_str().unwrap(),
            ];
            let out = sage(&args);
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let written: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
            assert_eq!(
                written["similarity"]["name"], name,
                "{suite} at {precision}"
            );
            if suite == "throughput" {
                let short = written["report"]["lengths"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|l| l["length"] == "short")
                    .unwrap()["per_second"]["median"]
                    .as_f64()
                    .unwrap();
                medians.push(short);
            }
        }
    }
    let out = sage(&["report", dir.path().to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    let row = |name: &str| -> Vec<String> {
        md.lines()
            .find(|l| l.starts_with(&format!("| {name} | ")) && l.contains("local"))
            .unwrap_or_else(|| panic!("no cost row for {name} in\n{md}"))
            .split('|')
            .map(|c| c.trim().to_owned())
            .collect()
    };
    let (float32, int8) = (row("all-MiniLM-L6-v2"), row("all-MiniLM-L6-v2@int8"));
    // | name | overall | kept of f32 | short/s | ...: each row its own run's short-text speed
    for (cells, median) in [(&float32, medians[0]), (&int8, medians[1])] {
        let shown: f64 = cells[4].split(' ').next().unwrap().parse().unwrap();
        assert!(
            (shown - median).abs() <= 0.5 + median * 1e-3,
            "{cells:?} shows {shown}, its run measured {median}"
        );
    }
    assert_eq!(float32[3], "—", "{float32:?}");
    assert!(int8[3].ends_with('%'), "{int8:?}");
    let sentence = md
        .lines()
        .find(|l| l.starts_with("**Stored small:**"))
        .unwrap_or_else(|| panic!("{md}"));
    assert_eq!(
        sentence.matches("all-MiniLM-L6-v2@int8").count(),
        1,
        "{sentence}"
    );
    assert_eq!(
        sentence.matches("all-MiniLM-L6-v2 ").count()
            + sentence.matches("all-MiniLM-L6-v2's").count(),
        1,
        "{sentence}"
    );
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    let svgs: Vec<&str> = html.split("<svg").skip(1).collect();
    assert!(
        svgs.iter().any(|svg| svg.contains("all-MiniLM-L6-v2@int8")),
        "no plot names the int8 model"
    );
}

/// Runs `sage` (the binary with its environment and arguments set), which must succeed.
fn succeeds(mut sage: Command) {
    let out = sage.output().unwrap();
    assert!(
        out.status.success(),
        "{sage:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The throughput suite's `compute` (the kernels that ran) for `model` at `precision`, run
/// by `sage` on the fixture mirror into `file`.
fn throughput_compute(mut sage: Command, model: &str, precision: &str, file: &Path) -> String {
    sage.args([
        "run",
        "throughput",
        "--similarity",
        model,
        "--precision",
        precision,
    ])
    .args(["--max-rows", "4", "--no-cache", "--data-dir"])
    .arg(fixtures().join("mirror"))
    .arg("--output")
    .arg(file);
    succeeds(sage);
    let written: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    written["report"]["compute"].as_str().unwrap().to_owned()
}

/// `sage embed` of `input` by `model` at `precision`, uncached, into `output` (JSON lines).
fn embed_into(mut sage: Command, model: &str, precision: &str, input: &Path, output: &Path) {
    sage.args([
        "embed",
        "--model",
        model,
        "--precision",
        precision,
        "--no-cache",
    ])
    .arg("--input")
    .arg(input)
    .arg("--output")
    .arg(output);
    succeeds(sage);
}

/// Issue 81, point 4: `SAGE_CPU` forces each int8 path this CPU can run, and float32's AVX2
/// panels. The throughput suite's `compute` names the kernel that ran, every int8 path writes
/// the same vectors (their integer sums are exact), and a misspelt
/// level is refused before anything runs.
#[test]
fn sage_cpu_forces_each_int8_path_with_the_same_vectors() {
    let what = "sage_cpu_forces_each_int8_path_with_the_same_vectors";
    let Some(minilm) = sage_test_env::model_dir_or_skip("all-MiniLM-L6-v2", what) else {
        return;
    };
    #[cfg(target_arch = "x86_64")]
    let (vnni512, vnni256) = (
        std::is_x86_feature_detected!("avx512vnni") && std::is_x86_feature_detected!("avx512bw"),
        std::is_x86_feature_detected!("avxvnni"),
    );
    #[cfg(not(target_arch = "x86_64"))]
    {
        sage_test_env::skip(what, "the int8 kernels are x86-64's");
        return;
    }
    let minilm = minilm.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("t.jsonl");
    std::fs::write(
        &input,
        "{\"text\":\"A man plays the guitar.\"}\n{\"text\":\"Stocks fell sharply on Tuesday after \
         the central bank raised rates, the third rise this year.\"}\n",
    )
    .unwrap();
    // the binary under SAGE_CPU=level
    let cpu = |level: &str| {
        let mut sage = Command::new(env!("CARGO_BIN_EXE_sage"));
        sage.env("SAGE_CPU", level);
        sage
    };
    let compute = |level: &str, precision: &str| {
        let file = dir
            .path()
            .join(format!("throughput-{level}-{precision}.json"));
        throughput_compute(cpu(level), minilm, precision, &file)
    };
    let mut vectors = Vec::new();
    for (level, kernel) in [
        (
            "native",
            if vnni512 {
                "int8-avx512-vnni"
            } else if vnni256 {
                "int8-avx-vnni"
            } else {
                "int8-avx2"
            },
        ),
        (
            "avx-vnni",
            if vnni256 {
                "int8-avx-vnni"
            } else {
                "int8-avx2"
            },
        ),
        ("avx2", "int8-avx2"),
    ] {
        assert_eq!(
            compute(level, "int8"),
            format!("cpu int8 {kernel}"),
            "SAGE_CPU={level}"
        );
        let out = dir.path().join(format!("vectors-{level}.jsonl"));
        embed_into(cpu(level), minilm, "int8", &input, &out);
        vectors.push((level, std::fs::read(&out).unwrap()));
    }
    for (level, bytes) in &vectors[1..] {
        assert!(
            *bytes == vectors[0].1,
            "SAGE_CPU={level} wrote other vectors"
        );
    }
    // float32's dense products drop to the AVX2 panels too (gemm's own kernels, which run the
    // rest, SAGE_CPU cannot reach)
    assert_eq!(compute("avx2", "f32"), "cpu f32 f32-avx2-panels");
    let bad = Command::new(env!("CARGO_BIN_EXE_sage"))
        .args(["data", "list"])
        .env("SAGE_CPU", "avx9000")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        !bad.status.success()
            && stderr.contains("SAGE_CPU=\"avx9000\" is not an instruction-set level")
            && stderr.contains("avx2, avx-vnni, avx512, native"),
        "{stderr}"
    );
}

/// What `precision_throughput.py --cpu avx2` relies on: with
/// tests/python-reference/hide_cpu_features.c preloaded, CPUID itself hides AVX-512 (and
/// AVX-VNNI), so the float32 products (sage's AVX2 panels in place of gemm's AVX-512 kernel)
/// and sage's int8 kernels both drop to their AVX2 forms without `SAGE_CPU`, as on a CPU that
/// lacks them. The vectors are the native ones' up to rounding, not bit for bit: the panels
/// sum in another order, and at int8 that moves the calibrated
/// ranges, so a few quants land on the next level.
/// Needs a C compiler and Linux's CPUID faulting (`cpuid_fault` in /proc/cpuinfo).
#[test]
fn hidden_cpuid_features_move_gemm_and_int8_to_avx2() {
    let what = "hidden_cpuid_features_move_gemm_and_int8_to_avx2";
    let Some(minilm) = sage_test_env::model_dir_or_skip("all-MiniLM-L6-v2", what) else {
        return;
    };
    let faulting = std::fs::read_to_string("/proc/cpuinfo")
        .is_ok_and(|info| info.split_whitespace().any(|flag| flag == "cpuid_fault"));
    if !faulting {
        sage_test_env::skip(
            what,
            "no CPUID faulting here (cpuid_fault in /proc/cpuinfo)",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let library = dir.path().join("hide_cpu_features.so");
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/python-reference/hide_cpu_features.c");
    let built = Command::new("cc")
        .args(["-O2", "-shared", "-fPIC", "-o"])
        .arg(&library)
        .arg(&source)
        .output();
    match built {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!("cc: {}", String::from_utf8_lossy(&out.stderr)),
        Err(_) => {
            sage_test_env::skip(what, "no C compiler (cc) to build hide_cpu_features.c");
            return;
        }
    }
    let minilm = minilm.to_str().unwrap();
    let input = dir.path().join("t.jsonl");
    std::fs::write(&input, "{\"text\":\"A man plays the guitar.\"}\n").unwrap();
    // the binary with `hide` for HIDE_CPU_FEATURES, or None for the CPU as it is
    let cpu = |hide: Option<&str>| {
        let mut sage = Command::new(env!("CARGO_BIN_EXE_sage"));
        sage.env_remove("SAGE_CPU");
        if let Some(hide) = hide {
            sage.env("HIDE_CPU_FEATURES", hide)
                .env("LD_PRELOAD", &library);
        }
        sage
    };
    let compute = |hide: Option<&str>, precision: &str| {
        let file = dir.path().join(format!("throughput-{precision}.json"));
        throughput_compute(cpu(hide), minilm, precision, &file)
    };
    // on a CPU without AVX-512 there is nothing to hide, and nothing this test could tell
    let native = compute(None, "f32");
    if native != "cpu f32 gemm-avx512" {
        sage_test_env::skip(what, &format!("no AVX-512 to hide here ({native})"));
        return;
    }
    let avx2 = Some("avx512,avx-vnni");
    assert_eq!(compute(avx2, "f32"), "cpu f32 f32-avx2-panels");
    assert_eq!(compute(avx2, "int8"), "cpu int8 int8-avx2");
    let vectors = |hide: Option<&str>, precision: &str| {
        let out = dir.path().join("vectors.jsonl");
        embed_into(cpu(hide), minilm, precision, &input, &out);
        let text = std::fs::read_to_string(&out).unwrap();
        let line: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        let vector: Vec<f64> = line["embedding"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        vector
    };
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
    for (precision, least) in [("f32", 0.999_999), ("int8", 0.999)] {
        let (hidden, native) = (vectors(avx2, precision), vectors(None, precision));
        let cos = dot(&hidden, &native) / (dot(&hidden, &hidden) * dot(&native, &native)).sqrt();
        assert!(
            cos > least,
            "{precision} under hidden AVX-512: cosine {cos} to native"
        );
    }
}
