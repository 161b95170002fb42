//! Fused CPU kernels (f32) for the encoder: self-attention for short inputs, and the epilogues
//! of the dense layers (bias + GELU; bias + residual + layer norm).
//!
//! Why the attention: on sentence-length inputs (STS-B averages about 15 tokens) the tensor path spends more
//! time around its matrix products than in them. Per layer it makes three head-split copies,
//! 2 × batch × heads matrix products of 15 × 32 × 15 (each a gemm call with its packing and
//! dispatch), three elementwise passes (scale, mask, softmax) that each wake the thread pool,
//! and a copy back to token-major order. Here one pass per (text, head) reads queries, keys and
//! values straight from the QKV projection and writes the context in token-major order: the same
//! arithmetic in the same order, without the traffic. Long inputs keep the tensor path, where
//! the t² products are large enough for gemm to win.
//!
//! Why the epilogues: after each matrix product the tensor path makes a pass to add the bias,
//! another for the residual, another for the layer norm (or the GELU), each over the whole
//! [batch × tokens, width] activation and each a thread-pool round trip. One pass per row does
//! all of it while the row is in cache.

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
    let data = cpu_f32(&storage, layout)?;
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

/// `gelu(product + bias)` row by row: `product` [rows, width], `bias` [width]. `exact` selects
/// erf GELU (BERT's "gelu") over the tanh approximation ("gelu_new").
pub(crate) fn bias_gelu(
    product: &Tensor,
    bias: &[f32],
    exact: bool,
) -> candle_core::Result<Tensor> {
    let (rows, width) = product.dims2()?;
    if bias.len() != width {
        candle_core::bail!("bias_gelu: bias {} for width {width}", bias.len());
    }
    let product = product.contiguous()?;
    let (storage, layout) = product.storage_and_layout();
    let data = cpu_f32(&storage, layout)?;
    let mut out = vec![0f32; rows * width];
    out.par_chunks_mut(width * ROWS_PER_TASK)
        .zip(data.par_chunks(width * ROWS_PER_TASK))
        .for_each(|(out, data)| {
            for (out, data) in out.chunks_exact_mut(width).zip(data.chunks_exact(width)) {
                // the variant is chosen outside the loops so that each loop vectorises
                if exact {
                    for ((o, &x), &b) in out.iter_mut().zip(data).zip(bias) {
                        let x = x + b;
                        *o = 0.5 * x * (1.0 + erf_approx(x * std::f32::consts::FRAC_1_SQRT_2));
                    }
                } else {
                    for ((o, &x), &b) in out.iter_mut().zip(data).zip(bias) {
                        let x = x + b;
                        let inner =
                            (2.0 / std::f32::consts::PI).sqrt() * (x + 0.044_715 * x * x * x);
                        *o = 0.5 * x * (1.0 + inner.tanh());
                    }
                }
            }
        });
    drop(storage);
    Tensor::from_vec(out, (rows, width), &Device::Cpu)
}

/// The parameters of a layer norm on the host.
pub(crate) struct HostNorm {
    pub gamma: Vec<f32>,
    pub beta: Vec<f32>,
    pub eps: f32,
}

/// `layer_norm(product + bias + residual)` row by row, all [rows, width] but `bias` [width].
pub(crate) fn bias_residual_norm(
    product: &Tensor,
    bias: &[f32],
    residual: &Tensor,
    norm: &HostNorm,
) -> candle_core::Result<Tensor> {
    let (rows, width) = product.dims2()?;
    if residual.dims() != [rows, width] || bias.len() != width || norm.gamma.len() != width {
        candle_core::bail!(
            "bias_residual_norm: product {:?}, residual {:?}, bias {}",
            product.dims(),
            residual.dims(),
            bias.len()
        );
    }
    let (product, residual) = (product.contiguous()?, residual.contiguous()?);
    let (p_storage, p_layout) = product.storage_and_layout();
    let (r_storage, r_layout) = residual.storage_and_layout();
    let (p, r) = (
        cpu_f32(&p_storage, p_layout)?,
        cpu_f32(&r_storage, r_layout)?,
    );
    let mut out = vec![0f32; rows * width];
    out.par_chunks_mut(width * ROWS_PER_TASK)
        .zip(p.par_chunks(width * ROWS_PER_TASK))
        .zip(r.par_chunks(width * ROWS_PER_TASK))
        .for_each(|((out, p), r)| {
            for ((out, p), r) in out
                .chunks_exact_mut(width)
                .zip(p.chunks_exact(width))
                .zip(r.chunks_exact(width))
            {
                for (((o, &p), &b), &r) in out.iter_mut().zip(p).zip(bias).zip(r) {
                    *o = p + b + r;
                }
                // two passes (mean, then squared deviations): no cancellation on large means
                let mean = out.iter().sum::<f32>() / width as f32;
                let var = out.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / width as f32;
                let inv_std = (var + norm.eps).sqrt().recip();
                for ((o, g), b) in out.iter_mut().zip(&norm.gamma).zip(&norm.beta) {
                    *o = (*o - mean) * inv_std * g + b;
                }
            }
        });
    drop((p_storage, r_storage));
    Tensor::from_vec(out, (rows, width), &Device::Cpu)
}

