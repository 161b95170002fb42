//! `cargo xtask metrics-throughput`: pairs/s of `sage score` for each classical metric against
//! the Python stack SAGE's authors used, timed side by side in one sitting.
//!
//! Both sides are whole processes on the same file (start, reading, tokenizing, scoring,
//! writing), best of `--repeat`, alternated so that drift hits both alike; sage on
//! `--threads` threads (1 by default, as the Python references run). The default input is SAGE's
//! robustness shape on CNN/DailyMail: each article's first 2,000 characters against its summary,
//! a word-shuffled copy and an upper-cased copy. The scores of both sides are compared too, so a
//! fast wrong number cannot pass.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use crate::{git_revision, options, workspace_root};
use sage_bench::write_file;
use sage_core::utc_timestamp;

/// Each metric, with the speed-up over its Python reference that issue 29 asks for
/// (Levenshtein's raised to 2x by issue 81).
const TARGETS: [(&str, f64); 4] = [
    ("levenshtein", 2.0),
    ("rouge", 30.0),
    ("jaccard", 30.0),
    ("bm25", 50.0),
];

/// Characters of each article kept, as SAGE's robustness documents.
const ARTICLE_CHARS: usize = 2_000;

/// The word shuffle's seed: the input is the same file every run.
const SHUFFLE_SEED: u64 = 29;

