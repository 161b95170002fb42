//! The noise suite on the fixture mirror and, when present, on the real data.

use std::sync::Arc;

use sage_core::{EmbedderIdentity, EmbeddingSimilarity};
use sage_metrics::Metric;
use sage_test_env::data_dir_or_skip;

use super::*;

/// 26 letter counts plus one: vectors whose cosines rank documents by shared letters, so that
/// typos and casing move them (lower-case letters only: upper case is another letter).
struct Letters(EmbedderIdentity);

impl Letters {
    fn new() -> Letters {
        Letters(EmbedderIdentity {
            model_id: "letters".into(),
            revision: None,
            pooling: "none".into(),
            normalize: false,
            max_length: 0,
        })
    }
}

impl Embedder for Letters {
    fn identity(&self) -> &EmbedderIdentity {
        &self.0
    }
    fn embed(&self, texts: &[&str]) -> sage_core::Result<ndarray::Array2<f32>> {
        Ok(ndarray::Array2::from_shape_fn(
            (texts.len(), 27),
            |(i, j)| {
                if j == 26 {
                    return 1.0;
                }
                let letter = char::from(b'a' + j as u8);
                texts[i].chars().filter(|&c| c == letter).count() as f32
            },
        ))
    }
    fn dimension(&self) -> usize {
        27
    }
}

const FIXTURES: [(&str, &str); 2] = [("scifact", "test"), ("stsb", "test")];

fn options(rates: &[f64]) -> Options {
    Options {
        rates: rates.to_vec(),
        lengths: vec![0, 64],
        seed: RunSeed(5),
        ..Options::default()
    }
}

fn bytes(mut report: NoiseReport) -> String {
    report.timings = Timings::default();
    serde_json::to_string(&report).unwrap()
}

#[test]
fn rate_zero_keeps_retention_exactly_one() {
    let root = sage_testkit::fixtures();
    let bm25 = Metric::BM25.similarity();
    let scorer = Scorer {
        similarity: bm25.as_ref(),
        embedder: None,
    };
    let report = evaluate(scorer, &root, &FIXTURES, options(&[0.0, 0.2, 1.0])).unwrap();
    assert_eq!(report.datasets.len(), 2);
    // the fixtures' few STS pairs give BM25 a Spearman whose interval reaches below zero: no
    // retention there, by the rule; SciFact's NDCG is clearly above zero
    assert!(report.datasets[0].score.is_some());
    for dataset in &report.datasets {
        let retained = dataset.score.map(|_| 1.0);
        assert_eq!(
            dataset.channels.len(),
            13,
            "twelve rate channels and padding"
        );
        for channel in &dataset.channels {
            let first = &channel.points[0];
            assert_eq!(first.level, 0.0);
            assert_ne!(first.perturbation, "clean", "rate 0 ran as a condition");
            assert_eq!(first.retention, retained, "{}: {first:?}", channel.channel);
            assert_eq!(first.score, dataset.clean);
            assert_eq!(first.changed, 0.0);
            assert!(channel.points.windows(2).all(|w| w[0].level < w[1].level));
        }
    }
    // rate 1 drops every word: nothing is left to match
    let scifact = &report.datasets[0];
    let drop = scifact
        .channels
        .iter()
        .find(|c| c.channel == "word-drop")
        .unwrap();
    let last = drop.points.last().unwrap();
    assert_eq!(
        (last.level, last.changed, last.touched),
        (1.0, 1.0, Some(1.0))
    );
    assert!(report.ci95.is_some() && report.bootstrap.is_some());
}

#[test]
fn same_seed_same_bytes_on_any_thread_count() {
    let root = sage_testkit::fixtures();
    let letters = Arc::new(Letters::new());
    let similarity = EmbeddingSimilarity::cosine(letters.clone());
    let run = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| {
                let scorer = Scorer {
                    similarity: &similarity,
                    embedder: Some(letters.as_ref()),
                };
                bytes(evaluate(scorer, &root, &FIXTURES, options(&[0.0, 0.1, 0.4])).unwrap())
            })
    };
    assert_eq!(run(1), run(3));
}

/// An embedding model ranks through its vectors (the corpus embedded once); the same model as a
/// plain similarity ranks pair by pair. Both must give the same NDCG.
#[test]
fn vectors_and_pairs_rank_alike() {
    let root = sage_testkit::fixtures();
    let letters = Arc::new(Letters::new());
    let similarity = EmbeddingSimilarity::cosine(letters.clone());
    let run = |embedder: Option<&dyn Embedder>| {
        let scorer = Scorer {
            similarity: &similarity,
            embedder,
        };
        evaluate(scorer, &root, &FIXTURES[..1], options(&[0.1, 0.4])).unwrap()
    };
    let (vectors, pairs) = (run(Some(letters.as_ref())), run(None));
    for (a, b) in vectors.datasets[0]
        .channels
        .iter()
        .flat_map(|c| &c.points)
        .zip(pairs.datasets[0].channels.iter().flat_map(|c| &c.points))
    {
        assert!((a.score - b.score).abs() < 1e-9, "{a:?} vs {b:?}");
    }
}

