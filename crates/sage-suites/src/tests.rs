use serde_json::json;

use super::*;

use sage_testkit::fixtures;

fn find(name: &str) -> Result<&'static dyn Suite> {
    static STANDARD: std::sync::LazyLock<Registry> = std::sync::LazyLock::new(Registry::standard);
    STANDARD.find(name)
}

fn without_timings(mut report: Value) -> Value {
    report.as_object_mut().unwrap().remove("timings");
    report
}

/// A one-dimensional embedder: the text's length.
struct Lengths(sage_core::EmbedderIdentity);

impl Default for Lengths {
    fn default() -> Self {
        Lengths(sage_core::EmbedderIdentity {
            model_id: "lengths".into(),
            revision: None,
            pooling: "none".into(),
            normalize: false,
            max_length: 0,
        })
    }
}

impl Embedder for Lengths {
    fn identity(&self) -> &sage_core::EmbedderIdentity {
        &self.0
    }
    fn embed(&self, texts: &[&str]) -> sage_core::Result<ndarray::Array2<f32>> {
        Ok(ndarray::Array2::from_shape_fn(
            (texts.len(), 1),
            |(i, _)| texts[i].len() as f32,
        ))
    }
    fn dimension(&self) -> usize {
        1
    }
}

#[test]
fn every_suite_is_found_by_its_name_once() {
    let registry = Registry::standard();
    let names: Vec<&str> = registry.suites().map(|s| s.name()).collect();
    for name in &names {
        assert_eq!(find(name).unwrap().name(), *name);
        assert_eq!(names.iter().filter(|n| *n == name).count(), 1, "{name}");
    }
    let e = find("sensitivty").err().unwrap().to_string();
    assert!(
        e.contains("\"sensitivty\"") && e.contains("sensitivity, clustering"),
        "{e}"
    );
}

#[test]
fn a_registered_run_is_the_suite_crates_run_with_the_requests_seed_and_options() {
    let root = fixtures();
    let mut request = Request::new(&root);
    request.datasets = vec![("cnn-dailymail".into(), "sample".into())];
    request.seed = RunSeed(7);
    request.options = json!({"max_rows": 3, "truncate_tokens": 64})
        .as_object()
        .unwrap()
        .clone();
    let outcome = find("sensitivity")
        .unwrap()
        .run(&Subject::Metric(Metric::JACCARD), &request)
        .unwrap();
    let direct = sage_sensitivity::evaluate(
        Metric::JACCARD.similarity().as_ref(),
        &root,
        &[("cnn-dailymail", "sample")],
        sage_sensitivity::Options {
            max_rows: Some(3),
            truncate_tokens: Some(64),
            seed: RunSeed(7),
        },
    )
    .unwrap();
    assert_eq!(
        without_timings(outcome.report),
        without_timings(serde_json::to_value(direct).unwrap())
    );
    assert!(outcome.notes.is_empty());
}

#[test]
fn absent_options_keep_the_suites_defaults_and_null_clears_one() {
    let defaults: sage_sensitivity::Options = options("sensitivity", &Map::new()).unwrap();
    assert_eq!(defaults, sage_sensitivity::Options::default());
    let whole: sage_sensitivity::Options = options(
        "sensitivity",
        json!({"truncate_tokens": null}).as_object().unwrap(),
    )
    .unwrap();
    assert_eq!(whole.truncate_tokens, None);
    let replace: sage_retrieval::Options =
        options("retrieval", json!({"mode": "replace"}).as_object().unwrap()).unwrap();
    assert_eq!(replace.mode, sage_retrieval::Mode::Replace);
}

#[test]
fn a_misspelt_or_mistyped_option_is_named() {
    let root = fixtures();
    let mut request = Request::new(&root);
    request.options = json!({"max_row": 3}).as_object().unwrap().clone();
    let e = find("robustness")
        .unwrap()
        .run(&Subject::Metric(Metric::ROUGE), &request)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("robustness: options:") && e.contains("max_row"),
        "{e}"
    );
    // the seed is the request's, never an option
    request.options = json!({"seed": 3}).as_object().unwrap().clone();
    let e = find("clustering")
        .unwrap()
        .run(&Subject::Metric(Metric::ROUGE), &request)
        .unwrap_err()
        .to_string();
    assert!(e.contains("seed"), "{e}");
    request.options = json!({"level": "paragraph"}).as_object().unwrap().clone();
    let model: Arc<dyn Embedder> = Arc::new(Lengths::default());
    let e = find("evalrank")
        .unwrap()
        .run(&Subject::Model(model), &request)
        .unwrap_err()
        .to_string();
    assert!(e.contains("paragraph"), "{e}");
}