/// Rows per parallel task of the epilogues: enough work to pay for the task.
const ROWS_PER_TASK: usize = 16;

fn cpu_f32<'a>(
    storage: &'a Storage,
    layout: &candle_core::Layout,
) -> candle_core::Result<&'a [f32]> {
    match (storage, layout.contiguous_offsets()) {
        (Storage::Cpu(cpu), Some((start, end))) => Ok(&cpu.as_slice::<f32>()?[start..end]),
        _ => candle_core::bail!("fused kernels need a contiguous f32 CPU tensor"),
    }
}

/// erf(x) in f32 as Eigen's `generic_fast_erf_float`: odd/even rational polynomial on
/// x clamped to [-4, 4] (beyond which erf is ±1 in f32), |error| < 1e-6. Only multiplications
/// and additions, so loops over it vectorise (plain `a * b + c`: `mul_add` is a libm call
/// without a target FMA feature). candle's own exact GELU calls scalar `libm::erff`.
#[inline]
pub(crate) fn erf_approx(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = x2 * -2.726_142_3e-10 + 2.770_681_4e-8;
    p = x2 * p + -2.101_024e-6;
    p = x2 * p + -5.692_506_4e-5;
    p = x2 * p + -7.349_906_3e-4;
    p = x2 * p + -2.954_6e-3;
    p = x2 * p + -1.609_603_3e-2;
    p *= x;
    let mut q = x2 * -1.456_607_2e-5 + -2.133_740_6e-4;
    q = x2 * q + -1.682_827e-3;
    q = x2 * q + -7.373_329e-3;
    q = x2 * q + -1.426_473_9e-2;
    p / q
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
    use crate::encoder::tensor_attention;

    fn max_difference(a: &Tensor, b: &Tensor) -> f32 {
        let a = a.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        let b = b.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        assert_eq!(a.len(), b.len());
        a.iter()
            .zip(&b)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max)
    }

    #[test]
    fn gelu_epilogue_matches_candles_gelus() {
        let grid: Vec<f32> = (-60_000..=60_000).map(|i| i as f32 * 1e-4).collect();
        // 120,001 = 17,143 rows × 7 columns
        let t = Tensor::from_vec(grid, (17_143, 7), &Device::Cpu).unwrap();
        let zero = [0f32; 7];
        let exact = max_difference(&bias_gelu(&t, &zero, true).unwrap(), &t.gelu_erf().unwrap());
        assert!(exact < 2e-6, "erf GELU: max |error| {exact}");
        let tanh = max_difference(&bias_gelu(&t, &zero, false).unwrap(), &t.gelu().unwrap());
        assert!(tanh < 2e-6, "tanh GELU: max |error| {tanh}");
        let bias: Vec<f32> = (0..7).map(|i| i as f32 - 3.0).collect();
        let shifted = t
            .broadcast_add(&Tensor::new(bias.as_slice(), &Device::Cpu).unwrap())
            .unwrap();
        let with_bias = max_difference(
            &bias_gelu(&t, &bias, true).unwrap(),
            &shifted.gelu_erf().unwrap(),
        );
        assert!(
            with_bias < 2e-6,
            "erf GELU with bias: max |error| {with_bias}"
        );
    }

    #[test]
    fn norm_epilogue_matches_candles_layer_norm() {
        let mut rng = ChaCha20Rng::seed_from_u64(11);
        let (rows, width) = (37, 48);
        let mut random = |scale: f32, offset: f32, n: usize| -> Vec<f32> {
            (0..n)
                .map(|_| offset + scale * rng.gen_range(-1.0f32..1.0))
                .collect()
        };
        let product =
            Tensor::from_vec(random(3.0, 5.0, rows * width), (rows, width), &Device::Cpu).unwrap();
        let residual =
            Tensor::from_vec(random(1.0, 0.0, rows * width), (rows, width), &Device::Cpu).unwrap();
        let bias = random(0.5, 0.0, width);
        let norm = HostNorm {
            gamma: random(0.5, 1.0, width),
            beta: random(0.2, 0.0, width),
            eps: 1e-12,
        };
        let ours = bias_residual_norm(&product, &bias, &residual, &norm).unwrap();
        let summed = product
            .broadcast_add(&Tensor::new(bias.as_slice(), &Device::Cpu).unwrap())
            .unwrap()
            .add(&residual)
            .unwrap();
        let theirs = candle_nn::LayerNorm::new(
            Tensor::new(norm.gamma.as_slice(), &Device::Cpu).unwrap(),
            Tensor::new(norm.beta.as_slice(), &Device::Cpu).unwrap(),
            1e-12,
        );
        let worst = max_difference(
            &ours,
            &candle_core::Module::forward(&theirs, &summed).unwrap(),
        );
        assert!(worst < 1e-5, "max |difference| {worst}");
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
            let ours = fused_attention(&qkv, shape, &mask, bias.as_deref()).unwrap();
            let mask_tensor =
                Tensor::from_slice(&mask, (batch, 1, 1, tokens), &Device::Cpu).unwrap();
            let theirs = tensor_attention(&qkv, shape, &mask_tensor, bias_tensor.as_ref()).unwrap();
            let worst = max_difference(&ours, &theirs);
            assert!(worst < 1e-5, "{shape:?}: max |difference| {worst}");
        }
    }
}
