//! Every registered suite that takes a classical metric, end to end on the fixtures mirror
//! through the registry (`Registry::standard()`, as `sage run` calls it): reading the rows,
//! perturbing them, scoring with Jaccard, the task's statistics and bootstrap, the typed report.
//! Where a change to one crate shows up as time spent by a whole suite.
//!
//! `cargo bench -p sage-benches`; under `cargo test` each suite runs once, as a smoke test.

use criterion::{criterion_group, criterion_main, Criterion};
use sage_metrics::Metric;
use sage_suites::{Registry, Request, Subject};

fn suites(c: &mut Criterion) {
    let root = sage_testkit::fixtures();
    let registry = Registry::standard();
    let subject = Subject::Metric(Metric::JACCARD);
    let mut group = c.benchmark_group("suite on the fixtures, jaccard");
    group.sample_size(10);
    for suite in registry.suites().filter(|s| s.takes_metrics()) {
        let request = Request::new(&root);
        // a suite none of whose datasets the fixtures hold is left out, saying so
        if let Err(e) = suite.run(&subject, &request) {
            eprintln!("skipped: suite {}: {e}", suite.name());
            continue;
        }
        group.bench_function(suite.name(), |b| {
            b.iter(|| suite.run(&subject, &request).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, suites);
criterion_main!(benches);