/// The ranges the command line documents hold for every caller: Python keywords and
/// `--options` reach a suite as this JSON, past clap's flag checks.
#[test]
fn an_option_outside_its_range_is_named_before_any_data_is_read() {
    let root = fixtures();
    for (suite, options, named) in [
        (
            "clustering",
            json!({"subsets": 0}),
            "subsets = 0 is outside its range 1 to 1000",
        ),
        ("clustering", json!({"max_texts": 1}), "max_texts = 1"),
        ("retrieval", json!({"max_docs": 0}), "max_docs = 0"),
        ("retrieval", json!({"pair_budget": 10}), "pair_budget = 10"),
        ("sensitivity", json!({"max_rows": 0}), "max_rows = 0"),
        (
            "robustness",
            json!({"truncate_tokens": 0}),
            "truncate_tokens = 0",
        ),
        ("human-pref", json!({"margin": -1.0}), "margin = -1"),
        ("align-sim", json!({"max_rows": 0}), "max_rows = 0"),
        ("noise", json!({"rates": [2.0]}), "rate"),
        ("throughput", json!({"repeats": 0}), "repeats = 0"),
    ] {
        let mut request = Request::new(&root);
        // a dataset that is not there: only a check before reading could name the option
        request.datasets = vec![("no-such-dataset".into(), "test".into())];
        request.options = options.as_object().unwrap().clone();
        let e = find(suite)
            .unwrap()
            .run(&Subject::Metric(Metric::ROUGE), &request)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!("{suite}: options:")) && e.contains(named),
            "{suite} {options}: {e}"
        );
    }
}

#[test]
fn malformed_datasets_and_misfit_subjects_are_refused() {
    let root = fixtures();
    let hints = sage_data::PathHints::default();
    let mut resolving = root.clone();
    let e = parse_datasets(&mut resolving, &["mrpc"], &hints)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("mrpc: name a split") && e.contains("train, test"),
        "{e}"
    );
    let e = parse_datasets(&mut resolving, &["/test"], &hints)
        .unwrap_err()
        .to_string();
    assert!(e.contains("/test") && e.contains("no such file"), "{e}");
    let e = parse_datasets(&mut resolving, &["nosuch/test"], &hints)
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown dataset \"nosuch\""), "{e}");
    let mut request = Request::new(&root);
    request.options = json!({"level": "word"}).as_object().unwrap().clone();
    let e = find("evalrank")
        .unwrap()
        .run(&Subject::Metric(Metric::BM25), &request)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("give an embedding model, not the metric bm25"),
        "{e}"
    );
    assert!(!find("evalrank").unwrap().takes_metrics());
}

#[test]
fn missing_default_datasets_become_notes_and_none_local_is_an_error() {
    let root = fixtures();
    let request = Request::new(&root);
    let mut notes = Vec::new();
    let present = datasets_or_local_defaults(
        "test",
        &[],
        &request,
        &[("cnn-dailymail", "sample"), ("no-such-set", "test")],
        &mut notes,
    )
    .unwrap();
    assert_eq!(present, vec![("cnn-dailymail".into(), "sample".into())]);
    assert_eq!(notes.len(), 1);
    assert!(
        notes[0].starts_with("skipped: ") && notes[0].contains("no-such-set"),
        "{notes:?}"
    );
    let empty = DataRoot::new(std::env::temp_dir().join("sage-suites-no-mirror"));
    let e = find("robustness")
        .unwrap()
        .run(&Subject::Metric(Metric::ROUGE), &Request::new(&empty))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("none of its datasets is in the local mirror"),
        "{e}"
    );
}

