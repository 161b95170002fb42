//! Soak: `cargo xtask bench-all --quick` killed with SIGKILL at seeded random moments, many
//! times in a row, and then let finish. The process group goes down each time (bench-all and the
//! `sage` job it is running), as when a node dies or a scheduler cancels a job.
//!
//! After every kill, no result file is corrupt (each `.json` in the tree parses whole) and the
//! embedding cache passes `sage cache verify`. At the end the result files equal an
//! uninterrupted run's (run metadata and timings aside) and no temporary file is left.
//!
//! SAGE_SOAK_KILLS (default 20: attempts, each killed unless it finished first) and
//! SAGE_SOAK_SEED (default 1) change the kill count and the moments; the test prints both, with
//! how many kills landed mid-job, on a line of its own.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common;
use common::{assert_same_results, files_under, fresh_clone_bench_all, result_files, sage};

/// splitmix64: a seeded sequence of kill moments with no dependency.
struct Moments(u64);

impl Moments {
    fn next_fraction(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn env_number(key: &str, default: u64) -> u64 {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The temporaries of a killed run under `dir`.
fn temporaries(dir: &Path) -> Vec<PathBuf> {
    files_under(dir)
        .into_iter()
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.ends_with(".partial") || name.ends_with(".tmp") || name.contains(".tmp-")
        })
        .collect()
}

/// The fields of a /proc `stat` file that the soak reads: comm, state and process group.
fn comm_state_group(stat: &str) -> Option<(&str, &str, &str)> {
    // pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses
    let (_, comm_on) = stat.split_once(" (")?;
    let (comm, rest) = comm_on.rsplit_once(") ")?;
    let fields: Vec<&str> = rest.split(' ').collect();
    Some((comm, fields.first()?, fields.get(2)?))
}

/// The processes of group `group`: their /proc folder, comm and state.
fn processes_of(group: u32) -> Vec<(std::path::PathBuf, String, String)> {
    let group = group.to_string();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let (comm, state, pgrp) = comm_state_group(&stat)?;
            (pgrp == group).then(|| (e.path(), comm.to_owned(), state.to_owned()))
        })
        .collect()
}

/// Whether a process of group `group` still has a living thread. SIGKILL is delivered
/// asynchronously: `kill` returns, and the killed group's `sage` may hold the cache's lock a
/// moment longer. Its main thread can already show as a zombie while other threads are still
/// exiting with the open files, so every thread is looked at.
fn group_alive(group: u32) -> bool {
    processes_of(group).iter().any(|(dir, _, _)| {
        std::fs::read_dir(dir.join("task"))
            .into_iter()
            .flatten()
            .flatten()
            .any(|thread| {
                std::fs::read_to_string(thread.path().join("stat"))
                    .ok()
                    .and_then(|s| {
                        comm_state_group(&s).map(|(_, state, _)| state != "Z" && state != "X")
                    })
                    .unwrap_or(false)
            })
    })
}

/// Whether a `sage` job of group `group` is running (its process exists and is not a zombie).
fn job_running(group: u32) -> bool {
    processes_of(group)
        .iter()
        .any(|(_, comm, state)| comm == "sage" && state != "Z")
}

/// No result file is half-written, and the cache files hold only sound entries.
fn assert_nothing_corrupt(out: &Path, cache_dir: &Path, after: &str) {
    for file in result_files(out) {
        let bytes = std::fs::read(&file).unwrap();
        let parsed: Result<serde_json::Value, _> = serde_json::from_slice(&bytes);
        assert!(
            parsed.is_ok_and(|v| v["schema"] == "sage-rs/result/1"),
            "{after}: {} is not a whole result file",
            file.display()
        );
    }
    for entry in std::fs::read_dir(cache_dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.file_name().is_some_and(|n| n == "embeddings.redb") {
            let verified = Command::new(sage())
                .args(["cache", "verify", "--cache"])
                .arg(&path)
                .output()
                .unwrap();
            assert!(
                verified.status.success(),
                "{after}: sage cache verify {}: {}{}",
                path.display(),
                String::from_utf8_lossy(&verified.stdout),
                String::from_utf8_lossy(&verified.stderr)
            );
        }
    }
}

