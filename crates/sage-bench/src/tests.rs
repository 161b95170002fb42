use crate::*;

#[test]
fn the_embedded_default_parses_and_quick_shrinks_it() {
    let config = Config::parse(DEFAULT_CONFIG, "bench.toml").unwrap();
    assert_eq!(
        config.similarities.metrics,
        ["levenshtein", "rouge", "jaccard", "bm25"]
    );
    assert_eq!(config.sage.tasks, SAGE_TASKS);
    let quick = Config::parse(DEFAULT_CONFIG, "bench.toml").unwrap().quick();
    assert!(quick.sage.cluster_max_texts < config.sage.cluster_max_texts);
    assert!(quick.sage.max_rows > 0);
    // a suite's quick options replace its options of the same name, and keep the rest
    let noise = |c: &Config| c.suites["noise"].options.clone();
    assert_eq!(noise(&config)["max_queries"], 100);
    assert_eq!(noise(&quick)["max_queries"], 10);
    assert_eq!(noise(&quick)["lengths"], serde_json::json!([256]));
    assert_eq!(noise(&quick)["max_rows"], 30);
}

#[test]
fn bad_configurations_name_the_file_and_the_field() {
    let error = |text: &str| format!("{:#}", Config::parse(text, "my.toml").unwrap_err());
    // the top-level message alone names the file and the bad value
    let e = Config::parse(&DEFAULT_CONFIG.replace("\"bm25\"]", "\"bm42\"]"), "my.toml")
        .unwrap()
        .check_against(&shipped_metrics(), &shipped_suites())
        .unwrap_err()
        .to_string();
    assert!(e.contains("my.toml") && e.contains("bm42"), "{e}");
    let e = Config::parse(
        &format!("{DEFAULT_CONFIG}\n[suites.nope]\nenabled = true\n"),
        "my.toml",
    )
    .unwrap()
    .check_against(&shipped_metrics(), &shipped_suites())
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("my.toml: suites.nope") && e.contains("align-sim"),
        "{e}"
    );
    let e = error(&format!(
        "{DEFAULT_CONFIG}\n[suites.robustness]\nenabled = false\n"
    ));
    assert!(
        e.contains("suites.robustness") && e.contains("[sage]"),
        "{e}"
    );
    let e = error(&DEFAULT_CONFIG.replace("seed = 1337", "seed = \"x\""));
    assert!(e.contains("my.toml") && e.contains("seed"), "{e}");
    let e = error(&DEFAULT_CONFIG.replace("[remote]\n", "[remote]\nsurprise = 1\n"));
    assert!(e.contains("surprise"), "{e}");
    let e =
        error(&DEFAULT_CONFIG.replace("[remote.prices]\n", "[remote.prices]\n\"x\" = \"cheap\"\n"));
    assert!(e.contains("remote.prices") || e.contains("cheap"), "{e}");
    let e = error(&DEFAULT_CONFIG.replace("[pteb]\n", "[pteb]\nllm_attention = \"pool\"\n"));
    assert!(
        e.contains("my.toml") && e.contains("pool") && e.contains("per-request"),
        "{e}"
    );
    let e =
        error(&DEFAULT_CONFIG.replace("datasets = {}", "datasets = { retrieval = [\"scifact\"] }"));
    assert!(
        e.contains("sage.datasets.retrieval") && e.contains("name/split"),
        "{e}"
    );
}

