//! Running the jobs: the remote-cost plan, progress bars, one `sage` process per job, the
//! result envelope written atomically, stale temporaries swept, and the timing table.

use sage_core::RemotePlan;

use crate::*;

pub(crate) struct RunContext {
    pub(crate) revision: Option<String>,
    pub(crate) host: sage_core::Host,
    pub(crate) seed: u64,
    pub(crate) data_dir: PathBuf,
    pub(crate) quick: bool,
    pub(crate) max_cost_usd: Option<f64>,
    pub(crate) prices: BTreeMap<String, f64>,
    /// A shard's own cache files, and the folder of the others it reads (see [`Shard`]).
    pub(crate) caches: Option<(Shard, PathBuf)>,
}

impl RunContext {
    /// A shard's embedding cache flags for a model job: its own file, the others read. Not
    /// recorded in the result (a sharded run's results equal an unsharded one's).
    pub(crate) fn cache_args(&self, job: &Job) -> Vec<String> {
        let Some((shard, dir)) = &self.caches else {
            return Vec::new();
        };
        if !job.similarity.is_model {
            return Vec::new();
        }
        let (embeddings, _) = shard.cache_files(dir);
        vec![
            "--cache".to_owned(),
            embeddings.display().to_string(),
            "--read-caches".to_owned(),
            dir.display().to_string(),
        ]
    }

    /// A shard's paraphrase cache for a model job, through the environment
    /// (`SAGE_PARAPHRASE_CACHE`, `SAGE_READ_PARAPHRASE_CACHES`): a suite that paraphrases reads
    /// it, the others ignore it, so no job needs to be told apart.
    pub(crate) fn cache_env(&self, job: &Job) -> Vec<(&'static str, PathBuf)> {
        let Some((shard, dir)) = &self.caches else {
            return Vec::new();
        };
        if !job.similarity.is_model {
            return Vec::new();
        }
        let (_, paraphrases) = shard.cache_files(dir);
        vec![
            ("SAGE_PARAPHRASE_CACHE", paraphrases),
            ("SAGE_READ_PARAPHRASE_CACHES", dir.clone()),
        ]
    }

    /// `--price P` for a remote model priced in `[remote.prices]`.
    pub(crate) fn price_args(&self, spec: &str) -> Vec<String> {
        if !sage_core::is_remote_spec(spec) {
            return Vec::new();
        }
        self.prices
            .get(&remote_name(spec))
            .map(|p| vec!["--price".to_owned(), p.to_string()])
            .unwrap_or_default()
    }
}

/// `sage ... --plan` of a remote job: what it would send and cost, sending nothing.
pub(crate) fn job_plan(job: &Job, sage: &Path, context: &RunContext) -> Result<RemotePlan> {
    let plan = sage_stdout(
        Command::new(sage)
            .args(&job.args)
            .args(context.price_args(&job.similarity.spec))
            .arg("--plan"),
        &format!("planning {}", job.id()),
    )?;
    serde_json::from_slice(&plan).map_err(|e| {
        BenchError::sage(
            format!("planning {}", job.id()),
            format!("unreadable plan: {e}"),
        )
    })
}

/// Runs a `sage` command to its end and returns its standard output; a failure is an error that
/// says `what` failed and gives sage's last line of standard error (its message).
pub(crate) fn sage_stdout(command: &mut Command, what: &str) -> Result<Vec<u8>> {
    let output = command.output().map_err(|e| {
        BenchError::sage(
            what,
            format!(
                "cannot run {}: {e}",
                Path::new(command.get_program()).display()
            ),
        )
    })?;
    if !output.status.success() {
        return Err(BenchError::sage(
            what,
            format!(
                "failed: {}",
                String::from_utf8_lossy(&output.stderr)
                    .trim()
                    .lines()
                    .last()
                    .unwrap_or("no message")
            ),
        ));
    }
    Ok(output.stdout)
}

/// What a remote job would cost: USD, or why unknown.
pub(crate) fn planned_cost(job: &Job, sage: &Path, context: &RunContext) -> Result<f64> {
    job_plan(job, sage, context)?
        .estimated_cost_usd
        .ok_or_else(|| {
            BenchError::Invalid(format!(
                "no price for {}: set it in [remote.prices] to run it under remote.max_cost_usd",
                remote_name(&job.similarity.spec)
            ))
        })
}

