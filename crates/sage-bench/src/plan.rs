//! What to run: the similarities (metrics, local and remote models, with their sizes), the
//! suites `sage suites` lists, and each (similarity, suite, task) job with its `sage` arguments.

use crate::*;

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
        })
        .collect();
    let mut skipped = Vec::new();
    for spec in &config.similarities.models {
        if spec != "auto" {
            out.push(Similarity {
                label: sage_core::result_label(spec),
                spec: spec.clone(),
                is_model: true,
            });
            continue;
        }
        let mut found_models: Vec<(u64, String)> = Vec::new();
        for found in sage_listing::<Value>(sage, "models")? {
            let spec = found["spec"].as_str().unwrap_or_default().to_owned();
            let dir = Path::new(found["dir"].as_str().unwrap_or_default());
            found_models.push((transformer_bytes(dir), spec));
        }
        // Cheapest first, so that a run stopped early holds the most results: static models
        // (no transformer weights), then transformers by weight size. The sort is stable.
        found_models.sort_by_key(|(bytes, _)| *bytes);
        for (_, spec) in found_models {
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
                out.push(Similarity {
                    label: sage_core::result_label(&spec),
                    spec,
                    is_model: true,
                });
            }
        }
    }
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

/// Whether `spec` names a remote model (`openai:`, `voyage:`, `cohere:`, `gemini:`), as
/// `sage` decides it.
pub(crate) fn is_remote(spec: &str) -> bool {
    sage_core::remote_model_name(spec).is_some() && !Path::new(spec).exists()
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
    /// Where a run with default options writes: `<similarity>/<result_suite>/<result_task>.json`.
    pub(crate) result_suite: String,
    pub(crate) result_task: String,
    /// The suite's own estimate of a job per task it writes (`Suite::cost_hints`).
    pub(crate) cost_hints: Vec<sage_core::CostHint>,
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

pub(crate) fn plan(
    config: &Config,
    suites: &[ListedSuite],
    similarities: &[Similarity],
    data_dir: &Path,
    skipped: &mut Vec<Skipped>,
) -> Vec<Job> {
    let listed = |name: &str| suites.iter().any(|s| s.name == name);
    let seed = config.seed.to_string();
    let data = data_dir.display().to_string();
    let some = |n: usize| (n > 0).then(|| n.to_string());
    let mut jobs = Vec::new();
    for s in similarities {
        // every model flag a task takes; the embedding cache is shared by all jobs
        let mut model_flags = Vec::new();
        if s.is_model {
            model_flags.extend(["--batch-tokens".to_owned(), config.batch_tokens.to_string()]);
            if config.device == Device::Cuda {
                model_flags.push("--cuda".to_owned());
            }
        }
        for task in config.sage.tasks.iter().filter(|t| listed(t)) {
            let mut args: Vec<String> = vec![
                "run".into(),
                task.clone(),
                "--similarity".into(),
                s.spec.clone(),
                "--seed".into(),
                seed.clone(),
                "--data-dir".into(),
                data.clone(),
            ];
            for dataset in config.sage.datasets.get(task).into_iter().flatten() {
                args.extend(["--dataset".into(), dataset.clone()]);
            }
            match task.as_str() {
                "clustering" => args.extend([
                    "--subsets".into(),
                    config.sage.cluster_subsets.to_string(),
                    "--max-texts".into(),
                    config.sage.cluster_max_texts.to_string(),
                ]),
                "retrieval" => {
                    args.extend(["--mode".into(), config.sage.retrieval_mode.clone()]);
                    if let Some(n) = some(config.sage.retrieval_max_docs) {
                        args.extend(["--max-docs".into(), n]);
                    }
                    if let Some(n) = some(config.sage.retrieval_max_queries) {
                        args.extend(["--max-queries".into(), n]);
                    }
                }
                _ => {
                    if let Some(n) = some(config.sage.max_rows) {
                        args.extend(["--max-rows".into(), n]);
                    }
                }
            }
            args.extend(model_flags.iter().cloned());
            jobs.push(Job {
                similarity: s.clone(),
                suite: "sage".into(),
                task: task.clone(),
                args,
            });
        }
        let evalrank_levels = if listed("evalrank") {
            config.evalrank.levels.as_slice()
        } else {
            &[]
        };
        for level in evalrank_levels {
            if !s.is_model {
                skipped.push(Skipped {
                    similarity: s.label.clone(),
                    suite: "evalrank".into(),
                    task: level.clone(),
                    reason: "EvalRank ranks embedding vectors; a classical metric has none".into(),
                });
                continue;
            }
            let mut args: Vec<String> = vec![
                "run".into(),
                "evalrank".into(),
                "--level".into(),
                level.clone(),
                "--similarity".into(),
                s.spec.clone(),
                "--data-dir".into(),
                data.clone(),
            ];
            args.extend(model_flags.iter().cloned());
            jobs.push(Job {
                similarity: s.clone(),
                suite: "evalrank".into(),
                task: level.clone(),
                args,
            });
        }
        if listed("align-sim") {
            let mut args: Vec<String> = vec!["run".into(), "align-sim".into()];
            args.extend([
                "--similarity".to_owned(),
                s.spec.clone(),
                "--max-rows".into(),
                config.align_sim.max_rows.to_string(),
                "--seed".into(),
                seed.clone(),
                "--data-dir".into(),
                data.clone(),
            ]);
            args.extend(model_flags.iter().cloned());
            jobs.push(Job {
                similarity: s.clone(),
                suite: "align-sim".into(),
                task: "criteria".into(),
                args,
            });
        }
        if config.pteb.enabled && listed("pteb") {
            match (s.is_model, pteb_paraphraser(&config.pteb)) {
                (false, _) => skipped.push(Skipped {
                    similarity: s.label.clone(),
                    suite: "pteb".into(),
                    task: "mteb".into(),
                    reason: "PTEB's tasks embed texts (classification, clustering); a classical metric has no vectors".into(),
                }),
                (true, Err(reason)) => skipped.push(Skipped {
                    similarity: s.label.clone(),
                    suite: "pteb".into(),
                    task: "mteb".into(),
                    reason,
                }),
                (true, Ok(())) => {
                    let mut args: Vec<String> = vec![
                        "run".into(),
                        "pteb".into(),
                        "--similarity".into(),
                        s.spec.clone(),
                        "--paraphraser".into(),
                        config.pteb.paraphraser.clone(),
                        "--runs".into(),
                        config.pteb.runs.to_string(),
                        "--seed".into(),
                        seed.clone(),
                        "--data-dir".into(),
                        data.clone(),
                    ];
                    if !config.pteb.llm_model.is_empty() {
                        args.extend(["--llm-model".into(), config.pteb.llm_model.clone()]);
                    }
                    if let Some(n) = some(config.pteb.llm_batch) {
                        args.extend(["--llm-batch".into(), n]);
                    }
                    if let Some(n) = some(config.pteb.llm_lanes) {
                        args.extend(["--llm-lanes".into(), n]);
                    }
                    if let Some(attention) = config.pteb.llm_attention {
                        args.extend([
                            "--llm-attention".into(),
                            attention.flag_value().into(),
                        ]);
                    }
                    if let Some(n) = some(config.pteb.max_rows) {
                        args.extend(["--max-rows".into(), n]);
                    }
                    for dataset in &config.pteb.datasets {
                        args.extend(["--dataset".into(), dataset.clone()]);
                    }
                    args.extend(config.pteb.quality.flags());
                    args.extend(model_flags.iter().cloned());
                    jobs.push(Job {
                        similarity: s.clone(),
                        suite: "pteb".into(),
                        task: "mteb".into(),
                        args,
                    });
                }
            }
        }
        for suite in suites
            .iter()
            .filter(|x| !CONFIGURED_SUITES.contains(&x.name.as_str()))
        {
            let configured = config.suites.get(&suite.name);
            if configured.is_some_and(|c| !c.enabled) {
                continue;
            }
            if !s.is_model && !suite.takes_metrics {
                skipped.push(Skipped {
                    similarity: s.label.clone(),
                    suite: suite.result_suite.clone(),
                    task: suite.result_task.clone(),
                    reason: format!("{} evaluates embedding models only", suite.name),
                });
                continue;
            }
            let mut args: Vec<String> = vec![
                "run".into(),
                suite.name.clone(),
                "--similarity".into(),
                s.spec.clone(),
                "--seed".into(),
                seed.clone(),
                "--data-dir".into(),
                data.clone(),
            ];
            if let Some(configured) = configured {
                for dataset in &configured.datasets {
                    args.extend(["--dataset".into(), dataset.clone()]);
                }
                if !configured.options.is_empty() {
                    args.extend([
                        "--options".into(),
                        Value::Object(configured.options.clone()).to_string(),
                    ]);
                }
            }
            args.extend(model_flags.iter().cloned());
            jobs.push(Job {
                similarity: s.clone(),
                suite: suite.result_suite.clone(),
                task: suite.result_task.clone(),
                args,
            });
        }
    }
    // the user's [datasets] tables, for every job that reads datasets by name
    if let (Some(file), false) = (&config.file, config.datasets.is_empty()) {
        for job in jobs
            .iter_mut()
            .filter(|j| j.args.iter().any(|a| a == "--dataset"))
        {
            job.args
                .extend(["--datasets".into(), file.display().to_string()]);
        }
    }
    // PTEB last: its LLM paraphrasing takes longer than every other suite together, and its
    // paraphrases are cached and shared by all models, so the rest should not wait on it
    let (pteb, mut jobs): (Vec<Job>, Vec<Job>) = jobs.into_iter().partition(|j| j.suite == "pteb");
    jobs.extend(pteb);
    jobs
}

/// Whether the configured paraphraser and the quality record's reference encoder are there: a
/// server URL (or a remote encoder, a hub id) is taken on trust, the run says so if it is not
/// there; a model must exist as a path or under SAGE_MODELS_DIR.
pub(crate) fn pteb_paraphraser(pteb: &PtebSuite) -> std::result::Result<(), String> {
    let encoder = match pteb.quality.encoder.as_str() {
        "" => "all-MiniLM-L6-v2",
        named => named,
    };
    let path_like = encoder.starts_with(['/', '.', '~']);
    let remote_or_hub = !path_like && encoder.contains([':', '/']);
    if !remote_or_hub && !local_model(encoder) {
        return Err(format!(
            "the reference encoder of PTEB's paraphrase-quality record, {encoder:?}, not found \
             (a path, or a folder under $SAGE_MODELS_DIR: bash ../shared/tools/fetch-models.sh \
             minilm; or set pteb.quality.encoder)"
        ));
    }
    let spec = &pteb.paraphraser;
    if spec.starts_with("http://") || spec.starts_with("https://") {
        return if pteb.llm_model.is_empty() {
            Err(format!(
                "pteb.paraphraser is the server {spec}: set pteb.llm_model"
            ))
        } else {
            Ok(())
        };
    }
    if local_model(spec) {
        Ok(())
    } else {
        Err(format!(
            "paraphraser {spec:?} not found (a path, or a folder under $SAGE_MODELS_DIR: bash ../shared/tools/fetch-models.sh smollm2)"
        ))
    }
}

/// A model given as a path, or as a folder name under SAGE_MODELS_DIR, that is there.
pub(crate) fn local_model(spec: &str) -> bool {
    let under_models = std::env::var_os("SAGE_MODELS_DIR")
        .filter(|d| !d.is_empty())
        .map(|d| PathBuf::from(d).join(spec));
    Path::new(spec).exists() || under_models.is_some_and(|p| p.exists())
}
