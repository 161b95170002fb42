//! Remote embedders: the API models the seed papers evaluate and any embedding server a team runs,
//! behind the same [`Embedder`] trait as a local folder.
//!
//! A model spec `PROTOCOL:MODEL[@BASE_URL]` names one ([`RemoteSpec`]): `openai:text-embedding-3-small`,
//! `cohere:embed-v4.0`, `voyage:voyage-3-large`, `gemini:gemini-embedding-001`, or
//! `openai:all-MiniLM-L6-v2@http://127.0.0.1:7997/v1` for a server that speaks OpenAI's protocol.
//!
//! # What a paying user can rely on
//! - Texts go out in batches within the provider's documented limits ([`Limits`]), at most
//!   `concurrency` requests in flight, under optional requests/min and tokens/min ceilings.
//! - 429, 5xx, time-outs, broken connections and malformed answers are retried with exponential
//!   backoff and seeded jitter, honouring `Retry-After`; the last failure is an error naming the
//!   provider, the status and the reason. A bad answer (wrong count, duplicate index, ragged or
//!   non-finite vectors, a cut body) is never turned into a vector.
//! - Every batch is handed on the moment it arrives ([`Embedder::embed_batches`]), so the
//!   embedding cache stores it at once: a killed run, re-run, sends only what was not answered.
//! - Keys travel only in the request header. Identities, results and errors carry the server's
//!   host, never a key or a URL password ([`sage_redact`]).

#![deny(missing_docs)]

pub mod answer;
mod client;
mod error;
mod protocol;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use ndarray::Array2;
use sage_core::{BatchSink, Embedder, EmbedderIdentity, RemoteUsage, Role, SageError};
use sage_redact::{redact_url, url_host};

pub use answer::Answer;
pub use error::{RemoteError, Result};
pub use protocol::{Limits, Protocol};

/// A parsed `PROTOCOL:MODEL[@BASE_URL]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteSpec {
    /// The wire protocol.
    pub protocol: Protocol,
    /// The provider's (or server's) model name.
    pub model: String,
    /// The API root, e.g. `https://api.openai.com/v1`; the provider's own when the spec names
    /// none. May hold `user:pass@`, which only the request sees.
    pub base_url: String,
    /// Whether the spec named its own base URL (a self-hosted server, where a key is optional).
    pub custom_base: bool,
}

impl RemoteSpec {
    /// Whether `spec` is written as a remote spec (`openai:`, `voyage:`, `cohere:`, `gemini:`).
    pub fn looks_remote(spec: &str) -> bool {
        sage_core::remote_model_name(spec).is_some()
    }

    /// Parses `spec`; the error says what is wrong with it.
    pub fn parse(spec: &str) -> Result<RemoteSpec> {
        let bad = |why: &str| RemoteError::Remote {
            provider: "spec".into(),
            message: format!(
                "{:?}: {why} (expected PROTOCOL:MODEL[@BASE_URL])",
                redact_url(spec)
            ),
        };
        let (protocol, rest) = spec.split_once(':').ok_or_else(|| bad("no protocol"))?;
        let protocol = Protocol::from_name(protocol)
            .ok_or_else(|| bad("protocol must be openai, voyage, cohere or gemini"))?;
        let (model, base) = match rest.find("@http://").or_else(|| rest.find("@https://")) {
            Some(at) => (&rest[..at], Some(&rest[at + 1..])),
            None if rest.contains('@') => {
                return Err(bad(
                    "the base URL after @ must start with http:// or https://",
                ))
            }
            None => (rest, None),
        };
        if model.is_empty() {
            return Err(bad("empty model name"));
        }
        Ok(RemoteSpec {
            protocol,
            model: model.to_owned(),
            base_url: base
                .unwrap_or(protocol.default_base_url())
                .trim_end_matches('/')
                .to_owned(),
            custom_base: base.is_some(),
        })
    }

    /// The spec as it may be shown: a URL password replaced.
    pub fn display(&self) -> String {
        if self.custom_base {
            format!(
                "{}:{}@{}",
                self.protocol.name(),
                self.model,
                redact_url(&self.base_url)
            )
        } else {
            format!("{}:{}", self.protocol.name(), self.model)
        }
    }
}

