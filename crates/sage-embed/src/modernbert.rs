//! ModernBERT (gte-modernbert): a bidirectional encoder with rotary positions, GeGLU feed-forward
//! blocks, bias-free pre-norm layers, and every `global_attn_every_n_layers`-th layer global while
//! the others see a window of `local_attention` tokens (with their own rotary base).
//!
//! Follows transformers' `modeling_modernbert` (its padded SDPA path); tests hold it to that on
//! small random checkpoints (tests/python-reference/tiny_models.py).

use candle_core::{DType, Device, Module, Tensor};
use candle_nn::{embedding, linear_b, Embedding, LayerNorm, Linear, VarBuilder};
use serde::Deserialize;

use crate::attention::{additive_mask, attend, rotary_tables, split_fused_qkv};

/// The fields of a ModernBERT config.json this module reads.
#[derive(Clone, Debug, Deserialize)]
pub struct ModernBertConfig {
    /// Vocabulary size.
    pub vocab_size: usize,
    /// Model width.
    pub hidden_size: usize,
    /// Feed-forward width (the GeGLU's, half of `Wi`'s output).
    pub intermediate_size: usize,
    /// Layers.
    pub num_hidden_layers: usize,
    /// Attention heads.
    pub num_attention_heads: usize,
    /// LayerNorm epsilon.
    #[serde(default = "default_eps")]
    pub norm_eps: f64,
    /// Whether the LayerNorms have biases.
    #[serde(default)]
    pub norm_bias: bool,
    /// Whether the attention projections have biases.
    #[serde(default)]
    pub attention_bias: bool,
    /// Whether the feed-forward projections have biases.
    #[serde(default)]
    pub mlp_bias: bool,
    /// Every this many layers one is global (layer 0 is).
    #[serde(default = "default_every")]
    pub global_attn_every_n_layers: usize,
    /// Window of local layers, in tokens (a token sees `local_attention / 2` either side).
    #[serde(default = "default_window")]
    pub local_attention: usize,
    /// Rotary base of global layers.
    #[serde(default = "default_global_theta")]
    pub global_rope_theta: f64,
    /// Rotary base of local layers (default: the global one).
    #[serde(default)]
    pub local_rope_theta: Option<f64>,
    /// Feed-forward activation.
    #[serde(default = "default_act")]
    pub hidden_activation: String,
}

fn default_eps() -> f64 {
    1e-5
}
fn default_every() -> usize {
    3
}
fn default_window() -> usize {
    128
}
fn default_global_theta() -> f64 {
    160_000.0
}
fn default_act() -> String {
    "gelu".into()
}

struct Layer {
    attn_norm: Option<LayerNorm>,
    qkv: Linear,
    out: Linear,
    mlp_norm: LayerNorm,
    wi: Linear,
    wo: Linear,
    local: bool,
}

/// A ModernBERT backbone: token ids in, last hidden states out.
pub struct ModernBert {
    embed: Embedding,
    embed_norm: LayerNorm,
    layers: Vec<Layer>,
    final_norm: LayerNorm,
    heads: usize,
    head_dim: usize,
    hidden: usize,
    exact_gelu: bool,
    global_theta: f64,
    local_theta: f64,
    window: usize,
    device: Device,
    dtype: DType,
}

fn norm(size: usize, eps: f64, bias: bool, vb: VarBuilder) -> candle_core::Result<LayerNorm> {
    let weight = vb.get(size, "weight")?;
    Ok(if bias {
        LayerNorm::new(weight, vb.get(size, "bias")?, eps)
    } else {
        LayerNorm::new_no_bias(weight, eps)
    })
}

