//! cl100k_base encoding, MB/s: ours against tiktoken-rs's `encode_ordinary` (the same ids; the
//! tests hold them equal) on the fixture texts, English news and the rest alike.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

fn texts() -> Vec<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/fixtures/metric_pairs.jsonl");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .flat_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            [
                v["text1"].as_str().unwrap().to_owned(),
                v["text2"].as_str().unwrap().to_owned(),
            ]
        })
        .collect()
}

fn encode(c: &mut Criterion) {
    let texts = texts();
    let bytes: usize = texts.iter().map(String::len).sum();
    let mut group = c.benchmark_group("cl100k");
    group.throughput(Throughput::Bytes(bytes as u64));
    group.bench_function("sage_tokens::encode", |b| {
        b.iter(|| {
            texts
                .iter()
                .map(|t| sage_tokens::encode(t).len())
                .sum::<usize>()
        })
    });
    let bpe = tiktoken_rs::cl100k_base_singleton();
    group.bench_function("tiktoken_rs::encode_ordinary", |b| {
        b.iter(|| {
            texts
                .iter()
                .map(|t| bpe.encode_ordinary(t).len())
                .sum::<usize>()
        })
    });
    group.finish();
}

criterion_group!(benches, encode);
criterion_main!(benches);