#[test]
fn bench_all_killed_again_and_again_ends_with_the_same_files() {
    let kills_wanted = env_number("SAGE_SOAK_KILLS", 20);
    let seed = env_number("SAGE_SOAK_SEED", 1);
    let tmp = tempfile::tempdir().unwrap();

    let whole = tmp.path().join("whole");
    let start = Instant::now();
    let output = fresh_clone_bench_all(&whole, &tmp.path().join("a"))
        .output()
        .unwrap();
    let uninterrupted = start.elapsed();
    assert!(
        output.status.success(),
        "bench-all --quick failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let files = result_files(&whole);
    // the same run again, every result kept: what an attempt spends before and after its jobs
    let start = Instant::now();
    let output = fresh_clone_bench_all(&whole, &tmp.path().join("a"))
        .output()
        .unwrap();
    let overhead = start.elapsed();
    assert!(output.status.success());

    // Kill moments up to the overhead plus two K-ths of the jobs' time: most attempts are
    // killed, the jobs' time is spread over all of them, and many kills land inside a job (a
    // `sage` child writing its report, a cache commit, a rename).
    let jobs_time = uninterrupted.saturating_sub(overhead).as_secs_f64();
    let longest = overhead.as_secs_f64() + 2.0 * jobs_time / kills_wanted.max(1) as f64;
    let mut moments = Moments(seed);
    let soaked = tmp.path().join("soaked");
    let scratch = tmp.path().join("b");
    let (mut kills, mut mid_job) = (0u64, 0u64);
    for attempt in 0..=kills_wanted {
        let mut run = fresh_clone_bench_all(&soaked, &scratch);
        run.stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        let mut child = run.spawn().unwrap();
        if attempt == kills_wanted {
            assert!(child.wait().unwrap().success(), "the final run failed");
            break;
        }
        let moment = Duration::from_secs_f64(longest * moments.next_fraction());
        let started = Instant::now();
        while started.elapsed() < moment && child.try_wait().unwrap().is_none() {
            std::thread::sleep(Duration::from_millis(5));
        }
        if child.try_wait().unwrap().is_some() {
            continue; // it finished first (late attempts have little left to do)
        }
        if job_running(child.id()) {
            mid_job += 1;
        }
        let group = format!("-{}", child.id());
        let killed = Command::new("kill")
            .args(["-KILL", "--", &group])
            .status()
            .unwrap();
        assert!(killed.success(), "kill -KILL -- {group}");
        child.wait().unwrap();
        let gone = Instant::now();
        while group_alive(child.id()) {
            assert!(
                gone.elapsed() < Duration::from_secs(30),
                "group {group} survived SIGKILL"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        kills += 1;
        assert_nothing_corrupt(&soaked, &scratch.join("cache"), &format!("kill {kills}"));
    }
    assert!(
        kills * 2 >= kills_wanted,
        "only {kills} of {kills_wanted} attempts were killed"
    );

    assert_eq!(
        temporaries(&soaked),
        Vec::<PathBuf>::new(),
        "the finished run left temporary files"
    );
    assert_same_results(&whole, &soaked);
    let report = |dir: &Path| {
        common::stable_report(&std::fs::read_to_string(dir.join("report.md")).unwrap())
    };
    assert_eq!(report(&whole), report(&soaked));
    // past libtest's capture, like the skip lines: CI's log shows what the soak did
    let line = format!(
        "soak: bench-all --quick killed {kills} times (seed {seed}; {mid_job} with a `sage` job running, \
         moments up to {longest:.2} s), then finished: {} result files equal an uninterrupted \
         run's\n",
        files.len()
    );
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}