/// `--plan`: what each remote job still to run would send and cost; runs nothing.
pub(crate) fn print_plan(
    jobs: &[&Job],
    sage: &Path,
    out: &Path,
    overwrite: bool,
    context: &RunContext,
) -> Result<()> {
    let mut total = Some(0.0);
    let mut remote_jobs = 0;
    for job in jobs
        .iter()
        .filter(|j| sage_core::is_remote_spec(&j.similarity.spec))
    {
        remote_jobs += 1;
        let name = format!("{} {}/{}", job.similarity.label, job.suite, job.task);
        let path = job.result_path(out);
        if path.exists() && !overwrite {
            println!("{name}: kept (result exists), sends nothing");
            continue;
        }
        let plan = job_plan(job, sage, context)?;
        let cost = plan.estimated_cost_usd;
        // a plan without a model sends nothing
        let (texts, tokens, cached) = plan.plan.first().map_or((0, 0, 0), |m| {
            (m.texts_to_send, m.tokens_to_send, m.cached_texts)
        });
        println!(
            "{name}: {texts} texts, {tokens} tokens to send ({cached} cached): {}",
            cost.map_or("no price".to_owned(), |c| format!("${c:.4}"))
        );
        total = total.zip(cost).map(|(t, c)| t + c);
    }
    match (remote_jobs, total) {
        (0, _) => println!("no remote-model jobs: nothing would be sent"),
        (_, Some(t)) => println!(
            "total: about ${t:.4} (an upper bound: a text several jobs share is counted in each){}",
            context
                .max_cost_usd
                .map(|m| format!("; remote.max_cost_usd = ${m}"))
                .unwrap_or_default()
        ),
        (_, None) => println!("total: unknown (a model has no price: set it in [remote.prices])"),
    }
    Ok(())
}

/// A job's result file, when there is one that reads.
fn read_result(path: &Path) -> Option<ResultEnvelope> {
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
}

/// The cost a result file records, 0 when none.
fn recorded_cost(envelope: &ResultEnvelope) -> f64 {
    envelope.billed().iter().map(|(_, usd)| usd).sum()
}

pub(crate) fn bar_style() -> ProgressStyle {
    ProgressStyle::with_template("{prefix:>24} [{bar:30}] {pos}/{len} {msg}")
        .expect("a valid template")
        .progress_chars("=> ")
}

pub(crate) fn run_jobs(
    jobs: &[&Job],
    sage: &Path,
    out: &Path,
    overwrite: bool,
    context: &RunContext,
) -> Vec<Outcome> {
    let bars = MultiProgress::new();
    let interactive = std::io::stderr().is_terminal();
    let mut by_similarity: BTreeMap<String, ProgressBar> = BTreeMap::new();
    let mut by_suite: BTreeMap<&str, ProgressBar> = BTreeMap::new();
    for job in jobs {
        for (bar, prefix) in [
            (
                by_similarity
                    .entry(job.similarity.label.clone())
                    .or_insert_with(|| bars.add(ProgressBar::new(0))),
                format!("model {}", job.similarity.label),
            ),
            (
                by_suite
                    .entry(job.suite.as_str())
                    .or_insert_with(|| bars.add(ProgressBar::new(0))),
                format!("suite {}", job.suite),
            ),
        ] {
            bar.set_style(bar_style());
            bar.set_prefix(prefix);
            bar.inc_length(1);
        }
    }
    let mut outcomes = Vec::new();
    // estimated spend of this run on remote models, against remote.max_cost_usd
    let mut spent = 0.0;
    for (i, job) in jobs.iter().enumerate() {
        let path = job.result_path(out);
        let name = format!("{} {}/{}", job.similarity.label, job.suite, job.task);
        let bar_s = &by_similarity[&job.similarity.label];
        let bar_t = &by_suite[job.suite.as_str()];
        bar_s.set_message(format!("{}/{}", job.suite, job.task));
        bar_t.set_message(job.similarity.label.clone());
        let start = Instant::now();
        let ceiling = context
            .max_cost_usd
            .filter(|_| sage_core::is_remote_spec(&job.similarity.spec));
        let within_budget = match ceiling {
            _ if path.exists() && !overwrite => Ok(()),
            None => Ok(()),
            Some(ceiling) => match planned_cost(job, sage, context) {
                Ok(cost) if spent + cost <= ceiling => Ok(()),
                Ok(cost) => Err(format!(
                    "not started: estimated ${cost:.4} would take this run's remote spend from ${spent:.4} past remote.max_cost_usd = ${ceiling}"
                )),
                Err(e) => Err(format!("not started: {}", sage_core::said_once(&e))),
            },
        };
        let status = if path.exists() && !overwrite {
            "kept"
        } else if let Err(why) = within_budget {
            bars.suspend(|| eprintln!("bench-all: {name}: {why}"));
            "over budget"
        } else {
            match run_job(job, sage, &path, context) {
                Ok(()) => "done",
                Err(e) => {
                    bars.suspend(|| eprintln!("bench-all: {name}: {}", sage_core::said_once(&e)));
                    "failed"
                }
            }
        };
        // read once: what a finished job spent, and its embedding work for the timing table
        let written = read_result(&path);
        if status == "done" {
            spent += written.as_ref().map_or(0.0, recorded_cost);
        }
        let seconds = start.elapsed().as_secs_f64();
        if !interactive {
            eprintln!(
                "bench-all: [{}/{}] {name}: {status} ({seconds:.1} s)",
                i + 1,
                jobs.len()
            );
        }
        bar_s.inc(1);
        bar_t.inc(1);
        outcomes.push(Outcome {
            label: job.similarity.label.clone(),
            suite: job.suite.clone(),
            task: job.task.clone(),
            status,
            seconds,
            work: written.map(|e| e.run.embedding).unwrap_or_default(),
        });
    }
    for bar in by_similarity.values().chain(by_suite.values()) {
        bar.finish();
    }
    outcomes
}

