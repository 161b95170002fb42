//! A llama-family decoder (llama: SmolLM2, Llama; qwen2: Qwen2.5) over GGUF weights that runs
//! many sequences in one forward pass, each at its own position with its own key/value cache.
//!
//! Why not candle's `quantized_llama`: its forward pass takes one batch of equal-length
//! sequences sharing one position and a causal mask, so requests of different lengths can only
//! run one at a time. A paraphrasing run is tens of thousands of short requests; one at a time,
//! every decoded token reads all the weights for one row (memory-bound on a CPU, a few hundred
//! tiny kernels per token on a GPU).
//!
//! Here the new tokens of all sequences are *packed* into one `(tokens, hidden)` matrix: every
//! linear layer, norm and activation runs once over the pack, and only attention, which mixes
//! positions, runs per sequence against that sequence's own cache. Sequences in prefill (many
//! tokens) and in decoding (one token) share a pass, so a finished request's slot is refilled at
//! once (continuous batching).
//!
//! Why attention per sequence rather than one padded batch: on the CPU every operation of a
//! row here is computed exactly as it would be alone (the quantized matrix products quantize
//! and reduce each row on its own), so a request's answer is bit-for-bit the same whatever else
//! shares its batch — answers stay a function of (model, seed, text), as the paraphrase cache
//! assumes. Padding would change reduction lengths, hence rounding. On a GPU the large-batch
//! matrix products take other kernels than a single row does, so there batched and single
//! answers agree to rounding only, as any GPU answer agrees with a CPU one.
//!
//! The arithmetic per sequence is the same sequence of candle operations as `quantized_llama`
//! / `quantized_qwen2`, so a sequence alone gives that model's logits (tested).

use std::io::{Read, Seek};

use candle_core::quantized::{gguf_file, QMatMul, QTensor};
use candle_core::{DType, Device, Module, Tensor};
use candle_transformers::quantized_nn::RmsNorm;
use candle_transformers::utils::{build_causal_mask, repeat_kv};

use crate::q4_1::Q4_1Matrix;

/// A weight matrix: Q4_1 on an AVX2 CPU through our kernel (candle's own is scalar), anything
/// else through candle; the same bits either way.
enum Linear {
    Candle(QMatMul),
    Q4_1(Q4_1Matrix),
}

impl Linear {
    fn new(weight: QTensor) -> candle_core::Result<Linear> {
        Ok(match Q4_1Matrix::from_qtensor(&weight) {
            Some(matrix) => Linear::Q4_1(matrix),
            None => Linear::Candle(QMatMul::from_qtensor(weight)?),
        })
    }

    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        match self {
            Linear::Candle(m) => m.forward(x),
            Linear::Q4_1(m) => m.forward(x),
        }
    }
}

/// One decoder layer's weights.
struct Layer {
    wq: Linear,
    wk: Linear,
    wv: Linear,
    wo: Linear,
    /// qwen2's query/key/value biases.
    biases: Option<[Tensor; 3]>,
    attention_norm: RmsNorm,
    ffn_norm: RmsNorm,
    gate: Linear,
    up: Linear,
    down: Linear,
}

/// The decoder: weights and shape, shared by every sequence.
pub(crate) struct PackedDecoder {
    embeddings: candle_nn::Embedding,
    layers: Vec<Layer>,
    norm: RmsNorm,
    output: Linear,
    cos: Tensor,
    sin: Tensor,
    neg_inf: Tensor,
    n_head: usize,
    n_kv_head: usize,
    head_dim: usize,
    hidden: usize,
    /// Rotary embedding on halves (qwen2) rather than interleaved pairs (llama).
    rope_is_neox: bool,
    context_length: usize,
}

/// One sequence's key/value cache: per layer `(1, n_kv_head, len, head_dim)` keys and values.
/// Cloning is cheap (candle tensors are reference-counted), so a shared prompt prefix is
/// computed once and every request starts from a clone.
#[derive(Clone, Default)]
pub(crate) struct KvCache {
    layers: Vec<(Tensor, Tensor)>,
    len: usize,
}

