//! What to run: the similarities (metrics, local and remote models, with their sizes), the
//! suites `sage suites` lists, and each (similarity, suite, task) job with its `sage` arguments.

use crate::*;

/// The suites a model's lower-precision variant runs: what the precision costs to run and what
/// its vectors keep against float32. The other suites' scores follow from the retention.
pub(crate) const PRECISION_SUITES: [&str; 2] = ["throughput", "compression"];

/// The metrics and models to run; "auto" expands to what `sage models` finds.
pub(crate) fn similarities(
    config: &Config,
    sage: &Path,
    quick: bool,
) -> Result<(Vec<Similarity>, Vec<Skipped>)> {
    let mut out: Vec<Similarity> = config
        .similarities
        .metrics
        .iter()
        .map(|m| Similarity {
            label: m.clone(),
            spec: m.clone(),
            is_model: false,
            precision: None,
        })
        .collect();
    let mut skipped = Vec::new();
    let mut variants = Vec::new();
    for spec in &config.similarities.models {
        if spec != "auto" {
            out.push(Similarity {
                label: sage_core::result_label(spec),
                spec: spec.clone(),
                is_model: true,
                precision: None,
            });
            continue;
        }
        let mut found_models: Vec<(u64, String, Vec<String>)> = Vec::new();
        for found in sage_listing::<sage_core::DiscoveredModel>(sage, "models")? {
            found_models.push((transformer_bytes(&found.dir), found.spec, found.precisions));
        }
        // Cheapest first, so that a run stopped early holds the most results: static models
        // (no transformer weights), then transformers by weight size. The sort is stable.
        found_models.sort_by_key(|(bytes, _, _)| *bytes);
        for (_, spec, takes) in found_models {
            if quick && !config.quick.auto_models.contains(&spec) {
                skipped.push(Skipped {
                    similarity: spec,
                    suite: "*".into(),
                    task: "*".into(),
                    reason: "--quick runs only quick.auto_models".into(),
                });
                continue;
            }
            if !out.iter().any(|s| s.spec == spec) {
                let label = sage_core::result_label(&spec);
                for precision in &config.similarities.precisions {
                    if !takes.contains(precision) {
                        continue;
                    }
                    variants.push(Similarity {
                        label: format!("{label}@{precision}"),
                        spec: spec.clone(),
                        is_model: true,
                        precision: Some(precision.clone()),
                    });
                }
                out.push(Similarity {
                    label,
                    spec,
                    is_model: true,
                    precision: None,
                });
            }
        }
    }
    // after every model as it is: a run stopped early has the plain models first
    let auto = config.similarities.models.iter().any(|m| m == "auto");
    for precision in config.similarities.precisions.iter().filter(|_| auto) {
        if !variants
            .iter()
            .any(|v| v.precision.as_ref() == Some(precision))
        {
            skipped.push(Skipped {
                similarity: format!("*@{precision}"),
                suite: "*".into(),
                task: "*".into(),
                reason: format!(
                    "similarities.precisions: no model \"auto\" found runs {precision:?} (BERT, \
                     MPNet and RoBERTa encoders run bf16 and int8)"
                ),
            });
        }
    }
    out.extend(variants);
    if out.is_empty() {
        invalid!("no similarity to run: similarities.metrics and .models are empty");
    }
    Ok((out, skipped))
}

/// Bytes of the transformer weights in a model folder (`*.safetensors`); 0 for static models.
pub(crate) fn transformer_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "safetensors"))
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}

/// Transformer weight bytes of a local model spec (a folder, or a folder name under
/// SAGE_MODELS_DIR); `None` when its folder is not found here (a hub id).
pub(crate) fn model_bytes(spec: &str) -> Option<u64> {
    let under_models = std::env::var_os("SAGE_MODELS_DIR")
        .filter(|d| !d.is_empty())
        .map(|d| PathBuf::from(d).join(spec));
    [Some(PathBuf::from(spec)), under_models]
        .into_iter()
        .flatten()
        .find(|p| p.is_dir())
        .map(|dir| transformer_bytes(&dir))
}

