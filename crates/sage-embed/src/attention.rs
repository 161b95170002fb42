//! Fused self-attention for short inputs on CPU in f32.
//!
//! Why: on sentence-length inputs (STS-B averages about 15 tokens) the tensor path spends more
//! time around its matrix products than in them. Per layer it makes three head-split copies,
//! 2 × batch × heads matrix products of 15 × 32 × 15 (each a gemm call with its packing and
//! dispatch), three elementwise passes (scale, mask, softmax) that each wake the thread pool,
//! and a copy back to token-major order. Here one pass per (text, head) reads queries, keys and
//! values straight from the QKV projection and writes the context in token-major order: the same
//! arithmetic in the same order, without the traffic. Long inputs keep the tensor path, where
//! the t² products are large enough for gemm to win.

use candle_core::{DType, Device, Storage, Tensor};
use rayon::prelude::*;

/// Longest padded batch the fused kernel takes; beyond it the tensor path is used.
pub(crate) const FUSED_MAX_TOKENS: usize = 64;

/// Shapes of one attention call.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AttentionShape {
    pub batch: usize,
    pub tokens: usize,
    pub heads: usize,
    pub head_dim: usize,
}

/// Context vectors [batch × tokens, hidden] from `qkv` [batch × tokens, 3 × hidden] (queries,
/// keys, values side by side, heads contiguous within each), `mask` the additive padding mask
/// [batch × tokens] and `bias` an optional additive score bias [heads, tokens, tokens] shared
/// by every text (MPNet's relative positions). Scores are `q·k / √d + bias + mask`, softmaxed
/// over keys, as the tensor path computes them.
pub(crate) fn fused_attention(
    qkv: &Tensor,
    shape: AttentionShape,
    mask: &[f32],
    bias: Option<&[f32]>,
) -> candle_core::Result<Tensor> {
    let AttentionShape {
        batch,
        tokens,
        heads,
        head_dim,
    } = shape;
    let hidden = heads * head_dim;
    let width = 3 * hidden;
    if qkv.dims() != [batch * tokens, width] || mask.len() != batch * tokens {
        candle_core::bail!(
            "fused attention: qkv {:?}, mask {} for {shape:?}",
            qkv.dims(),
            mask.len()
        );
    }
    if bias.is_some_and(|b| b.len() != heads * tokens * tokens) {
        candle_core::bail!("fused attention: bias is not [heads, tokens, tokens]");
    }
    let qkv = qkv.contiguous()?;
    let (storage, layout) = qkv.storage_and_layout();
    let data: &[f32] = match (&*storage, layout.contiguous_offsets()) {
        (Storage::Cpu(cpu), Some((start, end))) => &cpu.as_slice::<f32>()?[start..end],
        _ => candle_core::bail!("fused attention needs a contiguous f32 CPU tensor"),
    };
    let scale = (head_dim as f32).sqrt();
    let mut out = vec![0f32; batch * tokens * hidden];
    out.par_chunks_mut(tokens * hidden)
        .enumerate()
        .for_each(|(text, context)| {
            let rows = &data[text * tokens * width..(text + 1) * tokens * width];
            let mask = &mask[text * tokens..(text + 1) * tokens];
            let mut scores = vec![0f32; tokens];
            for head in 0..heads {
                let q_at = head * head_dim;
                let k_at = hidden + head * head_dim;
                let v_at = 2 * hidden + head * head_dim;
                for i in 0..tokens {
                    let q = &rows[i * width + q_at..][..head_dim];
                    let mut max = f32::NEG_INFINITY;
                    for (j, score) in scores.iter_mut().enumerate() {
                        let k = &rows[j * width + k_at..][..head_dim];
                        let mut s = dot(q, k) / scale;
                        if let Some(bias) = bias {
                            s += bias[(head * tokens + i) * tokens + j];
                        }
                        s += mask[j];
                        *score = s;
                        max = max.max(s);
                    }
                    let mut sum = 0f32;
                    for score in scores.iter_mut() {
                        *score = (*score - max).exp();
                        sum += *score;
                    }
                    let row = &mut context[i * hidden + head * head_dim..][..head_dim];
                    for (j, score) in scores.iter().enumerate() {
                        let p = score / sum;
                        let v = &rows[j * width + v_at..][..head_dim];
                        for (o, v) in row.iter_mut().zip(v) {
                            *o += p * v;
                        }
                    }
                }
            }
        });
    drop(storage);
    Tensor::from_vec(out, (batch * tokens, hidden), &Device::Cpu)
}

