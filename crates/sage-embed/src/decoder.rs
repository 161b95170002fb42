//! Decoder-only transformers used as embedders: Qwen3 (qwen3-embedding), Qwen2 (gte-Qwen2),
//! Mistral and LLaMA (e5-mistral-7b-instruct, LLaMA-2 as ALIGN-SIM's encoder) and Gemma 3
//! (embeddinggemma, bidirectional).
//!
//! Why our own and not candle-transformers': its decoders are written for generation (a KV cache,
//! a causal mask without padding, logits out); an embedder needs the last hidden states of a
//! padded batch under a padding mask, causal or bidirectional. The layer arithmetic follows
//! transformers' modelling files, and the tests hold it to transformers' own outputs on small
//! random checkpoints (tests/python-reference/tiny_models.py).
//!
//! Batches are right-padded here whatever the tokenizer's side: rotary positions make attention
//! depend only on the distance between tokens, so a text gets the same vector in any batch, and
//! last-token pooling reads each text's last real token.

use candle_core::{DType, Device, Module, Tensor, D};
use candle_nn::{embedding, linear_b, linear_no_bias, Embedding, Linear, VarBuilder};
use serde::Deserialize;

use crate::attention::{additive_mask, attend, rotary_tables};

/// Which decoder family a config.json describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecoderFamily {
    /// LLaMA and Mistral: RMSNorm, SwiGLU, grouped-query attention, no biases.
    Llama,
    /// Qwen2: LLaMA's layers with biases on the query, key and value projections.
    Qwen2,
    /// Qwen3: LLaMA's layers with an RMSNorm on each head's queries and keys.
    Qwen3,
    /// Gemma 3: scaled embeddings, (1 + w) RMSNorms around both blocks, query/key norms,
    /// GELU-tanh gating, sliding-window layers with their own rotary base.
    Gemma3,
}

/// The fields of a decoder's config.json this module reads.
#[derive(Clone, Debug, Deserialize)]
pub struct DecoderConfig {
    /// Vocabulary size.
    pub vocab_size: usize,
    /// Model width.
    pub hidden_size: usize,
    /// Feed-forward width.
    pub intermediate_size: usize,
    /// Layers.
    pub num_hidden_layers: usize,
    /// Query heads.
    pub num_attention_heads: usize,
    /// Key/value heads (grouped-query attention); default: as many as query heads.
    #[serde(default)]
    pub num_key_value_heads: Option<usize>,
    /// Width of a head; default `hidden_size / num_attention_heads`.
    #[serde(default)]
    pub head_dim: Option<usize>,
    /// RMSNorm epsilon.
    #[serde(default = "default_eps")]
    pub rms_norm_eps: f64,
    /// Rotary base of full-attention layers.
    #[serde(default = "default_theta")]
    pub rope_theta: f64,
    /// Gemma 3: rotary base of sliding-window layers.
    #[serde(default)]
    pub rope_local_base_freq: Option<f64>,
    /// Position limit.
    pub max_position_embeddings: usize,
    /// Feed-forward activation (`silu`, `gelu_pytorch_tanh`).
    #[serde(default)]
    pub hidden_act: Option<String>,
    /// Gemma 3's name for it.
    #[serde(default)]
    pub hidden_activation: Option<String>,
    /// Biases on the attention projections (LLaMA's `attention_bias`).
    #[serde(default)]
    pub attention_bias: bool,
    /// Sliding-window width of sliding layers.
    #[serde(default)]
    pub sliding_window: Option<usize>,
    /// Per layer: `sliding_attention` or `full_attention` (newer configs).
    #[serde(default)]
    pub layer_types: Option<Vec<String>>,
    /// Gemma 3: every this many layers one is global (older configs).
    #[serde(default)]
    pub sliding_window_pattern: Option<usize>,
    /// Gemma 3: attention scale `query_pre_attn_scalar^-0.5`.
    #[serde(default)]
    pub query_pre_attn_scalar: Option<f64>,
    /// Attention over the whole text instead of the causal past (embeddinggemma).
    #[serde(default)]
    pub use_bidirectional_attention: bool,
    /// Rotary scaling (`rope_scaling`); only none is supported.
    #[serde(default)]
    pub rope_scaling: Option<serde_json::Value>,
}