/// Removes the temporary files a killed run left in the results tree: `NAME.<pid>.partial` and
/// `NAME.<pid>.tmp` (bench-all's), `NAME.tmp-<pid>` and `.NAME.<pid>.tmp` (sage's), whose process
/// is gone. Only on Linux, where /proc tells which processes live; elsewhere they stay, and
/// nothing reads them. Returns how many were removed.
pub(crate) fn sweep_stale_temporaries(out: &Path) -> usize {
    fn pid_of(name: &str) -> Option<u32> {
        if let Some((_, pid)) = name.rsplit_once(".tmp-") {
            return pid.parse().ok();
        }
        let stem = name
            .strip_suffix(".partial")
            .or_else(|| name.strip_suffix(".tmp"))?;
        stem.rsplit_once('.')?.1.parse().ok()
    }
    let proc = Path::new("/proc");
    if !proc.join("self").exists() {
        return 0;
    }
    let mut removed = 0;
    let mut stack = vec![out.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
                continue;
            }
            let name = entry.file_name();
            let Some(pid) = name.to_str().and_then(pid_of) else {
                continue;
            };
            if !process_lives(proc, pid) && std::fs::remove_file(&path).is_ok() {
                removed += 1;
            }
        }
    }
    removed
}

/// Whether process `pid` can still write a file: `/proc/<pid>` exists for it, and it is not a
/// zombie (a killed `sage` whose parent died too stays one until an init reaps it, and a
/// container's init may never do so) nor a thread of another process (`/proc/<tid>` resolves
/// too, and threads share the pid numbers).
pub(crate) fn process_lives(proc: &Path, pid: u32) -> bool {
    let Ok(status) = std::fs::read_to_string(proc.join(pid.to_string()).join("status")) else {
        return false;
    };
    let field = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .map(str::trim)
    };
    let leader = field("Tgid:").and_then(|t| t.parse::<u32>().ok()) == Some(pid);
    let dead = field("State:").is_some_and(|s| s.starts_with('Z') || s.starts_with('X'));
    leader && !dead
}

