//! NomicBERT (nomic-embed-text-v1 and v1.5): a post-norm BERT with rotary positions, a fused
//! bias-free query/key/value projection and a gated (SwiGLU) feed-forward block.
//!
//! Follows the layer arithmetic of Nomic's `modeling_hf_nomic_bert.py` (the modelling file the
//! hub folders ship for `trust_remote_code`). Why our own and not candle-transformers'
//! `nomic_bert`: that one covers v1.5's exact configuration only. The modelling file also
//! reads `rotary_emb_fraction` below 1 (rotary on the first part of each head), GeGLU, GLU
//! and plain-GELU blocks, gated widths rounded up to a multiple of 256, absolute positions
//! when there is no rotary part, and `rotary_scaling_factor` (dynamic NTK, how v1.5 reaches
//! 8,192 tokens). A test holds this module to candle-transformers' on the configuration both
//! read, and tests/python-reference/tiny_models.py holds it to a PyTorch model on small random
//! checkpoints.
//!
//! Dynamic NTK scaling: the modelling file derives the rotary base from the padded length of
//! the batch, so a short text padded next to a long one would change. Here each text's base
//! comes from its own length, which is what the modelling file computes for the text alone;
//! a text gets the same vector in any batch.

use candle_core::{DType, Device, Module, Tensor};
use candle_nn::{embedding, linear_b, Embedding, LayerNorm, Linear, VarBuilder};
use serde::Deserialize;

use crate::attention::{additive_mask, attend, rotary_tables, split_fused_qkv};

/// The fields of a NomicBERT config.json this module reads (GPT-2-style names; defaults are
/// those of Nomic's `NomicBertConfig`).
#[derive(Clone, Debug, Deserialize)]
pub struct NomicBertConfig {
    /// Vocabulary size (before `pad_vocab_size_multiple` rounding).
    pub vocab_size: usize,
    /// Model width.
    pub n_embd: usize,
    /// Attention heads.
    pub n_head: usize,
    /// Layers.
    pub n_layer: usize,
    /// Feed-forward width (default 4 × width).
    #[serde(default)]
    pub n_inner: Option<usize>,
    /// Position limit.
    #[serde(default = "default_positions")]
    pub n_positions: usize,
    /// Token-type table size (0: none).
    #[serde(default = "default_type_vocab")]
    pub type_vocab_size: usize,
    /// LayerNorm epsilon.
    #[serde(default = "default_eps")]
    pub layer_norm_epsilon: f64,
    /// Share of each head that is rotated (0: absolute position embeddings instead).
    #[serde(default)]
    pub rotary_emb_fraction: f64,
    /// Rotary base.
    #[serde(default = "default_base")]
    pub rotary_emb_base: f64,
    /// GPT-J (pairs) rather than GPT-NeoX (halves) rotary layout.
    #[serde(default)]
    pub rotary_emb_interleaved: bool,
    /// XPos scaling; not supported.
    #[serde(default)]
    pub rotary_emb_scale_base: Option<f64>,
    /// Dynamic NTK scaling factor for texts beyond `max_trained_positions`.
    #[serde(default)]
    pub rotary_scaling_factor: Option<f64>,
    /// Length the model was trained to (where dynamic NTK scaling starts).
    #[serde(default = "default_trained")]
    pub max_trained_positions: usize,
    /// Biases on the query/key/value and output projections.
    #[serde(default = "yes")]
    pub qkv_proj_bias: bool,
    /// Bias on the first feed-forward projection(s).
    #[serde(default = "yes")]
    pub mlp_fc1_bias: bool,
    /// Bias on the second feed-forward projection.
    #[serde(default = "yes")]
    pub mlp_fc2_bias: bool,
    /// `swiglu`, `geglu`, `glu` (gated) or a GELU name (plain).
    #[serde(default = "default_activation")]
    pub activation_function: String,
    /// Pre-norm layers; not supported (no released embedder uses them).
    #[serde(default)]
    pub prenorm: bool,
    /// Causal attention; not supported.
    #[serde(default)]
    pub causal: bool,
    /// RMSNorm instead of LayerNorm; not supported.
    #[serde(default)]
    pub use_rms_norm: bool,
    /// Mixture-of-experts layers (nomic-embed-text-v2-moe); not supported.
    #[serde(default)]
    pub moe_every_n_layers: usize,
    /// The vocabulary is padded up to a multiple of this.
    #[serde(default = "one")]
    pub pad_vocab_size_multiple: usize,
}