/// PTEB's options are read before anything is loaded: a missing paraphraser, a misspelt option
/// or LLM setting, and a metric as the subject are each named.
#[test]
fn pteb_says_what_is_missing_or_misspelt_before_loading_anything() {
    let root = fixtures();
    let model = Subject::Model(Arc::new(Lengths::default()));
    let run = |options: Value| {
        let mut request = Request::new(&root);
        request.options = options.as_object().unwrap().clone();
        find("pteb")
            .unwrap()
            .run(&model, &request)
            .err()
            .unwrap()
            .to_string()
    };
    let e = run(json!({}));
    assert!(
        e.contains("pteb: options: name the paraphrasing LLM"),
        "{e}"
    );
    let e = run(json!({"paraphraser": "x", "run": 2}));
    assert!(e.contains("unknown field `run`"), "{e}");
    let e = run(json!({"paraphraser": "x", "llm": {"temprature": 0.5}}));
    assert!(e.contains("unknown field `temprature`"), "{e}");
    // a partial gate keeps the other thresholds' defaults
    let e = run(json!({
        "paraphraser": "/nonexistent/model.gguf",
        "gate": {"min_reference_cosine": 0.9},
        "no_paraphrase_cache": true
    }));
    assert!(e.contains("/nonexistent/model.gguf"), "{e}");
    let metric = Subject::Metric(sage_metrics::Metric::JACCARD);
    let e = find("pteb")
        .unwrap()
        .run(&metric, &Request::new(&root))
        .err()
        .unwrap()
        .to_string();
    assert!(e.starts_with("pteb: "), "{e}");
}

/// Three letter counts per text: vectors whose cosines differ from pair to pair (EvalRank's
/// classic Spearman needs that; one dimension gives every pair cosine 1).
struct Letters(sage_core::EmbedderIdentity);

impl Embedder for Letters {
    fn identity(&self) -> &sage_core::EmbedderIdentity {
        &self.0
    }
    fn embed(&self, texts: &[&str]) -> sage_core::Result<ndarray::Array2<f32>> {
        Ok(ndarray::Array2::from_shape_fn(
            (texts.len(), 3),
            |(i, j)| {
                let letter = ['a', 'e', 'o'][j];
                1.0 + texts[i].chars().filter(|c| *c == letter).count() as f32
            },
        ))
    }
    fn dimension(&self) -> usize {
        3
    }
}

/// Every suite's report reads back into its crate's typed report and writes the same JSON: what
/// a reader (the report, a notebook) can rely on. The seed is not the default, so a field that
/// does not survive the trip shows.
#[test]
fn every_report_reads_back_into_its_type_unchanged() {
    fn round_trip<T: serde::de::DeserializeOwned + serde::Serialize>(suite: &str, report: &Value) {
        let typed: T =
            serde_json::from_value(report.clone()).unwrap_or_else(|e| panic!("{suite}: {e}"));
        assert_eq!(&serde_json::to_value(&typed).unwrap(), report, "{suite}");
    }
    let root = fixtures();
    let run = |suite: &str, subject: &Subject, options: Value| {
        let mut request = Request::new(&root);
        request.seed = RunSeed(11);
        request.options = options.as_object().unwrap().clone();
        find(suite).unwrap().run(subject, &request).unwrap().report
    };
    let jaccard = Subject::Metric(Metric::JACCARD);
    let letters = Subject::Model(Arc::new(Letters(Lengths::default().0)));
    round_trip::<sage_human_pref::HumanPrefReport>(
        "human-pref",
        &run("human-pref", &jaccard, json!({"max_rows": 5})),
    );
    round_trip::<sage_robustness::RobustnessReport>(
        "robustness",
        &run("robustness", &jaccard, json!({"max_rows": 5})),
    );
    round_trip::<sage_sensitivity::SensitivityReport>(
        "sensitivity",
        &run("sensitivity", &jaccard, json!({"max_rows": 3})),
    );
    round_trip::<sage_cluster::ClusterReport>(
        "clustering",
        &run("clustering", &jaccard, json!({})),
    );
    round_trip::<sage_retrieval::RetrievalReport>(
        "retrieval",
        &run("retrieval", &jaccard, json!({})),
    );
    round_trip::<align_sim::AlignSimReport>("align-sim", &run("align-sim", &jaccard, json!({})));
    round_trip::<evalrank::EvalRankReport>(
        "evalrank",
        &run("evalrank", &letters, json!({"level": "word"})),
    );
    let e = find("sensitivity")
        .unwrap()
        .run(&jaccard, &{
            let mut request = Request::new(&root);
            request.options = json!({"seed": 3}).as_object().unwrap().clone();
            request
        })
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("the seed is the run's"), "{e}");
}