/// List prices in USD per million input tokens, as published by each provider (checked
/// 2025-10; [`PRICES_AS_OF`]). A config's or a command's own price takes precedence.
pub const DEFAULT_PRICES: &[(&str, f64)] = &[
    ("openai:text-embedding-3-small", 0.02),
    ("openai:text-embedding-3-large", 0.13),
    ("openai:text-embedding-ada-002", 0.10),
    ("voyage:voyage-3-large", 0.18),
    ("voyage:voyage-3.5", 0.06),
    ("voyage:voyage-3.5-lite", 0.02),
    ("cohere:embed-v4.0", 0.12),
    ("cohere:embed-english-v3.0", 0.10),
    ("gemini:gemini-embedding-001", 0.15),
];

/// When [`DEFAULT_PRICES`] were taken from the providers' price pages.
pub const PRICES_AS_OF: &str = "2025-10";

/// The shipped price of `protocol:model` (a self-hosted server has none).
pub fn default_price(spec: &RemoteSpec) -> Option<f64> {
    if spec.custom_base {
        return None;
    }
    let name = format!("{}:{}", spec.protocol.name(), spec.model);
    DEFAULT_PRICES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, p)| *p)
}

/// How a remote embedder behaves; every field has a default suited to a paid API.
#[derive(Clone, Debug)]
pub struct RemoteOptions {
    /// The key; default: the protocol's variable ([`Protocol::key_variable`]) or `key_variable`.
    pub api_key: Option<String>,
    /// Read the key from this variable instead of the protocol's usual one.
    pub key_variable: Option<String>,
    /// Ask for vectors this wide (Matryoshka truncation on the provider's side).
    pub dimensions: Option<usize>,
    /// Most requests in flight.
    pub concurrency: usize,
    /// Most texts per request, below the provider's own limit.
    pub batch_size: Option<usize>,
    /// Client-side ceiling on requests per minute.
    pub requests_per_minute: Option<u32>,
    /// Client-side ceiling on tokens per minute.
    pub tokens_per_minute: Option<u64>,
    /// Retries of one request before giving up.
    pub max_retries: u32,
    /// Time limit of one request, answer included.
    pub timeout: Duration,
    /// First backoff; doubled per retry up to `max_backoff`, with full jitter.
    pub initial_backoff: Duration,
    /// Longest backoff. A `Retry-After` may ask for longer, and is honoured up to the longer of
    /// this and `timeout`; a server asking for more fails the request at once.
    pub max_backoff: Duration,
    /// USD per million tokens; default: [`default_price`].
    pub price_per_million_tokens: Option<f64>,
    /// Seed of the backoff jitter.
    pub seed: u64,
}

impl Default for RemoteOptions {
    fn default() -> Self {
        RemoteOptions {
            api_key: None,
            key_variable: None,
            dimensions: None,
            concurrency: 4,
            batch_size: None,
            requests_per_minute: None,
            tokens_per_minute: None,
            max_retries: 6,
            timeout: Duration::from_secs(120),
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(60),
            price_per_million_tokens: None,
            seed: 1337,
        }
    }
}

/// An embedding model behind an HTTP API.
pub struct RemoteEmbedder {
    spec: RemoteSpec,
    options: RemoteOptions,
    limits: Limits,
    identity: EmbedderIdentity,
    client: client::Client,
    dimension: AtomicUsize,
    price: Option<f64>,
    texts: AtomicU64,
    tokens: AtomicU64,
    truncated: AtomicU64,
    /// Serialises whole calls: two callers would otherwise split the concurrency budget.
    call: Mutex<()>,
}

