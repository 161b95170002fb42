//! A bench-all configuration as a Slurm job array plus a gather job (`cargo xtask slurm`).
//!
//! The jobs whose results are missing are frozen, with their estimated costs, into a job file
//! (`--list-jobs` lines); array task I runs `bench-all --jobs FILE --shard I/N` (every task reads
//! the same file, so the shares are the same whatever order the tasks start in), writing its
//! results into the shared results tree (atomic files) and its own cache files. The gather job
//! waits for the whole array (`afterok`), then `bench-all --gather` folds the caches, checks
//! that every job of the configuration has its result and writes the report. If a task fails,
//! Slurm cancels the gather job (`--kill-on-invalid-dep=yes`) instead of leaving it pending;
//! this command waits, names the failed task with its log, and submitting again runs only the
//! jobs still missing.
//!
//! Nothing here is Slurm-only but the two scripts: the same `--list-jobs` / `--jobs` /
//! `--shard` / `--gather` drive a Kubernetes Indexed Job or a GNU parallel loop (docs/src/slurm.md).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use sage_core::utc_timestamp;
use serde_json::json;

use crate::error::invalid;
use crate::{shard, write_file, BenchError, Environment, Invocation, Prepared, Result};

/// What a Slurm submission is asked for: bench-all's own options, and the array's.
#[derive(Debug)]
pub struct SlurmOptions {
    /// bench-all's options (`--config`, `--quick`, `--out`, `--sage`, `--costs`), every path
    /// absolute: the array tasks run on other machines, in another folder.
    pub bench: Invocation,
    /// `--shards N`: array tasks, at most one per job (default 8).
    pub shards: usize,
    /// `--partition P`.
    pub partition: Option<String>,
    /// `--gpus-per-task G`.
    pub gpus_per_task: Option<String>,
    /// `--cpus-per-task C` (also the task's thread count).
    pub cpus_per_task: Option<String>,
    /// `--array-limit K`: tasks running at once.
    pub array_limit: Option<usize>,
    /// `--time T`: each task's time limit.
    pub time: Option<String>,
    /// `--dry-run`: write and print the scripts, submit nothing.
    pub dry_run: bool,
    /// Wait for the array and the gather job, and name each failed task (`--no-wait`: do not).
    pub wait: bool,
}

impl SlurmOptions {
    /// Reads the options (as after `slurm`); `out` is the results folder unless `--out` says
    /// another.
    pub fn parse(args: &[String], out: PathBuf) -> Result<SlurmOptions> {
        parse(args, out)
    }
}

fn parse(args: &[String], out: PathBuf) -> Result<SlurmOptions> {
    let mut options = SlurmOptions {
        bench: Invocation::default(),
        shards: 8,
        partition: None,
        gpus_per_task: None,
        cpus_per_task: None,
        array_limit: None,
        time: None,
        dry_run: false,
        wait: true,
    };
    // bench-all's own options (--config, --quick, --out, --sage, --costs) go to its parser
    let mut bench_args = Vec::new();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || crate::flag_value(&mut it, flag);
        let number = |v: String| -> Result<usize> {
            v.parse().ok().filter(|&n| n > 0).ok_or_else(|| {
                BenchError::Invalid(format!("{flag} {v:?}: expected a positive whole number"))
            })
        };
        match flag.as_str() {
            "--shards" => options.shards = number(value()?)?,
            "--partition" => options.partition = Some(value()?),
            "--gpus-per-task" => options.gpus_per_task = Some(value()?),
            "--cpus-per-task" => options.cpus_per_task = Some(value()?),
            "--array-limit" => options.array_limit = Some(number(value()?)?),
            "--time" => options.time = Some(value()?),
            "--dry-run" => options.dry_run = true,
            "--no-wait" => options.wait = false,
            "--quick" => bench_args.push(flag.clone()),
            "--config" | "--out" | "--sage" | "--costs" => {
                bench_args.extend([flag.clone(), value()?])
            }
            other => invalid!(
                "unknown option {other:?} (slurm takes --config FILE, --quick, --out DIR, --sage BIN, --costs FILE, --shards N, --partition P, --gpus-per-task G, --cpus-per-task C, --array-limit K, --time T, --dry-run, --no-wait)"
            ),
        }
    }
    let mut bench = Invocation::parse(&bench_args, out)?;
    // array tasks run on other machines, in another folder: every path they get is absolute
    let absolute = |p: &Path| {
        std::path::absolute(p).map_err(|e| BenchError::file(p, "cannot make it absolute", e))
    };
    bench.out = absolute(&bench.out)?;
    for path in [
        &mut bench.config_path,
        &mut bench.sage,
        &mut bench.costs_file,
    ]
    .into_iter()
    .flatten()
    {
        *path = absolute(path)?;
    }
    options.bench = bench;
    Ok(options)
}

