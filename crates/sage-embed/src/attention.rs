//! The attention arithmetic the rotary families share (the decoders, ModernBERT, NomicBERT):
//! rotary tables, the padding mask, the fused-projection split and scaled dot-product attention
//! with its softmax in f32. Kept apart from any one family so that none of them reaches into
//! another's module for it.

use candle_core::{DType, Device, Tensor};

/// cos and sin tables [tokens, head_dim / 2] of rotary base `theta` (rotate-half layout, as
/// transformers' LLaMA-family and ModernBERT models use): sage-llm's one table builder, its
/// inverse frequencies in f64 as these encoders' golden tests were taken with.
pub(crate) fn rotary_tables(
    head_dim: usize,
    tokens: usize,
    theta: f64,
    device: &Device,
    dtype: DType,
) -> candle_core::Result<(Tensor, Tensor)> {
    sage_llm::rotary::rotary_tables(
        head_dim,
        tokens,
        theta,
        sage_llm::rotary::InverseFrequencies::F64,
        device,
        dtype,
    )
}

/// An additive attention mask [batch, 1, tokens, tokens] for right-padded texts of `lengths`:
/// 0 where `seen(query, key)` and the key is a real token, a large finite negative elsewhere.
pub(crate) fn additive_mask(
    lengths: &[usize],
    tokens: usize,
    device: &Device,
    dtype: DType,
    seen: impl Fn(usize, usize) -> bool,
) -> candle_core::Result<Tensor> {
    let hidden = masked_score(dtype);
    let mut values = Vec::with_capacity(lengths.len() * tokens * tokens);
    for &length in lengths {
        for q in 0..tokens {
            for k in 0..tokens {
                values.push(if k < length && seen(q, k) {
                    0.0
                } else {
                    hidden
                });
            }
        }
    }
    Tensor::from_vec(values, (lengths.len(), 1, tokens, tokens), device)?.to_dtype(dtype)
}

/// A large finite negative for masked attention scores, so padded rows stay NaN-free in every
/// dtype.
pub(crate) fn masked_score(dtype: DType) -> f32 {
    match dtype {
        DType::F16 => -65_504f32,
        _ => -1e30,
    }
}

/// Queries, keys and values [batch, heads, tokens, head_dim] from a fused projection's output
/// [batch, tokens, 3 × heads × head_dim] (ModernBERT's and NomicBERT's `Wqkv`).
pub(crate) fn split_fused_qkv(
    fused: &Tensor,
    heads: usize,
    head_dim: usize,
) -> candle_core::Result<(Tensor, Tensor, Tensor)> {
    let (batch, tokens, _) = fused.dims3()?;
    let qkv = fused.reshape((batch, tokens, 3, heads, head_dim))?;
    let part = |i: usize| -> candle_core::Result<Tensor> {
        qkv.narrow(2, i, 1)?
            .squeeze(2)?
            .transpose(1, 2)?
            .contiguous()
    };
    Ok((part(0)?, part(1)?, part(2)?))
}

/// Scaled dot-product attention of `q`, `k`, `v` [batch, heads, tokens, head_dim] under an
/// additive `mask` [batch, 1, tokens, tokens], softmax in f32: [batch, tokens, heads × head_dim].
pub(crate) fn attend(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: &Tensor,
    scale: f64,
) -> candle_core::Result<Tensor> {
    let (batch, heads, tokens, head_dim) = q.dims4()?;
    let scores = (q.matmul(&k.t()?)? * scale)?.broadcast_add(mask)?;
    let probs =
        candle_nn::ops::softmax_last_dim(&scores.to_dtype(DType::F32)?)?.to_dtype(q.dtype())?;
    probs
        .matmul(&v.contiguous()?)?
        .transpose(1, 2)?
        .reshape((batch, tokens, heads * head_dim))
}
