//! # sage-kernels
//!
//! The CPU kernels of sage-rs, in one place, behind one interface: [`DenseWeight`], a dense
//! layer's weight prepared once, when its model loads, for the product this CPU runs it with,
//! and that product. The encoders (sage-embed) and the local chat LLMs (sage-llm) multiply
//! through it; the next precision is one more variant and its arm in [`DenseWeight::product`].
//!
//! - float32 through gemm, candle's product written without zeroing its output first, or,
//!   where AVX2 is the widest the CPU has (or `SAGE_CPU` allows), in panels packed at load
//!   (`dense_f32.rs`: gemm's AVX2 kernel packs the weight on every call);
//! - float32 on Intel AMX tiles as three bf16 products, accurate to a few float32 roundings
//!   (`amx.rs`, on x86-64 Linux with AMX-BF16; `SAGE_AMX=0` turns it off);
//! - GGUF Q4_1 and Q8_0 against 8-bit activations with AVX-512 VNNI or AVX2, bit for bit what
//!   candle computes (`quantized.rs`);
//! - the encoders' lower [`Precision`]s: int8 (weights per output channel, activations per
//!   row, optionally smoothed by calibrated SmoothQuant factors; `int8.rs`) and bf16
//!   (`bf16.rs`: AVX512-BF16 where the CPU has it, else the same products emulated in float32).
//!
//! Every choice of instruction set goes through [`cpu`] (sage-core's), which `SAGE_CPU` caps, so any machine
//! runs and measures the lower paths its users' CPUs take.
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
mod bf16;
#[cfg(target_arch = "x86_64")]
mod dense_f32;
pub mod fused;
#[cfg(target_arch = "x86_64")]
mod head_fma;
mod int8;
mod quantized;
mod vector_math;

pub use bf16::{avx512_bf16_available, Bf16Matrix};
use fused::PackedWeight;
use int8::Int8Matrix;
pub use int8::Int8Rows;
use quantized::{Activations, QuantMatrix};
/// The instruction-set levels and the `SAGE_CPU` cap every kernel here obeys (sage-core's, so
/// that sage-metrics' SIMD obeys the same switch).
pub use sage_core::cpu;

/// Whether this CPU runs the kernels' 512-bit copies (`fused::with_wide_vectors`, the attention
/// blocks at 512 bits): it has AVX-512 F, BW, DQ and VL, and `SAGE_CPU` allows them.
#[cfg(target_arch = "x86_64")]
pub(crate) fn wide_vectors() -> bool {
    cpu::allows(cpu::Level::Avx512)
        && std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512dq")
        && std::arch::is_x86_feature_detected!("avx512vl")
}

/// gemm's float32 kernel in a result's words, `gemm-avx512` or `gemm-fma`: it is chosen by
/// the CPU, not by `SAGE_CPU`.
pub fn f32_kernel() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx512f") {
        return "gemm-avx512";
    }
    if cfg!(target_arch = "x86_64") {
        "gemm-fma"
    } else {
        "gemm"
    }
}

/// Whether dense products and long attention scores run on AMX tiles here (the CPU has
/// AMX-BF16 and AVX512-BF16, Linux grants the tiles, neither `SAGE_AMX=0` nor a `SAGE_CPU`
/// below `native` turns them off).
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

/// The kernel [`Precision::Int8`] runs on here (`int8-avx512-vnni`, `int8-avx-vnni`,
/// `int8-avx2`, as `SAGE_CPU` allows), if any.
pub fn int8_kernel() -> Option<&'static str> {
    int8::Int8Kernel::best().map(int8::Int8Kernel::name)
}

/// The number format a local encoder's dense products run in (`--precision`). Layer norms,
/// softmax, GELU and pooling stay float32 whatever it is: their errors would reach every
/// value of a vector, where a product's rounding is averaged over its width.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Precision {
    /// float32 products (on AMX tiles as three bf16 products where the CPU has them).
    #[default]
    F32,
    /// bf16 weights and activations, float32 sums.
    Bf16,
    /// 8-bit weights with a scale per output channel (computed at load) and 8-bit activations
    /// with a scale per row (at each product), one exact integer sum per output.
    Int8,
}

