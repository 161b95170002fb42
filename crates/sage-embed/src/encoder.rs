//! The transformer encoder shared by BERT, RoBERTa/XLM-RoBERTa and MPNet checkpoints, written on candle-nn.
//!
//! Why not candle-transformers' `BertModel`: its layers' forward passes are private, so it can
//! return only the last layer (EvalRank's first-last-avg needs the first as well), and its
//! attention mask multiplies by `f32::MIN`, which becomes −inf in f16/bf16 and turns padded
//! batches into NaN on GPU. This encoder uses a finite per-dtype mask value. A test checks it
//! against candle-transformers' `BertModel` on CPU in f32.
//!
//! MPNet differs from BERT in three ways, all handled here: RoBERTa-style position ids
//! (`padding_id + cumsum(non-padding)`, padding positions keep `padding_id`), no token-type
//! embeddings, and a relative-position bias (T5-style bidirectional buckets, 32 buckets, max
//! distance 128) computed once per forward pass from `encoder.relative_attention_bias` and added
//! to the attention scores of every layer. RoBERTa and XLM-RoBERTa are BERT's layers with
//! MPNet's position ids and a one-row token-type table.
//!
//! On CPU in f32 the attention of packed (unpadded) texts and the dense layers' epilogues (bias +
//! GELU, bias + residual + layer norm) run as fused kernels (`crate::fused`); elsewhere (GPU,
//! f16/bf16) the tensor path below. Tests hold the two paths equal. There the dense products run
//! on AMX tiles where the CPU has them (`crate::amx`: three bf16 products per float32 one, its
//! weights packed when the model loads), otherwise as gemm's float32 products.

use candle_core::{DType, Device, Module, Tensor};
use candle_nn::{embedding, layer_norm, linear, Embedding, LayerNorm, Linear, VarBuilder};

use crate::backbone::{Backbone, PaddedBatch};
use sage_kernels::fused::{
    add_bias, bias_residual_norm, cpu_f32, fused_applies, fused_attention, AttentionOrder,
    HostNorm, SharedBias,
};
use sage_kernels::{DenseWeight, LayerInput, Precision};

use crate::model_config::TransformerConfig;

struct Layer {
    /// Query, key and value projections stacked into one [3·hidden, hidden] layer: one matrix
    /// product per layer instead of three.
    qkv: Linear,
    attention_out: Linear,
    attention_norm: LayerNorm,
    intermediate: Linear,
    output: Linear,
    output_norm: LayerNorm,
    /// Biases and norms on the host for the fused CPU epilogues (f32 on CPU only).
    host: Option<HostLayer>,
}

struct HostLayer {
    /// The four dense weights, prepared for this CPU's product in the model's precision (AMX
    /// tiles where it has them, for f32).
    qkv: DenseWeight,
    attention_out: DenseWeight,
    intermediate: DenseWeight,
    output: DenseWeight,
    qkv_bias: Vec<f32>,
    attention_out_bias: Vec<f32>,
    attention_norm: HostNorm,
    intermediate_bias: Vec<f32>,
    output_bias: Vec<f32>,
    output_norm: HostNorm,
}

impl HostLayer {
    /// `None` off the CPU, outside f32, or for bias-free layers. The dense weights are
    /// prepared for `precision`'s products.
    fn of(layer: &Layer, precision: Precision) -> candle_core::Result<Option<HostLayer>> {
        let weight = layer.qkv.weight();
        if !weight.device().is_cpu() || weight.dtype() != DType::F32 {
            return Ok(None);
        }
        let bias = |l: &Linear| -> candle_core::Result<Option<Vec<f32>>> {
            l.bias().map(|b| b.to_vec1::<f32>()).transpose()
        };
        let dense = |l: &Linear| DenseWeight::with_precision(l.weight(), precision);
        let norm = |n: &LayerNorm| -> candle_core::Result<Option<HostNorm>> {
            Ok(match n.bias() {
                Some(beta) if n.remove_mean() => Some(HostNorm {
                    gamma: n.weight().to_vec1::<f32>()?,
                    beta: beta.to_vec1::<f32>()?,
                    eps: n.eps() as f32,
                }),
                _ => None,
            })
        };
        Ok(
            match (
                bias(&layer.qkv)?,
                bias(&layer.attention_out)?,
                norm(&layer.attention_norm)?,
                bias(&layer.intermediate)?,
                bias(&layer.output)?,
                norm(&layer.output_norm)?,
            ) {
                (Some(qkv), Some(a), Some(an), Some(i), Some(o), Some(on)) => Some(HostLayer {
                    qkv: dense(&layer.qkv)?,
                    attention_out: dense(&layer.attention_out)?,
                    intermediate: dense(&layer.intermediate)?,
                    output: dense(&layer.output)?,
                    qkv_bias: qkv,
                    attention_out_bias: a,
                    attention_norm: an,
                    intermediate_bias: i,
                    output_bias: o,
                    output_norm: on,
                }),
                _ => None,
            },
        )
    }
}