/// `'text'` for bash, whatever the text holds.
fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

fn quoted_path(path: &Path) -> String {
    quoted(&path.display().to_string())
}

/// The two sbatch scripts of a submission.
struct Scripts {
    array: String,
    gather: String,
}

fn scripts(
    options: &SlurmOptions,
    xtask: &Path,
    sage: &Path,
    dir: &Path,
    shards: usize,
) -> Scripts {
    let bench = &options.bench;
    let mut common = format!(
        "--out {} --sage {}",
        quoted_path(&bench.out),
        quoted_path(sage)
    );
    if let Some(config) = &bench.config_path {
        common.push_str(&format!(" --config {}", quoted_path(config)));
    }
    if bench.quick {
        common.push_str(" --quick");
    }
    let mut resources = String::new();
    for (name, value) in [
        ("partition", &options.partition),
        ("gpus-per-task", &options.gpus_per_task),
        ("cpus-per-task", &options.cpus_per_task),
        ("time", &options.time),
    ] {
        if let Some(value) = value {
            resources.push_str(&format!("#SBATCH --{name}={value}\n"));
        }
    }
    let limit = options
        .array_limit
        .map(|k| format!("%{k}"))
        .unwrap_or_default();
    // sage's thread pool sizes itself from the machine, not from the allocation
    let threads = "if [ -n \"${SLURM_CPUS_PER_TASK:-}\" ]; then export RAYON_NUM_THREADS=\"$SLURM_CPUS_PER_TASK\"; fi\n";
    let array = format!(
        "#!/bin/bash\n\
         # written by `cargo xtask slurm`: shard $SLURM_ARRAY_TASK_ID of {shards} of the jobs in jobs.jsonl\n\
         #SBATCH --job-name=sage-bench\n\
         #SBATCH --array=0-{last}{limit}\n\
         #SBATCH --ntasks=1\n\
         #SBATCH --output={log}\n\
         {resources}\
         set -eu\n\
         {threads}\
         exec {xtask} bench-all {common} --jobs {jobs} --shard \"$SLURM_ARRAY_TASK_ID/{shards}\"\n",
        last = shards - 1,
        log = dir.join("shard-%a.log").display(),
        xtask = quoted_path(xtask),
        jobs = quoted_path(&dir.join("jobs.jsonl")),
    );
    let gather = format!(
        "#!/bin/bash\n\
         # written by `cargo xtask slurm`: after every shard succeeded, fold the caches, check every\n\
         # result is there, write the report\n\
         #SBATCH --job-name=sage-bench-gather\n\
         #SBATCH --ntasks=1\n\
         #SBATCH --output={log}\n\
         {resources}\
         set -eu\n\
         exec {xtask} bench-all {common} --gather\n",
        log = dir.join("gather.log").display(),
        xtask = quoted_path(xtask),
    );
    Scripts { array, gather }
}

