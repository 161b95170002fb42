//! # sage-throughput
//!
//! What a similarity costs to run, measured on the host that runs it: for an embedding model,
//! texts and tokens per second at three input lengths (short, about 128 tokens, and the model's
//! window), single-text latency (p50, p95), load time and the process's peak memory; for a
//! classical metric, pairs per second on the same texts; for a model behind an API, latency per
//! request, tokens billed, retries and what the sample cost.
//!
//! Design:
//! - **The same texts for everyone.** Lengths are told by one yardstick, cl100k tokens
//!   ([`texts`]), so a comparison times every model on the same inputs; each model's own count
//!   of what it read gives its tokens per second.
//! - **The model, not its cache.** A cache in front of the model is bypassed
//!   ([`sage_core::Embedder::uncached`]): a run that read vectors back would time the cache.
//! - **Repeated, with the spread.** Each length is embedded once unmeasured (allocations, lazily
//!   built kernels), then `repeats` times; the report keeps every run's seconds, the best and the
//!   median, and the spread ((slowest − fastest) / median), so two models whose figures differ by
//!   less than their spread are not told apart.
//! - **Mixed lengths.** Every length's texts are also embedded in one call and set against the
//!   sum of their separate calls: real inputs mix lengths, and a batch planner that pads them
//!   together makes the mix slower than its parts.
//! - **Timed in rounds.** Each round times every length and the mixed call (last in even
//!   rounds, first in odd ones), and the mixed call is set against the parts of its own round:
//!   on a shared host whose speed moves by a third within minutes, runs timed apart compare the
//!   host's moods, not the calls.
//! - **A bounded bill.** A remote model gets `remote_texts_per_length` texts per length, once,
//!   and no warm-up: what the sample cost is in the report. `sage run throughput --plan` says
//!   what it would send before anything is: a planning cache's `uncached` view counts every
//!   text the timed calls give it, cached or repeated, as they would all be sent.
//! - **Host in every number.** The report carries the host (CPU model, cores, GPUs) and the
//!   threads the process was allowed: a speed means nothing without the machine it was measured
//!   on.
#![deny(missing_docs)]

pub mod texts;

use std::time::Instant;

use sage_core::{Embedder, Host, RemoteUsage, RunSeed, Similarity, SimilarityKind};
use sage_data::{DataRoot, RowSelection};
use serde::{Deserialize, Serialize};

pub use texts::{Bucket, Length, KINDS, METRIC_WINDOW_TOKENS};

/// The datasets of a run without datasets: STS sentences (short texts) and essays (long).
pub const DEFAULT_DATASETS: [(&str, &str); 2] =
    [("stsb", "test"), ("paul-graham-essays", "sample")];

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ThroughputError {
    /// A dataset could not be read.
    #[error(transparent)]
    Data(#[from] sage_data::DataError),
    /// The model or metric failed.
    #[error(transparent)]
    Core(#[from] sage_core::SageError),
    /// A dataset of a kind that holds no texts to time.
    #[error(
        "{dataset}: a {kind} dataset has no texts to time; give sentence or text pairs, \
         documents, or classification or clustering texts"
    )]
    Kind {
        /// `name/split`.
        dataset: String,
        /// Its kind.
        kind: &'static str,
    },
    /// The datasets gave no text of any length.
    #[error("the datasets hold no text to time")]
    NoTexts,
    /// The model answered with the wrong number of rows.
    #[error("{model} returned {got} vectors for {asked} texts")]
    Rows {
        /// The model.
        model: String,
        /// Texts asked for.
        asked: usize,
        /// Rows returned.
        got: usize,
    },
}

/// Result alias of this crate.
pub type Result<T, E = ThroughputError> = std::result::Result<T, E>;

sage_core::suite_options! {
    /// How a run times its subject: the one declaration the flags, `--options`, bench.toml and
    /// Python keywords all read, with each field's range.
    #[derive(Clone, Debug)]
    pub struct Options {
        /// Texts per length.
        pub texts_per_length: usize = 128, sage_core::OptionSpec::whole(1, 100_000);
        /// Timed runs of each length after the unmeasured one.
        pub repeats: usize = 3, sage_core::OptionSpec::whole(1, 100);
        /// Single-text calls timed for the latency.
        pub latency_calls: usize = 32, sage_core::OptionSpec::whole(1, 10_000);
        /// Texts per length (and latency calls) a remote model is sent, once: they are billed.
        pub remote_texts_per_length: usize = 16, sage_core::OptionSpec::whole(1, 1_000);
        /// Rows read per dataset for the pool of texts.
        pub max_rows: usize = 2_000, sage_core::OptionSpec::whole(1, 10_000_000);
        /// Run seed (which rows, which texts): the request's, never an option.
        #[serde(skip)]
        pub seed: RunSeed = RunSeed::default(), sage_core::OptionSpec::run_seed();
    }
}