#[test]
fn other_kinds_of_data_are_refused_by_name() {
    let root = sage_testkit::fixtures();
    let bm25 = Metric::BM25.similarity();
    let scorer = Scorer {
        similarity: bm25.as_ref(),
        embedder: None,
    };
    let e = evaluate(
        scorer,
        &root,
        &[("askubuntudupquestions", "test")],
        options(&[0.1]),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("askubuntudupquestions"), "{e}");
    assert!(e.contains("classification and clustering datasets"), "{e}");
}

/// Classification and clustering noise the texts themselves: rate 0 keeps everything, every
/// word dropped leaves the neighbours' vote and the clusters to chance, and the run records
/// which rows it classified against.
#[test]
fn classification_and_clustering_noise_their_texts() {
    let mirror = sage_testkit::labelled_mirror();
    let root = DataRoot::new(mirror.path().to_owned());
    let jaccard = Metric::JACCARD.similarity();
    let letters = Arc::new(Letters::new());
    let cosine = EmbeddingSimilarity::cosine(letters.clone());
    let options = Options {
        channels: vec!["word-drop".into(), "keyboard-typos".into()],
        rates: vec![0.0, 0.2, 1.0],
        lengths: Vec::new(),
        seed: RunSeed(3),
        ..Options::default()
    };
    let datasets = [("banking77", "test"), ("twentynewsgroups", "test")];
    let metric = Scorer {
        similarity: jaccard.as_ref(),
        embedder: None,
    };
    let model = Scorer {
        similarity: &cosine,
        embedder: Some(letters.as_ref()),
    };
    for scorer in [metric, model] {
        let report = evaluate(scorer, &root, &datasets, options.clone()).unwrap();
        let (classification, clustering) = (&report.datasets[0], &report.datasets[1]);
        assert_eq!(
            (
                classification.task,
                classification.units,
                classification.noisy.as_str()
            ),
            (Task::Classification, 6, "texts")
        );
        assert_eq!(classification.reference.as_ref().unwrap().used_rows, 12);
        assert_eq!((clustering.task, clustering.units), (Task::Clustering, 12));
        assert_eq!(classification.measure, "knn_accuracy");
        if scorer.embedder.is_none() {
            // word overlap finds each test text's own class
            assert_eq!(classification.clean, 1.0);
        }
        // the clean clustering is SAGE's clustering task on the same rows
        let rows = root
            .rows::<sage_data::LabeledText>("twentynewsgroups", "test")
            .unwrap()
            .sample(None, options.seed)
            .unwrap()
            .rows;
        let sage = sage_cluster::evaluate_dataset(
            scorer.similarity,
            "twentynewsgroups",
            "test",
            &rows,
            &sage_cluster::Options {
                seed: options.seed,
                ..sage_cluster::Options::default()
            },
            &mut Timings::default(),
        )
        .unwrap();
        assert_eq!(clustering.clean, sage.v_measure);
        for dataset in &report.datasets {
            for channel in &dataset.channels {
                assert_eq!(channel.points[0].retention, Some(1.0), "{channel:?}");
            }
            let dropped = dataset.channels[0].points.last().unwrap();
            assert_eq!((dropped.level, dropped.changed), (1.0, 1.0));
            assert!(
                dropped.retention.unwrap() < 1.0,
                "{}: {dropped:?}",
                dataset.dataset
            );
        }
    }
    // the train split is the reference, never the split classified
    let e = evaluate(metric, &root, &[("banking77", "train")], options.clone())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("banking77/test"), "{e}");
    // a clustering set of one class has nothing to separate
    std::fs::write(
        mirror.path().join("clustering/twentynewsgroups/test.jsonl"),
        "{\"text\": \"a\", \"label\": \"x\"}\n{\"text\": \"b\", \"label\": \"x\"}\n",
    )
    .unwrap();
    let e = evaluate(metric, &root, &datasets[1..], options)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("have one label"), "{e}");
}

