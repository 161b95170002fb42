//! `sage data`: the dataset registry and the local mirror.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use clap::Subcommand;
use sage_core::RunSeed;
use sage_data::{DataRoot, DatasetKind, REGISTRY};
use serde_json::json;

/// What to do with datasets.
#[derive(Debug, Subcommand)]
pub enum DataCommand {
    /// List every registered dataset: kind, splits, local path (and whether it is present under
    /// the data root), the source `sage data fetch` rebuilds it from (a repository at a commit, a
    /// package at a version; else its Hugging Face source) and its licence as the source states
    /// it; then the user's datasets of --datasets tables, marked `user`.
    List {
        /// Data root (default: $SAGE_DATA_DIR).
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// One JSON object per dataset instead of a table.
        #[arg(long)]
        json: bool,
        /// TOML files of `[datasets.NAME]` tables to list with the registry.
        #[arg(long = "datasets", value_name = "FILE")]
        tables: Vec<PathBuf>,
    },
    /// What each kind of dataset holds: the columns a file of that kind needs and may have, and
    /// the suites that read it. A user's file is detected as the kind whose columns it has.
    Kinds,
    /// Read datasets — registry names, [datasets] table names, or paths of your own files and
    /// folders — and report, per split, one JSON line: the kind (and whether it was detected),
    /// the columns used, rows, empty texts, duplicated rows and ids, qrels that name missing
    /// documents, the content checksum, and the suites that take it. Stops at the first
    /// malformed file with its file and line.
    Check {
        /// Datasets to check: NAME, PATH or PATH#SPLIT (default: every registered dataset present
        /// locally, and every --datasets table).
        names: Vec<String>,
        /// Data root (default: $SAGE_DATA_DIR).
        #[arg(long)]
        data_dir: Option<PathBuf>,
        #[command(flatten)]
        user: UserDataArgs,
        /// Use at most this many rows per split (seeded sample).
        #[arg(long)]
        max_rows: Option<usize>,
        /// Seed of the sample.
        #[arg(long, default_value_t = RunSeed::default().0)]
        seed: u64,
    },
    /// Rebuild datasets, byte for byte, from their pinned public sources (a GitHub repository
    /// at a commit, an npm or Debian package at a version): each source downloaded in parallel
    /// and checked against its pinned sha256, converted, checked again, and only then put under
    /// its name in the data root (SAGE_DATA_DIR, else the default data folder every command then
    /// finds). One JSON line per dataset. A dataset with only a Hugging Face source is fetched
    /// from the hub (HF_HOME / HF_HUB_CACHE, HF_ENDPOINT, HF_TOKEN; HF_HUB_OFFLINE=1 uses the hub
    /// cache only). Files already present as pinned are kept.
    Fetch {
        /// Datasets to fetch (`sage data list` shows each one's source and licence).
        names: Vec<String>,
        /// Every dataset with a pinned source.
        #[arg(long, conflicts_with = "names")]
        all: bool,
        /// The datasets a bench-all run of this configuration reads (bench.toml's form; with no
        /// value, or an empty one, the shipped configuration's).
        #[arg(long = "for", value_name = "CONFIG", num_args = 0..=1, default_missing_value = "", conflicts_with_all = ["names", "all"])]
        for_config: Option<PathBuf>,
        /// With --for: the datasets of a `--quick` run.
        #[arg(long, requires = "for_config")]
        quick: bool,
        /// Hub datasets only: these splits (default: every split).
        #[arg(long = "split")]
        splits: Vec<String>,
        /// Replace files present with other content than pinned.
        #[arg(long)]
        overwrite: bool,
        /// Data root to write into (default: $SAGE_DATA_DIR, else the default data folder).
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// Downloads at once.
        #[arg(long, default_value_t = 4)]
        jobs: usize,
        /// Keep the downloaded sources under DATA_DIR/.sources (default: removed once the
        /// dataset is made).
        #[arg(long)]
        keep_sources: bool,
        /// Serve every source URL https://HOST/PATH from BASE/HOST/PATH instead: a copy of the
        /// sources (as `.sources` keeps them) behind a web server (an http(s) base), or in a
        /// folder (a path, or file://PATH).
        #[arg(long, env = "SAGE_DATA_SOURCES", value_name = "BASE")]
        sources: Option<String>,
        /// No progress bars.
        #[arg(long)]
        quiet: bool,
    },
    /// Print the sha256 of every file made from the Hugging Face hub in the data root, as the
    /// first `sage data fetch` of each recorded it (DATA_DIR/PROVENANCE.json), as a lock file:
    /// `sage data lock > sha256s.toml`. Commit it and set SAGE_DATA_PINS=sha256s.toml on every
    /// machine of the team: each fetch and each load then checks those files against it, and
    /// refuses one whose bytes changed. Files a pinned source makes are checked against their
    /// pins already.
    Lock {
        /// Data root (default: $SAGE_DATA_DIR, else the default data folder).
        #[arg(long)]
        data_dir: Option<PathBuf>,
    },
}

