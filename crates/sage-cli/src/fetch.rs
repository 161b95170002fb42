//! `sage data fetch` and `sage run --fetch`: datasets rebuilt from their pinned sources
//! (sage_data::rebuild), or fetched from the hub where that is their only source, with a
//! progress bar per file and a total.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;

use anyhow::Result;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use sage_data::pins::Pins;
use sage_data::rebuild::{self, Progress, RebuildOptions};
use serde::Serialize;

/// What to fetch into where.
pub(crate) struct Request {
    pub(crate) root: PathBuf,
    pub(crate) overwrite: bool,
    pub(crate) jobs: usize,
    pub(crate) keep_sources: bool,
    pub(crate) sources: Option<String>,
    pub(crate) quiet: bool,
    /// Hub datasets only.
    pub(crate) splits: Vec<String>,
}

/// One dataset's outcome, as `sage data fetch` prints it.
#[derive(Serialize)]
pub(crate) struct Outcome {
    pub(crate) dataset: String,
    /// `fetched`, `present` or `failed`.
    pub(crate) status: &'static str,
    /// `pinned` (rebuilt from its public source) or `hub`.
    pub(crate) source: &'static str,
    #[serde(flatten)]
    pub(crate) detail: serde_json::Value,
}

/// The registry names among `datasets` (`name` or `name/split`), each once, in order; a user's
/// own paths and table names are not fetched.
pub(crate) fn registry_names(datasets: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for d in datasets {
        let name = d.split('/').next().unwrap_or(&d).to_owned();
        if sage_data::entry(&name).is_some() && !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// An outcome's detail without the fields the outcome line itself has (a repeated key is an
/// error to every JSON-lines reader of ours).
fn without_name(mut detail: serde_json::Value) -> serde_json::Value {
    if let Some(fields) = detail.as_object_mut() {
        fields.remove("dataset");
        fields.remove("status");
    }
    detail
}

/// The data root a fetch writes into: the flag, else SAGE_DATA_DIR, else the default folder.
pub(crate) fn data_root(flag: Option<PathBuf>) -> Result<PathBuf> {
    if let Some(dir) = flag {
        return Ok(dir);
    }
    if let Some(dir) = std::env::var_os("SAGE_DATA_DIR").filter(|d| !d.is_empty()) {
        return Ok(dir.into());
    }
    sage_data::DataRoot::default_dir()
        .ok_or_else(|| anyhow::anyhow!("no data folder: set SAGE_DATA_DIR or pass --data-dir (neither XDG_DATA_HOME nor HOME is set)"))
}

/// Bars on stderr: one per download, and the total.
struct Bars {
    multi: MultiProgress,
    total: ProgressBar,
    files: Mutex<HashMap<String, ProgressBar>>,
}

impl Bars {
    fn new(quiet: bool) -> Bars {
        let multi = MultiProgress::new();
        if quiet {
            multi.set_draw_target(indicatif::ProgressDrawTarget::hidden());
        }
        let total = multi.add(ProgressBar::new(0));
        total.set_style(
            ProgressStyle::with_template(
                "{prefix:>12} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} {msg}",
            )
            .expect("a valid template")
            .progress_chars("=> "),
        );
        total.set_prefix("total");
        Bars {
            multi,
            total,
            files: Mutex::new(HashMap::new()),
        }
    }
}

impl Progress for Bars {
    fn total(&self, files: usize, bytes: u64) {
        self.total.set_length(bytes);
        self.total.set_message(format!("{files} files"));
    }

    fn start(&self, url: &str, bytes: u64) {
        let bar = self
            .multi
            .insert_before(&self.total, ProgressBar::new(bytes));
        bar.set_style(
            ProgressStyle::with_template(
                "{prefix:>12} [{bar:30}] {bytes}/{total_bytes} {wide_msg}",
            )
            .expect("a valid template")
            .progress_chars("=> "),
        );
        bar.set_prefix("download");
        bar.set_message(url.rsplit('/').next().unwrap_or(url).to_owned());
        self.files
            .lock()
            .expect("not poisoned")
            .insert(url.to_owned(), bar);
    }

    fn advance(&self, url: &str, bytes: u64) {
        if let Some(bar) = self.files.lock().expect("not poisoned").get(url) {
            bar.inc(bytes);
        }
        self.total.inc(bytes);
    }

    fn finish(&self, url: &str, _ok: bool) {
        if let Some(bar) = self.files.lock().expect("not poisoned").remove(url) {
            bar.finish_and_clear();
        }
    }
}

/// Fetches `names` (registry names): pinned ones rebuilt, hub-only ones from the hub; one with
/// neither is a failed outcome that says why. An unknown name is an error before anything is
/// downloaded.
pub(crate) fn fetch(names: &[String], request: &Request) -> Result<Vec<Outcome>> {
    let pins = Pins::active().map_err(anyhow::Error::msg)?;
    if let Some(unknown) = names.iter().find(|n| sage_data::entry(n).is_none()) {
        anyhow::bail!("unknown dataset {unknown:?}; `sage data list` shows the registry");
    }
    let mut outcomes = Vec::new();
    // a dataset no public source can rebuild falls back to its hub copy, where it has one
    let (pinned, others): (Vec<String>, Vec<String>) = names
        .iter()
        .cloned()
        .partition(|n| pins.dataset(n).is_some_and(|d| d.rebuildable()));
    let (hub, sourceless): (Vec<String>, Vec<String>) = others
        .into_iter()
        .partition(|n| sage_data::entry(n).is_some_and(|e| e.hub.is_some()));
    for name in sourceless {
        let why = match pins.dataset(&name).and_then(|d| d.why_not()) {
            Some(why) => format!("{name}: no public source sage can rebuild it from: {why}"),
            None => format!("{name}: neither a pinned source nor a hub source"),
        };
        eprintln!("sage: {}", sage_core::printable(&why.to_string()));
        outcomes.push(Outcome {
            dataset: name,
            status: "failed",
            source: "none",
            detail: serde_json::json!({ "error": why }),
        });
    }
    if !pinned.is_empty() {
        let options = RebuildOptions {
            root: request.root.clone(),
            jobs: request.jobs,
            overwrite: request.overwrite,
            keep_sources: request.keep_sources,
            download: sage_data::rebuild::download::DownloadSettings {
                base: request.sources.clone(),
                ..Default::default()
            },
        };
        let bars = Bars::new(request.quiet);
        let rebuilt = rebuild::rebuild(pins, &pinned, &options, &bars)?;
        bars.total.finish_and_clear();
        for r in rebuilt {
            if let Some(error) = &r.error {
                eprintln!("sage: {}", sage_core::printable(&error.to_string()));
            }
            if !r.differs.is_empty() {
                eprintln!(
                    "sage: note: {}: {} present with other content than pinned, left alone (--overwrite replaces them)",
                    r.dataset,
                    r.differs.join(", ")
                );
            }
            outcomes.push(Outcome {
                dataset: r.dataset.clone(),
                status: r.status,
                source: "pinned",
                detail: without_name(serde_json::to_value(&r)?),
            });
        }
    }
    if !hub.is_empty() {
        let root = sage_data::DataRoot::new(&request.root);
        let settings = sage_data::HubSettings::from_env();
        let splits: Vec<&str> = request.splits.iter().map(String::as_str).collect();
        for name in &hub {
            match sage_data::fetch(&root, name, &splits, &settings, request.overwrite) {
                Ok(fetched) => {
                    let status = if fetched.iter().all(|f| f.skipped) {
                        "present"
                    } else {
                        "fetched"
                    };
                    outcomes.push(Outcome {
                        dataset: name.clone(),
                        status,
                        source: "hub",
                        detail: serde_json::json!({ "splits": fetched }),
                    });
                }
                Err(e) => {
                    // the error names the dataset already where it knows it
                    let text = e.to_string();
                    let text = match text.strip_prefix(&format!("{name}: ")) {
                        Some(rest) => format!("{name}: {rest}"),
                        None => format!("{name}: {text}"),
                    };
                    eprintln!("sage: {}", sage_core::printable(&text));
                    outcomes.push(Outcome {
                        dataset: name.clone(),
                        status: "failed",
                        source: "hub",
                        detail: serde_json::json!({ "error": text }),
                    });
                }
            }
        }
    }
    Ok(outcomes)
}
