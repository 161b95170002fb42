//! Sentence-transformers models (BERT, MPNet) as an [`Embedder`].

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use ndarray::{Array2, Axis};
use sage_core::{Embedder, EmbedderIdentity, Role};
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

use crate::backbone::{Backbone, PaddedBatch};
use crate::config::{DenseActivation, Prompts, SentenceTransformerConfig};
use crate::encoder::pool;
use crate::error::{file_error, EmbedError, Result};
use crate::families::{FamilyFiles, FAMILIES};
use crate::model_config::Pooling;
use crate::{file_digest, Precision, ResolvedModel};

/// How to load and run a transformer model.
#[derive(Clone, Debug)]
pub struct TransformerOptions {
    /// Overrides the folder's pooling (e.g. EvalRank's first-last-avg).
    pub pooling: Option<Pooling>,
    /// Overrides the folder's normalisation.
    pub normalize: Option<bool>,
    /// Most tokens (padded length × texts) in one forward pass; `None` chooses
    /// ([`sage_device::batch_tokens`]: 4,096 on the CPU, what half the GPU's free memory holds
    /// on a GPU). A budget asked for is cut to what the GPU's memory holds.
    pub batch_tokens: Option<usize>,
    /// Most texts in one forward pass.
    pub max_batch: usize,
    /// Use the first CUDA device (needs the `cuda` feature); CPU otherwise.
    pub cuda: bool,
    /// The precision of the encoder's dense products on the CPU: f32, bf16 or int8 (BERT,
    /// MPNet and RoBERTa checkpoints). Layer norms, softmax and pooling stay f32.
    pub precision: Precision,
}

impl Default for TransformerOptions {
    fn default() -> Self {
        TransformerOptions {
            pooling: None,
            normalize: None,
            batch_tokens: None,
            max_batch: 128,
            cuda: false,
            precision: Precision::F32,
        }
    }
}

/// A sentence-transformers model folder loaded for inference.
pub struct SentenceTransformer {
    identity: EmbedderIdentity,
    tokenizer: Tokenizer,
    encoder: Box<dyn Backbone>,
    /// Where the backbone's weights live: an empty batch's zeros are made there.
    device: Device,
    pooling: Pooling,
    normalize: bool,
    do_lower_case: bool,
    pad_id: u32,
    prompts: Prompts,
    include_prompt: bool,
    /// The Dense modules after pooling, with their activations.
    dense: Vec<(candle_nn::Linear, DenseActivation)>,
    options: TransformerOptions,
    /// Tokens per forward pass, as [`sage_device::batch_tokens`] chose from the options and
    /// the device.
    batch_tokens: usize,
    /// Texts run through the encoder so far (after merging texts with the same token ids).
    encoded: AtomicUsize,
    /// How long [`SentenceTransformer::load`] took.
    load_seconds: f64,
    /// The dtype the backbone computes in.
    dtype: DType,
    /// Whether the model card says the model was trained for Matryoshka truncation.
    matryoshka: bool,
    /// The folder it was loaded from: a lower precision's float32 twin loads from it.
    source: ResolvedModel,
    /// At a lower precision, the same model in float32, loaded when first asked for
    /// ([`Embedder::full_precision`]); its load error, said each time it is asked for.
    twin: std::sync::OnceLock<std::result::Result<Box<SentenceTransformer>, String>>,
    /// At int8: the calibration's lowest cosine against float32.
    int8_lowest_cosine: Option<f64>,
}

/// Whether the folder's model card (README.md) names Matryoshka training: sentence-transformers
/// writes `MatryoshkaLoss` into the cards of models trained with it, and the hub tags such
/// models `matryoshka`. No card, or a card silent on it, says no.
fn card_says_matryoshka(dir: &std::path::Path) -> bool {
    std::fs::read_to_string(dir.join("README.md"))
        .is_ok_and(|card| card.to_ascii_lowercase().contains("matryoshka"))
}

