//! MTEB interop: PTEB's original-condition scores written as MTEB result files, and MTEB result
//! files (a model's published scores, a local clone of MTEB's results repository) read back.
//!
//! PTEB scores each dataset on its original texts exactly as MTEB scores the task (the same main
//! score, the same split), so that score is an MTEB result and is written as one: MTEB's own
//! loader (`mteb.ResultCache(root).load_results()`) reads what [`write_original_scores`] writes
//! (tested with mteb from PyPI). The layout is that of MTEB's result cache, whose `results/`
//! folder is laid out as MTEB's results repository:
//!
//! ```text
//! <root>/results/<owner>__<model>/<revision>/<Task>.json    {"task_name", "scores": {split: [{"main_score", "hf_subset", "languages", ...}]}, "evaluation_time", ...}
//! <root>/results/<owner>__<model>/<revision>/model_meta.json
//! ```
//!
//! Main scores are on MTEB's 0–1 scale, as PTEB's. Only datasets that are MTEB tasks are written
//! ([`mteb_task_name`]); the paraphrased scores are not MTEB results and stay in PTEB's report.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use sage_core::EmbedderIdentity;

use crate::{PtebError, PtebReport, Result};

pub use crate::protocol::{mteb_task_name, CLASSIFICATION_EXPERIMENTS};

/// The revision folder MTEB uses when a model's revision is unknown.
pub const NO_REVISION: &str = "no_revision_available";

/// One MTEB task result file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MtebTaskResult {
    /// The MTEB task, e.g. `STSBenchmark`.
    pub task_name: String,
    /// The dataset's revision on the hub, when known.
    #[serde(default)]
    pub dataset_revision: Option<String>,
    /// The version of what wrote the file (MTEB's, or `sage-rs <version>`).
    #[serde(default)]
    pub mteb_version: Option<String>,
    /// Seconds the evaluation took.
    #[serde(default)]
    pub evaluation_time: Option<f64>,
    /// MTEB's emissions estimate (not measured by sage-rs: `null`).
    #[serde(default)]
    pub kg_co2_emissions: Option<f64>,
    /// Scores by split.
    pub scores: BTreeMap<String, Vec<MtebScore>>,
}

/// The scores of one split and subset.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MtebScore {
    /// The task's main score (0–1).
    pub main_score: f64,
    /// The dataset subset (`default` for monolingual tasks).
    pub hf_subset: String,
    /// ISO 639-3 with script, e.g. `eng-Latn`.
    pub languages: Vec<String>,
    /// The other scores the file carries (`cosine_spearman`, `accuracy`, ...).
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// One published (or written) main score.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PublishedScore {
    /// The model's folder name with `__` read back as `/` (`sentence-transformers/all-mpnet-base-v2`).
    pub model: String,
    /// The revision folder.
    pub revision: String,
    /// The MTEB task.
    pub task: String,
    /// The split.
    pub split: String,
    /// The subset.
    pub hf_subset: String,
    /// The main score (0–1).
    pub main_score: f64,
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> PtebError + '_ {
    move |e| PtebError::Task(format!("{}: {e}", path.display()))
}

/// Writes `value` as pretty JSON through a temporary file: a crash leaves the old file or none.
fn write_json(path: &Path, value: &impl Serialize) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value)
        .map_err(|e| PtebError::Task(format!("{}: {e}", path.display())))?;
    text.push('\n');
    Ok(sage_core::write_atomically(path, text.as_bytes())?)
}

/// The folder MTEB keeps a model's results in: `owner/name` becomes `owner__name`.
pub fn model_folder(model_id: &str) -> String {
    model_id.replace('/', "__").replace(' ', "_")
}