impl KvCache {
    /// Tokens held.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

/// The rotary tables exactly as candle's quantized models build them (an outer product, so the
/// value at a position does not depend on how many positions are built).
fn rotary_tables(
    rope_dim: usize,
    freq_base: f32,
    positions: usize,
    device: &Device,
) -> candle_core::Result<(Tensor, Tensor)> {
    let theta: Vec<f32> = (0..rope_dim)
        .step_by(2)
        .map(|i| 1f32 / freq_base.powf(i as f32 / rope_dim as f32))
        .collect();
    let theta = Tensor::new(theta.as_slice(), device)?;
    let angles = Tensor::arange(0, positions as u32, device)?
        .to_dtype(DType::F32)?
        .reshape((positions, 1))?
        .matmul(&theta.reshape((1, theta.elem_count()))?)?;
    Ok((angles.cos()?, angles.sin()?))
}

impl PackedDecoder {
    /// Whether this decoder runs `architecture` (GGUF `general.architecture`).
    pub(crate) fn supports(architecture: &str) -> bool {
        matches!(architecture, "llama" | "qwen2")
    }

    /// Reads the weights of a llama or qwen2 GGUF file.
    pub(crate) fn from_gguf<R: Read + Seek>(
        content: &gguf_file::Content,
        reader: &mut R,
        device: &Device,
    ) -> candle_core::Result<PackedDecoder> {
        let architecture = content
            .metadata
            .get("general.architecture")
            .and_then(|v| v.to_string().ok())
            .cloned()
            .unwrap_or_default();
        if !Self::supports(&architecture) {
            candle_core::bail!("architecture {architecture:?} is not llama or qwen2");
        }
        let meta = |key: &str| {
            let full = format!("{architecture}.{key}");
            content
                .metadata
                .get(&full)
                .ok_or_else(|| candle_core::Error::Msg(format!("no {full} in the GGUF metadata")))
        };
        let n_head = meta("attention.head_count")?.to_u32()? as usize;
        let n_kv_head = meta("attention.head_count_kv")?.to_u32()? as usize;
        let n_layer = meta("block_count")?.to_u32()? as usize;
        let hidden = meta("embedding_length")?.to_u32()? as usize;
        let eps = f64::from(meta("attention.layer_norm_rms_epsilon")?.to_f32()?);
        let freq_base = meta("rope.freq_base")
            .and_then(|v| v.to_f32())
            .unwrap_or(10_000.0);
        let head_dim = hidden / n_head;
        let rope_dim = meta("rope.dimension_count")
            .and_then(|v| v.to_u32())
            .map(|d| d as usize)
            .unwrap_or(head_dim);
        let context_length = meta("context_length")
            .and_then(|v| v.to_u32())
            .map(|d| d as usize)
            .unwrap_or(4096);
        let (cos, sin) = rotary_tables(rope_dim, freq_base, context_length, device)?;
        let mut tensor = |name: &str| content.tensor(reader, name, device);
        let embeddings_q = tensor("token_embd.weight")?;
        let embeddings = embeddings_q.dequantize(device)?;
        let norm = RmsNorm::from_qtensor(tensor("output_norm.weight")?, eps)?;
        // tied embeddings when the file has no output matrix
        let output: QTensor = match tensor("output.weight") {
            Ok(t) => t,
            Err(_) => embeddings_q,
        };
        let mut layers = Vec::with_capacity(n_layer);
        for i in 0..n_layer {
            let mut weight = |name: &str| tensor(&format!("blk.{i}.{name}"));
            let biases = if architecture == "qwen2" {
                Some([
                    weight("attn_q.bias")?.dequantize(device)?,
                    weight("attn_k.bias")?.dequantize(device)?,
                    weight("attn_v.bias")?.dequantize(device)?,
                ])
            } else {
                None
            };
            layers.push(Layer {
                wq: Linear::new(weight("attn_q.weight")?)?,
                wk: Linear::new(weight("attn_k.weight")?)?,
                wv: Linear::new(weight("attn_v.weight")?)?,
                wo: Linear::new(weight("attn_output.weight")?)?,
                biases,
                attention_norm: RmsNorm::from_qtensor(weight("attn_norm.weight")?, eps)?,
                ffn_norm: RmsNorm::from_qtensor(weight("ffn_norm.weight")?, eps)?,
                gate: Linear::new(weight("ffn_gate.weight")?)?,
                up: Linear::new(weight("ffn_up.weight")?)?,
                down: Linear::new(weight("ffn_down.weight")?)?,
            });
        }
        Ok(PackedDecoder {
            embeddings: candle_nn::Embedding::new(embeddings, hidden),
            layers,
            norm,
            output: Linear::new(output)?,
            cos,
            sin,
            neg_inf: Tensor::new(f32::NEG_INFINITY, device)?,
            n_head,
            n_kv_head,
            head_dim,
            hidden,
            rope_is_neox: architecture == "qwen2",
            context_length,
        })
    }