fn default_positions() -> usize {
    1024
}
fn default_type_vocab() -> usize {
    2
}
fn default_eps() -> f64 {
    1e-5
}
fn default_base() -> f64 {
    10_000.0
}
fn default_trained() -> usize {
    2048
}
fn default_activation() -> String {
    "gelu_new".into()
}
fn yes() -> bool {
    true
}
fn one() -> usize {
    1
}

/// The feed-forward block's activation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Feedforward {
    /// `fc2(fc11(x) · silu(fc12(x)))`
    SwiGlu,
    /// `fc2(fc11(x) · gelu(fc12(x)))`
    GeGlu,
    /// `fc2(fc11(x) · sigmoid(fc12(x)))`
    Glu,
    /// `fc2(gelu(fc1(x)))`, exact GELU whatever the GELU name (as the modelling file does)
    Gelu,
}

impl NomicBertConfig {
    fn feedforward(&self) -> candle_core::Result<Feedforward> {
        Ok(match self.activation_function.as_str() {
            "swiglu" => Feedforward::SwiGlu,
            "geglu" => Feedforward::GeGlu,
            "glu" => Feedforward::Glu,
            "gelu" | "gelu_new" | "gelu_fast" | "gelu_pytorch_tanh" => Feedforward::Gelu,
            other => candle_core::bail!(
                "activation_function {other:?} is not supported (swiglu, geglu, glu, gelu)"
            ),
        })
    }

    /// Refuses the options no released NomicBERT embedder uses, rather than computing
    /// something else.
    fn check(&self) -> candle_core::Result<()> {
        let refused = [
            (self.prenorm, "prenorm"),
            (self.causal, "causal"),
            (self.use_rms_norm, "use_rms_norm"),
            (self.moe_every_n_layers > 0, "moe_every_n_layers"),
            (
                self.rotary_emb_scale_base.is_some(),
                "rotary_emb_scale_base",
            ),
        ];
        if let Some((_, name)) = refused.iter().find(|(set, _)| *set) {
            candle_core::bail!("NomicBERT option {name} is not supported");
        }
        if self.n_head == 0 || !self.n_embd.is_multiple_of(self.n_head) {
            candle_core::bail!(
                "n_embd {} is not a multiple of n_head {}",
                self.n_embd,
                self.n_head
            );
        }
        if !(0.0..=1.0).contains(&self.rotary_emb_fraction) {
            candle_core::bail!(
                "rotary_emb_fraction {} is not in [0, 1]",
                self.rotary_emb_fraction
            );
        }
        Ok(())
    }
}

struct Layer {
    qkv: Linear,
    out: Linear,
    norm1: LayerNorm,
    fc1: Linear,
    /// The gate projection of gated blocks.
    gate: Option<Linear>,
    fc2: Linear,
    norm2: LayerNorm,
}

/// A NomicBERT backbone: token ids in, last hidden states out.
pub struct NomicBert {
    words: Embedding,
    token_types: Option<Embedding>,
    positions: Option<Embedding>,
    emb_norm: LayerNorm,
    layers: Vec<Layer>,
    feedforward: Feedforward,
    heads: usize,
    head_dim: usize,
    rotary_dim: usize,
    rotary_base: f64,
    interleaved: bool,
    /// `(factor, trained length)` of dynamic NTK scaling.
    ntk: Option<(f64, usize)>,
    hidden: usize,
    device: Device,
    dtype: DType,
}

fn layer_norm(size: usize, eps: f64, vb: VarBuilder) -> candle_core::Result<LayerNorm> {
    Ok(LayerNorm::new(
        vb.get(size, "weight")?,
        vb.get(size, "bias")?,
        eps,
    ))
}