/// How a command names the user's own datasets besides `--dataset PATH`: tables of named
/// datasets, and the kind and column mapping of the paths given.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct UserDataArgs {
    /// A TOML file of `[datasets.NAME]` tables (path, kind, columns, splits; bench.toml's form):
    /// each NAME/SPLIT then works with --dataset. Repeatable.
    #[arg(long = "datasets", value_name = "FILE")]
    pub tables: Vec<PathBuf>,
    /// What the datasets given as paths hold (default: detected from their columns; `sage data
    /// kinds` lists the kinds and their columns).
    #[arg(long)]
    pub kind: Option<String>,
    /// Map the paths' column names onto ours: `ours=theirs,...` (text=body,label=queue).
    #[arg(long, value_name = "OURS=THEIRS,...")]
    pub columns: Option<String>,
}

impl UserDataArgs {
    fn hints(&self) -> Result<sage_data::PathHints> {
        Ok(sage_data::PathHints {
            kind: self.kind.clone(),
            columns: match &self.columns {
                Some(text) => sage_data::PathHints::parse_columns(text)
                    .map_err(|e| anyhow::anyhow!("--columns: {e}"))?,
                None => Default::default(),
            },
        })
    }
}

/// The data root from a `--data-dir` flag, else SAGE_DATA_DIR, else none (then only the user's
/// own datasets can be read, and a registry name says how to set the mirror).
pub fn root(data_dir: Option<PathBuf>) -> Result<DataRoot> {
    Ok(DataRoot::from_flag_or_env(data_dir))
}

/// The data root with the user's `--datasets` tables registered.
fn root_with_tables(data_dir: Option<PathBuf>, user: &UserDataArgs) -> Result<DataRoot> {
    let mut root = root(data_dir)?;
    for file in &user.tables {
        root.add_tables(file)?;
    }
    Ok(root)
}

/// The data root with the user's tables registered, and `datasets` read as `(name, split)` (a
/// path registered on the root as it is read).
pub fn resolve(
    data_dir: Option<PathBuf>,
    user: &UserDataArgs,
    datasets: &[String],
) -> Result<(DataRoot, Vec<(String, String)>)> {
    let mut root = root_with_tables(data_dir, user)?;
    let hints = user.hints()?;
    if (hints.kind.is_some() || !hints.columns.is_empty()) && datasets.is_empty() {
        anyhow::bail!("--kind and --columns describe datasets given as paths: add --dataset PATH");
    }
    let datasets = sage_suites::parse_datasets(&mut root, datasets, &hints)
        .map_err(|e| anyhow::anyhow!("--dataset: {e}"))?;
    Ok((root, datasets))
}

