//! `sage data`: the dataset registry and the local mirror.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Subcommand;
use sage_core::RunSeed;
use sage_data::{
    sample, DataRoot, DatasetKind, Document, DocumentSummary, LabeledPair, LabeledText, Line,
    Loaded, NegationPair, Row, RowSelection, StsPair, SummaryComparison, SummaryDocument,
    SummaryRating, TextPair, WordPair, REGISTRY,
};
use serde_json::json;

/// What to do with datasets.
#[derive(Debug, Subcommand)]
pub enum DataCommand {
    /// List every registered dataset: kind, splits, local path (and whether it is present under
    /// the data root), Hugging Face source.
    List {
        /// Data root (default: $SAGE_DATA_DIR).
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// One JSON object per dataset instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Load datasets from the local mirror and report rows, empty texts and checksums: one JSON
    /// line per dataset split. Stops at the first malformed file with its file and line.
    Check {
        /// Datasets to check (default: every registered dataset present locally).
        names: Vec<String>,
        /// Data root (default: $SAGE_DATA_DIR).
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// Use at most this many rows per split (seeded sample).
        #[arg(long)]
        max_rows: Option<usize>,
        /// Seed of the sample.
        #[arg(long, default_value_t = RunSeed::default().0)]
        seed: u64,
    },
}

fn root(data_dir: Option<PathBuf>) -> Result<DataRoot> {
    Ok(match data_dir {
        Some(dir) => DataRoot::new(dir),
        None => DataRoot::from_env()?,
    })
}

pub fn run(command: DataCommand) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match command {
        DataCommand::List { data_dir, json } => {
            let root = data_dir
                .map(DataRoot::new)
                .or_else(|| DataRoot::from_env().ok());
            for e in REGISTRY {
                let present = root
                    .as_ref()
                    .map(|r| e.splits.iter().all(|s| r.is_local(e, s)));
                if json {
                    writeln!(
                        out,
                        "{}",
                        json!({"name": e.name, "kind": e.kind, "splits": e.splits, "local": e.local, "present": present, "hub": e.hub, "description": e.description})
                    )?;
                } else {
                    let mark = match present {
                        Some(true) => "local",
                        Some(false) => "-",
                        None => "?",
                    };
                    let hub = e.hub.map_or("-", |h| h.repo);
                    writeln!(
                        out,
                        "{:<36} {:<20} {:<6} {:<26} {:<40} {}",
                        e.name,
                        e.kind.name(),
                        mark,
                        e.splits.join(","),
                        hub,
                        e.description
                    )?;
                }
            }
            Ok(())
        }
        DataCommand::Check {
            names,
            data_dir,
            max_rows,
            seed,
        } => {
            let root = root(data_dir)?;
            let selected: Vec<_> = if names.is_empty() {
                REGISTRY
                    .iter()
                    .filter(|e| e.splits.iter().any(|s| root.is_local(e, s)))
                    .collect()
            } else {
                names
                    .iter()
                    .map(|n| {
                        sage_data::entry(n).ok_or_else(|| {
                            anyhow::anyhow!("unknown dataset {n:?}; see `sage data list`")
                        })
                    })
                    .collect::<Result<_>>()?
            };
            for e in selected {
                // the splits present locally; a dataset with none reports why (through load)
                let local: Vec<&str> = e
                    .splits
                    .iter()
                    .copied()
                    .filter(|s| root.is_local(e, s))
                    .collect();
                let splits = if local.is_empty() {
                    e.splits.to_vec()
                } else {
                    local
                };
                for split in splits {
                    let report = check(&root, e.name, e.kind, split, max_rows, RunSeed(seed))?;
                    writeln!(out, "{report}")?;
                }
            }
            Ok(())
        }
    }
}

fn report<T: Row + Clone>(
    loaded: Loaded<T>,
    max_rows: Option<usize>,
    seed: RunSeed,
) -> serde_json::Value {
    let (_, selection): (Vec<T>, RowSelection) = sample(&loaded, max_rows, seed);
    let mut v = serde_json::to_value(selection).expect("serialisable");
    v["path"] = json!(loaded.path.display().to_string());
    v["empty_text_lines"] = json!(loaded.empty_text_lines.iter().take(20).collect::<Vec<_>>());
    v
}

fn check(
    root: &DataRoot,
    name: &str,
    kind: DatasetKind,
    split: &str,
    max_rows: Option<usize>,
    seed: RunSeed,
) -> Result<serde_json::Value> {
    Ok(match kind {
        DatasetKind::StsPairs => report(root.load::<StsPair>(name, split)?, max_rows, seed),
        DatasetKind::ParaphrasePairs | DatasetKind::PairClassification => {
            report(root.load::<LabeledPair>(name, split)?, max_rows, seed)
        }
        DatasetKind::NegationPairs => {
            report(root.load::<NegationPair>(name, split)?, max_rows, seed)
        }
        DatasetKind::DocumentSummary => {
            report(root.load::<DocumentSummary>(name, split)?, max_rows, seed)
        }
        DatasetKind::Documents => report(root.load::<Document>(name, split)?, max_rows, seed),
        DatasetKind::SummaryRatings | DatasetKind::SummaryAxisRatings => {
            report(root.load::<SummaryRating>(name, split)?, max_rows, seed)
        }
        DatasetKind::SummaryDocuments => {
            report(root.load::<SummaryDocument>(name, split)?, max_rows, seed)
        }
        DatasetKind::SummaryComparisons => {
            report(root.load::<SummaryComparison>(name, split)?, max_rows, seed)
        }
        DatasetKind::Clustering | DatasetKind::Classification => {
            report(root.load::<LabeledText>(name, split)?, max_rows, seed)
        }
        DatasetKind::WordSimilarity => report(root.load::<WordPair>(name, split)?, max_rows, seed),
        DatasetKind::TextPairs => report(root.load::<TextPair>(name, split)?, max_rows, seed),
        DatasetKind::Vocabulary => report(root.load::<Line>(name, split)?, max_rows, seed),
        DatasetKind::Beir => {
            let beir = root.beir(name, split)?;
            json!({
                "dataset": name, "split": split, "path": beir.dir.display().to_string(),
                "corpus": beir.corpus.len(), "queries": beir.queries.len(),
                "judgements": beir.qrels.values().map(|d| d.len()).sum::<usize>(),
                "corpus_checksum": sage_data::sample::checksum(&beir.corpus),
            })
        }
        DatasetKind::WordNet => {
            let dir = root.root().join("wordnet/dict");
            if !dir.join("index.noun").is_file() {
                bail!("{}: no WordNet database", dir.display());
            }
            json!({"dataset": name, "split": split, "path": dir.display().to_string()})
        }
    })
}
