use super::*;
use rand::{Rng, SeedableRng};

/// Words hashed into signed buckets: a text's vector counts its words, so classes that use
/// different words are separable, and shared words blur them.
struct HashedWords(sage_core::EmbedderIdentity, bool);

const WIDTH: usize = 32;

impl HashedWords {
    fn new() -> HashedWords {
        HashedWords::poisoned(false)
    }
    /// A model whose vectors hold NaN when `nan`.
    fn poisoned(nan: bool) -> HashedWords {
        HashedWords(
            sage_core::EmbedderIdentity {
                model_id: "hashed-words".into(),
                revision: None,
                pooling: "none".into(),
                normalize: false,
                max_length: 0,
            },
            nan,
        )
    }
}

impl Embedder for HashedWords {
    fn identity(&self) -> &sage_core::EmbedderIdentity {
        &self.0
    }
    fn embed(&self, texts: &[&str]) -> sage_core::Result<Array2<f32>> {
        let mut out = Array2::<f32>::zeros((texts.len(), WIDTH));
        for (i, text) in texts.iter().enumerate() {
            for word in text.split_whitespace() {
                let h = word.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                    (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
                });
                let sign = if h >> 63 == 1 { -1.0 } else { 1.0 };
                out[[i, (h % WIDTH as u64) as usize]] += sign;
            }
            if self.1 && i == texts.len() / 2 {
                out[[i, 0]] = f32::NAN;
            }
        }
        Ok(out)
    }
    fn dimension(&self) -> usize {
        WIDTH
    }
}

/// A sentence of class `class`: three words of its own pool and two shared ones.
fn sentence(rng: &mut impl Rng, class: usize) -> String {
    let own = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"];
    let shared = ["the", "a", "of", "and", "with", "zulu", "yankee", "xray"];
    let mut words: Vec<String> = (0..3)
        .map(|_| format!("{}{class}", own[rng.gen_range(0..own.len())]))
        .collect();
    words.extend((0..2).map(|_| shared[rng.gen_range(0..shared.len())].to_owned()));
    // one word in four from another class: not every item is easy
    if rng.gen_bool(0.25) {
        words[0] = format!("{}{}", own[rng.gen_range(0..own.len())], (class + 1) % 3);
    }
    words.join(" ")
}

/// A mirror with MR (one split, two classes), TREC (train and test, three classes) and SICK-E
/// (train, dev and test pairs, three classes), synthetic and seeded.
fn mirror() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let mut write = |path: &str, rows: usize, classes: usize, pairs: bool| {
        let mut body = String::new();
        for i in 0..rows {
            let class = i % classes;
            let line = if pairs {
                let a = sentence(&mut rng, class);
                let b = sentence(&mut rng, class);
                let label = ["ENTAILMENT", "NEUTRAL", "CONTRADICTION"][class];
                serde_json::json!({ "sentence1": a, "sentence2": b, "label": label })
            } else {
                serde_json::json!({ "text": sentence(&mut rng, class), "label": class.to_string() })
            };
            body += &(line.to_string() + "\n");
        }
        let file = dir.path().join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, body).unwrap();
    };
    write("classification/mr/all.jsonl", 120, 2, false);
    write("classification/trec/train.jsonl", 150, 3, false);
    write("classification/trec/test.jsonl", 60, 3, false);
    write("pair_classification/sick_e/train.jsonl", 150, 3, true);
    write("pair_classification/sick_e/dev.jsonl", 45, 3, true);
    write("pair_classification/sick_e/test.jsonl", 60, 3, true);
    dir
}

const TASKS: [(&str, &str); 3] = [("mr", "all"), ("trec", "test"), ("sick-e", "test")];

fn options() -> Options {
    Options {
        k: 5,
        seed: RunSeed(11),
        ..Options::default()
    }
}

fn run(root: &DataRoot, tasks: &[(&str, &str)], options: Options) -> Result<TransferReport> {
    evaluate(&HashedWords::new(), "hashed-words", root, tasks, options)
}

/// The report without its wall-clock timings, for byte comparisons.
fn without_timings(report: &TransferReport) -> String {
    let mut r = report.clone();
    r.timings = Timings::default();
    serde_json::to_string(&r).unwrap()
}