/// A fresh folder for this submission's job file, scripts and logs.
fn submission_dir(out: &Path) -> Result<PathBuf> {
    let stamp = utc_timestamp().replace([':', '-'], "");
    // hidden: `sage report` reads every other folder as a similarity
    let base = out.join(".slurm");
    for n in 0.. {
        let dir = base.join(if n == 0 {
            stamp.clone()
        } else {
            format!("{stamp}-{n}")
        });
        if !dir.exists() {
            std::fs::create_dir_all(&dir)
                .map_err(|e| BenchError::file(&dir, "cannot create", e))?;
            return Ok(dir);
        }
    }
    unreachable!("some name is free")
}

/// `sbatch --parsable ARGS SCRIPT`: the job id.
fn sbatch(args: &[String], script: &Path) -> Result<String> {
    let command = format!("sbatch {}", script.display());
    let output = Command::new("sbatch")
        .arg("--parsable")
        .args(args)
        .arg(script)
        .output()
        .map_err(|e| {
            BenchError::slurm(
                &command,
                format!("cannot run it ({e}): is this a Slurm submit host? --dry-run prints the scripts"),
            )
        })?;
    if !output.status.success() {
        return Err(BenchError::slurm(
            &command,
            format!("failed: {}", String::from_utf8_lossy(&output.stderr).trim()),
        ));
    }
    // `ID` or `ID;CLUSTER`
    let stdout = String::from_utf8_lossy(&output.stdout);
    let id = stdout
        .trim()
        .split(';')
        .next()
        .unwrap_or_default()
        .to_owned();
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) {
        return Err(BenchError::slurm(
            &command,
            format!("printed no job id: {stdout:?}"),
        ));
    }
    Ok(id)
}

/// What Slurm says of a finished job or array task (`scontrol -o show job`).
#[derive(Debug, PartialEq)]
struct TaskState {
    array_task: Option<usize>,
    state: String,
    exit_code: String,
    log: Option<String>,
}

/// The `Key=Value` fields of `scontrol -o show job` lines (one per job or array task).
fn parse_scontrol(text: &str) -> Vec<TaskState> {
    text.lines()
        .filter(|l| l.contains("JobState="))
        .map(|line| {
            let field = |key: &str| {
                line.split_whitespace()
                    .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
                    .map(str::to_owned)
            };
            TaskState {
                array_task: field("ArrayTaskId").and_then(|t| t.parse().ok()),
                state: field("JobState").unwrap_or_default(),
                exit_code: field("ExitCode").unwrap_or_default(),
                log: field("StdOut"),
            }
        })
        .collect()
}

fn scontrol(id: &str) -> Vec<TaskState> {
    Command::new("scontrol")
        .args(["-o", "show", "job", id])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map_or_else(Vec::new, |o| {
            parse_scontrol(&String::from_utf8_lossy(&o.stdout))
        })
}

