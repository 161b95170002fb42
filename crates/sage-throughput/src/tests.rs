use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use ndarray::Array2;
use sage_core::{EmbedderIdentity, RemoteUsage};

use super::*;

fn rows(n: usize) -> Array2<f32> {
    Array2::from_elem((n, 2), 0.5)
}

/// Records every call's texts; optionally pretends to be a paid API.
struct Recording {
    identity: EmbedderIdentity,
    calls: Mutex<Vec<usize>>,
    remote: Option<AtomicU64>,
    short_by_one: bool,
}

impl Recording {
    fn new(window: usize) -> Recording {
        Recording {
            identity: EmbedderIdentity {
                model_id: "test/recording".into(),
                revision: None,
                pooling: "mean".into(),
                normalize: true,
                max_length: window,
            },
            calls: Mutex::new(Vec::new()),
            remote: None,
            short_by_one: false,
        }
    }
}

impl Embedder for Recording {
    fn identity(&self) -> &EmbedderIdentity {
        &self.identity
    }
    fn dimension(&self) -> usize {
        2
    }
    fn embed(&self, texts: &[&str]) -> sage_core::Result<Array2<f32>> {
        self.calls.lock().unwrap().push(texts.len());
        if let Some(sent) = &self.remote {
            sent.fetch_add(texts.len() as u64, Ordering::Relaxed);
        }
        Ok(rows(texts.len() - usize::from(self.short_by_one)))
    }
    fn count_tokens(&self, texts: &[&str]) -> Option<Vec<usize>> {
        Some(
            texts
                .iter()
                .map(|t| t.split(' ').count().min(self.identity.max_length))
                .collect(),
        )
    }
    fn load_seconds(&self) -> Option<f64> {
        Some(0.25)
    }
    fn remote_usage(&self) -> Option<RemoteUsage> {
        let texts = self.remote.as_ref()?.load(Ordering::Relaxed);
        Some(RemoteUsage {
            requests: texts,
            texts,
            tokens: texts * 10,
            cost_usd: Some(texts as f64 * 10.0 * 0.02 / 1e6),
            ..RemoteUsage::default()
        })
    }
}

/// A cache in front of a model: answers without the model, and gives the model when asked.
struct FakeCache(Recording);

impl Embedder for FakeCache {
    fn identity(&self) -> &EmbedderIdentity {
        self.0.identity()
    }
    fn dimension(&self) -> usize {
        2
    }
    fn embed(&self, texts: &[&str]) -> sage_core::Result<Array2<f32>> {
        Ok(rows(texts.len()))
    }
    fn uncached(&self) -> Option<&dyn Embedder> {
        Some(&self.0)
    }
}

fn pool() -> Vec<String> {
    let mut pool: Vec<String> = (0..400)
        .map(|i| format!("Sentence {i} tells a short story about thing number {i}."))
        .collect();
    pool.extend((0..3).map(|i| format!("essay {i} ") + &"words of a long essay ".repeat(300)));
    pool
}

fn options() -> Options {
    Options {
        texts_per_length: 12,
        repeats: 3,
        latency_calls: 5,
        remote_texts_per_length: 4,
        seed: RunSeed(11),
        ..Options::default()
    }
}

#[test]
fn percentiles_interpolate_between_ranks_as_numpy_does() {
    // numpy.percentile([1, 2, 3, 4], [50, 95]) == [2.5, 3.85]
    let sorted = [1.0, 2.0, 3.0, 4.0];
    assert_eq!(percentile(&sorted, 50.0), 2.5);
    assert!((percentile(&sorted, 95.0) - 3.85).abs() < 1e-12);
    assert_eq!(percentile(&[7.0], 95.0), 7.0);
    let t = Timing::of(vec![2.0, 1.0, 4.0]);
    assert_eq!((t.best, t.median, t.spread), (1.0, 2.0, 1.5));
    assert_eq!(t.runs, [2.0, 1.0, 4.0]);
    assert_eq!(
        t.rate(10.0),
        Rate {
            best: 10.0,
            median: 5.0
        }
    );
}

