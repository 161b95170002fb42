//! `cargo xtask <task>`: the project's chores (see `cargo xtask help`). A library as well as the
//! binary, so that workspace tests can run its tasks in-process.
//!
//! Chores only: building the release `sage` and handing it to bench-all (the `sage-bench`
//! library, which `sage bench-all` calls too), submitting bench-all's shards to Slurm, timing
//! the classical metrics against their Python references, building and link-checking the guide.
//! Results are JSON files carrying the host, the git revision and a timestamp, so numbers from
//! different machines and commits can be told apart.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

mod book;
mod throughput;

/// `cargo xtask help`.
pub const HELP: &str = "\
cargo xtask <task> [options]

Tasks:
  bench-all [--config bench.toml] [--quick] [--overwrite] [--out DIR] [--sage BIN] [--plan]
      Every suite `sage suites` lists (SAGE's five tasks, EvalRank, ALIGN-SIM, PTEB, and any
      a `sage` of one's own registers) on every similarity (the metrics `sage metrics` lists and
      the models `sage models` finds, or those the config names), through the release `sage`
      binary (BIN: use that one instead of building; a suite beyond the shipped ones takes its
      datasets and options from the config's [suites.<name>] table).
      Data: $SAGE_DATA_DIR, else the fixtures in data/fixtures/mirror. One result file per
      (similarity, suite, task) under DIR/<similarity>/<suite>/<task>.json (default DIR:
      results), written atomically; existing files are kept unless --overwrite, so a killed run
      resumes. --quick: each suite's small samples (quick_options, quick_datasets of its [suites.<name>] table). Ends with
      `sage report DIR` (report.md, summary.csv, report.html). The commented default
      configuration is bench.toml at the repository root. --plan: run nothing; print, per
      remote-model job, the texts and tokens it would send after the embedding cache and its
      estimated cost ([remote] in the config), and the total.
      Sharding (other machines, other processes; see docs/src/slurm.md):
      --list-jobs: print the jobs as JSON lines (id, result file, estimated seconds, done) and
      run nothing. --jobs FILE: only the jobs FILE lists (lines as --list-jobs prints them).
      --shard I/N: only share I of N, balanced by estimated cost (--costs FILE: a finished
      run's bench-all.json gives measured times), the same share in every process; its model
      jobs write their own cache files in the cache folder and read the others'; no report.
      --gather: after the shards, fold their cache files into the shared ones, check every
      result is there (an error names the missing ones) and write bench-all.json and the report.
  slurm [--config bench.toml] [--quick] [--out DIR] [--sage BIN] [--costs FILE] [--shards N]
        [--partition P] [--gpus-per-task G] [--cpus-per-task C] [--array-limit K] [--time T]
        [--dry-run] [--no-wait]
      The jobs of bench-all whose results are missing as a Slurm job array of N shards
      (default 8, at most one per job; K at a time), plus a gather job after them
      (afterok; cancelled if a task fails). Job file, scripts and logs in DIR/.slurm/<time>/.
      Waits for both and names each failed task with its Slurm id and log; submitting again
      runs only what is still missing. --dry-run: write and print the scripts, submit nothing.
  metrics-throughput [--input pairs.jsonl] [--repeat N] [--threads N] [--python PY] [--sage BIN]
                     [--out DIR]
      Build the release `sage` binary (BIN: use that one instead) and time `sage score` (RAYON_NUM_THREADS=N, default 1)
      for every classical metric against the Python references SAGE used
      (tests/python-reference/metrics_throughput.py: python-Levenshtein, rouge_score, rank_bm25,
      tiktoken; PY, else $SAGE_METRICS_PYTHON, else ~/.cache/sage-rs/metrics-venv), whole
      processes on the same file, best of N (default 3), and compare their scores. Input: a
      JSON-lines file of {\"text1\",\"text2\"} pairs; default: CNN/DailyMail from $SAGE_DATA_DIR
      (each article's first 2,000 characters against its summary, a word-shuffled and an
      upper-cased copy), else data/fixtures/metric_pairs.jsonl. Prints the table with each
      target ratio and writes DIR/throughput/metrics.json (default DIR: results) with host and
      git revision.
  book [--mdbook PATH] [--check-only]
      Check every relative link and anchor in README.md and the guide's sources (docs/src), and
      that SUMMARY.md lists every chapter; then build the guide with mdBook (PATH, else mdbook
      on PATH or in ~/.cache/sage-rs/tools/bin) into $CARGO_TARGET_DIR/book.
  help
      This text.
";

/// Runs one task: `args` as after `cargo xtask` (`["bench-all", "--quick"]`).
pub fn run(args: &[String]) -> Result<()> {
    match args.first().map(String::as_str) {
        Some("metrics-throughput") => throughput::metrics_throughput(&args[1..]),
        Some("bench-all") => {
            let invocation = bench_invocation(&args[1..])?;
            Ok(sage_bench::bench_all(&invocation, &bench_environment())?)
        }
        Some("slurm") => {
            let options = sage_bench::slurm::SlurmOptions::parse(
                &args[1..],
                workspace_root().join("results"),
            )?;
            let xtask = std::env::current_exe().context("the path of this xtask binary")?;
            Ok(sage_bench::slurm::submit(
                &options,
                &bench_environment(),
                &xtask,
            )?)
        }
        Some("book") => book::book(&args[1..]),
        Some("help" | "--help" | "-h") | None => {
            print!("{HELP}");
            Ok(())
        }
        Some(other) => bail!("unknown task {other:?}\n\n{HELP}"),
    }
}

pub(crate) fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the workspace")
        .to_owned()
}

/// The value after `flag` on the command line.
pub(crate) fn flag_value<'a>(
    it: &mut impl Iterator<Item = &'a String>,
    flag: &str,
) -> Result<String> {
    it.next()
        .cloned()
        .with_context(|| format!("{flag} needs a value"))
}

/// `--name value` options; anything else is an error.
fn options(args: &[String], known: &[&str]) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let Some(name) = flag.strip_prefix("--").filter(|n| known.contains(n)) else {
            bail!("unknown option {flag:?} (expected one of {known:?})");
        };
        let value = it.next().with_context(|| format!("{flag} needs a value"))?;
        out.push((name.to_owned(), value.clone()));
    }
    Ok(out)
}

