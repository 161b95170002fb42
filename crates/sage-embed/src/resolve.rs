//! Finding a model: a local folder, a folder under SAGE_MODELS_DIR, or a Hugging Face hub id
//! (from the hub cache, or downloaded when the hub is allowed).

use std::path::{Path, PathBuf};

use hf_hub::api::sync::ApiBuilder;
use hf_hub::{Cache, Repo, RepoType};

use crate::error::{EmbedError, Result};

/// Files a sentence-transformers repository may have; the first three are required.
const REQUIRED: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];
const OPTIONAL: [&str; 4] = [
    "modules.json",
    "sentence_bert_config.json",
    "1_Pooling/config.json",
    "config_sentence_transformers.json",
];

/// Where models are looked for, read from the environment by [`ResolveOptions::from_env`].
#[derive(Clone, Debug, Default)]
pub struct ResolveOptions {
    /// SAGE_MODELS_DIR: folder of model folders.
    pub models_dir: Option<PathBuf>,
    /// The hub cache: HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub.
    pub hub_cache: PathBuf,
    /// HF_HUB_OFFLINE=1: never touch the network.
    pub offline: bool,
    /// HF_ENDPOINT, when set.
    pub endpoint: Option<String>,
    /// HF_TOKEN, else the token file in HF_HOME.
    pub token: Option<String>,
}

impl ResolveOptions {
    /// From SAGE_MODELS_DIR, HF_HUB_CACHE, HF_HOME, HF_HUB_OFFLINE, HF_ENDPOINT and HF_TOKEN.
    pub fn from_env() -> ResolveOptions {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let default_models = env("HOME").map(|h| PathBuf::from(h).join(".cache/sage-models"));
        let hub_cache = env("HF_HUB_CACHE")
            .map(PathBuf::from)
            .unwrap_or_else(|| Cache::from_env().path().clone());
        ResolveOptions {
            models_dir: env("SAGE_MODELS_DIR").map(PathBuf::from).or(default_models),
            offline: env("HF_HUB_OFFLINE")
                .is_some_and(|v| matches!(v.as_str(), "1" | "true" | "TRUE" | "yes" | "ON" | "on")),
            endpoint: env("HF_ENDPOINT"),
            token: env("HF_TOKEN").or_else(|| Cache::new(hub_cache.clone()).token()),
            hub_cache,
        }
    }
}

/// A resolved model folder and how it was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedModel {
    /// The folder holding config.json etc. (a hub snapshot folder for hub ids).
    pub dir: PathBuf,
    /// The name to report: the hub id, or the folder name.
    pub name: String,
    /// The hub commit, for models from the hub.
    pub revision: Option<String>,
}

/// Resolves `spec` — a path, a folder name under SAGE_MODELS_DIR, or a hub id `owner/name`
/// (its last component is also looked for under SAGE_MODELS_DIR) — to a model folder.
pub fn resolve_model(spec: &str, options: &ResolveOptions) -> Result<ResolvedModel> {
    let path = Path::new(spec);
    if path.exists() {
        let name = path
            .file_name()
            .map_or_else(|| spec.to_owned(), |n| n.to_string_lossy().into_owned());
        return Ok(ResolvedModel {
            dir: path.to_owned(),
            name,
            revision: None,
        });
    }
    if let Some(models) = &options.models_dir {
        let local = models.join(spec.rsplit('/').next().unwrap_or(spec));
        if local.is_dir() {
            return Ok(ResolvedModel {
                dir: local,
                name: spec.to_owned(),
                revision: None,
            });
        }
    }
    if !spec.contains('/') || spec.starts_with('/') || spec.starts_with('.') {
        return Err(EmbedError::Resolve(format!(
            "model {spec:?} not found: no such path{}; a hub id looks like owner/name",
            options
                .models_dir
                .as_ref()
                .map(|d| format!(" and no folder {}", d.join(spec).display()))
                .unwrap_or_default()
        )));
    }
    resolve_hub(spec, options)
}

/// The commit `refs/main` points at in the hub cache, when there is one.
fn cached_commit(options: &ResolveOptions, id: &str) -> Option<String> {
    let refs = options
        .hub_cache
        .join(Repo::model(id.to_owned()).folder_name())
        .join("refs/main");
    std::fs::read_to_string(refs)
        .ok()
        .map(|c| c.trim().to_owned())
}