impl SentenceTransformer {
    /// Loads a resolved model folder.
    pub fn load(model: &ResolvedModel, options: TransformerOptions) -> Result<SentenceTransformer> {
        let start = std::time::Instant::now();
        // the weights' digest (the identity's revision: 45 ms for all-MiniLM-L6-v2's 90 MB,
        // a third of its float32 load) is read on another core while this one loads them
        let revision = {
            let model = model.clone();
            std::thread::spawn(move || revision_of(&model))
        };
        let config = SentenceTransformerConfig::read(&model.dir)?;
        let files = weight_files(&model.dir)?;
        let weights = files[0].clone();
        let family = config.family;
        // refused before the GPU is opened: the reason holds whatever the driver says
        check_precision(&model.name, options.precision, family, options.cuda)?;
        let device = sage_device::open(options.cuda)?;
        let dtype = sage_device::compute_dtype(&device, family.trained_in_bf16);
        check_memory(&files, dtype, &device)?;
        let t = &config.transformer;
        let batch_tokens = sage_device::batch_tokens(
            options.batch_tokens,
            sage_device::free_memory(&device),
            sage_device::Footprint {
                hidden: t.hidden_size,
                intermediate: t.intermediate_size,
                heads: t.num_attention_heads,
                max_tokens: config.max_seq_length,
                dtype_bytes: dtype.size_in_bytes(),
            },
        );
        let pooling = options.pooling.unwrap_or(config.pooling);
        if pooling == Pooling::FirstLastAvg && !family.first_last_avg {
            let able: Vec<&str> = FAMILIES
                .iter()
                .filter(|f| f.first_last_avg)
                .map(|f| f.name)
                .collect();
            return Err(file_error(
                &weights,
                format!(
                    "first-last-avg pooling is for {} (SimCSE's encoders), not {}",
                    able.join(", "),
                    family.name
                ),
            ));
        }
        // SAFETY: the weights files are memory-mapped read-only; they must not be modified while
        // the model is alive, which is true of model folders and hub snapshots.
        let vb = unsafe { VarBuilder::from_mmaped_safetensors(&files, dtype, &device)? };
        // int8 is calibrated: the model loads in float32, runs the calibration texts once to
        // learn its activations' ranges, and is lowered after (`calibrate_int8`)
        let files_read = FamilyFiles {
            config_json: &model.dir.join("config.json"),
            transformer: &config.transformer,
            precision: match options.precision {
                Precision::Int8 => Precision::F32,
                other => other,
            },
        };
        let encoder = (family.load)(vb, &files_read).map_err(|e| match e {
            EmbedError::Candle(e) => file_error(&weights, format!("loading weights: {e}")),
            other => other,
        })?;
        let tokenizer = load_tokenizer(&model.dir.join("tokenizer.json"), config.max_seq_length)?;
        let mut width = config.transformer.hidden_size;
        let mut dense = Vec::new();
        for module in &config.dense {
            let file = module.dir.join("model.safetensors");
            if module.in_features != width {
                return Err(file_error(
                    module.dir.join("config.json"),
                    format!(
                        "in_features {} where the vectors are {width} wide",
                        module.in_features
                    ),
                ));
            }
            // SAFETY: as for the encoder's weights, a read-only mapping of a file left alone
            let vb = unsafe { VarBuilder::from_mmaped_safetensors(&[&file], dtype, &device)? };
            let linear = if module.bias {
                candle_nn::linear(module.in_features, module.out_features, vb.pp("linear"))
            } else {
                candle_nn::linear_no_bias(module.in_features, module.out_features, vb.pp("linear"))
            }
            .map_err(|e| file_error(&file, format!("loading the Dense weights: {e}")))?;
            dense.push((linear, module.activation));
            width = module.out_features;
        }
        let normalize = options.normalize.unwrap_or(config.normalize);
        let revision = revision
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
        let mut loaded = SentenceTransformer {
            identity: EmbedderIdentity {
                model_id: model.name.clone(),
                revision: Some(revision),
                pooling: pooling_identity(pooling, options.precision),
                normalize,
                max_length: config.max_seq_length,
            },
            tokenizer,
            encoder,
            device,
            pooling,
            normalize,
            do_lower_case: config.do_lower_case,
            pad_id: config.transformer.pad_token_id,
            prompts: config.prompts,
            include_prompt: config.include_prompt,
            dense,
            options,
            batch_tokens,
            encoded: AtomicUsize::new(0),
            load_seconds: start.elapsed().as_secs_f64(),
            dtype,
            matryoshka: card_says_matryoshka(&model.dir),
            source: model.clone(),
            twin: std::sync::OnceLock::new(),
            int8_lowest_cosine: None,
        };
        if loaded.options.precision == Precision::Int8 {
            loaded.calibrate_int8()?;
            loaded.load_seconds = start.elapsed().as_secs_f64();
        }
        Ok(loaded)
    }