/// Seconds of repeated runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    /// Every timed run, in order.
    pub runs: Vec<f64>,
    /// The fastest.
    pub best: f64,
    /// The median.
    pub median: f64,
    /// (slowest − fastest) / median: how far apart the runs were.
    pub spread: f64,
}

impl Timing {
    fn of(runs: Vec<f64>) -> Timing {
        let mut sorted = runs.clone();
        sorted.sort_by(f64::total_cmp);
        let median = percentile(&sorted, 50.0);
        let (best, slowest) = (sorted[0], sorted[sorted.len() - 1]);
        Timing {
            runs,
            best,
            median,
            spread: if median > 0.0 {
                (slowest - best) / median
            } else {
                0.0
            },
        }
    }

    /// `amount` per second at the best and the median run.
    fn rate(&self, amount: f64) -> Rate {
        Rate {
            best: amount / self.best.max(f64::MIN_POSITIVE),
            median: amount / self.median.max(f64::MIN_POSITIVE),
        }
    }
}

/// Something per second.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    /// At the fastest run.
    pub best: f64,
    /// At the median run.
    pub median: f64,
}

/// The `p`th percentile of ascending `sorted` values, linear between ranks (numpy's default).
fn percentile(sorted: &[f64], p: f64) -> f64 {
    let at = (sorted.len() - 1) as f64 * p / 100.0;
    let (low, high) = (at.floor() as usize, at.ceil() as usize);
    sorted[low] + (sorted[high] - sorted[low]) * (at - low as f64)
}

/// One length, timed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LengthReport {
    /// Which length.
    pub length: Length,
    /// Texts embedded per run (a metric: pairs scored).
    pub texts: usize,
    /// Mean yardstick (cl100k) tokens of a text.
    pub mean_yardstick_tokens: f64,
    /// Tokens the model read per run, by its own count (its window cuts longer texts); `None`
    /// for a metric, or a model that cannot count them.
    pub model_tokens: Option<u64>,
    /// Seconds per run.
    pub seconds: Timing,
    /// Texts per second (a metric: pairs per second).
    pub per_second: Rate,
    /// The model's tokens per second.
    pub tokens_per_second: Option<Rate>,
}

/// Single-text calls, timed one by one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Calls timed.
    pub calls: usize,
    /// Median milliseconds.
    pub p50_ms: f64,
    /// 95th percentile milliseconds.
    pub p95_ms: f64,
    /// The slowest call.
    pub max_ms: f64,
}

/// What the timed sample cost at a remote model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RemoteCost {
    /// HTTP requests answered, retried ones included.
    pub requests: u64,
    /// Tokens billed (the server's count where it gives one).
    pub tokens: u64,
    /// Requests repeated after a 429, a 5xx, a time-out or a broken connection.
    pub retries: u64,
    /// What the sample cost; `None` without a price.
    pub cost_usd: Option<f64>,
    /// The price used.
    pub usd_per_million_tokens: Option<f64>,
}

/// Every length in one call against the same texts in separate calls: a batch planner that pads
/// short texts to the length of long ones makes the mix slower than its parts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Mixed {
    /// Texts in the one call: every length's.
    pub texts: usize,
    /// Seconds per run of the one call.
    pub seconds: Timing,
    /// The lengths' best runs added up.
    pub parts_best: f64,
    /// The lengths' median runs added up.
    pub parts_median: f64,
    /// Each round's mixed call over the same round's lengths added up (below 1: the mix was
    /// faster). Empty in a report written before rounds were paired.
    #[serde(default)]
    pub over_parts: Vec<f64>,
}

impl Mixed {
    /// The mixed call over its parts: the median of the paired rounds, or (a report written
    /// before rounds were paired) the median call over the medians' sum.
    pub fn over_parts(&self) -> f64 {
        if self.over_parts.is_empty() {
            return self.seconds.median / self.parts_median.max(f64::MIN_POSITIVE);
        }
        let mut sorted = self.over_parts.clone();
        sorted.sort_by(f64::total_cmp);
        percentile(&sorted, 50.0)
    }
}