/// Which BERT-family layout a checkpoint has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EncoderFlavor {
    /// BERT: absolute positions from 0, token types, LayerNorm eps from config.
    Bert,
    /// MPNet: RoBERTa-style positions, no token types, a shared relative-position bias.
    MpNet,
    /// RoBERTa and XLM-RoBERTa: BERT's layers with RoBERTa-style positions (counted from after
    /// the padding id) and a one-row token-type table.
    Roberta,
}

/// A BERT, RoBERTa or MPNet encoder.
pub struct Encoder {
    flavor: EncoderFlavor,
    word: Embedding,
    position: Embedding,
    token_type: Option<Embedding>,
    embedding_norm: LayerNorm,
    layers: Vec<Layer>,
    relative_bias: Option<Embedding>,
    heads: usize,
    head_dim: usize,
    pad_id: u32,
    buckets: usize,
    exact_gelu: bool,
    device: Device,
    dtype: DType,
    /// While int8 calibration runs: per layer, the largest magnitude of each input channel of
    /// its four products (qkv, attention output, intermediate, output), over every batch.
    recorded: std::sync::Mutex<Option<Vec<[Vec<f32>; 4]>>>,
    /// From int8 calibration on: the attention on the kernels every CPU that runs int8 shares
    /// ([`AttentionOrder::Fixed`]), so that int8 vectors are one set of bytes on all
    /// of them (the products are int8's exact sums after calibration, fixed-order panels
    /// during it).
    fixed_order: bool,
}

/// How a batch goes through the layers.
enum Batch {
    /// CPU f32, short texts: the real tokens only, back to back ([Σ lengths, hidden]); fused
    /// attention per text. Padding costs nothing in the dense layers, which are row-wise.
    Packed {
        lengths: Vec<usize>,
        /// MPNet's position bias [heads, tokens, tokens] on the host
        bias: Option<Vec<f32>>,
    },
    /// Any device and dtype: the padded batch ([batch × tokens, hidden]); mask
    /// [batch, 1, 1, tokens], bias [1, heads, tokens, tokens].
    Padded { mask: Tensor, bias: Option<Tensor> },
}

/// Shapes of one padded attention call.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AttentionShape {
    pub batch: usize,
    pub tokens: usize,
    pub heads: usize,
    pub head_dim: usize,
}

/// Output of a forward pass.
pub struct EncoderOutput {
    /// Last layer, [batch, tokens, hidden] (padding positions are zero when the batch ran
    /// packed: pooling masks them out either way).
    pub last: Tensor,
    /// Output of the first transformer layer, when asked for.
    pub first: Option<Tensor>,
}

impl Encoder {
    /// Loads the weights under `vb` (sentence-transformers checkpoints have no prefix; a `bert.`
    /// or `roberta.` prefix is accepted too), its dense products prepared for `precision`. A
    /// precision other than f32 runs on the CPU's fused float32 layers only: elsewhere (a GPU,
    /// layers without biases) an error, never a silent float32.
    pub fn load(
        vb: VarBuilder,
        config: &TransformerConfig,
        flavor: EncoderFlavor,
        precision: Precision,
    ) -> candle_core::Result<Encoder> {
        let vb = match flavor {
            EncoderFlavor::Bert if vb.contains_tensor("bert.embeddings.word_embeddings.weight") => {
                vb.pp("bert")
            }
            EncoderFlavor::Roberta
                if vb.contains_tensor("roberta.embeddings.word_embeddings.weight") =>
            {
                vb.pp("roberta")
            }
            _ => vb,
        };
        let h = config.hidden_size;
        let eps = config.layer_norm_eps;
        let emb = vb.pp("embeddings");
        let word = embedding(config.vocab_size, h, emb.pp("word_embeddings"))?;
        let position = embedding(
            config.max_position_embeddings,
            h,
            emb.pp("position_embeddings"),
        )?;
        let token_type = match flavor {
            EncoderFlavor::Bert | EncoderFlavor::Roberta if config.type_vocab_size > 0 => Some(
                embedding(config.type_vocab_size, h, emb.pp("token_type_embeddings"))?,
            ),
            _ => None,
        };
        let embedding_norm = layer_norm(h, eps, emb.pp("LayerNorm"))?;
        let enc = vb.pp("encoder");
        let layers = (0..config.num_hidden_layers)
            .map(|i| {
                let l = enc.pp(format!("layer.{i}"));
                let (query, key, value, attention_out, attention_norm) = match flavor {
                    EncoderFlavor::Bert | EncoderFlavor::Roberta => {
                        let a = l.pp("attention");
                        (
                            linear(h, h, a.pp("self.query"))?,
                            linear(h, h, a.pp("self.key"))?,
                            linear(h, h, a.pp("self.value"))?,
                            linear(h, h, a.pp("output.dense"))?,
                            layer_norm(h, eps, a.pp("output.LayerNorm"))?,
                        )
                    }
                    EncoderFlavor::MpNet => {
                        let a = l.pp("attention");
                        (
                            linear(h, h, a.pp("attn.q"))?,
                            linear(h, h, a.pp("attn.k"))?,
                            linear(h, h, a.pp("attn.v"))?,
                            linear(h, h, a.pp("attn.o"))?,
                            layer_norm(h, eps, a.pp("LayerNorm"))?,
                        )
                    }
                };
                let qkv = Linear::new(
                    Tensor::cat(&[query.weight(), key.weight(), value.weight()], 0)?,
                    match (query.bias(), key.bias(), value.bias()) {
                        (Some(q), Some(k), Some(v)) => Some(Tensor::cat(&[q, k, v], 0)?),
                        _ => None,
                    },
                );
                let mut layer = Layer {
                    qkv,
                    attention_out,
                    attention_norm,
                    intermediate: linear(h, config.intermediate_size, l.pp("intermediate.dense"))?,
                    output: linear(config.intermediate_size, h, l.pp("output.dense"))?,
                    output_norm: layer_norm(h, eps, l.pp("output.LayerNorm"))?,
                    host: None,
                };
                layer.host = HostLayer::of(&layer, precision)?;
                if layer.host.is_none() && precision != Precision::F32 {
                    candle_core::bail!(
                        "precision {precision} runs on the CPU in float32 layers with biases \
                         and mean-centred layer norms; this model's layers run elsewhere \
                         (a GPU, or layers without biases): use --precision f32"
                    );
                }
                Ok(layer)
            })
            .collect::<candle_core::Result<Vec<_>>>()?;
        let relative_bias = match flavor {
            EncoderFlavor::MpNet => Some(embedding(
                config.relative_attention_num_buckets,
                config.num_attention_heads,
                enc.pp("relative_attention_bias"),
            )?),
            _ => None,
        };
        let exact_gelu = match config.hidden_act.as_str() {
            "gelu" => true,
            "gelu_new" | "gelu_pytorch_tanh" | "gelu_fast" => false,
            other => candle_core::bail!("hidden_act {other:?} is not supported (gelu, gelu_new)"),
        };
        Ok(Encoder {
            flavor,
            word,
            position,
            token_type,
            embedding_norm,
            layers,
            relative_bias,
            heads: config.num_attention_heads,
            head_dim: h / config.num_attention_heads,
            pad_id: config.pad_token_id,
            buckets: config.relative_attention_num_buckets,
            exact_gelu,
            device: vb.device().clone(),
            dtype: vb.dtype(),
            recorded: std::sync::Mutex::new(None),
            fixed_order: false,
        })
    }

