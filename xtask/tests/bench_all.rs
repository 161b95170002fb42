//! `cargo xtask bench-all --quick` end to end on the repository's fixtures, as on a fresh clone
//! with no network and no SAGE_DATA_DIR; a killed run, re-run, ends with the same result files;
//! the HTML report renders in a real headless browser; the metrics' results and report equal the
//! ones kept in `xtask/tests/fixtures/quick-metrics/`.
//!
//! The `sage` binary is the debug one `cargo test --workspace` builds for sage-cli's tests
//! (built here when absent), passed with --sage so the test does not start a release build.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use sha2::Digest;
use std::time::{Duration, Instant};

use crate::common;
use common::{
    assert_same_results, bench_all_quick, fresh_clone_bench_all as bench_all, result_files, stable,
    workspace,
};

#[test]
fn quick_run_on_fixtures_resumes_after_a_kill_with_the_same_files() {
    let tmp = tempfile::tempdir().unwrap();
    let whole = tmp.path().join("whole");
    let output = bench_all(&whole, &tmp.path().join("a")).output().unwrap();
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "bench-all --quick failed:\n{log}");
    assert!(log.contains("fixtures: SAGE_DATA_DIR unset"), "{log}");
    assert!(
        log.contains("skipped") && log.contains("pteb"),
        "says what it skipped:\n{log}"
    );
    let files = result_files(&whole);
    for metric in ["levenshtein", "rouge", "jaccard", "bm25"] {
        for task in [
            "human-pref",
            "robustness",
            "sensitivity",
            "clustering",
            "retrieval",
        ] {
            let path = whole.join(metric).join("sage").join(format!("{task}.json"));
            assert!(files.contains(&path), "missing {}", path.display());
            let v = stable(&path);
            assert_eq!(v["schema"], "sage-rs/result/1");
            let score = v["score"].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&score), "{}: {score}", path.display());
        }
        assert!(files.contains(&whole.join(metric).join("align-sim/criteria.json")));
    }
    // PTEB ran for MiniLM when CI fetched it and the SmolLM2 paraphraser
    let models = std::env::var_os("SAGE_MODELS_DIR").map(PathBuf::from);
    if let Some(models) = models.filter(|m| {
        m.join("all-MiniLM-L6-v2").is_dir() && m.join("SmolLM2-135M-Instruct-GGUF").is_dir()
    }) {
        let _ = models;
        let path = whole.join("all-MiniLM-L6-v2/pteb/mteb.json");
        assert!(files.contains(&path), "missing {}:\n{log}", path.display());
        let v = stable(&path);
        let d = &v["report"]["datasets"][0];
        assert_eq!(d["dataset"], "stsb");
        assert_eq!(d["runs"].as_array().unwrap().len(), 2);
        assert!(d["original"].as_f64().is_some() && d["fallbacks"].as_u64().is_some());
        // the paraphrase-quality record and its verdict, and the report's mark when it fails
        let quality = &d["quality"];
        assert_eq!(quality["reference_encoder"], "all-MiniLM-L6-v2");
        assert!(quality["reference_cosine"].as_f64().is_some());
        let qualified = quality["verdict"]["qualified"].as_bool().unwrap();
        let report = std::fs::read_to_string(whole.join("report.md")).unwrap();
        assert!(
            report.contains("PTEB — original vs paraphrased"),
            "{report}"
        );
        assert_eq!(
            report.contains("paraphraser not qualified"),
            !qualified,
            "{report}"
        );
    } else {
        sage_test_env::skip(
            "quick_run_on_fixtures_resumes_after_a_kill_with_the_same_files (PTEB part)",
            "all-MiniLM-L6-v2 or SmolLM2-135M-Instruct-GGUF not under SAGE_MODELS_DIR",
        );
    }
    let report = std::fs::read_to_string(whole.join("report.md")).unwrap();
    assert!(report.contains("## SAGE (Table 1 layout)"), "{report}");
    assert!(report.contains("| jaccard |"), "{report}");
    let csv = std::fs::read_to_string(whole.join("summary.csv")).unwrap();
    assert!(csv.starts_with("similarity,suite,task,dataset,measure,value\n"));
    assert!(
        csv.lines()
            .any(|l| l.starts_with("jaccard,sage,overall,,score,")),
        "{csv}"
    );
    let html = std::fs::read_to_string(whole.join("report.html")).unwrap();
    assert!(
        html.contains("<svg") && html.contains("id=\"heatmap\""),
        "{html}"
    );

    // the same run, killed once a few results exist, then re-run
    let resumed = tmp.path().join("resumed");
    let scratch = tmp.path().join("b");
    let mut child = bench_all(&resumed, &scratch)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while result_files(&resumed).len() < 6 && start.elapsed() < Duration::from_secs(300) {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let before = result_files(&resumed).len();
    assert!(
        before < files.len(),
        "the kill came too late to test anything"
    );
    let output = bench_all(&resumed, &scratch).output().unwrap();
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the re-run failed:\n{log}");
    assert!(
        log.contains(": kept ("),
        "the re-run kept the finished results:\n{log}"
    );
    assert_same_results(&whole, &resumed);
}