pub(crate) fn metrics_throughput(args: &[String]) -> Result<()> {
    let root = workspace_root();
    let (mut input, mut repeat, mut out_dir, mut threads, mut python, mut sage) =
        (None, 3usize, root.join("results"), 1usize, None, None);
    for (name, value) in options(
        args,
        &["input", "repeat", "out", "threads", "python", "sage"],
    )? {
        match name.as_str() {
            "sage" => sage = Some(PathBuf::from(value)),
            "input" => input = Some(PathBuf::from(value)),
            "repeat" => repeat = positive(&value, "--repeat")?,
            "threads" => threads = positive(&value, "--threads")?,
            "python" => python = Some(PathBuf::from(value)),
            _ => out_dir = PathBuf::from(value),
        }
    }
    let scratch = out_dir.join("throughput");
    std::fs::create_dir_all(&scratch)
        .with_context(|| format!("{}: cannot create", scratch.display()))?;
    let input = match input {
        Some(path) => path,
        None => default_input(&root, &scratch)?,
    };
    let pairs = std::fs::read_to_string(&input)
        .with_context(|| format!("{}: cannot read", input.display()))?
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count();
    let python = python.or_else(reference_python);
    let assets = tiktoken_assets();
    let sage = match sage {
        Some(binary) => binary,
        None => crate::build_sage(&root)?,
    };
    eprintln!(
        "{pairs} pairs from {}; sage on {threads} thread(s), best of {repeat}",
        input.display()
    );
    let mut rows = Vec::new();
    for (metric, target) in TARGETS {
        let sage_out = scratch.join(format!("{metric}.sage.jsonl"));
        let python_out = scratch.join(format!("{metric}.python.jsonl"));
        let (mut sage_best, mut python_best) = (f64::INFINITY, None::<f64>);
        for _ in 0..repeat {
            let mut command = Command::new(&sage);
            command
                .args(["score", "--metric", metric, "--input"])
                .arg(&input)
                .arg("--output")
                .arg(&sage_out)
                .env("RAYON_NUM_THREADS", threads.to_string());
            sage_best = sage_best.min(timed(&mut command, "sage score")?);
            if let (Some(python), Some(assets)) = (&python, &assets) {
                let mut command = Command::new(python);
                command
                    .arg(root.join("tests/python-reference/metrics_throughput.py"))
                    .args([metric])
                    .arg(&input)
                    .arg(&python_out)
                    .env("TIKTOKEN_RS_ASSETS", assets)
                    .env("OMP_NUM_THREADS", "1");
                let seconds = timed(&mut command, "the Python reference")?;
                python_best = Some(python_best.map_or(seconds, |b| b.min(seconds)));
            }
        }
        let sage_rate = pairs as f64 / sage_best;
        let python_rate = python_best.map(|s| pairs as f64 / s);
        let difference = match python_best {
            Some(_) => Some(largest_difference(&sage_out, &python_out, metric)?),
            None => None,
        };
        rows.push(json!({
            "metric": metric,
            "pairs": pairs,
            "sage_seconds": sage_best,
            "sage_pairs_per_second": sage_rate,
            "python_seconds": python_best,
            "python_pairs_per_second": python_rate,
            "ratio": python_rate.map(|p| sage_rate / p),
            "target_ratio": target,
            "max_abs_score_difference": difference,
        }));
    }
    print_table(&rows, python.is_some() && assets.is_some());
    if python.is_none() {
        eprintln!(
            "Python references skipped: no Python with python-Levenshtein, rouge_score, \
             rank_bm25 and tiktoken (--python, $SAGE_METRICS_PYTHON, or .ci/run's \
             ~/.cache/sage-rs/metrics-venv)"
        );
    } else if assets.is_none() {
        eprintln!("Python references skipped: tiktoken-rs's assets not found under $CARGO_HOME");
    }
    let report = json!({
        "schema": "sage-rs/metrics-throughput/2",
        "harness_version": env!("CARGO_PKG_VERSION"),
        "git_revision": git_revision(&root),
        "timestamp": utc_timestamp(),
        "host": sage_core::Host::detect(),
        "input": input.display().to_string(),
        "threads": threads,
        "note": "wall time of whole processes on the same file: `sage score` and \
                 tests/python-reference/metrics_throughput.py (one call per pair, one thread), best of repeats",
        "results": rows,
    });
    let path = scratch.join("metrics.json");
    write_file(&path, &serde_json::to_vec_pretty(&report)?)?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

fn positive(value: &str, flag: &str) -> Result<usize> {
    value
        .parse()
        .ok()
        .filter(|n| *n > 0)
        .with_context(|| format!("{flag} must be a positive integer, not {value:?}"))
}

/// Seconds the command took; its failure is an error naming `what`.
fn timed(command: &mut Command, what: &str) -> Result<f64> {
    let start = Instant::now();
    let out = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .with_context(|| format!("starting {what}"))?;
    let seconds = start.elapsed().as_secs_f64();
    if !out.status.success() {
        bail!("{what} failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(seconds)
}

/// The CNN/DailyMail pairs (SAGE_DATA_DIR), else the fixture pairs.
fn default_input(root: &Path, scratch: &Path) -> Result<PathBuf> {
    let Some(data) = std::env::var_os("SAGE_DATA_DIR") else {
        eprintln!(
            "SAGE_DATA_DIR unset: timing data/fixtures/metric_pairs.jsonl instead of CNN/DailyMail"
        );
        return Ok(root.join("data/fixtures/metric_pairs.jsonl"));
    };
    let source = PathBuf::from(data).join("summarization/cnn_dailymail/sample.jsonl");
    let text = std::fs::read_to_string(&source)
        .with_context(|| format!("{}: cannot read", source.display()))?;
    let mut lines = String::new();
    let mut rng = SHUFFLE_SEED;
    for (number, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let row: Value = serde_json::from_str(line)
            .with_context(|| format!("{}:{}: not JSON", source.display(), number + 1))?;
        let field = |key: &str| {
            row[key]
                .as_str()
                .map(str::to_owned)
                .with_context(|| format!("{}:{}: no string {key:?}", source.display(), number + 1))
        };
        let article: String = field("text")?.chars().take(ARTICLE_CHARS).collect();
        let mut words: Vec<&str> = article.split_whitespace().collect();
        shuffle(&mut words, &mut rng);
        for candidate in [field("summary")?, words.join(" "), article.to_uppercase()] {
            lines.push_str(&serde_json::to_string(
                &json!({"text1": article, "text2": candidate}),
            )?);
            lines.push('\n');
        }
    }
    let path = scratch.join("cnn_dailymail_pairs.jsonl");
    write_file(&path, lines.as_bytes())?;
    Ok(path)
}

/// Fisher–Yates with splitmix64: a seeded shuffle without a dependency.
fn shuffle<T>(items: &mut [T], state: &mut u64) {
    for i in (1..items.len()).rev() {
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        items.swap(i, (z % (i as u64 + 1)) as usize);
    }
}

/// `$SAGE_METRICS_PYTHON`, else the virtual environment `.ci/run` installs the references in
/// (once complete).
fn reference_python() -> Option<PathBuf> {
    if let Some(python) = std::env::var_os("SAGE_METRICS_PYTHON").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(python));
    }
    let venv = PathBuf::from(std::env::var_os("HOME")?).join(".cache/sage-rs/metrics-venv");
    // .ci/run marks the venv complete once every package installed
    venv.join(".complete")
        .exists()
        .then(|| venv.join("bin/python"))
}

/// tiktoken-rs's rank files (golden_metrics.py gives Python tiktoken the identical cl100k file).
fn tiktoken_assets() -> Option<PathBuf> {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| Some(PathBuf::from(std::env::var_os("HOME")?).join(".cargo")))?;
    let registry = cargo_home.join("registry/src");
    std::fs::read_dir(registry)
        .ok()?
        .flatten()
        .flat_map(|index| {
            std::fs::read_dir(index.path())
                .into_iter()
                .flatten()
                .flatten()
        })
        .map(|krate| krate.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("tiktoken-rs-"))
        })
        .map(|p| p.join("assets"))
        .find(|assets| assets.join("cl100k_base.tiktoken").is_file())
}