    /// Positions the rotary tables cover: a sequence cannot grow past this.
    pub(crate) fn context_length(&self) -> usize {
        self.context_length
    }

    fn rope(&self, x: &Tensor, position: usize) -> candle_core::Result<Tensor> {
        let (_, _, len, _) = x.dims4()?;
        let cos = self.cos.narrow(0, position, len)?;
        let sin = self.sin.narrow(0, position, len)?;
        let x = x.contiguous()?;
        if self.rope_is_neox {
            candle_nn::rotary_emb::rope(&x, &cos, &sin)
        } else {
            candle_nn::rotary_emb::rope_i(&x, &cos, &sin)
        }
    }

    /// Runs `steps[i].0` (the next tokens of sequence i, at least one) on top of `steps[i].1`
    /// (its cache, extended in place) and returns the logits after each sequence's last token,
    /// one row per sequence: `(steps.len(), vocabulary)`.
    pub(crate) fn forward(
        &self,
        steps: &mut [(&[u32], &mut KvCache)],
    ) -> candle_core::Result<Tensor> {
        let device = self.cos.device();
        let mut spans = Vec::with_capacity(steps.len());
        let mut flat = Vec::new();
        for (tokens, cache) in steps.iter() {
            if tokens.is_empty() {
                candle_core::bail!("a sequence with no new token");
            }
            if cache.len + tokens.len() > self.context_length {
                candle_core::bail!(
                    "{} tokens exceed the model's context of {}",
                    cache.len + tokens.len(),
                    self.context_length
                );
            }
            spans.push((flat.len(), tokens.len()));
            flat.extend_from_slice(tokens);
        }
        let ids = Tensor::new(flat.as_slice(), device)?;
        let mut x = self.embeddings.forward(&ids)?;
        for (l, layer) in self.layers.iter().enumerate() {
            let residual = &x;
            let h = layer.attention_norm.forward(&x)?;
            let mut q = layer.wq.forward(&h)?;
            let mut k = layer.wk.forward(&h)?;
            let mut v = layer.wv.forward(&h)?;
            if let Some([bq, bk, bv]) = &layer.biases {
                q = q.broadcast_add(bq)?;
                k = k.broadcast_add(bk)?;
                v = v.broadcast_add(bv)?;
            }
            let mut outputs = Vec::with_capacity(steps.len());
            for ((_, cache), &(offset, len)) in steps.iter_mut().zip(&spans) {
                let heads = |t: &Tensor, n: usize| {
                    t.narrow(0, offset, len)?
                        .reshape((1, len, n, self.head_dim))?
                        .transpose(1, 2)
                };
                let position = cache.len;
                let q = self.rope(&heads(&q, self.n_head)?, position)?;
                let k = self.rope(&heads(&k, self.n_kv_head)?, position)?;
                let v = heads(&v, self.n_kv_head)?.contiguous()?;
                let (k, v) = match cache.layers.get(l) {
                    Some((k_cache, v_cache)) if position > 0 => (
                        Tensor::cat(&[k_cache, &k], 2)?,
                        Tensor::cat(&[v_cache, &v], 2)?,
                    ),
                    _ => (k, v),
                };
                if cache.layers.len() > l {
                    cache.layers[l] = (k.clone(), v.clone());
                } else {
                    cache.layers.push((k.clone(), v.clone()));
                }
                let k = repeat_kv(k, self.n_head / self.n_kv_head)?;
                let v = repeat_kv(v, self.n_head / self.n_kv_head)?;
                let scores = (q.matmul(&k.t()?)? / (self.head_dim as f64).sqrt())?;
                let scores = if len > 1 {
                    let mask = build_causal_mask(len, position, device)?;
                    let mask = mask.broadcast_as(scores.shape())?;
                    mask.where_cond(&self.neg_inf.broadcast_as(scores.shape())?, &scores)?
                } else {
                    scores
                };
                let weights = candle_nn::ops::softmax_last_dim(&scores)?;
                let y = weights.matmul(&v.contiguous()?)?;
                outputs.push(y.transpose(1, 2)?.reshape((len, self.hidden))?);
            }
            let y = layer.wo.forward(&Tensor::cat(&outputs, 0)?)?;
            let x1 = (y + residual)?;
            let h = layer.ffn_norm.forward(&x1)?;
            let gated =
                (candle_nn::ops::silu(&layer.gate.forward(&h)?)? * layer.up.forward(&h)?)?;
            x = (layer.down.forward(&gated)? + &x1)?;
        }
        for ((tokens, cache), _) in steps.iter_mut().zip(&spans) {
            cache.len += tokens.len();
        }
        let last: Vec<u32> = spans
            .iter()
            .map(|&(offset, len)| (offset + len - 1) as u32)
            .collect();
        let last = x.index_select(&Tensor::new(last.as_slice(), device)?, 0)?;
        let logits = self.output.forward(&self.norm.forward(&last)?)?;
        logits.to_dtype(DType::F32)
    }
}

#[cfg(test)]
mod tests {
    use candle_core::quantized::{gguf_file::Value, GgmlDType};
    use candle_transformers::models::{quantized_llama, quantized_qwen2};
    use rand::{Rng, SeedableRng};

