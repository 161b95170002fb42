//! Remote models on the command line: their flags, and the models a command loaded, from which
//! it writes the plan before spending or the usage record every report of a run that used one
//! carries.
//!
//! A command holds its [`Loaded`] models itself (no global list), so that whichever command writes
//! a report can add what they were asked for and what it cost, and `--plan` can print what would
//! be sent instead of the report.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Result};
use sage_core::{PlannedModel, RemotePlan};
use sage_embed::{CacheUse, LoadedModel, PlanCounts};
use sage_remote::{RemoteOptions, PRICES_AS_OF};
use serde_json::Value;

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
    pub(crate) fn options(&self) -> Result<RemoteOptions> {
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

/// The models a command loaded. Dropped once the command is done with them: each cache's hits
/// are said on stderr, and the caches close cleanly (a file left open reads as a killed run's to
/// the next `sage cache verify`).
#[derive(Default)]
pub struct Loaded {
    live: Vec<LoadedModel>,
    /// Models let go of before the command ends (PTEB's compared encoders), as they were left.
    done: Vec<Used>,
}

/// What a model did, read once it is no longer used.
#[derive(Clone)]
struct Used {
    name: String,
    price: Option<f64>,
    plan: Option<PlanCounts>,
    usage: Option<sage_core::RemoteUsage>,
    cache: Option<CacheUse>,
    work: Option<sage_core::EmbeddingWork>,
}

impl Used {
    fn of(model: &LoadedModel) -> Used {
        Used {
            name: model.name().to_owned(),
            price: model.price_per_million_tokens(),
            plan: model.plan(),
            usage: model.usage(),
            cache: model.cache_use(),
            work: model.work(),
        }
    }
}

impl Loaded {
    /// Keeps `model` for the report, and hands out its embedder.
    pub fn keep(&mut self, model: LoadedModel) -> Arc<dyn sage_core::Embedder> {
        let embedder = model.embedder();
        self.live.push(model);
        embedder
    }

    /// Takes over what `other`'s models did and lets go of the models themselves (their weights
    /// and caches), for a command that goes on with others.
    pub fn absorb(&mut self, mut other: Loaded) {
        let live = std::mem::take(&mut other.live);
        self.done.extend(live.iter().map(Used::of));
        self.done.append(&mut other.done);
    }

    fn used(&self) -> Vec<Used> {
        let mut used: Vec<Used> = self.live.iter().map(Used::of).collect();
        used.extend(self.done.iter().cloned());
        used
    }

    /// Whether this run only plans (`--plan` on a remote model).
    pub fn planning(&self) -> bool {
        self.used().iter().any(|m| m.plan.is_some())
    }

    /// The plan of every remote model loaded: texts and tokens to send, estimated cost.
    pub fn plan(&self) -> RemotePlan {
        let mut total = 0.0;
        let mut priced = true;
        let models: Vec<PlannedModel> = self
            .used()
            .iter()
            .filter_map(|m| {
                let counts = m.plan?;
                let cost = m.price.map(|p| counts.tokens_to_send as f64 * p / 1e6);
                match cost {
                    Some(c) => total += c,
                    None => priced = false,
                }
                Some(PlannedModel {
                    model: m.name.clone(),
                    cached_texts: counts.cached_texts,
                    texts_to_send: counts.texts_to_send,
                    tokens_to_send: counts.tokens_to_send,
                    usd_per_million_tokens: m.price,
                    estimated_cost_usd: cost,
                })
            })
            .collect();
        RemotePlan {
            plan: models,
            estimated_cost_usd: priced.then_some(total),
            prices_as_of: PRICES_AS_OF.to_owned(),
        }
    }

    /// What each model embedded in this command, for its result file.
    pub fn work(&self) -> Vec<sage_core::EmbeddingWork> {
        self.used().into_iter().filter_map(|m| m.work).collect()
    }

    /// The usage record of every remote model loaded (empty when none).
    pub fn usage(&self) -> Vec<sage_core::RemoteUsage> {
        self.used().into_iter().filter_map(|m| m.usage).collect()
    }

    /// What a command writes as its JSON result: the plan when planning, else `report` with a
    /// `remote_usage` list ([`sage_core::ReportUsage`]) added when remote models were used.
    /// Prints the usage on stderr too.
    pub fn finish(&self, report: &impl serde::Serialize) -> Result<Value> {
        if self.planning() {
            let plan = self.plan();
            eprintln!("sage: plan only: nothing was sent");
            return Ok(serde_json::to_value(plan)?);
        }
        let mut value = serde_json::to_value(report)?;
        let usage = sage_core::ReportUsage {
            remote_usage: self.usage(),
        };
        for u in &usage.remote_usage {
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
        // a report that is no object (a command's `()`) has nowhere to carry it
        if let (Value::Object(map), Value::Object(usage)) =
            (&mut value, serde_json::to_value(&usage)?)
        {
            map.extend(usage);
        }
        Ok(value)
    }
}

impl Drop for Loaded {
    fn drop(&mut self) {
        for used in self.used().into_iter().filter(|m| m.plan.is_none()) {
            let Some(cache) = used.cache else {
                continue;
            };
            let s = cache.stats;
            eprintln!(
                "sage: embedding cache {}: {} hits{}, {} embedded",
                cache.path.display(),
                s.hits,
                if s.from_siblings > 0 {
                    format!(" ({} from other cache files)", s.from_siblings)
                } else {
                    String::new()
                },
                s.misses
            );
            if let Some(why) = cache.corruption {
                eprintln!(
                    "sage: warning: embedding cache {}: {} corrupt entries recomputed and \
                     overwritten (first: {why})",
                    cache.path.display(),
                    s.corrupt
                );
            }
        }
    }
}