impl Precision {
    /// Every precision, in the order `--precision` lists them.
    pub const ALL: [Precision; 3] = [Precision::F32, Precision::Bf16, Precision::Int8];

    /// `f32`, `bf16` or `int8`.
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::Bf16 => "bf16",
            Precision::Int8 => "int8",
        }
    }

    /// The precision `name` names (as [`Precision::name`] writes it).
    pub fn from_name(name: &str) -> Option<Precision> {
        Precision::ALL.into_iter().find(|p| p.name() == name)
    }
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A dense layer's weight `[n, k]`, prepared once for the product this CPU runs it with.
pub enum DenseWeight {
    /// float32, multiplied by gemm (candle's product).
    F32(Tensor),
    /// float32 weights in panels for the AVX2 product, on a CPU without AVX-512 (or with it
    /// capped by `SAGE_CPU`): packed once at load, where gemm packs them on every call.
    #[cfg(target_arch = "x86_64")]
    F32Panels(dense_f32::PanelMatrix),
    /// float32 weights packed for AMX tiles, multiplied as three bf16 products.
    AmxBf16x3 {
        /// The weight as loaded.
        weight: Tensor,
        /// The same values in the kernel's tile layout.
        packed: PackedWeight,
    },
    /// A GGUF Q4_1 or Q8_0 matrix in the integer kernels' interleaved layout.
    Quantized(QuantMatrix),
    /// A float32 weight quantized to int8 per output channel at load ([`Precision::Int8`]).
    Int8(Int8Matrix),
    /// A float32 weight rounded to bf16 at load ([`Precision::Bf16`]).
    Bf16(Bf16Matrix),
}

/// A dense layer's output as the next dense layer reads it
/// ([`DenseWeight::product_bias_gelu_for`]).
pub enum LayerInput {
    /// float32 rows `[rows, width]`.
    F32(Tensor),
    /// Rows quantized for one int8 weight's product as they were produced.
    Int8(Int8Rows),
}

/// A precision this CPU cannot run.
#[derive(Debug)]
pub struct Unsupported {
    /// The precision asked for.
    pub precision: Precision,
    /// What it needs.
    pub needs: &'static str,
}

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "precision {} needs {}", self.precision, self.needs)
    }
}

impl std::error::Error for Unsupported {}

impl DenseWeight {
    /// `weight` [n, k], float32 on the CPU: packed for AMX where this CPU runs it and the kernel
    /// covers its width, in AVX2 panels where AVX2 is its widest, else as it is (gemm).
    pub fn f32(weight: &Tensor) -> candle_core::Result<DenseWeight> {
        if let Some(packed) = fused::pack_for_cpu(weight)? {
            return Ok(DenseWeight::AmxBf16x3 {
                weight: weight.clone(),
                packed,
            });
        }
        #[cfg(target_arch = "x86_64")]
        if let Some(panels) = dense_f32::PanelMatrix::for_this_cpu(weight)? {
            return Ok(DenseWeight::F32Panels(panels));
        }
        Ok(DenseWeight::F32(weight.clone()))
    }

    /// `weight` [n, k], float32 on the CPU, for products whose bits are the same on every CPU
    /// that runs int8 (x86-64 with AVX2 and FMA), whatever else it has and whatever `SAGE_CPU`
    /// allows: the AVX2 panels, not this CPU's fastest product (gemm's sums, AMX's and the
    /// panels' differ in their last bits). int8's calibration records activation ranges through
    /// these, so that the int8 weights it derives from them, and so its vectors, do not depend
    /// on the CPU that loaded the model. Elsewhere [`DenseWeight::f32`].
    pub fn f32_in_fixed_order(weight: &Tensor) -> candle_core::Result<DenseWeight> {
        #[cfg(target_arch = "x86_64")]
        if let Some(panels) = dense_f32::PanelMatrix::in_fixed_order(weight)? {
            return Ok(DenseWeight::F32Panels(panels));
        }
        DenseWeight::f32(weight)
    }