    use super::*;

    const VOCAB: usize = 96;
    const HIDDEN: usize = 64;

    /// A small random GGUF of `architecture`: 2 layers, 4 query heads over 2 key/value heads,
    /// quantized matrices (llama: Q4_1, our kernel's type; qwen2: Q4_0, candle's), F32 norms
    /// and biases.
    fn tiny_gguf(architecture: &str, seed: u64) -> Vec<u8> {
        let q = if architecture == "llama" {
            GgmlDType::Q4_1
        } else {
            GgmlDType::Q4_0
        };
        let mut rng = sage_core::ExperimentRng::seed_from_u64(seed);
        let device = Device::Cpu;
        let mut random = |shape: &[usize], scale: f32, dtype: GgmlDType| {
            let n: usize = shape.iter().product();
            let values: Vec<f32> = (0..n).map(|_| rng.gen_range(-scale..scale)).collect();
            QTensor::quantize(&Tensor::from_vec(values, shape, &device).unwrap(), dtype).unwrap()
        };
        let mut tensors: Vec<(String, QTensor)> = vec![
            (
                "token_embd.weight".into(),
                random(&[VOCAB, HIDDEN], 1.0, GgmlDType::Q4_0),
            ),
            (
                "output_norm.weight".into(),
                random(&[HIDDEN], 1.0, GgmlDType::F32),
            ),
            ("output.weight".into(), random(&[VOCAB, HIDDEN], 0.5, q)),
        ];
        for i in 0..2 {
            let w = |name: &str| format!("blk.{i}.{name}");
            tensors.push((w("attn_q.weight"), random(&[HIDDEN, HIDDEN], 0.3, q)));
            tensors.push((w("attn_k.weight"), random(&[32, HIDDEN], 0.3, q)));
            tensors.push((w("attn_v.weight"), random(&[32, HIDDEN], 0.3, q)));
            tensors.push((w("attn_output.weight"), random(&[HIDDEN, HIDDEN], 0.3, q)));
            tensors.push((
                w("attn_norm.weight"),
                random(&[HIDDEN], 1.0, GgmlDType::F32),
            ));
            tensors.push((w("ffn_norm.weight"), random(&[HIDDEN], 1.0, GgmlDType::F32)));
            tensors.push((w("ffn_gate.weight"), random(&[128, HIDDEN], 0.3, q)));
            tensors.push((w("ffn_up.weight"), random(&[128, HIDDEN], 0.3, q)));
            tensors.push((w("ffn_down.weight"), random(&[HIDDEN, 128], 0.3, q)));
            if architecture == "qwen2" {
                tensors.push((w("attn_q.bias"), random(&[HIDDEN], 0.2, GgmlDType::F32)));
                tensors.push((w("attn_k.bias"), random(&[32], 0.2, GgmlDType::F32)));
                tensors.push((w("attn_v.bias"), random(&[32], 0.2, GgmlDType::F32)));
            }
        }
        let key = |k: &str| format!("{architecture}.{k}");
        let metadata: Vec<(String, Value)> = vec![
            (
                "general.architecture".into(),
                Value::String(architecture.into()),
            ),
            (key("attention.head_count"), Value::U32(4)),
            (key("attention.head_count_kv"), Value::U32(2)),
            (key("block_count"), Value::U32(2)),
            (key("embedding_length"), Value::U32(HIDDEN as u32)),
            (key("context_length"), Value::U32(256)),
            (key("rope.dimension_count"), Value::U32(16)),
            (key("rope.freq_base"), Value::F32(10_000.0)),
            (key("attention.layer_norm_rms_epsilon"), Value::F32(1e-5)),
        ];
        let mut file = std::io::Cursor::new(Vec::new());
        gguf_file::write(
            &mut file,
            &metadata
                .iter()
                .map(|(k, v)| (k.as_str(), v))
                .collect::<Vec<_>>(),
            &tensors
                .iter()
                .map(|(k, t)| (k.as_str(), t))
                .collect::<Vec<_>>(),
        )
        .unwrap();
        file.into_inner()
    }

