//! Remote models on the command line: their flags, the plan before spending, and the usage
//! record every report of a run that used one carries.
//!
//! A process holds a list of the remote models it loaded, so that whichever command writes a
//! report can add what they were asked for and what it cost, and `--plan` can print what would
//! be sent instead of the report.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use sage_core::Embedder;
use sage_embed::remote::{RemoteOptions, RemoteSpec, PRICES_AS_OF};
use sage_embed::{CachedEmbedder, PlanCounts, RemoteEmbedder};
use serde_json::{json, Value};

/// Flags of remote models (`openai:`, `voyage:`, `cohere:`, `gemini:` specs).
#[derive(Debug, Clone, clap::Args)]
pub struct RemoteArgs {
    /// Vectors this wide, Matryoshka-style: a remote model is asked for them (the provider
    /// truncates); a local model's are cut to their first N values and renormalised.
    #[arg(long)]
    pub dimensions: Option<usize>,
    /// Remote models: most requests in flight.
    #[arg(long, default_value_t = RemoteOptions::default().concurrency)]
    pub concurrency: usize,
    /// Remote models: most texts per request (below the provider's own limit).
    #[arg(long)]
    pub request_batch: Option<usize>,
    /// Remote models: client-side ceiling on requests per minute.
    #[arg(long)]
    pub requests_per_minute: Option<u32>,
    /// Remote models: client-side ceiling on tokens per minute.
    #[arg(long)]
    pub tokens_per_minute: Option<u64>,
    /// Remote models: retries of a request (429, 5xx, time-outs, bad answers) before failing.
    #[arg(long, default_value_t = RemoteOptions::default().max_retries)]
    pub max_retries: u32,
    /// Remote models: seconds one request may take.
    #[arg(long, default_value_t = RemoteOptions::default().timeout.as_secs_f64())]
    pub request_timeout: f64,
    /// Remote models: read the key from this variable instead of the provider's usual one
    /// (OPENAI_API_KEY, VOYAGE_API_KEY, CO_API_KEY, GEMINI_API_KEY).
    #[arg(long)]
    pub key_env: Option<String>,
    /// Remote models: USD per million tokens for the cost estimate (default: the shipped list
    /// price, when the model has one).
    #[arg(long)]
    pub price: Option<f64>,
    /// Send nothing: print, per remote model, how many texts and tokens the run would send
    /// after the cache and what that would cost, instead of the report.
    #[arg(long)]
    pub plan: bool,
}

impl RemoteArgs {
    fn options(&self) -> Result<RemoteOptions> {
        if !(self.request_timeout.is_finite() && self.request_timeout > 0.0) {
            bail!("--request-timeout must be a positive number of seconds");
        }
        if self.price.is_some_and(|p| !(p.is_finite() && p >= 0.0)) {
            bail!("--price must be a non-negative number of USD per million tokens");
        }
        Ok(RemoteOptions {
            key_variable: self.key_env.clone(),
            dimensions: self.dimensions,
            concurrency: self.concurrency,
            batch_size: self.request_batch,
            requests_per_minute: self.requests_per_minute,
            tokens_per_minute: self.tokens_per_minute,
            max_retries: self.max_retries,
            timeout: Duration::from_secs_f64(self.request_timeout),
            price_per_million_tokens: self.price,
            ..RemoteOptions::default()
        })
    }
}

/// A remote model this process loaded, behind the cache (real or planning) or bare.
enum Handle {
    Cached(Arc<CachedEmbedder<RemoteEmbedder>>),
    Bare(Arc<RemoteEmbedder>),
}

struct Used {
    display: String,
    price: Option<f64>,
    handle: Handle,
}

impl Used {
    /// What a planning cache counted; `None` unless this run only plans.
    fn plan(&self) -> Option<PlanCounts> {
        match &self.handle {
            Handle::Cached(c) => c.plan(),
            Handle::Bare(_) => None,
        }
    }

    fn usage(&self) -> Option<sage_core::RemoteUsage> {
        match &self.handle {
            Handle::Cached(c) => c.remote_usage(),
            Handle::Bare(b) => b.remote_usage(),
        }
    }
}

static USED: Mutex<Vec<Used>> = Mutex::new(Vec::new());

/// Whether `spec` names a remote model (and no file of that name exists).
pub fn is_remote(spec: &str) -> bool {
    RemoteSpec::looks_remote(spec) && !Path::new(spec).exists()
}

