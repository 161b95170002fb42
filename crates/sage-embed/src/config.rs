//! Reading a sentence-transformers model folder's configuration.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{config_error, file_error, Result};
use crate::families::{family_of, supported_model_types, Family};
use crate::model_config::{read_json, Pooling, TransformerConfig};

impl TransformerConfig {
    /// The model family that runs this `model_type`, or an error naming the file and listing
    /// the families there are.
    pub fn family(&self, path: &Path) -> Result<&'static Family> {
        family_of(&self.model_type).ok_or_else(|| {
            config_error(
                path,
                format!(
                    "model_type {:?} is not supported ({})",
                    self.model_type,
                    supported_model_types()
                ),
            )
        })
    }
}

/// Everything a sentence-transformers folder declares.
#[derive(Clone, Debug)]
pub struct SentenceTransformerConfig {
    /// The folder.
    pub dir: PathBuf,
    /// config.json.
    pub transformer: TransformerConfig,
    /// The model family config.json's `model_type` names.
    pub family: &'static Family,
    /// 1_Pooling/config.json (mean when the folder has none, as sentence-transformers does).
    pub pooling: Pooling,
    /// A Normalize module is listed in modules.json.
    pub normalize: bool,
    /// sentence_bert_config.json's max_seq_length, capped by the position table.
    pub max_seq_length: usize,
    /// sentence_bert_config.json's do_lower_case.
    pub do_lower_case: bool,
    /// config_sentence_transformers.json's prompts.
    pub prompts: Prompts,
    /// 1_Pooling/config.json's `include_prompt` (false: prompt tokens are left out of pooling).
    pub include_prompt: bool,
    /// Dense modules after pooling, in the order modules.json lists them.
    pub dense: Vec<DenseModule>,
}

/// A sentence-transformers `Dense` module: `activation(W x + b)` on the pooled vector.
#[derive(Clone, Debug, PartialEq)]
pub struct DenseModule {
    /// The module's folder (config.json, model.safetensors).
    pub dir: PathBuf,
    /// Input width.
    pub in_features: usize,
    /// Output width.
    pub out_features: usize,
    /// Whether the layer has a bias.
    pub bias: bool,
    /// The activation after the linear map.
    pub activation: DenseActivation,
}

/// Activations a `Dense` module may name (`activation_function`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DenseActivation {
    /// `torch.nn.modules.linear.Identity`.
    Identity,
    /// `torch.nn.modules.activation.Tanh` (sentence-transformers' default).
    Tanh,
    /// `torch.nn.modules.activation.ReLU`.
    Relu,
    /// `torch.nn.modules.activation.GELU` (exact, erf).
    Gelu,
    /// `torch.nn.modules.activation.Sigmoid`.
    Sigmoid,
}

#[derive(Deserialize)]
struct DenseFile {
    in_features: usize,
    out_features: usize,
    #[serde(default = "yes")]
    bias: bool,
    #[serde(default = "default_dense_activation")]
    activation_function: String,
}

fn default_dense_activation() -> String {
    "torch.nn.modules.activation.Tanh".into()
}

fn read_dense(dir: &Path) -> Result<DenseModule> {
    let path = dir.join("config.json");
    let d: DenseFile = read_json(&path)?;
    let name = d.activation_function.rsplit('.').next().unwrap_or("");
    let activation = match name {
        "Identity" => DenseActivation::Identity,
        "Tanh" => DenseActivation::Tanh,
        "ReLU" => DenseActivation::Relu,
        "GELU" => DenseActivation::Gelu,
        "Sigmoid" => DenseActivation::Sigmoid,
        other => {
            return Err(config_error(
                &path,
                format!("activation_function {other:?} is not supported (Identity, Tanh, ReLU, GELU, Sigmoid)"),
            ))
        }
    };
    if !dir.join("model.safetensors").is_file() {
        return Err(file_error(
            dir.join("model.safetensors"),
            "missing (Dense modules are read from safetensors)",
        ));
    }
    Ok(DenseModule {
        dir: dir.to_owned(),
        in_features: d.in_features,
        out_features: d.out_features,
        bias: d.bias,
        activation,
    })
}

/// The prompts a sentence-transformers folder declares (`prompts`, `default_prompt_name` of
/// config_sentence_transformers.json), reached through [`sage_core::Role`]s.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Prompts {
    /// Prompt text by name.
    pub by_name: std::collections::BTreeMap<String, String>,
    /// Applied when a text has no prompt of its own, as `encode` does without `prompt_name`.
    pub default_name: Option<String>,
}

