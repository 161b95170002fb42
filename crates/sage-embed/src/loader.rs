//! One way from a model spec to a ready embedder: [`load`].
//!
//! The CLI, the Python module and the suites (PTEB's reference encoder) all load through here, so
//! a spec and its options mean the same in each: a remote model (`PROTOCOL:MODEL[@BASE_URL]`)
//! unless a file of that name exists, else a local folder, a folder under SAGE_MODELS_DIR or a
//! hub id; behind the embedding cache unless none is asked for; counting what would be sent
//! instead of sending it when only planning. The [`LoadedModel`] keeps what a caller reads
//! afterwards (the cache's hits, a remote model's plan and usage), so no global list of loaded
//! models is needed to write a report.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use ndarray::Array2;
use sage_core::{is_remote_spec, BatchSink, Embedder, EmbeddingWork, RemoteUsage, Role};

use sage_remote::{RemoteEmbedder, RemoteOptions, RemoteSpec};

use crate::cache::{CacheStats, CachedEmbedder, PlanCounts};
use crate::model_kind::{detect_kind, ModelKind};
use crate::resolve::{resolve_model, ResolvedModel};
use crate::static_models::{Model2Vec, WordVectors};
use crate::transformer::SentenceTransformer;
use crate::{EmbedError, ResolveOptions, Result, TransformerOptions, Truncated};

/// Everything that says how a spec becomes an embedder.
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    /// Where local models are looked for.
    pub resolve: ResolveOptions,
    /// How a transformer is run (pooling, batch tokens, device).
    pub transformer: TransformerOptions,
    /// How a remote model is called.
    pub remote: RemoteOptions,
    /// Vectors this wide, Matryoshka-style: a remote model is asked for them, a local model's
    /// are cut to their first N values and renormalised.
    pub dimensions: Option<usize>,
    /// The embedding cache file; `None`: no cache.
    pub cache: Option<PathBuf>,
    /// Also read the other `embeddings*.redb` files in this folder for what the cache lacks.
    pub read_caches: Option<PathBuf>,
    /// Send nothing: count what a remote model would be sent after the cache.
    pub plan: bool,
}

impl LoadOptions {
    /// Models found as the environment says, transformer and remote defaults, no cache.
    pub fn from_env() -> LoadOptions {
        LoadOptions {
            resolve: ResolveOptions::from_env(),
            ..LoadOptions::default()
        }
    }

    /// The same, behind the embedding cache at `path`.
    pub fn cached(mut self, path: impl Into<PathBuf>) -> LoadOptions {
        self.cache = Some(path.into());
        self
    }
}

/// Where a model spec points, read once: the one fork between a model behind a server and a
/// model on this machine. Every loader resolves a spec through here and builds from what it
/// gives, so a spec is parsed in one place and means the same to each.
#[derive(Debug)]
pub enum ModelSource {
    /// A model behind a server: `PROTOCOL:MODEL[@BASE_URL]`, with no file of that name.
    Remote(RemoteSpec),
    /// A model on this machine (a folder, a folder under SAGE_MODELS_DIR, or a hub snapshot),
    /// and what kind its files say it is.
    Local(ResolvedModel, ModelKind),
}

impl ModelSource {
    /// Where `spec` points: a remote spec unless a file of that name exists, else a local
    /// folder, a folder under SAGE_MODELS_DIR, or a hub id.
    pub fn resolve(spec: &str, resolve: &ResolveOptions) -> Result<ModelSource> {
        if is_remote_spec(spec) {
            return Ok(ModelSource::Remote(RemoteSpec::parse(spec)?));
        }
        let model = resolve_model(spec, resolve)?;
        let kind = detect_kind(&model.dir)?;
        Ok(ModelSource::Local(model, kind))
    }
}

/// A local model of `kind` built from its resolved folder.
fn build_local(
    model: &ResolvedModel,
    kind: ModelKind,
    transformer: TransformerOptions,
) -> Result<Box<dyn Embedder>> {
    if kind != ModelKind::Transformer {
        refuse_precision(
            &model.name,
            "a static model (no dense products)",
            &transformer,
        )?;
    }
    Ok(match kind {
        ModelKind::Transformer => Box::new(SentenceTransformer::load(model, transformer)?),
        ModelKind::WordVectors => Box::new(WordVectors::load(model)?),
        ModelKind::Model2Vec => Box::new(Model2Vec::load(model)?),
    })
}