/// The largest |sage − Python| over the pairs (relative for BM25's raw scale is not needed:
/// both sides min–max normalise).
fn largest_difference(sage: &Path, python: &Path, metric: &str) -> Result<f64> {
    let scores = |path: &Path| -> Result<Vec<f64>> {
        std::fs::read_to_string(path)
            .with_context(|| format!("{}: cannot read", path.display()))?
            .lines()
            .enumerate()
            .map(|(i, l)| {
                serde_json::from_str::<Value>(l)
                    .ok()
                    .and_then(|v| v["score"].as_f64())
                    .with_context(|| format!("{}:{}: no score", path.display(), i + 1))
            })
            .collect()
    };
    let (ours, theirs) = (scores(sage)?, scores(python)?);
    if ours.len() != theirs.len() {
        bail!(
            "{metric}: sage wrote {} scores, the Python reference {}",
            ours.len(),
            theirs.len()
        );
    }
    Ok(ours
        .iter()
        .zip(&theirs)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max))
}

fn print_table(rows: &[Value], with_python: bool) {
    eprintln!();
    eprintln!(
        "| metric | Python reference pairs/s | sage pairs/s | ratio | target | max |Δ score| |"
    );
    eprintln!("|---|---:|---:|---:|---:|---:|");
    for row in rows {
        let number = |key: &str| row[key].as_f64();
        let ratio = number("ratio");
        let target = number("target_ratio").unwrap_or(f64::NAN);
        let verdict = match ratio {
            Some(r) if r >= target => "met",
            Some(_) => "NOT met",
            None => "no reference",
        };
        eprintln!(
            "| {} | {} | {:.0} | {} | ≥ {target}× ({verdict}) | {} |",
            row["metric"].as_str().unwrap_or("?"),
            number("python_pairs_per_second").map_or("—".into(), |p| format!("{p:.0}")),
            number("sage_pairs_per_second").unwrap_or(f64::NAN),
            ratio.map_or("—".into(), |r| format!("{r:.1}×")),
            number("max_abs_score_difference").map_or("—".into(), |d| format!("{d:.1e}")),
        );
    }
    if !with_python {
        eprintln!("(no Python reference measured: ratios cannot be given)");
    }
}
