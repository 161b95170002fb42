use crate::*;

#[test]
fn the_embedded_default_parses_and_quick_shrinks_it() {
    let config = Config::parse(DEFAULT_CONFIG, "bench.toml").unwrap();
    assert_eq!(
        config.similarities.metrics,
        ["levenshtein", "rouge", "jaccard", "bm25"]
    );
    let quick = Config::parse(DEFAULT_CONFIG, "bench.toml").unwrap().quick();
    let options = |c: &Config, suite: &str| c.suites[suite].options.clone();
    // a default lives in the suite's declaration, not here: quick sizes it down alone
    assert!(options(&config, "clustering").get("max_texts").is_none());
    assert_eq!(options(&quick, "clustering")["max_texts"], 200);
    assert!(options(&config, "sensitivity").get("max_rows").is_none());
    assert_eq!(options(&quick, "sensitivity")["max_rows"], 15);
    // a suite's quick options replace its options of the same name, and keep the rest
    assert_eq!(options(&config, "noise")["max_queries"], 100);
    assert_eq!(options(&quick, "noise")["max_queries"], 10);
    assert_eq!(
        options(&quick, "noise")["lengths"],
        serde_json::json!([256])
    );
    assert_eq!(options(&quick, "noise")["max_rows"], 30);
    assert_eq!(
        options(&quick, "pteb")["paraphraser"],
        "SmolLM2-135M-Instruct-GGUF"
    );
    // quick datasets replace the datasets
    assert!(config.suites["pteb"].datasets.is_empty());
    assert_eq!(quick.suites["pteb"].datasets, ["stsb/test"]);
    // EvalRank: one run per level, each its own result file
    let levels: Vec<Value> = config
        .runs_of("evalrank")
        .iter()
        .map(|o| o["level"].clone())
        .collect();
    assert_eq!(levels, ["word", "sentence"]);
    // under --quick each run keeps its level and takes the sample of the lists
    let quick_runs = quick.runs_of("evalrank");
    assert_eq!(quick_runs[1]["level"], "sentence");
    assert_eq!(quick_runs[1]["max_background"], 2000);
    assert!(config.runs_of("evalrank")[1]
        .get("max_background")
        .is_none());
    assert_eq!(
        config.runs_of("a-suite-without-a-table"),
        [serde_json::Map::new()]
    );
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
    // a configuration written before every suite had its table says where each section went
    let e = error(&format!(
        "{DEFAULT_CONFIG}\n[sage]\ntasks = [\"robustness\"]\nmax_rows = 0\n"
    ));
    assert!(
        e.contains("my.toml: [sage] is gone") && e.contains("[suites.robustness]"),
        "{e}"
    );
    let e = error(&format!("{DEFAULT_CONFIG}\n[align_sim]\nmax_rows = 5\n"));
    assert!(e.contains("[suites.align-sim]"), "{e}");
    let e = error(&DEFAULT_CONFIG.replace("[quick]\n", "[quick]\nmax_rows = 30\n"));
    assert!(
        e.contains("quick.max_rows is gone") && e.contains("quick_options"),
        "{e}"
    );
    let e = error(&DEFAULT_CONFIG.replace("seed = 1337", "seed = \"x\""));
    assert!(e.contains("my.toml") && e.contains("seed"), "{e}");
    let e = error(&DEFAULT_CONFIG.replace("[remote]\n", "[remote]\nsurprise = 1\n"));
    assert!(e.contains("surprise"), "{e}");
    let e =
        error(&DEFAULT_CONFIG.replace("[remote.prices]\n", "[remote.prices]\n\"x\" = \"cheap\"\n"));
    assert!(e.contains("remote.prices") || e.contains("cheap"), "{e}");
    let e = error(&DEFAULT_CONFIG.replace(
        "[suites.evalrank]\n",
        "[suites.evalrank]\nsurprise = true\n",
    ));
    assert!(e.contains("my.toml") && e.contains("surprise"), "{e}");
    let e = error(&DEFAULT_CONFIG.replace(
        "[suites.retrieval]\n",
        "[suites.retrieval]\ndatasets = [\"scifact\"]\n",
    ));
    assert!(
        e.contains("suites.retrieval.datasets") && e.contains("name/split"),
        "{e}"
    );
}