    /// Lowers a model loaded in float32 for `--precision int8`: embeds the shipped calibration
    /// texts in float32 while the encoder records each product's activation ranges, quantizes
    /// the products with SmoothQuant factors from those ranges, embeds the texts again, and
    /// refuses the model where a vector's cosine to its float32 one falls below
    /// [`crate::MIN_COSINE`] (its activations defeat int8 here), naming the lowest.
    fn calibrate_int8(&mut self) -> Result<()> {
        if !self.encoder.record_activations()? {
            return Err(EmbedError::Core(sage_core::SageError::InvalidArgument(
                format!(
                    "--precision int8: {}'s layers do not run on the CPU's fused path",
                    self.identity.model_id
                ),
            )));
        }
        let texts = crate::calibration_texts();
        let reference = Embedder::embed(self, &texts)?;
        self.encoder.lower_to_int8()?;
        let lowered = Embedder::embed(self, &texts)?;
        self.encoded.store(0, Ordering::Relaxed);
        let lowest = crate::calibration::lowest_cosine(&reference, &lowered);
        if lowest < crate::MIN_COSINE {
            return Err(EmbedError::Int8Inaccurate {
                model: self.identity.model_id.clone(),
                lowest,
                texts: texts.len(),
            });
        }
        self.int8_lowest_cosine = Some(lowest);
        Ok(())
    }

    /// At `--precision int8`, the lowest cosine between a calibration text's int8 vector and
    /// its float32 one, measured at load; `None` at other precisions.
    pub fn int8_lowest_cosine(&self) -> Option<f64> {
        self.int8_lowest_cosine
    }

    /// Texts this model has run through its encoder so far; texts of one `embed` call with the
    /// same token ids (after truncation) count once.
    pub fn texts_encoded(&self) -> usize {
        self.encoded.load(Ordering::Relaxed)
    }

    /// Token ids of each text (special tokens added, truncated at max_seq_length).
    fn tokenize(&self, texts: &[&str]) -> Result<Vec<Vec<u32>>> {
        let owned: Vec<String> = texts
            .iter()
            .map(|t| {
                if self.do_lower_case {
                    t.to_lowercase()
                } else {
                    (*t).to_owned()
                }
            })
            .collect();
        let encodings = self
            .tokenizer
            .encode_batch(owned, true)
            .map_err(|e| EmbedError::Tokenizer(e.to_string()))?;
        Ok(encodings
            .into_iter()
            .map(|e| e.get_ids().to_vec())
            .collect())
    }