/// Runs one job and writes its result file atomically; nothing is written on failure.
pub(crate) fn run_job(job: &Job, sage: &Path, path: &Path, context: &RunContext) -> Result<()> {
    let dir = path.parent().expect("a result path has a folder");
    std::fs::create_dir_all(dir).map_err(|e| BenchError::file(dir, "cannot create", e))?;
    // per process: a killed run's orphaned `sage` cannot collide with the re-run's
    let report_path = path.with_extension(format!("report.{}.partial", std::process::id()));
    let start = Instant::now();
    let output = Command::new(sage)
        .args(&job.args)
        .args(context.price_args(&job.similarity.spec))
        .args(context.cache_args(job))
        .envs(context.cache_env(job))
        .arg("--output")
        .arg(&report_path)
        .output()
        .map_err(|e| BenchError::sage(sage.display().to_string(), format!("cannot run: {e}")))?;
    let wall_seconds = start.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        let _ = std::fs::remove_file(&report_path);
        return Err(BenchError::sage(
            format!(
                "sage {}",
                job.args
                    .iter()
                    .map(|a| redact_url(a))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            format!(
                "failed: {}",
                stderr.trim().lines().last().unwrap_or("no message")
            ),
        ));
    }
    // `sage run --output` wrote the result file: the report, the rows it used and its notes;
    // this run knows better what the job is called, how it was asked for, and where it ran
    let written: Result<ResultEnvelope> = std::fs::read(&report_path)
        .map_err(|e| BenchError::file(&report_path, "cannot read", e))
        .and_then(|bytes| {
            serde_json::from_slice(&bytes)
                .map_err(|e| BenchError::file(&report_path, "not a result file", e))
        });
    let _ = std::fs::remove_file(&report_path);
    let written = written?;
    let envelope = ResultEnvelope {
        similarity: SimilarityRecord::of_spec(
            &job.similarity.spec,
            if job.similarity.is_model {
                SimilarityKind::Model
            } else {
                SimilarityKind::Metric
            },
        ),
        suite: job.suite.to_owned(),
        task: job.task.clone(),
        seed: context.seed,
        quick: context.quick,
        parameters: Parameters {
            sage_args: job
                .args
                .iter()
                .map(|a| sage_redact::home_relative(&redact_url(a)))
                .collect(),
            data_dir: sage_redact::home_relative(&context.data_dir.display().to_string()),
        },
        run: RunRecord {
            timestamp: sage_core::utc_timestamp(),
            git_revision: context.revision.clone(),
            host: context.host.clone(),
            wall_seconds,
            embedding: written.run.embedding,
        },
        ..written
    };
    write_file(path, &to_json(&envelope))
}

/// Each job's wall time and, of it, the seconds its models spent embedding, with the texts they
/// embedded and the texts the cache gave back; then the run's total and each model's sum (with
/// what a remote model billed).
pub(crate) fn print_timing_table(outcomes: &[Outcome]) {
    let width = outcomes
        .iter()
        .map(|o| o.label.len())
        .max()
        .unwrap_or(10)
        .max(10);
    eprintln!(
        "\n{:<width$}  {:<22} {:>7} {:>10} {:>10} {:>9} {:>9}",
        "similarity", "suite/task", "status", "seconds", "embed s", "embedded", "cached"
    );
    let sum = |work: &mut dyn Iterator<Item = &sage_core::EmbeddingWork>| {
        work.fold((0.0, 0, 0), |(s, e, c), w| {
            (s + w.seconds, e + w.embedded, c + w.cached)
        })
    };
    let mut total = (0.0, 0.0, 0, 0);
    for o in outcomes {
        let (seconds, embedded, cached) = sum(&mut o.work.iter());
        total = (
            total.0 + o.seconds,
            total.1 + seconds,
            total.2 + embedded,
            total.3 + cached,
        );
        let (seconds, embedded, cached) = if o.work.is_empty() {
            ("—".to_owned(), "—".to_owned(), "—".to_owned())
        } else {
            (
                format!("{seconds:.1}"),
                embedded.to_string(),
                cached.to_string(),
            )
        };
        eprintln!(
            "{:<width$}  {:<22} {:>7} {:>10.1} {seconds:>10} {embedded:>9} {cached:>9}",
            o.label,
            format!("{}/{}", o.suite, o.task),
            o.status,
            o.seconds
        );
    }
    eprintln!(
        "{:<width$}  {:<22} {:>7} {:>10.1} {:>10.1} {:>9} {:>9}",
        "total", "", "", total.0, total.1, total.2, total.3
    );
    let mut models: Vec<&str> = outcomes
        .iter()
        .flat_map(|o| o.work.iter().map(|w| w.model.as_str()))
        .collect();
    models.sort_unstable();
    models.dedup();
    for model in models {
        let work: Vec<&sage_core::EmbeddingWork> = outcomes
            .iter()
            .flat_map(|o| &o.work)
            .filter(|w| w.model == model)
            .collect();
        let (seconds, embedded, cached) = sum(&mut work.iter().copied());
        let usd: Option<f64> = work.iter().filter_map(|w| w.cost_usd).reduce(|a, b| a + b);
        eprintln!(
            "embedding: {model}: {seconds:.1} s, {embedded} texts embedded, {cached} from the cache{}",
            usd.map(|u| format!(", ${u:.4} billed")).unwrap_or_default()
        );
    }
}
