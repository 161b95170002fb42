//! `sage embed` and the model side of `sage score`.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use ndarray::Array2;
use sage_core::Embedder;
use sage_embed::{
    default_cache_path, load_embedder, CachedEmbedder, Pooling, ResolveOptions, TransformerOptions,
};

use crate::jsonl::read_records;
use crate::output::Output;

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
    /// Most padded tokens per forward pass.
    #[arg(long, default_value_t = TransformerOptions::default().batch_tokens)]
    pub batch_tokens: usize,
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

impl ModelArgs {
    /// Loads the model, wrapped in the cache unless disabled; reports cache use on stderr.
    pub fn load(&self, spec: &str) -> Result<Box<dyn Embedder>> {
        if crate::remote::is_remote(spec) {
            let cache =
                (!self.no_cache).then(|| self.cache.clone().unwrap_or_else(default_cache_path));
            return crate::remote::load(spec, &self.remote, cache, self.read_caches.clone());
        }
        if self.remote.plan {
            bail!("--plan is for remote models (PROTOCOL:MODEL[@BASE_URL]); {spec:?} is local");
        }
        let options = TransformerOptions {
            pooling: self.pooling,
            batch_tokens: self.batch_tokens.max(1),
            cuda: self.cuda,
            ..TransformerOptions::default()
        };
        let mut model = load_embedder(spec, &ResolveOptions::from_env(), options)
            .with_context(|| format!("loading model {spec:?}"))?;
        if let Some(dimensions) = self.remote.dimensions {
            model = Box::new(sage_embed::Truncated::new(model, dimensions)?);
        }
        if self.no_cache {
            return Ok(model);
        }
        let path = self.cache.clone().unwrap_or_else(default_cache_path);
        let mut cache = CachedEmbedder::open(model, &path)?;
        if let Some(dir) = &self.read_caches {
            cache = cache.reading_siblings(dir);
        }
        Ok(Box::new(ReportingCache(cache)))
    }
}

/// Prints the cache's hits and misses when dropped, i.e. once the command is done with it.
struct ReportingCache(CachedEmbedder<Box<dyn Embedder>>);

// Every method forwarded: a role's prompt (a query's `search_query: `) must reach the model and
// the cache key; the trait's defaults would embed every role as plain text.
impl Embedder for ReportingCache {
    fn identity(&self) -> &sage_core::EmbedderIdentity {
        self.0.identity()
    }
    fn dimension(&self) -> usize {
        self.0.dimension()
    }
    fn embed(&self, texts: &[&str]) -> sage_core::Result<Array2<f32>> {
        self.0.embed(texts)
    }
    fn role_variant(&self, role: sage_core::Role) -> Option<String> {
        self.0.role_variant(role)
    }
    fn embed_as(&self, texts: &[&str], role: sage_core::Role) -> sage_core::Result<Array2<f32>> {
        self.0.embed_as(texts, role)
    }
    fn embed_batches(
        &self,
        texts: &[&str],
        role: sage_core::Role,
        sink: &mut sage_core::BatchSink<'_>,
    ) -> sage_core::Result<()> {
        self.0.embed_batches(texts, role, sink)
    }
    fn delivers_batches(&self) -> bool {
        self.0.delivers_batches()
    }
    fn remote_usage(&self) -> Option<sage_core::RemoteUsage> {
        self.0.remote_usage()
    }
}

impl Drop for ReportingCache {
    fn drop(&mut self) {
        let s = self.0.stats();
        eprintln!(
            "sage: embedding cache {}: {} hits{}, {} embedded",
            self.0.path().display(),
            s.hits,
            if s.from_siblings > 0 {
                format!(" ({} from other cache files)", s.from_siblings)
            } else {
                String::new()
            },
            s.misses
        );
        if let Some(why) = self.0.corruption() {
            eprintln!(
                "sage: warning: embedding cache {}: {} corrupt entries recomputed and overwritten \
                 (first: {why})",
                self.0.path().display(),
                s.corrupt
            );
        }
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
    let embedder = model.load(spec)?;
    let vectors = embedder
        .embed(&texts)
        .with_context(|| format!("embedding {}", input.display()))?;
    if crate::remote::planning() {
        serde_json::to_writer_pretty(&mut out, &crate::remote::finish(&())?)?;
        out.write_all(b"\n")?;
        return out.finish();
    }
    crate::remote::finish(&())?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use sage_core::{EmbedderIdentity, Role};

    /// An embedder with a query prompt: a query's vector differs from the plain text's.
    struct Prompted(EmbedderIdentity);

    impl Embedder for Prompted {
        fn identity(&self) -> &EmbedderIdentity {
            &self.0
        }
        fn dimension(&self) -> usize {
            2
        }
        fn embed(&self, texts: &[&str]) -> sage_core::Result<Array2<f32>> {
            self.embed_as(texts, Role::Plain)
        }
        fn role_variant(&self, role: Role) -> Option<String> {
            (role == Role::Query).then(|| "prompt=query: ".to_owned())
        }
        fn embed_as(&self, texts: &[&str], role: Role) -> sage_core::Result<Array2<f32>> {
            let shift = if role == Role::Query { 100.0 } else { 0.0 };
            Ok(Array2::from_shape_fn((texts.len(), 2), |(i, j)| {
                texts[i].len() as f32 + shift * (j + 1) as f32
            }))
        }
    }

    /// The cache `sage run` wraps every local model in passes a text's role through: before,
    /// it forwarded only `embed`, so queries were embedded (and cached) without their prompt.
    #[test]
    fn the_reporting_cache_keeps_a_querys_prompt() {
        let dir = tempfile::tempdir().unwrap();
        let model = || {
            Prompted(EmbedderIdentity {
                model_id: "test/prompted".into(),
                revision: None,
                pooling: "mean".into(),
                normalize: false,
                max_length: 8,
            })
        };
        let cached = ReportingCache(
            CachedEmbedder::open(
                Box::new(model()) as Box<dyn Embedder>,
                dir.path().join("c.redb"),
            )
            .unwrap(),
        );
        let texts = ["what is it", "a document"];
        for role in [Role::Query, Role::Document, Role::Plain] {
            assert_eq!(
                cached.embed_as(&texts, role).unwrap(),
                model().embed_as(&texts, role).unwrap(),
                "{role:?}"
            );
            assert_eq!(cached.role_variant(role), model().role_variant(role));
        }
        assert_ne!(
            cached.embed_as(&texts, Role::Query).unwrap(),
            cached.embed(&texts).unwrap()
        );
    }
}