/// report.html in headless Chromium: it renders with no console error, the answer comes first
/// (verdict, heatmap, ranking, the notes folded into one line, then the details with their
/// plots), and its script sorts a table (from the address, as a click would). The first screen's
/// screenshot is kept in the test artifacts ($SAGE_TEST_ARTIFACTS, else the target's tmp folder).
/// CI installs Chromium (.ci/run); elsewhere the test says it did not run when there is none.
#[test]
fn the_html_report_renders_in_a_headless_browser() {
    let Some(browser) = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| {
            Command::new("which")
                .arg(b)
                .output()
                .is_ok_and(|o| o.status.success())
        })
    else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have chromium (see .ci/run)"
        );
        sage_test_env::skip(
            "the_html_report_renders_in_a_headless_browser",
            "no chromium on the PATH (apt-get install chromium): report.html not rendered",
        );
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("results");
    let mut run = bench_all(&out, tmp.path());
    // metrics only: the browser check needs a report, not every model; with their throughput,
    // so that the quality–cost view is drawn
    run.arg("--config")
        .arg(metrics_only_config(tmp.path(), Throughput::On));
    let output = run.output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let page = out.join("report.html");
    let page_url = format!("file://{}", page.display());
    let profile = tmp.path().join("profile");
    let headless = |extra: &[&str], url: &str| {
        Command::new(browser)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--enable-logging=stderr",
                "--v=0",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .args(extra)
            .arg(url)
            .output()
            .unwrap()
    };
    let artifacts = std::env::var_os("SAGE_TEST_ARTIFACTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("test-artifacts"));
    std::fs::create_dir_all(&artifacts).unwrap();
    let mut shots = Vec::new();
    for (name, size) in [
        ("report-first-screen.png", "--window-size=1280,900"),
        ("report-full.png", "--window-size=1280,4000"),
    ] {
        let shot = artifacts.join(name);
        let _ = std::fs::remove_file(&shot);
        let o = headless(
            &[&format!("--screenshot={}", shot.display()), size],
            &page_url,
        );
        let log = String::from_utf8_lossy(&o.stderr);
        let png = std::fs::read(&shot).unwrap_or_default();
        assert!(
            png.len() > 10_000 && png.starts_with(b"\x89PNG"),
            "no screenshot:\n{log}"
        );
        for bad in [
            "Uncaught",
            "Failed to load resource",
            "CONSOLE(",
            "ERROR:CONSOLE",
        ] {
            assert!(!log.contains(bad), "console: {bad}\n{log}");
        }
        shots.push(shot);
    }
    eprintln!("report screenshots: {shots:?}");
    let o = headless(&["--dump-dom"], &page_url);
    let dom = String::from_utf8_lossy(&o.stdout);
    assert!(dom.contains("SAGE (Table 1 layout)"), "{dom}");
    assert!(dom.matches("<svg").count() >= 3, "plots in the DOM");
    let at = |needle: &str| {
        dom.find(needle)
            .unwrap_or_else(|| panic!("{needle} not in the rendered page"))
    };
    assert!(at("id=\"verdict\"") < at("id=\"heatmap\""));
    assert!(at("id=\"heatmap\"") < at("id=\"ranking\""));
    assert!(at("id=\"ranking\"") < at("id=\"quality-cost\""));
    assert!(at("id=\"quality-cost\"") < at("<details id=\"notes\"><summary>"));
    let cost = &dom[at("id=\"quality-cost\"")..at("<details id=\"notes\"><summary>")];
    assert!(
        cost.contains("Quality against speed") && cost.contains("Speeds measured on"),
        "{cost}"
    );
    assert!(at("<details id=\"notes\"><summary>") < at("id=\"details\""));
    // the fixtures' SAGE categories: every metric has all five, so all four are ranked
    let ranking = &dom[at("id=\"ranking\"")..];
    let first_row = |html: &str| -> String {
        let body = &html[html.find("<tbody>").unwrap()..];
        body[body.find("<tr>").unwrap()..body.find("</tr>").unwrap()].to_owned()
    };
    assert!(
        first_row(ranking).starts_with("<tr><td>1</td>"),
        "{ranking}"
    );
    // every column's best marked, each tie in full: the page and report.md agree
    let report_md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let best_cells = dom.matches("class=\"best\"").count();
    assert!(best_cells >= 6, "a best per column: {best_cells}");
    assert_eq!(best_cells, report_md.matches(" ★ |").count(), "{report_md}");
    // sorted by the overall score, ascending, as a click on its header does
    let sorted = headless(&["--dump-dom"], &format!("{page_url}#sort=ranking:2:asc"));
    let sorted = String::from_utf8_lossy(&sorted.stdout);
    let ranking = &sorted[sorted.find("id=\"ranking\"").unwrap()..];
    assert!(
        first_row(ranking).starts_with("<tr><td>4</td>"),
        "{ranking}"
    );
    assert!(ranking.contains("aria-sort=\"ascending\""), "{ranking}");
}