impl ModernBert {
    /// Loads the weights under `vb` (a `model.` prefix is accepted).
    pub fn load(vb: VarBuilder, config: &ModernBertConfig) -> candle_core::Result<ModernBert> {
        let vb = if vb.contains_tensor("model.embeddings.tok_embeddings.weight") {
            vb.pp("model")
        } else {
            vb
        };
        let h = config.hidden_size;
        let eps = config.norm_eps;
        let exact_gelu = match config.hidden_activation.as_str() {
            "gelu" => true,
            "gelu_new" | "gelu_pytorch_tanh" => false,
            other => candle_core::bail!(
                "hidden_activation {other:?} is not supported (gelu, gelu_pytorch_tanh)"
            ),
        };
        let every = config.global_attn_every_n_layers.max(1);
        let layers = (0..config.num_hidden_layers)
            .map(|i| {
                let l = vb.pp(format!("layers.{i}"));
                Ok(Layer {
                    // the first layer reads the embedding norm's output directly
                    attn_norm: (i > 0)
                        .then(|| norm(h, eps, config.norm_bias, l.pp("attn_norm")))
                        .transpose()?,
                    qkv: linear_b(h, 3 * h, config.attention_bias, l.pp("attn.Wqkv"))?,
                    out: linear_b(h, h, config.attention_bias, l.pp("attn.Wo"))?,
                    mlp_norm: norm(h, eps, config.norm_bias, l.pp("mlp_norm"))?,
                    wi: linear_b(
                        h,
                        2 * config.intermediate_size,
                        config.mlp_bias,
                        l.pp("mlp.Wi"),
                    )?,
                    wo: linear_b(config.intermediate_size, h, config.mlp_bias, l.pp("mlp.Wo"))?,
                    local: i % every != 0,
                })
            })
            .collect::<candle_core::Result<Vec<_>>>()?;
        Ok(ModernBert {
            embed: embedding(config.vocab_size, h, vb.pp("embeddings.tok_embeddings"))?,
            embed_norm: norm(h, eps, config.norm_bias, vb.pp("embeddings.norm"))?,
            final_norm: norm(h, eps, config.norm_bias, vb.pp("final_norm"))?,
            layers,
            heads: config.num_attention_heads,
            head_dim: h / config.num_attention_heads,
            hidden: h,
            exact_gelu,
            global_theta: config.global_rope_theta,
            local_theta: config.local_rope_theta.unwrap_or(config.global_rope_theta),
            window: config.local_attention,
            device: vb.device().clone(),
            dtype: vb.dtype(),
        })
    }

    /// Width of the hidden states.
    pub fn hidden_size(&self) -> usize {
        self.hidden
    }

    /// Additive masks [batch, 1, tokens, tokens]: global (every real key) and local (real keys
    /// within `local_attention / 2` either side).
    fn masks(&self, lengths: &[usize], tokens: usize) -> candle_core::Result<(Tensor, Tensor)> {
        let reach = self.window / 2;
        let build = |local: bool| {
            additive_mask(lengths, tokens, &self.device, self.dtype, |q, k| {
                !local || q.abs_diff(k) <= reach
            })
        };
        Ok((build(false)?, build(true)?))
    }

    /// Last hidden states [batch, tokens, hidden] of right-padded `ids` with `lengths` real
    /// tokens each.
    pub fn forward(&self, ids: &[Vec<u32>], lengths: &[usize]) -> candle_core::Result<Tensor> {
        let (batch, tokens) = (ids.len(), ids.first().map_or(0, Vec::len));
        let flat: Vec<u32> = ids.iter().flatten().copied().collect();
        let input = Tensor::from_vec(flat, (batch, tokens), &self.device)?;
        let mut x = self.embed_norm.forward(&self.embed.forward(&input)?)?;
        let global = rotary_tables(
            self.head_dim,
            tokens,
            self.global_theta,
            &self.device,
            self.dtype,
        )?;
        let local = rotary_tables(
            self.head_dim,
            tokens,
            self.local_theta,
            &self.device,
            self.dtype,
        )?;
        let (global_mask, local_mask) = self.masks(lengths, tokens)?;
        for layer in &self.layers {
            let ((cos, sin), mask) = if layer.local {
                (&local, &local_mask)
            } else {
                (&global, &global_mask)
            };
            let h = match &layer.attn_norm {
                Some(n) => n.forward(&x)?,
                None => x.clone(),
            };
            let (q, k, v) = split_fused_qkv(&layer.qkv.forward(&h)?, self.heads, self.head_dim)?;
            let q = candle_nn::rotary_emb::rope(&q, cos, sin)?;
            let k = candle_nn::rotary_emb::rope(&k, cos, sin)?;
            let context = attend(&q, &k, &v, mask, (self.head_dim as f64).powf(-0.5))?;
            x = (x + layer.out.forward(&context)?)?;
            let h = layer.mlp_norm.forward(&x)?;
            let wi = layer.wi.forward(&h)?;
            let half = wi.dim(2)? / 2;
            let (input, gate) = (wi.narrow(2, 0, half)?, wi.narrow(2, half, half)?);
            let input = if self.exact_gelu {
                input.gelu_erf()?
            } else {
                input.gelu()?
            };
            x = (x + layer.wo.forward(&(input * gate)?)?)?;
        }
        self.final_norm.forward(&x)
    }
}

impl crate::backbone::Backbone for ModernBert {
    fn hidden_size(&self) -> usize {
        ModernBert::hidden_size(self)
    }

    fn forward(&self, batch: &crate::backbone::PaddedBatch) -> candle_core::Result<Tensor> {
        ModernBert::forward(self, &batch.ids, &batch.lengths)
    }
}
