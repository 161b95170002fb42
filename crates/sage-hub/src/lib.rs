//! # sage-hub
//!
//! The one place sage-rs talks to the Hugging Face hub, for models (sage-embed) and datasets
//! (sage-data) alike.
//!
//! - [`HubSettings::from_env`] reads `HF_HUB_CACHE` (else `HF_HOME/hub`, else
//!   `~/.cache/huggingface/hub`), `HF_HUB_OFFLINE`, `HF_ENDPOINT` and `HF_TOKEN` (else the
//!   token file in `HF_HOME`).
//! - [`HubSettings::get`] resolves one file of a repository **cache first**: a file already in the hub cache
//!   (laid out as huggingface_hub writes it: `blobs/`, `snapshots/<commit>/`, `refs/<revision>`)
//!   is used without touching the network; otherwise it is downloaded into that cache with
//!   hf-hub, unless offline mode is on. hf-hub 0.5 has no offline mode of its own, so offline is
//!   honoured here by going through its `Cache` only.
//!
//! Errors say what to do: which file is missing from which cache folder, and the command that
//! fills it on a machine with network access.
#![deny(missing_docs)]

use std::path::PathBuf;

use hf_hub::api::sync::ApiBuilder;
use hf_hub::{Cache, Repo, RepoType};

pub use hf_hub::RepoType as Kind;

/// A file that could not be had.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct HubError(pub String);

/// How to reach the hub, normally from the environment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HubSettings {
    /// The hub cache folder.
    pub cache: PathBuf,
    /// HF_HUB_OFFLINE: never touch the network.
    pub offline: bool,
    /// HF_ENDPOINT, when set.
    pub endpoint: Option<String>,
    /// HF_TOKEN, else the token file in HF_HOME.
    pub token: Option<String>,
}

impl HubSettings {
    /// From HF_HUB_CACHE, HF_HOME, HF_HUB_OFFLINE, HF_ENDPOINT and HF_TOKEN.
    pub fn from_env() -> HubSettings {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let cache = env("HF_HUB_CACHE")
            .map(PathBuf::from)
            .unwrap_or_else(|| Cache::from_env().path().clone());
        HubSettings {
            offline: env("HF_HUB_OFFLINE")
                .is_some_and(|v| matches!(v.as_str(), "1" | "true" | "TRUE" | "yes" | "ON" | "on")),
            endpoint: env("HF_ENDPOINT"),
            token: env("HF_TOKEN").or_else(|| Cache::new(cache.clone()).token()),
            cache,
        }
    }

    /// The hub cache at `cache`, never the network: a cache copied from a machine that has the
    /// hub (and what tests lay out).
    pub fn offline_at(cache: impl Into<PathBuf>) -> HubSettings {
        HubSettings {
            cache: cache.into(),
            offline: true,
            endpoint: None,
            token: None,
        }
    }

    /// The commit `refs/<revision>` points at in the cache, when there is one.
    pub fn cached_commit(&self, repo: &Repo) -> Option<String> {
        let refs = self
            .cache
            .join(repo.folder_name())
            .join("refs")
            .join(repo.revision());
        std::fs::read_to_string(refs)
            .ok()
            .map(|c| c.trim().to_owned())
    }

    /// The cached copy of `file`, when the cache has it. (hf-hub's own lookup does not trim
    /// the ref file, so a ref written with a trailing newline would hide the snapshot.)
    pub fn cached(&self, repo: &Repo, file: &str) -> Option<PathBuf> {
        let commit = self.cached_commit(repo)?;
        let path = self
            .cache
            .join(repo.folder_name())
            .join("snapshots")
            .join(commit)
            .join(file);
        path.exists().then_some(path)
    }

