use super::*;

#[test]
fn default_widths_halve_down_to_32_and_given_ones_keep_the_full_width() {
    let options = Options::default();
    assert_eq!(options.widths_for(384).unwrap(), vec![384, 192, 96, 48]);
    assert_eq!(
        options.widths_for(768).unwrap(),
        vec![768, 384, 192, 96, 48]
    );
    // a model narrower than 32 values keeps its own width only
    assert_eq!(options.widths_for(16).unwrap(), vec![16]);
    let given = Options {
        widths: vec![64, 128, 64],
        ..Options::default()
    };
    assert_eq!(given.widths_for(384).unwrap(), vec![384, 128, 64]);
    let too_wide = Options {
        widths: vec![512],
        ..Options::default()
    };
    let err = too_wide.widths_for(384).unwrap_err().to_string();
    assert!(err.contains("512") && err.contains("384"), "{err}");
}

#[test]
fn no_format_or_a_zero_width_is_refused_before_any_work() {
    let none = Options {
        formats: Vec::new(),
        ..Options::default()
    };
    assert!(formats_named(&none).is_err());
    let zero = Options {
        widths: vec![0],
        ..Options::default()
    };
    assert!(formats_named(&zero).is_err());
}

#[test]
fn a_metric_is_not_applicable_and_has_no_score() {
    let report = not_applicable("bm25", Options::default());
    assert!(!report.applicable);
    assert_eq!(SuiteReport::score(&report), None);
    assert!(
        report.notes[0].contains("not applicable"),
        "{:?}",
        report.notes
    );
    // written and read back: the missing score stays missing
    let json = serde_json::to_string(&report).unwrap();
    assert!(json.contains("\"score\":null"), "{json}");
    let back: CompressionReport = serde_json::from_str(&json).unwrap();
    assert!(back.score.is_nan());
}

/// Words hashed into 64 signed buckets plus a constant: vectors with negative values (so that
/// signs carry information) whose cosines follow shared words.
struct HashedWords(sage_core::EmbedderIdentity);

const WIDTH: usize = 64;

impl HashedWords {
    fn new() -> HashedWords {
        HashedWords(sage_core::EmbedderIdentity {
            model_id: "hashed-words".into(),
            revision: None,
            pooling: "none".into(),
            normalize: false,
            max_length: 0,
        })
    }
}

impl Embedder for HashedWords {
    fn identity(&self) -> &sage_core::EmbedderIdentity {
        &self.0
    }
    fn embed(&self, texts: &[&str]) -> sage_core::Result<ndarray::Array2<f32>> {
        let mut out = ndarray::Array2::<f32>::zeros((texts.len(), WIDTH));
        for (i, text) in texts.iter().enumerate() {
            for word in text.split_whitespace() {
                let h = word
                    .to_lowercase()
                    .bytes()
                    .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
                    });
                let sign = if h >> 63 == 1 { -1.0 } else { 1.0 };
                out[[i, (h % (WIDTH as u64 - 1)) as usize]] += sign;
            }
            out[[i, WIDTH - 1]] = 0.5;
        }
        Ok(out)
    }
    fn dimension(&self) -> usize {
        WIDTH
    }
}

const FIXTURES: [(&str, &str); 2] = [("scifact", "test"), ("stsb", "test")];

fn run(root: &DataRoot, datasets: &[(&str, &str)], options: Options) -> CompressionReport {
    let model = std::sync::Arc::new(HashedWords::new());
    let similarity = sage_core::EmbeddingSimilarity::cosine(model.clone());
    evaluate(model.as_ref(), &similarity, root, datasets, options).unwrap()
}

fn seeded() -> Options {
    Options {
        seed: RunSeed(11),
        ..Options::default()
    }
}

fn point(report: &DatasetReport, format: Format, width: usize) -> Option<&Point> {
    report
        .formats
        .iter()
        .find(|c| c.format == format)?
        .points
        .iter()
        .find(|p| p.width == width)
}

