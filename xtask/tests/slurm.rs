//! `cargo xtask slurm` on a real single-node Slurm cluster (Debian's slurm-wlm, brought up in a
//! scratch folder by tests/slurm/cluster.sh and stopped by PID), plus the sharding primitives it
//! stands on (`--list-jobs`, `--shard`, `--gather`) without Slurm.
//!
//! The runs are `--quick` on the fixtures: two metrics, and the small static model and the PTEB
//! paraphraser when SAGE_MODELS_DIR has them (CI fetches them), so that shards share embedding
//! and paraphrase caches. Where Slurm is not installed (or not as root) the cluster tests print
//! a counted `skipped:` line; .ci/run installs it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common;
use common::{assert_same_results, result_files, sage, workspace};

/// A test configuration: the shipped bench.toml with two metrics and, when present, the static
/// model (and PTEB over it).
fn config(dir: &Path) -> PathBuf {
    let models = std::env::var_os("SAGE_MODELS_DIR").map(PathBuf::from);
    let model = models
        .as_ref()
        .map(|m| m.join("static-10k-64d-int8"))
        .filter(|m| m.is_dir());
    let paraphraser = models
        .as_ref()
        .is_some_and(|m| m.join("SmolLM2-135M-Instruct-GGUF").is_dir());
    let text = std::fs::read_to_string(workspace().join("bench.toml"))
        .unwrap()
        .replace(
            "metrics = [\"levenshtein\", \"rouge\", \"jaccard\", \"bm25\"]",
            "metrics = [\"levenshtein\", \"jaccard\"]",
        )
        .replace(
            "models = [\"auto\"]",
            &format!(
                "models = [{}]",
                model.map_or(String::new(), |m| format!("{:?}", m.display().to_string()))
            ),
        );
    // without the paraphraser, PTEB would only say it skipped; the throughput suite's timings
    // differ run to run
    let text = if paraphraser {
        text
    } else {
        common::disable_suites(&text, &["pteb", "throughput"])
    };
    let path = dir.join("bench.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// `cargo xtask ARGS` on the fixtures with a scratch cache folder.
fn xtask(args: &[&str], config: &Path, out: &Path, cache: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_xtask"));
    c.current_dir(workspace())
        .args(args)
        .args(["--quick", "--sage"])
        .arg(sage())
        .arg("--config")
        .arg(config)
        .arg("--out")
        .arg(out)
        .env_remove("SAGE_DATA_DIR")
        .env("SAGE_CACHE_DIR", cache)
        .env("HF_HUB_OFFLINE", "1");
    c
}

fn ok(output: Output, what: &str) -> String {
    let log = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{what} failed:\n{log}");
    log
}

/// The reference: the same configuration, unsharded.
fn unsharded(config: &Path, dir: &Path) -> PathBuf {
    let out = dir.join("unsharded");
    ok(
        xtask(&["bench-all"], config, &out, &dir.join("cache-unsharded"))
            .output()
            .unwrap(),
        "the unsharded run",
    );
    out
}

/// report.md without its lines that say when a run happened.
fn report(dir: &Path) -> String {
    common::stable_report(&std::fs::read_to_string(dir.join("report.md")).unwrap())
        .lines()
        .filter(|l| !l.contains("Generated") && !l.contains("git revision"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The job list as --list-jobs prints it, then three shards of it run one after the other and
/// gathered: each job ran in exactly one shard, the shards' cache files were folded into the
/// shared ones, and the results and report equal an unsharded run's.
#[test]
fn list_jobs_shard_and_gather_without_a_cluster() {
    let tmp = tempfile::tempdir().unwrap();
    let config = config(tmp.path());
    let expected = unsharded(&config, tmp.path());
    let (out, cache) = (tmp.path().join("sharded"), tmp.path().join("cache"));

    let listing = xtask(&["bench-all", "--list-jobs"], &config, &out, &cache)
        .output()
        .unwrap();
    let text = String::from_utf8(listing.stdout).unwrap();
    let jobs: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(jobs.len(), result_files(&expected).len(), "{text}");
    for job in &jobs {
        let id = job["id"].as_str().unwrap();
        assert_eq!(job["result"], format!("{id}.json"));
        assert!(expected.join(format!("{id}.json")).is_file(), "{id}");
        assert!(job["estimated_seconds"].as_f64().unwrap() > 0.0, "{job}");
        assert_eq!(job["done"], false);
    }

    let mut ran: Vec<String> = Vec::new();
    for index in 0..3 {
        let log = ok(
            xtask(
                &["bench-all", "--shard", &format!("{index}/3")],
                &config,
                &out,
                &cache,
            )
            .output()
            .unwrap(),
            "a shard",
        );
        assert!(log.contains(&format!("(shard {index}/3: ")), "{log}");
        assert!(
            !out.join("report.md").exists(),
            "a shard leaves the report to --gather"
        );
        let manifest: serde_json::Value = serde_json::from_slice(
            &std::fs::read(out.join(format!("bench-all.shard-{index}-of-3.json"))).unwrap(),
        )
        .unwrap();
        for j in manifest["jobs"].as_array().unwrap() {
            assert_eq!(j["status"], "done", "{j}");
            ran.push(format!(
                "{}/{}/{}",
                j["similarity"].as_str().unwrap(),
                j["suite"].as_str().unwrap(),
                j["task"].as_str().unwrap()
            ));
        }
    }
    ran.sort();
    let mut all: Vec<String> = jobs
        .iter()
        .map(|j| j["id"].as_str().unwrap().to_owned())
        .collect();
    all.sort();
    assert_eq!(ran, all, "every job in exactly one shard");

    let log = ok(
        xtask(&["bench-all", "--gather"], &config, &out, &cache)
            .output()
            .unwrap(),
        "--gather",
    );
    let with_model = jobs
        .iter()
        .any(|j| j["id"].as_str().unwrap().starts_with("static"));
    if with_model {
        assert!(log.contains("embeddings caches folded"), "{log}");
        assert!(cache.join("embeddings.redb").is_file());
    }
    let left: Vec<_> = std::fs::read_dir(&cache)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".shard-"))
        .collect();
    assert!(
        left.is_empty(),
        "shard caches removed once folded: {left:?}"
    );
    assert_same_results(&expected, &out);
    assert_eq!(report(&expected), report(&out));
    // every job is listed as done now
    let listing = xtask(&["bench-all", "--list-jobs"], &config, &out, &cache)
        .output()
        .unwrap();
    assert!(String::from_utf8(listing.stdout)
        .unwrap()
        .lines()
        .all(|l| l.contains("\"done\":true")));
}

/// A gather with a result missing names the job and reports nothing.
#[test]
fn gather_names_the_missing_jobs() {
    let tmp = tempfile::tempdir().unwrap();
    let config = config(tmp.path());
    let (out, cache) = (tmp.path().join("out"), tmp.path().join("cache"));
    ok(
        xtask(&["bench-all", "--shard", "0/2"], &config, &out, &cache)
            .output()
            .unwrap(),
        "shard 0",
    );
    let output = xtask(&["bench-all", "--gather"], &config, &out, &cache)
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{log}");
    assert!(
        log.contains("jobs have no result") && log.contains("/sage/"),
        "{log}"
    );
    assert!(!out.join("report.md").exists());
}

/// A cluster for one test: up in a scratch folder, down (by PID) when dropped.
struct Cluster {
    dir: PathBuf,
    conf: String,
}

impl Cluster {
    fn up(dir: &Path) -> Option<Cluster> {
        let script = workspace().join("xtask/tests/slurm/cluster.sh");
        let output = Command::new("bash")
            .arg(&script)
            .arg("up")
            .arg(dir)
            .output()
            .unwrap();
        if !output.status.success() {
            let why = String::from_utf8_lossy(&output.stderr);
            if output.status.code() == Some(3) {
                sage_test_env::skip("the Slurm cluster tests", why.trim());
                return None;
            }
            panic!("the test cluster did not start:\n{why}");
        }
        let stdout = String::from_utf8(output.stdout).unwrap();
        let conf = stdout
            .trim()
            .strip_prefix("export SLURM_CONF=")
            .unwrap()
            .to_owned();
        Some(Cluster {
            dir: dir.to_owned(),
            conf,
        })
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(workspace().join("xtask/tests/slurm/cluster.sh"))
            .arg("down")
            .arg(&self.dir)
            .status();
    }
}

/// A `sage` that fails the jaccard clustering job while FLAG exists: one array task fails.
fn failing_sage(dir: &Path, flag: &Path) -> PathBuf {
    let path = dir.join("sage-failing");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\nif [ -e {flag:?} ] && [ \"$1 $2 $3 $4\" = \"run clustering --similarity jaccard\" ]; then\n  echo 'sage: error: made to fail by the test' >&2\n  exit 7\nfi\nexec {sage:?} \"$@\"\n",
            flag = flag.display().to_string(),
            sage = sage().display().to_string()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    path
}

fn slurm(cluster: &Cluster, config: &Path, out: &Path, cache: &Path, sage_bin: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
        .current_dir(workspace())
        .args(["slurm", "--quick", "--shards", "3", "--sage"])
        .arg(sage_bin)
        .arg("--config")
        .arg(config)
        .arg("--out")
        .arg(out)
        .env("SLURM_CONF", &cluster.conf)
        .env_remove("SAGE_DATA_DIR")
        .env("SAGE_CACHE_DIR", cache)
        .env("HF_HUB_OFFLINE", "1")
        .output()
        .unwrap()
}

/// `--quick` as a 3-task array plus the gather job on a real cluster: the results and the
/// report equal an unsharded run's, byte for byte apart from when and where each job ran.
#[test]
fn a_slurm_array_gives_the_unsharded_results() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(cluster) = Cluster::up(&tmp.path().join("cluster")) else {
        return;
    };
    let config = config(tmp.path());
    let expected = unsharded(&config, tmp.path());
    let (out, cache) = (tmp.path().join("sharded"), tmp.path().join("cache"));
    let log = ok(
        slurm(&cluster, &config, &out, &cache, &sage()),
        "xtask slurm",
    );
    assert!(log.contains("in 3 array tasks"), "{log}");
    assert!(log.contains("completed; report in"), "{log}");
    assert_same_results(&expected, &out);
    assert_eq!(report(&expected), report(&out));
    // every task logged its share; the gather folded what the shards cached
    let submission = std::fs::read_dir(out.join(".slurm"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    for i in 0..3 {
        let shard_log = std::fs::read_to_string(submission.join(format!("shard-{i}.log"))).unwrap();
        assert!(
            shard_log.contains(&format!("(shard {i}/3: ")),
            "{shard_log}"
        );
    }
    let gather_log = std::fs::read_to_string(submission.join("gather.log")).unwrap();
    assert!(
        gather_log.contains("results present; reporting"),
        "{gather_log}"
    );
    // nothing left to do: submitting again submits nothing
    let log = ok(
        slurm(&cluster, &config, &out, &cache, &sage()),
        "xtask slurm again",
    );
    assert!(log.contains("nothing to submit"), "{log}");
}

/// One array task made to fail: the gather job is cancelled, the error names the task, its
/// Slurm job id and its log; submitting again (the cause gone) runs only the missing jobs and
/// completes the set, equal to an unsharded run's.
#[test]
fn a_failed_task_cancels_the_gather_and_a_resubmission_completes_the_set() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(cluster) = Cluster::up(&tmp.path().join("cluster")) else {
        return;
    };
    let config = config(tmp.path());
    let (out, cache) = (tmp.path().join("out"), tmp.path().join("cache"));
    let flag = tmp.path().join("fail");
    std::fs::write(&flag, "").unwrap();
    let sage_bin = failing_sage(tmp.path(), &flag);

    let output = slurm(&cluster, &config, &out, &cache, &sage_bin);
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{log}");
    assert!(log.contains("1 of 3 array tasks failed"), "{log}");
    assert!(
        log.contains("was cancelled"),
        "the gather job is cancelled:\n{log}"
    );
    let task_line = log
        .lines()
        .find(|l| l.contains("array task ") && l.contains("FAILED"))
        .unwrap_or_else(|| panic!("no failed task named:\n{log}"));
    let log_path = task_line.rsplit("log: ").next().unwrap().trim();
    assert!(
        task_line.contains("(Slurm job ") && log_path.ends_with(".log"),
        "{task_line}"
    );
    let task_log = std::fs::read_to_string(log_path).unwrap();
    assert!(task_log.contains("made to fail by the test"), "{task_log}");
    assert!(
        log.contains("jaccard sage/clustering"),
        "the failed job is named:\n{log}"
    );
    assert!(!out.join("report.md").exists());
    let done_before = result_files(&out).len();

    std::fs::remove_file(&flag).unwrap();
    let log = ok(
        slurm(&cluster, &config, &out, &cache, &sage_bin),
        "the resubmission",
    );
    assert!(
        log.contains(", 1 without a result") && log.contains("1 jobs"),
        "only the missing job is submitted:\n{log}"
    );
    assert_eq!(result_files(&out).len(), done_before + 1);
    let expected = unsharded(&config, tmp.path());
    assert_same_results(&expected, &out);
    assert_eq!(report(&expected), report(&out));
}