fn resolve_hub(id: &str, options: &ResolveOptions) -> Result<ResolvedModel> {
    let cache = Cache::new(options.hub_cache.clone());
    let cached = cache.model(id.to_owned());
    let commit = cached_commit(options, id);
    if let Some(config) = cached.get("config.json") {
        if REQUIRED.iter().all(|f| cached.get(f).is_some()) {
            let dir = config
                .parent()
                .expect("a file in a snapshot folder")
                .to_owned();
            return Ok(ResolvedModel {
                dir,
                name: id.to_owned(),
                revision: commit,
            });
        }
    }
    let missing_hint = format!(
        "put the model folder at {} (bash ../shared/tools/fetch-models.sh makes the standard ones), \
         fill the hub cache at {} on a machine with network access (e.g. `huggingface-cli download {id}`), \
         or pass a local folder path",
        options.models_dir.as_ref().map_or_else(|| "$SAGE_MODELS_DIR/<name>".to_owned(), |d| d.join(id.rsplit('/').next().unwrap_or(id)).display().to_string()),
        options.hub_cache.display()
    );
    if options.offline {
        return Err(EmbedError::Resolve(format!(
            "model {id:?} is not in the hub cache and HF_HUB_OFFLINE is set: {missing_hint}"
        )));
    }
    let mut builder = ApiBuilder::from_cache(cache)
        .with_progress(false)
        .with_token(options.token.clone());
    if let Some(endpoint) = &options.endpoint {
        builder = builder.with_endpoint(endpoint.clone());
    }
    let api = builder
        .build()
        .map_err(|e| EmbedError::Resolve(format!("hub client: {e}")))?;
    let repo = api.repo(Repo::new(id.to_owned(), RepoType::Model));
    let mut dir = None;
    for file in REQUIRED {
        let got = repo.get(file).map_err(|e| {
            EmbedError::Resolve(format!("could not download {file} of {id:?} from the Hugging Face hub ({e}); offline? {missing_hint}"))
        })?;
        dir.get_or_insert_with(|| got.parent().expect("snapshot folder").to_owned());
    }
    for file in OPTIONAL {
        // absent in some repositories: a failure here is not an error
        let _ = repo.get(file);
    }
    let commit = cached_commit(options, id);
    Ok(ResolvedModel {
        dir: dir.expect("REQUIRED is not empty"),
        name: id.to_owned(),
        revision: commit,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A hub cache laid out as huggingface_hub writes it: blobs, a snapshot of symlinks, refs/main.
    pub(crate) fn hub_cache_fixture(root: &Path, id: &str, files: &[(&str, &Path)]) -> String {
        let commit = "0123456789abcdef0123456789abcdef01234567";
        let repo = root.join(format!("models--{}", id.replace('/', "--")));
        std::fs::create_dir_all(repo.join("refs")).unwrap();
        std::fs::write(repo.join("refs/main"), commit).unwrap();
        for (i, (name, source)) in files.iter().enumerate() {
            let blob = repo.join("blobs").join(format!("blob{i}"));
            std::fs::create_dir_all(blob.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(source.canonicalize().unwrap(), &blob).unwrap();
            let link = repo.join("snapshots").join(commit).join(name);
            std::fs::create_dir_all(link.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(&blob, &link).unwrap();
        }
        commit.to_owned()
    }

    fn options(hub: &Path, offline: bool) -> ResolveOptions {
        ResolveOptions {
            models_dir: None,
            hub_cache: hub.to_owned(),
            offline,
            endpoint: Some("http://127.0.0.1:9".into()),
            token: None,
        }
    }

    #[test]
    fn finds_a_snapshot_in_the_hub_cache() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("src");
        std::fs::create_dir_all(&src).unwrap();
        let files: Vec<(&str, PathBuf)> = REQUIRED
            .iter()
            .map(|f| (*f, src.join(f.replace('/', "_"))))
            .collect();
        for (_, p) in &files {
            std::fs::write(p, "{}").unwrap();
        }
        let hub = tmp.path().join("hub");
        let refs: Vec<(&str, &Path)> = files.iter().map(|(n, p)| (*n, p.as_path())).collect();
        let commit = hub_cache_fixture(&hub, "acme/tiny", &refs);
        let got = resolve_model("acme/tiny", &options(&hub, true)).unwrap();
        assert_eq!(got.name, "acme/tiny");
        assert_eq!(got.revision.as_deref(), Some(commit.as_str()));
        assert!(got.dir.join("config.json").exists());
    }

    #[test]
    fn offline_miss_says_what_to_do() {
        let tmp = tempfile::tempdir().unwrap();
        let err = resolve_model("acme/missing", &options(tmp.path(), true))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("HF_HUB_OFFLINE") && err.contains("huggingface-cli download acme/missing"),
            "{err}"
        );
    }

    #[test]
    fn online_miss_reports_the_download_failure_and_the_fix() {
        // the endpoint is a closed loopback port: the real download path runs and fails fast
        let tmp = tempfile::tempdir().unwrap();
        let err = resolve_model("acme/missing", &options(tmp.path(), false))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("could not download config.json") && err.contains("offline?"),
            "{err}"
        );
    }

    #[test]
    fn plain_names_need_a_folder() {
        let err = resolve_model("no-such-model", &ResolveOptions::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("not found"), "{err}");
    }
}