    /// `weight` [n, k], float32 on the CPU, prepared for `precision`'s product: [`DenseWeight::f32`],
    /// rounded to bf16, or quantized to int8 per output channel. int8 needs AVX2 (AVX-VNNI or
    /// AVX-512 VNNI where present and `SAGE_CPU` allows); where it cannot run, an
    /// [`Unsupported`] error (wrapped in candle's), never a silent float32.
    pub fn with_precision(
        weight: &Tensor,
        precision: Precision,
    ) -> candle_core::Result<DenseWeight> {
        match precision {
            Precision::F32 => DenseWeight::f32(weight),
            Precision::Bf16 => Ok(DenseWeight::Bf16(Bf16Matrix::new(weight)?)),
            Precision::Int8 => DenseWeight::int8(weight, None),
        }
    }

    /// `weight` [n, k] quantized to int8 per output channel, smoothed for activations whose
    /// channel `j` reaches at most `activation_max[j]` in magnitude (measured on calibration
    /// texts): SmoothQuant's factors `s_j = √(max|x_j| / max|W_·j|)` move half of each
    /// channel's range from the activations into the weight, so the few channels that carry a
    /// layer norm's outliers no longer leave every other value of a token a handful of levels.
    pub fn int8_smoothed(
        weight: &Tensor,
        activation_max: &[f32],
    ) -> candle_core::Result<DenseWeight> {
        let factors = int8::smoothing_factors(weight, activation_max)?;
        DenseWeight::int8(weight, Some(&factors))
    }

