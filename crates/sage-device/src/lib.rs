//! # sage-device
//!
//! Which device runs a local model (an encoder in sage-embed, a GGUF chat model in sage-llm):
//! the CPU, or the first CUDA GPU with the `cuda` feature; in what dtype; and how many tokens
//! one forward pass takes there.
//!
//! Why a crate: before this, each loader called candle's `Device::new_cuda(0)` and passed on
//! whatever came back. On a machine without a usable GPU that was a driver error code
//! (`DriverError(CUDA_ERROR_NO_DEVICE, ...)`) wrapped in a model-loading message, and a driver
//! older than the toolkit failed later, at the first kernel. [`open`] asks the driver first —
//! is a GPU there, does the driver support the CUDA version of the libraries this binary runs
//! with — and says what is wrong in one sentence ([`DeviceError`]), the same for every loader.
//!
//! The decisions themselves are plain functions of plain facts ([`DriverFacts::check`],
//! [`compute_dtype`], [`batch_tokens`]), so they are tested on machines without a GPU (CI has
//! none) with made-up driver answers and memory figures; only [`open`] and [`free_memory`]
//! talk to a driver.
//!
//! A binary built with `cuda` links the driver library (`libcuda.so.1`, as candle's cudarc
//! links it): it starts only where the NVIDIA driver is installed; the CPU-only build runs
//! everywhere.
#![deny(missing_docs)]

use std::fmt;

use candle_core::{DType, Device};

/// Why a CUDA device could not be opened: each variant is one sentence a user can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeviceError {
    /// `--cuda` was asked of a binary built without the `cuda` feature.
    #[error(
        "this sage was built without CUDA: rebuild it with `--features cuda` (the CUDA toolkit's \
         nvcc is needed) or run without --cuda"
    )]
    NotBuilt,
    /// The driver answers but sees no GPU (none installed, none passed into the container,
    /// or `CUDA_VISIBLE_DEVICES` hides them).
    #[error("no CUDA GPU: the NVIDIA driver (CUDA {driver}) sees no device ({reason}); run without --cuda")]
    NoGpu {
        /// The CUDA version the driver supports.
        driver: CudaVersion,
        /// The driver's own word for it (e.g. `CUDA_ERROR_NO_DEVICE`).
        reason: String,
    },
    /// The driver supports an older CUDA than the libraries this binary runs with.
    #[error(
        "the NVIDIA driver supports CUDA {driver}, older than this sage's CUDA {libraries} \
         libraries: update the driver (one for CUDA {libraries} or newer), or build sage \
         against a CUDA {driver} toolkit"
    )]
    DriverTooOld {
        /// The CUDA version the driver supports.
        driver: CudaVersion,
        /// The CUDA version of the libraries (NVRTC's) this binary loaded.
        libraries: CudaVersion,
    },
    /// The driver refused to start for another reason.
    #[error("the NVIDIA driver (CUDA {driver}) failed to start: {reason}")]
    DriverFailed {
        /// The CUDA version the driver supports.
        driver: CudaVersion,
        /// The driver's error.
        reason: String,
    },
    /// The GPU was found but opening it failed (out of memory, a busy exclusive-mode GPU, ...).
    #[error("CUDA GPU {ordinal}: {reason}")]
    Open {
        /// The GPU's index.
        ordinal: usize,
        /// What failed.
        reason: String,
    },
}

/// A CUDA version as the driver API writes it (`12040` is 12.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct CudaVersion {
    /// Major version.
    pub major: u32,
    /// Minor version.
    pub minor: u32,
}

impl CudaVersion {
    /// From the driver API's integer (`cuDriverGetVersion`: 1000 × major + 10 × minor).
    pub fn from_driver_int(v: i32) -> CudaVersion {
        let v = v.max(0) as u32;
        CudaVersion {
            major: v / 1000,
            minor: (v % 1000) / 10,
        }
    }
}