fn default_eps() -> f64 {
    1e-6
}
fn default_theta() -> f64 {
    10_000.0
}

struct RmsNorm {
    weight: Tensor,
    eps: f64,
}

impl RmsNorm {
    /// Gemma stores `w` for a scale of `1 + w`; the others store the scale.
    fn load(size: usize, eps: f64, plus_one: bool, vb: VarBuilder) -> candle_core::Result<RmsNorm> {
        let w = vb.get(size, "weight")?.to_dtype(DType::F32)?;
        let weight = if plus_one { (w + 1.0)? } else { w };
        Ok(RmsNorm { weight, eps })
    }

    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let dtype = x.dtype();
        let x = x.to_dtype(DType::F32)?;
        let mean_square = x.sqr()?.mean_keepdim(D::Minus1)?;
        let normed = x.broadcast_div(&(mean_square + self.eps)?.sqrt()?)?;
        normed.broadcast_mul(&self.weight)?.to_dtype(dtype)
    }
}

struct Layer {
    q: Linear,
    k: Linear,
    v: Linear,
    o: Linear,
    q_norm: Option<RmsNorm>,
    k_norm: Option<RmsNorm>,
    input_norm: RmsNorm,
    post_attention_norm: RmsNorm,
    /// Gemma 3's extra norms: before and after the feed-forward block.
    pre_ffn_norm: Option<RmsNorm>,
    post_ffn_norm: Option<RmsNorm>,
    gate: Linear,
    up: Linear,
    down: Linear,
    sliding: bool,
}

/// A decoder backbone: token ids in, last hidden states out.
pub struct Decoder {
    family: DecoderFamily,
    embed: Embedding,
    layers: Vec<Layer>,
    norm: RmsNorm,
    heads: usize,
    kv_heads: usize,
    head_dim: usize,
    hidden: usize,
    scale: f64,
    gelu: bool,
    theta: f64,
    local_theta: f64,
    window: Option<usize>,
    bidirectional: bool,
    device: Device,
    dtype: DType,
}