#[test]
fn a_model_is_run_once_unmeasured_then_timed_at_each_length() {
    let model = Recording::new(256);
    let report = measure_model(&model, &pool(), Vec::new(), &options()).unwrap();
    let lengths: Vec<Length> = report.lengths.iter().map(|l| l.length).collect();
    assert_eq!(lengths, [Length::Short, Length::Medium, Length::Window]);
    for l in &report.lengths {
        assert_eq!(l.texts, 12);
        assert_eq!(l.seconds.runs.len(), 3);
        let tokens = l.model_tokens.unwrap();
        assert!(tokens > 0);
        let rate = l.tokens_per_second.unwrap();
        assert!((rate.median - tokens as f64 / l.seconds.median).abs() <= 1e-6 * rate.median);
    }
    // the window's texts are cut by the model: it reads at most its window of each
    assert!(report.lengths[2].model_tokens.unwrap() <= 12 * 256);
    // each of the 3 lengths' 12 texts then the 36 together: once unmeasured, then 3 timed
    // rounds, the mixed call first in the odd one; then 5 single-text calls
    let calls = model.calls.lock().unwrap().clone();
    let (round, odd) = ([12, 12, 12, 36], [36, 12, 12, 12]);
    assert_eq!(calls, [&round[..], &round, &odd, &round, &[1; 5]].concat());
    let mixed = report.mixed.unwrap();
    assert_eq!((mixed.texts, mixed.seconds.runs.len()), (36, 3));
    let parts: f64 = report.lengths.iter().map(|l| l.seconds.best).sum();
    assert!((mixed.parts_best - parts).abs() < 1e-12);
    // each round's mixed call is set against the lengths timed in the same round
    assert_eq!(mixed.over_parts.len(), 3);
    for (r, ratio) in mixed.over_parts.iter().enumerate() {
        let round_parts: f64 = report.lengths.iter().map(|l| l.seconds.runs[r]).sum();
        assert!((ratio - mixed.seconds.runs[r] / round_parts).abs() < 1e-9);
    }
    let mut sorted = mixed.over_parts.clone();
    sorted.sort_by(f64::total_cmp);
    assert_eq!(mixed.over_parts(), sorted[1]);
    let latency = report.latency.unwrap();
    assert_eq!(latency.calls, 5);
    assert!(latency.p50_ms <= latency.p95_ms && latency.p95_ms <= latency.max_ms);
    assert_eq!(report.load_seconds, Some(0.25));
    assert_eq!(report.kind, SimilarityKind::Model);
    assert!(!report.cache_bypassed && report.remote.is_none());
    assert!(report.threads >= 1);
}

#[test]
fn a_cache_in_front_is_bypassed_to_time_the_model() {
    let cached = FakeCache(Recording::new(128));
    let report = measure_model(&cached, &pool(), Vec::new(), &options()).unwrap();
    assert!(report.cache_bypassed);
    assert_eq!(cached.0.calls.lock().unwrap().len(), 3 * 4 + 4 + 5);
}

#[test]
fn a_remote_model_is_sent_a_bounded_sample_once_and_its_bill_is_reported() {
    let mut model = Recording::new(512);
    model.remote = Some(AtomicU64::new(100));
    let report = measure_model(&model, &pool(), Vec::new(), &options()).unwrap();
    // no unmeasured run, one timed run of 4 texts per length, 4 latency calls
    let calls = model.calls.lock().unwrap().clone();
    assert_eq!(calls, [[4; 3].as_slice(), &[1; 4]].concat());
    assert_eq!(report.repeats, 1);
    assert!(report.mixed.is_none());
    let cost = report.remote.unwrap();
    // what was sent during the run, not what the model had been sent before it
    assert_eq!((cost.requests, cost.tokens), (16, 160));
    assert!((cost.cost_usd.unwrap() - 160.0 * 0.02 / 1e6).abs() < 1e-15);
    assert!((cost.usd_per_million_tokens.unwrap() - 0.02).abs() < 1e-9);
}

#[test]
fn a_model_that_loses_rows_is_an_error() {
    let mut model = Recording::new(128);
    model.short_by_one = true;
    let e = measure_model(&model, &pool(), Vec::new(), &options()).unwrap_err();
    assert!(
        e.to_string().contains("returned 11 vectors for 12 texts"),
        "{e}"
    );
}

#[test]
fn a_metric_is_timed_on_pairs_of_the_same_texts() {
    let jaccard = sage_metrics::Metric::named("jaccard", &sage_metrics::Metric::BUILT_IN)
        .unwrap()
        .similarity();
    let report = measure_metric(jaccard.as_ref(), &pool(), Vec::new(), &options()).unwrap();
    assert_eq!(report.kind, SimilarityKind::Metric);
    assert_eq!(report.similarity, "jaccard");
    assert_eq!(report.lengths.len(), 3);
    assert!(report.lengths.iter().all(|l| l.texts == 12
        && l.model_tokens.is_none()
        && l.per_second.best >= l.per_second.median));
    assert!(report.latency.is_none());
}

#[test]
fn no_text_of_any_length_is_an_error() {
    let e = measure_model(&Recording::new(128), &[], Vec::new(), &options()).unwrap_err();
    assert!(matches!(e, ThroughputError::NoTexts));
}

#[test]
fn options_outside_their_ranges_are_refused() {
    use sage_core::CheckOptions;
    assert!(Options::default().check().is_ok());
    let zero = Options {
        repeats: 0,
        ..Options::default()
    };
    assert!(zero
        .check()
        .unwrap_err()
        .to_string()
        .contains("repeats = 0"));
}