impl fmt::Display for CudaVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// What the driver said when asked, before any context is made: the inputs of
/// [`DriverFacts::check`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverFacts {
    /// `cuInit`'s error name, or `None` when it succeeded.
    pub init_error: Option<String>,
    /// The CUDA version the driver supports (`cuDriverGetVersion`, which works without `cuInit`).
    pub driver: CudaVersion,
    /// The CUDA version of the toolkit libraries the binary loaded.
    pub libraries: CudaVersion,
    /// How many GPUs the driver sees (0 when `cuInit` failed).
    pub devices: usize,
}

impl DriverFacts {
    /// Whether GPU `ordinal` can be used, and if not, why, most basic cause first: a driver too
    /// old for the libraries fails every later call whatever the GPUs, so it is named before
    /// "no GPU".
    pub fn check(&self, ordinal: usize) -> Result<(), DeviceError> {
        if self.driver < self.libraries {
            return Err(DeviceError::DriverTooOld {
                driver: self.driver,
                libraries: self.libraries,
            });
        }
        match &self.init_error {
            Some(e) if e == "CUDA_ERROR_NO_DEVICE" => Err(DeviceError::NoGpu {
                driver: self.driver,
                reason: e.clone(),
            }),
            Some(e) if e == "CUDA_ERROR_INSUFFICIENT_DRIVER" => Err(DeviceError::DriverTooOld {
                driver: self.driver,
                libraries: self.libraries,
            }),
            Some(e) => Err(DeviceError::DriverFailed {
                driver: self.driver,
                reason: e.clone(),
            }),
            None if self.devices == 0 => Err(DeviceError::NoGpu {
                driver: self.driver,
                reason: "it counts 0 GPUs".to_owned(),
            }),
            None if ordinal >= self.devices => Err(DeviceError::Open {
                ordinal,
                reason: format!("the driver sees {} GPU(s), numbered from 0", self.devices),
            }),
            None => Ok(()),
        }
    }
}

/// Whether this binary was built with the `cuda` feature.
pub fn cuda_built() -> bool {
    cfg!(feature = "cuda")
}

/// The device a model runs on: the CPU, or (`cuda`) the first GPU once the driver has said it
/// can be used ([`DriverFacts::check`]).
pub fn open(cuda: bool) -> Result<Device, DeviceError> {
    if !cuda {
        return Ok(Device::Cpu);
    }
    open_gpu(0)
}

#[cfg(not(feature = "cuda"))]
fn open_gpu(_ordinal: usize) -> Result<Device, DeviceError> {
    Err(DeviceError::NotBuilt)
}

#[cfg(feature = "cuda")]
fn open_gpu(ordinal: usize) -> Result<Device, DeviceError> {
    open_checked(&driver::facts(), ordinal)
}

/// GPU `ordinal` opened once `facts` (the driver's answers, asked once) allow it.
#[cfg(feature = "cuda")]
fn open_checked(facts: &DriverFacts, ordinal: usize) -> Result<Device, DeviceError> {
    facts.check(ordinal)?;
    Device::new_cuda(ordinal).map_err(|e| DeviceError::Open {
        ordinal,
        reason: first_line(&e),
    })
}