#[test]
fn each_shape_of_data_runs_its_senteval_scheme() {
    let dir = mirror();
    let root = DataRoot::new(dir.path());
    let report = run(&root, &TASKS, options()).unwrap();
    assert!(report.applicable);
    assert_eq!(report.dimension, Some(WIDTH));
    let [mr, trec, sick] = &report.tasks[..] else {
        panic!("three tasks")
    };
    assert_eq!(mr.scheme, Scheme::InnerKFold);
    assert_eq!(mr.splits, ["all"]);
    assert_eq!(mr.fold_accuracies.len(), 5);
    assert_eq!(mr.chosen_c.len(), 5);
    assert_eq!(mr.interval_over, "outer folds");
    assert_eq!(mr.scored, 120);
    assert_eq!(trec.scheme, Scheme::KFoldThenTest);
    assert_eq!(trec.splits, ["train", "test"]);
    assert_eq!(trec.grid, K_FOLD_GRID);
    assert_eq!(trec.classes, ["0", "1", "2"]);
    assert_eq!(trec.scored, 60);
    assert_eq!(sick.scheme, Scheme::TrainDevTest);
    assert_eq!(sick.splits, ["train", "dev", "test"]);
    assert_eq!(sick.input, Input::Pairs);
    assert_eq!(sick.features, 2 * WIDTH);
    assert_eq!(sick.classes, ["CONTRADICTION", "ENTAILMENT", "NEUTRAL"]);
    for t in &report.tasks {
        // the words separate the classes: far above chance, not perfect
        assert!(t.accuracy > 0.6, "{}: {}", t.dataset, t.accuracy);
        let ci = t.ci95.unwrap();
        assert!(
            ci.low <= t.accuracy && t.accuracy <= ci.high,
            "{}: {ci:?}",
            t.dataset
        );
        assert!(t.chosen_c.iter().all(|c| t.grid.contains(c)));
        assert!(t.validation.iter().all(|v| v.len() == t.grid.len()));
        // three-class and one-split tasks have no F1
        assert!(t.f1.is_none());
    }
    let mean = report.tasks.iter().map(|t| t.accuracy).sum::<f64>() / 3.0;
    assert!((report.score - mean).abs() < 1e-12);
    let ci = report.ci95.unwrap();
    assert!(ci.low < report.score && report.score < ci.high, "{ci:?}");
    assert_eq!(report.rows_used().len(), 1 + 2 + 3);
}

#[test]
fn same_seed_same_bytes_on_any_thread_count() {
    let dir = mirror();
    let root = DataRoot::new(dir.path());
    let on = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| run(&root, &TASKS, options()).unwrap())
    };
    let one = without_timings(&on(1));
    assert_eq!(one, without_timings(&on(3)));
    let other = run(
        &root,
        &TASKS,
        Options {
            seed: RunSeed(12),
            ..options()
        },
    )
    .unwrap();
    assert_ne!(one, without_timings(&other));
}

#[test]
fn a_binary_pair_task_gives_f1() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
    for (split, rows) in [("train", 100), ("test", 40)] {
        let mut body = String::new();
        for i in 0..rows {
            let label = i % 2;
            let a = sentence(&mut rng, 0);
            // a paraphrase shares its pool, a non-paraphrase does not
            let b = sentence(&mut rng, if label == 1 { 0 } else { 2 });
            body += &(serde_json::json!({"sentence1": a, "sentence2": b, "label": label})
                .to_string()
                + "\n");
        }
        let file = dir.path().join(format!("paraphrase/mrpc/{split}.jsonl"));
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, body).unwrap();
    }
    let root = DataRoot::new(dir.path());
    let report = run(&root, &[("mrpc", "test")], options()).unwrap();
    let mrpc = &report.tasks[0];
    assert_eq!(mrpc.classes, ["0", "1"]);
    let f1 = mrpc.f1.unwrap();
    assert!(f1 > 0.5, "{f1}");
    let ci = mrpc.f1_ci95.unwrap();
    assert!(ci.low <= f1 && f1 <= ci.high);
}

#[test]
fn a_metric_is_not_applicable_and_has_no_score() {
    let report = not_applicable("bm25", Options::default());
    assert_eq!(SuiteReport::score(&report), None);
    assert!(report.notes[0].contains("not applicable"));
    let json = serde_json::to_string(&report).unwrap();
    assert!(json.contains("\"score\":null"), "{json}");
    let back: TransferReport = serde_json::from_str(&json).unwrap();
    assert!(back.score.is_nan());
}

#[test]
fn the_scheme_follows_the_splits() {
    let root = DataRoot::without_mirror();
    let scheme = |name, split| scheme_of(&root, name, split).unwrap();
    assert_eq!(scheme("mr", "all").0, Scheme::InnerKFold);
    assert_eq!(
        scheme("trec", "test"),
        (Scheme::KFoldThenTest, vec!["train".into(), "test".into()])
    );
    assert_eq!(scheme("mrpc", "test").0, Scheme::KFoldThenTest);
    for name in ["sst2", "sst5", "sick-e", "scicite"] {
        assert_eq!(
            scheme(name, "test"),
            (
                Scheme::TrainDevTest,
                vec!["train".into(), "dev".into(), "test".into()]
            ),
            "{name}"
        );
    }
    // dev scored: chosen by a k-fold over train
    assert_eq!(scheme("sst2", "dev").0, Scheme::KFoldThenTest);
    let e = scheme_of(&root, "trec", "nope").unwrap_err().to_string();
    assert!(e.contains("nope"), "{e}");
}