    /// `skip`: leading tokens left out of pooling (a prompt, when the folder's pooling says
    /// `include_prompt: false`).
    fn embed_batch(&self, batch: &[&Vec<u32>], skip: usize) -> Result<Vec<Vec<f32>>> {
        let longest = batch.iter().map(|ids| ids.len()).max().unwrap_or(0);
        let ids: Vec<Vec<u32>> = batch
            .iter()
            .map(|row| {
                row.iter()
                    .copied()
                    .chain(std::iter::repeat(self.pad_id))
                    .take(longest)
                    .collect()
            })
            .collect();
        let mask: Vec<Vec<u32>> = batch
            .iter()
            .map(|row| (0..longest).map(|i| u32::from(i < row.len())).collect())
            .collect();
        let padded = PaddedBatch {
            ids,
            mask,
            lengths: batch.iter().map(|row| row.len()).collect(),
            first_last_avg: self.pooling == Pooling::FirstLastAvg,
        };
        // Texts without a single token (a tokenizer that adds no special tokens, given ""):
        // there is nothing to run, and sentence-transformers pools them to zeros.
        let hidden = if longest == 0 {
            Tensor::zeros(
                (batch.len(), 0, self.encoder.hidden_size()),
                DType::F32,
                &self.device,
            )?
        } else {
            self.encoder.forward(&padded)?
        };
        let mask = padded.mask;
        let mut pooled = if skip == 0 {
            pool(&hidden, &mask, self.pooling)?
        } else {
            // sentence-transformers: attention_mask[:, :prompt_length] = 0 before pooling
            let pooling_mask: Vec<Vec<u32>> = mask
                .iter()
                .map(|row| {
                    row.iter()
                        .enumerate()
                        .map(|(i, &m)| if i < skip { 0 } else { m })
                        .collect()
                })
                .collect();
            pool(&hidden, &pooling_mask, self.pooling)?
        };
        for (linear, activation) in &self.dense {
            let x = candle_nn::Module::forward(linear, &pooled.to_dtype(linear.weight().dtype())?)?;
            pooled = match activation {
                DenseActivation::Identity => x,
                DenseActivation::Tanh => x.tanh()?,
                DenseActivation::Relu => x.relu()?,
                DenseActivation::Gelu => x.gelu_erf()?,
                DenseActivation::Sigmoid => candle_nn::ops::sigmoid(&x)?,
            }
            .to_dtype(DType::F32)?;
        }
        if self.normalize {
            // torch.nn.functional.normalize: x / max(‖x‖, 1e-12)
            let norms = pooled
                .sqr()?
                .sum_keepdim(1)?
                .sqrt()?
                .clamp(1e-12, f64::MAX)?;
            pooled = pooled.broadcast_div(&norms)?;
        }
        Ok(pooled.to_vec2::<f32>()?)
    }
}

/// The identity's `pooling`: the pooling's name, and `:precision=bf16` or `:precision=int8`
/// after it for a lower precision (as `:dims=N` for a Matryoshka width), so that cached
/// vectors of different precisions never mix; f32 adds nothing, so the caches of every model
/// loaded before `--precision` existed stay valid.
///
/// int8 also names its scheme (`:int8=rows-smoothed-fixed`: per-channel weights, per-row
/// activation ranges, SmoothQuant factors from ranges recorded in the order every CPU shares),
/// so that vectors cached by the earlier Q8_0 int8, or by `rows-smoothed` (calibrated through
/// each CPU's fastest float32 products, whose vectors differed between an AVX2 and an AVX-512
/// machine, down to cosine 0.9991), are not taken for its own.
fn pooling_identity(pooling: Pooling, precision: Precision) -> String {
    match precision {
        Precision::F32 => pooling.name().to_owned(),
        lower => format!(
            "{}{}{}{}",
            pooling.name(),
            sage_core::PRECISION_MARK,
            lower.name(),
            if lower == Precision::Int8 {
                INT8_SCHEME
            } else {
                ""
            }
        ),
    }
}

/// What int8's identity adds after its precision.
const INT8_SCHEME: &str = ":int8=rows-smoothed-fixed";

/// Refuses, before any weight is read or a GPU opened, a precision other than f32 where it
/// cannot run: on a GPU (`cuda`), or for a family whose dense products are not prepared for
/// it; the error names the model and what is supported.
fn check_precision(
    model: &str,
    precision: Precision,
    family: &crate::Family,
    cuda: bool,
) -> Result<()> {
    if precision == Precision::F32 {
        return Ok(());
    }
    let why = if cuda {
        format!(
            "--precision {precision} is for the CPU; on a GPU the model runs in {} (drop \
             --precision or --cuda)",
            sage_device::gpu_dtype(family.trained_in_bf16).as_str()
        )
    } else if !family.lower_precision {
        let able: Vec<&str> = FAMILIES
            .iter()
            .filter(|f| f.lower_precision)
            .map(|f| f.name)
            .collect();
        format!(
            "--precision {precision} runs {} models; {model} is {} (f32 only)",
            able.join(", "),
            family.name
        )
    } else {
        return Ok(());
    };
    Err(EmbedError::Core(sage_core::SageError::InvalidArgument(
        format!("{model}: {why}"),
    )))
}

