//! `sage embed` and the model side of `sage score`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use ndarray::Array2;
use sage_core::Embedder;
use sage_embed::{default_cache_path, LoadOptions, Pooling, Precision, TransformerOptions};

use crate::jsonl::read_records;
use crate::output::Output;
use crate::remote::Loaded;

/// How to load an embedding model (shared by `embed` and `score --model`).
#[derive(Debug, clap::Args)]
pub struct ModelArgs {
    /// Embedding model: a folder, a folder name under $SAGE_MODELS_DIR, a hub id (resolved in
    /// the Hugging Face cache; downloaded unless HF_HUB_OFFLINE=1), or a remote model
    /// PROTOCOL:MODEL or PROTOCOL:MODEL@BASE_URL (openai, voyage, cohere, gemini).
    #[arg(long)]
    pub model: Option<String>,
    /// Override the folder's pooling: mean | cls | max | mean-sqrt-len | lasttoken |
    /// weightedmean | first-last-avg.
    #[arg(long, value_parser = parse_pooling)]
    pub pooling: Option<Pooling>,
    /// Most padded tokens per forward pass [default: 4096 on the CPU; on a GPU, what half its
    /// free memory holds, up to 131072]. On a GPU, a budget larger than its memory holds is
    /// cut to what it holds.
    #[arg(long)]
    pub batch_tokens: Option<usize>,
    /// Embedding cache file (default: $SAGE_CACHE_DIR or ~/.cache/sage-rs, embeddings.redb).
    #[arg(long)]
    pub cache: Option<PathBuf>,
    /// Do not read or write the embedding cache.
    #[arg(long)]
    pub no_cache: bool,
    /// Also read the other embedding cache files (`embeddings*.redb`) in this folder for what
    /// the cache lacks, copying what is found into it: how the shards of a sharded run (each
    /// writing its own --cache file) share their work.
    #[arg(long, value_name = "DIR")]
    pub read_caches: Option<PathBuf>,
    /// Run on the first CUDA GPU (binary built with --features cuda).
    #[arg(long)]
    pub cuda: bool,
    /// The precision of a local encoder's (BERT, MPNet, RoBERTa) dense products on the CPU:
    /// f32 | bf16 | int8. bf16 is fast only with AVX512-BF16 (emulated, slower than f32,
    /// without it); int8 needs AVX2 (fastest with AVX-512 VNNI or AVX-VNNI), is calibrated at
    /// load and refused where its vectors would keep a cosine below 0.99 to f32's on the
    /// calibration texts. Vectors are cached per precision. auto: int8 where this CPU runs it
    /// at 1.1x f32's speed or more and passes that check; else f32. Which, and why, goes to
    /// standard error.
    #[arg(long, value_parser = parse_precision, default_value = "f32")]
    pub precision: PrecisionFlag,
    #[command(flatten)]
    pub remote: crate::remote::RemoteArgs,
}

fn parse_pooling(s: &str) -> Result<Pooling, String> {
    Pooling::from_name(s).ok_or_else(|| {
        format!(
            "unknown pooling {s:?} (mean, cls, max, mean-sqrt-len, lasttoken, weightedmean, first-last-avg)"
        )
    })
}

/// `--precision`: one precision, or `auto` (measured at load: [`sage_embed::choose_precision`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrecisionFlag {
    /// This precision.
    Fixed(Precision),
    /// int8 where it pays here, else f32.
    Auto,
}

fn parse_precision(s: &str) -> Result<PrecisionFlag, String> {
    if s == "auto" {
        return Ok(PrecisionFlag::Auto);
    }
    Precision::from_name(s)
        .map(PrecisionFlag::Fixed)
        .ok_or_else(|| {
            let names: Vec<&str> = Precision::ALL.iter().map(|p| p.name()).collect();
            format!("unknown precision {s:?} ({}, auto)", names.join(", "))
        })
}