    fn content(bytes: &[u8]) -> (gguf_file::Content, std::io::Cursor<&[u8]>) {
        let mut reader = std::io::Cursor::new(bytes);
        (gguf_file::Content::read(&mut reader).unwrap(), reader)
    }

    fn ours(bytes: &[u8]) -> PackedDecoder {
        let (content, mut reader) = content(bytes);
        PackedDecoder::from_gguf(&content, &mut reader, &Device::Cpu).unwrap()
    }

    fn row(t: &Tensor) -> Vec<f32> {
        t.flatten_all().unwrap().to_vec1().unwrap()
    }

    /// Candle's model as a function of (new tokens, position) to logits.
    type CandleModel = Box<dyn FnMut(&[u32], usize) -> Tensor>;

    /// A candle model's `forward(input, position)` fed one sequence of token ids.
    fn stepper(
        mut forward: impl FnMut(&Tensor, usize) -> candle_core::Result<Tensor> + 'static,
    ) -> CandleModel {
        Box::new(move |tokens, pos| {
            let input = Tensor::new(tokens, &Device::Cpu)
                .unwrap()
                .unsqueeze(0)
                .unwrap();
            forward(&input, pos).unwrap()
        })
    }

    /// The prompt, then three decoded tokens, through candle's model and through ours alone.
    #[test]
    fn one_sequence_gives_candles_logits() {
        let prompt: Vec<u32> = vec![1, 17, 42, 5, 88, 23, 9];
        let decoded = [31u32, 64, 2];
        for architecture in ["llama", "qwen2"] {
            let bytes = tiny_gguf(architecture, 7);
            let mut theirs: CandleModel = {
                let (content, mut reader) = content(&bytes);
                if architecture == "llama" {
                    let mut m = quantized_llama::ModelWeights::from_gguf(
                        content,
                        &mut reader,
                        &Device::Cpu,
                    )
                    .unwrap();
                    stepper(move |x, pos| m.forward(x, pos))
                } else {
                    let mut m = quantized_qwen2::ModelWeights::from_gguf(
                        content,
                        &mut reader,
                        &Device::Cpu,
                    )
                    .unwrap();
                    stepper(move |x, pos| m.forward(x, pos))
                }
            };
            let decoder = ours(&bytes);
            let mut cache = KvCache::default();
            let mut pos = 0;
            for tokens in std::iter::once(&prompt[..]).chain(decoded.chunks(1)) {
                let expected = row(&theirs(tokens, pos));
                let got = row(&decoder.forward(&mut [(tokens, &mut cache)]).unwrap());
                pos += tokens.len();
                assert_eq!(cache.len(), pos);
                // the same operations in the same order: the same bits
                assert_eq!(got, expected, "{architecture} after {pos} tokens");
            }
        }
    }