/// One dataset's score on its original texts, as MTEB would report it.
#[derive(Clone, Debug, PartialEq)]
pub struct OriginalScore<'a> {
    /// Registry name (`stsb`).
    pub dataset: &'a str,
    /// Split.
    pub split: &'a str,
    /// The language subset (`en-ar`); `None`: MTEB's `default`.
    pub subset: Option<&'a str>,
    /// The subset's languages, one per side (`["eng-Latn", "ara-Arab"]`); empty: English.
    pub languages: &'a [String],
    /// The main score's name (`cosine_spearman`).
    pub metric: &'a str,
    /// The main score (0–1).
    pub score: f64,
    /// Rows scored.
    pub rows: usize,
    /// Checksum of the rows scored (sage-data's [`RowSelection`](sage_data::RowSelection)): the
    /// file's `dataset_revision`, as MTEB's loader needs one.
    pub checksum: &'a str,
    /// Seconds the scoring took.
    pub seconds: f64,
}

/// The original-condition scores of a PTEB report.
pub fn original_scores(report: &PtebReport) -> Vec<OriginalScore<'_>> {
    report
        .datasets
        .iter()
        .map(|d| {
            let phase = match &d.subset {
                Some(subset) => format!("score {}/{}/{subset} original", d.dataset, d.split),
                None => format!("score {} original", d.dataset),
            };
            OriginalScore {
                dataset: &d.dataset,
                split: &d.split,
                subset: d.subset.as_deref(),
                languages: &d.languages,
                metric: &d.metric,
                score: d.original,
                rows: d.rows.used_rows,
                checksum: &d.rows.checksum,
                seconds: report
                    .timings
                    .phases
                    .iter()
                    .filter(|p| p.name == phase)
                    .map(|p| p.seconds)
                    .sum(),
            }
        })
        .collect()
}

/// Writes the original-condition score of every dataset of `report` that is an MTEB task (see
/// [`write_results`]).
pub fn write_original_scores(root: &Path, report: &PtebReport) -> Result<Vec<PathBuf>> {
    write_results(root, &report.encoder, &original_scores(report))
}