impl NomicBert {
    /// Loads the weights under `vb` (a `model.` prefix is accepted).
    pub fn load(vb: VarBuilder, config: &NomicBertConfig) -> candle_core::Result<NomicBert> {
        config.check()?;
        let feedforward = config.feedforward()?;
        let vb = if vb.contains_tensor("model.emb_ln.weight") {
            vb.pp("model")
        } else {
            vb
        };
        let h = config.n_embd;
        let eps = config.layer_norm_epsilon;
        let multiple = config.pad_vocab_size_multiple.max(1);
        let vocab = config.vocab_size.div_ceil(multiple) * multiple;
        let inner = config.n_inner.unwrap_or(4 * h);
        // the modelling file's gated block rounds its width up to a multiple of 256
        let gated_inner = inner.div_ceil(256) * 256;
        let head_dim = h / config.n_head;
        let rotary_dim = (head_dim as f64 * config.rotary_emb_fraction) as usize;
        let layers = (0..config.n_layer)
            .map(|i| {
                let l = vb.pp(format!("encoder.layers.{i}"));
                let (fc1, gate, fc2_in) = if feedforward == Feedforward::Gelu {
                    let fc1 = linear_b(h, inner, config.mlp_fc1_bias, l.pp("mlp.fc1"))?;
                    (fc1, None, inner)
                } else {
                    let fc11 = linear_b(h, gated_inner, config.mlp_fc1_bias, l.pp("mlp.fc11"))?;
                    let fc12 = linear_b(h, gated_inner, config.mlp_fc1_bias, l.pp("mlp.fc12"))?;
                    (fc11, Some(fc12), gated_inner)
                };
                Ok(Layer {
                    qkv: linear_b(h, 3 * h, config.qkv_proj_bias, l.pp("attn.Wqkv"))?,
                    out: linear_b(h, h, config.qkv_proj_bias, l.pp("attn.out_proj"))?,
                    norm1: layer_norm(h, eps, l.pp("norm1"))?,
                    fc1,
                    gate,
                    fc2: linear_b(fc2_in, h, config.mlp_fc2_bias, l.pp("mlp.fc2"))?,
                    norm2: layer_norm(h, eps, l.pp("norm2"))?,
                })
            })
            .collect::<candle_core::Result<Vec<_>>>()?;
        Ok(NomicBert {
            words: embedding(vocab, h, vb.pp("embeddings.word_embeddings"))?,
            token_types: (config.type_vocab_size > 0)
                .then(|| {
                    embedding(
                        config.type_vocab_size,
                        h,
                        vb.pp("embeddings.token_type_embeddings"),
                    )
                })
                .transpose()?,
            positions: (rotary_dim == 0)
                .then(|| {
                    embedding(
                        config.n_positions,
                        h,
                        vb.pp("embeddings.position_embeddings"),
                    )
                })
                .transpose()?,
            emb_norm: layer_norm(h, eps, vb.pp("emb_ln"))?,
            layers,
            feedforward,
            heads: config.n_head,
            head_dim,
            rotary_dim,
            rotary_base: config.rotary_emb_base,
            interleaved: config.rotary_emb_interleaved,
            ntk: config
                .rotary_scaling_factor
                .filter(|f| *f > 0.0)
                .map(|f| (f, config.max_trained_positions)),
            hidden: h,
            device: vb.device().clone(),
            dtype: vb.dtype(),
        })
    }

    /// Width of the hidden states.
    pub fn hidden_size(&self) -> usize {
        self.hidden
    }

    /// The rotary base for a text of `length` tokens: dynamic NTK scaling past the trained
    /// length.
    fn base_for(&self, length: usize) -> f64 {
        match self.ntk {
            Some((factor, trained)) if length > trained => {
                let d = self.rotary_dim as f64;
                self.rotary_base
                    * (factor * length as f64 / trained as f64 - (factor - 1.0)).powf(d / (d - 2.0))
            }
            _ => self.rotary_base,
        }
    }