/// Loads the remote model `spec`, behind the cache at `cache` (or none; also reading the other
/// cache files in `siblings`); registered for the report's usage record and for `--plan`.
pub fn load(
    spec: &str,
    args: &RemoteArgs,
    cache: Option<PathBuf>,
    siblings: Option<PathBuf>,
) -> Result<Box<dyn Embedder>> {
    let parsed = RemoteSpec::parse(spec)?;
    let display = parsed.display();
    let remote = RemoteEmbedder::new(parsed, args.options()?)
        .with_context(|| format!("remote model {display}"))?;
    let price = remote.price_per_million_tokens();
    let handle = match (args.plan, cache) {
        (true, None) => bail!("--plan counts what the embedding cache lacks: drop --no-cache"),
        (true, Some(path)) => {
            let counter = remote.token_counter();
            Handle::Cached(Arc::new(CachedEmbedder::planning(remote, path, counter)?))
        }
        (false, Some(path)) => {
            let mut cache = CachedEmbedder::open(remote, path)?;
            if let Some(dir) = siblings {
                cache = cache.reading_siblings(dir);
            }
            Handle::Cached(Arc::new(cache))
        }
        (false, None) => Handle::Bare(Arc::new(remote)),
    };
    let embedder: Box<dyn Embedder> = match &handle {
        Handle::Cached(c) => Box::new(c.clone()),
        Handle::Bare(b) => Box::new(b.clone()),
    };
    USED.lock().unwrap_or_else(|e| e.into_inner()).push(Used {
        display,
        price,
        handle,
    });
    Ok(embedder)
}

/// Lets go of every remote model loaded (and so of its cache, which redb then closes cleanly: a
/// file left open reads as a killed run's to the next `sage cache verify`).
pub fn release() {
    USED.lock().unwrap_or_else(|e| e.into_inner()).clear();
}

/// Whether this run only plans (`--plan` on a remote model).
pub fn planning() -> bool {
    USED.lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .any(|u| u.plan().is_some())
}

/// The plan of every remote model loaded: texts and tokens to send, estimated cost.
pub fn plan() -> Value {
    let used = USED.lock().unwrap_or_else(|e| e.into_inner());
    let mut total = 0.0;
    let mut priced = true;
    let models: Vec<Value> = used
        .iter()
        .filter_map(|u| {
            let counts = u.plan()?;
            let cost = u.price.map(|p| counts.tokens_to_send as f64 * p / 1e6);
            match cost {
                Some(c) => total += c,
                None => priced = false,
            }
            Some(json!({
                "model": u.display,
                "cached_texts": counts.cached_texts,
                "texts_to_send": counts.texts_to_send,
                "tokens_to_send": counts.tokens_to_send,
                "usd_per_million_tokens": u.price,
                "estimated_cost_usd": cost,
            }))
        })
        .collect();
    json!({
        "plan": models,
        // null when a model has no price: the total would understate
        "estimated_cost_usd": priced.then_some(total),
        "prices_as_of": PRICES_AS_OF,
    })
}

/// The usage record of every remote model loaded (empty when none).
pub fn usage() -> Vec<sage_core::RemoteUsage> {
    let used = USED.lock().unwrap_or_else(|e| e.into_inner());
    used.iter().filter_map(Used::usage).collect()
}

/// What a command writes as its JSON result: the plan when planning, else `report` with a
/// `remote_usage` list added when remote models were used. Prints the usage on stderr too.
pub fn finish(report: &impl serde::Serialize) -> Result<Value> {
    if planning() {
        let plan = plan();
        eprintln!("sage: plan only: nothing was sent");
        return Ok(plan);
    }
    let mut value = serde_json::to_value(report)?;
    let usage = usage();
    for u in &usage {
        eprintln!(
            "sage: {}:{} at {}: {} requests ({} retried), {} texts, {} tokens{}{}",
            u.protocol,
            u.model,
            u.host,
            u.requests,
            u.retries,
            u.texts,
            u.tokens,
            if u.truncated > 0 {
                format!(", {} truncated", u.truncated)
            } else {
                String::new()
            },
            u.cost_usd
                .map(|c| format!(", about ${c:.4}"))
                .unwrap_or_default()
        );
    }
    if !usage.is_empty() {
        if let Value::Object(map) = &mut value {
            map.insert("remote_usage".into(), serde_json::to_value(&usage)?);
        }
    }
    Ok(value)
}
