//! Rotary position tables: written once for the LLM decoder here and for sage-embed's rotary
//! encoders (decoder embedders, NomicBERT, ModernBERT).
//!
//! Both follow the rotate-half layout: `angle(p, i) = p · base^(−2i / dim)` for `i < dim / 2`,
//! built as an outer product of positions and inverse frequencies, so the value at a position
//! does not depend on how many positions are built. The reference implementations differ in one
//! place, the precision of the inverse frequencies, and each caller keeps its reference's:
//! candle's quantized models compute them in f32; sage-embed's encoders have always computed
//! them in f64 and rounded once to f32, and their golden tests rest on that.

use candle_core::{DType, Device, Tensor};

/// The precision the inverse frequencies `base^(−2i / dim)` are computed in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InverseFrequencies {
    /// In f32, as candle's quantized llama does.
    F32,
    /// In f64, rounded once to f32.
    F64,
}

/// cos and sin tables `(positions, dim / 2)` for a rotary part of `dim` features with base
/// `base`, in `dtype` (angles are built in f32, then converted).
pub fn rotary_tables(
    dim: usize,
    positions: usize,
    base: f64,
    precision: InverseFrequencies,
    device: &Device,
    dtype: DType,
) -> candle_core::Result<(Tensor, Tensor)> {
    let half = dim / 2;
    let inverse: Vec<f32> = (0..half)
        .map(|i| match precision {
            InverseFrequencies::F32 => 1f32 / (base as f32).powf((2 * i) as f32 / dim as f32),
            InverseFrequencies::F64 => (1.0 / base.powf(2.0 * i as f64 / dim as f64)) as f32,
        })
        .collect();
    let inverse = Tensor::from_vec(inverse, (1, half), device)?;
    let angles = Tensor::arange(0u32, positions as u32, device)?
        .to_dtype(DType::F32)?
        .reshape((positions, 1))?
        .matmul(&inverse)?;
    Ok((
        angles.cos()?.to_dtype(dtype)?,
        angles.sin()?.to_dtype(dtype)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Position 0 is the identity rotation, position 1 turns feature pair `i` by its inverse
    /// frequency, and the two precisions agree to f32 rounding.
    #[test]
    fn tables_hold_the_angles_of_each_position() {
        let (dim, base) = (8, 10_000.0);
        for precision in [InverseFrequencies::F32, InverseFrequencies::F64] {
            let (cos, sin) =
                rotary_tables(dim, 3, base, precision, &Device::Cpu, DType::F32).unwrap();
            assert_eq!(cos.dims(), [3, dim / 2]);
            let (cos, sin) = (cos.to_vec2::<f32>().unwrap(), sin.to_vec2::<f32>().unwrap());
            assert!(cos[0].iter().all(|&c| c == 1.0) && sin[0].iter().all(|&s| s == 0.0));
            for i in 0..dim / 2 {
                let angle = 1.0 / f64::powf(base, 2.0 * i as f64 / dim as f64);
                assert!(
                    (f64::from(sin[1][i]) - angle.sin()).abs() < 1e-6,
                    "{precision:?} {i}"
                );
                assert!((f64::from(cos[2][i]) - (2.0 * angle).cos()).abs() < 1e-6);
            }
        }
    }
}
