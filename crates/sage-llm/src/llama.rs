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
//! Attention comes in two forms:
//! - [`PackedDecoder::forward`], per sequence (the CPU default): each sequence attends alone
//!   over its own cache. On the CPU every operation of a row is then computed exactly as it
//!   would be alone (the quantized matrix products quantize and reduce each row on its own),
//!   so a request's answer is bit-for-bit the same whatever else shares its batch, and answers
//!   stay a function of (model, seed, text), as the paraphrase cache assumes. The price is a
//!   dozen small operations per sequence per layer. New keys and values are written in place
//!   into room kept after the filled positions, and on the CPU each query head's products
//!   read its shared key/value head straight from those rows, through the same gemm calls
//!   candle's matmul makes on a repeated copy ([`matmul_shared_heads`]): growing the cache by
//!   concatenation and then repeating the heads took two copies of the whole cache per token
//!   and layer (elsewhere the heads are still repeated, in one copy).
//! - [`PackedDecoder::forward_pooled`] (the GPU default): keys and values live in one
//!   preallocated [`KvPool`], written in place, and all decoding sequences attend in one
//!   batched, masked product over the slots. A pass is then a fixed number of operations (on a
//!   GPU, kernel launches) however many sequences it decodes. Reductions run over the padded
//!   length, so logits agree with the per-sequence ones to rounding only; on a GPU the large
//!   batched matrix products take other kernels than a single row anyway, so batched and single
//!   answers agree to rounding there whichever form is used.
//!
//! The arithmetic per sequence is the same sequence of candle operations as `quantized_llama`
//! / `quantized_qwen2`, so a sequence alone gives that model's logits (tested).

use std::io::{Read, Seek};

use candle_core::quantized::{gguf_file, QMatMul, QTensor};
use candle_core::{DType, Device, Module, Storage, Tensor};
use candle_transformers::quantized_nn::RmsNorm;
use candle_transformers::utils::build_causal_mask;

use rayon::prelude::*;

use sage_kernels::DenseWeight;

/// A weight matrix: Q4_1 and Q8_0 through sage-kernels' integer kernels where the CPU has
/// them, anything else through candle; the same bits either way.
enum Linear {
    Candle(QMatMul),
    Kernel(DenseWeight),
}