/// Writes each score whose dataset is an MTEB task as an MTEB result file in the result cache
/// `root` (under `root/results`, where MTEB's `ResultCache(root)` looks), with the model's
/// `model_meta.json`; returns the files written. Datasets sampled below their full size are
/// written too, and say so in `sage_rows` (MTEB's published scores use every row).
pub fn write_results(
    root: &Path,
    encoder: &EmbedderIdentity,
    scores: &[OriginalScore<'_>],
) -> Result<Vec<PathBuf>> {
    let revision = encoder.revision.as_deref().unwrap_or(NO_REVISION);
    let dir = root
        .join("results")
        .join(model_folder(&encoder.model_id))
        .join(model_folder(revision));
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    // one file per MTEB task: its splits, each with one entry per subset (STS17's official
    // tracks and MTEB-only pairs are two registry datasets and one task)
    let mut tasks: BTreeMap<&str, MtebTaskResult> = BTreeMap::new();
    let mut checksums: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for score in scores {
        let Some(task) = mteb_task_name(score.dataset) else {
            continue;
        };
        let mut other = BTreeMap::new();
        other.insert(score.metric.to_owned(), Value::from(score.score));
        other.insert("sage_rows".into(), Value::from(score.rows));
        let mut languages: Vec<String> = Vec::new();
        for language in score.languages {
            if !languages.contains(language) {
                languages.push(language.clone());
            }
        }
        if languages.is_empty() {
            languages.push(sage_data::languages::ENGLISH.to_owned());
        }
        let result = tasks.entry(task).or_insert_with(|| MtebTaskResult {
            task_name: task.to_owned(),
            dataset_revision: None,
            mteb_version: Some(format!("sage-rs {}", env!("CARGO_PKG_VERSION"))),
            evaluation_time: Some(0.0),
            kg_co2_emissions: None,
            scores: BTreeMap::new(),
        });
        *result.evaluation_time.get_or_insert(0.0) += score.seconds;
        result
            .scores
            .entry(score.split.to_owned())
            .or_default()
            .push(MtebScore {
                main_score: score.score,
                hf_subset: score.subset.unwrap_or("default").to_owned(),
                languages,
                other,
            });
        checksums.entry(task).or_default().push(score.checksum);
    }
    let mut written = Vec::new();
    for (task, mut result) in tasks {
        result.dataset_revision = Some(format!("sage-rows:{}", checksums[task].join(",")));
        let path = dir.join(format!("{task}.json"));
        write_json(&path, &result)?;
        written.push(path);
    }
    let meta = serde_json::json!({
        "name": encoder.model_id,
        "revision": revision,
        "release_date": null,
        "languages": [],
        "n_parameters": null,
        "memory_usage": null,
        "max_tokens": (encoder.max_length > 0).then_some(encoder.max_length),
        "embed_dim": null,
        "license": null,
        "open_source": null,
        "similarity_fn_name": "cosine",
        "framework": [],
        "loader": null,
    });
    write_json(&dir.join("model_meta.json"), &meta)?;
    Ok(written)
}

/// Every main score in an MTEB results folder (`<model>/<revision>/<Task>.json`, as MTEB's
/// results repository lays them out; a `results/` folder inside is looked into too). Files that
/// are not task results (`model_meta.json`) are passed over; a task file that does not parse is
/// an error naming it.
pub fn read_results(root: &Path) -> Result<Vec<PublishedScore>> {
    let root = if root.join("results").is_dir() {
        root.join("results")
    } else {
        root.to_path_buf()
    };
    let mut scores = Vec::new();
    for model in sorted_dirs(&root)? {
        for revision in sorted_dirs(&model)? {
            let mut files: Vec<PathBuf> = std::fs::read_dir(&revision)
                .map_err(io(&revision))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .filter(|p| p.file_name().is_some_and(|n| n != "model_meta.json"))
                .collect();
            files.sort();
            for file in files {
                let text = std::fs::read_to_string(&file).map_err(io(&file))?;
                let result: MtebTaskResult = serde_json::from_str(&text).map_err(|e| {
                    PtebError::Task(format!(
                        "{}:{}: not an MTEB task result: {e}",
                        file.display(),
                        e.line()
                    ))
                })?;
                for (split, entries) in &result.scores {
                    for entry in entries {
                        scores.push(PublishedScore {
                            model: name_of(&model).replace("__", "/"),
                            revision: name_of(&revision),
                            task: result.task_name.clone(),
                            split: split.clone(),
                            hf_subset: entry.hf_subset.clone(),
                            main_score: entry.main_score,
                        });
                    }
                }
            }
        }
    }
    Ok(scores)
}

fn name_of(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn sorted_dirs(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io(dir))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir() && !name_of(p).starts_with('.'))
        .collect();
    dirs.sort();
    Ok(dirs)
}

#[cfg(test)]
mod tests {
    use super::*;

