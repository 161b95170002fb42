//! # sage-kernels
//!
//! The CPU kernels of sage-rs, in one place, behind one interface: [`DenseWeight`], a dense
//! layer's weight prepared once, when its model loads, for the product this CPU runs it with,
//! and that product. The encoders (sage-embed) and the local chat LLMs (sage-llm) multiply
//! through it; the next precision is one more variant and its arm in [`DenseWeight::product`].
//!
//! - float32 through gemm, candle's product written without zeroing its output first;
//! - float32 on Intel AMX tiles as three bf16 products, accurate to a few float32 roundings
//!   (`amx.rs`, on x86-64 Linux with AMX-BF16; `SAGE_AMX=0` turns it off);
//! - GGUF Q4_1 and Q8_0 against 8-bit activations with AVX-512 VNNI or AVX2, bit for bit what
//!   candle computes (`quantized.rs`).
//!
//! Beside the products, [`fused`] holds the encoder's fused attention over packed texts and the
//! dense layers' epilogues (bias, GELU, residual and layer norm), which read and write the same
//! row-major f32 buffers.
//!
//! Why a crate: the kernels are this workspace's unsafe SIMD code and the reason for its newest
//! toolchain (Rust 1.89, for the AVX-512 intrinsics); kept together, a precision or an
//! instruction set is added, measured and reviewed in one place, and a crate that only reads
//! data or serves models builds without them.
#![deny(missing_docs)]

use candle_core::quantized::QTensor;
use candle_core::Tensor;

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod amx;
pub mod fused;
mod quantized;

use fused::PackedWeight;
use quantized::{Activations, QuantMatrix};

/// Whether dense products and long attention scores run on AMX tiles here (the CPU has
/// AMX-BF16 and AVX512-BF16, Linux grants the tiles, `SAGE_AMX` is not `0`).
pub fn amx_available() -> bool {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        amx::available()
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    {
        false
    }
}

/// A dense layer's weight `[n, k]`, prepared once for the product this CPU runs it with.
pub enum DenseWeight {
    /// float32, multiplied by gemm (candle's product).
    F32(Tensor),
    /// float32 weights packed for AMX tiles, multiplied as three bf16 products.
    AmxBf16x3 {
        /// The weight as loaded.
        weight: Tensor,
        /// The same values in the kernel's tile layout.
        packed: PackedWeight,
    },
    /// A GGUF Q4_1 or Q8_0 matrix in the integer kernels' interleaved layout.
    Quantized(QuantMatrix),
}

impl DenseWeight {
    /// `weight` [n, k], float32 on the CPU: packed for AMX where this CPU runs it and the kernel
    /// covers its width, else as it is.
    pub fn f32(weight: &Tensor) -> candle_core::Result<DenseWeight> {
        Ok(match fused::pack_for_cpu(weight)? {
            Some(packed) => DenseWeight::AmxBf16x3 {
                weight: weight.clone(),
                packed,
            },
            None => DenseWeight::F32(weight.clone()),
        })
    }

    /// A GGUF matrix the integer kernels take (Q4_1 or Q8_0, on a CPU with AVX2 or AVX-512
    /// VNNI); `None` for any other, which candle multiplies.
    pub fn quantized(tensor: &QTensor) -> Option<DenseWeight> {
        QuantMatrix::from_qtensor(tensor).map(DenseWeight::Quantized)
    }

    /// `x · Wᵀ` for `x` [rows, k]: [rows, n].
    pub fn product(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        match self {
            DenseWeight::F32(weight) => fused::dense_product(x, weight, None),
            DenseWeight::AmxBf16x3 { weight, packed } => {
                fused::dense_product(x, weight, Some(packed))
            }
            DenseWeight::Quantized(matrix) => matrix.forward(x),
        }
    }

    /// The products of `weights` (one width) on the same rows `x`: the quantized ones share one
    /// quantization of `x` and one parallel pass (a decoding step is a few hundred small
    /// products, and each pass costs the workers a wake-up); the others run one by one.
    pub fn products(weights: &[&DenseWeight], x: &Tensor) -> candle_core::Result<Vec<Tensor>> {
        let quantized: Vec<&QuantMatrix> = weights
            .iter()
            .filter_map(|w| match w {
                DenseWeight::Quantized(matrix) => Some(matrix),
                _ => None,
            })
            .collect();
        let mut shared = if quantized.is_empty() {
            Vec::new()
        } else {
            QuantMatrix::forward_all(&quantized, &Activations::quantize(x)?)?
        }
        .into_iter();
        weights
            .iter()
            .map(|w| match w {
                DenseWeight::Quantized(_) => Ok(shared.next().expect("one output per matrix")),
                other => other.product(x),
            })
            .collect()
    }

    /// The kernel in a result's words where it is not gemm's float32 (`amx-bf16x3`, `q4_1`,
    /// `q8_0`): a throughput means little without it.
    pub fn kernel(&self) -> Option<&'static str> {
        match self {
            DenseWeight::F32(_) => None,
            DenseWeight::AmxBf16x3 { .. } => Some("amx-bf16x3"),
            DenseWeight::Quantized(matrix) => Some(matrix.format_name()),
        }
    }
}