    /// Runs the encoder on a padded batch: `ids[b][t]`, `mask[b][t]` ∈ {0, 1}, all rows the same
    /// length.
    pub fn forward(
        &self,
        ids: &[Vec<u32>],
        mask: &[Vec<u32>],
        want_first: bool,
    ) -> candle_core::Result<EncoderOutput> {
        let (batch, tokens) = (ids.len(), ids.first().map_or(0, Vec::len));
        let flat_ids: Vec<u32> = ids.iter().flatten().copied().collect();
        let positions: Vec<u32> = match self.flavor {
            EncoderFlavor::MpNet | EncoderFlavor::Roberta => ids
                .iter()
                .flat_map(|row| {
                    let mut seen = 0u32;
                    row.iter()
                        .map(move |&id| {
                            if id == self.pad_id {
                                self.pad_id
                            } else {
                                seen += 1;
                                self.pad_id + seen
                            }
                        })
                        .collect::<Vec<_>>()
                })
                .collect(),
            _ => (0..batch).flat_map(|_| 0..tokens as u32).collect(),
        };
        let bias = match &self.relative_bias {
            Some(table) => Some(self.position_bias(table, tokens)?),
            None => None,
        };
        let (flat_ids, positions, plan) = match real_lengths(mask) {
            Some(lengths) if fused_applies(&self.device, self.dtype) => {
                let real = |values: Vec<u32>| -> Vec<u32> {
                    values
                        .chunks(tokens.max(1))
                        .zip(&lengths)
                        .flat_map(|(row, &length)| row[..length].to_vec())
                        .collect()
                };
                let bias = match &bias {
                    Some(b) => Some(b.flatten_all()?.to_vec1::<f32>()?),
                    None => None,
                };
                (
                    real(flat_ids),
                    real(positions),
                    Batch::Packed { lengths, bias },
                )
            }
            _ => {
                // A large *finite* negative for padding, so that 0 × mask stays 0 in every dtype.
                let masked = match self.dtype {
                    DType::F16 => -65_504f32,
                    DType::BF16 => -1e30,
                    _ => f32::MIN,
                };
                let additive: Vec<f32> = mask
                    .iter()
                    .flatten()
                    .map(|&m| if m == 0 { masked } else { 0.0 })
                    .collect();
                let mask = Tensor::from_vec(additive, (batch, 1, 1, tokens), &self.device)?
                    .to_dtype(self.dtype)?;
                (flat_ids, positions, Batch::Padded { mask, bias })
            }
        };
        let rows = flat_ids.len();
        let input = Tensor::from_vec(flat_ids, rows, &self.device)?;
        let positions = Tensor::from_vec(positions, rows, &self.device)?;
        let mut x = (self.word.forward(&input)? + self.position.forward(&positions)?)?;
        if let Some(token_type) = &self.token_type {
            x = x.broadcast_add(&token_type.forward(&Tensor::zeros(
                1,
                DType::U32,
                &self.device,
            )?)?)?;
        }
        let mut x = self.embedding_norm.forward(&x)?;

        let mut first = None;
        for (i, layer) in self.layers.iter().enumerate() {
            x = self.layer_forward(i, layer, &x, batch, tokens, &plan)?;
            if i == 0 && want_first {
                first = Some(x.clone());
            }
        }
        let padded = |x: Tensor| -> candle_core::Result<Tensor> {
            match &plan {
                Batch::Packed { lengths, .. } => pad(&x, lengths, tokens),
                Batch::Padded { .. } => x.reshape((batch, tokens, self.hidden_size())),
            }
        };
        Ok(EncoderOutput {
            last: padded(x)?,
            first: first.map(padded).transpose()?,
        })
    }