    /// `file` of `repo`: from the cache, else downloaded into it (not when offline).
    /// `fill_hint` is appended to errors (what the user can do instead).
    pub fn get(&self, repo: &Repo, file: &str, fill_hint: &str) -> Result<PathBuf, HubError> {
        if let Some(path) = self.cached(repo, file) {
            return Ok(path);
        }
        let kind = match repo_type(repo) {
            RepoType::Dataset => "--repo-type dataset ",
            RepoType::Space => "--repo-type space ",
            _ => "",
        };
        let fill = format!(
            "fill the hub cache at {} on a machine with network access (`huggingface-cli download {kind}{} {file} --revision {}` there, then copy the cache folder here){}",
            self.cache.display(),
            repo_id(repo),
            repo.revision(),
            if fill_hint.is_empty() { String::new() } else { format!(", or {fill_hint}") }
        );
        if self.offline {
            return Err(HubError(format!(
                "{file} of {} is not in the hub cache and HF_HUB_OFFLINE is set: {fill}",
                describe(repo)
            )));
        }
        let mut builder = ApiBuilder::from_cache(Cache::new(self.cache.clone()))
            .with_progress(false)
            .with_token(self.token.clone());
        if let Some(endpoint) = &self.endpoint {
            builder = builder.with_endpoint(endpoint.clone());
        }
        let api = builder
            .build()
            .map_err(|e| HubError(format!("hub client: {e}")))?;
        api.repo(repo.clone()).get(file).map_err(|e| {
            HubError(format!(
                "could not download {file} of {} from the Hugging Face hub ({e}); no network? set HF_HUB_OFFLINE=1 to use the cache only, or {fill}",
                describe(repo)
            ))
        })
    }
}

fn repo_type(repo: &Repo) -> RepoType {
    // Repo does not expose its type; its cache folder name starts with it
    let folder = repo.folder_name();
    if folder.starts_with("datasets--") {
        RepoType::Dataset
    } else if folder.starts_with("spaces--") {
        RepoType::Space
    } else {
        RepoType::Model
    }
}

/// `owner/name`, from the cache folder name `<kind>s--owner--name`.
fn repo_id(repo: &Repo) -> String {
    let folder = repo.folder_name();
    let id = folder
        .split_once("--")
        .map_or(folder.as_str(), |(_, id)| id);
    id.replace("--", "/")
}

fn describe(repo: &Repo) -> String {
    let folder = repo.folder_name();
    let kind = folder
        .split("--")
        .next()
        .unwrap_or_default()
        .trim_end_matches('s');
    format!("{kind} {} (revision {})", repo_id(repo), repo.revision())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(cache: PathBuf, offline: bool) -> HubSettings {
        HubSettings {
            cache,
            offline,
            endpoint: Some("http://127.0.0.1:9".into()),
            token: None,
        }
    }

    #[test]
    fn cache_first_and_clear_errors() {
        let dir = std::env::temp_dir().join(format!("sage-hub-test-{}", std::process::id()));
        let repo = Repo::with_revision("mteb/x".into(), RepoType::Dataset, "main".into());
        let snapshot = dir.join("datasets--mteb--x/snapshots/abc");
        std::fs::create_dir_all(&snapshot).unwrap();
        std::fs::create_dir_all(dir.join("datasets--mteb--x/refs")).unwrap();
        std::fs::write(dir.join("datasets--mteb--x/refs/main"), "abc\n").unwrap();
        std::fs::write(snapshot.join("test.jsonl"), "{}\n").unwrap();
        let offline = settings(dir.clone(), true);
        assert_eq!(offline.cached_commit(&repo).as_deref(), Some("abc"));
        assert_eq!(
            offline.get(&repo, "test.jsonl", "").unwrap(),
            snapshot.join("test.jsonl")
        );
        let e = offline
            .get(&repo, "train.jsonl", "put it there")
            .unwrap_err()
            .to_string();
        assert!(e.contains("HF_HUB_OFFLINE"), "{e}");
        assert!(
            e.contains("huggingface-cli download --repo-type dataset mteb/x train.jsonl"),
            "{e}"
        );
        assert!(e.contains("dataset mteb/x (revision main)"), "{e}");
        // online against a closed port: the download fails, and says so
        let e = settings(dir.clone(), false)
            .get(&repo, "train.jsonl", "")
            .unwrap_err()
            .to_string();
        assert!(e.contains("could not download train.jsonl"), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