#[test]
fn bad_input_is_named_and_nothing_is_scored() {
    let dir = mirror();
    let write = |path: &str, body: &str| {
        let file = dir.path().join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, body).unwrap();
    };
    // one class only
    write(
        "classification/cr/all.jsonl",
        &(0..20)
            .map(|i| format!("{{\"text\": \"word{i} alpha\", \"label\": \"pos\"}}\n"))
            .collect::<String>(),
    );
    // a test class never trained on
    write(
        "classification/sst5/train.jsonl",
        &(0..20)
            .map(|i| format!("{{\"text\": \"w{i}\", \"label\": \"{}\"}}\n", i % 2))
            .collect::<String>(),
    );
    write(
        "classification/sst5/dev.jsonl",
        "{\"text\": \"a\", \"label\": \"0\"}\n{\"text\": \"b\", \"label\": \"1\"}\n",
    );
    write(
        "classification/sst5/test.jsonl",
        "{\"text\": \"a\", \"label\": \"0\"}\n{\"text\": \"c\", \"label\": \"4\"}\n",
    );
    // a class rarer than the folds
    write(
        "classification/subj/all.jsonl",
        &(0..20)
            .map(|i| {
                format!(
                    "{{\"text\": \"w{i}\", \"label\": \"{}\"}}\n",
                    if i < 2 { "rare" } else { "common" }
                )
            })
            .collect::<String>(),
    );
    let root = DataRoot::new(dir.path());
    let e = run(&root, &[("cr", "all")], options())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("cr/all") && e.contains("at least two classes"),
        "{e}"
    );
    let e = run(&root, &[("sst5", "test")], options())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("sst5/test") && e.contains("row 2") && e.contains("\"4\""),
        "{e}"
    );
    let e = run(&root, &[("subj", "all")], options())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("subj/all") && e.contains("fewer than the 5 folds"),
        "{e}"
    );
    let e = evaluate(
        &HashedWords::poisoned(true),
        "nan",
        &root,
        &[("mr", "all")],
        options(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("mr/all") && e.contains("NaN"), "{e}");
}

#[test]
fn export_writes_the_features_labels_and_folds_it_ran() {
    let dir = mirror();
    let out = tempfile::tempdir().unwrap();
    let root = DataRoot::new(dir.path());
    let report = run(
        &root,
        &TASKS,
        Options {
            export: Some(out.path().to_string_lossy().into_owned()),
            ..options()
        },
    )
    .unwrap();
    let plan: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.path().join("mr_all.json")).unwrap()).unwrap();
    assert_eq!(plan["scheme"], "inner-k-fold");
    assert_eq!(plan["folds"].as_array().unwrap().len(), 5);
    assert_eq!(plan["inner_folds"].as_array().unwrap().len(), 5);
    assert_eq!(plan["labels"]["all"].as_array().unwrap().len(), 120);
    let npy = std::fs::read(out.path().join("mr_all.all.npy")).unwrap();
    assert!(npy.len() > 120 * WIDTH * 8);
    let sick: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.path().join("sick-e_test.json")).unwrap())
            .unwrap();
    assert_eq!(sick["features"]["dev"], "sick-e_test.dev.npy");
    assert!(sick["folds"].as_array().unwrap().is_empty());
    // exporting changes nothing scored
    assert_eq!(report.tasks, run(&root, &TASKS, options()).unwrap().tasks);
}

/// A user's own files are tasks like the shipped ones: a CSV of labelled texts (one split: an
/// inner k-fold) and a folder of three-way pair files (train, dev, test: chosen on dev), read
/// by the kind the user names.
#[test]
fn a_users_own_files_are_transfer_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(17);
    let mut csv = String::from("text,label\n");
    for i in 0..90 {
        csv += &format!(
            "{},{}\n",
            sentence(&mut rng, i % 3),
            ["billing", "login", "refund"][i % 3]
        );
    }
    std::fs::write(dir.path().join("tickets.csv"), csv).unwrap();
    let nli = dir.path().join("nli");
    std::fs::create_dir_all(&nli).unwrap();
    for (split, rows) in [("train", 90), ("dev", 30), ("test", 30)] {
        let mut body = String::from("sentence1\tsentence2\tlabel\n");
        for i in 0..rows {
            let class = i % 3;
            body += &format!(
                "{}\t{}\t{}\n",
                sentence(&mut rng, class),
                sentence(&mut rng, class),
                ["yes", "maybe", "no"][class]
            );
        }
        std::fs::write(nli.join(format!("{split}.tsv")), body).unwrap();
    }
    let mut root = DataRoot::without_mirror();
    root.add_user(
        "tickets",
        &sage_data::user::UserSpec {
            path: dir.path().join("tickets.csv"),
            ..Default::default()
        },
    )
    .unwrap();
    root.add_user(
        "nli",
        &sage_data::user::UserSpec {
            path: nli,
            kind: Some("pair-classes".into()),
            ..Default::default()
        },
    )
    .unwrap();
    let report = run(&root, &[("tickets", "test"), ("nli", "test")], options()).unwrap();
    let [tickets, nli] = &report.tasks[..] else {
        panic!("two tasks")
    };
    assert_eq!(tickets.scheme, Scheme::InnerKFold);
    assert_eq!(tickets.classes, ["billing", "login", "refund"]);
    assert_eq!(nli.scheme, Scheme::TrainDevTest);
    assert_eq!(nli.input, Input::Pairs);
    assert_eq!(nli.classes, ["maybe", "no", "yes"]);
    assert!(
        tickets.accuracy > 0.6 && nli.accuracy > 0.5,
        "{tickets:?} {nli:?}"
    );
}