    /// Rotates the first `rotary_dim` features of each head of `x` [batch, heads, tokens,
    /// head_dim]; each text with the tables of its own base.
    fn rotate(&self, x: &Tensor, lengths: &[usize], tokens: usize) -> candle_core::Result<Tensor> {
        let rope = |x: &Tensor, base: f64| -> candle_core::Result<Tensor> {
            let (cos, sin) =
                rotary_tables(self.rotary_dim, tokens, base, &self.device, self.dtype)?;
            let part = x.narrow(3, 0, self.rotary_dim)?.contiguous()?;
            let rotated = if self.interleaved {
                candle_nn::rotary_emb::rope_i(&part, &cos, &sin)?
            } else {
                candle_nn::rotary_emb::rope(&part, &cos, &sin)?
            };
            if self.rotary_dim == self.head_dim {
                Ok(rotated)
            } else {
                let rest = x.narrow(3, self.rotary_dim, self.head_dim - self.rotary_dim)?;
                Tensor::cat(&[&rotated, &rest], 3)
            }
        };
        let bases: Vec<f64> = lengths.iter().map(|&l| self.base_for(l)).collect();
        if bases.iter().all(|b| *b == self.rotary_base) {
            return rope(x, self.rotary_base);
        }
        let rows = bases
            .iter()
            .enumerate()
            .map(|(i, &base)| rope(&x.narrow(0, i, 1)?, base))
            .collect::<candle_core::Result<Vec<_>>>()?;
        Tensor::cat(&rows, 0)
    }

    /// Last hidden states [batch, tokens, hidden] of right-padded `ids` with `lengths` real
    /// tokens each (token type 0 throughout, as sentence-transformers passes none).
    pub fn forward(&self, ids: &[Vec<u32>], lengths: &[usize]) -> candle_core::Result<Tensor> {
        let (batch, tokens) = (ids.len(), ids.first().map_or(0, Vec::len));
        let flat: Vec<u32> = ids.iter().flatten().copied().collect();
        let input = Tensor::from_vec(flat, (batch, tokens), &self.device)?;
        let mut x = self.words.forward(&input)?;
        if let Some(types) = &self.token_types {
            x = x.broadcast_add(&types.forward(&Tensor::zeros(
                tokens,
                DType::U32,
                &self.device,
            )?)?)?;
        }
        if let Some(positions) = &self.positions {
            let at = Tensor::arange(0u32, tokens as u32, &self.device)?;
            x = x.broadcast_add(&positions.forward(&at)?)?;
        }
        let mut x = self.emb_norm.forward(&x)?;
        let mask = additive_mask(lengths, tokens, &self.device, self.dtype, |_, _| true)?;
        let scale = (self.head_dim as f64).powf(-0.5);
        for layer in &self.layers {
            let (mut q, mut k, v) =
                split_fused_qkv(&layer.qkv.forward(&x)?, self.heads, self.head_dim)?;
            if self.rotary_dim > 0 {
                q = self.rotate(&q, lengths, tokens)?;
                k = self.rotate(&k, lengths, tokens)?;
            }
            let context = attend(&q, &k, &v, &mask, scale)?;
            x = layer.norm1.forward(&(layer.out.forward(&context)? + &x)?)?;
            let y = layer.fc1.forward(&x)?;
            let y = match (&layer.gate, self.feedforward) {
                (Some(gate), Feedforward::SwiGlu) => (y * gate.forward(&x)?.silu()?)?,
                (Some(gate), Feedforward::GeGlu) => (y * gate.forward(&x)?.gelu_erf()?)?,
                (Some(gate), _) => (y * candle_nn::ops::sigmoid(&gate.forward(&x)?)?)?,
                (None, _) => y.gelu_erf()?,
            };
            x = layer.norm2.forward(&(layer.fc2.forward(&y)? + &x)?)?;
        }
        Ok(x)
    }
}

impl crate::backbone::Backbone for NomicBert {
    fn hidden_size(&self) -> usize {
        NomicBert::hidden_size(self)
    }