/// An error's message without what follows its first line: candle appends a backtrace when
/// RUST_BACKTRACE is set, and the refusal stays one line.
#[cfg(feature = "cuda")]
fn first_line(e: &dyn std::fmt::Display) -> String {
    e.to_string()
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// What the driver says about itself and its GPUs, asked without making a context. `None` in
/// a build without the `cuda` feature.
pub fn driver_facts() -> Option<DriverFacts> {
    #[cfg(feature = "cuda")]
    {
        Some(driver::facts())
    }
    #[cfg(not(feature = "cuda"))]
    {
        None
    }
}

#[cfg(feature = "cuda")]
mod driver {
    use candle_core::cuda_backend::cudarc::driver::{result, sys};
    use candle_core::cuda_backend::cudarc::nvrtc;

    use super::{CudaVersion, DriverFacts};

    pub(super) fn facts() -> DriverFacts {
        let init_error = result::init().err().map(|e| {
            e.error_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|_| format!("CUresult {}", e.0 as i32))
        });
        let mut version = 0;
        // SAFETY: cuDriverGetVersion writes one int through the pointer it is given.
        unsafe { sys::cuDriverGetVersion(&mut version) };
        let (mut major, mut minor) = (0, 0);
        // SAFETY: nvrtcVersion writes two ints through the pointers it is given.
        unsafe { nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
        let devices = if init_error.is_none() {
            result::device::get_count().map_or(0, |n| n.max(0) as usize)
        } else {
            0
        };
        DriverFacts {
            init_error,
            driver: CudaVersion::from_driver_int(version),
            libraries: CudaVersion {
                major: major.max(0) as u32,
                minor: minor.max(0) as u32,
            },
            devices,
        }
    }
}

/// One GPU as `sage gpu` describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuDescription {
    /// The GPU's index.
    pub ordinal: usize,
    /// Its name (e.g. `NVIDIA H100 80GB HBM3`).
    pub name: String,
    /// Compute capability, major and minor.
    pub compute_capability: (i32, i32),
    /// Free and total memory, bytes.
    pub memory: Memory,
    /// The driver's and the libraries' CUDA versions.
    pub driver: CudaVersion,
    /// The CUDA version of the libraries this binary loaded.
    pub libraries: CudaVersion,
}

/// Opens GPU `ordinal` and describes it, or says in one sentence why it cannot.
pub fn describe(ordinal: usize) -> Result<GpuDescription, DeviceError> {
    #[cfg(feature = "cuda")]
    {
        let facts = driver::facts();
        let device = open_checked(&facts, ordinal)?;
        let failed =
            |e: candle_core::cuda_backend::cudarc::driver::DriverError| DeviceError::Open {
                ordinal,
                reason: first_line(&e),
            };
        let cuda = device.as_cuda_device().map_err(|e| DeviceError::Open {
            ordinal,
            reason: first_line(&e),
        })?;
        let context = cuda.cuda_stream().context().clone();
        Ok(GpuDescription {
            ordinal,
            name: context.name().map_err(failed)?,
            compute_capability: context.compute_capability().map_err(failed)?,
            memory: free_memory(&device).ok_or_else(|| DeviceError::Open {
                ordinal,
                reason: "the driver did not say how much memory is free".to_owned(),
            })?,
            driver: facts.driver,
            libraries: facts.libraries,
        })
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = ordinal;
        Err(DeviceError::NotBuilt)
    }
}

/// The dtype a transformer computes in: f32 on the CPU (f16 and bf16 files are upcast); half
/// precision on a GPU, where the finite attention masks keep it NaN-free: bf16 for the families
/// trained in it (their activations overflow f16's range), f16 otherwise.
pub fn compute_dtype(device: &Device, trained_in_bf16: bool) -> DType {
    if device.is_cpu() {
        DType::F32
    } else {
        gpu_dtype(trained_in_bf16)
    }
}

/// The dtype a transformer computes in on a GPU (see [`compute_dtype`]).
pub fn gpu_dtype(trained_in_bf16: bool) -> DType {
    if trained_in_bf16 {
        DType::BF16
    } else {
        DType::F16
    }
}

/// A device's memory, bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Memory {
    /// Free now.
    pub free: u64,
    /// In all.
    pub total: u64,
}

/// The GPU's free and total memory (`cuMemGetInfo`); `None` on the CPU.
pub fn free_memory(device: &Device) -> Option<Memory> {
    #[cfg(feature = "cuda")]
    {
        let cuda = device.as_cuda_device().ok()?;
        let (free, total) = cuda.cuda_stream().context().mem_get_info().ok()?;
        Some(Memory {
            free: free as u64,
            total: total as u64,
        })
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = device;
        None
    }
}

/// What one token of a forward pass holds at once, for sizing batches by free memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footprint {
    /// Hidden width.
    pub hidden: usize,
    /// Feed-forward width.
    pub intermediate: usize,
    /// Attention heads.
    pub heads: usize,
    /// The longest text, in tokens (the model's truncation length).
    pub max_tokens: usize,
    /// Bytes per value in the compute dtype.
    pub dtype_bytes: usize,
}

