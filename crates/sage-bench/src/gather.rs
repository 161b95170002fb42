//! The end of a run: `sage report`, and `--gather` after a sharded run.

use crate::*;

/// `sage report DIR`.
pub(crate) fn report(sage: &Path, out: &Path) -> Result<()> {
    let status = Command::new(sage)
        .arg("report")
        .arg(out)
        .status()
        .map_err(|e| {
            BenchError::sage(
                format!("{} report", sage.display()),
                format!("cannot run: {e}"),
            )
        })?;
    if !status.success() {
        return Err(BenchError::sage(
            format!("sage report {}", out.display()),
            "failed (its error is above)",
        ));
    }
    Ok(())
}

/// `--gather`: after every shard ran, folds the shards' cache files into the shared caches
/// (checked, idempotent; the shard files are removed once folded), checks that every selected
/// job has its result, writes bench-all.json from the results and the shards' manifests, and
/// runs `sage report`. A missing result is an error naming the job; nothing is reported then.
pub(crate) fn gather(
    inv: &Invocation,
    jobs: &[Job],
    sage: &Path,
    context: &RunContext,
) -> Result<()> {
    let out = &inv.out;
    let cache_dir = sage_cache::cache_dir();
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
                .map_err(|e| BenchError::file(file, "cannot remove once merged", e))?;
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
        for j in crate::manifest::read_jobs(&entry.path())? {
            recorded.insert(j.id(), (j.status, j.seconds));
        }
        shard_manifests.push(name);
    }
    shard_manifests.sort();
    let job_records: Vec<JobRecord> = jobs
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
            JobRecord {
                similarity: j.similarity.label.clone(),
                suite: j.suite.clone(),
                task: j.task.clone(),
                status,
                seconds,
            }
        })
        .collect();
    let manifest = Manifest {
        gathered_from: Some(shard_manifests),
        ..manifest(inv, context, job_records)
    };
    write_file(&out.join("bench-all.json"), &to_json(&manifest))?;
    if !missing.is_empty() {
        invalid!(
            "{} of {} jobs have no result (re-run them: the same command without --gather, or `cargo xtask slurm` again): {}",
            missing.len(),
            jobs.len(),
            missing.join(", ")
        );
    }
    eprintln!("bench-all: all {} results present; reporting", jobs.len());
    report(sage, out)
}