    /// Sequences of different lengths, in prefill and decoding together, give bit for bit what
    /// each gives alone.
    #[test]
    fn a_packed_batch_equals_each_sequence_alone() {
        for architecture in ["llama", "qwen2"] {
            let decoder = ours(&tiny_gguf(architecture, 11));
            let prompts: [&[u32]; 4] = [&[3, 4, 5], &[7], &[9, 8, 7, 6, 5, 4, 3, 2, 1], &[60, 61]];
            let alone: Vec<Vec<Vec<f32>>> = prompts
                .iter()
                .map(|p| {
                    let mut cache = KvCache::default();
                    let mut out = vec![row(&decoder.forward(&mut [(*p, &mut cache)]).unwrap())];
                    for t in [10u32, 20, 30] {
                        out.push(row(&decoder
                            .forward(&mut [(&[t][..], &mut cache)])
                            .unwrap()));
                    }
                    out
                })
                .collect();
            // the first two start together; the others join while those are decoding
            let mut caches = vec![KvCache::default(); 4];
            let mut together: Vec<Vec<Vec<f32>>> = vec![Vec::new(); 4];
            let script: [&[(usize, &[u32])]; 6] = [
                &[(0, prompts[0]), (1, prompts[1])],
                &[(0, &[10]), (1, &[10]), (2, prompts[2])],
                &[(2, &[10]), (0, &[20]), (3, prompts[3]), (1, &[20])],
                &[(0, &[30]), (1, &[30]), (2, &[20]), (3, &[10])],
                &[(3, &[20]), (2, &[30])],
                &[(3, &[30])],
            ];
            for pass in script {
                let mut refs: Vec<Option<&mut KvCache>> = caches.iter_mut().map(Some).collect();
                let mut steps: Vec<(&[u32], &mut KvCache)> = pass
                    .iter()
                    .map(|&(i, tokens)| (tokens, refs[i].take().unwrap()))
                    .collect();
                let logits = decoder.forward(&mut steps).unwrap();
                for (k, &(i, _)) in pass.iter().enumerate() {
                    together[i].push(row(&logits.get(k).unwrap()));
                }
            }
            assert_eq!(together, alone, "{architecture}");
        }
    }

    #[test]
    fn too_long_a_sequence_is_an_error_not_a_panic() {
        let decoder = ours(&tiny_gguf("llama", 3));
        let tokens = vec![1u32; 257];
        let mut cache = KvCache::default();
        let e = decoder
            .forward(&mut [(&tokens[..], &mut cache)])
            .err()
            .unwrap();
        assert!(e.to_string().contains("context of 256"), "{e}");
    }
}