/// A metric registered beside the shipped ones is what its name means in `--similarity`; a
/// name registered twice is a programming error caught at registration.
#[test]
fn registered_metrics_are_subjects_and_names_are_unique() {
    struct Half;
    impl sage_core::Similarity for Half {
        fn name(&self) -> &str {
            "constant"
        }
        fn score(&self, _: &str, _: &str) -> sage_core::Result<f32> {
            Ok(0.5)
        }
    }
    let constant = sage_metrics::Metric::new("constant", || Box::new(Half));
    let registry = Registry::standard().with_metric(constant);
    let subject = registry
        .subject(
            "constant",
            |_| -> std::result::Result<Arc<dyn Embedder>, String> { Err("not a model".into()) },
        )
        .unwrap();
    assert!(matches!(subject, Subject::Metric(m) if m == constant));
    let e = registry
        .subject(
            "constent",
            |spec| -> std::result::Result<Arc<dyn Embedder>, String> {
                Err(format!("no model {spec}"))
            },
        )
        .err()
        .unwrap();
    assert_eq!(e, "no model constent");
    assert_eq!(
        registry.metric("nope").unwrap_err().to_string(),
        "unknown metric \"nope\"; known metrics: bm25, jaccard, levenshtein, rouge, constant"
    );
    let twice = std::panic::catch_unwind(|| {
        Registry::standard()
            .with_metric(constant)
            .with_metric(constant)
    });
    assert!(twice.is_err());
    let twice = std::panic::catch_unwind(|| Registry::standard().with_suite(ROBUSTNESS));
    assert!(twice.is_err());
}

/// EvalRank on the user's own lists: text pairs as positives, a vocabulary as background, no
/// classic score without an STS set; a dataset of another kind is named with the kinds it takes.
#[test]
fn evalrank_ranks_the_users_pairs_against_the_users_background() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("pairs.csv"),
        "a,b\ncar,automobile\nfast,quick\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("words.csv"),
        "text\ntree\nhouse\ncar\nriver\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("docs.jsonl"),
        "{\"text\": \"a document\"}\n",
    )
    .unwrap();
    let mut root = DataRoot::without_mirror();
    let spec = |file: &str, kind: Option<&str>| sage_data::user::UserSpec {
        path: dir.path().join(file),
        kind: kind.map(str::to_owned),
        ..Default::default()
    };
    root.add_user("pairs", &spec("pairs.csv", None)).unwrap();
    root.add_user("words", &spec("words.csv", Some("vocabulary")))
        .unwrap();
    root.add_user("docs", &spec("docs.jsonl", None)).unwrap();
    let model = Subject::Model(Arc::new(Lengths::default()));
    let mut request = Request::new(&root);
    request.options = json!({"level": "sentence", "similarity": "l2"})
        .as_object()
        .unwrap()
        .clone();
    request.datasets = vec![
        ("pairs".into(), "test".into()),
        ("words".into(), "test".into()),
    ];
    let report = find("evalrank")
        .unwrap()
        .run(&model, &request)
        .unwrap()
        .report;
    assert_eq!(report["lists"]["source"], "datasets");
    assert_eq!(
        report["lists"]["pair_count"], 4,
        "both directions of two pairs"
    );
    // tree, house, car, river, automobile, fast, quick: every positive text is background too
    assert_eq!(report["lists"]["background_count"], 7);
    assert!(report.get("classic").is_none(), "{report}");
    request.datasets.push(("docs".into(), "test".into()));
    let e = find("evalrank")
        .unwrap()
        .run(&model, &request)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("takes text-pairs, sts-pairs, vocabulary; dataset docs holds documents"),
        "{e}"
    );
}