#[test]
fn float32_at_full_width_is_the_reference_and_every_point_says_its_bytes() {
    let report = run(&sage_testkit::fixtures(), &FIXTURES, seeded());
    assert!(report.applicable);
    assert_eq!(report.dimension, Some(WIDTH));
    // 64, 32: the halvings down to 32
    assert_eq!(report.points.len(), 2 * Format::ALL.len());
    let retrieval = &report.datasets[0];
    assert_eq!(retrieval.task, Task::Retrieval);
    assert_eq!(retrieval.stored, "documents");
    let reference = point(retrieval, Format::Float32, WIDTH).unwrap();
    assert_eq!(reference.retention, Some(1.0));
    assert_eq!(reference.change, 0.0);
    assert_eq!(reference.score, retrieval.reference_score);
    for curve in &retrieval.formats {
        for p in &curve.points {
            assert_eq!(p.bytes, curve.format.bytes(p.width));
            assert!(p.change_ci95.is_some(), "{curve:?}");
        }
    }
    // float16 of unit vectors ranks as float32 to within a rounding
    let half = point(retrieval, Format::Float16, WIDTH).unwrap();
    assert!((half.retention.unwrap() - 1.0).abs() < 0.02, "{half:?}");
    // STS ranks nothing: rescoring changes nothing there, and the dataset says so
    let sts = &report.datasets[1];
    assert_eq!(
        point(sts, Format::BinaryRescored, WIDTH).unwrap().score,
        point(sts, Format::Binary, WIDTH).unwrap().score
    );
    assert!(
        sts.notes.iter().any(|n| n.contains("binary-rescored")),
        "{:?}",
        sts.notes
    );
    // every point of the view averages the same datasets
    let with_retention = report.datasets.iter().filter(|d| d.score.is_some()).count();
    assert!(
        report.points.iter().all(|p| p.datasets == with_retention),
        "{:?}",
        report.points
    );
    let rescored = report
        .points
        .iter()
        .find(|p| p.format == Format::BinaryRescored && p.width == WIDTH)
        .unwrap();
    assert_eq!(rescored.bytes, WIDTH / 8);
    // hashed words are no Matryoshka model, and the report cannot be told otherwise
    assert!(
        report.notes.iter().any(|n| n.contains("Matryoshka")),
        "{:?}",
        report.notes
    );
}

#[test]
fn rescoring_the_binary_candidates_with_the_float_query_ranks_closer_to_float32() {
    let report = run(&sage_testkit::fixtures(), &FIXTURES[..1], seeded());
    let retrieval = &report.datasets[0];
    let binary = point(retrieval, Format::Binary, WIDTH).unwrap().score;
    let rescored = point(retrieval, Format::BinaryRescored, WIDTH)
        .unwrap()
        .score;
    // the rescored top 10 is chosen among the binary top 40 by the float query: never further
    // from float32 on these queries, and the float32 score bounds neither from above
    let reference = retrieval.reference_score;
    assert!(
        (rescored - reference).abs() <= (binary - reference).abs() + 1e-9,
        "binary {binary}, rescored {rescored}, float32 {reference}"
    );
}

#[test]
fn same_seed_same_bytes_on_any_thread_count() {
    let root = sage_testkit::fixtures();
    let bytes = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| {
                let mut report = run(&root, &FIXTURES, seeded());
                report.timings = Timings::default();
                serde_json::to_string(&report).unwrap()
            })
    };
    assert_eq!(bytes(1), bytes(3));
}

