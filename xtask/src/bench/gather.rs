//! The end of a run: `sage report`, and `--gather` after a sharded run.

use super::*;

/// `sage report DIR`.
pub(super) fn report(sage: &Path, out: &Path) -> Result<()> {
    let status = Command::new(sage)
        .arg("report")
        .arg(out)
        .status()
        .with_context(|| format!("running {} report", sage.display()))?;
    if !status.success() {
        bail!("sage report {} failed", out.display());
    }
    Ok(())
}

/// `--gather`: after every shard ran, folds the shards' cache files into the shared caches
/// (checked, idempotent; the shard files are removed once folded), checks that every selected
/// job has its result, writes bench-all.json from the results and the shards' manifests, and
/// runs `sage report`. A missing result is an error naming the job; nothing is reported then.
pub(super) fn gather(inv: &Invocation, jobs: &[Job], sage: &Path) -> Result<()> {
    let out = &inv.out;
    let cache_dir = sage_core::cache_dir();
    for (stem, flag) in [("embeddings", None), ("paraphrases", Some("--paraphrases"))] {
        let shards = shard::shard_caches(&cache_dir, stem);
        if shards.is_empty() {
            continue;
        }
        let merged = sage_stdout(
            Command::new(sage)
                .args(["cache", "merge", "--cache"])
                .arg(cache_dir.join(format!("{stem}.redb")))
                .args(flag)
                .args(&shards),
            &format!(
                "sage cache merge of {} {stem} shard files (they are kept)",
                shards.len()
            ),
        )?;
        eprintln!(
            "bench-all: {stem} caches folded: {}",
            String::from_utf8_lossy(&merged).trim()
        );
        for file in &shards {
            std::fs::remove_file(file)
                .with_context(|| format!("{}: cannot remove once merged", file.display()))?;
        }
    }
    let missing: Vec<String> = jobs
        .iter()
        .filter(|j| !j.result_path(out).exists())
        .map(Job::id)
        .collect();
    // what each shard said of its jobs: a failure's status and time
    let mut recorded: BTreeMap<String, (String, f64)> = BTreeMap::new();
    let mut shard_manifests = Vec::new();
    for entry in std::fs::read_dir(out).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !(name.starts_with("bench-all.shard-") && name.ends_with(".json")) {
            continue;
        }
        let manifest: Value = std::fs::read(entry.path())
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .with_context(|| format!("{}: not a bench-all manifest", entry.path().display()))?;
        for j in manifest["jobs"].as_array().into_iter().flatten() {
            let id = format!(
                "{}/{}/{}",
                j["similarity"].as_str().unwrap_or_default(),
                j["suite"].as_str().unwrap_or_default(),
                j["task"].as_str().unwrap_or_default()
            );
            recorded.insert(
                id,
                (
                    j["status"].as_str().unwrap_or_default().to_owned(),
                    j["seconds"].as_f64().unwrap_or(0.0),
                ),
            );
        }
        shard_manifests.push(name);
    }
    shard_manifests.sort();
    let job_records: Vec<Value> = jobs
        .iter()
        .map(|j| {
            let id = j.id();
            let wall = std::fs::read(j.result_path(out))
                .ok()
                .and_then(|b| serde_json::from_slice::<ResultEnvelope>(&b).ok())
                .map(|e| e.run.wall_seconds);
            let (status, seconds) = match (wall, recorded.get(&id)) {
                (Some(w), _) => ("done".to_owned(), w),
                (None, Some((status, seconds))) => (status.clone(), *seconds),
                (None, None) => ("missing".to_owned(), 0.0),
            };
            json!({"similarity": j.similarity.label, "suite": j.suite, "task": j.task, "status": status, "seconds": seconds})
        })
        .collect();
    let root = workspace_root();
    let manifest = json!({
        "schema": "sage-rs/bench-all/1",
        "harness_version": env!("CARGO_PKG_VERSION"),
        "git_revision": git_revision(&root),
        "timestamp": sage_core::utc_timestamp(),
        "host": sage_core::Host::detect(),
        "config": inv.config_path.as_ref().map_or("embedded bench.toml".to_owned(), |p| sage_core::redact::home_relative(&p.display().to_string())),
        "quick": inv.quick,
        "gathered_from": shard_manifests,
        "jobs": job_records,
    });
    write_atomically(
        &out.join("bench-all.json"),
        &serde_json::to_vec_pretty(&manifest)?,
    )?;
    if !missing.is_empty() {
        bail!(
            "{} of {} jobs have no result (re-run them: the same command without --gather, or `cargo xtask slurm` again): {}",
            missing.len(),
            jobs.len(),
            missing.join(", ")
        );
    }
    eprintln!("bench-all: all {} results present; reporting", jobs.len());
    report(sage, out)
}