    /// One layer on `x` [rows, hidden], the batch laid out as `plan` says.
    fn layer_forward(
        &self,
        index: usize,
        layer: &Layer,
        flat: &Tensor,
        batch: usize,
        tokens: usize,
        plan: &Batch,
    ) -> candle_core::Result<Tensor> {
        // All dense layers run on every token of the batch at once: one large matrix product
        // instead of a small one per text, which is what makes CPU inference fast on short
        // sentences.
        let qkv = match &layer.host {
            Some(host) => {
                self.record(index, 0, flat)?;
                add_bias(host.qkv.product(flat)?, &host.qkv_bias)?
            }
            None => layer.qkv.forward(flat)?,
        };
        let order = if self.fixed_order {
            AttentionOrder::Fixed
        } else {
            AttentionOrder::Fastest
        };
        let context = match plan {
            Batch::Packed { lengths, bias } => fused_attention(
                &qkv,
                lengths,
                self.heads,
                self.head_dim,
                bias.as_deref().map(|values| SharedBias {
                    values,
                    span: tokens,
                }),
                order,
            )?,
            Batch::Padded { mask, bias } => tensor_attention(
                &qkv,
                AttentionShape {
                    batch,
                    tokens,
                    heads: self.heads,
                    head_dim: self.head_dim,
                },
                mask,
                bias.as_ref(),
            )?,
        };
        if let Some(host) = &layer.host {
            self.record(index, 1, &context)?;
            let attended = bias_residual_norm(
                host.attention_out.product(&context)?,
                &host.attention_out_bias,
                flat,
                &host.attention_norm,
            )?;
            self.record(index, 2, &attended)?;
            // int8: the GELU's rows go straight into the output product's bytes
            let inner = host.intermediate.product_bias_gelu_for(
                &attended,
                &host.intermediate_bias,
                self.exact_gelu,
                &host.output,
            )?;
            if let LayerInput::F32(inner) = &inner {
                self.record(index, 3, inner)?;
            }
            return bias_residual_norm(
                host.output.product_of(&inner)?,
                &host.output_bias,
                &attended,
                &host.output_norm,
            );
        }
        let attended = layer
            .attention_norm
            .forward(&(layer.attention_out.forward(&context)? + flat)?)?;
        let inner = layer.intermediate.forward(&attended)?;
        let inner = if self.exact_gelu {
            inner.gelu_erf()?
        } else {
            inner.gelu()?
        };
        layer
            .output_norm
            .forward(&(layer.output.forward(&inner)? + attended)?)
    }

    /// MPNet's relative-position bias, [1, heads, tokens, tokens].
    fn position_bias(&self, table: &Embedding, tokens: usize) -> candle_core::Result<Tensor> {
        let buckets: Vec<u32> = (0..tokens as i64)
            .flat_map(|context| (0..tokens as i64).map(move |memory| (context, memory)))
            .map(|(context, memory)| relative_position_bucket(memory - context, self.buckets, 128))
            .collect();
        let buckets = Tensor::from_vec(buckets, (tokens, tokens), &self.device)?;
        table
            .forward(&buckets)?
            .permute((2, 0, 1))?
            .unsqueeze(0)?
            .contiguous()
    }

    /// The device the weights live on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The compute dtype.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Hidden width.
    pub fn hidden_size(&self) -> usize {
        self.heads * self.head_dim
    }
}

impl Encoder {
    /// While calibration records: each channel's largest magnitude in `x` [rows, width], the
    /// input of product `slot` of layer `index`, into the record.
    fn record(&self, index: usize, slot: usize, x: &Tensor) -> candle_core::Result<()> {
        let mut recorded = self.recorded.lock().unwrap_or_else(|e| e.into_inner());
        let Some(layers) = recorded.as_mut() else {
            return Ok(());
        };
        let x = x.contiguous()?;
        let (_, width) = x.dims2()?;
        let (storage, layout) = x.storage_and_layout();
        let values = cpu_f32(&storage, layout)?;
        let maxima = &mut layers[index][slot];
        maxima.resize(width, 0.0);
        for row in values.chunks_exact(width.max(1)) {
            for (m, v) in maxima.iter_mut().zip(row) {
                *m = m.max(v.abs());
            }
        }
        Ok(())
    }
}