impl RemoteEmbedder {
    /// A client of `spec`. Fails early when a provider endpoint has no key; sends nothing.
    pub fn new(spec: RemoteSpec, mut options: RemoteOptions) -> Result<RemoteEmbedder> {
        let variable = options
            .key_variable
            .clone()
            .unwrap_or_else(|| spec.protocol.key_variable().to_owned());
        if options.api_key.is_none() {
            options.api_key = std::env::var(&variable).ok().filter(|k| !k.is_empty());
        }
        if options.api_key.is_none() && !spec.custom_base {
            return Err(RemoteError::Remote {
                provider: spec.protocol.name().into(),
                message: format!("no API key: set {variable} (or name another variable)"),
            });
        }
        if options.concurrency == 0 {
            return Err(RemoteError::Remote {
                provider: spec.protocol.name().into(),
                message: "concurrency must be at least 1".into(),
            });
        }
        let mut limits = spec.protocol.limits(&spec.model);
        if let Some(b) = options.batch_size {
            limits.max_inputs = limits.max_inputs.min(b.max(1));
        }
        let path = spec
            .base_url
            .split_once("://")
            .map_or("", |(_, r)| r)
            .split_once('/')
            .map_or("", |(_, p)| p)
            .split(['?', '#'])
            .next()
            .unwrap_or("");
        let identity = EmbedderIdentity {
            model_id: format!("{}:{}", spec.protocol.name(), spec.model),
            // the server is part of what produced the vectors: another host may serve another
            // model under the same name
            revision: Some(format!("{}/{path}", url_host(&spec.base_url))),
            pooling: match options.dimensions {
                Some(d) => format!("remote:dims={d}"),
                None => "remote".into(),
            },
            normalize: false,
            max_length: limits.max_input_tokens,
        };
        let price = options
            .price_per_million_tokens
            .or_else(|| default_price(&spec));
        let client = client::Client::new(&spec, &options);
        Ok(RemoteEmbedder {
            dimension: AtomicUsize::new(options.dimensions.unwrap_or(0)),
            spec,
            limits,
            identity,
            client,
            price,
            options,
            texts: AtomicU64::new(0),
            tokens: AtomicU64::new(0),
            truncated: AtomicU64::new(0),
            call: Mutex::new(()),
        })
    }

    /// The spec this client serves.
    pub fn spec(&self) -> &RemoteSpec {
        &self.spec
    }

    /// The limits batches respect.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The price used for cost estimates, USD per million tokens.
    pub fn price_per_million_tokens(&self) -> Option<f64> {
        self.price
    }

    /// The client's token estimate of a text as sent, for a planning cache: cl100k, which is
    /// OpenAI's own tokenizer and within a few percent of the others on English, capped at the
    /// input limit.
    pub fn token_counter(&self) -> Box<dyn Fn(&str) -> u64 + Send + Sync> {
        let max = self.limits.max_input_tokens;
        Box::new(move |text| sage_tokens::count(text).min(max) as u64)
    }

    /// `texts` cut to the input limit where the client must cut them; counts the over-long.
    fn prepare<'a>(&self, texts: &[&'a str]) -> (Vec<std::borrow::Cow<'a, str>>, Vec<u64>) {
        let mut prepared = Vec::with_capacity(texts.len());
        let mut tokens = Vec::with_capacity(texts.len());
        for &text in texts {
            let n = sage_tokens::count(text);
            if n > self.limits.max_input_tokens {
                self.truncated.fetch_add(1, Ordering::Relaxed);
                if self.limits.client_truncates {
                    prepared.push(std::borrow::Cow::Owned(sage_tokens::truncate(
                        text,
                        self.limits.max_input_tokens,
                    )));
                    tokens.push(self.limits.max_input_tokens as u64);
                    continue;
                }
            }
            prepared.push(std::borrow::Cow::Borrowed(text));
            tokens.push(n.min(self.limits.max_input_tokens) as u64);
        }
        (prepared, tokens)
    }

    /// Consecutive batches within the per-request limits: `(start, end)` ranges.
    fn batches(&self, tokens: &[u64]) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut start = 0;
        let mut sum = 0u64;
        for (i, &t) in tokens.iter().enumerate() {
            let full = i - start >= self.limits.max_inputs
                || (i > start && sum + t > self.limits.max_request_tokens as u64);
            if full {
                out.push((start, i));
                start = i;
                sum = 0;
            }
            sum += t;
        }
        if start < tokens.len() {
            out.push((start, tokens.len()));
        }
        out
    }

    fn backend_error(&self, e: RemoteError) -> SageError {
        SageError::backend(format!("embedding with {}", self.spec.display()), e)
    }
}

impl Embedder for RemoteEmbedder {
    fn identity(&self) -> &EmbedderIdentity {
        &self.identity
    }

    /// The requested width, or the width of the answers so far; 0 before the first answer when
    /// no width was requested.
    fn dimension(&self) -> usize {
        self.dimension.load(Ordering::Relaxed)
    }