/// What running a similarity costs on this host.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThroughputReport {
    /// The similarity timed (a model's id, a metric's name).
    pub similarity: String,
    /// A metric or an embedding model.
    pub kind: SimilarityKind,
    /// Each length the datasets gave, shortest first.
    pub lengths: Vec<LengthReport>,
    /// Every length at once (local models with more than one length).
    pub mixed: Option<Mixed>,
    /// Single short texts, one call each (models only).
    pub latency: Option<Latency>,
    /// Seconds the model took to load, where it says.
    pub load_seconds: Option<f64>,
    /// Where and in what precision the model computed (`cpu f32`, `cuda:0 f16`, `cpu f32 amx-bf16x3`), where it says;
    /// a metric: `cpu`.
    pub compute: Option<String>,
    /// The process's peak resident memory once the run is done (Linux), MiB.
    pub peak_resident_mib: Option<f64>,
    /// Threads the process may use (RAYON_NUM_THREADS, else the cores available).
    pub threads: usize,
    /// Whether a cache in front of the model was bypassed to time the model.
    pub cache_bypassed: bool,
    /// A remote model's bill for the sample.
    pub remote: Option<RemoteCost>,
    /// Timed runs per length (a remote model: 1), after one unmeasured run (a remote model:
    /// none).
    pub repeats: usize,
    /// The machine.
    pub host: Host,
    /// The rows the texts came from.
    pub datasets: Vec<RowSelection>,
}

impl sage_core::SuiteReport for ThroughputReport {
    /// None: speeds are compared per length, beside quality, not ranked as one score.
    fn score(&self) -> Option<f64> {
        None
    }
    fn rows_used(&self) -> Vec<sage_core::RowsUsed> {
        self.datasets.iter().cloned().map(Into::into).collect()
    }
}

/// Threads this process may use for its work.
fn threads() -> usize {
    std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
}

/// VmHWM of /proc/self/status: the most this process has held in memory.
fn peak_resident_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn seconds(f: impl FnOnce() -> Result<()>) -> Result<f64> {
    let start = Instant::now();
    f()?;
    Ok(start.elapsed().as_secs_f64())
}

/// The pool of texts of a run: `datasets` on `root`, as [`texts::load_pool`] reads them.
pub fn pool(
    root: &DataRoot,
    datasets: &[(&str, &str)],
    options: &Options,
) -> Result<(Vec<String>, Vec<RowSelection>)> {
    texts::load_pool(root, datasets, options.max_rows, options.seed)
}

/// Times `model` on texts of `pool` (see the crate docs); `datasets` says where they came from.
pub fn measure_model(
    model: &dyn Embedder,
    pool: &[String],
    datasets: Vec<RowSelection>,
    options: &Options,
) -> Result<ThroughputReport> {
    let timed = model.uncached().unwrap_or(model);
    let before = timed.remote_usage();
    let remote = before.is_some();
    let per_length = if remote {
        options
            .remote_texts_per_length
            .min(options.texts_per_length)
    } else {
        options.texts_per_length
    };
    let repeats = if remote { 1 } else { options.repeats };
    // a model that states no window (a Python encoder may not) is timed at a metric's
    let window = match timed.identity().max_length {
        0 => METRIC_WINDOW_TOKENS,
        n => n,
    };
    let buckets = texts::buckets(pool, window, per_length, options.seed);
    if buckets.is_empty() {
        return Err(ThroughputError::NoTexts);
    }
    let name = timed.identity().model_id.clone();
    let embed = |texts: &[&str]| -> Result<()> {
        let rows = timed.embed(texts)?.nrows();
        if rows != texts.len() {
            return Err(ThroughputError::Rows {
                model: name.clone(),
                asked: texts.len(),
                got: rows,
            });
        }
        Ok(())
    };
    let texts: Vec<Vec<&str>> = buckets
        .iter()
        .map(|b| b.texts.iter().map(String::as_str).collect())
        .collect();
    // a remote model is not sent the sample twice
    let all: Option<Vec<&str>> =
        (!remote && buckets.len() > 1).then(|| texts.iter().flatten().copied().collect());
    if !remote {
        for call in texts.iter().chain(&all) {
            embed(call)?;
        }
    }
    // Round by round, every length and the mixed call: a run of each is timed within seconds
    // of the others, so a host that slows down for a minute slows a round, not one length.
    // The mixed call goes last in even rounds and first in odd ones, so that neither side of
    // "mixed ÷ parts" is always the one timed on warmer caches.
    let mut runs = vec![Vec::with_capacity(repeats); texts.len()];
    let mut mixed_runs = Vec::with_capacity(repeats);
    let mut over_parts = Vec::with_capacity(repeats);
    let time_mixed = || all.as_ref().map(|all| seconds(|| embed(all))).transpose();
    for round in 0..repeats {
        let mixed_first = round % 2 == 1;
        let mut once = if mixed_first { time_mixed()? } else { None };
        for (call, times) in texts.iter().zip(&mut runs) {
            times.push(seconds(|| embed(call))?);
        }
        if !mixed_first {
            once = time_mixed()?;
        }
        if let Some(once) = once {
            let parts: f64 = runs.iter().map(|times| times[times.len() - 1]).sum();
            mixed_runs.push(once);
            over_parts.push(once / parts.max(f64::MIN_POSITIVE));
        }
    }
    let mut lengths = Vec::new();
    for ((bucket, call), times) in buckets.iter().zip(&texts).zip(runs) {
        let model_tokens = timed
            .count_tokens(call)
            .map(|counts| counts.iter().sum::<usize>() as u64);
        lengths.push(length_report(bucket, times, model_tokens));
    }
    let mixed = all.map(|all| Mixed {
        texts: all.len(),
        seconds: Timing::of(mixed_runs),
        parts_best: lengths.iter().map(|l| l.seconds.best).sum(),
        parts_median: lengths.iter().map(|l| l.seconds.median).sum(),
        over_parts,
    });
    let short = &buckets[0].texts;
    let calls = if remote {
        options.latency_calls.min(options.remote_texts_per_length)
    } else {
        options.latency_calls
    };
    let mut latencies = (0..calls)
        .map(|i| seconds(|| embed(&[short[i % short.len()].as_str()])))
        .collect::<Result<Vec<f64>>>()?;
    latencies.sort_by(f64::total_cmp);
    let latency = Latency {
        calls,
        p50_ms: percentile(&latencies, 50.0) * 1e3,
        p95_ms: percentile(&latencies, 95.0) * 1e3,
        max_ms: latencies[latencies.len() - 1] * 1e3,
    };
    let remote = match (before, timed.remote_usage()) {
        (Some(before), Some(after)) => Some(remote_cost(&before, &after)),
        _ => None,
    };
    Ok(ThroughputReport {
        similarity: name,
        kind: SimilarityKind::Model,
        lengths,
        mixed,
        latency: Some(latency),
        load_seconds: timed.load_seconds(),
        compute: timed.compute(),
        peak_resident_mib: peak_resident_mib(),
        threads: threads(),
        cache_bypassed: model.uncached().is_some(),
        remote,
        repeats,
        host: Host::detect(),
        datasets,
    })
}