/// The safetensors files of a folder: `model.safetensors`, or every shard that
/// `model.safetensors.index.json` names.
/// The revision a model's identity carries: the hub commit it was resolved at, else the sha256
/// of its (first) weights file.
pub(crate) fn revision_of(model: &ResolvedModel) -> Result<String> {
    match &model.revision {
        Some(commit) => Ok(commit.clone()),
        None => file_digest(&weight_files(&model.dir)?[0]),
    }
}

fn weight_files(dir: &Path) -> Result<Vec<std::path::PathBuf>> {
    let single = dir.join("model.safetensors");
    if single.is_file() {
        return Ok(vec![single]);
    }
    let index = dir.join("model.safetensors.index.json");
    if !index.is_file() {
        return Err(file_error(
            &single,
            "missing, and no model.safetensors.index.json (only safetensors weights are supported)",
        ));
    }
    let value: serde_json::Value = crate::model_config::read_json(&index)?;
    let map = value
        .get("weight_map")
        .and_then(|m| m.as_object())
        .ok_or_else(|| file_error(&index, "no weight_map object"))?;
    let mut shards: Vec<String> = map
        .values()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    shards.sort();
    shards.dedup();
    let files: Vec<std::path::PathBuf> = shards.iter().map(|s| dir.join(s)).collect();
    if let Some(missing) = files.iter().find(|f| !f.is_file()) {
        return Err(file_error(
            missing,
            format!("named by {} but missing", index.display()),
        ));
    }
    if files.is_empty() {
        return Err(file_error(&index, "weight_map names no file"));
    }
    Ok(files)
}

/// Values a safetensors file holds, from its header alone.
fn tensor_values(path: &Path) -> Result<u64> {
    use std::io::Read;
    let mut file =
        std::fs::File::open(path).map_err(|e| file_error(path, format!("cannot open: {e}")))?;
    let mut size = [0u8; 8];
    file.read_exact(&mut size)
        .map_err(|e| file_error(path, format!("not a safetensors file: {e}")))?;
    let size = u64::from_le_bytes(size);
    if size > 100 << 20 {
        return Err(file_error(
            path,
            "not a safetensors file (header too large)",
        ));
    }
    let mut header = vec![0u8; size as usize];
    file.read_exact(&mut header)
        .map_err(|e| file_error(path, format!("not a safetensors file: {e}")))?;
    let header: serde_json::Value = serde_json::from_slice(&header)
        .map_err(|e| file_error(path, format!("not a safetensors header: {e}")))?;
    Ok(header
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(name, _)| *name != "__metadata__")
        .filter_map(|(_, t)| t.get("shape")?.as_array().cloned())
        .map(|shape| {
            shape
                .iter()
                .map(|d| d.as_u64().unwrap_or(0))
                .product::<u64>()
        })
        .sum())
}

/// Fails before loading when the weights, in the dtype they will be computed in, cannot fit in
/// the memory this machine has free (CPU): a 7B model in f32 needs about 28 GiB.
fn check_memory(files: &[std::path::PathBuf], dtype: DType, device: &Device) -> Result<()> {
    if !device.is_cpu() {
        return Ok(());
    }
    let values: u64 = files
        .iter()
        .map(|f| tensor_values(f))
        .sum::<Result<u64>>()?;
    let needed = values * dtype.size_in_bytes() as u64;
    let available = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        m.lines()
            .find_map(|l| l.strip_prefix("MemAvailable:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kib| kib * 1024)
    });
    refuse_beyond(&files[0], needed, available, dtype)
}