    fn int8(weight: &Tensor, smoothing: Option<&[f32]>) -> candle_core::Result<DenseWeight> {
        match Int8Matrix::new(weight, smoothing)? {
            Some(matrix) => Ok(DenseWeight::Int8(matrix)),
            None => Err(candle_core::Error::wrap(Unsupported {
                precision: Precision::Int8,
                needs: "an x86-64 CPU with AVX2",
            })),
        }
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
            #[cfg(target_arch = "x86_64")]
            DenseWeight::F32Panels(panels) => panels.product(x),
            DenseWeight::AmxBf16x3 { weight, packed } => {
                fused::dense_product(x, weight, Some(packed))
            }
            DenseWeight::Quantized(matrix) => matrix.forward(x),
            DenseWeight::Int8(matrix) => matrix.product(x),
            DenseWeight::Bf16(matrix) => matrix.product(x),
        }
    }

    /// `gelu(x · Wᵀ + bias)` (as [`fused::bias_gelu`]), made ready for `next`'s product. Where
    /// both weights are int8, each row is quantized for `next` as its chunk of rows is
    /// produced, and the float32 rows are never stored; otherwise the float32 rows. Either
    /// way [`DenseWeight::product_of`] on `next` gives the same bits.
    pub fn product_bias_gelu_for(
        &self,
        x: &Tensor,
        bias: &[f32],
        exact: bool,
        next: &DenseWeight,
    ) -> candle_core::Result<LayerInput> {
        match (self, next) {
            (DenseWeight::Int8(matrix), DenseWeight::Int8(next)) => {
                let epilogue = fused::Epilogue::BiasGelu { bias, exact };
                Ok(LayerInput::Int8(
                    matrix.product_then_quantize(x, &epilogue, next)?,
                ))
            }
            _ => Ok(LayerInput::F32(fused::bias_gelu(
                self.product(x)?,
                bias,
                exact,
            )?)),
        }
    }

    /// `input · Wᵀ`: [`DenseWeight::product`] of float32 rows, or the int8 product of rows
    /// quantized for this weight (an error for any other weight).
    pub fn product_of(&self, input: &LayerInput) -> candle_core::Result<Tensor> {
        match (self, input) {
            (_, LayerInput::F32(x)) => self.product(x),
            (DenseWeight::Int8(matrix), LayerInput::Int8(rows)) => matrix.product_of_rows(rows),
            (_, LayerInput::Int8(_)) => candle_core::bail!(
                "rows quantized for an int8 product given to a {} product",
                self.kernel().unwrap_or("float32")
            ),
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

    /// The kernel in a result's words where it is not gemm's float32 (`f32-avx2-panels`,
    /// `amx-bf16x3`, `q4_1`,
    /// `q8_0`, `int8-avx512-vnni`, `int8-avx-vnni`, `int8-avx2`, `avx512-bf16`,
    /// `bf16-emulated`): a throughput means little without it.
    pub fn kernel(&self) -> Option<&'static str> {
        match self {
            DenseWeight::F32(_) => None,
            #[cfg(target_arch = "x86_64")]
            DenseWeight::F32Panels(_) => Some(dense_f32::KERNEL_NAME),
            DenseWeight::AmxBf16x3 { .. } => Some("amx-bf16x3"),
            DenseWeight::Quantized(matrix) => Some(matrix.format_name()),
            DenseWeight::Int8(matrix) => Some(matrix.kernel_name()),
            DenseWeight::Bf16(matrix) => Some(matrix.kernel_name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use candle_core::{Device, Tensor};
    use rand::{Rng, SeedableRng};

    use super::*;

    /// An encoder's shapes: (output width n, input width k, activation rows), MiniLM's qkv,
    /// intermediate and output layers and a small odd one (a padded weight group, rows that
    /// do not fill a tile).
    const SHAPES: [(usize, usize, usize); 4] = [
        (1152, 384, 37),
        (1536, 384, 20),
        (384, 1536, 19),
        (40, 64, 3),
    ];

    /// A seeded weight (small values, as trained layers have) and activations (a few large
    /// values and exact zeros, as after a layer norm and GELU).
    fn draw(n: usize, k: usize, rows: usize, rng: &mut impl Rng) -> (Tensor, Tensor) {
        let w: Vec<f32> = (0..n * k).map(|_| rng.gen_range(-0.1f32..0.1)).collect();
        let x: Vec<f32> = (0..rows * k)
            .map(|i| match i % 89 {
                0 => 12.0,
                1 => 0.0,
                _ => rng.gen_range(-2f32..2.),
            })
            .collect();
        (
            Tensor::from_vec(w, (n, k), &Device::Cpu).unwrap(),
            Tensor::from_vec(x, (rows, k), &Device::Cpu).unwrap(),
        )
    }

    /// `x · wᵀ` in f64.
    fn reference(w: &Tensor, x: &Tensor) -> Vec<f64> {
        let (w, x) = (w.to_vec2::<f32>().unwrap(), x.to_vec2::<f32>().unwrap());
        x.iter()
            .flat_map(|xr| {
                w.iter().map(move |wr| {
                    xr.iter()
                        .zip(wr)
                        .map(|(&a, &b)| f64::from(a) * f64::from(b))
                        .sum::<f64>()
                })
            })
            .collect()
    }

    /// ‖y − want‖ / ‖want‖.
    fn relative_error(y: &Tensor, want: &[f64]) -> f64 {
        let y = y.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        assert_eq!(y.len(), want.len());
        let (mut err, mut norm) = (0f64, 0f64);
        for (&a, &b) in y.iter().zip(want) {
            err += (f64::from(a) - b).powi(2);
            norm += b * b;
        }
        (err / norm).sqrt()
    }

    /// Each row of `x` alone gives the bits it gets in the batch: the int8 and AVX512-BF16
    /// kernels compute each output in one order whatever the rows around it; the emulated bf16
    /// path is gemm's float32 product, whose blocking depends on the row count, so there
    /// within float32 roundings.
    fn rows_alone_match(weight: &DenseWeight, x: &Tensor, batch: &Tensor) {
        let exact = weight.kernel() != Some("bf16-emulated");
        let batch = batch.to_vec2::<f32>().unwrap();
        for r in [0, x.dim(0).unwrap() / 2, x.dim(0).unwrap() - 1] {
            let alone = weight.product(&x.narrow(0, r, 1).unwrap()).unwrap();
            let alone = alone.to_vec2::<f32>().unwrap();
            if exact {
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&alone[0]), bits(&batch[r]), "row {r}");
            } else {
                for (a, b) in alone[0].iter().zip(&batch[r]) {
                    assert!(
                        (a - b).abs() <= 1e-5 * (1.0 + b.abs()),
                        "row {r}: {a} vs {b}"
                    );
                }
            }
        }
    }

    /// `precision`'s products against float64 `x · Wᵀ` within `bound` (relative, over the
    /// whole product), and a batch row for row the bits of each row alone.
    fn check(precision: Precision, bound: f64, seed: u64) -> &'static str {
        let mut rng = sage_core::ExperimentRng::seed_from_u64(seed);
        let mut kernel = "";
        for (n, k, rows) in SHAPES {
            let (w, x) = draw(n, k, rows, &mut rng);
            let weight = DenseWeight::with_precision(&w, precision).unwrap();
            kernel = weight.kernel().unwrap_or("gemm");
            let y = weight.product(&x).unwrap();
            assert_eq!(y.dims2().unwrap(), (rows, n));
            let error = relative_error(&y, &reference(&w, &x));
            assert!(
                error < bound,
                "{precision} {kernel} ({n}, {k}) x {rows}: {error:e}"
            );
            rows_alone_match(&weight, &x, &y);
        }
        kernel
    }

    #[test]
    fn int8_products_are_close_to_f64_and_batch_independent() {
        #[cfg(target_arch = "x86_64")]
        if !std::is_x86_feature_detected!("avx2") || !std::is_x86_feature_detected!("fma") {
            sage_test_env::skip("int8 products", "no AVX2 and FMA on this CPU");
            return;
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            sage_test_env::skip("int8 products", "the int8 kernels are x86-64's");
            return;
        }
        // 8 bits per value, a scale per weight row and per activation row (the activations'
        // outliers, 12 among values up to 2, coarsen their rows' steps: ~1.5% here)
        let kernel = check(Precision::Int8, 3e-2, 21);
        assert!(kernel.starts_with("int8-"), "{kernel}");
    }

    #[test]
    fn bf16_products_are_close_to_f64_and_batch_independent() {
        // two roundings to an 8-bit mantissa per product: about 2⁻⁹ relative each
        let kernel = check(Precision::Bf16, 5e-3, 22);
        let want = if avx512_bf16_available() {
            "avx512-bf16"
        } else {
            "bf16-emulated"
        };
        assert_eq!(kernel, want);
    }

    /// The emulated path computes exactly the float32 product of the bf16-rounded values.
    #[test]
    fn emulated_bf16_is_the_f32_product_of_rounded_values() {
        let mut rng = sage_core::ExperimentRng::seed_from_u64(23);
        let (w, x) = draw(48, 96, 5, &mut rng);
        let rounded = |t: &Tensor| {
            t.to_dtype(candle_core::DType::BF16)
                .unwrap()
                .to_dtype(candle_core::DType::F32)
                .unwrap()
        };
        let emulated = Bf16Matrix::with_path(&w, false).unwrap();
        assert_eq!(emulated.kernel_name(), "bf16-emulated");
        let want = fused::dense_product(&rounded(&x), &rounded(&w), None).unwrap();
        assert_eq!(
            emulated.product(&x).unwrap().to_vec2::<f32>().unwrap(),
            want.to_vec2::<f32>().unwrap()
        );
    }

    /// AVX512-BF16's products against the emulated path's: the same products, summed in
    /// another order.
    #[test]
    fn avx512_bf16_matches_the_emulated_path() {
        if !avx512_bf16_available() {
            sage_test_env::skip(
                "avx512_bf16_matches_the_emulated_path",
                "no AVX512-BF16 on this CPU (or SAGE_BF16_EMULATED is set): only the emulated \
                 bf16 path runs here",
            );
            return;
        }
        let mut rng = sage_core::ExperimentRng::seed_from_u64(24);
        for (n, k, rows) in SHAPES {
            let (w, x) = draw(n, k, rows, &mut rng);
            let fast = Bf16Matrix::with_path(&w, true).unwrap();
            assert_eq!(fast.kernel_name(), "avx512-bf16");
            let slow = Bf16Matrix::with_path(&w, false).unwrap();
            let want = slow.product(&x).unwrap().to_vec2::<f32>().unwrap();
            let got = fast.product(&x).unwrap().to_vec2::<f32>().unwrap();
            for (g, w) in got.iter().flatten().zip(want.iter().flatten()) {
                assert!((g - w).abs() <= 1e-4 * (1.0 + w.abs()), "{g} vs {w}");
            }
        }
    }

    /// The fastest of `runs` timings of `run`, in seconds: this shared machine's other work
    /// only ever adds time. For the measurements to read.
    pub(crate) fn fastest_seconds(runs: usize, mut run: impl FnMut()) -> f64 {
        (0..runs)
            .map(|_| {
                let start = std::time::Instant::now();
                run();
                start.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min)
    }

    /// Seconds per product of each precision on MiniLM's shapes at 4096 rows (32 texts of 128
    /// tokens), the fastest of 15: a measurement to read (`--ignored --nocapture`), nothing asserted.
    #[test]
    #[ignore = "a measurement: numbers to read"]
    fn product_speed_by_precision() {
        let mut rng = sage_core::ExperimentRng::seed_from_u64(25);
        // SAGE_SPEED_ROWS: another row count (a batch of short texts is ~2300)
        let rows: usize = std::env::var("SAGE_SPEED_ROWS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(4096);
        for (n, k) in [(1152, 384), (1536, 384), (384, 1536), (16, 1536)] {
            let (w, x) = draw(n, k, rows, &mut rng);
            for precision in Precision::ALL {
                let weight = DenseWeight::with_precision(&w, precision).unwrap();
                weight.product(&x).unwrap();
                let seconds = fastest_seconds(15, || {
                    weight.product(&x).unwrap();
                });
                let gmacs = (rows * n * k) as f64 / seconds / 1e9;
                eprintln!(
                    "({n}, {k}) x {rows} {precision} {}: {:.2} ms, {gmacs:.1} GMAC/s",
                    weight.kernel().unwrap_or("gemm"),
                    seconds * 1e3
                );
            }
        }
    }

    /// The vectorisable rounding is `half`'s, ties, subnormals, infinities and the largest
    /// values included.
    #[test]
    fn bf16_rounding_on_the_bits_is_halfs() {
        let mut rng = sage_core::ExperimentRng::seed_from_u64(26);
        let mut values: Vec<f32> = (0..20_000)
            .map(|i| rng.gen_range(-1f32..1.) * [1e-40f32, 1e-3, 1.0, 3e38][i % 4])
            .collect();
        values.extend([
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MAX,
            f32::from_bits(0x3F80_8000), // a tie, rounded to even (down)
            f32::from_bits(0x3F81_8000), // a tie, rounded to even (up)
            f32::from_bits(0x0000_8000),
        ]);
        for v in values {
            let want = half::bf16::from_f32(v).to_f32();
            assert_eq!(bf16::to_bf16_and_back(v).to_bits(), want.to_bits(), "{v:e}");
        }
        assert!(bf16::to_bf16_and_back(f32::NAN).is_nan());
    }

    #[test]
    fn precisions_are_named_and_parsed() {
        for p in Precision::ALL {
            assert_eq!(Precision::from_name(p.name()), Some(p));
        }
        assert_eq!(Precision::default(), Precision::F32);
        assert_eq!(Precision::from_name("fp16"), None);
    }
}