/// An error naming `model` and what it is when a precision other than f32 was asked of a
/// model that has none to give (a static or remote model): never a silent f32.
fn refuse_precision(model: &str, what: &str, options: &TransformerOptions) -> Result<()> {
    if options.precision == crate::Precision::F32 {
        return Ok(());
    }
    Err(EmbedError::Core(sage_core::SageError::InvalidArgument(
        format!(
            "{model}: --precision {} is for local BERT, MPNet and RoBERTa encoders on the \
             CPU; this is {what}",
            options.precision
        ),
    )))
}

/// The bare model `spec` names, without a cache or a meter in front: a remote model with
/// [`RemoteOptions`]' defaults, a local one run as `options` say. [`load`] is the whole path.
pub fn load_embedder(
    spec: &str,
    resolve: &ResolveOptions,
    options: TransformerOptions,
) -> Result<Box<dyn Embedder>> {
    match ModelSource::resolve(spec, resolve)? {
        ModelSource::Remote(remote) => {
            refuse_precision(spec, "a remote model", &options)?;
            Ok(Box::new(RemoteEmbedder::new(
                remote,
                RemoteOptions::default(),
            )?))
        }
        ModelSource::Local(model, kind) => build_local(&model, kind, options),
    }
}

/// A loaded model and what can be asked of it once it has been used.
pub struct LoadedModel {
    name: String,
    remote: Option<Option<f64>>,
    cache: Option<Arc<CachedEmbedder<Box<dyn Embedder>>>>,
    /// Without a cache, what counts the model's work instead.
    meter: Option<Arc<Metered<Box<dyn Embedder>>>>,
    embedder: Arc<dyn Embedder>,
}

/// What the embedding cache did for one model.
#[derive(Clone, Debug)]
pub struct CacheUse {
    /// The cache file.
    pub path: PathBuf,
    /// Hits and misses.
    pub stats: CacheStats,
    /// What the first corrupt entry failed, when one was found.
    pub corruption: Option<String>,
}

impl LoadedModel {
    /// The model, ready to embed (behind its cache when it has one).
    pub fn embedder(&self) -> Arc<dyn Embedder> {
        self.embedder.clone()
    }

    /// The spec as it may be shown: a remote model's without its server's credentials.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the model is behind an HTTP API.
    pub fn is_remote(&self) -> bool {
        self.remote.is_some()
    }

    /// A remote model's USD per million tokens, when it has a price.
    pub fn price_per_million_tokens(&self) -> Option<f64> {
        self.remote.flatten()
    }

    /// What a planning run counted; `None` unless only planning.
    pub fn plan(&self) -> Option<PlanCounts> {
        self.cache.as_ref().and_then(|c| c.plan())
    }

    /// What a remote model was asked for and what it cost; `None` for a local model.
    pub fn usage(&self) -> Option<RemoteUsage> {
        self.embedder.remote_usage()
    }

    /// What the model embedded since it was loaded, for a result file: from its cache's counts,
    /// or, loaded without a cache, from every text it was given (none of them cached). `None`
    /// when only planning: nothing was embedded.
    pub fn work(&self) -> Option<EmbeddingWork> {
        if self.plan().is_some() {
            return None;
        }
        let (embedded, cached, seconds) = match (&self.cache, &self.meter) {
            (Some(cache), _) => {
                let stats = cache.stats();
                (stats.misses, stats.hits, stats.embedding_seconds)
            }
            (None, Some(meter)) => {
                let (embedded, seconds) = meter.embedded();
                (embedded, 0, seconds)
            }
            (None, None) => return None,
        };
        let usage = self.usage();
        Some(EmbeddingWork {
            model: self.name.clone(),
            embedded,
            cached,
            seconds,
            tokens: usage.as_ref().map(|u| u.tokens),
            cost_usd: usage.and_then(|u| u.cost_usd),
        })
    }

    /// What the embedding cache did; `None` without a cache.
    pub fn cache_use(&self) -> Option<CacheUse> {
        self.cache.as_ref().map(|c| CacheUse {
            path: c.path().to_owned(),
            stats: c.stats(),
            corruption: c.corruption(),
        })
    }
}