/// On the real SciFact sample: BM25 matches query tokens exactly, so typos and lost casing cost
/// it NDCG, more at higher rates.
#[test]
fn real_scifact_loses_more_at_higher_rates() {
    let Some(dir) = data_dir_or_skip("noise on real SciFact") else {
        return;
    };
    let root = DataRoot::new(dir);
    let bm25 = Metric::BM25.similarity();
    let scorer = Scorer {
        similarity: bm25.as_ref(),
        embedder: None,
    };
    let options = Options {
        channels: vec!["keyboard-typos".into(), "lower-case".into()],
        lengths: Vec::new(),
        max_queries: Some(60),
        max_docs: Some(600),
        ..Options::default()
    };
    let report = evaluate(scorer, &root, &[("scifact", "test")], options).unwrap();
    let scifact = &report.datasets[0];
    assert!(scifact.clean > 0.3, "{}", scifact.clean);
    let typos = &scifact.channels[0];
    let at = |level: f64| {
        typos
            .points
            .iter()
            .find(|p| p.level == level)
            .unwrap()
            .retention
            .unwrap()
    };
    assert!(at(0.4) < at(0.05), "{typos:?}");
    assert!(at(0.4) < 0.95, "{typos:?}");
    assert!(typos.area.unwrap() < 1.0 && typos.area_ci95.unwrap().high <= 1.0 + 1e-9);
}

/// BM25's clean Spearman of −0.015 on a small STS-B sample once gave retentions of 0.000 with
/// intervals like [0.000, 6.203], and the report read "loses everything". A dataset whose clean
/// score is not clearly above zero now has no retention, says why, keeps its changes, and is
/// left out of the category score.
#[test]
fn a_clean_score_near_zero_gives_changes_not_retentions() {
    let conditions = conditions::build(&Options {
        channels: vec!["lower-case".into()],
        rates: vec![0.5],
        lengths: Vec::new(),
        ..Options::default()
    })
    .unwrap();
    assert_eq!(conditions.len(), 1);
    let units = 40;
    let measured = |name: &str, clean: Vec<f64>, noisy: Vec<f64>| Measured {
        report: DatasetReport::empty(name.into(), Task::Retrieval, "queries", units),
        statistic: Statistic::Mean,
        values: vec![clean, noisy],
        tallies: vec![conditions::Tally {
            texts: units,
            changed: units,
            units: None,
        }],
    };
    // two units of forty score: a clean mean of 0.05 whose resamples are often 0
    let near_zero = measured(
        "near-zero/test",
        (0..units).map(|i| if i < 2 { 1.0 } else { 0.0 }).collect(),
        (0..units).map(|i| if i < 1 { 1.0 } else { 0.0 }).collect(),
    );
    let clear = measured(
        "clear/test",
        (0..units).map(|i| 0.4 + 0.01 * i as f64).collect(),
        (0..units).map(|i| 0.3 + 0.01 * i as f64).collect(),
    );
    let options = Options {
        seed: RunSeed(3),
        ..Options::default()
    };
    let report = finish(
        "probe",
        vec![near_zero, clear],
        options.clone(),
        &conditions,
        Timings::default(),
    )
    .unwrap();
    let (near, clear) = (&report.datasets[0], &report.datasets[1]);
    assert!(near.clean_ci95.unwrap().low <= 0.0, "{:?}", near.clean_ci95);
    assert_eq!(near.score, None);
    assert!(
        near.note
            .as_deref()
            .unwrap()
            .contains("not clearly above zero"),
        "{near:?}"
    );
    for channel in &near.channels {
        assert_eq!(channel.area, None);
        assert!(channel.area_bootstrap.is_none());
        for point in &channel.points {
            assert_eq!(point.retention, None, "{point:?}");
            assert!(point.ci95.is_none());
            assert!((point.change - (point.score - near.clean)).abs() < 1e-12);
        }
        let noisy = channel.points.last().unwrap();
        assert!((noisy.change + 0.025).abs() < 1e-12, "{noisy:?}");
        let ci = noisy.change_ci95.unwrap();
        assert!(ci.low <= noisy.change && noisy.change <= ci.high, "{ci:?}");
    }
    // the other dataset keeps its ratio, and alone makes the category score
    let noisy = clear.channels[0].points.last().unwrap();
    let expected = (0.3 + 0.01 * 19.5) / (0.4 + 0.01 * 19.5);
    assert!(
        (noisy.retention.unwrap() - expected).abs() < 1e-9,
        "{noisy:?}"
    );
    assert!(noisy.ci95.is_some() && clear.note.is_none());
    assert_eq!(report.score, clear.score.unwrap());
    // no dataset with a retention: no category score, written as null and read back
    let only_near = finish(
        "probe",
        vec![measured(
            "near-zero/test",
            (0..units).map(|i| if i < 2 { 1.0 } else { 0.0 }).collect(),
            vec![0.0; units],
        )],
        options,
        &conditions,
        Timings::default(),
    )
    .unwrap();
    assert!(only_near.score.is_nan() && only_near.bootstrap.is_none());
    let json = serde_json::to_string(&only_near).unwrap();
    assert!(json.contains("\"score\":null"), "{json}");
    let back: NoiseReport = serde_json::from_str(&json).unwrap();
    assert!(back.score.is_nan());
}