/// The quick run of the four metrics on the fixtures is pinned: every result file (when and where
/// it ran aside) and report.md (its host and revision lines aside) equal the ones kept in
/// `xtask/tests/fixtures/quick-metrics/`, with this checkout's path written `<workspace>`. A change
/// that moves a number, renames a field or reorders the report shows here. To accept a change
/// on purpose, run this test with `SAGE_BLESS=1` and commit the files it rewrites.
#[test]
fn quick_metrics_results_and_report_equal_the_kept_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("results");
    // the timings of a throughput run differ run to run: pinned without it
    let config = metrics_only_config(tmp.path(), Throughput::Off);
    let output = bench_all_quick(&config, &out, &tmp.path().join("cache"), &[]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let here = workspace().display().to_string();
    let kept = workspace().join("xtask/tests/fixtures/quick-metrics");
    let bless = std::env::var_os("SAGE_BLESS").is_some();
    let mut compared = 0;
    let mut check = |relative: &std::path::Path, text: String| {
        // result files write the home folder as `~`: a checkout under it is still <workspace>
        let text = text
            .replace(&here, "<workspace>")
            .replace(&sage_redact::home_relative(&here), "<workspace>");
        let path = kept.join(relative);
        if bless {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &text).unwrap();
            return;
        }
        let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (a new result: SAGE_BLESS=1 keeps it)",
                path.display()
            )
        });
        assert!(
            want == text,
            "{} changed (SAGE_BLESS=1 accepts it):\n{}",
            relative.display(),
            first_difference(&want, &text)
        );
        compared += 1;
    };
    let files = result_files(&out);
    for file in &files {
        let text = serde_json::to_string_pretty(&stable(file)).unwrap() + "\n";
        check(file.strip_prefix(&out).unwrap(), text);
    }
    let report: String = std::fs::read_to_string(out.join("report.md"))
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with("- git revision:") && !l.starts_with("- host:"))
        .map(|l| format!("{l}\n"))
        .collect();
    check(std::path::Path::new("report.md"), report);
    if !bless {
        // a result that is kept but no longer made is a change too
        let kept_files = result_files(&kept);
        assert_eq!(kept_files.len(), files.len(), "{kept_files:?}");
        assert_eq!(compared, files.len() + 1);
    }
}