/// The early, clear failure of a model that cannot fit: `needed` bytes against `available`.
fn refuse_beyond(file: &Path, needed: u64, available: Option<u64>, dtype: DType) -> Result<()> {
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    match available {
        Some(available) if needed > available => Err(file_error(
            file,
            format!(
                "the weights need {:.1} GiB in {dtype:?} and {:.1} GiB of memory is available: \
                 use a machine with more memory or a GPU (--cuda)",
                gib(needed),
                gib(available)
            ),
        )),
        _ => Ok(()),
    }
}

fn load_tokenizer(path: &Path, max_length: usize) -> Result<Tokenizer> {
    let mut tokenizer = Tokenizer::from_file(path)
        .map_err(|e| file_error(path, format!("cannot load tokenizer: {e}")))?;
    // These tokenizer.json files carry a fixed padding/truncation of 128: padding is done per
    // batch here, truncation is the model's max_seq_length.
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(Some(TruncationParams {
            max_length,
            strategy: TruncationStrategy::LongestFirst,
            stride: 0,
            direction: TruncationDirection::Right,
        }))
        .map_err(|e| file_error(path, format!("cannot set truncation: {e}")))?;
    Ok(tokenizer)
}

/// Splits `lengths` (in any order) into batches of indices: longest first, each batch within
/// `batch_tokens` padded tokens and `max_batch` texts (a text longer than the budget goes alone).
pub(crate) fn plan_batches(
    lengths: &[usize],
    batch_tokens: usize,
    max_batch: usize,
) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    order.sort_by(|&a, &b| lengths[b].cmp(&lengths[a]).then(a.cmp(&b)));
    let mut batches: Vec<Vec<usize>> = Vec::new();
    for i in order {
        match batches.last_mut() {
            // the first text of a batch is its longest: padded size = longest × count
            Some(batch)
                if batch.len() < max_batch
                    && lengths[batch[0]].max(1) * (batch.len() + 1) <= batch_tokens =>
            {
                batch.push(i)
            }
            _ => batches.push(vec![i]),
        }
    }
    batches
}

impl Embedder for SentenceTransformer {
    fn identity(&self) -> &EmbedderIdentity {
        &self.identity
    }

    fn dimension(&self) -> usize {
        self.dense
            .last()
            .map_or(self.encoder.hidden_size(), |(linear, _)| {
                linear.weight().dim(0).unwrap_or(0)
            })
    }

    /// Texts whose token ids coincide once truncated at the model's window are encoded once:
    /// the model cannot tell them apart. SAGE's sensitivity task is the case in point: a needle
    /// inserted, or tokens cut, past the first max_seq_length tokens of a long document leaves
    /// what the model reads unchanged, and at position 0 the filler alone fills the window.
    fn embed(&self, texts: &[&str]) -> sage_core::Result<Array2<f32>> {
        self.embed_as(texts, Role::Plain)
    }

    fn count_tokens(&self, texts: &[&str]) -> Option<Vec<usize>> {
        let ids = self.tokenize(texts).ok()?;
        Some(ids.iter().map(Vec::len).collect())
    }

    fn load_seconds(&self) -> Option<f64> {
        Some(self.load_seconds)
    }

    fn matryoshka_trained(&self) -> Option<bool> {
        Some(self.matryoshka)
    }

    /// At bf16 or int8, the same folder loaded in float32 with the same options (loaded once,
    /// when first asked for: a run that does not compare precisions never pays for it).
    fn full_precision(&self) -> sage_core::Result<Option<&dyn Embedder>> {
        if self.options.precision == Precision::F32 {
            return Ok(None);
        }
        let twin = self.twin.get_or_init(|| {
            let options = TransformerOptions {
                precision: Precision::F32,
                ..self.options.clone()
            };
            SentenceTransformer::load(&self.source, options)
                .map(Box::new)
                .map_err(|e| e.to_string())
        });
        match twin {
            Ok(twin) => Ok(Some(twin.as_ref())),
            Err(why) => Err(sage_core::SageError::InvalidArgument(format!(
                "{}: its float32 twin did not load: {why}",
                self.identity.model_id
            ))),
        }
    }

