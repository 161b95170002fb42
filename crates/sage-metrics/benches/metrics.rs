//! Throughput of every metric, in pairs/s, on the two shapes SAGE scores:
//! - `document`: a 1.3 KB news-style document against each of its perturbed copies
//!   (random capitals, numerisation, character deletion, word shuffle, negation);
//! - `sentences`: STS-B test sentence pairs when SAGE_DATA_DIR is set, else the fixture pairs.
//!
//! `single` calls `score` pair by pair on one thread (comparable to the Python reference, which
//! tests/python-reference/throughput.py measures on the same inputs); `batch` calls `score_pairs` once
//! (distinct texts tokenized once, pairs in parallel with rayon).

use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use sage_metrics::Metric;
use serde_json::Value;

fn fixture_pairs() -> Vec<(String, String)> {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/fixtures/metric_pairs.jsonl");
    read_pairs(&path, "text1", "text2")
}

fn read_pairs(path: &std::path::Path, a: &str, b: &str) -> Vec<(String, String)> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v[a].as_str().unwrap().to_owned(),
                v[b].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn document_pairs() -> Vec<(String, String)> {
    // fixture lines 19-23: the document against five perturbed copies of itself
    fixture_pairs()
        .into_iter()
        .filter(|(a, b)| a.len() > 1000 && b.len() > 1000 && a != b)
        .collect()
}

fn sentence_pairs() -> Vec<(String, String)> {
    match std::env::var_os("SAGE_DATA_DIR") {
        Some(dir) => read_pairs(
            &PathBuf::from(dir).join("sts/stsb/test.jsonl"),
            "sentence1",
            "sentence2",
        ),
        None => fixture_pairs()
            .into_iter()
            .filter(|(a, b)| a.len() < 200 && b.len() < 200)
            .collect(),
    }
}

fn bench(c: &mut Criterion) {
    for (shape, pairs) in [
        ("document", document_pairs()),
        ("sentences", sentence_pairs()),
    ] {
        let refs: Vec<(&str, &str)> = pairs
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let mut group = c.benchmark_group(shape);
        group.throughput(Throughput::Elements(refs.len() as u64));
        for metric in Metric::BUILT_IN {
            let similarity = metric.similarity();
            group.bench_with_input(BenchmarkId::new("single", metric), &refs, |b, refs| {
                b.iter(|| {
                    refs.iter()
                        .map(|(x, y)| similarity.score(x, y).unwrap())
                        .sum::<f32>()
                })
            });
            group.bench_with_input(BenchmarkId::new("batch", metric), &refs, |b, refs| {
                b.iter(|| similarity.score_pairs(refs).unwrap())
            });
        }
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).warm_up_time(std::time::Duration::from_millis(500)).measurement_time(std::time::Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