pub fn run(command: DataCommand, registry: &sage_suites::Registry) -> Result<()> {
    let mut out = std::io::stdout().lock();
    let suites_taking = |kind: DatasetKind| -> Vec<&'static str> {
        registry
            .suites()
            .filter(|s| s.kinds().contains(&kind))
            .map(|s| s.name())
            .collect()
    };
    match command {
        DataCommand::Fetch {
            names,
            all,
            for_config,
            quick,
            splits,
            overwrite,
            data_dir,
            jobs,
            keep_sources,
            sources,
            quiet,
        } => {
            let names = if all {
                sage_data::pins::Pins::active()
                    .map_err(anyhow::Error::msg)?
                    .datasets
                    .iter()
                    .filter(|d| d.rebuildable())
                    .map(|d| d.name.clone())
                    .collect()
            } else if let Some(config) = &for_config {
                needed_by(config, quick, registry)?
            } else if names.is_empty() {
                anyhow::bail!("name the datasets to fetch, or pass --all or --for CONFIG");
            } else {
                names
            };
            let request = crate::fetch::Request {
                root: crate::fetch::data_root(data_dir)?,
                overwrite,
                jobs,
                keep_sources,
                sources,
                quiet,
                splits,
            };
            let outcomes = crate::fetch::fetch(&names, &request)?;
            for outcome in &outcomes {
                writeln!(out, "{}", serde_json::to_string(outcome)?)?;
            }
            let failed: Vec<&str> = outcomes
                .iter()
                .filter(|o| o.status == "failed")
                .map(|o| o.dataset.as_str())
                .collect();
            if !failed.is_empty() {
                anyhow::bail!(
                    "{} of {} datasets not fetched: {}",
                    failed.len(),
                    outcomes.len(),
                    failed.join(", ")
                );
            }
            Ok(())
        }
        DataCommand::Lock { data_dir } => {
            let root = crate::fetch::data_root(data_dir)?;
            write!(out, "{}", sage_data::verify::lock_table(&root)?)?;
            Ok(())
        }
        DataCommand::Kinds => {
            for &kind in DatasetKind::ALL {
                let (required, optional) = sage_data::user::kind_columns(kind).unwrap_or_default();
                let layout = match kind {
                    DatasetKind::Beir => "folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv",
                    DatasetKind::WordNet => "folder: the WordNet 3.0 database",
                    _ => "file",
                };
                writeln!(
                    out,
                    "{}",
                    json!({
                        "kind": kind.name(),
                        "layout": layout,
                        "required": required,
                        "optional": optional,
                        "suites": suites_taking(kind),
                    })
                )?;
            }
            Ok(())
        }
        DataCommand::List {
            data_dir,
            json,
            tables,
        } => {
            let mut root = DataRoot::from_flag_or_env(data_dir);
            for file in &tables {
                root.add_tables(file)?;
            }
            let pins = sage_data::pins::Pins::active().map_err(anyhow::Error::msg)?;
            for e in REGISTRY {
                let present = root
                    .root()
                    .is_some()
                    .then(|| e.splits.iter().all(|s| root.is_local(e, s)));
                let pin = pins.dataset(e.name);
                let rebuildable = pin.is_some_and(|p| p.rebuildable());
                if json {
                    writeln!(
                        out,
                        "{}",
                        json!({"name": e.name, "kind": e.kind, "splits": e.splits, "local": e.local, "present": present, "source": pin.map(|p| json!({"origins": p.origins(), "files": p.files.iter().map(|f| json!({"path": f.path, "sha256": f.sha256, "from": f.from})).collect::<Vec<_>>(), "unavailable": p.unavailable, "hub_only": p.hub_only})), "licence": pin.map(|p| p.licence.as_str()), "hub": e.hub, "description": e.description, "mteb_rows": e.mteb_rows.iter().map(|(split, parts)| (split.to_string(), parts.join("+"))).collect::<std::collections::BTreeMap<_, _>>()})
                    )?;
                } else {
                    let mark = match present {
                        Some(true) => "local",
                        Some(false) => "-",
                        None => "?",
                    };
                    // what `sage data fetch NAME` uses: the pinned source, else the hub
                    let source = match (rebuildable, e.hub) {
                        (true, _) => pin.map(|p| p.origins().join(" + ")).unwrap_or_default(),
                        (false, Some(h)) => {
                            format!("hub {}@{}", h.repo, &h.revision[..h.revision.len().min(12)])
                        }
                        (false, None) => "-".to_owned(),
                    };
                    writeln!(
                        out,
                        "{:<36} {:<20} {:<6} {:<26} {:<40} {} [licence: {}]",
                        e.name,
                        e.kind.name(),
                        mark,
                        e.splits.join(","),
                        source,
                        e.description,
                        pin.map_or("as its hub card states", |p| p.licence.as_str())
                    )?;
                }
            }
            for u in root.user_datasets() {
                let splits = root.splits(&u.name)?;
                if json {
                    writeln!(
                        out,
                        "{}",
                        json!({"name": u.name, "kind": u.kind, "splits": splits, "user": true, "path": u.path, "columns": u.columns})
                    )?;
                } else {
                    writeln!(
                        out,
                        "{:<36} {:<20} {:<6} {:<26} {:<40} {}",
                        u.name,
                        u.kind.name(),
                        "user",
                        splits.join(","),
                        "-",
                        u.path.display()
                    )?;
                }
            }
            Ok(())
        }
        DataCommand::Check {
            names,
            data_dir,
            user,
            max_rows,
            seed,
        } => {
            let mut root = root_with_tables(data_dir, &user)?;
            let hints = user.hints()?;
            // (name, the one split asked for) in the order given
            let mut selected: Vec<(String, Option<String>)> = Vec::new();
            if names.is_empty() {
                for e in REGISTRY
                    .iter()
                    .filter(|e| e.splits.iter().any(|s| root.is_local(e, s)))
                {
                    selected.push((e.name.to_owned(), None));
                }
                for u in root.user_datasets() {
                    selected.push((u.name.clone(), None));
                }
            } else {
                for n in &names {
                    if sage_data::entry(n).is_some() || root.user_dataset(n).is_some() {
                        selected.push((n.clone(), None));
                    } else {
                        let (name, split) = root.resolve(n, &hints)?;
                        let asked = n.contains('#') || root.splits(&name)?.len() == 1;
                        selected.push((name, asked.then_some(split)));
                    }
                }
            }
            for (name, asked) in selected {
                let splits: Vec<String> = match (asked, sage_data::entry(&name)) {
                    (Some(split), _) => vec![split],
                    (None, Some(e)) => {
                        // the splits present locally; a dataset with none reports why
                        let local: Vec<String> = e
                            .splits
                            .iter()
                            .filter(|s| root.is_local(e, s))
                            .map(|s| s.to_string())
                            .collect();
                        if local.is_empty() {
                            e.splits.iter().map(|s| s.to_string()).collect()
                        } else {
                            local
                        }
                    }
                    (None, None) => root.splits(&name)?,
                };
                let kind = root.kind(&name)?;
                for split in splits {
                    let mut report = serde_json::to_value(root.inspect(
                        &name,
                        &split,
                        max_rows,
                        RunSeed(seed),
                    )?)?;
                    report["kind"] = json!(kind);
                    report["suites"] = json!(suites_taking(kind));
                    if let Some(u) = root.user_dataset(&name) {
                        report["user"] = json!(true);
                        report["detected"] = json!(u.detected);
                        report["columns"] = json!(u.columns);
                        if u.line_ids {
                            report["ids"] = json!("line numbers (the file has no id column)");
                        }
                    }
                    writeln!(out, "{report}")?;
                }
            }
            Ok(())
        }
    }
}