/// `protocol:model` of a remote spec: its label and its key in `[remote.prices]`.
pub(crate) fn remote_name(spec: &str) -> String {
    sage_core::remote_model_name(spec)
        .unwrap_or(spec)
        .to_owned()
}

/// A suite as `sage suites` lists it: what bench-all needs to plan its jobs.
#[derive(Clone, Debug, Deserialize)]
pub(crate) struct ListedSuite {
    pub(crate) name: String,
    pub(crate) takes_metrics: bool,
    /// The suite folder of its results: `<similarity>/<result_suite>/<task>.json` (the task is
    /// the run's: `sage suites check` says it).
    pub(crate) result_suite: String,
    /// The suite's own estimate of a job per task it writes (`Suite::cost_hints`).
    pub(crate) cost_hints: Vec<sage_core::CostHint>,
    /// The datasets a run without any given reads (`Suite::default_datasets`), as `name/split`.
    #[serde(default)]
    pub(crate) default_datasets: Vec<String>,
    /// The datasets it reads whatever it is given (`Suite::reference_datasets`).
    #[serde(default)]
    pub(crate) reference_datasets: Vec<String>,
}

/// The registry datasets (`name/split`) the configuration's runs read that are not in
/// `data_dir`: what `sage data fetch --for CONFIG` would fetch.
pub(crate) fn missing_datasets(
    config: &Config,
    suites: &[ListedSuite],
    data_dir: &Path,
) -> Vec<String> {
    let defaults: Vec<(String, Vec<String>, Vec<String>)> = suites
        .iter()
        .map(|s| {
            (
                s.name.clone(),
                s.default_datasets.clone(),
                s.reference_datasets.clone(),
            )
        })
        .collect();
    let root = sage_data::DataRoot::new(data_dir);
    config
        .datasets_needed(&defaults)
        .into_iter()
        .filter(|d| {
            let (name, split) = d
                .split_once('/')
                .map_or((d.as_str(), None), |(n, s)| (n, Some(s)));
            match sage_data::entry(name) {
                Some(entry) => match split {
                    Some(split) => !root.is_local(entry, split),
                    None => entry.splits.iter().any(|s| !root.is_local(entry, s)),
                },
                None => false,
            }
        })
        .collect()
}

/// One JSON object per line of `sage <command>`'s output.
pub(crate) fn sage_listing<T: serde::de::DeserializeOwned>(
    sage: &Path,
    command: &str,
) -> Result<Vec<T>> {
    let listing = sage_stdout(Command::new(sage).arg(command), &format!("sage {command}"))?;
    String::from_utf8_lossy(&listing)
        .lines()
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_str(line).map_err(|e| {
                BenchError::sage(
                    format!("sage {command}"),
                    format!("line {}: {line:?}: {e}", i + 1),
                )
            })
        })
        .collect()
}

/// A `device = "cuda"` run asks its `sage` for the GPU (`sage gpu`) before anything else runs
/// it, so that a machine where the GPU cannot be used ends in the one line saying why (no
/// GPU, a driver too old, no driver, a CUDA-less build) before any download or job.
pub(crate) fn check_gpu(sage: &Path) -> Result<()> {
    const WHAT: &str = "device = \"cuda\"";
    let output = Command::new(sage)
        .arg("gpu")
        .output()
        .map_err(|e| BenchError::sage(WHAT, format!("cannot run {}: {e}", sage.display())))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let line = stderr
            .trim()
            .lines()
            .last()
            .unwrap_or("`sage gpu` failed with no message");
        return Err(BenchError::sage(WHAT, gpu_refusal(line)));
    }
    #[derive(Deserialize)]
    struct Gpu {
        gpu: usize,
        name: String,
        free_bytes: u64,
    }
    if let Ok(gpu) = serde_json::from_slice::<Gpu>(&output.stdout) {
        eprintln!(
            "bench-all: on cuda:{} {} ({:.1} GiB free)",
            gpu.gpu,
            gpu.name,
            gpu.free_bytes as f64 / (1u64 << 30) as f64
        );
    }
    Ok(())
}