fn build_sage(root: &Path) -> Result<PathBuf> {
    build_sage_with(root, false)
}

/// Builds the release `sage` (with the `cuda` feature when asked) and returns its path.
pub(crate) fn build_sage_with(root: &Path, cuda: bool) -> Result<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut args = vec![
        "build",
        "--release",
        "--package",
        "sage-cli",
        "--bin",
        "sage",
    ];
    if cuda {
        // without nvcc the build fails deep in a dependency's build script, pages later
        if std::env::var_os("NVCC").is_none() && !on_path("nvcc") {
            bail!(
                "device = \"cuda\" builds sage with --features cuda, which needs the CUDA \
                 toolkit's nvcc on PATH (none found): install the toolkit and set CUDA_ROOT \
                 (docs/src/gpu.md)"
            );
        }
        args.extend(["--features", "cuda"]);
    }
    let mut build = Command::new(cargo);
    build.current_dir(root).args(args);
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(set_by_cargo_run) {
            build.env_remove(name);
        }
    }
    let status = build.status().context("running cargo build")?;
    if !status.success() {
        bail!("cargo build --release of sage failed");
    }
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    Ok(target
        .join("release")
        .join(format!("sage{}", std::env::consts::EXE_SUFFIX)))
}

/// Whether an executable `program` is in one of PATH's folders.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// Whether `name` is one of the variables `cargo run` (so `cargo xtask`) gives the binary it
/// runs. The nested `cargo build` must not inherit them: cargo compares a build script's tracked
/// variables with its own environment, and ring's tracks CARGO_MANIFEST_DIR, so the release
/// build inside bench-all re-ran it and rebuilt ring, rustls, ureq, hf-hub and 21 workspace
/// crates above them, and the user's next plain `cargo build --release` rebuilt them again.
fn set_by_cargo_run(name: &str) -> bool {
    name.starts_with("CARGO_PKG_")
        || matches!(
            name,
            "CARGO_MANIFEST_DIR"
                | "CARGO_MANIFEST_PATH"
                | "CARGO_CRATE_NAME"
                | "CARGO_BIN_NAME"
                | "CARGO_PRIMARY_PACKAGE"
                | "CARGO_RUSTC_CURRENT_DIR"
                | "OUT_DIR"
        )
}

