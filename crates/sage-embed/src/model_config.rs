//! The fields of a model's `config.json` that every family's layers read, the pooling a
//! `1_Pooling/config.json` names, and how a JSON file of a model folder is read. The layers
//! depend on these alone; what a whole sentence-transformers folder declares, and which family
//! runs it, is [`crate::config`], above them.

use std::path::Path;

use serde::Deserialize;

use crate::error::{config_error, file_error, Result};

/// How token vectors become one text vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pooling {
    /// Mean over the non-padding tokens of the last layer.
    Mean,
    /// The first (`[CLS]`) token of the last layer.
    Cls,
    /// Element-wise max over the non-padding tokens.
    Max,
    /// Sum over non-padding tokens divided by √(token count).
    MeanSqrtLen,
    /// The last non-padding token of the last layer (decoder embedders).
    LastToken,
    /// Mean over non-padding tokens weighted by position (1, 2, ...), SGPT's.
    WeightedMean,
    /// Mean over non-padding tokens of (first layer output + last layer output) / 2, SimCSE's
    /// and EvalRank's "first-last-avg" (first layer = output of transformer layer 1, not the
    /// embedding layer).
    FirstLastAvg,
}

impl Pooling {
    /// Name used in identities and reports.
    pub fn name(self) -> &'static str {
        match self {
            Pooling::Mean => "mean",
            Pooling::Cls => "cls",
            Pooling::Max => "max",
            Pooling::MeanSqrtLen => "mean-sqrt-len",
            Pooling::LastToken => "lasttoken",
            Pooling::WeightedMean => "weightedmean",
            Pooling::FirstLastAvg => "first-last-avg",
        }
    }

    /// Parses a name of [`Pooling::name`].
    pub fn from_name(name: &str) -> Option<Pooling> {
        [
            Pooling::Mean,
            Pooling::Cls,
            Pooling::Max,
            Pooling::MeanSqrtLen,
            Pooling::LastToken,
            Pooling::WeightedMean,
            Pooling::FirstLastAvg,
        ]
        .into_iter()
        .find(|p| p.name() == name)
    }
}

/// The fields of `config.json` every architecture has: BERT's names, or the GPT-2 names
/// NomicBERT's config uses for the same things.
#[derive(Clone, Debug, Deserialize)]
pub struct TransformerConfig {
    /// "bert", "mpnet", "roberta", "xlm-roberta", "modernbert", "nomic_bert" or a decoder's.
    pub model_type: String,
    /// Vocabulary size.
    pub vocab_size: usize,
    /// Hidden width.
    #[serde(alias = "n_embd")]
    pub hidden_size: usize,
    /// Number of layers.
    #[serde(alias = "n_layer")]
    pub num_hidden_layers: usize,
    /// Attention heads.
    #[serde(alias = "n_head")]
    pub num_attention_heads: usize,
    /// Feed-forward width (0 where the config leaves it to a default, as GPT-2-style ones may).
    #[serde(default, alias = "n_inner", deserialize_with = "null_as_zero_usize")]
    pub intermediate_size: usize,
    /// Activation ("gelu").
    #[serde(default = "default_act")]
    pub hidden_act: String,
    /// Position table size.
    #[serde(alias = "n_positions")]
    pub max_position_embeddings: usize,
    /// Token-type table size (BERT).
    #[serde(default)]
    pub type_vocab_size: usize,
    /// LayerNorm epsilon.
    #[serde(default = "default_eps", alias = "layer_norm_epsilon")]
    pub layer_norm_eps: f64,
    /// Padding token id (0 when the config has none, as decoders often do).
    #[serde(default, deserialize_with = "null_as_zero")]
    pub pad_token_id: u32,
    /// MPNet's relative-attention buckets.
    #[serde(default = "default_buckets")]
    pub relative_attention_num_buckets: usize,
}

fn null_as_zero<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<u32, D::Error> {
    Ok(Option::<u32>::deserialize(d)?.unwrap_or(0))
}

fn null_as_zero_usize<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<usize, D::Error> {
    Ok(Option::<usize>::deserialize(d)?.unwrap_or(0))
}

fn default_act() -> String {
    "gelu".into()
}
fn default_eps() -> f64 {
    1e-12
}
fn default_buckets() -> usize {
    32
}

pub(crate) fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let text =
        std::fs::read_to_string(path).map_err(|e| file_error(path, format!("cannot read: {e}")))?;
    serde_json::from_str(&text).map_err(|e| config_error(path, format!("line {}: {e}", e.line())))
}