    fn forward(&self, batch: &crate::backbone::PaddedBatch) -> candle_core::Result<Tensor> {
        NomicBert::forward(self, &batch.ids, &batch.lengths)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Options no released embedder uses are refused by name, not computed differently.
    #[test]
    fn refuses_options_it_does_not_compute() {
        let device = Device::Cpu;
        let varmap = candle_nn::VarMap::new();
        let vb = VarBuilder::from_varmap(&varmap, DType::F32, &device);
        for (option, value) in [
            ("prenorm", serde_json::json!(true)),
            ("moe_every_n_layers", serde_json::json!(2)),
            ("rotary_emb_scale_base", serde_json::json!(512)),
            ("activation_function", serde_json::json!("relu")),
        ] {
            let mut config = serde_json::json!({
                "vocab_size": 8, "n_embd": 8, "n_head": 2, "n_layer": 1,
                "rotary_emb_fraction": 1.0
            });
            config[option] = value;
            let config: NomicBertConfig = serde_json::from_value(config).unwrap();
            let error = NomicBert::load(vb.clone(), &config)
                .err()
                .unwrap()
                .to_string();
            let named = option.split('_').next().unwrap();
            assert!(error.contains(named), "{option}: {error}");
        }
    }

    /// candle-transformers' NomicBERT, on random weights in v1.5's configuration shrunk (the
    /// one both modules read): the same hidden states at every real token, padded or not.
    #[test]
    fn equals_candle_transformers_nomic_bert() {
        use candle_transformers::models::nomic_bert as reference;
        let config = reference::Config {
            vocab_size: 64,
            n_embd: 32,
            n_head: 4,
            n_layer: 2,
            n_inner: 256,
            n_positions: 128,
            ..reference::Config::default()
        };
        let ours: NomicBertConfig = serde_json::from_value(serde_json::json!({
            "vocab_size": 64, "n_embd": 32, "n_head": 4, "n_layer": 2, "n_inner": 256,
            "n_positions": 128, "layer_norm_epsilon": 1e-12, "rotary_emb_fraction": 1.0,
            "rotary_emb_base": 1000, "qkv_proj_bias": false, "mlp_fc1_bias": false,
            "mlp_fc2_bias": false, "activation_function": "swiglu"
        }))
        .unwrap();
        let device = Device::Cpu;
        let varmap = candle_nn::VarMap::new();
        let vb = VarBuilder::from_varmap(&varmap, DType::F32, &device);
        let theirs = reference::NomicBertModel::load(vb.clone(), &config).unwrap();
        // VarMap initialises LayerNorms to 1 and 0: give them random values too, seeded
        {
            use rand::{Rng, SeedableRng};
            let mut rng = rand::rngs::StdRng::seed_from_u64(7);
            for (name, var) in varmap.data().lock().unwrap().iter() {
                if name.contains("norm") || name.contains("emb_ln") {
                    let n = var.elem_count();
                    let values: Vec<f32> = (0..n).map(|_| rng.gen_range(0.5f32..1.5)).collect();
                    var.set(&Tensor::from_vec(values, var.shape(), &device).unwrap())
                        .unwrap();
                }
            }
        }
        let ours = NomicBert::load(vb, &ours).unwrap();
        let ids = vec![vec![1u32, 17, 33, 5, 2, 9, 40], vec![1, 60, 2, 0, 0, 0, 0]];
        let lengths = [7usize, 3];
        let got = ours.forward(&ids, &lengths).unwrap();
        let input = Tensor::new(ids.clone(), &device).unwrap();
        let mask: Vec<Vec<u32>> = lengths
            .iter()
            .map(|&l| (0..7).map(|i| u32::from(i < l)).collect())
            .collect();
        let mask = Tensor::new(mask, &device).unwrap();
        let want = theirs.forward(&input, None, Some(&mask)).unwrap();
        for (b, &length) in lengths.iter().enumerate() {
            for t in 0..length {
                let a: Vec<f32> = got.get(b).unwrap().get(t).unwrap().to_vec1().unwrap();
                let c: Vec<f32> = want.get(b).unwrap().get(t).unwrap().to_vec1().unwrap();
                let diff = a
                    .iter()
                    .zip(&c)
                    .map(|(x, y)| (x - y).abs())
                    .fold(0f32, f32::max);
                assert!(diff < 1e-4, "text {b}, token {t}: {diff}");
            }
        }
    }
}