#[test]
fn pteb_runs_after_every_other_suite() {
    let mut config = Config::parse(DEFAULT_CONFIG, "bench.toml").unwrap();
    // a paraphraser and a reference encoder given as paths that exist
    let llm = tempfile::tempdir().unwrap();
    config.pteb.paraphraser = llm.path().display().to_string();
    let similarities = test_similarities(&["bm25", "model-a", "model-b"]);
    let mut skipped = Vec::new();
    config.pteb.quality.encoder = llm.path().join("missing-encoder").display().to_string();
    let jobs = plan(
        &config,
        &shipped_suites(),
        &similarities,
        Path::new("data"),
        &mut skipped,
    );
    assert!(jobs.iter().all(|j| j.suite != "pteb"));
    assert!(
        skipped
            .iter()
            .any(|s| s.suite == "pteb" && s.reason.contains("reference encoder")),
        "{skipped:?}"
    );
    config.pteb.quality.encoder = llm.path().display().to_string();
    skipped.clear();
    let jobs = plan(
        &config,
        &shipped_suites(),
        &similarities,
        Path::new("data"),
        &mut skipped,
    );
    let first_pteb = jobs.iter().position(|j| j.suite == "pteb").unwrap();
    assert!(jobs[first_pteb..].iter().all(|j| j.suite == "pteb"));
    assert_eq!(jobs.len() - first_pteb, 2, "one PTEB job per model");
    // the rest keeps its order: similarity by similarity
    assert_eq!(jobs[0].similarity.spec, "bm25");
    assert_eq!(jobs[first_pteb - 1].similarity.spec, "model-b");
    // the paraphraser's settings are left to `sage` unless the configuration sets them
    assert!(!jobs[first_pteb]
        .args
        .iter()
        .any(|a| a.starts_with("--llm-")));
    config.pteb.llm_batch = 128;
    config.pteb.llm_lanes = 3;
    config.pteb.llm_attention = Some(LlmAttention::PerRequest);
    let jobs = plan(
        &config,
        &shipped_suites(),
        &similarities,
        Path::new("data"),
        &mut skipped,
    );
    let args = jobs.last().unwrap().args.join(" ");
    assert!(
        args.contains("--llm-batch 128 --llm-lanes 3 --llm-attention per-request"),
        "{args}"
    );
    // bench.toml's gate reaches `sage`, each threshold as its flag
    assert!(
        args.contains("--min-reference-cosine 0.78 --low-cosine 0.66 --max-share-below 0.2"),
        "{args}"
    );
    assert!(!args.contains("--pool-unqualified"));
    config.pteb.quality.pool_unqualified = true;
    let jobs = plan(
        &config,
        &shipped_suites(),
        &similarities,
        Path::new("data"),
        &mut skipped,
    );
    assert!(jobs
        .last()
        .unwrap()
        .args
        .contains(&"--pool-unqualified".to_owned()));
}

#[test]
fn static_models_sort_before_transformers() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    let transformer = root.join("bert");
    let glove = root.join("glove");
    std::fs::create_dir_all(&transformer).unwrap();
    std::fs::create_dir_all(&glove).unwrap();
    std::fs::write(transformer.join("model.safetensors"), [0u8; 100]).unwrap();
    std::fs::write(glove.join("glove.txt"), [0u8; 1000]).unwrap();
    assert_eq!(transformer_bytes(&transformer), 100);
    assert_eq!(transformer_bytes(&glove), 0);
    assert_eq!(transformer_bytes(&root.join("missing")), 0);
}

/// `sage suites` of the shipped registry, as far as planning reads it.
/// What `sage suites` lists: the suites with their own sections, then those planned from
/// `[suites.<name>]` (noise, throughput).
fn shipped_suites() -> Vec<ListedSuite> {
    CONFIGURED_SUITES
        .iter()
        .chain(&["noise", "throughput"])
        .map(|&name| {
            let (result_suite, result_task) = match name {
                "evalrank" => ("evalrank", "level"),
                "align-sim" => ("align-sim", "criteria"),
                "pteb" => ("pteb", "mteb"),
                _ if SAGE_TASKS.contains(&name) => ("sage", name),
                _ => (name, name),
            };
            ListedSuite {
                name: name.into(),
                takes_metrics: !matches!(name, "evalrank" | "pteb"),
                result_suite: result_suite.into(),
                result_task: result_task.into(),
                cost_hints: Vec::new(),
            }
        })
        .collect()
}