    fn compute(&self) -> Option<String> {
        let device = match self.device.location() {
            candle_core::DeviceLocation::Cpu => "cpu".to_owned(),
            candle_core::DeviceLocation::Cuda { gpu_id } => format!("cuda:{gpu_id}"),
            candle_core::DeviceLocation::Metal { gpu_id } => format!("metal:{gpu_id}"),
        };
        // gemm's own float32 kernel where no kernel of sage's runs the products: chosen by the
        // CPU alone, so a throughput forced lower by SAGE_CPU says what it did not force
        let kernel = self
            .encoder
            .dense_kernel()
            .or_else(|| self.device.is_cpu().then(sage_kernels::f32_kernel))
            .map(|k| format!(" {k}"));
        // the products' precision where it is not the dtype's (the activations between them
        // stay float32)
        let precision = match self.options.precision {
            Precision::F32 => self.dtype.as_str(),
            lower => lower.name(),
        };
        Some(format!(
            "{device} {precision}{}",
            kernel.unwrap_or_default()
        ))
    }

    fn role_variant(&self, role: Role) -> Option<String> {
        self.prompts.for_role(role).map(|p| format!("prompt={p}"))
    }

    /// The folder's prompt for `role` is prepended to each text, as sentence-transformers'
    /// `encode(prompt_name=...)` does.
    fn embed_as(&self, texts: &[&str], role: Role) -> sage_core::Result<Array2<f32>> {
        let prompt = self.prompts.for_role(role);
        let prompted: Vec<String>;
        let texts: Vec<&str> = match prompt {
            Some(p) => {
                prompted = texts.iter().map(|t| format!("{p}{t}")).collect();
                prompted.iter().map(String::as_str).collect()
            }
            None => texts.to_vec(),
        };
        // sentence-transformers: prompt_length = len(tokenize(prompt)) - 1 (its [CLS] and
        // words, not its [SEP])
        let skip = match prompt {
            Some(p) if !self.include_prompt => self.tokenize(&[p])?[0].len().saturating_sub(1),
            _ => 0,
        };
        let ids = self.tokenize(&texts)?;
        let mut distinct: Vec<&Vec<u32>> = Vec::new();
        let mut first: HashMap<&[u32], usize> = HashMap::new();
        let row_of: Vec<usize> = ids
            .iter()
            .map(|row| {
                *first.entry(row.as_slice()).or_insert_with(|| {
                    distinct.push(row);
                    distinct.len() - 1
                })
            })
            .collect();
        let lengths: Vec<usize> = distinct.iter().map(|row| row.len()).collect();
        let mut vectors = Array2::zeros((distinct.len(), self.dimension()));
        for batch in plan_batches(&lengths, self.batch_tokens, self.options.max_batch) {
            let rows: Vec<&Vec<u32>> = batch.iter().map(|&i| distinct[i]).collect();
            for (&i, vector) in batch.iter().zip(self.embed_batch(&rows, skip)?) {
                vectors
                    .row_mut(i)
                    .assign(&ndarray::ArrayView1::from(&vector));
            }
        }
        self.encoded.fetch_add(distinct.len(), Ordering::Relaxed);
        Ok(vectors.select(Axis(0), &row_of))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two shards named by an index load as the single file does; the memory check reads the
    /// sizes from the headers and refuses, naming what is needed, before loading anything.
    #[test]
    fn shards_load_and_oversized_models_are_refused_early() {
        use candle_core::{Device, Tensor};
        let dir = tempfile::tempdir().unwrap();
        let a = Tensor::arange(0f32, 6.0, &Device::Cpu)
            .unwrap()
            .reshape((2, 3))
            .unwrap();
        let b = Tensor::ones(4, DType::F32, &Device::Cpu).unwrap();
        candle_core::safetensors::save(
            &[("a", a.clone())].into_iter().collect(),
            dir.path().join("model-00001-of-00002.safetensors"),
        )
        .unwrap();
        candle_core::safetensors::save(
            &[("b", b.clone())].into_iter().collect(),
            dir.path().join("model-00002-of-00002.safetensors"),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("model.safetensors.index.json"),
            r#"{"metadata": {}, "weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}"#,
        )
        .unwrap();
        let files = weight_files(dir.path()).unwrap();
        assert_eq!(files.len(), 2);
        let vb = unsafe { VarBuilder::from_mmaped_safetensors(&files, DType::F32, &Device::Cpu) }
            .unwrap();
        assert_eq!(
            vb.get((2, 3), "a").unwrap().to_vec2::<f32>().unwrap(),
            a.to_vec2::<f32>().unwrap()
        );
        assert_eq!(
            vb.get(4, "b").unwrap().to_vec1::<f32>().unwrap(),
            vec![1.0; 4]
        );
        let values: u64 = files.iter().map(|f| tensor_values(f).unwrap()).sum();
        assert_eq!(values, 10);
        assert!(check_memory(&files, DType::F32, &Device::Cpu).is_ok());
        let e = refuse_beyond(&files[0], 28 << 30, Some(20 << 30), DType::F32)
            .unwrap_err()
            .to_string();
        assert!(e.contains("need 28.0 GiB") && e.contains("20.0 GiB"), "{e}");
        // a shard the index names but the folder lacks
        std::fs::remove_file(dir.path().join("model-00002-of-00002.safetensors")).unwrap();
        let e = weight_files(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("model-00002-of-00002.safetensors") && e.contains("missing"),
            "{e}"
        );
    }

    /// f32 keeps the identity models had before `--precision`; a lower precision is part of
    /// it. A family without lower precisions, or a GPU, is refused, naming the model.
    #[test]
    fn precisions_change_the_identity_and_are_refused_where_they_cannot_run() {
        assert_eq!(pooling_identity(Pooling::Mean, Precision::F32), "mean");
        assert_eq!(
            pooling_identity(Pooling::Cls, Precision::Int8),
            "cls:precision=int8:int8=rows-smoothed-fixed"
        );
        let bert = crate::family_of("bert").unwrap();
        let qwen = crate::family_of("qwen3").unwrap();
        for precision in Precision::ALL {
            assert!(check_precision("m", precision, bert, false).is_ok());
        }
        assert!(check_precision("m", Precision::F32, qwen, false).is_ok());
        let e = check_precision("acme/qwen-embed", Precision::Bf16, qwen, false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("acme/qwen-embed") && e.contains("Qwen3") && e.contains("BERT, MPNet"),
            "{e}"
        );
        // on a GPU, refused with the dtype the model runs in there, in any build: the check
        // comes before the GPU is opened
        assert!(check_precision("m", Precision::F32, bert, true).is_ok());
        let e = check_precision("all-MiniLM-L6-v2", Precision::Int8, bert, true)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "invalid argument: all-MiniLM-L6-v2: --precision int8 is for the CPU; on a GPU the \
             model runs in f16 (drop --precision or --cuda)"
        );
        let e = check_precision("acme/qwen-embed", Precision::Bf16, qwen, true)
            .unwrap_err()
            .to_string();
        assert!(e.contains("runs in bf16"), "{e}");
    }

    #[test]
    fn batches_respect_the_budget_and_cover_every_text() {
        let lengths = [5, 40, 7, 40, 3, 100, 1];
        let batches = plan_batches(&lengths, 100, 3);
        let mut seen: Vec<usize> = batches.iter().flatten().copied().collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..lengths.len()).collect::<Vec<_>>());
        for b in &batches {
            assert!(b.len() <= 3);
            let longest = b.iter().map(|&i| lengths[i]).max().unwrap();
            assert!(longest * b.len() <= 100 || b.len() == 1, "{b:?}");
        }
        assert_eq!(batches[0], vec![5], "the longest goes first, alone");
    }
}
