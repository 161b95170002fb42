//! What a model folder holds, told from its files before anything is loaded: the one test that
//! the resolver (listing the models on this machine) and the loader (choosing how to build one)
//! share.

use std::path::Path;

use crate::error::{file_error, Result};
use crate::model_config::read_json;

/// What kind of model a folder holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelKind {
    /// A sentence-transformers folder (an encoder or a decoder).
    Transformer,
    /// A word-vector file: GloVe text, fastText `.vec` or word2vec binary.
    WordVectors,
    /// A model2vec static model.
    Model2Vec,
}

/// Tells the kind of a resolved model folder (or word-vector file) from its files.
pub fn detect_kind(dir: &Path) -> Result<ModelKind> {
    if dir.is_file() {
        return if is_word_vector_file(dir, true) {
            Ok(ModelKind::WordVectors)
        } else {
            Err(file_error(
                dir,
                "not a model folder or a word-vector file (glove*.txt, *.vec, word2vec *.bin)",
            ))
        };
    }
    let binary_ok = !dir.join("config.json").exists();
    if std::fs::read_dir(dir)
        .map_err(|e| file_error(dir, e))?
        .filter_map(|e| e.ok())
        .any(|e| is_word_vector_file(&e.path(), binary_ok))
    {
        return Ok(ModelKind::WordVectors);
    }
    let config: serde_json::Value = read_json(&dir.join("config.json"))?;
    if config.get("model_type").is_some() {
        Ok(ModelKind::Transformer)
    } else {
        Ok(ModelKind::Model2Vec)
    }
}

/// Whether `path` is a word-vector file by its name: `glove*.txt`, `*.vec`, or (`binary_ok`) a
/// word2vec `*.bin`.
pub(crate) fn is_word_vector_file(path: &Path, binary_ok: bool) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    (name.starts_with("glove") && ext == "txt") || ext == "vec" || (binary_ok && ext == "bin")
}