/// Loads the model `spec` names, as `options` say.
pub fn load(spec: &str, options: &LoadOptions) -> Result<LoadedModel> {
    if options.plan && !is_remote_spec(spec) {
        return Err(EmbedError::Resolve(format!(
            "planning counts what a remote model (PROTOCOL:MODEL[@BASE_URL]) would be sent; \
             {spec:?} is local"
        )));
    }
    let source = ModelSource::resolve(spec, &options.resolve)?;
    let (model, name, remote, counter): (Box<dyn Embedder>, _, _, _) = match source {
        ModelSource::Remote(parsed) => {
            let name = parsed.display();
            refuse_precision(&name, "a remote model", &options.transformer)?;
            let remote_options = RemoteOptions {
                dimensions: options.dimensions.or(options.remote.dimensions),
                ..options.remote.clone()
            };
            let model = RemoteEmbedder::new(parsed, remote_options)?;
            let price = model.price_per_million_tokens();
            let counter = model.token_counter();
            (Box::new(model), name, Some(price), Some(counter))
        }
        ModelSource::Local(model, kind) => {
            let model = build_local(&model, kind, options.transformer.clone())?;
            let model: Box<dyn Embedder> = match options.dimensions {
                Some(dimensions) => Box::new(Truncated::new(model, dimensions)?),
                None => model,
            };
            (model, spec.to_owned(), None, None)
        }
    };
    let cache = match (&options.cache, counter) {
        (None, _) if options.plan => {
            return Err(EmbedError::Resolve(
                "planning counts what the embedding cache lacks: it needs the cache".into(),
            ))
        }
        (None, _) => {
            let meter = Arc::new(Metered::new(model));
            return Ok(LoadedModel {
                name,
                remote,
                cache: None,
                embedder: meter.clone(),
                meter: Some(meter),
            });
        }
        (Some(path), Some(counter)) if options.plan => {
            CachedEmbedder::planning(model, path, counter)?
        }
        (Some(path), _) => {
            let cache = CachedEmbedder::open(model, path)?;
            match &options.read_caches {
                Some(dir) => cache.reading_siblings(dir),
                None => cache,
            }
        }
    };
    let cache = Arc::new(cache);
    Ok(LoadedModel {
        name,
        remote,
        embedder: cache.clone(),
        cache: Some(cache),
        meter: None,
    })
}

/// A model without a cache in front (loaded with none, or a Python encoder), counting the texts
/// it embeds and the seconds its embed calls take: what the cache counts as its misses, so a
/// `--no-cache` run's result file still says what its embedding cost. It is not a cache:
/// [`Embedder::uncached`] stays `None`, and a caller that times the model (the throughput
/// suite) times it through the meter, whose cost is a clock read and two atomic adds per call.
pub struct Metered<E> {
    inner: E,
    texts: AtomicU64,
    nanos: AtomicU64,
}

impl<E: Embedder> Metered<E> {
    /// `inner`, counting from zero.
    pub fn new(inner: E) -> Metered<E> {
        Metered {
            inner,
            texts: AtomicU64::new(0),
            nanos: AtomicU64::new(0),
        }
    }

    /// Texts embedded and seconds spent embedding them, so far.
    pub fn embedded(&self) -> (u64, f64) {
        (
            self.texts.load(Ordering::Relaxed),
            self.nanos.load(Ordering::Relaxed) as f64 * 1e-9,
        )
    }

    fn timed<T>(
        &self,
        texts: usize,
        embed: impl FnOnce() -> sage_core::Result<T>,
    ) -> sage_core::Result<T> {
        let started = Instant::now();
        let result = embed();
        self.nanos
            .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        self.texts.fetch_add(texts as u64, Ordering::Relaxed);
        result
    }
}

impl<E: Embedder> Embedder for Metered<E> {
    pass_through!(
        inner: identity,
        dimension,
        role_variant,
        delivers_batches,
        remote_usage,
        count_tokens,
        load_seconds,
        compute,
        matryoshka_trained,
        full_precision
    );

    fn embed(&self, texts: &[&str]) -> sage_core::Result<Array2<f32>> {
        self.timed(texts.len(), || self.inner.embed(texts))
    }

    fn embed_as(&self, texts: &[&str], role: Role) -> sage_core::Result<Array2<f32>> {
        self.timed(texts.len(), || self.inner.embed_as(texts, role))
    }