impl Footprint {
    /// Bytes one token of a batch holds at the peak of a layer: about eight hidden-wide
    /// tensors (the residual, Q, K, V, the attention output and their temporaries), the
    /// feed-forward's input and activation, and its row of attention scores and softmax per
    /// head against the longest padded text.
    pub fn bytes_per_token(&self) -> u64 {
        let values = 8 * self.hidden + 2 * self.intermediate + 2 * self.heads * self.max_tokens;
        (values * self.dtype_bytes) as u64
    }
}

/// The CPU's token budget per forward pass when none is asked for: where the CPU kernels'
/// throughput flattens (larger batches only add padding and cache misses). 4,096 rather than
/// 8,192 since 2026-12-07: a MiniLM feed-forward activation of 8,192 tokens (50 MB) no longer
/// fits a 32 MB L3, and on a 2-core EPYC whole `sage embed` runs of 128-token texts took 2–6%
/// less time at 2,048 or 4,096 (1,024: 3–5% more), window-length ones 0–3% less.
pub const CPU_BATCH_TOKENS: usize = 4096;

/// The largest GPU token budget chosen by itself: beyond it, batches gave no more speed on an
/// H100 (measured from 2,048 to 131,072; docs/src/gpu.md).
pub const GPU_BATCH_TOKENS_CEILING: usize = 131_072;

/// The share of the GPU's free memory the activations may take; the rest is for the weights
/// already there, the allocator's slack and cuBLAS's workspace.
const GPU_MEMORY_SHARE: f64 = 0.5;

