//! # sage-embed
//!
//! Local embedding models behind sage-core's [`Embedder`](sage_core::Embedder) trait, so every task can use them
//! through [`sage_core::EmbeddingSimilarity`] exactly like a classical metric.
//!
//! - [`SentenceTransformer`]: sentence-transformers folders as they are (config.json,
//!   tokenizer.json, model.safetensors, modules.json, 1_Pooling/config.json,
//!   sentence_bert_config.json) for BERT-family and MPNet checkpoints, on a candle encoder
//!   ([`encoder`] explains why it is our own). Pooling and normalisation as the folder declares
//!   (or overridden, e.g. EvalRank's first-last-avg); truncation at the real max_seq_length;
//!   length-sorted batches under a token budget, results in input order. The folder's prompts
//!   (config_sentence_transformers.json) are applied through [`sage_core::Role`]s. The model
//!   families are one table, [`FAMILIES`]: a family is its module (an `impl Backbone`) and one
//!   line there.
//! - [`WordVectors`] (EvalRank's bag-of-words over GloVe, fastText `.vec` or word2vec binary
//!   files) and [`Model2Vec`] static models.
//! - [`resolve_model`]: a path, a folder under SAGE_MODELS_DIR, or a hub id from the HF cache
//!   (HF_HUB_OFFLINE honoured) or the hub.
//! - remote models, from the sage-remote crate: API models and embedding servers (`openai:`,
//!   `voyage:`, `cohere:`, `gemini:` specs) with batching, concurrency, rate ceilings, retries
//!   and checked answers, loaded by [`load`] like a local folder.
//! - [`CachedEmbedder`]: a crash-safe persistent cache keyed by model identity, role and text;
//!   a remote embedder's answers are stored as each arrives.
//! - [`load`]: the one way from a spec to a ready embedder behind its cache, which the CLI, the
//!   Python module and the suites share; its [`LoadedModel`] answers for the cache's hits and a
//!   remote model's plan and usage afterwards.
//!
//! CPU runs in f32, short batches packed (no padding rows) through fused kernels; the `cuda`
//! feature runs the transformer in f16 on the first GPU.
#![deny(missing_docs)]

/// The [`sage_core::Embedder`] methods a wrapper (the cache, the meter, a Matryoshka cut) passes
/// to the model inside it unchanged, written once: `pass_through!(inner: identity, compute)`
/// in the wrapper's `impl Embedder`.
macro_rules! pass_through {
    ($inner:ident: $($method:ident),+ $(,)?) => {
        $(pass_through!(@one $inner $method);)+
    };
    (@one $inner:ident identity) => {
        fn identity(&self) -> &sage_core::EmbedderIdentity {
            self.$inner.identity()
        }
    };
    (@one $inner:ident dimension) => {
        fn dimension(&self) -> usize {
            self.$inner.dimension()
        }
    };
    (@one $inner:ident role_variant) => {
        fn role_variant(&self, role: sage_core::Role) -> Option<String> {
            self.$inner.role_variant(role)
        }
    };
    (@one $inner:ident remote_usage) => {
        fn remote_usage(&self) -> Option<sage_core::RemoteUsage> {
            self.$inner.remote_usage()
        }
    };
    (@one $inner:ident count_tokens) => {
        fn count_tokens(&self, texts: &[&str]) -> Option<Vec<usize>> {
            self.$inner.count_tokens(texts)
        }
    };
    (@one $inner:ident load_seconds) => {
        fn load_seconds(&self) -> Option<f64> {
            self.$inner.load_seconds()
        }
    };
    (@one $inner:ident compute) => {
        fn compute(&self) -> Option<String> {
            self.$inner.compute()
        }
    };
    (@one $inner:ident matryoshka_trained) => {
        fn matryoshka_trained(&self) -> Option<bool> {
            self.$inner.matryoshka_trained()
        }
    };
    (@one $inner:ident full_precision) => {
        fn full_precision(&self) -> sage_core::Result<Option<&dyn sage_core::Embedder>> {
            self.$inner.full_precision()
        }
    };
    (@one $inner:ident delivers_batches) => {
        fn delivers_batches(&self) -> bool {
            self.$inner.delivers_batches()
        }
    };
}

mod attention;
mod auto_precision;
mod backbone;
mod cache;
mod calibration;
mod config;
pub mod decoder;
pub mod encoder;
mod error;
mod families;
mod fetch;
mod loader;
mod matryoshka;
mod model_config;
mod model_kind;
pub mod modernbert;
pub mod nomic_bert;
mod resolve;
mod static_models;
mod transformer;

use std::io::Read;
use std::path::Path;

pub use auto_precision::{choose_precision, decide_precision, PrecisionVerdict, MIN_SPEEDUP};
pub use cache::{
    check_cache, default_cache_path, merge_caches, CacheCheck, CacheStats, CachedEmbedder,
    PlanCounts, TokenCounter,
};
pub use calibration::{calibration_texts, MIN_COSINE};
pub use config::{DenseActivation, DenseModule, Prompts, SentenceTransformerConfig};
pub use error::{EmbedError, Result};
pub use families::{family_of, Family, FAMILIES};
pub use fetch::{fetch_model, hub_model, Fetched, HubModel, HUB_MODELS, NOT_ON_THE_HUB};
pub use loader::{load, load_embedder, CacheUse, LoadOptions, LoadedModel, Metered, ModelSource};
pub use matryoshka::Truncated;
pub use model_config::{Pooling, TransformerConfig};
pub use model_kind::{detect_kind, ModelKind};
pub use resolve::{discover_models, resolve_model, ResolveOptions, ResolvedModel};
/// The precision of a local encoder's dense products (`--precision`), sage-kernels' own.
pub use sage_kernels::Precision;
pub use static_models::{bow_tokens, Model2Vec, WordVectors};
pub use transformer::{SentenceTransformer, TransformerOptions};

/// `sha256:` and the first 16 hex digits of a file's SHA-256: the revision of local weights.
pub(crate) fn file_digest(path: &Path) -> Result<String> {
    use sha2::{Digest, Sha256};
    let mut file = std::fs::File::open(path)
        .map_err(|e| error::file_error(path, format!("cannot open: {e}")))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file
            .read(&mut buf)
            .map_err(|e| error::file_error(path, format!("cannot read: {e}")))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    let digest = hasher.finalize();
    Ok(format!(
        "sha256:{}",
        digest
            .iter()
            .take(8)
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    ))
}

#[cfg(test)]
mod golden;
/// What [`merge_caches`] did (one shape for every kind of cache file).
pub use sage_cache::CacheMerge;