/// The commit of the tree at `root`, `<commit>-dirty` when tracked files differ from it;
/// without a repository, `$SAGE_GIT_REVISION` when set; else null.
pub(crate) fn git_revision(root: &Path) -> Option<String> {
    let git = |args: &[&str]| {
        Command::new("git")
            .current_dir(root)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    match git(&["rev-parse", "HEAD"]) {
        // results of uncommitted code must not pass for the commit's
        Some(commit) => {
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|changes| !changes.is_empty());
            Some(if dirty {
                format!("{commit}-dirty")
            } else {
                commit
            })
        }
        // a source tree copied without its repository (a GPU box, a tarball): the caller may
        // say which commit it is
        None => std::env::var("SAGE_GIT_REVISION")
            .ok()
            .filter(|r| !r.trim().is_empty()),
    }
}

/// bench-all's options as after `cargo xtask bench-all`: results under the checkout's
/// `results` unless `--out` says otherwise.
pub(crate) fn bench_invocation(args: &[String]) -> Result<sage_bench::Invocation> {
    Ok(sage_bench::Invocation::parse(
        args,
        workspace_root().join("results"),
    )?)
}

/// bench-all in this checkout: the release `sage` built from it (with CUDA when the
/// configuration asks), its fixtures as the data of last resort, its git revision.
pub(crate) fn bench_environment() -> sage_bench::Environment {
    let root = workspace_root();
    sage_bench::Environment {
        sage: Box::new(|cuda| {
            build_sage_with(&workspace_root(), cuda).map_err(|e| sage_bench::BenchError::Sage {
                command: "cargo build --release -p sage-cli".to_owned(),
                message: format!("{e:#}"),
            })
        }),
        fallback_data_dir: Some(root.join("data/fixtures/mirror")),
        revision: git_revision(&root),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_revision_says_when_the_tree_differs_from_its_commit() {
        let repo = tempfile::tempdir().unwrap();
        let repo = repo.path();
        let git = |args: &[&str]| {
            let ok = Command::new("git")
                .current_dir(repo)
                .args([
                    "-c",
                    "user.name=t",
                    "-c",
                    "user.email=t@t",
                    "-c",
                    "commit.gpgsign=false",
                ])
                .args(args)
                .output()
                .unwrap()
                .status
                .success();
            assert!(ok, "git {args:?}");
        };
        git(&["init", "-q"]);
        std::fs::write(repo.join("a.txt"), "one").unwrap();
        git(&["add", "a.txt"]);
        git(&["commit", "-qm", "one"]);
        let clean = git_revision(repo);
        let commit = clean.clone().unwrap();
        assert_eq!(commit.len(), 40, "{commit}");
        // an untracked file does not make the tree dirty; a changed tracked file does
        std::fs::write(repo.join("b.txt"), "new").unwrap();
        assert_eq!(git_revision(repo), clean);
        std::fs::write(repo.join("a.txt"), "two").unwrap();
        assert_eq!(git_revision(repo), Some(format!("{commit}-dirty")));
    }
}