#[test]
fn classification_and_clustering_store_their_vectors() {
    let mirror = sage_testkit::labelled_mirror();
    let root = DataRoot::new(mirror.path().to_owned());
    let report = run(
        &root,
        &[("banking77", "test"), ("twentynewsgroups", "test")],
        Options {
            widths: vec![16],
            ..seeded()
        },
    );
    let classification = &report.datasets[0];
    assert_eq!(classification.task, Task::Classification);
    assert_eq!(classification.stored, "train texts");
    assert!(classification.reference.is_some());
    // the neighbours' vote is a ranking: rescoring applies
    assert!(point(classification, Format::BinaryRescored, 16).is_some());
    let clustering = &report.datasets[1];
    assert_eq!(clustering.task, Task::Clustering);
    assert_eq!(
        point(clustering, Format::BinaryRescored, 16).unwrap().score,
        point(clustering, Format::Binary, 16).unwrap().score
    );
    assert_eq!(
        point(clustering, Format::Float32, WIDTH).unwrap().retention,
        clustering.score.map(|_| 1.0)
    );
    // the calibration sample is every stored vector when fewer than asked for
    assert_eq!(clustering.calibrated_on, clustering.units);
}

#[test]
fn other_kinds_of_data_are_refused_by_name() {
    let model = HashedWords::new();
    let similarity =
        sage_core::EmbeddingSimilarity::cosine(std::sync::Arc::new(HashedWords::new()));
    let e = evaluate(
        &model,
        &similarity,
        &sage_testkit::fixtures(),
        &[("askubuntudupquestions", "test")],
        seeded(),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(
        e.contains("askubuntudupquestions") && e.contains("compression suite"),
        "{e}"
    );
}

/// Hashed words computed "at a lower precision": every value moved by a fixed wobble, with the
/// exact model as its float32 twin.
struct Wobbly {
    exact: HashedWords,
    identity: sage_core::EmbedderIdentity,
}

impl Embedder for Wobbly {
    fn identity(&self) -> &sage_core::EmbedderIdentity {
        &self.identity
    }
    fn embed(&self, texts: &[&str]) -> sage_core::Result<ndarray::Array2<f32>> {
        let mut v = self.exact.embed(texts)?;
        for ((i, j), x) in v.indexed_iter_mut() {
            *x += 0.4 * ((i * 7 + j * 3) as f32).sin();
        }
        Ok(v)
    }
    fn dimension(&self) -> usize {
        WIDTH
    }
    fn compute(&self) -> Option<String> {
        Some("cpu int8 test".into())
    }
    fn full_precision(&self) -> sage_core::Result<Option<&dyn Embedder>> {
        Ok(Some(&self.exact))
    }
}

/// A model at a lower precision is scored against its float32 twin: its own float32 at full
/// width is a point like any other, and its retention is what the precision keeps.
#[test]
fn a_lower_precision_is_scored_against_its_float32_twin() {
    let root = sage_testkit::fixtures();
    let exact = run(&root, &FIXTURES[..1], seeded());
    let wobbly = std::sync::Arc::new(Wobbly {
        exact: HashedWords::new(),
        identity: sage_core::EmbedderIdentity {
            model_id: "hashed-words".into(),
            revision: None,
            pooling: "none:precision=int8".into(),
            normalize: false,
            max_length: 0,
        },
    });
    let similarity = sage_core::EmbeddingSimilarity::cosine(wobbly.clone());
    let lower = evaluate(
        wobbly.as_ref(),
        &similarity,
        &root,
        &FIXTURES[..1],
        seeded(),
    )
    .unwrap();
    assert_eq!(lower.computed.as_deref(), Some("cpu int8 test"));
    let (a, b) = (&exact.datasets[0], &lower.datasets[0]);
    // the reference is the twin's: the same score as the exact model's own run
    assert_eq!(a.reference_score, b.reference_score);
    let own = point(b, Format::Float32, WIDTH).unwrap();
    assert_ne!(own.score, b.reference_score, "the wobble moves the ranking");
    assert_eq!(own.retention, Some(own.score / b.reference_score));
    // the precision's own point counts in the dataset's score
    let points: Vec<f64> = b
        .formats
        .iter()
        .flat_map(|c| c.points.iter().filter_map(|p| p.retention))
        .collect();
    let mean = points.iter().sum::<f64>() / points.len() as f64;
    assert!(
        (b.score.unwrap() - mean).abs() < 1e-12,
        "{:?} vs {mean}",
        b.score
    );
}