/// The registry datasets a bench-all run of `config` reads.
fn needed_by(
    config: &std::path::Path,
    quick: bool,
    registry: &sage_suites::Registry,
) -> Result<Vec<String>> {
    let file = (!config.as_os_str().is_empty()).then_some(config);
    let config = sage_bench::Config::load(file, quick)?;
    let suites: Vec<(String, Vec<String>, Vec<String>)> = registry
        .suites()
        .map(|s| {
            (
                s.name().to_owned(),
                s.default_datasets(),
                s.reference_datasets(),
            )
        })
        .collect();
    Ok(crate::fetch::registry_names(
        config.datasets_needed(&suites),
    ))
}

/// A `(name, split)` of the registry.
type DatasetSplit = (&'static str, &'static str);

/// The task's default datasets that are in the local mirror, and a note for each of the others
/// (with how to get it), also said on stderr; none at all is an error listing every reason.
pub(crate) fn local_defaults(
    root: &sage_data::DataRoot,
    task: &'static str,
    defaults: &[DatasetSplit],
) -> Result<(Vec<DatasetSplit>, Vec<String>)> {
    let (present, notes) = sage_suites::local_datasets(task, root, defaults)?;
    for note in &notes {
        eprintln!("sage: note: {task}: {}", sage_core::printable(note));
    }
    Ok((present, notes))
}