/// A job's estimate is its suite's own hint (what `sage suites` lists) for the job's task,
/// scaled by the similarity's weight and, under `--quick`, by the hint's share; a task without
/// a hint gets a mid-sized SAGE task's; a finished run's time wins over every hint.
#[test]
fn estimates_come_from_each_suites_own_cost_hint() {
    let hint = |task: &str, metric_seconds, model_seconds, quick_share| sage_core::CostHint {
        task: task.into(),
        metric_seconds,
        model_seconds,
        quick_share,
    };
    let mut suites = shipped_suites();
    for suite in &mut suites {
        suite.cost_hints = match suite.name.as_str() {
            "retrieval" => vec![hint("retrieval", 4.0, 2000.0, 0.01)],
            "evalrank" => vec![
                hint("word", 0.0, 10.0, 1.0),
                hint("sentence", 0.0, 70.0, 1.0),
            ],
            _ => Vec::new(),
        };
    }
    let hints = cost_hints(&suites);
    let config = Config::parse(DEFAULT_CONFIG, "bench.toml").unwrap();
    let jobs = plan(
        &config,
        &suites,
        &test_similarities(&["bm25", "model-a"]),
        Path::new("data"),
        &mut Vec::new(),
    );
    let job = |similarity: &str, suite: &str, task: &str| {
        jobs.iter()
            .find(|j| j.similarity.spec == similarity && j.suite == suite && j.task == task)
            .unwrap_or_else(|| panic!("no job {similarity}/{suite}/{task}"))
    };
    let none = BTreeMap::new();
    let estimate = |j: &Job, weight, quick| shard::estimate(j, weight, quick, &hints, &none);
    assert_eq!(estimate(job("bm25", "sage", "retrieval"), 1.0, false), 4.0);
    assert_eq!(
        estimate(job("model-a", "sage", "retrieval"), 2.0, false),
        4000.0
    );
    assert!((estimate(job("model-a", "sage", "retrieval"), 2.0, true) - 40.0).abs() < 1e-9);
    assert_eq!(
        estimate(job("model-a", "evalrank", "word"), 1.0, false),
        10.0
    );
    assert_eq!(
        estimate(job("model-a", "evalrank", "sentence"), 1.0, true),
        70.0
    );
    // no hint for human-pref here: the unmeasured default
    let unhinted = job("model-a", "sage", "human-pref");
    assert_eq!(
        estimate(unhinted, 1.0, false),
        sage_core::CostHint::unmeasured("human-pref").seconds(true, 1.0, false)
    );
    let measured = BTreeMap::from([(unhinted.id(), 3.5)]);
    assert_eq!(
        shard::estimate(unhinted, 1.0, false, &hints, &measured),
        3.5
    );
}

fn shipped_metrics() -> Vec<String> {
    ["levenshtein", "rouge", "jaccard", "bm25"]
        .map(String::from)
        .to_vec()
}

/// A suite `sage suites` lists beyond the shipped ones runs on every similarity it takes,
/// with `[suites.<name>]`'s datasets and options, into the result file the listing names;
/// `enabled = false` leaves it out.
#[test]
fn a_listed_suite_beyond_the_shipped_ones_is_planned_from_its_table() {
    let toy = |takes_metrics| ListedSuite {
        name: "toy".into(),
        takes_metrics,
        result_suite: "toys".into(),
        result_task: "letters".into(),
        cost_hints: Vec::new(),
    };
    let text = format!(
            "{DEFAULT_CONFIG}\n[suites.toy]\ndatasets = [\"stsb/test\"]\noptions = {{ width = 2, label = \"x\" }}\n"
        );
    let config = Config::parse(&text, "toy.toml").unwrap();
    let similarities = test_similarities(&["bm25", "model-a"]);
    let mut suites = shipped_suites();
    suites.push(toy(true));
    config.check_against(&shipped_metrics(), &suites).unwrap();
    let plan_of = |config: &Config, suites: &[ListedSuite], skipped: &mut Vec<Skipped>| {
        plan(config, suites, &similarities, Path::new("data"), skipped)
    };
    let mut skipped = Vec::new();
    let jobs = plan_of(&config, &suites, &mut skipped);
    let toys: Vec<&Job> = jobs.iter().filter(|j| j.suite == "toys").collect();
    assert_eq!(toys.len(), 2);
    assert_eq!(toys[0].id(), "bm25/toys/letters");
    assert_eq!(
        toys[0].args.join(" "),
        "run toy --similarity bm25 --seed 1337 --data-dir data --dataset stsb/test \
             --options {\"label\":\"x\",\"width\":2}"
    );
    assert!(toys[1].args.contains(&"--batch-tokens".to_owned()));

    // a suite of vectors skips the metric, saying why
    suites.pop();
    suites.push(toy(false));
    let mut skipped = Vec::new();
    let jobs = plan_of(&config, &suites, &mut skipped);
    let toys: Vec<String> = jobs
        .iter()
        .filter(|j| j.suite == "toys")
        .map(Job::id)
        .collect();
    assert_eq!(toys, ["model-a/toys/letters"]);
    assert!(skipped
        .iter()
        .any(|s| s.similarity == "bm25" && s.suite == "toys" && s.reason.contains("toy")));

    let off = Config::parse(
        &format!("{DEFAULT_CONFIG}\n[suites.toy]\nenabled = false\n"),
        "off.toml",
    )
    .unwrap();
    let jobs = plan_of(&off, &suites, &mut Vec::new());
    assert!(jobs.iter().all(|j| j.suite != "toys"));
}