impl Linear {
    fn new(weight: QTensor) -> candle_core::Result<Linear> {
        Ok(match DenseWeight::quantized(&weight) {
            Some(matrix) => Linear::Kernel(matrix),
            None => Linear::Candle(QMatMul::from_qtensor(weight)?),
        })
    }

    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        match self {
            Linear::Candle(m) => m.forward(x),
            Linear::Kernel(m) => m.product(x),
        }
    }

    /// Each of `linears` applied to `x`, which our kernels quantize once for all of them and
    /// multiply in one parallel pass.
    fn forward_each<const N: usize>(
        linears: [&Linear; N],
        x: &Tensor,
    ) -> candle_core::Result<[Tensor; N]> {
        let ours: Vec<&DenseWeight> = linears
            .iter()
            .filter_map(|linear| match linear {
                Linear::Kernel(m) => Some(m),
                Linear::Candle(_) => None,
            })
            .collect();
        let mut ours = DenseWeight::products(&ours, x)?.into_iter();
        let mut outputs = Vec::with_capacity(N);
        for linear in linears {
            outputs.push(match linear {
                Linear::Candle(m) => m.forward(x)?,
                Linear::Kernel(_) => ours.next().expect("one output per matrix"),
            });
        }
        Ok(outputs
            .try_into()
            .unwrap_or_else(|_| unreachable!("one output per linear")))
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

/// One sequence's key/value cache: per layer, keys and values `(n_kv_head, capacity,
/// head_dim)`, the first `len` positions filled. Cloning is cheap (candle tensors are
/// reference-counted), so a shared prompt prefix is computed once and every request starts from
/// a clone; a clone copies the buffers before its first write, since the original may be
/// cloned again.
#[derive(Default)]
pub(crate) struct KvCache {
    layers: Vec<(Tensor, Tensor)>,
    len: usize,
    /// The buffers may be another cache's too.
    shared: bool,
}

impl Clone for KvCache {
    fn clone(&self) -> Self {
        KvCache {
            layers: self.layers.clone(),
            len: self.len,
            shared: true,
        }
    }
}

impl KvCache {
    /// Tokens held.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Writes `keys` and `values` `(n_kv_head, tokens, head_dim)` of layer `layer` after the
    /// filled positions (growing, or first copying shared buffers, where needed) and returns
    /// the layer's keys and values up to them, as `(1, n_kv_head, len + tokens, head_dim)`
    /// views.
    fn append(
        &mut self,
        layer: usize,
        keys: &Tensor,
        values: &Tensor,
    ) -> candle_core::Result<(Tensor, Tensor)> {
        let (n_kv_head, tokens, head_dim) = keys.dims3()?;
        let needed = self.len + tokens;
        let fresh = |positions: usize| {
            Tensor::zeros(
                (n_kv_head, positions, head_dim),
                keys.dtype(),
                keys.device(),
            )
        };
        if layer == self.layers.len() {
            if self.len > 0 {
                candle_core::bail!(
                    "a key/value cache of {} tokens lacks layer {layer}",
                    self.len
                );
            }
            self.layers.push((fresh(0)?, fresh(0)?));
        }
        let (k_rows, v_rows) = &mut self.layers[layer];
        if self.shared || k_rows.dim(1)? < needed {
            // Growth by half again keeps a request's copies few and its idle positions bounded.
            let capacity = (needed + needed / 2).max(needed + 16);
            let grown = |rows: &Tensor| {
                Tensor::cat(
                    &[&rows.narrow(1, 0, self.len)?, &fresh(capacity - self.len)?],
                    1,
                )
            };
            (*k_rows, *v_rows) = (grown(k_rows)?, grown(v_rows)?);
        }
        k_rows.slice_set(keys, 1, self.len)?;
        v_rows.slice_set(values, 1, self.len)?;
        let view = |rows: &Tensor| rows.narrow(1, 0, needed)?.unsqueeze(0);
        Ok((view(k_rows)?, view(v_rows)?))
    }

    /// Layer `layer`'s keys and values `(n_kv_head * len, head_dim)`, head-major.
    fn filled(&self, layer: usize) -> candle_core::Result<(Tensor, Tensor)> {
        let one = |rows: &Tensor| {
            let (n_kv_head, _, head_dim) = rows.dims3()?;
            rows.narrow(1, 0, self.len)?
                .reshape((n_kv_head * self.len, head_dim))
        };
        let (k, v) = &self.layers[layer];
        Ok((one(k)?, one(v)?))
    }
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
        // exactly as candle's quantized models build them
        let (cos, sin) = crate::rotary::rotary_tables(
            rope_dim,
            context_length,
            f64::from(freq_base),
            crate::rotary::InverseFrequencies::F32,
            device,
            DType::F32,
        )?;
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
        self.rotate(&x.contiguous()?, &cos, &sin)
    }

    /// The rotary embedding of `x` `(b, heads, t, head_dim)` (contiguous) with the angles of
    /// its `t` positions, in this architecture's pairing.
    fn rotate(&self, x: &Tensor, cos: &Tensor, sin: &Tensor) -> candle_core::Result<Tensor> {
        if self.rope_is_neox {
            candle_nn::rotary_emb::rope(x, cos, sin)
        } else {
            candle_nn::rotary_emb::rope_i(x, cos, sin)
        }
    }

    /// Runs `steps[i].0` (the next tokens of sequence i, at least one) on top of `steps[i].1`
    /// (its cache, extended in place) and returns the logits after each sequence's last token,
    /// one row per sequence: `(steps.len(), vocabulary)`.
    pub(crate) fn forward(
        &self,
        steps: &mut [(&[u32], &mut KvCache)],
    ) -> candle_core::Result<Tensor> {
        let device = self.cos.device().clone();
        let mut spans = Vec::with_capacity(steps.len());
        let mut flat = Vec::new();
        for (tokens, cache) in steps.iter() {
            self.check_step(tokens, cache.len, self.context_length)?;
            spans.push((flat.len(), tokens.len()));
            flat.extend_from_slice(tokens);
        }
        let logits = self.run_layers(&flat, &spans, |l, q, k, v| {
            // Sequences attend independently, so they attend in parallel: each is a chain of
            // small operations that would otherwise leave the other cores idle. The
            // arithmetic of each is unchanged, hence so are the bits.
            let attend = |(cache, &(offset, len)): (&mut KvCache, &(usize, usize))| {
                let heads = |t: &Tensor, n: usize| {
                    t.narrow(0, offset, len)?
                        .reshape((1, len, n, self.head_dim))?
                        .transpose(1, 2)
                };
                let position = cache.len;
                let q = self.rope(&heads(q, self.n_head)?, position)?;
                let k = self.rope(&heads(k, self.n_kv_head)?, position)?;
                let v = heads(v, self.n_kv_head)?.contiguous()?;
                let (k, v) = cache.append(l, &k.squeeze(0)?, &v.squeeze(0)?)?;
                self.attend_one(&q, &k, &v, position, &device)
            };
            let outputs: Vec<Tensor> = steps
                .par_iter_mut()
                .map(|(_, cache)| &mut **cache)
                .zip(spans.par_iter())
                .map(attend)
                .collect::<candle_core::Result<_>>()?;
            Tensor::cat(&outputs, 0)
        })?;
        for ((tokens, cache), _) in steps.iter_mut().zip(&spans) {
            cache.len += tokens.len();
            cache.shared = false;
        }
        Ok(logits)
    }

    fn check_step(&self, tokens: &[u32], start: usize, limit: usize) -> candle_core::Result<()> {
        if tokens.is_empty() {
            candle_core::bail!("a sequence with no new token");
        }
        if start + tokens.len() > limit {
            candle_core::bail!(
                "{} tokens exceed the model's context of {limit}",
                start + tokens.len()
            );
        }
        Ok(())
    }

    /// One sequence's causal attention: `q` `(1, n_head, len, head_dim)` at `position`, over
    /// `k`, `v` `(1, n_kv_head, position + len, head_dim)` (views of the cache); returns
    /// `(len, hidden)`. The operations of candle's quantized models, in their order.
    fn attend_one(
        &self,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        position: usize,
        device: &Device,
    ) -> candle_core::Result<Tensor> {
        let len = q.dim(2)?;
        let cpu_f32 = device.is_cpu() && [q, k, v].iter().all(|t| t.dtype() == DType::F32);
        let scores = if cpu_f32 {
            matmul_shared_heads(q, k, true)?
        } else {
            q.matmul(&repeat_heads(k, self.n_head)?.t()?)?
        };
        let scores = (scores / (self.head_dim as f64).sqrt())?;
        let scores = if len > 1 {
            let mask = build_causal_mask(len, position, device)?;
            let mask = mask.broadcast_as(scores.shape())?;
            mask.where_cond(&self.neg_inf.broadcast_as(scores.shape())?, &scores)?
        } else {
            scores
        };
        let weights = candle_nn::ops::softmax_last_dim(&scores)?;
        let y = if cpu_f32 {
            matmul_shared_heads(&weights, v, false)?
        } else {
            weights.matmul(&repeat_heads(v, self.n_head)?)?
        };
        y.transpose(1, 2)?.reshape((len, self.hidden))
    }

    /// The layers over the packed tokens `flat` (sequence i at `spans[i]` = (offset, len)),
    /// with `attend(layer, q, k, v)` (each `(tokens, heads * head_dim)`, before rotary) mixing
    /// positions; returns the logits after each span's last token.
    fn run_layers(
        &self,
        flat: &[u32],
        spans: &[(usize, usize)],
        mut attend: impl FnMut(usize, &Tensor, &Tensor, &Tensor) -> candle_core::Result<Tensor>,
    ) -> candle_core::Result<Tensor> {
        let device = self.cos.device();
        let ids = Tensor::new(flat, device)?;
        let mut x = self.embeddings.forward(&ids)?;
        for (l, layer) in self.layers.iter().enumerate() {
            let residual = &x;
            let h = layer.attention_norm.forward(&x)?;
            let [mut q, mut k, mut v] =
                Linear::forward_each([&layer.wq, &layer.wk, &layer.wv], &h)?;
            if let Some([bq, bk, bv]) = &layer.biases {
                q = q.broadcast_add(bq)?;
                k = k.broadcast_add(bk)?;
                v = v.broadcast_add(bv)?;
            }
            let y = layer.wo.forward(&attend(l, &q, &k, &v)?)?;
            let x1 = (y + residual)?;
            let h = layer.ffn_norm.forward(&x1)?;
            let [gate, up] = Linear::forward_each([&layer.gate, &layer.up], &h)?;
            let gated = (candle_nn::ops::silu(&gate)? * up)?;
            x = (layer.down.forward(&gated)? + &x1)?;
        }
        let last: Vec<u32> = spans
            .iter()
            .map(|&(offset, len)| (offset + len - 1) as u32)
            .collect();
        let last = x.index_select(&Tensor::new(last.as_slice(), device)?, 0)?;
        let logits = self.output.forward(&self.norm.forward(&last)?)?;
        logits.to_dtype(DType::F32)
    }

    /// Bytes of keys and values one token takes in a [`KvPool`].
    pub(crate) fn kv_bytes_per_token(&self) -> usize {
        self.layers.len() * 2 * self.n_kv_head * self.head_dim * std::mem::size_of::<f32>()
    }

    /// Attention of `q` `(b, n_kv_head, rows, head_dim)` over `k`, `v`
    /// `(b, n_kv_head, len, head_dim)`, `mask` (1 = hidden) broadcast to `(b, 1, rows, len)`.
    fn masked_attention(
        &self,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        mask: &Tensor,
    ) -> candle_core::Result<Tensor> {
        let scores = (q.matmul(&k.t()?)? / (self.head_dim as f64).sqrt())?;
        let shape = scores.shape();
        let scores = mask
            .broadcast_as(shape)?
            .where_cond(&self.neg_inf.broadcast_as(shape)?, &scores)?;
        candle_nn::ops::softmax_last_dim(&scores)?.matmul(v)
    }

    /// Key/value storage for `slots` sequences of at most `capacity` tokens each.
    pub(crate) fn pool(&self, slots: usize, capacity: usize) -> candle_core::Result<KvPool> {
        let capacity = capacity.min(self.context_length);
        let rows = slots * self.n_kv_head * capacity;
        let device = self.cos.device();
        let layers = (0..self.layers.len())
            .map(|_| {
                Ok((
                    Tensor::zeros((rows, self.head_dim), DType::F32, device)?,
                    Tensor::zeros((rows, self.head_dim), DType::F32, device)?,
                ))
            })
            .collect::<candle_core::Result<_>>()?;
        Ok(KvPool {
            layers,
            slots,
            capacity,
            n_kv_head: self.n_kv_head,
            head_dim: self.head_dim,
        })
    }

    /// [`forward`](Self::forward) for sequences held in `pool`: `steps[i]` = (new tokens,
    /// slot, tokens already in the slot). Decoding steps (one token) attend together in one
    /// batched product over every slot, prompts in another over their slots, so a pass costs a
    /// fixed number of operations however many sequences it runs.
    pub(crate) fn forward_pooled(
        &self,
        pool: &KvPool,
        steps: &[(&[u32], usize, usize)],
    ) -> candle_core::Result<Tensor> {
        let device = self.cos.device().clone();
        let (n_kv, d, cap, slots) = (self.n_kv_head, self.head_dim, pool.capacity, pool.slots);
        let group = self.n_head / n_kv;
        let mut spans = Vec::with_capacity(steps.len());
        let mut flat = Vec::new();
        let mut positions: Vec<u32> = Vec::new();
        let mut rows: Vec<u32> = Vec::new();
        let mut seen = vec![false; slots];
        for &(tokens, slot, start) in steps {
            self.check_step(tokens, start, cap)?;
            if slot >= slots || std::mem::replace(&mut seen[slot], true) {
                candle_core::bail!("slot {slot} is out of range or used twice in a pass");
            }
            spans.push((flat.len(), tokens.len()));
            flat.extend_from_slice(tokens);
            for p in start..start + tokens.len() {
                positions.push(p as u32);
                rows.extend((0..n_kv).map(|h| ((slot * n_kv + h) * cap + p) as u32));
            }
        }
        let tokens = flat.len();
        let positions = Tensor::new(positions.as_slice(), &device)?;
        let (cos, sin) = (
            self.cos.index_select(&positions, 0)?,
            self.sin.index_select(&positions, 0)?,
        );
        let destination = Tensor::new(rows.as_slice(), &device)?
            .reshape((tokens * n_kv, 1))?
            .broadcast_as((tokens * n_kv, d))?
            .contiguous()?;
        // Decoding: every slot attends, each through its own mask; slots with nothing to
        // decode see position 0 only and their rows are dropped.
        let decoding: Vec<(usize, usize, usize)> = steps
            .iter()
            .zip(&spans)
            .filter(|((tokens, _, _), _)| tokens.len() == 1)
            .map(|(&(_, slot, start), &(offset, _))| (slot, start, offset))
            .collect();
        let reach = decoding
            .iter()
            .map(|&(_, start, _)| start + 1)
            .max()
            .unwrap_or(0);
        let batched = if decoding.is_empty() {
            None
        } else {
            let mut query_rows = vec![0u32; slots];
            let mut mask = vec![1u8; slots * reach];
            for s in 0..slots {
                mask[s * reach] = 0;
            }
            for &(slot, start, offset) in &decoding {
                query_rows[slot] = offset as u32;
                mask[slot * reach..slot * reach + start + 1].fill(0);
            }
            let decoded: Vec<u32> = decoding.iter().map(|&(slot, _, _)| slot as u32).collect();
            Some((
                Tensor::new(query_rows.as_slice(), &device)?,
                Tensor::from_vec(mask, (slots, 1, 1, reach), &device)?,
                Tensor::new(decoded.as_slice(), &device)?,
            ))
        };
        // Prompts: one masked product over the prompting slots, their queries padded to the
        // longest prompt of the pass (padding rows see position 0 only and are dropped).
        let prompting: Vec<(usize, usize, usize, usize)> = steps
            .iter()
            .zip(&spans)
            .filter(|((tokens, _, _), _)| tokens.len() > 1)
            .map(|(&(_, slot, start), &(offset, len))| (slot, start, offset, len))
            .collect();
        let prompts = if prompting.is_empty() {
            None
        } else {
            let width = prompting.iter().map(|p| p.3).max().unwrap_or(1);
            let reach = prompting.iter().map(|p| p.1 + p.3).max().unwrap_or(1);
            let mut query_rows = Vec::with_capacity(prompting.len() * width);
            // rows of a slot's queries: query head j of a key/value head, token i at j·width + i
            let mut mask = vec![1u8; prompting.len() * group * width * reach];
            let mut kept = Vec::new();
            for (n, &(_, start, offset, len)) in prompting.iter().enumerate() {
                for i in 0..width {
                    let visible = if i < len { start + i + 1 } else { 1 };
                    for j in 0..group {
                        let at = ((n * group + j) * width + i) * reach;
                        mask[at..at + visible].fill(0);
                    }
                    if i < len {
                        query_rows.push((offset + i) as u32);
                        kept.push((n * width + i) as u32);
                    } else {
                        query_rows.push(offset as u32);
                    }
                }
            }
            let slot_ids: Vec<u32> = prompting.iter().map(|p| p.0 as u32).collect();
            Some((
                prompting.len(),
                width,
                reach,
                Tensor::new(query_rows.as_slice(), &device)?,
                Tensor::from_vec(mask, (prompting.len(), 1, group * width, reach), &device)?,
                Tensor::new(slot_ids.as_slice(), &device)?,
                Tensor::new(kept.as_slice(), &device)?,
            ))
        };
        // the attention outputs are gathered decoded-first, then prompt by prompt; this puts
        // them back in pack order
        let mut order = vec![0u32; tokens];
        let mut next = 0u32;
        for &(_, _, offset) in &decoding {
            order[offset] = next;
            next += 1;
        }
        for (&(t, _, _), &(offset, len)) in steps.iter().zip(&spans) {
            if t.len() > 1 {
                for o in &mut order[offset..offset + len] {
                    *o = next;
                    next += 1;
                }
            }
        }
        let order = Tensor::new(order.as_slice(), &device)?;
        let rope_all = |t: &Tensor, n: usize| {
            let t = t
                .reshape((1, tokens, n, d))?
                .transpose(1, 2)?
                .contiguous()?;
            self.rotate(&t, &cos, &sin)?
                .transpose(1, 2)?
                .reshape((tokens, n * d))
        };
        self.run_layers(&flat, &spans, |l, q, k, v| {
            let (keys, values) = &pool.layers[l];
            let q = rope_all(q, self.n_head)?;
            let k = rope_all(k, n_kv)?;
            keys.scatter_set(&destination, &k.reshape((tokens * n_kv, d))?, 0)?;
            values.scatter_set(
                &destination,
                &v.reshape((tokens * n_kv, d))?.contiguous()?,
                0,
            )?;
            let keys = keys.reshape((slots, n_kv, cap, d))?;
            let values = values.reshape((slots, n_kv, cap, d))?;
            let mut pieces = Vec::new();
            if let Some((query_rows, mask, decoded)) = &batched {
                let q = q
                    .index_select(query_rows, 0)?
                    .reshape((slots, n_kv, group, d))?;
                let y = self.masked_attention(
                    &q,
                    &keys.narrow(2, 0, reach)?,
                    &values.narrow(2, 0, reach)?,
                    mask,
                )?;
                pieces.push(y.reshape((slots, self.hidden))?.index_select(decoded, 0)?);
            }
            if let Some((count, width, reach, query_rows, mask, slot_ids, kept)) = &prompts {
                let (count, width, reach) = (*count, *width, *reach);
                let q = q
                    .index_select(query_rows, 0)?
                    .reshape((count, width, n_kv, group, d))?
                    .permute((0, 2, 3, 1, 4))?
                    .reshape((count, n_kv, group * width, d))?;
                let held = |t: &Tensor| t.index_select(slot_ids, 0)?.narrow(2, 0, reach);
                let y = self
                    .masked_attention(&q, &held(&keys)?, &held(&values)?, mask)?
                    .reshape((count, n_kv, group, width, d))?
                    .permute((0, 3, 1, 2, 4))?
                    .reshape((count * width, self.hidden))?;
                pieces.push(y.index_select(kept, 0)?);
            }
            Tensor::cat(&pieces, 0)?.index_select(&order, 0)
        })
    }
}

