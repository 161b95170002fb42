//! A user's own data through the `sage` binary, with no data mirror: a path is a dataset, in every
//! suite that takes its kind, with the same results as the same files under a registry name.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn mirror() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/fixtures/mirror")
}

/// `sage` with neither SAGE_DATA_DIR nor a models folder: a user's machine with only their files.
fn sage(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sage"))
        .args(args)
        .env_remove("SAGE_DATA_DIR")
        .output()
        .expect("sage runs")
}

fn ok(args: &[&str]) -> String {
    let out = sage(args);
    assert!(
        out.status.success(),
        "sage {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn fails(args: &[&str]) -> String {
    let out = sage(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "sage {args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

/// A report with what differs between two runs of the same work taken out: timings.
fn without_timings(mut value: Value) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(map) => {
                map.remove("timings");
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut value);
    value
}

/// `value` without the checks of the files read (a registry file is checked against its pin,
/// a user's own file has nothing to check against), after asserting that it has some, each
/// saying that these synthetic files are not the pinned bytes.
fn without_file_checks(mut value: Value) -> Value {
    fn strip(v: &mut Value, found: &mut usize) {
        match v {
            Value::Object(map) => {
                for key in ["files", "corpus_files"] {
                    if let Some(Value::Array(checks)) = map.remove(key) {
                        for check in &checks {
                            assert_eq!(check["verified"], "differs-from-pin", "{check}");
                        }
                        *found += checks.len();
                    }
                }
                map.values_mut().for_each(|v| strip(v, found));
            }
            Value::Array(items) => items.iter_mut().for_each(|v| strip(v, found)),
            _ => {}
        }
    }
    let mut found = 0;
    strip(&mut value, &mut found);
    assert!(found > 0, "the registry files' checks are recorded");
    value
}

/// `value` with every string naming dataset `from` made to name `to` instead.
fn renamed(mut value: Value, from: &str, to: &str) -> Value {
    fn walk(v: &mut Value, from: &str, to: &str) {
        match v {
            Value::String(s) if s == from || s.starts_with(&format!("{from}/")) => {
                *s = s.replacen(from, to, 1);
            }
            Value::Object(map) => map.values_mut().for_each(|v| walk(v, from, to)),
            Value::Array(items) => items.iter_mut().for_each(|v| walk(v, from, to)),
            _ => {}
        }
    }
    walk(&mut value, from, to);
    value
}

/// A small BEIR set written by hand: 40 documents on 8 topics, a query per topic, each judged
/// relevant to its topic's first document. Big enough that the query and document samples and
/// the perturbations' random streams change the scores.
fn write_beir(dir: &Path) {
    let topics = [
        "vitamin bone fracture calcium",
        "running heart cardio exercise",
        "insulin diabetes glucose blood",
        "sleep memory brain night",
        "coffee caffeine alertness morning",
        "smoking lung cancer tobacco",
        "vaccine immune antibody infection",
        "salt pressure kidney sodium",
    ];
    std::fs::create_dir_all(dir.join("qrels")).unwrap();
    let mut corpus = String::new();
    let mut queries = String::new();
    let mut qrels = String::from("query-id\tcorpus-id\tscore\n");
    for d in 0..40 {
        let topic = topics[d % topics.len()];
        let other = topics[(d * 3 + 1) % topics.len()];
        let text = format!(
            "Study {d} reports on {topic} with a note on {other} in {} adults.",
            20 + d
        );
        corpus += &(serde_json::json!({"_id": format!("d{d}"), "title": format!("Trial {d}"), "text": text}).to_string() + "\n");
    }
    for (q, topic) in topics.iter().enumerate() {
        queries += &(serde_json::json!({"_id": format!("q{q}"), "text": format!("What is known about {topic}?")}).to_string() + "\n");
        qrels += &format!("q{q}\td{q}\t1\n");
    }
    std::fs::write(dir.join("corpus.jsonl"), corpus).unwrap();
    std::fs::write(dir.join("queries.jsonl"), queries).unwrap();
    std::fs::write(dir.join("qrels/test.tsv"), qrels).unwrap();
}

#[test]
fn a_beir_folder_runs_retrieval_as_the_same_files_under_a_registry_name() {
    let tmp = tempfile::tempdir().unwrap();
    let mine = tmp.path().join("mybeir");
    write_beir(&mine);
    // the same files placed in a mirror under a registry name
    let data_dir = tmp.path().join("mirror");
    write_beir(&data_dir.join("retrieval/scifact"));
    let sampled = ["--max-queries", "5", "--max-docs", "20"];
    // the new user's first try: a path with no data directory at all
    let run_user = |seed: &str| -> Value {
        let mut args = vec!["run", "retrieval", "--similarity", "bm25", "--seed", seed];
        args.extend(["--dataset", mine.to_str().unwrap()]);
        args.extend(sampled);
        serde_json::from_str(&ok(&args)).unwrap()
    };
    let user = run_user("1337");
    let mut args = vec!["run", "retrieval", "--similarity", "bm25", "--seed", "1337"];
    args.extend([
        "--dataset",
        "scifact/test",
        "--data-dir",
        data_dir.to_str().unwrap(),
    ]);
    args.extend(sampled);
    let registry: Value = serde_json::from_str(&ok(&args)).unwrap();
    // the same rows, read the same way, give the same report, samples and perturbations
    // included: every random stream is keyed by the rows, not the name (dataset name aside)
    assert_eq!(
        renamed(without_timings(user.clone()), "mybeir", "scifact"),
        without_file_checks(without_timings(registry))
    );
    // ...and those streams matter: another seed draws other queries, documents and typos
    assert_ne!(
        without_timings(run_user("7"))["datasets"],
        without_timings(user.clone())["datasets"]
    );
    assert_eq!(user["datasets"][0]["dataset"], "mybeir/test");
    // the same folder named by a table (NAME/SPLIT): the same bytes as by path
    let tables = tmp.path().join("mine.toml");
    std::fs::write(&tables, "[datasets.mybeir]\npath = \"mybeir\"\n").unwrap();
    let mut args = vec!["run", "retrieval", "--similarity", "bm25", "--seed", "1337"];
    args.extend([
        "--datasets",
        tables.to_str().unwrap(),
        "--dataset",
        "mybeir/test",
    ]);
    args.extend(sampled);
    let named: Value = serde_json::from_str(&ok(&args)).unwrap();
    assert_eq!(without_timings(named), without_timings(user));
    // a name that is neither registered nor a path, and a registered split the mirror lacks:
    // each one clear message, said once
    let e = fails(&[
        "run",
        "retrieval",
        "--similarity",
        "bm25",
        "--dataset",
        "nosuchset/test",
    ]);
    assert_eq!(e.matches("unknown dataset \"nosuchset\"").count(), 1, "{e}");
    let e = fails(&[
        "run",
        "retrieval",
        "--similarity",
        "bm25",
        "--dataset",
        "scifact/train",
        "--data-dir",
        mirror().to_str().unwrap(),
    ]);
    assert_eq!(e.matches("is not in the local mirror").count(), 1, "{e}");
}

const TICKETS: &str = "body,queue\n\
\"Card declined, twice\",payments\n\
Password reset link expired,account\n\
Refund not received after ten days,payments\n\
Cannot log in after the update,account\n\
Charged twice for one order,payments\n\
Two-factor code never arrives,account\n";

#[test]
fn a_csv_runs_clustering_and_documents_run_sensitivity_through_columns() {
    let tmp = tempfile::tempdir().unwrap();
    let csv = tmp.path().join("tickets.csv");
    std::fs::write(&csv, TICKETS).unwrap();
    let csv = csv.to_str().unwrap();
    let report: Value = serde_json::from_str(&ok(&[
        "run",
        "clustering",
        "--similarity",
        "jaccard",
        "--dataset",
        csv,
        "--columns",
        "text=body,label=queue",
        "--subsets",
        "2",
    ]))
    .unwrap();
    let score = report["score"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&score), "{report}");
    assert!(report.to_string().contains("tickets/test"), "{report}");
    // the same rows as JSON lines in our column names: the same checksum and the same score
    let jsonl = tmp.path().join("sub");
    std::fs::create_dir(&jsonl).unwrap();
    let jsonl = jsonl.join("tickets.jsonl");
    let lines: String = TICKETS
        .lines()
        .skip(1)
        .map(|l| {
            let (text, label) = l.rsplit_once(',').unwrap();
            serde_json::json!({"text": text.trim_matches('"'), "label": label}).to_string() + "\n"
        })
        .collect();
    std::fs::write(&jsonl, lines).unwrap();
    let again: Value = serde_json::from_str(&ok(&[
        "run",
        "clustering",
        "--similarity",
        "jaccard",
        "--dataset",
        jsonl.to_str().unwrap(),
        "--subsets",
        "2",
    ]))
    .unwrap();
    assert_eq!(without_timings(again), without_timings(report));
    let check: Value = serde_json::from_str(&ok(&[
        "data",
        "check",
        csv,
        "--columns",
        "text=body,label=queue",
    ]))
    .unwrap();
    assert_eq!(check["kind"], "clustering");
    assert_eq!(check["detected"], true);
    assert_eq!(check["columns"]["text"], "body");
    assert_eq!(check["total_rows"], 6);
    assert_eq!(check["duplicate_rows"], 0);
    let suites: Vec<&str> = check["suites"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert!(
        suites.contains(&"clustering") && suites.contains(&"pteb"),
        "{suites:?}"
    );
    let check_jsonl: Value =
        serde_json::from_str(&ok(&["data", "check", jsonl.to_str().unwrap()])).unwrap();
    assert_eq!(check_jsonl["checksum"], check["checksum"]);
    // the wrong suite for the kind says which kinds it takes and which this is
    let e = fails(&[
        "run",
        "retrieval",
        "--similarity",
        "bm25",
        "--dataset",
        csv,
        "--columns",
        "text=body,label=queue",
    ]);
    assert!(
        e.contains("retrieval: takes beir; dataset tickets holds clustering"),
        "{e}"
    );

    let notes = tmp.path().join("notes.jsonl");
    let text = "The patient reported mild pain after the procedure and was given rest. ".repeat(12);
    let rows: String = (0..3)
        .map(|i| serde_json::json!({"content": format!("Note {i}. {text}")}).to_string() + "\n")
        .collect();
    std::fs::write(&notes, rows).unwrap();
    let report: Value = serde_json::from_str(&ok(&[
        "run",
        "sensitivity",
        "--similarity",
        "rouge",
        "--dataset",
        notes.to_str().unwrap(),
        "--columns",
        "text=content",
    ]))
    .unwrap();
    assert!(report["score"].as_f64().is_some(), "{report}");
    assert!(report.to_string().contains("notes/test"), "{report}");
}

#[test]
fn suites_list_the_kinds_they_take_and_data_kinds_lists_columns() {
    let suites: Vec<Value> = ok(&["suites"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds = |name: &str| {
        suites.iter().find(|s| s["name"] == name).unwrap()["kinds"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(kinds("retrieval"), ["beir"]);
    assert_eq!(kinds("robustness"), ["document-summary"]);
    assert!(kinds("align-sim").contains(&"paraphrase-pairs".to_owned()));
    let listed: Vec<Value> = ok(&["data", "kinds"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let sts = listed.iter().find(|k| k["kind"] == "sts-pairs").unwrap();
    assert_eq!(
        sts["required"],
        serde_json::json!(["sentence1", "sentence2", "score"])
    );
    // a user's tables are listed after the registry, marked as the user's
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("t.csv"), TICKETS).unwrap();
    let tables = tmp.path().join("d.toml");
    std::fs::write(
        &tables,
        "[datasets.tickets]\npath = \"t.csv\"\ncolumns = { text = \"body\", label = \"queue\" }\n",
    )
    .unwrap();
    let listing = ok(&["data", "list", "--datasets", tables.to_str().unwrap()]);
    let last = listing.lines().last().unwrap();
    assert!(
        last.starts_with("tickets") && last.contains("clustering") && last.contains("user"),
        "{last}"
    );
    // MTEB's SICK-R rows are named
    let json = ok(&["data", "list", "--json"]);
    let sickr: Value = json
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["name"] == "sickr")
        .unwrap();
    assert_eq!(sickr["mteb_rows"]["test"], "train+validation+test");
}

/// The guide's `data/examples/` (docs/src/your-data.md): the repository's own small files, as a newcomer runs them.
fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/examples")
}

/// PTEB's retrieval task on a BEIR folder of one's own (the guide's clinic-faq), with the real
/// SmolLM2 paraphrasing its queries and all-MiniLM-L6-v2 ranking: the same report as the same
/// files placed in a mirror under a registry name, dataset name aside.
#[test]
fn pteb_retrieval_on_a_beir_folder_equals_the_same_files_under_a_registry_name() {
    let what = "pteb_retrieval_on_a_beir_folder_equals_the_same_files_under_a_registry_name";
    let (Some(llm), Some(encoder)) = (
        sage_test_env::model_dir_or_skip("SmolLM2-135M-Instruct-GGUF", what),
        sage_test_env::model_dir_or_skip("all-MiniLM-L6-v2", what),
    ) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let clinic = examples().join("clinic-faq");
    let mirror = tmp.path().join("mirror");
    sage_test_env::copy_tree(&clinic, &mirror.join("retrieval/scifact"));
    // each run with its own empty caches, so both do the same work
    let run = |name: &str, dataset: &str, extra: &[&str]| -> Value {
        let paraphrases = tmp.path().join(format!("{name}-paraphrases.redb"));
        let embeddings = tmp.path().join(format!("{name}-embeddings.redb"));
        let mut args = vec!["run", "pteb", "--runs", "2", "--dataset", dataset];
        args.extend(["--model", encoder.to_str().unwrap()]);
        args.extend(["--paraphraser", llm.to_str().unwrap()]);
        args.extend(["--paraphrase-cache", paraphrases.to_str().unwrap()]);
        args.extend(["--cache", embeddings.to_str().unwrap()]);
        args.extend(extra);
        serde_json::from_str(&ok(&args)).unwrap()
    };
    let user = run("user", clinic.to_str().unwrap(), &[]);
    let registry = run(
        "registry",
        "scifact/test",
        &["--data-dir", mirror.to_str().unwrap()],
    );
    let d = &user["datasets"][0];
    assert_eq!(
        (d["dataset"].as_str(), d["task"].as_str()),
        (Some("clinic-faq"), Some("retrieval")),
        "{d}"
    );
    assert_eq!(d["rows"]["used_rows"], 8, "{d}");
    assert_eq!(d["runs"].as_array().map(Vec::len), Some(2), "{d}");
    let original = d["original"].as_f64().unwrap();
    assert!(original > 0.3 && original < 1.0, "{d}");
    assert_eq!(
        renamed(without_timings(user), "clinic-faq", "scifact"),
        without_file_checks(without_timings(registry))
    );
}

/// What a hostile probe of about 160 files found: each input below once panicked, hung, took
/// gigabytes, passed silently or put raw terminal bytes on the screen. Each is now one line of
/// error naming the file, and a run writes nothing.
#[test]
fn hostile_files_end_in_one_clear_line_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name);
    let one_line = |args: &[&str], said: &str| {
        let stderr = fails(args);
        assert!(
            stderr.starts_with("sage: error: ") && stderr.trim_end().lines().count() == 1,
            "{args:?}: {stderr}"
        );
        assert!(stderr.contains(said), "{args:?}: {stderr}");
        assert!(
            !stderr.contains(['\u{1b}', '\u{7}']),
            "{args:?}: raw control bytes: {stderr:?}"
        );
        stderr
    };
    // a Parquet file whose data pages are gone: its column chunks point past its data (polars
    // panicked on the slice, exit 101)
    let whole = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../data/fixtures/parquet/dictionary_snappy.parquet"),
    )
    .unwrap();
    let footer_len =
        u32::from_le_bytes(whole[whole.len() - 8..whole.len() - 4].try_into().unwrap());
    let footer_start = whole.len() - 8 - footer_len as usize;
    let mut spliced = b"PAR1".to_vec();
    spliced.extend_from_slice(&whole[footer_start..]);
    std::fs::write(at("spliced.parquet"), spliced).unwrap();
    let spliced = at("spliced.parquet");
    one_line(
        &["data", "check", spliced.to_str().unwrap()],
        "not a Parquet file sage can trust",
    );
    // a file whose pages pass the check but whose contents make polars panic on a worker
    // thread: caught, and said once (no "thread panicked" text)
    let panics = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/fixtures/parquet-hostile/delta_length_overflow.parquet");
    one_line(
        &[
            "data",
            "check",
            panics.to_str().unwrap(),
            "--kind",
            "documents",
        ],
        "the Parquet reader failed on this file",
    );
    // a sparse 3 GiB CSV record (it took 4.2 GB before its error)
    std::fs::write(at("giant.csv"), "text,label\nok,a\n").unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(at("giant.csv"))
        .unwrap()
        .set_len(3 << 30)
        .unwrap();
    one_line(
        &[
            "data",
            "check",
            at("giant.csv").to_str().unwrap(),
            "--kind",
            "clustering",
        ],
        "giant.csv:3: record longer than 64 MiB",
    );
    // a quote opened in the last field and never closed (it swallowed the rest, exit 0)
    std::fs::write(
        at("open.csv"),
        "text,label\nhello,a\nworld,\"b\nmore,c\nlast,d\n",
    )
    .unwrap();
    let open = at("open.csv");
    one_line(
        &["data", "check", open.to_str().unwrap()],
        "open.csv:3: a quote opens a field here and never closes",
    );
    // a run on it writes nothing, not even its temporary file
    let out = at("results/clustering.json");
    one_line(
        &[
            "run",
            "clustering",
            "--similarity",
            "jaccard",
            "--dataset",
            open.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
        ],
        "never closes",
    );
    let left: Vec<_> = std::fs::read_dir(at("results"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
    // ESC and BEL in column names and in the file's name reach the terminal escaped
    let bell = at("be\u{7}ll.csv");
    std::fs::write(&bell, "te\u{1b}[31mxt,la\u{7}bel\nx,y\n").unwrap();
    let stderr = one_line(
        &["data", "check", bell.to_str().unwrap()],
        "cannot tell what it holds",
    );
    assert!(
        stderr.contains("te\\u{1b}[31mxt") && stderr.contains("be\\u{7}ll.csv"),
        "{stderr}"
    );
    // a FIFO given as a table of datasets is refused, not waited on
    let fifo = at("tables.toml");
    if Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success())
    {
        one_line(
            &[
                "data",
                "check",
                "mine/test",
                "--datasets",
                fifo.to_str().unwrap(),
            ],
            "not a regular file",
        );
    } else {
        eprintln!("skipped: the FIFO case (no mkfifo here)");
    }
    // a file name with a space is a dataset, named with `_`
    let spaced = at("my tickets.jsonl");
    std::fs::write(
        &spaced,
        "{\"text\": \"a\", \"label\": \"x\"}\n{\"text\": \"b\", \"label\": \"y\"}\n\
         {\"text\": \"c\", \"label\": \"x\"}\n",
    )
    .unwrap();
    let checked: Value =
        serde_json::from_str(&ok(&["data", "check", spaced.to_str().unwrap()])).unwrap();
    assert_eq!(checked["dataset"], "my_tickets");
}