/// `sage bench-all` (bench-all run by the `sage` binary itself, no checkout and no build needed)
/// writes what `cargo xtask bench-all` writes: on the fixtures, with one metric, every result
/// file equals the kept quick-metrics one (when and where it ran aside), and the report is
/// written. One library does both; this shows the `sage` entry point finds the same data,
/// plans the same jobs and records the same arguments.
#[test]
fn sage_bench_all_writes_the_results_cargo_xtask_bench_all_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let config = metrics_only_config(tmp.path(), Throughput::Off);
    let text = std::fs::read_to_string(&config).unwrap();
    let all_metrics = "metrics = [\"levenshtein\", \"rouge\", \"jaccard\", \"bm25\"]";
    assert!(text.contains(all_metrics), "bench.toml's metrics line");
    std::fs::write(
        &config,
        text.replace(all_metrics, "metrics = [\"jaccard\"]"),
    )
    .unwrap();
    let out = tmp.path().join("results");
    let output = Command::new(common::sage())
        .current_dir(workspace())
        .args(["bench-all", "--quick", "--config"])
        .arg(&config)
        .arg("--out")
        .arg(&out)
        .env("SAGE_CACHE_DIR", tmp.path().join("cache"))
        .env_remove("SAGE_DATA_DIR")
        .env("XDG_DATA_HOME", tmp.path().join("no-data-home"))
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "sage bench-all failed:\n{log}");
    assert!(log.contains("fixtures: SAGE_DATA_DIR unset"), "{log}");
    let here = workspace().display().to_string();
    let kept = workspace().join("xtask/tests/fixtures/quick-metrics");
    let files = result_files(&out);
    let kept_jaccard = result_files(&kept.join("jaccard"));
    assert_eq!(files.len(), kept_jaccard.len(), "{files:?}");
    for file in &files {
        let text = serde_json::to_string_pretty(&stable(file))
            .unwrap()
            .replace(&here, "<workspace>")
            .replace(&sage_redact::home_relative(&here), "<workspace>");
        let relative = file.strip_prefix(&out).unwrap();
        let want = std::fs::read_to_string(kept.join(relative)).unwrap();
        assert!(
            want.trim_end() == text,
            "{} differs from the kept one:\n{}",
            relative.display(),
            first_difference(&want, &text)
        );
    }
    assert!(out.join("report.md").is_file() && out.join("bench-all.json").is_file());
}