impl Backbone for Encoder {
    fn hidden_size(&self) -> usize {
        Encoder::hidden_size(self)
    }

    fn dense_kernel(&self) -> Option<&'static str> {
        self.layers
            .iter()
            .find_map(|layer| layer.host.as_ref().and_then(|h| h.qkv.kernel()))
    }

    fn record_activations(&mut self) -> candle_core::Result<bool> {
        if self.layers.iter().any(|l| l.host.is_none()) {
            return Ok(false);
        }
        // gemm's, AMX's and the panels' float32 sums differ from CPU to CPU in their last bits,
        // and a range a bit apart can move a weight's rounding: calibrate in one order
        let fixed = |l: &Linear| DenseWeight::f32_in_fixed_order(l.weight());
        for layer in &mut self.layers {
            let host = layer
                .host
                .as_mut()
                .expect("every layer has one (checked above)");
            host.qkv = fixed(&layer.qkv)?;
            host.attention_out = fixed(&layer.attention_out)?;
            host.intermediate = fixed(&layer.intermediate)?;
            host.output = fixed(&layer.output)?;
        }
        self.fixed_order = true;
        let empty = || std::array::from_fn(|_| Vec::new());
        *self.recorded.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(self.layers.iter().map(|_| empty()).collect());
        Ok(true)
    }

    fn lower_to_int8(&mut self) -> candle_core::Result<()> {
        let recorded = self
            .recorded
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let Some(recorded) = recorded else {
            candle_core::bail!("int8: no activations were recorded to calibrate with");
        };
        for (layer, maxima) in self.layers.iter_mut().zip(&recorded) {
            let Some(host) = layer.host.as_mut() else {
                candle_core::bail!("int8 runs on the fused CPU path only");
            };
            let lowered = |l: &Linear, m: &[f32]| DenseWeight::int8_smoothed(l.weight(), m);
            host.qkv = lowered(&layer.qkv, &maxima[0])?;
            host.attention_out = lowered(&layer.attention_out, &maxima[1])?;
            host.intermediate = lowered(&layer.intermediate, &maxima[2])?;
            host.output = lowered(&layer.output, &maxima[3])?;
        }
        Ok(())
    }

    fn forward(&self, batch: &PaddedBatch) -> candle_core::Result<Tensor> {
        let out = Encoder::forward(self, &batch.ids, &batch.mask, batch.first_last_avg)?;
        match out.first {
            Some(first) if batch.first_last_avg => (first + &out.last)? / 2.0,
            _ => Ok(out.last),
        }
    }
}

/// Real tokens per row when every mask row is ones then zeros (right padding, as batches are
/// built here); `None` otherwise, and the batch stays padded.
fn real_lengths(mask: &[Vec<u32>]) -> Option<Vec<usize>> {
    mask.iter()
        .map(|row| {
            let length = row.iter().take_while(|&&m| m == 1).count();
            row[length..].iter().all(|&m| m == 0).then_some(length)
        })
        .collect()
}

/// Packed rows [Σ lengths, width] (CPU f32, as every packed batch is) back to a padded batch
/// [lengths.len(), tokens, width], zeros at the padding (which pooling masks out).
fn pad(packed: &Tensor, lengths: &[usize], tokens: usize) -> candle_core::Result<Tensor> {
    let (rows, width) = packed.dims2()?;
    let packed = packed.contiguous()?;
    let (storage, layout) = packed.storage_and_layout();
    let values = cpu_f32(&storage, layout)?;
    let mut out = vec![0f32; lengths.len() * tokens * width];
    let mut at = 0;
    for (text, &length) in lengths.iter().enumerate() {
        out[text * tokens * width..][..length * width]
            .copy_from_slice(&values[at * width..(at + length) * width]);
        at += length;
    }
    debug_assert_eq!(at, rows);
    drop(storage);
    Tensor::from_vec(out, (lengths.len(), tokens, width), &Device::Cpu)
}

/// Attention on tensors (any device and dtype): context vectors [batch × tokens, hidden] from
/// `qkv` [batch × tokens, 3 × hidden], `mask` [batch, 1, 1, tokens] and an optional `bias`
/// [1, heads, tokens, tokens]. `sage_kernels::fused::fused_attention` computes the same on CPU.
pub(crate) fn tensor_attention(
    qkv: &Tensor,
    shape: AttentionShape,
    mask: &Tensor,
    bias: Option<&Tensor>,
) -> candle_core::Result<Tensor> {
    let AttentionShape {
        batch,
        tokens,
        heads,
        head_dim,
    } = shape;
    let hidden = heads * head_dim;
    let split = |t: Tensor| -> candle_core::Result<Tensor> {
        t.reshape((batch, tokens, heads, head_dim))?
            .transpose(1, 2)?
            .contiguous()
    };
    let q = split(qkv.narrow(1, 0, hidden)?)?;
    let k = split(qkv.narrow(1, hidden, hidden)?)?;
    let v = split(qkv.narrow(1, 2 * hidden, hidden)?)?;
    let mut scores = (q.matmul(&k.t()?)? / (head_dim as f64).sqrt())?;
    if let Some(bias) = bias {
        scores = scores.broadcast_add(bias)?;
    }
    let scores = scores.broadcast_add(mask)?;
    let probs = candle_nn::ops::softmax_last_dim(&scores)?;
    probs
        .matmul(&v)?
        .transpose(1, 2)?
        .reshape((batch * tokens, hidden))
}