/// `[datasets.<name>]` tables reach every job that names datasets as `--datasets FILE` (sage
/// reads the tables, relative to the file); a job that names none, and a configuration
/// without tables, get nothing.
#[test]
fn user_dataset_tables_go_to_the_jobs_that_name_datasets() {
    let text = DEFAULT_CONFIG.replace(
        "datasets = {}",
        "datasets = { retrieval = [\"mybeir/test\"] }",
    ) + "\n[datasets.mybeir]\npath = \"data/mybeir\"\n";
    let config = Config {
        file: Some(PathBuf::from("/configs/mine.toml")),
        ..Config::parse(&text, "mine.toml").unwrap()
    };
    let similarities = test_similarities(&["bm25"]);
    let jobs = plan(
        &config,
        &shipped_suites(),
        &similarities,
        Path::new("data"),
        &mut Vec::new(),
    );
    let retrieval = jobs.iter().find(|j| j.task == "retrieval").unwrap();
    let args = retrieval.args.join(" ");
    assert!(
        args.contains("--dataset mybeir/test") && args.ends_with("--datasets /configs/mine.toml"),
        "{args}"
    );
    let robustness = jobs.iter().find(|j| j.task == "robustness").unwrap();
    assert!(!robustness.args.contains(&"--datasets".to_owned()));
    // a bare name is still refused before anything runs
    let e = Config::parse(
        &DEFAULT_CONFIG.replace("datasets = {}", "datasets = { retrieval = [\"mybeir\"] }"),
        "bad.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("sage.datasets.retrieval"), "{e}");
}

/// Similarities by spec; those named `model...` are models.
fn test_similarities(specs: &[&str]) -> Vec<Similarity> {
    specs
        .iter()
        .map(|&spec| Similarity {
            label: spec.into(),
            spec: spec.into(),
            is_model: spec.starts_with("model"),
        })
        .collect()
}

fn test_context(prices: BTreeMap<String, f64>) -> RunContext {
    RunContext {
        revision: None,
        host: sage_core::Host::detect(),
        seed: 1,
        data_dir: PathBuf::new(),
        quick: false,
        max_cost_usd: None,
        prices,
        caches: None,
    }
}

/// A shard's model jobs write their own cache files and read the others'; metric jobs touch
/// no cache; an unsharded run passes nothing (sage's default cache). None of it is in the
/// recorded arguments.
#[test]
fn shard_cache_flags_go_to_model_jobs_only() {
    let mut config = Config::parse(DEFAULT_CONFIG, "bench.toml").unwrap();
    let llm = tempfile::tempdir().unwrap();
    config.pteb.paraphraser = llm.path().display().to_string();
    let similarities = test_similarities(&["bm25", "model-a"]);
    let jobs = plan(
        &config,
        &shipped_suites(),
        &similarities,
        Path::new("data"),
        &mut Vec::new(),
    );
    let mut context = test_context(BTreeMap::new());
    assert!(jobs.iter().all(|j| context.cache_args(j).is_empty()));
    context.caches = Some((Shard { index: 2, count: 3 }, PathBuf::from("/c")));
    for job in &jobs {
        let args = context.cache_args(job).join(" ");
        match (job.similarity.is_model, job.suite.as_str()) {
            (false, _) => assert!(args.is_empty(), "{args}"),
            (true, "pteb") => assert_eq!(
                args,
                "--cache /c/embeddings.shard-2.redb --read-caches /c \
                     --paraphrase-cache /c/paraphrases.shard-2.redb --read-paraphrase-caches /c"
            ),
            (true, _) => {
                assert_eq!(args, "--cache /c/embeddings.shard-2.redb --read-caches /c")
            }
        }
        assert!(!job.args.iter().any(|a| a.contains("shard")));
    }
}

#[test]
fn remote_labels_and_result_specs_hold_no_url_or_password() {
    let spec = "openai:BAAI/bge-small@http://u:pw@127.0.0.1:7997/v1";
    assert!(is_remote(spec));
    assert_eq!(sage_core::result_label(spec), "openai:BAAI--bge-small");
    assert_eq!(remote_name(spec), "openai:BAAI/bge-small");
    assert_eq!(
        sage_core::result_label("cohere:embed-v4.0"),
        "cohere:embed-v4.0"
    );
    assert!(!redact_url(spec).contains("pw"));
    let context = test_context([("cohere:embed-v4.0".to_owned(), 0.5)].into());
    assert_eq!(context.price_args("cohere:embed-v4.0"), ["--price", "0.5"]);
    assert!(context.price_args("all-MiniLM-L6-v2").is_empty());
}

/// A zombie (killed, never reaped: its parent died too and the container's init does not
/// reap) and a thread of a living process are no writers: their numbers' temporaries go.
#[test]
fn temporaries_of_a_zombie_or_of_a_threads_number_are_swept() {
    let proc = Path::new("/proc");
    if !proc.join("self").exists() {
        sage_test_env::skip(
            "temporaries_of_a_zombie_or_of_a_threads_number_are_swept",
            "no /proc here: the sweep keeps every temporary",
        );
        return;
    }
    // never waited for until the sweep is done: a zombie once it exits
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let zombie = child.id();
    let status = proc.join(zombie.to_string()).join("status");
    let since = std::time::Instant::now();
    while !std::fs::read_to_string(&status)
        .unwrap()
        .lines()
        .any(|l| l.starts_with("State:") && l.contains('Z'))
    {
        assert!(since.elapsed().as_secs() < 30, "{zombie} never exited");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let (stop, parked) = std::sync::mpsc::channel::<()>();
    let thread = std::thread::spawn(move || parked.recv());
    let pid = std::process::id();
    let tid: u32 = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().to_str()?.parse().ok())
        .find(|&t| t != pid)
        .expect("the parked thread is listed");
    assert!(proc.join(tid.to_string()).exists());

    let out = tempfile::tempdir().unwrap();
    for name in [
        format!("robustness.report.{zombie}.partial"),
        format!("robustness.report.{pid}.partial.tmp-{tid}"),
        format!("clustering.report.{pid}.partial"),
    ] {
        std::fs::write(out.path().join(name), b"x").unwrap();
    }
    assert_eq!(sweep_stale_temporaries(out.path()), 2);
    assert!(out
        .path()
        .join(format!("clustering.report.{pid}.partial"))
        .exists());
    child.wait().unwrap();
    stop.send(()).unwrap();
    thread.join().unwrap().unwrap();
}

#[test]
fn a_killed_runs_temporaries_are_swept_and_a_living_ones_kept() {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("bm25/sage");
    std::fs::create_dir_all(&dir).unwrap();
    // pid 2^22 + 1 is past Linux's pid_max: never a living process
    let dead = 4_194_305;
    let alive = std::process::id();
    let names = [
        format!("robustness.report.{dead}.partial"),
        format!("robustness.json.{dead}.tmp"),
        format!("robustness.report.tmp-{dead}"),
        format!(".report.md.{dead}.tmp"),
        format!("clustering.report.{alive}.partial"),
        "robustness.json".to_owned(),
        "notes.tmp".to_owned(),
    ];
    for name in &names {
        std::fs::write(dir.join(name), b"x").unwrap();
    }
    assert_eq!(sweep_stale_temporaries(out.path()), 4);
    let mut left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(
        left,
        [
            format!("clustering.report.{alive}.partial"),
            "notes.tmp".to_owned(),
            "robustness.json".to_owned()
        ]
    );
}