/// `sage gpu`'s last line of error as bench-all says it. A CUDA build whose libraries the
/// dynamic loader cannot find never reaches its own check: the loader's line is turned into
/// what to do.
pub(crate) fn gpu_refusal(line: &str) -> String {
    const LOADER: &str = "error while loading shared libraries: ";
    if let Some(at) = line.find(LOADER) {
        let library = line[at + LOADER.len()..]
            .split(':')
            .next()
            .unwrap_or("")
            .trim();
        return if library.starts_with("libcuda.so") {
            format!(
                "the NVIDIA driver is not installed here ({library} not found): sage's CUDA \
                 build starts only where it is; run without device = \"cuda\" on this machine"
            )
        } else {
            format!(
                "the CUDA library {library} is not found: put the CUDA toolkit's lib folder on \
                 LD_LIBRARY_PATH"
            )
        };
    }
    line.trim_start_matches("sage: error: ").to_owned()
}

/// The suites `sage` registers, in its order (`sage suites`).
pub(crate) fn listed_suites(sage: &Path) -> Result<Vec<ListedSuite>> {
    sage_listing(sage, "suites")
}

/// The metrics `sage` registers (`sage metrics`).
pub(crate) fn listed_metrics(sage: &Path) -> Result<Vec<String>> {
    #[derive(Deserialize)]
    struct Listed {
        name: String,
    }
    Ok(sage_listing::<Listed>(sage, "metrics")?
        .into_iter()
        .map(|m| m.name)
        .collect())
}

/// One run of a suite as bench-all plans it: the suite, the options and datasets the
/// configuration gives it, and what `sage suites check` said of them.
#[derive(Clone, Debug)]
pub(crate) struct SuiteRun {
    /// The suite, as `sage run` takes it.
    pub(crate) suite: String,
    pub(crate) takes_metrics: bool,
    pub(crate) datasets: Vec<String>,
    pub(crate) options: serde_json::Map<String, Value>,
    /// Where the run's result goes: `<similarity>/<result_suite>/<result_task>.json`.
    pub(crate) result_suite: String,
    pub(crate) result_task: String,
    /// What this machine lacks for the run (a model not fetched): its jobs are skipped so.
    pub(crate) missing: Option<String>,
    /// The suite estimates a model's job of this run at [`LONG_JOB_SECONDS`] or more.
    pub(crate) long: bool,
}

/// A job its suite estimates at an hour or more on the reference host (PTEB's paraphrasing) runs
/// after every shorter one: the rest of the run should not wait on it, and what it makes (the
/// paraphrases) is cached for every model alike.
pub(crate) const LONG_JOB_SECONDS: f64 = 3_600.0;

/// What `sage suites check` says of a run.
#[derive(Deserialize)]
struct Checked {
    result_suite: String,
    result_task: String,
    missing: Option<String>,
}

/// Every run the configuration asks of the suites `sage` lists, in the listing's order, each
/// checked by `sage suites check` before any job starts: an option the suite refuses is an error
/// naming the configuration's table.
pub(crate) fn suite_runs(
    config: &Config,
    suites: &[ListedSuite],
    sage: &Path,
) -> Result<Vec<SuiteRun>> {
    let mut runs = Vec::new();
    for suite in suites {
        let table = config.suites.get(&suite.name);
        if table.is_some_and(|t| !t.enabled) {
            continue;
        }
        for options in config.runs_of(&suite.name) {
            let listing = sage_stdout(
                Command::new(sage)
                    .args(["suites", "check", &suite.name, "--options"])
                    .arg(Value::Object(options.clone()).to_string()),
                &format!("sage suites check {}", suite.name),
            )
            .map_err(|e| {
                BenchError::Invalid(format!("{}: suites.{}: {e}", config.origin, suite.name))
            })?;
            let checked: Checked = serde_json::from_slice(&listing)
                .map_err(|e| BenchError::sage(format!("sage suites check {}", suite.name), e))?;
            let long = suite
                .cost_hints
                .iter()
                .any(|h| h.task == checked.result_task && h.model_seconds >= LONG_JOB_SECONDS);
            runs.push(SuiteRun {
                suite: suite.name.clone(),
                takes_metrics: suite.takes_metrics,
                datasets: table.map(|t| t.datasets.clone()).unwrap_or_default(),
                options,
                result_suite: checked.result_suite,
                result_task: checked.result_task,
                missing: checked.missing,
                long,
            });
        }
    }
    Ok(runs)
}