    /// The client's estimate (see [`RemoteEmbedder::token_counter`]): what is billed is only
    /// known from the answers, in [`Embedder::remote_usage`].
    fn count_tokens(&self, texts: &[&str]) -> Option<Vec<usize>> {
        let max = self.limits.max_input_tokens;
        Some(
            texts
                .iter()
                .map(|t| sage_tokens::count(t).min(max))
                .collect(),
        )
    }

    fn embed(&self, texts: &[&str]) -> sage_core::Result<Array2<f32>> {
        self.embed_as(texts, Role::Plain)
    }

    fn role_variant(&self, role: Role) -> Option<String> {
        self.spec
            .protocol
            .role_field(role)
            .map(|f| format!("{}={f}", self.spec.protocol.name()))
    }

    fn embed_as(&self, texts: &[&str], role: Role) -> sage_core::Result<Array2<f32>> {
        let mut rows: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        self.embed_batches(texts, role, &mut |start, vectors| {
            for (k, row) in vectors.rows().into_iter().enumerate() {
                rows[start + k] = Some(row.to_vec());
            }
            Ok(())
        })?;
        let width = rows
            .first()
            .and_then(|r| r.as_ref())
            .map_or(self.dimension(), Vec::len);
        let mut out = Array2::zeros((texts.len(), width));
        for (i, row) in rows.into_iter().enumerate() {
            out.row_mut(i).assign(&ndarray::ArrayView1::from(
                &row.expect("every row delivered"),
            ));
        }
        Ok(out)
    }

    fn embed_batches(
        &self,
        texts: &[&str],
        role: Role,
        sink: &mut BatchSink<'_>,
    ) -> sage_core::Result<()> {
        if texts.is_empty() {
            return Ok(());
        }
        let _call = self.call.lock().unwrap_or_else(|e| e.into_inner());
        let (prepared, tokens) = self.prepare(texts);
        let batches = self.batches(&tokens);
        let prepared: Vec<&str> = prepared.iter().map(|c| c.as_ref()).collect();
        let expected = self.dimension();
        let result = self.client.run(
            &prepared,
            &tokens,
            &batches,
            role,
            &self.dimension,
            &mut |start, answer: Answer, estimated_tokens| {
                let width = answer.vectors[0].len();
                let known = match self.dimension.compare_exchange(
                    0,
                    width,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => width,
                    Err(w) => w,
                };
                if width != known || (expected != 0 && width != expected) {
                    return Err(RemoteError::Remote {
                        provider: self.spec.protocol.name().into(),
                        message: format!(
                            "vectors {width} wide where {} were {}",
                            if expected != 0 {
                                "requested"
                            } else {
                                "earlier answers"
                            },
                            known.max(expected)
                        ),
                    });
                }
                self.texts
                    .fetch_add(answer.vectors.len() as u64, Ordering::Relaxed);
                self.tokens
                    .fetch_add(answer.tokens.unwrap_or(estimated_tokens), Ordering::Relaxed);
                let n = answer.vectors.len();
                let flat: Vec<f32> = answer.vectors.into_iter().flatten().collect();
                let matrix = Array2::from_shape_vec((n, width), flat).expect("checked widths");
                sink(start, matrix).map_err(|e| RemoteError::Remote {
                    provider: self.spec.protocol.name().into(),
                    message: format!("storing an answer: {e}"),
                })
            },
        );
        result.map_err(|e| self.backend_error(e))
    }

    fn delivers_batches(&self) -> bool {
        true
    }

    fn remote_usage(&self) -> Option<RemoteUsage> {
        let tokens = self.tokens.load(Ordering::Relaxed);
        let stats = self.client.stats();
        Some(RemoteUsage {
            protocol: self.spec.protocol.name().into(),
            model: self.spec.model.clone(),
            host: url_host(&self.spec.base_url),
            dimensions: self.dimension(),
            requests: stats.requests,
            texts: self.texts.load(Ordering::Relaxed),
            tokens,
            retries: stats.retries,
            truncated: self.truncated.load(Ordering::Relaxed),
            cost_usd: self.price.map(|p| tokens as f64 * p / 1e6),
        })
    }
}

impl std::fmt::Debug for RemoteEmbedder {
    // by hand: the options hold the key
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteEmbedder")
            .field("spec", &self.spec.display())
            .field("concurrency", &self.options.concurrency)
            .finish_non_exhaustive()
    }
}