/// T5/MPNet bidirectional bucket of a relative position (`memory − context`), in f32 arithmetic
/// exactly as the PyTorch reference computes it.
pub(crate) fn relative_position_bucket(
    relative: i64,
    num_buckets: usize,
    max_distance: usize,
) -> u32 {
    let half = (num_buckets / 2) as i64;
    let n = -relative;
    let mut bucket = if n < 0 { half } else { 0 };
    let n = n.abs();
    let max_exact = half / 2;
    if n < max_exact {
        bucket += n;
    } else {
        let scale = (max_distance as f64 / max_exact as f64).ln() as f32;
        let large = max_exact
            + ((n as f32 / max_exact as f32).ln() / scale * (half - max_exact) as f32) as i64;
        bucket += large.min(half - 1);
    }
    bucket as u32
}

/// Masked pooling over tokens of `hidden` [batch, tokens, width] with `mask` [batch, tokens].
pub(crate) fn pool(
    hidden: &Tensor,
    mask: &[Vec<u32>],
    pooling: crate::Pooling,
) -> candle_core::Result<Tensor> {
    use crate::Pooling;
    let (batch, tokens, _) = hidden.dims3()?;
    let hidden = hidden.to_dtype(DType::F32)?;
    let mask_values: Vec<f32> = match pooling {
        // sentence-transformers: weights 1..=tokens by position, times the mask
        Pooling::WeightedMean => mask
            .iter()
            .flat_map(|row| {
                row.iter()
                    .enumerate()
                    .map(|(i, &m)| (m * (i as u32 + 1)) as f32)
            })
            .collect(),
        _ => mask.iter().flatten().map(|&m| m as f32).collect(),
    };
    // each row's last real token, wherever the padding is
    let last: Vec<usize> = mask
        .iter()
        .map(|row| row.iter().rposition(|&m| m != 0).unwrap_or(0))
        .collect();
    let real: Vec<bool> = mask.iter().map(|row| row.iter().any(|&m| m != 0)).collect();
    let mask = Tensor::from_vec(mask_values, (batch, tokens, 1), hidden.device())?;
    match pooling {
        Pooling::LastToken => {
            // sentence-transformers multiplies by the mask before it gathers, so a row without
            // a real token (or an empty sequence) pools to zeros, not to a padding state
            let width = hidden.dim(2)?;
            let rows = last
                .iter()
                .zip(&real)
                .enumerate()
                .map(|(b, (&t, &any))| {
                    if any {
                        hidden.get(b)?.get(t)
                    } else {
                        Tensor::zeros(width, DType::F32, hidden.device())
                    }
                })
                .collect::<candle_core::Result<Vec<_>>>()?;
            Tensor::stack(&rows, 0)
        }
        Pooling::Cls => hidden.narrow(1, 0, 1)?.squeeze(1),
        Pooling::Max => {
            // sentence-transformers sets padding to -1e9 before the max
            let fill = ((mask.ones_like()? - &mask)? * -1e9)?;
            hidden.broadcast_add(&fill)?.max(1)
        }
        Pooling::Mean | Pooling::FirstLastAvg | Pooling::MeanSqrtLen | Pooling::WeightedMean => {
            let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
            let counts = mask.sum(1)?.clamp(1e-9, f64::MAX)?;
            let counts = if pooling == Pooling::MeanSqrtLen {
                counts.sqrt()?
            } else {
                counts
            };
            summed.broadcast_div(&counts)
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;
    use sage_kernels::fused::LOOP_MAX_TOKENS;

    use super::*;

    fn max_difference(a: &Tensor, b: &Tensor) -> f32 {
        let a = a.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        let b = b.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        assert_eq!(a.len(), b.len());
        a.iter()
            .zip(&b)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max)
    }

    /// The kernel's attention over packed texts against this encoder's tensor path on the same
    /// texts padded: the one the GPU and every non-f32 run take.
    #[test]
    fn fused_attention_on_packed_texts_equals_the_tensor_path_on_a_padded_batch() {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        for (lengths, heads, head_dim, with_bias) in [
            (vec![9, 8, 7], 4, 32, false),
            (vec![13, 1, 11], 2, 20, true),
            (vec![1], 3, 8, false),
            // past LOOP_MAX_TOKENS: gemm's products where the CPU has AVX-512 (head_fma's
            // blocks on AVX2), beside a short text in the same batch
            (vec![100, 70, 3], 2, 16, true),
            (vec![130], 4, 8, false),
            // heads 32 and 64 wide as in the MiniLMs and MPNet (texts past LOOP_MAX_TOKENS run
            // their query–key products on AMX tiles where this CPU has them, padded to the
            // next 32 keys inside the kernel, and on gemm otherwise)
            (vec![100, 70, 3], 2, 32, true),
            (vec![129, 65], 2, 64, false),
        ] {
            let (batch, tokens) = (lengths.len(), lengths[0]);
            let width = 3 * heads * head_dim;
            let shape = AttentionShape {
                batch,
                tokens,
                heads,
                head_dim,
            };
            let padded: Vec<f32> = (0..batch * tokens * width)
                .map(|_| rng.gen_range(-2.0..2.0))
                .collect();
            let packed: Vec<f32> = lengths
                .iter()
                .enumerate()
                .flat_map(|(b, &l)| padded[b * tokens * width..][..l * width].to_vec())
                .collect();
            let total: usize = lengths.iter().sum();
            let mask: Vec<f32> = lengths
                .iter()
                .flat_map(|&l| (0..tokens).map(move |t| if t < l { 0.0 } else { f32::MIN }))
                .collect();
            let bias: Option<Vec<f32>> = with_bias.then(|| {
                (0..heads * tokens * tokens)
                    .map(|_| rng.gen_range(-1.0..1.0))
                    .collect()
            });
            let ours = fused_attention(
                &Tensor::from_vec(packed, (total, width), &Device::Cpu).unwrap(),
                &lengths,
                heads,
                head_dim,
                bias.as_deref().map(|values| SharedBias {
                    values,
                    span: tokens,
                }),
                AttentionOrder::Fastest,
            )
            .unwrap();
            let bias_tensor = bias
                .as_ref()
                .map(|b| Tensor::from_slice(b, (1, heads, tokens, tokens), &Device::Cpu).unwrap());
            let theirs = tensor_attention(
                &Tensor::from_vec(padded, (batch * tokens, width), &Device::Cpu).unwrap(),
                shape,
                &Tensor::from_slice(&mask, (batch, 1, 1, tokens), &Device::Cpu).unwrap(),
                bias_tensor.as_ref(),
            )
            .unwrap();
            // the tensor path's rows of real tokens, packed
            let hidden = heads * head_dim;
            let theirs = theirs.flatten_all().unwrap().to_vec1::<f32>().unwrap();
            let theirs: Vec<f32> = lengths
                .iter()
                .enumerate()
                .flat_map(|(b, &l)| theirs[b * tokens * hidden..][..l * hidden].to_vec())
                .collect();
            let worst = max_difference(
                &ours,
                &Tensor::from_vec(theirs, (total, hidden), &Device::Cpu).unwrap(),
            );
            // on tiles the query–key products are split into bf16 halves (amx.rs): within
            // ~1e-6 of each score's absolute sum (up to ~40 / √32 here) rather than float32's
            // ~1e-7, so the weights, and the context they average, move by a few 1e-5 at most
            let tiles_here = sage_kernels::amx_available();
            let on_tiles = tiles_here && lengths.iter().any(|&l| l > LOOP_MAX_TOKENS);
            let tolerance = if on_tiles { 5e-5 } else { 1e-5 };
            assert!(worst < tolerance, "{lengths:?}: max |difference| {worst}");
        }
    }

    #[test]
    fn buckets_match_the_reference_formula() {
        // torch MPNetEncoder.relative_position_bucket(arange differences), num_buckets=32,
        // max_distance=128: hand-checked values
        let b = |r| relative_position_bucket(r, 32, 128);
        assert_eq!(b(0), 0);
        assert_eq!(b(-1), 1);
        assert_eq!(b(1), 17);
        assert_eq!(b(-7), 7);
        assert_eq!(b(-8), 8);
        assert_eq!(b(-200), 15);
        assert_eq!(b(200), 31);
    }

    /// A small BERT with seeded random weights (biases and layer norms included, so it runs
    /// on the fused CPU layers).
    fn tiny_bert(rng: &mut ChaCha20Rng) -> (TransformerConfig, VarBuilder<'static>) {
        let config: TransformerConfig = serde_json::from_value(serde_json::json!({
            "model_type": "bert", "vocab_size": 100, "hidden_size": 64,
            "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 256,
            "max_position_embeddings": 64, "type_vocab_size": 2,
        }))
        .unwrap();
        let (h, i) = (64, 256);
        // (name, shape, centre, spread) of every tensor, drawn below in this order
        let mut specs: Vec<(String, Vec<usize>, f32, f32)> = vec![
            (
                "embeddings.word_embeddings.weight".into(),
                vec![100, h],
                0.0,
                1.0,
            ),
            (
                "embeddings.position_embeddings.weight".into(),
                vec![64, h],
                0.0,
                0.3,
            ),
            (
                "embeddings.token_type_embeddings.weight".into(),
                vec![2, h],
                0.0,
                0.1,
            ),
        ];
        let mut norms = vec!["embeddings.LayerNorm".to_owned()];
        for l in 0..2 {
            let at = format!("encoder.layer.{l}");
            for (name, out, inp) in [
                ("attention.self.query", h, h),
                ("attention.self.key", h, h),
                ("attention.self.value", h, h),
                ("attention.output.dense", h, h),
                ("intermediate.dense", i, h),
                ("output.dense", h, i),
            ] {
                let spread = 1.7 / (inp as f32).sqrt();
                specs.push((format!("{at}.{name}.weight"), vec![out, inp], 0.0, spread));
                specs.push((format!("{at}.{name}.bias"), vec![out], 0.0, 0.05));
            }
            norms.push(format!("{at}.attention.output.LayerNorm"));
            norms.push(format!("{at}.output.LayerNorm"));
        }
        for at in norms {
            specs.push((format!("{at}.weight"), vec![h], 1.0, 0.2));
            specs.push((format!("{at}.bias"), vec![h], 0.0, 0.1));
        }
        let tensors = specs
            .into_iter()
            .map(|(name, shape, centre, spread)| {
                let values: Vec<f32> = (0..shape.iter().product::<usize>())
                    .map(|_| centre + rng.gen_range(-spread..spread))
                    .collect();
                let tensor = Tensor::from_vec(values, shape, &Device::Cpu).unwrap();
                (name, tensor)
            })
            .collect();
        let vb = VarBuilder::from_tensors(tensors, DType::F32, &Device::Cpu);
        (config, vb)
    }

    /// A random BERT's last hidden states at bf16 and int8 against f32: every real token's
    /// vector within cosine 0.99 (far closer in practice), the kernel named, and a text alone
    /// given the same bits as in a batch.
    #[test]
    fn lower_precisions_stay_close_to_f32_on_a_random_bert() {
        let mut rng = ChaCha20Rng::seed_from_u64(31);
        let (config, vb) = tiny_bert(&mut rng);
        let ids: Vec<Vec<u32>> = [13usize, 40, 5]
            .iter()
            .map(|&len| {
                let mut row: Vec<u32> = (0..len).map(|_| rng.gen_range(1..100)).collect();
                row.resize(40, 0);
                row
            })
            .collect();
        let mask: Vec<Vec<u32>> = [13usize, 40, 5]
            .iter()
            .map(|&len| (0..40).map(|t| u32::from(t < len)).collect())
            .collect();
        let load =
            |precision| Encoder::load(vb.clone(), &config, EncoderFlavor::Bert, precision).unwrap();
        let f32_out = load(Precision::F32)
            .forward(&ids, &mask, false)
            .unwrap()
            .last;
        let int8_here = sage_kernels::DenseWeight::with_precision(
            &Tensor::zeros((16, 32), DType::F32, &Device::Cpu).unwrap(),
            Precision::Int8,
        )
        .is_ok();
        for precision in [Precision::Bf16, Precision::Int8] {
            if precision == Precision::Int8 && !int8_here {
                sage_test_env::skip("int8 on a random BERT", "no AVX2 or VNNI on this CPU");
                continue;
            }
            let encoder = load(precision);
            let kernel = encoder.dense_kernel().unwrap();
            match precision {
                Precision::Int8 => assert!(kernel.starts_with("int8-"), "{kernel}"),
                _ => assert!(
                    kernel.contains("bf16") && kernel != "amx-bf16x3",
                    "{kernel}"
                ),
            }
            let out = encoder.forward(&ids, &mask, false).unwrap().last;
            let mut lowest = 1f32;
            for (b, row) in mask.iter().enumerate() {
                for (t, _) in row.iter().enumerate().filter(|(_, &m)| m == 1) {
                    let a: Vec<f32> = out.get(b).unwrap().get(t).unwrap().to_vec1().unwrap();
                    let f: Vec<f32> = f32_out.get(b).unwrap().get(t).unwrap().to_vec1().unwrap();
                    let dot: f32 = a.iter().zip(&f).map(|(x, y)| x * y).sum();
                    let norms = a.iter().map(|x| x * x).sum::<f32>().sqrt()
                        * f.iter().map(|x| x * x).sum::<f32>().sqrt();
                    lowest = lowest.min(dot / norms);
                }
            }
            eprintln!("{precision} ({kernel}): lowest token cosine vs f32 {lowest:.6}");
            assert!(lowest >= 0.99, "{precision}: lowest token cosine {lowest}");
            // the last text alone: the same bits as in the batch
            let alone = encoder
                .forward(&ids[2..], &[mask[2].clone()], false)
                .unwrap()
                .last;
            let (a, b) = (
                alone.get(0).unwrap().narrow(0, 0, 5).unwrap(),
                out.get(2).unwrap().narrow(0, 0, 5).unwrap(),
            );
            assert_eq!(
                max_difference(&a, &b),
                0.0,
                "{precision}: alone vs in a batch"
            );
        }
    }

    /// A lower precision on layers the fused CPU path does not take is an error, not f32.
    #[test]
    fn a_lower_precision_off_the_fused_path_is_refused() {
        let mut rng = ChaCha20Rng::seed_from_u64(32);
        let (config, vb) = tiny_bert(&mut rng);
        let half = vb.set_dtype(DType::F16);
        assert!(Encoder::load(half.clone(), &config, EncoderFlavor::Bert, Precision::F32).is_ok());
        let e = Encoder::load(half, &config, EncoderFlavor::Bert, Precision::Int8)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("precision int8") && e.contains("--precision f32"),
            "{e}"
        );
    }
}