impl ModelArgs {
    /// How these flags load the model `spec` names: behind the cache unless disabled; at the
    /// precision `--precision auto` measures for it, said on standard error.
    pub fn load_options(&self, spec: &str) -> Result<LoadOptions> {
        if self.remote.plan && self.no_cache {
            bail!("--plan counts what the embedding cache lacks: drop --no-cache");
        }
        Ok(LoadOptions {
            transformer: TransformerOptions {
                pooling: self.pooling,
                batch_tokens: self.batch_tokens.map(|t| t.max(1)),
                cuda: self.cuda,
                precision: match self.precision {
                    PrecisionFlag::Fixed(precision) => precision,
                    PrecisionFlag::Auto => Precision::F32,
                },
                ..TransformerOptions::default()
            },
            remote: self.remote.options()?,
            dimensions: self.remote.dimensions,
            cache: (!self.no_cache).then(|| self.cache.clone().unwrap_or_else(default_cache_path)),
            read_caches: self.read_caches.clone(),
            plan: self.remote.plan,
            ..LoadOptions::from_env()
        })
        .and_then(|mut options| {
            if self.precision == PrecisionFlag::Auto {
                // remembered beside the embedding cache; measured afresh without one
                let memo = options
                    .cache
                    .as_ref()
                    .and_then(|cache| cache.parent())
                    .map(|dir| dir.join("precision-auto.json"));
                let verdict = sage_embed::choose_precision(
                    spec,
                    &options.resolve,
                    &options.transformer,
                    memo.as_deref(),
                )
                .with_context(|| format!("--precision auto for {spec:?}"))?;
                eprintln!(
                    "sage: --precision auto for {spec}: {} ({})",
                    verdict.chosen, verdict.reason
                );
                options.transformer.precision = verdict.chosen;
            }
            Ok(options)
        })
    }

    /// Loads the model `spec` names, kept in `loaded` for what the command reports once done.
    pub fn load(&self, spec: &str, loaded: &mut Loaded) -> Result<Arc<dyn Embedder>> {
        let model = sage_embed::load(spec, &self.load_options(spec)?)
            .with_context(|| format!("loading model {spec:?}"))?;
        Ok(loaded.keep(model))
    }
}

pub fn run(model: &ModelArgs, input: &Path, output: Option<PathBuf>) -> Result<()> {
    let Some(spec) = &model.model else {
        bail!("--model is required")
    };
    let records = read_records(input)?;
    let texts: Vec<&str> = records
        .iter()
        .map(|r| r.str("text"))
        .collect::<Result<_>>()?;
    let npy = match output
        .as_ref()
        .and_then(|p| p.extension())
        .and_then(|e| e.to_str())
    {
        Some("npy") => true,
        Some("jsonl") | None => false,
        Some(other) if !model.remote.plan => {
            bail!("--output must end in .npy or .jsonl, not .{other}")
        }
        Some(_) => false,
    };
    // before anything is computed or sent: a paid API is not billed for a run that cannot
    // write its result
    let mut out = Output::create(output)?;
    let mut loaded = Loaded::default();
    let embedder = model.load(spec, &mut loaded)?;
    let vectors = embedder
        .embed(&texts)
        .with_context(|| format!("embedding {}", input.display()))?;
    if loaded.planning() {
        serde_json::to_writer_pretty(&mut out, &loaded.finish(&())?)?;
        out.write_all(b"\n")?;
        return out.finish();
    }
    loaded.finish(&())?;
    if npy {
        write_npy(&mut out, &vectors)?;
    } else {
        for row in vectors.rows() {
            serde_json::to_writer(&mut out, &serde_json::json!({ "embedding": row.to_vec() }))?;
            out.write_all(b"\n")?;
        }
    }
    out.finish()
}

/// NumPy `.npy` version 1.0, little-endian f32, C order.
fn write_npy(out: &mut impl Write, m: &Array2<f32>) -> Result<()> {
    let mut header = format!(
        "{{'descr': '<f4', 'fortran_order': False, 'shape': ({}, {}), }}",
        m.nrows(),
        m.ncols()
    );
    // magic (6) + version (2) + header length (2) + header + '\n' is a multiple of 64
    let unpadded = 10 + header.len() + 1;
    header.push_str(&" ".repeat((64 - unpadded % 64) % 64));
    header.push('\n');
    out.write_all(b"\x93NUMPY\x01\x00")?;
    out.write_all(&(header.len() as u16).to_le_bytes())?;
    out.write_all(header.as_bytes())?;
    for x in m.iter() {
        out.write_all(&x.to_le_bytes())?;
    }
    Ok(())
}