/// Tokens per forward pass: `requested` when given, but never more than half the GPU's free
/// memory holds (`memory`, `None` on the CPU), and never less than one longest text; without a
/// request, [`CPU_BATCH_TOKENS`] on the CPU and what fits (up to
/// [`GPU_BATCH_TOKENS_CEILING`]) on a GPU.
pub fn batch_tokens(
    requested: Option<usize>,
    memory: Option<Memory>,
    footprint: Footprint,
) -> usize {
    let one_text = footprint.max_tokens.max(1);
    let Some(memory) = memory else {
        return requested.unwrap_or(CPU_BATCH_TOKENS).max(1);
    };
    let fits = (memory.free as f64 * GPU_MEMORY_SHARE / footprint.bytes_per_token().max(1) as f64)
        as usize;
    let wanted = requested.unwrap_or(GPU_BATCH_TOKENS_CEILING);
    wanted.min(fits).max(one_text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(init_error: Option<&str>, driver: i32, devices: usize) -> DriverFacts {
        DriverFacts {
            init_error: init_error.map(str::to_owned),
            driver: CudaVersion::from_driver_int(driver),
            libraries: CudaVersion {
                major: 13,
                minor: 0,
            },
            devices,
        }
    }

    /// The driver's answers a GPU-less machine, an old driver and a GPU box give, made up
    /// here: each ends in the one sentence that names its cause.
    #[test]
    fn the_driver_facts_name_what_keeps_a_gpu_from_use() {
        assert_eq!(CudaVersion::from_driver_int(12040).to_string(), "12.4");
        assert_eq!(CudaVersion::from_driver_int(13000).to_string(), "13.0");
        assert!(facts(None, 13000, 1).check(0).is_ok());
        assert!(facts(None, 13020, 2).check(1).is_ok());

        let no_gpu = facts(Some("CUDA_ERROR_NO_DEVICE"), 13000, 0)
            .check(0)
            .unwrap_err();
        assert!(matches!(no_gpu, DeviceError::NoGpu { .. }), "{no_gpu:?}");
        let line = no_gpu.to_string();
        assert!(
            line.contains("no CUDA GPU") && line.contains("CUDA_ERROR_NO_DEVICE"),
            "{line}"
        );
        assert!(!line.contains('\n'));

        // an old driver is named even when it also sees no GPU: updating it comes first
        for init in [None, Some("CUDA_ERROR_NO_DEVICE")] {
            let old = facts(init, 12040, 1).check(0).unwrap_err();
            assert_eq!(
                old.to_string(),
                "the NVIDIA driver supports CUDA 12.4, older than this sage's CUDA 13.0 \
                 libraries: update the driver (one for CUDA 13.0 or newer), or build sage \
                 against a CUDA 12.4 toolkit"
            );
        }
        let insufficient = facts(Some("CUDA_ERROR_INSUFFICIENT_DRIVER"), 13000, 0).check(0);
        assert!(matches!(
            insufficient,
            Err(DeviceError::DriverTooOld { .. })
        ));

        let zero = facts(None, 13000, 0).check(0).unwrap_err();
        assert!(zero.to_string().contains("counts 0 GPUs"), "{zero}");
        let beyond = facts(None, 13000, 2).check(2).unwrap_err();
        assert!(beyond.to_string().contains("sees 2 GPU(s)"), "{beyond}");
        let other = facts(Some("CUDA_ERROR_OPERATING_SYSTEM"), 13000, 0)
            .check(0)
            .unwrap_err();
        assert!(
            other.to_string().contains("CUDA_ERROR_OPERATING_SYSTEM"),
            "{other}"
        );
    }

    /// `--cuda` in a CPU-only build is refused in one sentence saying how to get a CUDA one.
    #[test]
    fn the_cpu_is_always_there_and_a_gpu_only_in_a_cuda_build() {
        assert!(open(false).unwrap().is_cpu());
        if !cuda_built() {
            let e = open(true).unwrap_err();
            assert_eq!(e, DeviceError::NotBuilt);
            assert!(e.to_string().contains("--features cuda"));
            assert_eq!(describe(0).unwrap_err(), DeviceError::NotBuilt);
            assert!(driver_facts().is_none());
        }
    }

    #[test]
    fn half_precision_on_a_gpu_bf16_for_the_families_trained_in_it() {
        assert_eq!(compute_dtype(&Device::Cpu, false), DType::F32);
        assert_eq!(compute_dtype(&Device::Cpu, true), DType::F32);
        assert_eq!(gpu_dtype(false), DType::F16);
        assert_eq!(gpu_dtype(true), DType::BF16);
    }

    /// Batches sized by a made-up free-memory figure: all-MiniLM-L6-v2's shapes in f16.
    #[test]
    fn gpu_batches_are_sized_by_the_free_memory() {
        let minilm = Footprint {
            hidden: 384,
            intermediate: 1536,
            heads: 12,
            max_tokens: 256,
            dtype_bytes: 2,
        };
        // 8 × 384 + 2 × 1536 + 2 × 12 × 256 = 12,288 values of 2 bytes
        assert_eq!(minilm.bytes_per_token(), 24_576);
        let gib = 1u64 << 30;
        let memory = |free_gib: u64| {
            Some(Memory {
                free: free_gib * gib,
                total: 80 * gib,
            })
        };
        // the CPU keeps its budget or the one asked for
        assert_eq!(batch_tokens(None, None, minilm), CPU_BATCH_TOKENS);
        assert_eq!(batch_tokens(Some(2048), None, minilm), 2048);
        // a roomy GPU takes the ceiling; half of 1 GiB holds 21,845 tokens
        assert_eq!(
            batch_tokens(None, memory(60), minilm),
            GPU_BATCH_TOKENS_CEILING
        );
        assert_eq!(batch_tokens(None, memory(1), minilm), 21_845);
        // a request beyond what fits is cut to it; one within is kept
        assert_eq!(batch_tokens(Some(100_000), memory(1), minilm), 21_845);
        assert_eq!(batch_tokens(Some(4096), memory(1), minilm), 4096);
        // a nearly full GPU still runs one longest text at a time
        let full = Some(Memory {
            free: 1 << 20,
            total: 80 * gib,
        });
        assert_eq!(batch_tokens(None, full, minilm), 256);
    }
}