/// On a fresh clone with no data at all, `bench-all --quick --fetch` fetches what the run reads
/// from loopback sources (a pins table of the fixtures' files, served as GitHub raw files at a
/// commit), into the default data folder, and the run on them scores what the run on the
/// fixtures scores (the kept quick-metrics results). What the table does not have is said once
/// and the run goes on.
#[test]
fn a_fresh_clone_fetches_what_the_quick_run_reads_and_scores_as_on_the_fixtures() {
    let tmp = tempfile::tempdir().unwrap();
    let fixtures = workspace().join("data/fixtures/mirror");
    let base = "https://raw.githubusercontent.com/sage-rs/fixture-sources/0123456789abcdef0123456789abcdef01234567";
    // every registry dataset whose files the fixtures have, pinned as copies of them
    let mut artifacts = String::from("[artifacts]\n");
    let mut datasets = String::new();
    let mut served = std::collections::BTreeMap::new();
    for entry in sage_data::REGISTRY {
        let mut files = Vec::new();
        for split in entry.splits {
            let local = entry.local_path(split);
            let at = fixtures.join(&local);
            if at.is_file() {
                files.push(local);
            } else if at.is_dir() {
                files.extend(
                    common::files_under(&at)
                        .into_iter()
                        .map(|f| f.strip_prefix(&fixtures).unwrap().display().to_string()),
                );
            }
        }
        files.sort();
        files.dedup();
        if files.is_empty() {
            continue;
        }
        datasets.push_str(&format!(
            "[[dataset]]\nname = \"{}\"\nlicence = \"the fixtures'\"\n",
            entry.name
        ));
        for file in files {
            let bytes = std::fs::read(fixtures.join(&file)).unwrap();
            let sha: String = sha2::Sha256::digest(&bytes)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            let url = format!("{base}/{file}");
            artifacts.push_str(&format!(
                "\"{url}\" = {{ bytes = {}, sha256 = \"{sha}\" }}\n",
                bytes.len()
            ));
            datasets.push_str(&format!(
                "[[dataset.file]]\npath = \"{file}\"\nbytes = {}\nsha256 = \"{sha}\"\nconvert = \"copy\"\nfrom = [\"{url}\"]\n",
                bytes.len()
            ));
            served.insert(format!("/{}", url.strip_prefix("https://").unwrap()), bytes);
        }
    }
    assert!(served.len() > 20, "{} fixture files", served.len());
    let pins = tmp.path().join("pins.toml");
    std::fs::write(&pins, format!("{artifacts}\n{datasets}")).unwrap();
    let server = sage_loopback::Server::start(move |request: &sage_loopback::Request| match served
        .get(&request.path)
    {
        Some(bytes) => sage_loopback::Reply::Respond {
            status: 200,
            headers: vec![],
            body: bytes.clone(),
        },
        None => sage_loopback::Reply::Respond {
            status: 404,
            headers: vec![],
            body: vec![],
        },
    });
    let config = metrics_only_config(tmp.path(), Throughput::Off);
    let out = tmp.path().join("results");
    let data_home = tmp.path().join("xdg");
    let output = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .current_dir(workspace())
        .args(["bench-all", "--quick", "--fetch", "--sage"])
        .arg(common::sage())
        .arg("--config")
        .arg(&config)
        .arg("--out")
        .arg(&out)
        .env_remove("SAGE_DATA_DIR")
        .env("XDG_DATA_HOME", &data_home)
        .env("SAGE_DATA_PINS", &pins)
        .env("SAGE_DATA_SOURCES", server.url())
        .env("SAGE_CACHE_DIR", tmp.path().join("cache"))
        .env("HF_HOME", tmp.path().join("hf"))
        .env("HF_HUB_OFFLINE", "1")
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "bench-all --quick --fetch failed:\n{log}"
    );
    assert!(log.contains("fetching the datasets the run reads"), "{log}");
    let data = data_home.join("sage-rs/data");
    let fetched = common::files_under(&data);
    assert!(
        fetched.iter().any(|f| f.ends_with("sts/stsb/test.jsonl"))
            && fetched
                .iter()
                .any(|f| f.ends_with("wordnet/dict/data.noun")),
        "{fetched:?}"
    );
    assert!(data.join("PROVENANCE.json").is_file());
    // the same scores as the run on the fixtures themselves
    let kept = workspace().join("xtask/tests/fixtures/quick-metrics");
    let files = result_files(&out);
    assert_eq!(files.len(), result_files(&kept).len(), "{files:?}");
    for file in &files {
        let relative = file.strip_prefix(&out).unwrap();
        let want: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(kept.join(relative)).unwrap()).unwrap();
        let got = stable(file);
        assert_eq!(got["score"], want["score"], "{}", relative.display());
    }
}

/// Whether a test's config keeps the throughput suite.
#[derive(PartialEq)]
enum Throughput {
    On,
    Off,
}

/// The shipped bench.toml with no model: the four metrics (and the suites that take them), in
/// `dir/bench.toml`.
fn metrics_only_config(dir: &std::path::Path, throughput: Throughput) -> PathBuf {
    let config = dir.join("bench.toml");
    let default = std::fs::read_to_string(workspace().join("bench.toml")).unwrap();
    let mut text = default.replace("models = [\"auto\"]", "models = []");
    if throughput == Throughput::Off {
        text = common::disable_suites(&text, &["throughput"]);
    }
    std::fs::write(&config, text).unwrap();
    config
}