/// The throughput suite times a metric and a model on the same texts of its default datasets,
/// each length named, and says where the texts came from and on which host.
#[test]
fn throughput_times_a_metric_and_a_model_on_the_same_texts() {
    // the default datasets, large enough for every length (the fixtures hold a few rows)
    let dir = tempfile::tempdir().unwrap();
    let sts = dir.path().join("sts/stsb");
    let essays = dir.path().join("documents/paul_graham_essays");
    std::fs::create_dir_all(&sts).unwrap();
    std::fs::create_dir_all(&essays).unwrap();
    let pairs: String = (0..100)
        .map(|i| {
            json!({"sentence1": format!("A man plays guitar number {i}."),
                   "sentence2": format!("Someone is playing the guitar {i}."), "score": 3.0})
            .to_string()
                + "\n"
        })
        .collect();
    std::fs::write(sts.join("test.jsonl"), pairs).unwrap();
    let long: String = (0..4)
        .map(|i| {
            json!({"id": i.to_string(), "text": format!("Essay {i}. ") + &"How to start a startup and grow it. ".repeat(150)})
            .to_string()
                + "\n"
        })
        .collect();
    std::fs::write(essays.join("sample.jsonl"), long).unwrap();
    let root = sage_data::DataRoot::new(dir.path());
    let mut request = Request::new(&root);
    request.options = json!({"texts_per_length": 6, "repeats": 2, "latency_calls": 3})
        .as_object()
        .unwrap()
        .clone();
    let suite = find("throughput").unwrap();
    let model: Arc<dyn Embedder> = Arc::new(Lengths::default());
    for subject in [Subject::Metric(Metric::JACCARD), Subject::Model(model)] {
        let outcome = suite.run(&subject, &request).unwrap();
        let r = &outcome.report;
        let lengths: Vec<&str> = r["lengths"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["length"].as_str().unwrap())
            .collect();
        assert_eq!(lengths, ["short", "medium", "window"], "{r}");
        for l in r["lengths"].as_array().unwrap() {
            assert_eq!(l["texts"], 6);
            assert_eq!(l["seconds"]["runs"].as_array().unwrap().len(), 2);
            assert!(l["per_second"]["best"].as_f64().unwrap() > 0.0);
        }
        let datasets: Vec<&str> = r["datasets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["dataset"].as_str().unwrap())
            .collect();
        assert_eq!(datasets, ["stsb", "paul-graham-essays"]);
        assert!(r["host"]["arch"].is_string());
        assert_eq!(
            r["latency"].is_object(),
            matches!(subject, Subject::Model(_))
        );
        assert!(outcome.notes.is_empty(), "{:?}", outcome.notes);
    }
    // a precision this CPU only emulates is timed, and said to be no speed-up
    let emulated: Arc<dyn Embedder> = Arc::new(Emulated(Lengths::default()));
    let outcome = suite.run(&Subject::Model(emulated), &request).unwrap();
    assert_eq!(outcome.report["compute"], "cpu bf16 bf16-emulated");
    assert!(
        outcome
            .notes
            .iter()
            .any(|n| n.contains("emulated in float32")),
        "{:?}",
        outcome.notes
    );
}

/// A model at a lower precision is a similarity of its own: its results folder and name say
/// the precision, its spec stays the one given.
#[test]
fn a_lower_precision_names_its_results_apart() {
    let mut identity = Lengths::default().0;
    identity.pooling = format!("mean{}int8", sage_core::PRECISION_MARK);
    assert_eq!(identity.precision(), Some("int8"));
    assert_eq!(Lengths::default().0.precision(), None);
    let lower: Arc<dyn Embedder> = Arc::new(Lengths(identity));
    let record = Subject::Model(lower).record(Some("all-MiniLM-L6-v2"));
    assert_eq!(record.name, "all-MiniLM-L6-v2@int8");
    assert_eq!(record.spec, "all-MiniLM-L6-v2");
    let plain: Arc<dyn Embedder> = Arc::new(Lengths::default());
    assert_eq!(
        Subject::Model(plain).record(Some("all-MiniLM-L6-v2")).name,
        "all-MiniLM-L6-v2"
    );
}

/// [`Lengths`] as a model computing bf16 on a CPU that can only emulate it.
struct Emulated(Lengths);

impl Embedder for Emulated {
    fn identity(&self) -> &sage_core::EmbedderIdentity {
        self.0.identity()
    }
    fn embed(&self, texts: &[&str]) -> sage_core::Result<ndarray::Array2<f32>> {
        self.0.embed(texts)
    }
    fn dimension(&self) -> usize {
        1
    }
    fn compute(&self) -> Option<String> {
        Some("cpu bf16 bf16-emulated".into())
    }
}

/// Every shipped suite hints the cost of the task it writes by default, so that bench-all's
/// shard planner reads nothing of its own; EvalRank hints each level, whose result files are
/// named by the level.
#[test]
fn every_shipped_suite_hints_its_jobs_costs() {
    for info in Registry::standard().catalogue() {
        assert!(!info.cost_hints.is_empty(), "{}", info.name);
        for hint in &info.cost_hints {
            assert!(
                hint.model_seconds > 0.0 && hint.metric_seconds >= 0.0,
                "{}: {hint:?}",
                info.name
            );
            assert!(
                hint.quick_share > 0.0 && hint.quick_share <= 1.0,
                "{}: {hint:?}",
                info.name
            );
        }
        let tasks: Vec<&str> = info.cost_hints.iter().map(|h| h.task.as_str()).collect();
        if info.name == "evalrank" {
            assert_eq!(tasks, ["word", "sentence"]);
        } else {
            assert_eq!(tasks, [info.result_task.as_str()], "{}", info.name);
        }
    }
}

/// The rows an outcome names are those its typed report used, read from its fields: every
/// clustering subset, each retrieval corpus, and a rating source's rows once though two of its
/// sub-tasks read them; the score is the report's.
#[test]
fn an_outcome_names_the_rows_its_report_used_and_its_score() {
    let root = fixtures();
    let run = |suite: &str| {
        find(suite)
            .unwrap()
            .run(&Subject::Metric(Metric::JACCARD), &Request::new(&root))
            .unwrap()
    };

    let clustering = run("clustering");
    let subsets: Vec<(String, String)> = clustering.report["datasets"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|d| {
            d["subsets"].as_array().unwrap().iter().map(|s| {
                (
                    d["dataset"].as_str().unwrap().to_owned(),
                    s["checksum"].as_str().unwrap().to_owned(),
                )
            })
        })
        .collect();
    let named: Vec<(String, String)> = clustering
        .rows_used
        .iter()
        .map(|r| match r {
            sage_core::RowsUsed::Subset(s) => (s.dataset.clone(), s.checksum.clone()),
            other => panic!("clustering named {other:?}"),
        })
        .collect();
    assert!(!named.is_empty());
    assert_eq!(named, subsets);
    assert_eq!(clustering.score, clustering.report["score"].as_f64());

    let retrieval = run("retrieval");
    let corpora = retrieval.report["datasets"].as_array().unwrap();
    assert_eq!(retrieval.rows_used.len(), corpora.len());
    for (record, d) in retrieval.rows_used.iter().zip(corpora) {
        let sage_core::RowsUsed::Corpus(c) = record else {
            panic!("retrieval named {record:?}");
        };
        assert_eq!(c.dataset, d["dataset"].as_str().unwrap());
        assert_eq!(c.corpus_checksum, d["corpus_checksum"].as_str().unwrap());
        assert_eq!(c.corpus_used as u64, d["corpus_used"].as_u64().unwrap());
        assert_eq!(c.queries as u64, d["queries"].as_u64().unwrap());
    }

    let human = run("human-pref");
    let sources = human.report["sources"].as_array().unwrap();
    let mut selections: Vec<&Value> = Vec::new();
    for s in sources {
        for part in ["comparisons", "correlations"] {
            let rows = &s[part]["rows"];
            if !selections.contains(&rows) {
                selections.push(rows);
            }
        }
    }
    let named: Vec<Value> = human
        .rows_used
        .iter()
        .map(|r| match r {
            sage_core::RowsUsed::Rows(rows) => serde_json::to_value(rows).unwrap(),
            other => panic!("human-pref named {other:?}"),
        })
        .collect();
    assert_eq!(named.iter().collect::<Vec<_>>(), selections);
    assert!(
        named.len() < 2 * sources.len(),
        "a shared selection is named once"
    );
    assert_eq!(human.score, human.report["score"].as_f64());
}