/// A run its suite estimates at an hour or more (PTEB's) goes after every other job, the rest
/// keeping their order, similarity by similarity; a run that lacks something here (its
/// paraphraser) is skipped for every model with the suite's reason, and a suite of vectors
/// skips the metrics.
#[test]
fn long_runs_go_last_and_runs_that_lack_something_are_skipped() {
    let config = Config::parse(DEFAULT_CONFIG, "bench.toml").unwrap();
    let similarities = test_similarities(&["bm25", "model-a", "model-b"]);
    let mut runs = checked_runs(&config, &shipped_suites());
    let pteb = runs.iter().position(|r| r.suite == "pteb").unwrap();
    runs[pteb].missing = Some("paraphraser \"x\" not found".into());
    let mut skipped = Vec::new();
    let jobs = plan(
        &config,
        &runs,
        &similarities,
        Path::new("data"),
        &mut skipped,
    );
    assert!(jobs.iter().all(|j| j.suite != "pteb"));
    let pteb_skips: Vec<(&str, &str)> = skipped
        .iter()
        .filter(|s| s.suite == "pteb")
        .map(|s| (s.similarity.as_str(), s.reason.as_str()))
        .collect();
    assert_eq!(pteb_skips.len(), 3, "{skipped:?}");
    assert!(
        pteb_skips[0].1.contains("embedding models only"),
        "{pteb_skips:?}"
    );
    assert_eq!(pteb_skips[1], ("model-a", "paraphraser \"x\" not found"));

    runs[pteb].missing = None;
    let jobs = plan(
        &config,
        &runs,
        &similarities,
        Path::new("data"),
        &mut Vec::new(),
    );
    let first_pteb = jobs.iter().position(|j| j.suite == "pteb").unwrap();
    assert!(jobs[first_pteb..].iter().all(|j| j.suite == "pteb"));
    assert_eq!(jobs.len() - first_pteb, 2, "one PTEB job per model");
    assert_eq!(jobs[0].similarity.spec, "bm25");
    assert_eq!(jobs[first_pteb - 1].similarity.spec, "model-b");
    // the suite's options reach `sage` as they are configured
    let args = jobs.last().unwrap().args.join(" ");
    assert!(
        args.starts_with("run pteb --similarity model-b --seed 1337 --data-dir data --options {"),
        "{args}"
    );
    assert!(
        args.contains("\"paraphraser\":\"SmolLM2-135M-Instruct-GGUF\""),
        "{args}"
    );
    assert!(args.ends_with("--batch-tokens 8192"), "{args}");
    // EvalRank: a job per level, each into its own result file
    let evalrank: Vec<String> = jobs
        .iter()
        .filter(|j| j.suite == "evalrank")
        .map(Job::id)
        .collect();
    assert_eq!(
        evalrank,
        [
            "model-a/evalrank/word",
            "model-a/evalrank/sentence",
            "model-b/evalrank/word",
            "model-b/evalrank/sentence"
        ]
    );
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

/// `sage suites` of the shipped registry, in its order, as far as planning reads it.
fn shipped_suites() -> Vec<ListedSuite> {
    [
        "human-pref",
        "robustness",
        "sensitivity",
        "clustering",
        "retrieval",
        "align-sim",
        "evalrank",
        "pteb",
        "noise",
        "compression",
        "transfer",
        "throughput",
    ]
    .iter()
    .map(|&name| ListedSuite {
        name: name.into(),
        takes_metrics: !matches!(name, "evalrank" | "pteb"),
        result_suite: match name {
            "human-pref" | "robustness" | "sensitivity" | "clustering" | "retrieval" => "sage",
            other => other,
        }
        .into(),
        cost_hints: Vec::new(),
        default_datasets: Vec::new(),
        reference_datasets: Vec::new(),
    })
    .collect()
}

/// What `sage suites check` answers for each configured run of `suites`, as far as planning
/// reads it: the result file each names, nothing lacking, PTEB's run long. (The real answers
/// come from `sage`: xtask's bench_all tests plan through it.)
fn checked_runs(config: &Config, suites: &[ListedSuite]) -> Vec<SuiteRun> {
    suites
        .iter()
        .filter(|s| config.suites.get(&s.name).is_none_or(|t| t.enabled))
        .flat_map(|suite| {
            config.runs_of(&suite.name).into_iter().map(|options| {
                let task = match suite.name.as_str() {
                    "evalrank" => options["level"].as_str().unwrap().to_owned(),
                    "align-sim" => "criteria".to_owned(),
                    "pteb" => "mteb".to_owned(),
                    name => name.to_owned(),
                };
                SuiteRun {
                    suite: suite.name.clone(),
                    takes_metrics: suite.takes_metrics,
                    datasets: config
                        .suites
                        .get(&suite.name)
                        .map(|t| t.datasets.clone())
                        .unwrap_or_default(),
                    options,
                    result_suite: suite.result_suite.clone(),
                    result_task: task,
                    missing: None,
                    long: suite.name == "pteb",
                }
            })
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
        &checked_runs(&config, &suites),
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
        cost_hints: Vec::new(),
        default_datasets: Vec::new(),
        reference_datasets: Vec::new(),
    };
    let text = format!(
            "{DEFAULT_CONFIG}\n[suites.toy]\ndatasets = [\"stsb/test\"]\noptions = {{ width = 2, label = \"x\" }}\n"
        );
    let config = Config::parse(&text, "toy.toml").unwrap();
    let similarities = test_similarities(&["bm25", "model-a"]);
    let mut suites = shipped_suites();
    suites.push(toy(true));
    config.check_against(&shipped_metrics(), &suites).unwrap();
    // `sage suites check` of the toy names its result file
    let plan_of = |config: &Config, suites: &[ListedSuite], skipped: &mut Vec<Skipped>| {
        let mut runs = checked_runs(config, suites);
        for run in runs.iter_mut().filter(|r| r.suite == "toy") {
            run.result_task = "letters".into();
        }
        plan(config, &runs, &similarities, Path::new("data"), skipped)
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
        "[suites.retrieval]\n",
        "[suites.retrieval]\ndatasets = [\"mybeir/test\"]\n",
    ) + "\n[datasets.mybeir]\npath = \"data/mybeir\"\n";
    let config = Config {
        file: Some(PathBuf::from("/configs/mine.toml")),
        ..Config::parse(&text, "mine.toml").unwrap()
    };
    let similarities = test_similarities(&["bm25"]);
    let jobs = plan(
        &config,
        &checked_runs(&config, &shipped_suites()),
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
}

/// A model's lower-precision variant runs the throughput and compression suites only, with
/// `--precision`, into its own results folder; the other suites say why they skipped it.
#[test]
fn a_precision_variant_runs_what_a_precision_costs_and_keeps() {
    let config = Config::parse(DEFAULT_CONFIG, "bench.toml").unwrap();
    assert_eq!(config.similarities.precisions, ["bf16", "int8"]);
    let mut similarities = test_similarities(&["model-a"]);
    similarities.push(Similarity {
        label: "model-a@int8".into(),
        spec: "model-a".into(),
        is_model: true,
        precision: Some("int8".into()),
    });
    let runs = checked_runs(&config, &shipped_suites());
    let mut skipped = Vec::new();
    let jobs = plan(
        &config,
        &runs,
        &similarities,
        Path::new("data"),
        &mut skipped,
    );
    let variant: Vec<&Job> = jobs
        .iter()
        .filter(|j| j.similarity.label == "model-a@int8")
        .collect();
    let suites: Vec<&str> = variant.iter().map(|j| j.suite.as_str()).collect();
    assert_eq!(suites, ["compression", "throughput"]);
    for job in &variant {
        let args = job.args.join(" ");
        assert!(
            args.starts_with(&format!("run {} --similarity model-a ", job.suite))
                && args.ends_with("--batch-tokens 8192 --precision int8"),
            "{args}"
        );
    }
    // the model as it is runs everything, without the flag
    assert!(jobs
        .iter()
        .filter(|j| j.similarity.label == "model-a")
        .all(|j| !j.args.contains(&"--precision".to_owned())));
    let variant_skips: Vec<&Skipped> = skipped
        .iter()
        .filter(|s| s.similarity == "model-a@int8")
        .collect();
    assert!(!variant_skips.is_empty());
    assert!(variant_skips
        .iter()
        .all(|s| s.reason.contains("throughput and compression only")));
}

/// Similarities by spec; those named `model...` are models.
fn test_similarities(specs: &[&str]) -> Vec<Similarity> {
    specs
        .iter()
        .map(|&spec| Similarity {
            label: spec.into(),
            spec: spec.into(),
            is_model: spec.starts_with("model"),
            precision: None,
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
    let config = Config::parse(DEFAULT_CONFIG, "bench.toml").unwrap();
    let similarities = test_similarities(&["bm25", "model-a"]);
    let jobs = plan(
        &config,
        &checked_runs(&config, &shipped_suites()),
        &similarities,
        Path::new("data"),
        &mut Vec::new(),
    );
    assert!(jobs.iter().any(|j| j.suite == "pteb"));
    let mut context = test_context(BTreeMap::new());
    assert!(jobs
        .iter()
        .all(|j| context.cache_args(j).is_empty() && context.cache_env(j).is_empty()));
    context.caches = Some((Shard { index: 2, count: 3 }, PathBuf::from("/c")));
    for job in &jobs {
        let args = context.cache_args(job).join(" ");
        let env = context.cache_env(job);
        if job.similarity.is_model {
            assert_eq!(args, "--cache /c/embeddings.shard-2.redb --read-caches /c");
            assert_eq!(
                env,
                [
                    (
                        "SAGE_PARAPHRASE_CACHE",
                        PathBuf::from("/c/paraphrases.shard-2.redb")
                    ),
                    ("SAGE_READ_PARAPHRASE_CACHES", PathBuf::from("/c")),
                ]
            );
        } else {
            assert!(args.is_empty() && env.is_empty(), "{args}");
        }
        assert!(!job.args.iter().any(|a| a.contains("shard")));
    }
}

#[test]
fn remote_labels_and_result_specs_hold_no_url_or_password() {
    let spec = "openai:BAAI/bge-small@http://u:pw@127.0.0.1:7997/v1";
    assert!(sage_core::is_remote_spec(spec));
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

/// PTEB runs English on the CPU and every language on a GPU box: `cuda_options` lay over the
/// options where `device = "cuda"`, and nowhere else.
#[test]
fn cuda_options_apply_on_a_gpu_box_only() {
    let languages = |config: &Config| config.suites["pteb"].options.get("languages").cloned();
    let cpu = Config::parse(DEFAULT_CONFIG, "bench.toml").unwrap();
    assert_eq!(languages(&cpu), Some(serde_json::json!(["eng"])));
    let gpu = Config::parse("device = \"cuda\"\n", "gpu.toml").unwrap();
    assert_eq!(languages(&gpu), Some(serde_json::json!([])));
    assert_eq!(
        gpu.suites["pteb"].options.get("paraphraser"),
        cpu.suites["pteb"].options.get("paraphraser")
    );
    // a user's own options leave the embedded GPU options out, as they do the quick ones
    let mine = Config::parse(
        "device = \"cuda\"\n[suites.pteb]\noptions = { paraphraser = \"x\", languages = [\"fra\"] }\n",
        "mine.toml",
    )
    .unwrap();
    assert_eq!(languages(&mine), Some(serde_json::json!(["fra"])));
}

/// `sage gpu`'s refusal as bench-all says it: its own sentence as it is, and the dynamic
/// loader's line (a CUDA build that cannot start) turned into what to do. The lines are the
/// ones glibc's loader and `sage gpu` print.
#[test]
fn a_gpu_refusal_is_one_sentence_saying_what_to_do() {
    assert_eq!(
        plan::gpu_refusal(
            "/opt/sage: error while loading shared libraries: libcuda.so.1: cannot open shared \
             object file: No such file or directory"
        ),
        "the NVIDIA driver is not installed here (libcuda.so.1 not found): sage's CUDA build \
         starts only where it is; run without device = \"cuda\" on this machine"
    );
    assert_eq!(
        plan::gpu_refusal(
            "sage: error while loading shared libraries: libcublas.so.13: cannot open shared \
             object file: No such file or directory"
        ),
        "the CUDA library libcublas.so.13 is not found: put the CUDA toolkit's lib folder on \
         LD_LIBRARY_PATH"
    );
    assert_eq!(
        plan::gpu_refusal("sage: error: no CUDA GPU: the NVIDIA driver (CUDA 13.0) sees no device"),
        "no CUDA GPU: the NVIDIA driver (CUDA 13.0) sees no device"
    );
}

/// A user's configuration once had to repeat every field: without `device` it failed with
/// "missing field `device`", and without `[suites.evalrank]` with "evalrank: options: missing
/// field `level`". It is read over the embedded one now.
#[test]
fn a_users_configuration_is_read_over_the_embedded_one() {
    let text = "seed = 7\n\n[similarities]\nmetrics = [\"jaccard\"]\n\n\
                [suites.clustering]\noptions = { max_texts = 12 }\n";
    let mine = Config::parse(text, "mine.toml").unwrap();
    let shipped = Config::parse(DEFAULT_CONFIG, "bench.toml").unwrap();
    assert_eq!(mine.seed, 7);
    assert_eq!(mine.device, shipped.device);
    assert_eq!(mine.batch_tokens, shipped.batch_tokens);
    // a list replaces the embedded one; what the table leaves out keeps the embedded value
    assert_eq!(mine.similarities.metrics, ["jaccard"]);
    assert_eq!(mine.similarities.models, shipped.similarities.models);
    assert_eq!(mine.runs_of("evalrank"), shipped.runs_of("evalrank"));
    // a suite's options are the user's, whole (what they leave out is the suite's own default),
    // and --quick does not set them aside for the embedded quick options
    let clustering = &mine.suites["clustering"];
    assert_eq!(
        serde_json::Value::Object(clustering.options.clone()),
        serde_json::json!({"max_texts": 12})
    );
    assert!(clustering.quick_options.is_empty());
    assert_eq!(
        Config::parse(text, "mine.toml").unwrap().quick().suites["clustering"].options["max_texts"],
        12
    );
    // a suite's table the user leaves out is the embedded one, quick options and all
    assert_eq!(
        mine.suites["retrieval"].quick_options,
        shipped.suites["retrieval"].quick_options
    );
    // datasets given without quick_datasets hold under --quick too
    let pteb = Config::parse("[suites.pteb]\ndatasets = [\"sickr/test\"]\n", "mine.toml")
        .unwrap()
        .quick();
    assert_eq!(pteb.suites["pteb"].datasets, ["sickr/test"]);
    // an unknown key is still an error naming it and its line, in a table or at the top
    for (text, key, line) in [
        ("seed = 7\ndevise = \"cpu\"\n", "devise", 2),
        ("[similarities]\nmetrics = []\nmodel = []\n", "model", 3),
        ("[suites.clustering]\nenabeld = false\n", "enabeld", 2),
    ] {
        let e = Config::parse(text, "mine.toml").unwrap_err().to_string();
        assert!(
            e.contains("mine.toml") && e.contains(key) && e.contains(&format!("line {line}")),
            "{e}"
        );
    }
    // a wrong type too
    let e = Config::parse("device = \"tpu\"\n", "mine.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("tpu") && e.contains("line 1"), "{e}");
}