/// Whether the fused kernel applies to a batch of `tokens` on `device` in `dtype`.
pub(crate) fn fused_applies(device: &Device, dtype: DType, tokens: usize) -> bool {
    device.is_cpu() && dtype == DType::F32 && tokens <= FUSED_MAX_TOKENS
}

/// Dot product with eight independent accumulators, so that it vectorises (a single running
/// sum is a dependency chain the compiler may not reorder).
#[inline]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let chunks = a.len() / 8 * 8;
    for (x, y) in a[..chunks].chunks_exact(8).zip(b[..chunks].chunks_exact(8)) {
        for l in 0..8 {
            lanes[l] += x[l] * y[l];
        }
    }
    let mut sum = lanes.iter().sum::<f32>();
    for (x, y) in a[chunks..].iter().zip(&b[chunks..]) {
        sum += x * y;
    }
    sum
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    use super::*;

    /// The tensor path of `Encoder::layer_forward`, written out for comparison.
    fn reference(
        qkv: &Tensor,
        shape: AttentionShape,
        mask: &[f32],
        bias: Option<&Tensor>,
    ) -> Tensor {
        let AttentionShape {
            batch,
            tokens,
            heads,
            head_dim,
        } = shape;
        let hidden = heads * head_dim;
        let split = |t: Tensor| {
            t.reshape((batch, tokens, heads, head_dim))
                .unwrap()
                .transpose(1, 2)
                .unwrap()
                .contiguous()
                .unwrap()
        };
        let q = split(qkv.narrow(1, 0, hidden).unwrap());
        let k = split(qkv.narrow(1, hidden, hidden).unwrap());
        let v = split(qkv.narrow(1, 2 * hidden, hidden).unwrap());
        let mut scores = (q.matmul(&k.t().unwrap()).unwrap() / (head_dim as f64).sqrt()).unwrap();
        if let Some(bias) = bias {
            scores = scores.broadcast_add(bias).unwrap();
        }
        let mask = Tensor::from_slice(mask, (batch, 1, 1, tokens), &Device::Cpu).unwrap();
        let probs =
            candle_nn::ops::softmax_last_dim(&scores.broadcast_add(&mask).unwrap()).unwrap();
        probs
            .matmul(&v)
            .unwrap()
            .transpose(1, 2)
            .unwrap()
            .reshape((batch * tokens, hidden))
            .unwrap()
    }

    #[test]
    fn fused_attention_equals_the_tensor_path() {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        for (batch, tokens, heads, head_dim, with_bias) in [
            (3, 9, 4, 32, false),
            (2, 13, 2, 20, true),
            (1, 1, 3, 8, false),
        ] {
            let shape = AttentionShape {
                batch,
                tokens,
                heads,
                head_dim,
            };
            let values: Vec<f32> = (0..batch * tokens * 3 * heads * head_dim)
                .map(|_| rng.gen_range(-2.0..2.0))
                .collect();
            let qkv =
                Tensor::from_vec(values, (batch * tokens, 3 * heads * head_dim), &Device::Cpu)
                    .unwrap();
            // text b has its last b positions padded
            let mask: Vec<f32> = (0..batch)
                .flat_map(|b| {
                    (0..tokens).map(move |t| {
                        if t + b >= tokens && t > 0 {
                            f32::MIN
                        } else {
                            0.0
                        }
                    })
                })
                .collect();
            let bias: Option<Vec<f32>> = with_bias.then(|| {
                (0..heads * tokens * tokens)
                    .map(|_| rng.gen_range(-1.0..1.0))
                    .collect()
            });
            let bias_tensor = bias
                .as_ref()
                .map(|b| Tensor::from_slice(b, (1, heads, tokens, tokens), &Device::Cpu).unwrap());
            let ours = fused_attention(&qkv, shape, &mask, bias.as_deref())
                .unwrap()
                .flatten_all()
                .unwrap()
                .to_vec1::<f32>()
                .unwrap();
            let theirs = reference(&qkv, shape, &mask, bias_tensor.as_ref())
                .flatten_all()
                .unwrap()
                .to_vec1::<f32>()
                .unwrap();
            let worst = ours
                .iter()
                .zip(&theirs)
                .map(|(a, b)| (a - b).abs())
                .fold(0f32, f32::max);
            assert!(worst < 1e-5, "{shape:?}: max |difference| {worst}");
        }
    }
}