/// Keys and values of up to `slots` sequences, allocated once: per layer
/// `(slots * n_kv_head * capacity, head_dim)` rows, sequence `s`'s head `h` at position `p` in
/// row `(s * n_kv_head + h) * capacity + p`. New keys are written in place, so no cache is
/// copied as sequences grow, and all decoding sequences can attend in one batched product.
pub(crate) struct KvPool {
    layers: Vec<(Tensor, Tensor)>,
    slots: usize,
    capacity: usize,
    n_kv_head: usize,
    head_dim: usize,
}

impl KvPool {
    /// Tokens a slot holds at most.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Puts `cache` (a shared prompt prefix) at the start of `slot`.
    pub(crate) fn load(&self, slot: usize, cache: &KvCache) -> candle_core::Result<()> {
        if cache.len > self.capacity || slot >= self.slots {
            candle_core::bail!(
                "a cache of {} tokens does not fit slot {slot} of {} x {}",
                cache.len,
                self.slots,
                self.capacity
            );
        }
        let (n_kv, d, len) = (self.n_kv_head, self.head_dim, cache.len);
        let rows: Vec<u32> = (0..n_kv)
            .flat_map(|h| (0..len).map(move |p| ((slot * n_kv + h) * self.capacity + p) as u32))
            .collect();
        let device = self.layers[0].0.device();
        let destination = Tensor::new(rows.as_slice(), device)?
            .reshape((n_kv * len, 1))?
            .broadcast_as((n_kv * len, d))?
            .contiguous()?;
        for (l, (keys, values)) in self.layers.iter().enumerate() {
            let (k, v) = cache.filled(l)?;
            keys.scatter_set(&destination, &k, 0)?;
            values.scatter_set(&destination, &v, 0)?;
        }
        Ok(())
    }
}

