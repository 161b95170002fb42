//! Sentences/s of all-MiniLM-L6-v2 on 1,000 STS-B test sentences (sentence1 and sentence2 of the
//! first 500 pairs), at several batch settings. Needs SAGE_MODELS_DIR and SAGE_DATA_DIR; without
//! them it says so and measures nothing. The Python side is
//! tests/python-reference/embed_throughput.py (sentence-transformers, PyTorch CPU, same sentences).

use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use sage_core::Embedder;
use sage_embed::{resolve_model, ResolveOptions, SentenceTransformer, TransformerOptions};

fn sentences() -> Option<Vec<String>> {
    let path = PathBuf::from(std::env::var_os("SAGE_DATA_DIR")?).join("sts/stsb/test.jsonl");
    let text = std::fs::read_to_string(&path).ok()?;
    Some(
        text.lines()
            .take(500)
            .flat_map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).expect("STS-B line");
                [
                    v["sentence1"].as_str().unwrap().to_owned(),
                    v["sentence2"].as_str().unwrap().to_owned(),
                ]
            })
            .collect(),
    )
}

fn bench(c: &mut Criterion) {
    let (Some(models), Some(texts)) = (std::env::var_os("SAGE_MODELS_DIR"), sentences()) else {
        eprintln!("SAGE_MODELS_DIR or SAGE_DATA_DIR unset: embedding benchmark not run");
        return;
    };
    let dir = PathBuf::from(models).join("all-MiniLM-L6-v2");
    let model =
        resolve_model(dir.to_str().unwrap(), &ResolveOptions::default()).expect("model folder");
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let mut group = c.benchmark_group("all-MiniLM-L6-v2/stsb-1000");
    group.throughput(Throughput::Elements(refs.len() as u64));
    for (batch_tokens, max_batch) in [(1024, 32), (2048, 64), (8192, 128), (16384, 256)] {
        let options = TransformerOptions {
            batch_tokens: Some(batch_tokens),
            max_batch,
            ..TransformerOptions::default()
        };
        let embedder = SentenceTransformer::load(&model, options).expect("loads");
        group.bench_with_input(
            BenchmarkId::new("tokens", format!("{batch_tokens}x{max_batch}")),
            &refs,
            |b, refs| b.iter(|| embedder.embed(refs).expect("embeds")),
        );
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).warm_up_time(std::time::Duration::from_secs(1)).measurement_time(std::time::Duration::from_secs(8));
    targets = bench
}
criterion_main!(benches);