/// The first line where two texts differ, both sides.
fn first_difference(want: &str, got: &str) -> String {
    match want
        .lines()
        .zip(got.lines())
        .enumerate()
        .find(|(_, (a, b))| a != b)
    {
        Some((i, (a, b))) => format!("line {}:\n  kept: {a}\n  now:  {b}", i + 1),
        None => format!(
            "{} lines kept, {} now",
            want.lines().count(),
            got.lines().count()
        ),
    }
}

/// A user's BEIR folder named by a `[datasets.NAME]` table in the config runs through bench-all
/// and writes the same result as the same files placed in a data mirror under a registry name
/// (dataset name aside): the guide's `data/examples/clinic-faq`, on retrieval with BM25.
#[test]
fn a_dataset_table_in_the_config_runs_as_the_same_files_under_a_registry_name() {
    let tmp = tempfile::tempdir().unwrap();
    let examples = workspace().join("data/examples/clinic-faq");
    let retrieval_only = std::fs::read_to_string(workspace().join("bench.toml"))
        .unwrap()
        .replace("models = [\"auto\"]", "models = []")
        .replace(
            "metrics = [\"levenshtein\", \"rouge\", \"jaccard\", \"bm25\"]",
            "metrics = [\"bm25\"]",
        )
        // the datasets set below are the quick run's too
        .replace("quick_datasets = [\"scifact/test\"]\n", "");
    let others: Vec<&str> = common::SHIPPED_SUITES
        .into_iter()
        .filter(|&s| s != "retrieval")
        .collect();
    let retrieval_only = common::disable_suites(&retrieval_only, &others);
    let run = |name: &str, config: String| {
        let path = tmp.path().join(format!("{name}.toml"));
        std::fs::write(&path, config).unwrap();
        let out = tmp.path().join(name);
        let output = bench_all_quick(&path, &out, &tmp.path().join(format!("{name}-cache")), &[]);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        stable(&out.join("bm25/sage/retrieval.json"))
    };
    // the table, its path relative to the config file
    let table = tmp.path().join("clinic-faq");
    sage_test_env::copy_tree(&examples, &table);
    let user = run(
        "user",
        retrieval_only.replace(
            "[suites.retrieval]\n",
            "[suites.retrieval]\ndatasets = [\"clinic-faq/test\"]\n",
        ) + "\n[datasets.clinic-faq]\npath = \"clinic-faq\"\n",
    );
    // the same files as the fixture mirror's scifact
    let mirror = tmp.path().join("mirror");
    sage_test_env::copy_tree(&workspace().join("data/fixtures/mirror"), &mirror);
    std::fs::remove_dir_all(mirror.join("retrieval/scifact")).unwrap();
    sage_test_env::copy_tree(&examples, &mirror.join("retrieval/scifact"));
    let registry = run(
        "registry",
        retrieval_only
            .replace(
                "[suites.retrieval]\n",
                "[suites.retrieval]\ndatasets = [\"scifact/test\"]\n",
            )
            .replace(
                "data_dir = \"\"",
                &format!("data_dir = {:?}", mirror.display()),
            ),
    );
    let report = |v: &serde_json::Value| v["report"].to_string();
    assert!(report(&user).contains("\"clinic-faq/test\""), "{user}");
    // a registry file is checked against its pin (these are not the pinned bytes), a user's
    // own file has nothing to check against: the reports differ in that record alone
    let mut registry_report = registry["report"].clone();
    let checks = registry_report["datasets"][0]
        .as_object_mut()
        .and_then(|d| d.remove("files"))
        .expect("the registry files' checks");
    assert!(
        checks
            .as_array()
            .is_some_and(|c| c.len() == 3 && c.iter().all(|c| c["verified"] == "differs-from-pin")),
        "{checks}"
    );
    assert_eq!(
        report(&user).replace("\"clinic-faq/test\"", "\"scifact/test\""),
        registry_report.to_string()
    );
    // a real ranking with real perturbations, not an empty or constant report
    let ndcg = user["report"]["datasets"][0]["ndcg_clean"]
        .as_f64()
        .unwrap();
    assert!(ndcg > 0.3 && ndcg < 1.0, "{user}");
}