    fn embed_batches(
        &self,
        texts: &[&str],
        role: Role,
        sink: &mut BatchSink<'_>,
    ) -> sage_core::Result<()> {
        self.timed(texts.len(), || self.inner.embed_batches(texts, role, sink))
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// A GloVe text file: the smallest local model there is.
    fn word_vectors(dir: &Path) -> PathBuf {
        let path = dir.join("glove.test.txt");
        std::fs::write(&path, "red 1 0 0 2\nblue 0 1 0 2\ngreen 0 0 1 2\n").unwrap();
        path
    }

    #[test]
    fn a_cached_model_embeds_as_the_bare_one_and_counts_its_hits() {
        let dir = tempfile::tempdir().unwrap();
        let spec = word_vectors(dir.path());
        let spec = spec.to_str().unwrap();
        let bare = load(spec, &LoadOptions::from_env()).unwrap();
        assert!(bare.cache_use().is_none() && !bare.is_remote() && bare.usage().is_none());
        let cached = load(
            spec,
            &LoadOptions::from_env().cached(dir.path().join("c.redb")),
        )
        .unwrap();
        let texts = ["red blue", "green"];
        let expected = bare.embedder().embed(&texts).unwrap();
        assert_eq!(cached.embedder().embed(&texts).unwrap(), expected);
        assert_eq!(cached.embedder().embed(&texts).unwrap(), expected);
        let used = cached.cache_use().unwrap();
        assert_eq!((used.stats.misses, used.stats.hits), (2, 2));
        assert_eq!(used.path, dir.path().join("c.redb"));
        let work = cached.work().unwrap();
        assert_eq!((work.embedded, work.cached), (2, 2));
        assert_eq!(work.seconds, used.stats.embedding_seconds);
    }

    #[test]
    fn a_model_without_a_cache_still_counts_what_it_embeds() {
        let dir = tempfile::tempdir().unwrap();
        let spec = word_vectors(dir.path());
        let bare = load(spec.to_str().unwrap(), &LoadOptions::from_env()).unwrap();
        let embedder = bare.embedder();
        embedder.embed(&["red", "blue"]).unwrap();
        embedder.embed_as(&["green"], Role::Query).unwrap();
        let mut rows = 0;
        embedder
            .embed_batches(&["red", "green", "blue"], Role::Plain, &mut |_, batch| {
                rows += batch.nrows();
                Ok(())
            })
            .unwrap();
        assert_eq!(rows, 3);
        // every text given is embedded: nothing is cached, a repeat included
        let work = bare.work().unwrap();
        assert_eq!((work.embedded, work.cached), (6, 0));
        assert!(work.seconds > 0.0 && work.tokens.is_none() && work.cost_usd.is_none());
        assert_eq!(work.model, bare.name());
        // a meter is not a cache: the throughput suite reports no cache bypassed
        assert!(embedder.uncached().is_none());
    }

    #[test]
    fn dimensions_cut_a_local_models_vectors() {
        let dir = tempfile::tempdir().unwrap();
        let spec = word_vectors(dir.path());
        let options = LoadOptions {
            dimensions: Some(2),
            ..LoadOptions::from_env()
        };
        let model = load(spec.to_str().unwrap(), &options).unwrap();
        assert_eq!(model.embedder().dimension(), 2);
    }

    #[test]
    fn planning_needs_a_remote_model_and_a_cache() {
        let dir = tempfile::tempdir().unwrap();
        let spec = word_vectors(dir.path());
        let planning = LoadOptions {
            plan: true,
            ..LoadOptions::from_env().cached(dir.path().join("c.redb"))
        };
        let local = load(spec.to_str().unwrap(), &planning).err().unwrap();
        assert!(local.to_string().contains("is local"), "{local}");

        let remote_spec = "openai:text-embedding-3-small@http://127.0.0.1:9";
        let keyed = RemoteOptions {
            api_key: Some("sk-test".into()),
            ..RemoteOptions::default()
        };
        let uncached = LoadOptions {
            plan: true,
            remote: keyed.clone(),
            ..LoadOptions::from_env()
        };
        let e = load(remote_spec, &uncached).err().unwrap();
        assert!(e.to_string().contains("needs the cache"), "{e}");

        let planned = load(
            remote_spec,
            &LoadOptions {
                remote: keyed,
                ..planning
            },
        )
        .unwrap();
        assert!(planned.is_remote());
        assert_eq!(
            planned.name(),
            "openai:text-embedding-3-small@http://127.0.0.1:9"
        );
        // nothing is sent while planning: the closed port is never dialled
        planned.embedder().embed(&["one text"]).unwrap();
        let plan = planned.plan().unwrap();
        assert_eq!((plan.texts_to_send, plan.cached_texts), (1, 0));
        assert!(plan.tokens_to_send > 0);
    }
}