impl Decoder {
    /// Loads the weights under `vb` (a `model.` prefix, as causal-LM checkpoints have, is
    /// accepted).
    pub fn load(
        vb: VarBuilder,
        config: &DecoderConfig,
        family: DecoderFamily,
    ) -> candle_core::Result<Decoder> {
        if let Some(scaling) = config.rope_scaling.as_ref().filter(|v| !v.is_null()) {
            candle_core::bail!("rope_scaling {scaling} is not supported (only none)");
        }
        let vb = if vb.contains_tensor("model.embed_tokens.weight") {
            vb.pp("model")
        } else {
            vb
        };
        let h = config.hidden_size;
        let heads = config.num_attention_heads;
        let kv_heads = config.num_key_value_heads.unwrap_or(heads);
        let head_dim = config.head_dim.unwrap_or(h / heads);
        let eps = config.rms_norm_eps;
        let gemma = family == DecoderFamily::Gemma3;
        let act = config
            .hidden_activation
            .as_deref()
            .or(config.hidden_act.as_deref())
            .unwrap_or(if gemma { "gelu_pytorch_tanh" } else { "silu" });
        let gelu = match act {
            "silu" => false,
            "gelu_pytorch_tanh" | "gelu" if gemma => true,
            other => candle_core::bail!(
                "activation {other:?} is not supported (silu, gelu_pytorch_tanh)"
            ),
        };
        let bias = family == DecoderFamily::Qwen2 || config.attention_bias;
        let sliding_of = |i: usize| -> bool {
            match (&config.layer_types, config.sliding_window_pattern) {
                (Some(types), _) => types.get(i).is_some_and(|t| t == "sliding_attention"),
                (None, Some(p)) if gemma && p > 0 => !(i + 1).is_multiple_of(p),
                _ => false,
            }
        };
        let layers = (0..config.num_hidden_layers)
            .map(|i| {
                let l = vb.pp(format!("layers.{i}"));
                let a = l.pp("self_attn");
                let m = l.pp("mlp");
                let head_norms = matches!(family, DecoderFamily::Qwen3 | DecoderFamily::Gemma3);
                Ok(Layer {
                    q: linear_b(h, heads * head_dim, bias, a.pp("q_proj"))?,
                    k: linear_b(h, kv_heads * head_dim, bias, a.pp("k_proj"))?,
                    v: linear_b(h, kv_heads * head_dim, bias, a.pp("v_proj"))?,
                    o: linear_b(heads * head_dim, h, config.attention_bias, a.pp("o_proj"))?,
                    q_norm: head_norms
                        .then(|| RmsNorm::load(head_dim, eps, gemma, a.pp("q_norm")))
                        .transpose()?,
                    k_norm: head_norms
                        .then(|| RmsNorm::load(head_dim, eps, gemma, a.pp("k_norm")))
                        .transpose()?,
                    input_norm: RmsNorm::load(h, eps, gemma, l.pp("input_layernorm"))?,
                    post_attention_norm: RmsNorm::load(
                        h,
                        eps,
                        gemma,
                        l.pp("post_attention_layernorm"),
                    )?,
                    pre_ffn_norm: gemma
                        .then(|| RmsNorm::load(h, eps, true, l.pp("pre_feedforward_layernorm")))
                        .transpose()?,
                    post_ffn_norm: gemma
                        .then(|| RmsNorm::load(h, eps, true, l.pp("post_feedforward_layernorm")))
                        .transpose()?,
                    gate: linear_no_bias(h, config.intermediate_size, m.pp("gate_proj"))?,
                    up: linear_no_bias(h, config.intermediate_size, m.pp("up_proj"))?,
                    down: linear_no_bias(config.intermediate_size, h, m.pp("down_proj"))?,
                    sliding: sliding_of(i),
                })
            })
            .collect::<candle_core::Result<Vec<_>>>()?;
        Ok(Decoder {
            family,
            embed: embedding(config.vocab_size, h, vb.pp("embed_tokens"))?,
            norm: RmsNorm::load(h, eps, gemma, vb.pp("norm"))?,
            layers,
            heads,
            kv_heads,
            head_dim,
            hidden: h,
            scale: config
                .query_pre_attn_scalar
                .filter(|_| gemma)
                .unwrap_or(head_dim as f64)
                .powf(-0.5),
            gelu,
            theta: config.rope_theta,
            local_theta: config.rope_local_base_freq.unwrap_or(config.rope_theta),
            window: config.sliding_window,
            bidirectional: config.use_bidirectional_attention,
            device: vb.device().clone(),
            dtype: vb.dtype(),
        })
    }

    /// Width of the hidden states.
    pub fn hidden_size(&self) -> usize {
        self.hidden
    }

    fn rotary(&self, tokens: usize, theta: f64) -> candle_core::Result<(Tensor, Tensor)> {
        rotary_tables(self.head_dim, tokens, theta, &self.device, self.dtype)
    }