/// Waits until Slurm lists none of `ids` as pending or running.
fn wait_for(ids: &[&str]) -> Result<()> {
    let started = Instant::now();
    let mut said = Instant::now();
    loop {
        let output = Command::new("squeue")
            .args(["-h", "-o", "%i %T", "-j", &ids.join(",")])
            .output()
            .map_err(|e| BenchError::slurm("squeue", format!("cannot run it: {e}")))?;
        let listed = String::from_utf8_lossy(&output.stdout);
        // squeue fails once every id has left slurmctld's memory: all done then too
        if !output.status.success() || listed.trim().is_empty() {
            return Ok(());
        }
        if said.elapsed() > Duration::from_secs(60) {
            eprintln!(
                "slurm: waiting ({:.0} s): {}",
                started.elapsed().as_secs_f64(),
                listed.split_whitespace().collect::<Vec<_>>().join(" ")
            );
            said = Instant::now();
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// The last lines of a log that say what failed.
fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("failed") || l.starts_with("Error"))
        .collect();
    lines[lines.len().saturating_sub(4)..].join("\n    ")
}

/// Submits the jobs of `options.bench` whose results are missing as a Slurm job array of
/// `options.shards` tasks, each running `xtask bench-all --jobs FILE --shard I/N`, plus a gather
/// job after them; with `options.wait`, waits for both and names each failed task and its log.
/// `xtask` is the binary the scripts run (it builds nothing there: `sage` is resolved here, once).
pub fn submit(options: &SlurmOptions, env: &Environment, xtask: &Path) -> Result<()> {
    let prepared = Prepared::new(&options.bench, env)?;
    let out = &options.bench.out;
    let pending: Vec<usize> = (0..prepared.jobs.len())
        .filter(|&i| !prepared.jobs[i].result_path(out).exists())
        .collect();
    eprintln!(
        "slurm: {} jobs in the configuration, {} without a result in {}",
        prepared.jobs.len(),
        pending.len(),
        out.display()
    );
    if pending.is_empty() {
        eprintln!("slurm: nothing to submit (every result is there; `cargo xtask bench-all --gather` reports)");
        return Ok(());
    }
    let shards = options.shards.min(pending.len());
    let dir = submission_dir(out)?;
    let jobs_file: String = pending
        .iter()
        .map(|&i| {
            format!(
                "{}\n",
                shard::job_line(&prepared.jobs[i], prepared.estimates[i], false)
            )
        })
        .collect();
    write_file(&dir.join("jobs.jsonl"), jobs_file.as_bytes())?;
    let sage = std::path::absolute(&prepared.sage)
        .map_err(|e| BenchError::file(&prepared.sage, "cannot make it absolute", e))?;
    let scripts = scripts(options, xtask, &sage, &dir, shards);
    let (array_script, gather_script) = (dir.join("array.sbatch"), dir.join("gather.sbatch"));
    write_file(&array_script, scripts.array.as_bytes())?;
    write_file(&gather_script, scripts.gather.as_bytes())?;
    let estimated: f64 = pending.iter().map(|&i| prepared.estimates[i]).sum();
    eprintln!(
        "slurm: {} jobs (about {:.1} s of work) in {shards} array tasks; job file, scripts and logs in {}",
        pending.len(),
        estimated,
        dir.display()
    );
    if options.dry_run {
        println!("# {}\n{}", array_script.display(), scripts.array);
        println!(
            "# {} (submitted with --dependency=afterok:<array job> --kill-on-invalid-dep=yes)\n{}",
            gather_script.display(),
            scripts.gather
        );
        return Ok(());
    }
    let array_id = sbatch(&[], &array_script)?;
    let gather_id = sbatch(
        &[
            format!("--dependency=afterok:{array_id}"),
            "--kill-on-invalid-dep=yes".to_owned(),
        ],
        &gather_script,
    )?;
    write_file(
        &dir.join("submission.json"),
        &serde_json::to_vec_pretty(&json!({
            "array_job": array_id,
            "gather_job": gather_id,
            "shards": shards,
            "jobs": pending.len(),
            "submitted": utc_timestamp(),
        }))
        .expect("a JSON object serializes"),
    )?;
    eprintln!("slurm: submitted array job {array_id} ({shards} tasks) and gather job {gather_id}");
    if !options.wait {
        return Ok(());
    }
    wait_for(&[&array_id, &gather_id])?;
    let tasks = scontrol(&array_id);
    let mut failures = Vec::new();
    for index in 0..shards {
        let log = dir.join(format!("shard-{index}.log"));
        let state = tasks.iter().find(|t| t.array_task == Some(index));
        let manifest = out.join(format!("bench-all.shard-{index}-of-{shards}.json"));
        let failed = match state {
            Some(t) => t.state != "COMPLETED",
            // forgotten by slurmctld already: the shard's manifest says how its jobs went
            None => std::fs::read_to_string(&manifest).map_or(true, |m| m.contains("\"failed\"")),
        };
        if failed {
            failures.push(format!(
                "array task {index} (Slurm job {array_id}_{index}) {}; log: {}\n    {}",
                state.map_or("did not finish".to_owned(), |t| format!(
                    "ended {} with exit code {}",
                    t.state, t.exit_code
                )),
                log.display(),
                log_tail(&log)
            ));
        }
    }
    let gather_state = scontrol(&gather_id)
        .into_iter()
        .next()
        .map(|t| t.state)
        .unwrap_or_default();
    let gather_log = dir.join("gather.log");
    if failures.is_empty() && gather_state == "COMPLETED" {
        eprintln!(
            "slurm: all {shards} tasks and the gather job {gather_id} completed; report in {}",
            out.join("report.md").display()
        );
        return Ok(());
    }
    if failures.is_empty() {
        return Err(BenchError::Slurm(format!(
            "gather job {gather_id} ended {}; log: {}\n    {}",
            if gather_state.is_empty() {
                "without a record"
            } else {
                &gather_state
            },
            gather_log.display(),
            log_tail(&gather_log)
        )));
    }
    Err(BenchError::Slurm(format!(
        "{} of {shards} array tasks failed, so the gather job {gather_id} {}:\n  {}\nEvery result they wrote is kept; submitting again runs only the jobs still missing.",
        failures.len(),
        if gather_state == "CANCELLED" {
            "was cancelled".to_owned()
        } else {
            format!("ended {gather_state}")
        },
        failures.join("\n  ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scontrol_lines_give_each_tasks_state_and_log() {
        // the shape slurm 22.05 printed here for a 2-task array, one task failed
        let text = "JobId=12 ArrayJobId=11 ArrayTaskId=1 JobName=sage-bench JobState=FAILED Reason=NonZeroExitCode Dependency=(null) ExitCode=1:0 StdOut=/r/slurm/x/shard-1.log\n\
                    JobId=11 ArrayJobId=11 ArrayTaskId=0 JobName=sage-bench JobState=COMPLETED Reason=None ExitCode=0:0 StdOut=/r/slurm/x/shard-0.log\n";
        let states = parse_scontrol(text);
        assert_eq!(states.len(), 2);
        assert_eq!(
            states[0],
            TaskState {
                array_task: Some(1),
                state: "FAILED".into(),
                exit_code: "1:0".into(),
                log: Some("/r/slurm/x/shard-1.log".into()),
            }
        );
        assert_eq!(states[1].state, "COMPLETED");
        assert!(parse_scontrol("slurm_load_jobs error: Invalid job id specified").is_empty());
    }

    #[test]
    fn scripts_quote_paths_and_carry_the_resources() {
        let options = parse(
            &[
                "--out".into(),
                "/tmp/it's here".into(),
                "--quick".into(),
                "--partition".into(),
                "gpu".into(),
                "--gpus-per-task".into(),
                "1".into(),
                "--array-limit".into(),
                "4".into(),
                "--time".into(),
                "02:00:00".into(),
            ],
            PathBuf::from("results"),
        )
        .unwrap();
        let s = scripts(
            &options,
            Path::new("/x/xtask"),
            Path::new("/x/sage"),
            Path::new("/tmp/sub"),
            3,
        );
        assert!(s.array.contains("#SBATCH --array=0-2%4\n"), "{}", s.array);
        assert!(s.array.contains("#SBATCH --partition=gpu\n"));
        assert!(s.array.contains("#SBATCH --gpus-per-task=1\n"));
        assert!(s.array.contains("#SBATCH --time=02:00:00\n"));
        assert!(s.array.contains("#SBATCH --output=/tmp/sub/shard-%a.log\n"));
        assert!(
            s.array.contains(r"--out '/tmp/it'\''s here'"),
            "{}",
            s.array
        );
        assert!(s.array.contains("--shard \"$SLURM_ARRAY_TASK_ID/3\""));
        assert!(s.array.contains("--quick"));
        assert!(s.gather.contains("--gather") && !s.gather.contains("--array"));
        for bad in [["--shards", "0"], ["--array-limit", "x"]] {
            let args: Vec<String> = bad.iter().map(|a| a.to_string()).collect();
            assert!(parse(&args, PathBuf::from("results"))
                .unwrap_err()
                .to_string()
                .contains("positive"));
        }
    }
}