impl Prompts {
    /// The prompt prepended to texts in `role`: the `query` prompt for queries, the `document`
    /// (or `passage`, `corpus`) prompt for documents, else the default prompt; `None` when that
    /// is absent or empty.
    pub fn for_role(&self, role: sage_core::Role) -> Option<&str> {
        let names: &[&str] = match role {
            sage_core::Role::Query => &["query"],
            sage_core::Role::Document => &["document", "passage", "corpus"],
            sage_core::Role::Plain => &[],
        };
        names
            .iter()
            .find_map(|n| self.by_name.get(*n))
            .or_else(|| self.default_name.as_ref().and_then(|n| self.by_name.get(n)))
            .map(String::as_str)
            .filter(|p| !p.is_empty())
    }
}

#[derive(Deserialize, Default)]
struct StConfigFile {
    #[serde(default)]
    prompts: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    default_prompt_name: Option<String>,
}

#[derive(Deserialize)]
struct Module {
    #[serde(default)]
    path: String,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct PoolingFile {
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
    #[serde(default)]
    pooling_mode_lasttoken: bool,
    #[serde(default)]
    pooling_mode_weightedmean_tokens: bool,
    #[serde(default = "yes")]
    include_prompt: bool,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize)]
struct SbertFile {
    max_seq_length: Option<usize>,
    #[serde(default)]
    do_lower_case: bool,
}

impl SentenceTransformerConfig {
    /// Reads the folder's configuration files.
    pub fn read(dir: &Path) -> Result<SentenceTransformerConfig> {
        let config_path = dir.join("config.json");
        let transformer: TransformerConfig = read_json(&config_path)?;
        let family = transformer.family(&config_path)?;
        let modules_path = dir.join("modules.json");
        let (mut pooling, mut normalize, mut include_prompt) = (Pooling::Mean, false, true);
        let mut dense = Vec::new();
        if modules_path.is_file() {
            let modules: Vec<Module> = read_json(&modules_path)?;
            for m in &modules {
                let kind = m.kind.rsplit('.').next().unwrap_or(&m.kind);
                match kind {
                    "Transformer" => {}
                    "Pooling" => {
                        (pooling, include_prompt) =
                            read_pooling(&dir.join(&m.path).join("config.json"))?
                    }
                    "Dense" => dense.push(read_dense(&dir.join(&m.path))?),
                    "Normalize" => normalize = true,
                    other => {
                        return Err(config_error(
                            &modules_path,
                            format!(
                            "module {other:?} is not supported (Transformer, Pooling, Dense, Normalize)"
                        ),
                        ))
                    }
                }
            }
        }
        let sbert_path = dir.join("sentence_bert_config.json");
        let (max_seq, do_lower_case) = if sbert_path.is_file() {
            let s: SbertFile = read_json(&sbert_path)?;
            (s.max_seq_length, s.do_lower_case)
        } else {
            (None, false)
        };
        // RoBERTa-style position ids start after the padding id: the usable length is 2 shorter.
        let position_limit = if family.positions_after_padding {
            transformer.max_position_embeddings - transformer.pad_token_id as usize - 1
        } else {
            transformer.max_position_embeddings
        };
        let max_seq_length = max_seq.unwrap_or(position_limit).min(position_limit);
        let st_path = dir.join("config_sentence_transformers.json");
        let st: StConfigFile = if st_path.is_file() {
            read_json(&st_path)?
        } else {
            StConfigFile::default()
        };
        if let Some(name) = st.default_prompt_name.as_ref() {
            if !st.prompts.contains_key(name) {
                return Err(config_error(
                    &st_path,
                    format!("default_prompt_name {name:?} is not one of its prompts"),
                ));
            }
        }
        Ok(SentenceTransformerConfig {
            dir: dir.to_owned(),
            transformer,
            family,
            pooling,
            normalize,
            max_seq_length,
            do_lower_case,
            prompts: Prompts {
                by_name: st.prompts,
                default_name: st.default_prompt_name,
            },
            include_prompt,
            dense,
        })
    }
}

fn read_pooling(path: &Path) -> Result<(Pooling, bool)> {
    let p: PoolingFile = read_json(path)?;
    let modes = [
        (p.pooling_mode_cls_token, Pooling::Cls),
        (p.pooling_mode_mean_tokens, Pooling::Mean),
        (p.pooling_mode_max_tokens, Pooling::Max),
        (p.pooling_mode_mean_sqrt_len_tokens, Pooling::MeanSqrtLen),
        (p.pooling_mode_lasttoken, Pooling::LastToken),
        (p.pooling_mode_weightedmean_tokens, Pooling::WeightedMean),
    ];
    let mut chosen = modes.iter().filter(|(on, _)| *on).map(|(_, p)| *p);
    let pooling =
        match (chosen.next(), chosen.next()) {
            (Some(one), None) => one,
            _ => return Err(config_error(
                path,
                "exactly one pooling mode must be enabled (combined poolings are not supported)",
            )),
        };
    Ok((pooling, p.include_prompt))
}