    /// Additive masks [batch, 1, tokens, tokens] for full and sliding layers: a key is seen when
    /// it is a real token, in the past (causal) or anywhere (bidirectional), and, in a sliding
    /// layer, within the window.
    fn masks(&self, lengths: &[usize], tokens: usize) -> candle_core::Result<(Tensor, Tensor)> {
        let build = |sliding: bool| {
            additive_mask(lengths, tokens, &self.device, self.dtype, |q, k| {
                // transformers' sliding overlays: causal kv > q - w; bidirectional |q - kv| < w
                let in_window = !sliding || self.window.is_none_or(|w| q.abs_diff(k) < w);
                (self.bidirectional || k <= q) && in_window
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
        let mut x = self.embed.forward(&input)?;
        if self.family == DecoderFamily::Gemma3 {
            // sqrt(hidden), rounded to the weights' dtype first, as transformers does
            let normaliser =
                Tensor::new((self.hidden as f32).sqrt(), &self.device)?.to_dtype(self.dtype)?;
            x = x.broadcast_mul(&normaliser)?;
        }
        let (cos, sin) = self.rotary(tokens, self.theta)?;
        let (local_cos, local_sin) = self.rotary(tokens, self.local_theta)?;
        let (full_mask, sliding_mask) = self.masks(lengths, tokens)?;
        for layer in &self.layers {
            let (cos, sin, mask) = if layer.sliding {
                (&local_cos, &local_sin, &sliding_mask)
            } else {
                (&cos, &sin, &full_mask)
            };
            let residual = x.clone();
            let h = layer.input_norm.forward(&x)?;
            let heads =
                |proj: &Linear, n: usize, norm: &Option<RmsNorm>| -> candle_core::Result<Tensor> {
                    let y = proj
                        .forward(&h)?
                        .reshape((batch, tokens, n, self.head_dim))?;
                    let y = match norm {
                        Some(norm) => norm.forward(&y)?,
                        None => y,
                    };
                    y.transpose(1, 2)?.contiguous()
                };
            let q = heads(&layer.q, self.heads, &layer.q_norm)?;
            let k = heads(&layer.k, self.kv_heads, &layer.k_norm)?;
            let v = heads(&layer.v, self.kv_heads, &None)?;
            let q = candle_nn::rotary_emb::rope(&q, cos, sin)?;
            let k = candle_nn::rotary_emb::rope(&k, cos, sin)?;
            let groups = self.heads / self.kv_heads;
            let repeat = |t: Tensor| -> candle_core::Result<Tensor> {
                if groups == 1 {
                    return Ok(t);
                }
                let (b, n, s, d) = t.dims4()?;
                t.unsqueeze(2)?
                    .expand((b, n, groups, s, d))?
                    .reshape((b, n * groups, s, d))
            };
            let (k, v) = (repeat(k)?, repeat(v)?);
            let context = attend(&q, &k, &v, mask, self.scale)?;
            let attended = layer.o.forward(&context)?;
            x = match self.family {
                DecoderFamily::Gemma3 => {
                    let attended = layer.post_attention_norm.forward(&attended)?;
                    let x = (residual + attended)?;
                    let h = layer.pre_ffn_norm.as_ref().expect("gemma").forward(&x)?;
                    let ffn = layer
                        .post_ffn_norm
                        .as_ref()
                        .expect("gemma")
                        .forward(&self.mlp(layer, &h)?)?;
                    (x + ffn)?
                }
                _ => {
                    let x = (residual + attended)?;
                    let h = layer.post_attention_norm.forward(&x)?;
                    (&x + self.mlp(layer, &h)?)?
                }
            };
        }
        self.norm.forward(&x)
    }

    fn mlp(&self, layer: &Layer, h: &Tensor) -> candle_core::Result<Tensor> {
        let gate = layer.gate.forward(h)?;
        let gate = if self.gelu {
            gate.gelu()?
        } else {
            candle_nn::ops::silu(&gate)?
        };
        layer.down.forward(&(gate * layer.up.forward(h)?)?)
    }
}

impl crate::backbone::Backbone for Decoder {
    fn hidden_size(&self) -> usize {
        Decoder::hidden_size(self)
    }

    fn forward(&self, batch: &crate::backbone::PaddedBatch) -> candle_core::Result<Tensor> {
        Decoder::forward(self, &batch.ids, &batch.lengths)
    }
}
