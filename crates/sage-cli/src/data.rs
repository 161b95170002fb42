//! `sage data`: the dataset registry and the local mirror.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use clap::Subcommand;
use sage_core::RunSeed;
use sage_data::{DataRoot, REGISTRY};
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
    /// Download datasets from the Hugging Face hub (HF_HOME / HF_HUB_CACHE, HF_ENDPOINT,
    /// HF_TOKEN; HF_HUB_OFFLINE=1 uses the hub cache only) and write them into the local layout
    /// under the data root; one JSON line per split. Splits already local are skipped.
    Fetch {
        /// Datasets to fetch (`sage data list` shows which have a hub source).
        #[arg(required = true)]
        names: Vec<String>,
        /// Only these splits (default: every split of each dataset).
        #[arg(long = "split")]
        splits: Vec<String>,
        /// Replace splits already in the local mirror.
        #[arg(long)]
        overwrite: bool,
        /// Data root to write into (default: $SAGE_DATA_DIR).
        #[arg(long)]
        data_dir: Option<PathBuf>,
    },
}

/// The data root from a `--data-dir` flag, else SAGE_DATA_DIR.
pub fn root(data_dir: Option<PathBuf>) -> Result<DataRoot> {
    Ok(match data_dir {
        Some(dir) => DataRoot::new(dir),
        None => DataRoot::from_env()?,
    })
}

pub fn run(command: DataCommand) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match command {
        DataCommand::Fetch {
            names,
            splits,
            overwrite,
            data_dir,
        } => {
            let root = root(data_dir)?;
            let hub = sage_data::HubSettings::from_env();
            let splits: Vec<&str> = splits.iter().map(String::as_str).collect();
            for name in &names {
                for fetched in sage_data::fetch(&root, name, &splits, &hub, overwrite)? {
                    writeln!(out, "{}", serde_json::to_string(&fetched)?)?;
                }
            }
            Ok(())
        }
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
                    let report = serde_json::to_value(root.inspect(
                        e.name,
                        split,
                        max_rows,
                        RunSeed(seed),
                    )?)?;
                    writeln!(out, "{report}")?;
                }
            }
            Ok(())
        }
    }
}
pub(crate) fn parse_datasets(datasets: &[String]) -> Result<Vec<(String, String)>> {
    sage_suites::parse_datasets(datasets).map_err(|e| anyhow::anyhow!("--{e}"))
}

/// The task's default datasets that are in the local mirror; the others are named on stderr
/// (with how to get them), and none at all is an error listing every reason.
pub(crate) fn local_defaults(
    root: &sage_data::DataRoot,
    task: &'static str,
    defaults: &[(&'static str, &'static str)],
) -> Result<Vec<(&'static str, &'static str)>> {
    let (present, notes) = sage_suites::local_datasets(task, root, defaults)?;
    for note in &notes {
        eprintln!("sage: note: {task}: {note}");
    }
    Ok(present)
}
