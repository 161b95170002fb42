//! What the workspace-level tests share: where the workspace, its target dir and the debug `sage`
//! binary are.

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

/// `sage ARGS` with the embedding cache at `cache` and no OpenAI key in the environment; fails
/// the test, with sage's message, when it fails.
pub fn run_sage(args: &[&str], cache: &Path) -> std::process::Output {
    let out = Command::new(sage())
        .args(args)
        .env("SAGE_CACHE_DIR", cache)
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "sage {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `cargo xtask bench-all --quick` of `config` (a file's path) through the debug `sage`, results
/// in `out`, the embedding cache at `cache`, on the fixtures.
pub fn bench_all_quick(
    config: &Path,
    out: &Path,
    cache: &Path,
    extra: &[&str],
) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
        .current_dir(workspace())
        .args(["bench-all", "--quick"])
        .args(extra)
        .arg("--sage")
        .arg(sage())
        .arg("--config")
        .arg(config)
        .arg("--out")
        .arg(out)
        .env("SAGE_CACHE_DIR", cache)
        .env_remove("SAGE_DATA_DIR")
        // no default data folder either (a machine that ran `sage data fetch` has one)
        .env("XDG_DATA_HOME", cache.join("no-data-home"))
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap()
}

/// The shipped bench.toml cut down to `model` alone on SAGE sensitivity (no metric, no other
/// suite): one job.
pub fn sensitivity_only_config(model: &str) -> String {
    let text = std::fs::read_to_string(workspace().join("bench.toml"))
        .unwrap()
        .replace("models = [\"auto\"]", &format!("models = [{model:?}]"))
        .replace(
            "metrics = [\"levenshtein\", \"rouge\", \"jaccard\", \"bm25\"]",
            "metrics = []",
        );
    let others: Vec<&str> = SHIPPED_SUITES
        .into_iter()
        .filter(|&s| s != "sensitivity")
        .collect();
    disable_suites(&text, &others)
}

/// The suites of the shipped registry, each with its `[suites.<name>]` table in bench.toml.
pub const SHIPPED_SUITES: [&str; 12] = [
    "human-pref",
    "robustness",
    "sensitivity",
    "clustering",
    "retrieval",
    "align-sim",
    "evalrank",
    "pteb",
    "noise",
    "compression",
    "transfer",
    "throughput",
];

/// `config` (bench.toml's text) with `suites` disabled: `enabled = false` in each one's table.
pub fn disable_suites(config: &str, suites: &[&str]) -> String {
    let mut config = config.to_owned();
    for suite in suites {
        let header = format!("[suites.{suite}]\n");
        assert!(config.contains(&header), "the config has no {header:?}");
        config = config.replacen(&header, &format!("{header}enabled = false\n"), 1);
    }
    config
}

/// report.md without what a run measured rather than computed: the best buy's line ("At what
/// cost"), the quality-and-cost table, and each model's embedding work (seconds, cache hits).
/// Two runs of the same jobs (sharded, killed and resumed) agree on the rest byte for byte.
pub fn stable_report(markdown: &str) -> String {
    let mut out = String::new();
    let mut in_cost = false;
    for line in markdown.lines() {
        if line.starts_with("### Quality and cost") {
            in_cost = true;
            continue;
        }
        if in_cost && (line.starts_with('#') || line.starts_with("<details>")) {
            in_cost = false;
        }
        if in_cost || line.starts_with("**At what cost:**") || line.starts_with("- embedding, ") {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// bench-all with the environment of a fresh clone: fixtures, an empty embedding cache and an
/// offline, empty hub cache (models come from SAGE_MODELS_DIR when it has them).
pub fn fresh_clone_bench_all(out: &Path, scratch: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_xtask"));
    c.current_dir(workspace())
        .args(["bench-all", "--quick", "--sage"])
        .arg(sage())
        .arg("--out")
        .arg(out)
        .env_remove("SAGE_DATA_DIR")
        .env("XDG_DATA_HOME", scratch.join("no-data-home"))
        .env("SAGE_CACHE_DIR", scratch.join("cache"))
        .env("HF_HOME", scratch.join("hf"))
        .env("HF_HUB_OFFLINE", "1");
    c
}

/// Every file under `dir`, at any depth, sorted.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The per-job result files of a bench-all results tree (not its top-level manifests, nor the
/// job files and logs `cargo xtask slurm` keeps under `.slurm/`).
pub fn result_files(dir: &Path) -> Vec<PathBuf> {
    files_under(dir)
        .into_iter()
        .filter(|p| {
            p.extension().is_some_and(|x| x == "json")
                && p.parent() != Some(dir)
                && !p.starts_with(dir.join(".slurm"))
        })
        .collect()
}

/// `actual` holds the same result files as `expected`, with the same contents apart from when
/// and where each job ran.
pub fn assert_same_results(expected: &Path, actual: &Path) {
    let (want, got) = (result_files(expected), result_files(actual));
    assert_eq!(
        got.iter()
            .map(|p| p.strip_prefix(actual).unwrap())
            .collect::<Vec<_>>(),
        want.iter()
            .map(|p| p.strip_prefix(expected).unwrap())
            .collect::<Vec<_>>()
    );
    for (a, b) in want.iter().zip(&got) {
        assert_eq!(stable(a), stable(b), "{} differs", b.display());
    }
}

/// A result file without the fields that say when and where a job ran: the `run` block, the
/// report's `timings`, cache hit counts (`cache_hits`, at any depth: a run resumed after a
/// kill finds the paraphrases the killed one had cached; the paraphrases themselves, and every
/// score, are the same), and a throughput report's measurements (what was timed stays: the
/// lengths, their texts and tokens, the rows they came from).
pub fn stable(path: &Path) -> serde_json::Value {
    fn drop_cache_hits(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(map) => {
                map.remove("cache_hits");
                map.values_mut().for_each(drop_cache_hits);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(drop_cache_hits),
            _ => {}
        }
    }
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let map = v.as_object_mut().unwrap();
    map.remove("run");
    if let Some(report) = map
        .get_mut("report")
        .and_then(serde_json::Value::as_object_mut)
    {
        report.remove("timings");
    }
    drop_cache_hits(&mut v);
    if v["suite"] == "throughput" {
        let report = &v["report"];
        let lengths: Vec<serde_json::Value> = report["lengths"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|l| {
                serde_json::json!({
                    "length": l["length"],
                    "texts": l["texts"],
                    "mean_yardstick_tokens": l["mean_yardstick_tokens"],
                    "model_tokens": l["model_tokens"],
                })
            })
            .collect();
        v["report"] = serde_json::json!({
            "similarity": report["similarity"],
            "kind": report["kind"],
            "lengths": lengths,
            "repeats": report["repeats"],
            "cache_bypassed": report["cache_bypassed"],
            "datasets": report["datasets"],
        });
    }
    v
}