    // sentence-transformers/all-mpnet-base-v2 on BIOSSES as MTEB published it
    // (embeddings-benchmark/results @ 87b30e96, results/sentence-transformers__all-mpnet-base-v2/
    // 84f2bcc00d77236f9e89c8a360a00fb1139bf47d/BIOSSES.json), trimmed to its first fields
    const PUBLISHED_BIOSSES: &str = r#"{
  "dataset_revision": "d3fb88f8f02e40887cd149695127462bbcf29b4a",
  "evaluation_time": 0.4459702968597412,
  "kg_co2_emissions": 7.350830206404084e-05,
  "mteb_version": "1.12.75",
  "scores": {
    "test": [
      {
        "cosine_pearson": 0.8447737230313748,
        "cosine_spearman": 0.8043195317854409,
        "hf_subset": "default",
        "languages": ["eng-Latn"],
        "main_score": 0.8043195317854409,
        "pearson": [0.844773752076867, 2.3187722900721766e-28]
      }
    ]
  },
  "task_name": "BIOSSES"
}"#;

    #[test]
    fn a_published_result_file_is_read_with_its_model_and_revision() {
        let root = tempfile::tempdir().unwrap();
        let dir = root
            .path()
            .join("results/sentence-transformers__all-mpnet-base-v2/84f2bcc0");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("BIOSSES.json"), PUBLISHED_BIOSSES).unwrap();
        std::fs::write(dir.join("model_meta.json"), r#"{"name": "x"}"#).unwrap();
        let scores = read_results(root.path()).unwrap();
        assert_eq!(
            scores,
            vec![PublishedScore {
                model: "sentence-transformers/all-mpnet-base-v2".into(),
                revision: "84f2bcc0".into(),
                task: "BIOSSES".into(),
                split: "test".into(),
                hf_subset: "default".into(),
                main_score: 0.8043195317854409,
            }]
        );
        // every field MTEB wrote survives a read and a write
        let parsed: MtebTaskResult = serde_json::from_str(PUBLISHED_BIOSSES).unwrap();
        let again: MtebTaskResult =
            serde_json::from_str(&serde_json::to_string(&parsed).unwrap()).unwrap();
        assert_eq!(again, parsed);
        assert!(parsed.scores["test"][0].other.contains_key("pearson"));
    }

    #[test]
    fn a_broken_task_file_is_named() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("m/r");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("STS12.json"), "{\n\"task_name\": \"STS12\"\n}").unwrap();
        let e = read_results(root.path()).unwrap_err().to_string();
        assert!(e.contains("STS12.json:3: not an MTEB task result"), "{e}");
    }

    #[test]
    fn original_scores_are_written_where_mtebs_loader_looks_and_read_back() {
        let mut report = crate::testing::report(
            "sentence-transformers/all-mpnet-base-v2",
            &[
                ("biosses", 0.8043, [0.7, 0.71, 0.72]),
                ("stsb", 0.8342, [0.8, 0.8, 0.8]),
                ("str2022", 0.5, [0.5, 0.5, 0.5]),
            ],
        );
        report.encoder.revision = Some("84f2bcc0".into());
        report.timings.phases.push(sage_core::Phase {
            name: "score biosses original".into(),
            seconds: 1.5,
        });
        let root = tempfile::tempdir().unwrap();
        let written = write_original_scores(root.path(), &report).unwrap();
        let dir = root
            .path()
            .join("results/sentence-transformers__all-mpnet-base-v2/84f2bcc0");
        // STR-2022 is not an MTEB task: not written
        assert_eq!(
            written,
            vec![dir.join("BIOSSES.json"), dir.join("STSBenchmark.json")]
        );
        let biosses: MtebTaskResult =
            serde_json::from_str(&std::fs::read_to_string(&written[0]).unwrap()).unwrap();
        assert_eq!(biosses.evaluation_time, Some(1.5));
        assert_eq!(biosses.scores["test"][0].other["cosine_spearman"], 0.8043);
        let meta: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("model_meta.json")).unwrap())
                .unwrap();
        assert_eq!(meta["name"], "sentence-transformers/all-mpnet-base-v2");
        let read: Vec<(String, f64)> = read_results(root.path())
            .unwrap()
            .into_iter()
            .map(|s| (s.task, s.main_score))
            .collect();
        assert_eq!(
            read,
            vec![("BIOSSES".into(), 0.8043), ("STSBenchmark".into(), 0.8342)]
        );
    }

    #[test]
    fn every_default_pteb_dataset_but_summeval_is_an_mteb_task() {
        let missing: Vec<&str> = crate::DEFAULT_DATASETS
            .iter()
            .map(|(name, _)| *name)
            .filter(|name| mteb_task_name(name).is_none())
            .collect();
        // SummEval is an MTEB task too, but PTEB scores it on its own ratings split
        assert_eq!(missing, vec!["summeval"]);
        assert_eq!(model_folder("BAAI/bge small"), "BAAI__bge_small");
    }
}