/// Keys or values `(1, n_kv_head, len, head_dim)` (a view of a cache) with each head repeated
/// for the `n_head` query heads that share them: candle's `repeat_kv` in one copy, from the
/// cache's rows straight into the contiguous operand of attention. Off the CPU only: there
/// [`matmul_shared_heads`] reads the cache in place.
fn repeat_heads(x: &Tensor, n_head: usize) -> candle_core::Result<Tensor> {
    let (_, n_kv, len, d) = x.dims4()?;
    x.unsqueeze(2)?
        .broadcast_as((1, n_kv, n_head / n_kv, len, d))?
        .contiguous()?
        .reshape((1, n_head, len, d))
}

/// `lhs` `(1, n_head, m, k)` times, for each query head, the matrix of the key/value head
/// it shares in `rhs` `(1, n_kv_head, rows, cols)` (a view of a cache; transposed when
/// `transpose_rhs`), as `(1, n_head, m, n)`: what `lhs.matmul(&repeat_heads(rhs, n_head))` gives,
/// bit for bit, without copying the cache. It makes gemm the calls candle's CPU matmul
/// makes on the repeated copy (one per head, the same sizes, strides and threading): a
/// stride-0 broadcast instead would make candle fold the heads into one product of more
/// rows, whose kernel sums in another order.
fn matmul_shared_heads(
    lhs: &Tensor,
    rhs: &Tensor,
    transpose_rhs: bool,
) -> candle_core::Result<Tensor> {
    let (_, n_head, m, k) = lhs.dims4()?;
    let (_, n_kv, rows, cols) = rhs.dims4()?;
    let (rhs_k, n) = if transpose_rhs {
        (cols, rows)
    } else {
        (rows, cols)
    };
    if n_kv == 0 || n_head % n_kv != 0 || rhs_k != k {
        candle_core::bail!(
            "attention operands {:?} and {:?} do not match",
            lhs.dims(),
            rhs.dims()
        );
    }
    let (lhs_storage, lhs_layout) = lhs.storage_and_layout();
    let (rhs_storage, rhs_layout) = rhs.storage_and_layout();
    let (Storage::Cpu(lhs_cpu), Storage::Cpu(rhs_cpu)) = (&*lhs_storage, &*rhs_storage) else {
        candle_core::bail!("matmul_shared_heads runs on the CPU only");
    };
    let (lhs_data, rhs_data) = (lhs_cpu.as_slice::<f32>()?, rhs_cpu.as_slice::<f32>()?);
    let [_, lhs_head, lhs_rs, lhs_cs] = *lhs_layout.stride() else {
        candle_core::bail!("a 4-d attention operand");
    };
    let [_, rhs_head, rhs_row, rhs_col] = *rhs_layout.stride() else {
        candle_core::bail!("a 4-d attention operand");
    };
    let (rhs_rs, rhs_cs) = if transpose_rhs {
        (rhs_col, rhs_row)
    } else {
        (rhs_row, rhs_col)
    };
    // the last element each operand's reads reach must lie inside its storage
    let reach = |start: usize, extents: [(usize, usize); 3]| {
        start
            + extents
                .iter()
                .map(|&(n, s)| n.saturating_sub(1) * s)
                .sum::<usize>()
    };
    let lhs_end = reach(
        lhs_layout.start_offset(),
        [(n_head, lhs_head), (m, lhs_rs), (k, lhs_cs)],
    );
    let rhs_end = reach(
        rhs_layout.start_offset(),
        [(n_kv, rhs_head), (k, rhs_rs), (n, rhs_cs)],
    );
    if m * n * k > 0 && (lhs_end >= lhs_data.len() || rhs_end >= rhs_data.len()) {
        candle_core::bail!("an attention operand's view reaches past its storage");
    }
    let threads = candle_core::utils::get_num_threads();
    let parallelism = if threads > 1 {
        gemm::Parallelism::Rayon(threads)
    } else {
        gemm::Parallelism::None
    };
    let group = n_head / n_kv;
    let mut dst = vec![0f32; n_head * m * n];
    if m * n * k > 0 {
        for (head, out) in dst.chunks_exact_mut(m * n).enumerate() {
            let lhs_at = lhs_layout.start_offset() + head * lhs_head;
            let rhs_at = rhs_layout.start_offset() + (head / group) * rhs_head;
            // SAFETY: every index gemm reads is at most `lhs_end` / `rhs_end` (checked
            // above to be inside the slices) and it writes the `m * n` elements of `out`
            // with row stride n.
            unsafe {
                gemm::gemm(
                    m,
                    n,
                    k,
                    out.as_mut_ptr(),
                    1,
                    n as isize,
                    false,
                    lhs_data.as_ptr().add(lhs_at),
                    lhs_cs as isize,
                    lhs_rs as isize,
                    rhs_data.as_ptr().add(rhs_at),
                    rhs_cs as isize,
                    rhs_rs as isize,
                    0f32,
                    1f32,
                    false,
                    false,
                    false,
                    parallelism,
                );
            }
        }
    }
    Tensor::from_vec(dst, (1, n_head, m, n), lhs.device())
}

#[cfg(test)]
mod tests;