/// What the calls between two usage records cost.
fn remote_cost(before: &RemoteUsage, after: &RemoteUsage) -> RemoteCost {
    let tokens = after.tokens - before.tokens;
    let cost_usd = match (before.cost_usd, after.cost_usd) {
        (Some(b), Some(a)) => Some(a - b),
        (None, Some(a)) => Some(a),
        _ => None,
    };
    RemoteCost {
        requests: after.requests - before.requests,
        tokens,
        retries: after.retries - before.retries,
        cost_usd,
        usd_per_million_tokens: cost_usd
            .filter(|_| tokens > 0)
            .map(|c| c / tokens as f64 * 1e6),
    }
}

/// Times `metric` scoring pairs of texts of `pool`: each text against the next of its length.
pub fn measure_metric(
    metric: &dyn Similarity,
    pool: &[String],
    datasets: Vec<RowSelection>,
    options: &Options,
) -> Result<ThroughputReport> {
    let buckets = texts::buckets(
        pool,
        METRIC_WINDOW_TOKENS,
        options.texts_per_length,
        options.seed,
    );
    if buckets.is_empty() {
        return Err(ThroughputError::NoTexts);
    }
    let mut lengths = Vec::new();
    for bucket in &buckets {
        let n = bucket.texts.len();
        let pairs: Vec<(&str, &str)> = (0..n)
            .map(|i| (bucket.texts[i].as_str(), bucket.texts[(i + 1) % n].as_str()))
            .collect();
        let score = || -> Result<()> {
            metric.score_pairs(&pairs)?;
            Ok(())
        };
        score()?;
        let runs = (0..options.repeats)
            .map(|_| seconds(score))
            .collect::<Result<Vec<f64>>>()?;
        lengths.push(length_report(bucket, runs, None));
    }
    Ok(ThroughputReport {
        similarity: metric.name().to_owned(),
        kind: SimilarityKind::Metric,
        lengths,
        mixed: None,
        latency: None,
        load_seconds: None,
        compute: Some("cpu".to_owned()),
        peak_resident_mib: peak_resident_mib(),
        threads: threads(),
        cache_bypassed: false,
        remote: None,
        repeats: options.repeats,
        host: Host::detect(),
        datasets,
    })
}

fn length_report(bucket: &Bucket, runs: Vec<f64>, model_tokens: Option<u64>) -> LengthReport {
    let seconds = Timing::of(runs);
    let n = bucket.texts.len();
    LengthReport {
        length: bucket.length,
        texts: n,
        mean_yardstick_tokens: bucket.yardstick_tokens.iter().sum::<usize>() as f64 / n as f64,
        model_tokens,
        per_second: seconds.rate(n as f64),
        tokens_per_second: model_tokens.map(|t| seconds.rate(t as f64)),
        seconds,
    }
}

#[cfg(test)]
mod tests;
