//! Finding a model: a local folder, a folder under SAGE_MODELS_DIR, or a Hugging Face hub id
//! (from the hub cache, or downloaded when the hub is allowed).

use std::path::{Path, PathBuf};

use hf_hub::{Repo, RepoType};
use sage_core::{DiscoveredModel, ModelOrigin};
use sage_hub::HubSettings;

use crate::error::{EmbedError, Result};
use crate::model_kind::{detect_kind, ModelKind};

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
    /// The hub cache, offline mode, endpoint and token (sage-hub).
    pub hub: HubSettings,
}

impl ResolveOptions {
    /// From SAGE_MODELS_DIR (default ~/.cache/sage-models) and the hub variables
    /// ([`HubSettings::from_env`]).
    pub fn from_env() -> ResolveOptions {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let default_models = env("HOME").map(|h| PathBuf::from(h).join(".cache/sage-models"));
        ResolveOptions {
            models_dir: env("SAGE_MODELS_DIR").map(PathBuf::from).or(default_models),
            hub: HubSettings::from_env(),
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

fn resolve_hub(id: &str, options: &ResolveOptions) -> Result<ResolvedModel> {
    let repo = Repo::with_revision(id.to_owned(), RepoType::Model, "main".to_owned());
    let hint = format!(
        "put the model folder at {} (bash ../shared/tools/fetch-models.sh makes the standard ones) \
         or pass a local folder path",
        options.models_dir.as_ref().map_or_else(
            || "$SAGE_MODELS_DIR/<name>".to_owned(),
            |d| d.join(id.rsplit('/').next().unwrap_or(id)).display().to_string()
        ),
    );
    let mut dir = None;
    for file in REQUIRED {
        let got = options
            .hub
            .get(&repo, file, &hint)
            .map_err(|e| EmbedError::Resolve(format!("model {id:?}: {e}")))?;
        dir.get_or_insert_with(|| got.parent().expect("snapshot folder").to_owned());
    }
    for file in OPTIONAL {
        // absent in some repositories: a failure here is not an error
        let _ = options.hub.get(&repo, file, "");
    }
    Ok(ResolvedModel {
        dir: dir.expect("REQUIRED is not empty"),
        name: id.to_owned(),
        revision: options.hub.cached_commit(&repo),
    })
}

/// Every embedding model on this machine: the folders under SAGE_MODELS_DIR that hold one
/// (a sentence-transformers folder, a GloVe file or a static model; GGUF LLMs are not
/// embedders and are left out), then the hub cache's model snapshots that hold the
/// sentence-transformers files and are not already listed by name. Sorted by spec.
pub fn discover_models(options: &ResolveOptions) -> Vec<DiscoveredModel> {
    let mut found: Vec<DiscoveredModel> = Vec::new();
    let is_embedder = |dir: &Path| detect_kind(dir).is_ok();
    let folders = |dir: &Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|r| r.filter_map(|e| e.ok()).map(|e| e.path()).collect())
            .unwrap_or_default();
        v.sort();
        v
    };
    if let Some(models) = &options.models_dir {
        for dir in folders(models) {
            if dir.is_dir() && is_embedder(&dir) {
                found.push(DiscoveredModel {
                    spec: dir
                        .file_name()
                        .unwrap_or_default()
                        .to_string_lossy()
                        .into_owned(),
                    precisions: lower_precisions(&dir),
                    dir,
                    origin: ModelOrigin::ModelsDir,
                });
            }
        }
    }
    for repo in folders(&options.hub.cache) {
        let name = repo
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let Some(id) = name
            .strip_prefix("models--")
            .map(|id| id.replace("--", "/"))
        else {
            continue;
        };
        let Ok(commit) = std::fs::read_to_string(repo.join("refs/main")) else {
            continue;
        };
        let snapshot = repo.join("snapshots").join(commit.trim());
        let short = id.rsplit('/').next().unwrap_or(&id).to_owned();
        if REQUIRED.iter().all(|f| snapshot.join(f).is_file())
            && is_embedder(&snapshot)
            && !found.iter().any(|m| m.spec == short || m.spec == id)
        {
            found.push(DiscoveredModel {
                spec: id,
                precisions: lower_precisions(&snapshot),
                dir: snapshot,
                origin: ModelOrigin::HubCache,
            });
        }
    }
    found.sort_by(|a, b| a.spec.cmp(&b.spec));
    found
}

/// The lower precisions the model in `dir` runs (`--precision`): its family's, for a
/// transformer whose family takes them; none for the others.
fn lower_precisions(dir: &Path) -> Vec<String> {
    let takes = matches!(detect_kind(dir), Ok(ModelKind::Transformer))
        && crate::config::SentenceTransformerConfig::read(dir)
            .is_ok_and(|config| config.family.lower_precision);
    if !takes {
        return Vec::new();
    }
    crate::Precision::ALL
        .into_iter()
        .filter(|p| *p != crate::Precision::F32)
        .map(|p| p.name().to_owned())
        .collect()
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
            hub: HubSettings {
                cache: hub.to_owned(),
                offline,
                endpoint: Some("http://127.0.0.1:9".into()),
                token: None,
            },
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
            err.contains("could not download config.json") && err.contains("HF_HUB_OFFLINE=1"),
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

    #[test]
    fn discovery_lists_embedders_from_both_places_once() {
        let tmp = tempfile::tempdir().unwrap();
        let models = tmp.path().join("models");
        // a transformer folder, a GloVe folder, a GGUF folder (not an embedder), a stray file
        let bert = models.join("tiny-bert");
        std::fs::create_dir_all(&bert).unwrap();
        std::fs::write(bert.join("config.json"), r#"{"model_type": "bert"}"#).unwrap();
        let glove = models.join("glove.6B.50d");
        std::fs::create_dir_all(&glove).unwrap();
        std::fs::write(glove.join("glove.6B.50d.txt"), "the 0.1 0.2\n").unwrap();
        let gguf = models.join("SmolLM2-GGUF");
        std::fs::create_dir_all(&gguf).unwrap();
        std::fs::write(gguf.join("model.gguf"), "GGUF").unwrap();
        std::fs::write(models.join("notes.txt"), "").unwrap();
        // the hub cache: one new model, and one that SAGE_MODELS_DIR already has by name
        let src = tmp.path().join("src");
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(src.join("config.json"), r#"{"model_type": "mpnet"}"#).unwrap();
        std::fs::write(src.join("other"), "{}").unwrap();
        let files = [
            ("config.json", src.join("config.json")),
            ("tokenizer.json", src.join("other")),
            ("model.safetensors", src.join("other")),
        ];
        let refs: Vec<(&str, &Path)> = files.iter().map(|(n, p)| (*n, p.as_path())).collect();
        let hub = tmp.path().join("hub");
        hub_cache_fixture(&hub, "acme/hub-mpnet", &refs);
        hub_cache_fixture(&hub, "acme/tiny-bert", &refs);
        let mut opts = options(&hub, true);
        opts.models_dir = Some(models);
        let found: Vec<(String, ModelOrigin)> = discover_models(&opts)
            .into_iter()
            .map(|m| (m.spec, m.origin))
            .collect();
        assert_eq!(
            found,
            [
                ("acme/hub-mpnet".to_owned(), ModelOrigin::HubCache),
                ("glove.6B.50d".to_owned(), ModelOrigin::ModelsDir),
                ("tiny-bert".to_owned(), ModelOrigin::ModelsDir),
            ]
        );
    }
}
