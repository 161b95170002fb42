//! `sage data fetch`: registered datasets rebuilt, byte for byte, from their pinned public
//! sources ([`crate::pins`]).
//!
//! For each dataset asked for: the files not already present with their pinned sha256 are
//! listed; the artifacts they need are downloaded in parallel into the data root's `.sources`
//! folder, at `.sources/HOST/PATH` of their URL (so a file placed there by hand is used, and a
//! rerun resumes); each file is converted ([`convert`]), checked against its pinned size and
//! sha256, and renamed into place. A dataset that fails leaves none of its files half-written and
//! does not stop the others; the outcome of each is reported.

pub mod archive;
pub mod convert;
#[cfg(feature = "fetch")]
pub mod download;
pub mod pickle;
pub mod pyjson;

#[cfg(feature = "fetch")]
pub use fetch_impl::*;

use std::collections::BTreeMap;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::pins::{url_path, FilePin, Pins};

/// Makes one pinned file from its artifacts, read from `sources` (laid out as `HOST/PATH` of
/// each URL), and checks it against its pinned size and sha256: the bytes to write, or why not.
pub fn make_file(pins: &Pins, sources: &Path, f: &FilePin) -> Result<Vec<u8>, String> {
    let mut artifacts: BTreeMap<&str, Vec<u8>> = BTreeMap::new();
    for url in f.artifacts() {
        let path = sources.join(url_path(url).unwrap_or(url));
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        artifacts.insert(url, bytes);
    }
    let members: Vec<(String, Vec<u8>)> =
        f.from
            .iter()
            .map(|spec| {
                let (url, member) = match spec.split_once('#') {
                    Some((u, m)) => (u, Some(m)),
                    None => (spec.as_str(), None),
                };
                let bytes = &artifacts[url];
                // an archive's members are bounded by what they may reasonably hold, not by what
                // their headers claim
                let pinned = pins.artifacts.get(url).map_or(0, |a| a.bytes);
                let limit = 4 * pinned.max(f.bytes) + (64 << 20);
                let data = match member {
                    None => bytes.clone(),
                    Some(member) => archive::extract(bytes, member, limit)
                        .map_err(|e| format!("{spec}: {e}"))?,
                };
                Ok((spec.clone(), data))
            })
            .collect::<Result<_, String>>()?;
    let inputs: Vec<convert::Input<'_>> = members
        .iter()
        .map(|(name, bytes)| convert::Input { name, bytes })
        .collect();
    let produced = convert::convert(f, &inputs).map_err(|e| e.to_string())?;
    let sha = crate::sample::hex(&Sha256::digest(&produced));
    if produced.len() as u64 != f.bytes || sha != f.sha256 {
        return Err(format!(
            "{}: converted to {} bytes with sha256 {sha}; pinned {} bytes, {} (not written: the \
             source or the converter changed)",
            f.path,
            produced.len(),
            f.bytes,
            f.sha256
        ));
    }
    Ok(produced)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every pinned file rebuilt from the real upstream files, byte for byte, where a copy of
    /// them is at SAGE_UPSTREAM_DIR (laid out as `HOST/PATH` of each URL: `sage data fetch
    /// --keep-sources` leaves them so under `DATA_DIR/.sources`).
    #[test]
    fn converters_reproduce_the_pinned_files_from_upstream() {
        let Some(dir) = std::env::var_os("SAGE_UPSTREAM_DIR") else {
            sage_test_env::skip(
                "converters_reproduce_the_pinned_files_from_upstream",
                "SAGE_UPSTREAM_DIR unset (a copy of the pinned sources)",
            );
            return;
        };
        let pins = Pins::builtin();
        let mut failures = Vec::new();
        let mut checked = 0;
        for d in &pins.datasets {
            for f in &d.files {
                checked += 1;
                if let Err(e) = make_file(pins, Path::new(&dir), f) {
                    failures.push(format!("{}: {e}", d.name));
                }
            }
        }
        assert!(
            failures.is_empty(),
            "{} of {checked} files:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }
}

#[cfg(feature = "fetch")]
mod fetch_impl {
    use std::collections::BTreeMap;
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
    use std::sync::Mutex;

    use serde::Serialize;

    use super::download::{self, DownloadSettings};
    use crate::pins::{url_path, ArtifactPin, DatasetPin, FilePin, Pins};

    /// How a rebuild runs.
    #[derive(Clone, Debug)]
    pub struct RebuildOptions {
        /// The data root the files go into.
        pub root: PathBuf,
        /// Downloads at once.
        pub jobs: usize,
        /// Replace files present with other content than pinned.
        pub overwrite: bool,
        /// Keep the downloaded sources (under `ROOT/.sources`) after the files are made.
        pub keep_sources: bool,
        /// How downloads run.
        pub download: DownloadSettings,
    }

    /// What one dataset's rebuild came to.
    #[derive(Clone, Debug, Serialize)]
    pub struct Rebuilt {
        /// Registry name.
        pub dataset: String,
        /// `fetched`, `present` (every file already there as pinned), or `failed`.
        pub status: &'static str,
        /// Files written.
        pub written: Vec<String>,
        /// Files present with other content than pinned, left alone (pass overwrite).
        pub differs: Vec<String>,
        /// Bytes downloaded for it.
        pub downloaded_bytes: u64,
        /// Why it failed: the source URL and how to place the file by hand.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub error: Option<String>,
        /// The licence as its source states it.
        pub licence: String,
    }

    /// Progress of the downloads: the CLI draws bars from it.
    pub trait Progress: Sync {
        /// The whole rebuild will download `bytes` in `files` artifacts.
        fn total(&self, files: usize, bytes: u64);
        /// The download of `url`, `bytes` long, starts.
        fn start(&self, url: &str, bytes: u64);
        /// `bytes` more of `url` arrived.
        fn advance(&self, url: &str, bytes: u64);
        /// `url` is done (or failed).
        fn finish(&self, url: &str, ok: bool);
    }

    /// No progress shown.
    pub struct Quiet;

    impl Progress for Quiet {
        fn total(&self, _: usize, _: u64) {}
        fn start(&self, _: &str, _: u64) {}
        fn advance(&self, _: &str, _: u64) {}
        fn finish(&self, _: &str, _: bool) {}
    }

    /// Where a URL's artifact is kept under the data root.
    pub fn source_path(root: &Path, url: &str) -> PathBuf {
        root.join(".sources").join(url_path(url).unwrap_or(url))
    }

    /// The line said when a source cannot be had: where to put it by hand, or, when a file is
    /// there already, that it is not the pinned one.
    fn by_hand(root: &Path, dataset: &str, url: &str, why: &str, pin: &ArtifactPin) -> String {
        let path = source_path(root, url);
        if let Ok(meta) = std::fs::metadata(&path) {
            let sha = download::sha256_file(&path).unwrap_or_else(|e| format!("unreadable: {e}"));
            let pinned = match &pin.sha256 {
                Some(sha) => format!("{} bytes, sha256 {sha}", pin.bytes),
                None => format!("at most {} bytes", pin.bytes),
            };
            return format!(
                "{dataset}: {url}: {why}. The file at {} is not the pinned one: {} bytes, sha256 \
                 {sha}; the pin: {pinned}. Replace it with that URL's file, or remove it, then \
                 run `sage data fetch {dataset}` again",
                path.display(),
                meta.len()
            );
        }
        format!(
            "{dataset}: {url}: {why}. To place it by hand, download that URL elsewhere and put the \
             file at {}, then run `sage data fetch {dataset}` again",
            path.display()
        )
    }

    /// Rebuilds `names` from `pins` into `options.root`.
    pub fn rebuild(
        pins: &Pins,
        names: &[String],
        options: &RebuildOptions,
        progress: &dyn Progress,
    ) -> crate::Result<Vec<Rebuilt>> {
        let mut datasets: Vec<&DatasetPin> = Vec::new();
        for name in names {
            let pin = pins
                .dataset(name)
                .ok_or_else(|| crate::DataError::NoSource {
                    dataset: name.clone(),
                    hint: if crate::entry(name).is_some() {
                        "it has no pinned source; `sage data list` shows its hub source, if any"
                            .into()
                    } else {
                        "not a registered dataset; `sage data list` shows the registry".into()
                    },
                })?;
            if !datasets.iter().any(|d| d.name == pin.name) {
                datasets.push(pin);
            }
        }
        let root = &options.root;
        // one rebuild at a time per data folder (two terminals, two Slurm jobs): the second
        // waits, then finds the first one's files in place
        let _lock = lock_folder(root)?;
        // what each dataset still needs
        let mut plans: Vec<(&DatasetPin, Vec<&FilePin>, Vec<String>)> = Vec::new();
        for d in &datasets {
            let mut todo = Vec::new();
            let mut differs = Vec::new();
            for f in &d.files {
                let path = root.join(&f.path);
                let pin = ArtifactPin {
                    bytes: f.bytes,
                    sha256: Some(f.sha256.clone()),
                    mirrors: Vec::new(),
                };
                let io = |e: std::io::Error| crate::DataError::Io {
                    path: path.clone(),
                    message: e.to_string(),
                };
                if download::matches(&path, &pin).map_err(io)? {
                    continue;
                }
                if path.exists() && !options.overwrite {
                    differs.push(f.path.clone());
                    continue;
                }
                todo.push(f);
            }
            plans.push((d, todo, differs));
        }
        // every artifact needed, downloaded once
        let mut needed: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (d, todo, _) in &plans {
            if !d.rebuildable() {
                continue;
            }
            for f in todo {
                for url in f.artifacts() {
                    needed.entry(url).or_default().push(&d.name);
                }
            }
        }
        let mut missing: Vec<(&str, u64)> = Vec::new();
        for &url in needed.keys() {
            let pin = &pins.artifacts[url];
            let dest = source_path(root, url);
            let io = |e: std::io::Error| crate::DataError::Io {
                path: dest.clone(),
                message: e.to_string(),
            };
            // an artifact only bounded in size (made on request: GitHub's tarballs) cannot be
            // told good from bad by its bytes: --overwrite fetches it afresh
            let unverifiable = pin.sha256.is_none() && options.overwrite;
            if unverifiable || !download::matches(&dest, pin).map_err(io)? {
                missing.push((url, pin.bytes));
            }
        }
        let received: BTreeMap<&str, AtomicU64> = missing
            .iter()
            .map(|&(url, _)| (url, AtomicU64::new(0)))
            .collect();
        progress.total(missing.len(), missing.iter().map(|m| m.1).sum());
        let failures: Mutex<BTreeMap<String, String>> = Mutex::new(BTreeMap::new());
        let next = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for _ in 0..options.jobs.clamp(1, 16) {
                scope.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(url, bytes)) = missing.get(i) else {
                        break;
                    };
                    progress.start(url, bytes);
                    let dest = source_path(root, url);
                    let pin = &pins.artifacts[url];
                    // the pinned URL, then its mirrors (the same bytes elsewhere), in order
                    let mut tried = Vec::new();
                    for candidate in
                        std::iter::once(url).chain(pin.mirrors.iter().map(String::as_str))
                    {
                        match options.download.download(
                            candidate,
                            pin,
                            &dest,
                            &|n| progress.advance(url, n),
                            &received[url],
                        ) {
                            Ok(()) => {
                                tried.clear();
                                break;
                            }
                            Err(e) if candidate == url => tried.push(e),
                            Err(e) => tried.push(format!("its mirror {candidate}: {e}")),
                        }
                    }
                    progress.finish(url, tried.is_empty());
                    if !tried.is_empty() {
                        failures
                            .lock()
                            .unwrap()
                            .insert(url.to_owned(), tried.join("; "));
                    }
                });
            }
        });
        let failures = failures.into_inner().unwrap();
        // a refused download leaves nothing under a name, nor the folders made for it
        for url in failures.keys() {
            let dest = source_path(root, url);
            if !dest.exists() && !download::partial_path(&dest).exists() {
                prune_empty(root, &dest);
            }
        }
        let mut outcomes = Vec::new();
        for (d, todo, differs) in plans {
            let mut outcome = Rebuilt {
                dataset: d.name.clone(),
                status: "present",
                written: Vec::new(),
                differs,
                downloaded_bytes: 0,
                error: None,
                licence: d.licence.clone(),
            };
            if let Some(why) = d.why_not() {
                outcome.status = "failed";
                outcome.error = Some(format!(
                    "{}: not rebuilt from a pinned source: {why}",
                    d.name
                ));
                outcomes.push(outcome);
                continue;
            }
            let mut urls: Vec<&str> = todo.iter().flat_map(|f| f.artifacts()).collect();
            urls.sort_unstable();
            urls.dedup();
            // the bytes that arrived, not the pinned sizes
            outcome.downloaded_bytes = urls
                .iter()
                .filter_map(|u| received.get(u))
                .map(|n| n.load(Ordering::Relaxed))
                .sum();
            if let Some((url, why)) = urls
                .iter()
                .find_map(|u| failures.get(*u).map(|why| (*u, why)))
            {
                outcome.status = "failed";
                outcome.error = Some(by_hand(root, &d.name, url, why, &pins.artifacts[url]));
                outcomes.push(outcome);
                continue;
            }
            match make_files(pins, root, &todo) {
                Ok(written) => {
                    if !written.is_empty() {
                        outcome.status = "fetched";
                    }
                    outcome.written = written;
                }
                Err(e) => {
                    // a source pinned only by its size may be what made the file wrong: it goes,
                    // and the rerun fetches it afresh
                    let unverified: Vec<&str> = urls
                        .iter()
                        .copied()
                        .filter(|u| pins.artifacts[*u].sha256.is_none())
                        .filter(|u| std::fs::remove_file(source_path(root, u)).is_ok())
                        .collect();
                    let removed = if unverified.is_empty() {
                        String::new()
                    } else {
                        format!(
                            " (removed {}, pinned by its size only, so the rerun downloads it \
                             afresh)",
                            unverified.join(", ")
                        )
                    };
                    outcome.status = "failed";
                    outcome.error = Some(format!("{}: {e}{removed}", d.name));
                }
            }
            outcomes.push(outcome);
        }
        record_provenance(root, &datasets, &outcomes).map_err(|e| crate::DataError::Io {
            path: root.join(PROVENANCE),
            message: e.to_string(),
        })?;
        if !options.keep_sources {
            let failed: Vec<&str> = outcomes
                .iter()
                .filter(|o| o.status == "failed")
                .map(|o| o.dataset.as_str())
                .collect();
            // a source still needed by a failed dataset stays, so the rerun need not download it
            for (url, users) in &needed {
                if users.iter().all(|u| !failed.contains(u)) {
                    let path = source_path(root, url);
                    let _ = std::fs::remove_file(&path);
                    prune_empty(root, &path);
                }
            }
        }
        Ok(outcomes)
    }

    /// Removes the folders above `path` that are empty, up to `.sources` itself.
    fn prune_empty(root: &Path, path: &Path) {
        let top = root.join(".sources");
        let mut dir = path.parent();
        while let Some(d) = dir.filter(|d| d.starts_with(&top)) {
            if std::fs::remove_dir(d).is_err() {
                break;
            }
            dir = d.parent();
        }
    }

    /// An exclusive lock on `root`'s rebuilds, held while the returned handle is open: the
    /// data folder itself is locked (no file of ours in it), and another process's rebuild is
    /// waited for. Where a folder cannot be opened or locked (not Linux, a file system without
    /// locks) the rebuild runs unlocked: each file is still placed whole, by rename.
    pub(crate) fn lock_folder(root: &Path) -> crate::Result<Option<std::fs::File>> {
        std::fs::create_dir_all(root).map_err(|e| crate::DataError::Io {
            path: root.to_owned(),
            message: e.to_string(),
        })?;
        Ok(std::fs::File::open(root)
            .ok()
            .filter(|folder| folder.lock().is_ok()))
    }

    /// Converts and places `files`; the first failure stops (what was placed stays: it matches
    /// its pin).
    fn make_files(pins: &Pins, root: &Path, files: &[&FilePin]) -> Result<Vec<String>, String> {
        let mut written = Vec::new();
        for f in files {
            let produced = super::make_file(pins, &root.join(".sources"), f)?;
            let dest = root.join(&f.path);
            place(&dest, &produced).map_err(|e| format!("{}: {e}", dest.display()))?;
            written.push(f.path.clone());
        }
        Ok(written)
    }

    /// Where each fetched dataset's licence and sources are kept, beside the data.
    pub use crate::verify::PROVENANCE;

    /// Adds the datasets now complete to the data root's provenance file: per dataset, its licence
    /// as the source states it, where its files came from, and each file's sha256.
    fn record_provenance(
        root: &Path,
        datasets: &[&DatasetPin],
        outcomes: &[Rebuilt],
    ) -> std::io::Result<()> {
        let path = root.join(PROVENANCE);
        let mut record: serde_json::Map<String, serde_json::Value> = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_default(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Default::default(),
            Err(e) => return Err(e),
        };
        let before = record.clone();
        for d in datasets {
            let complete = outcomes
                .iter()
                .any(|o| o.dataset == d.name && o.status != "failed" && o.differs.is_empty());
            if !complete || !d.rebuildable() {
                continue;
            }
            record.insert(
                d.name.clone(),
                serde_json::json!({
                    "licence": d.licence,
                    "origins": d.origins(),
                    "files": d.files.iter().map(|f| (f.path.clone(), serde_json::Value::String(f.sha256.clone()))).collect::<serde_json::Map<_, _>>(),
                }),
            );
        }
        if record == before {
            return Ok(());
        }
        let mut bytes = serde_json::to_vec_pretty(&record).map_err(std::io::Error::other)?;
        bytes.push(b'\n');
        place(&path, &bytes)
    }

    /// Writes `bytes` to `dest` through a temporary file in the same folder, renamed into place.
    fn place(dest: &Path, bytes: &[u8]) -> std::io::Result<()> {
        use std::io::Write;
        if let Some(dir) = dest.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = download::partial_path(dest);
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp, dest)
    }
}