/// Every (similarity, suite run) job with its `sage` arguments, one generic form for every
/// suite: `run NAME --similarity S --seed N --data-dir D [--dataset X]... [--options JSON]` and
/// the model flags. What a similarity cannot run goes to `skipped`, with the reason.
pub(crate) fn plan(
    config: &Config,
    runs: &[SuiteRun],
    similarities: &[Similarity],
    data_dir: &Path,
    skipped: &mut Vec<Skipped>,
) -> Vec<Job> {
    let seed = config.seed.to_string();
    let data = data_dir.display().to_string();
    let mut jobs = Vec::new();
    for s in similarities {
        // every model flag a suite takes; the embedding cache is shared by all jobs
        let mut model_flags = Vec::new();
        if s.is_model {
            model_flags.extend(["--batch-tokens".to_owned(), config.batch_tokens.to_string()]);
            if config.device == Device::Cuda {
                model_flags.push("--cuda".to_owned());
            }
            if let Some(precision) = &s.precision {
                model_flags.extend(["--precision".to_owned(), precision.clone()]);
            }
        }
        for run in runs {
            let skip = |reason: String| Skipped {
                similarity: s.label.clone(),
                suite: run.result_suite.clone(),
                task: run.result_task.clone(),
                reason,
            };
            if s.precision.is_some() && !PRECISION_SUITES.contains(&run.suite.as_str()) {
                skipped.push(skip(format!(
                    "a precision variant runs {} only (its speed, and what its vectors keep \
                     against float32)",
                    PRECISION_SUITES.join(" and ")
                )));
                continue;
            }
            if !s.is_model && !run.takes_metrics {
                skipped.push(skip(format!(
                    "{} evaluates embedding models only (a classical metric has no vectors)",
                    run.suite
                )));
                continue;
            }
            if let (true, Some(missing)) = (s.is_model, &run.missing) {
                skipped.push(skip(missing.clone()));
                continue;
            }
            let mut args: Vec<String> = vec![
                "run".into(),
                run.suite.clone(),
                "--similarity".into(),
                s.spec.clone(),
                "--seed".into(),
                seed.clone(),
                "--data-dir".into(),
                data.clone(),
            ];
            for dataset in &run.datasets {
                args.extend(["--dataset".into(), dataset.clone()]);
            }
            if !run.options.is_empty() {
                args.extend([
                    "--options".into(),
                    Value::Object(run.options.clone()).to_string(),
                ]);
            }
            args.extend(model_flags.iter().cloned());
            jobs.push((
                run.long,
                Job {
                    similarity: s.clone(),
                    suite: run.result_suite.clone(),
                    task: run.result_task.clone(),
                    args,
                },
            ));
        }
    }
    // the user's [datasets] tables, for every job that reads datasets by name
    if let (Some(file), false) = (&config.file, config.datasets.is_empty()) {
        for (_, job) in jobs
            .iter_mut()
            .filter(|(_, j)| j.args.iter().any(|a| a == "--dataset"))
        {
            job.args
                .extend(["--datasets".into(), file.display().to_string()]);
        }
    }
    let (long, mut jobs): (Vec<_>, Vec<_>) = jobs.into_iter().partition(|(long, _)| *long);
    jobs.extend(long);
    jobs.into_iter().map(|(_, job)| job).collect()
}
