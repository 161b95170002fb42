//! The registry and loaders on the fixture mirror (data/fixtures/mirror), every error case, and
//! the real mirror against its MANIFEST.tsv when SAGE_DATA_DIR is set.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use sage_core::RunSeed;

use super::*;

fn fixtures() -> DataRoot {
    DataRoot::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/fixtures/mirror"))
}

#[test]
fn every_kind_loads_from_the_fixture_mirror() {
    let root = fixtures();
    let sts = root.load::<StsPair>("stsb", "test").unwrap();
    assert_eq!(sts.rows.len(), 3);
    assert_eq!(sts.rows[0].score, 4.8);
    assert!(root.load::<LabeledPair>("mrpc", "test").unwrap().rows[0].label);
    assert_eq!(
        root.load::<NegationPair>("afin", "test")
            .unwrap()
            .rows
            .len(),
        6
    );
    assert_eq!(
        root.load::<DocumentSummary>("cnn-dailymail", "sample")
            .unwrap()
            .rows[0]
            .summary,
        "Council approves budget."
    );
    assert_eq!(
        root.load::<Document>("amazon-polarity", "sample")
            .unwrap()
            .rows[0]
            .label
            .as_deref(),
        Some("1")
    );
    let ratings = root.load::<SummaryRating>("summeval", "ratings").unwrap();
    assert_eq!(ratings.rows[1].ratings["coherence"], 1.67);
    assert_eq!(ratings.rows[0].ratings.len(), 4);
    assert_eq!(
        root.load::<SummaryDocument>("summeval-docs", "docs")
            .unwrap()
            .rows[0]
            .reference,
        "Storm shuts county schools ."
    );
    let comparisons = root
        .load::<SummaryComparison>("summarize-from-feedback-comparisons", "validation")
        .unwrap();
    assert_eq!(comparisons.rows[0].choice, 0);
    let axis = root
        .load::<AxisRating>("summarize-from-feedback-axis", "validation")
        .unwrap();
    assert_eq!(axis.rows[0].ratings["overall"], 6.0);
    assert_eq!(
        root.load::<LabeledText>("twentynewsgroups", "test")
            .unwrap()
            .rows
            .len(),
        3
    );
    assert_eq!(
        root.load::<LabeledText>("banking77", "test").unwrap().rows[0].label,
        "activate_my_card"
    );
    assert!(
        root.load::<LabeledPair>("twitter-semeval2015", "test")
            .unwrap()
            .rows[0]
            .label
    );
    assert_eq!(
        root.load::<WordPair>("en-rg-65", "all").unwrap().rows[1].score,
        3.94
    );
    assert_eq!(root.load::<Line>("wiki-20k", "all").unwrap().rows.len(), 3);
    assert_eq!(
        root.load::<TextPair>("evalrank-word-pairs", "all")
            .unwrap()
            .rows[1]
            .b,
        "kidnap"
    );
    let beir = root.beir("scifact", "test").unwrap();
    assert_eq!(
        (beir.corpus.len(), beir.queries.len()),
        (2, 2),
        "the unjudged query is left out"
    );
    assert_eq!(beir.qrels["q1"]["d1"], 1);
}

#[test]
fn registry_misuse_is_explained() {
    let root = fixtures();
    assert!(matches!(
        root.load::<StsPair>("no-such-set", "test"),
        Err(DataError::UnknownDataset { .. })
    ));
    let split = root.load::<StsPair>("stsb", "dev").unwrap_err().to_string();
    assert!(split.contains("train, validation, test"), "{split}");
    assert!(matches!(
        root.load::<StsPair>("mrpc", "test"),
        Err(DataError::WrongKind { .. })
    ));
    let missing = root
        .load::<StsPair>("stsb", "train")
        .unwrap_err()
        .to_string();
    assert!(
        missing.contains("`sage data fetch stsb` rebuilds it from its pinned source")
            && missing.contains("sts/stsb/train.jsonl"),
        "{missing}"
    );
}

/// A one-dataset mirror in a temp folder with `content` at the dataset's path.
fn mirror_with(relative: &str, content: &str) -> (tempfile::TempDir, DataRoot, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, content).unwrap();
    let root = DataRoot::new(dir.path());
    (dir, root, path)
}

fn assert_names(err: DataError, path: &Path, line: usize, needle: &str) {
    let msg = err.to_string();
    let want = format!("{}:{line}: ", path.display());
    assert!(
        msg.starts_with(&want) && msg.contains(needle),
        "{msg:?} should start with {want:?} and mention {needle:?}"
    );
}

#[test]
fn malformed_json_lines_name_file_and_line() {
    let good = r#"{"sentence1": "a", "sentence2": "b", "score": 1.0}"#;
    let (_d, root, path) = mirror_with(
        "sts/stsb/test.jsonl",
        &format!("{good}\n{good}\n{{not json\n"),
    );
    assert_names(
        root.load::<StsPair>("stsb", "test").unwrap_err(),
        &path,
        3,
        "not valid JSON",
    );

    let (_d, root, path) = mirror_with(
        "sts/stsb/test.jsonl",
        &format!("{good}\n{{\"sentence1\": \"a\", \"score\": 1}}\n"),
    );
    assert_names(
        root.load::<StsPair>("stsb", "test").unwrap_err(),
        &path,
        2,
        "missing key \"sentence2\"",
    );

    let (_d, root, path) = mirror_with(
        "sts/stsb/test.jsonl",
        "{\"sentence1\": \"a\", \"sentence2\": \"b\", \"score\": \"high\"}\n",
    );
    assert_names(
        root.load::<StsPair>("stsb", "test").unwrap_err(),
        &path,
        1,
        "\"score\" must be a number",
    );

    let (_d, root, path) = mirror_with(
        "paraphrase/mrpc/test.jsonl",
        "{\"sentence1\": \"a\", \"sentence2\": \"b\", \"label\": 2}\n",
    );
    assert_names(
        root.load::<LabeledPair>("mrpc", "test").unwrap_err(),
        &path,
        1,
        "must be 0 or 1",
    );

    let (_d, root, path) = mirror_with(
        "word_similarity/EN-RG-65.tsv",
        "cord\tsmile\t0.02\r\ngem jewel 3.94\r\n",
    );
    assert_names(
        root.load::<WordPair>("en-rg-65", "all").unwrap_err(),
        &path,
        2,
        "expected 3 tab-separated fields",
    );
}

#[test]
fn empty_files_are_errors() {
    let (_d, root, path) = mirror_with("sts/stsb/test.jsonl", "\n\n");
    let err = root.load::<StsPair>("stsb", "test").unwrap_err();
    assert_eq!(err.to_string(), format!("{}: no rows", path.display()));
}

#[test]
fn missing_qrels_ids_name_the_qrels_line() {
    let dir = tempfile::tempdir().unwrap();
    let beir = dir.path().join("retrieval/scifact");
    std::fs::create_dir_all(beir.join("qrels")).unwrap();
    std::fs::write(
        beir.join("corpus.jsonl"),
        "{\"_id\": \"d1\", \"title\": \"\", \"text\": \"x\"}\n",
    )
    .unwrap();
    std::fs::write(
        beir.join("queries.jsonl"),
        "{\"_id\": \"q1\", \"text\": \"y\"}\n",
    )
    .unwrap();
    let qrels = beir.join("qrels/test.tsv");
    std::fs::write(&qrels, "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td9\t1\n").unwrap();
    assert_names(
        DataRoot::new(dir.path())
            .beir("scifact", "test")
            .unwrap_err(),
        &qrels,
        3,
        "corpus id \"d9\"",
    );
    std::fs::write(&qrels, "query-id\tcorpus-id\tscore\nq7\td1\t1\n").unwrap();
    assert_names(
        DataRoot::new(dir.path())
            .beir("scifact", "test")
            .unwrap_err(),
        &qrels,
        2,
        "query id \"q7\"",
    );
    std::fs::write(&qrels, "query-id\tcorpus-id\tscore\nq1\td1\tyes\n").unwrap();
    assert_names(
        DataRoot::new(dir.path())
            .beir("scifact", "test")
            .unwrap_err(),
        &qrels,
        2,
        "not an integer",
    );
}

#[test]
fn empty_texts_are_reported_and_handled_per_policy() {
    let content = "{\"text\": \"a\", \"label\": \"x\"}\n{\"text\": \"  \", \"label\": \"y\"}\n{\"text\": \"c\", \"label\": \"x\"}\n";
    let (_d, root, path) = mirror_with("clustering/reddit/test.jsonl", content);
    let kept = root.load::<LabeledText>("reddit", "test").unwrap();
    assert_eq!(
        (kept.rows.len(), kept.empty_text_lines.clone()),
        (3, vec![2])
    );
    let dropped = root
        .clone()
        .with_empty_text_policy(EmptyTextPolicy::Drop)
        .load::<LabeledText>("reddit", "test")
        .unwrap();
    assert_eq!(
        (dropped.rows.len(), dropped.empty_text_lines.clone()),
        (2, vec![2])
    );
    let err = root
        .with_empty_text_policy(EmptyTextPolicy::Fail)
        .load::<LabeledText>("reddit", "test")
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}: 1 rows with an empty text (first on line 2)",
            path.display()
        )
    );
}

/// A loaded split of `rows` with no file behind it.
fn in_memory(rows: Vec<LabeledText>) -> Loaded<LabeledText> {
    Loaded {
        dataset: "x".into(),
        split: "test".into(),
        path: PathBuf::from("x"),
        rows,
        empty_text_lines: vec![],
        files: vec![],
    }
}

#[test]
fn sampling_is_seeded_ordered_and_recorded() {
    let rows: Vec<LabeledText> = (0..100)
        .map(|i| LabeledText {
            text: format!("t{i}"),
            label: (i % 3).to_string(),
            ..LabeledText::default()
        })
        .collect();
    let loaded = in_memory(rows);
    let (a, sa) = sample(&loaded, Some(10), RunSeed(7));
    let (b, sb) = sample(&loaded, Some(10), RunSeed(7));
    assert_eq!(a, b);
    assert_eq!(sa, sb);
    assert_eq!((sa.total_rows, sa.used_rows, sa.seed), (100, 10, 7));
    let numbers: Vec<usize> = a.iter().map(|r| r.text[1..].parse().unwrap()).collect();
    assert!(
        numbers.windows(2).all(|w| w[0] < w[1]),
        "file order: {numbers:?}"
    );
    // pinned: the same seed selects the same rows on every machine
    assert_eq!(numbers, PINNED_SEED_7);
    let (_, other) = sample(&loaded, Some(10), RunSeed(8));
    assert_ne!(other.checksum, sa.checksum);
    let (all, s_all) = sample(&loaded, None, RunSeed(7));
    assert_eq!((all.len(), s_all.max_rows), (100, None));
}

// drawn with the label `sample/<split checksum>` (streams keyed by content since 2026-11-26)
const PINNED_SEED_7: [usize; 10] = [1, 11, 12, 22, 30, 35, 49, 88, 89, 97];

#[test]
fn grouped_sampling_takes_whole_groups_within_the_cap() {
    // 10 groups of sizes 1..=10 (55 rows), the group a row's label
    let rows: Vec<LabeledText> = (1..=10usize)
        .flat_map(|g| {
            (0..g).map(move |k| LabeledText {
                text: format!("g{g}-{k}"),
                label: g.to_string(),
                ..LabeledText::default()
            })
        })
        .collect();
    let loaded = in_memory(rows);
    let group = |r: &LabeledText| r.label.clone();
    let (a, sa) = sample_grouped(&loaded, Some(20), RunSeed(7), group);
    let (b, sb) = sample_grouped(&loaded, Some(20), RunSeed(7), group);
    assert_eq!((&a, &sa), (&b, &sb));
    assert!(!a.is_empty() && a.len() <= 20, "{}", a.len());
    assert_eq!(sa.used_rows, a.len());
    let mut taken: Vec<usize> = a.iter().map(|r| r.label.parse().unwrap()).collect();
    taken.dedup();
    for g in &taken {
        let n = a.iter().filter(|r| r.label == g.to_string()).count();
        assert_eq!(n, *g, "group {g} taken whole");
    }
    // a cap smaller than every group still takes one group; no cap takes everything
    let (one, _) = sample_grouped(&loaded, Some(0), RunSeed(7), group);
    let first = &one[0].label;
    assert!(one.iter().all(|r| &r.label == first));
    let (all, _) = sample_grouped(&loaded, None, RunSeed(7), group);
    assert_eq!(all.len(), 55);
}

/// Every dataset of the real mirror loads through the registry with the row counts of its
/// MANIFEST.tsv.
#[test]
fn the_real_mirror_matches_its_manifest() {
    let Ok(root) = DataRoot::from_env() else {
        sage_test_env::skip(
            module_path!(),
            "SAGE_DATA_DIR unset: the real mirror is not checked",
        );
        return;
    };
    let manifest_path = root.root().unwrap().join("MANIFEST.tsv");
    let manifest: HashMap<String, usize> = std::fs::read_to_string(&manifest_path)
        .unwrap()
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            f[1].parse().ok().map(|rows| (f[0].to_owned(), rows))
        })
        .collect();
    let mut checked = 0;
    let mut expect = |relative: String, got: usize| {
        let want = manifest
            .get(&relative)
            .unwrap_or_else(|| panic!("{relative} is not in MANIFEST.tsv"));
        assert_eq!(got, *want, "{relative}");
        checked += 1;
    };
    for e in REGISTRY {
        for split in e.splits {
            let relative = e.local_path(split);
            if !root.root().unwrap().join(&relative).exists() {
                // a dataset registered after the mirror was copied is fine when `sage data
                // fetch` rebuilds it from its pinned source
                let pinned = crate::pins::Pins::builtin()
                    .dataset(e.name)
                    .is_some_and(|d| d.rebuildable());
                assert!(
                    e.hub.is_some() || e.name == "qqp-full" || pinned,
                    "{} is neither local, nor pinned, nor on the hub",
                    e.name
                );
                continue;
            }
            match root.inspect(e.name, split, None, RunSeed(0)).unwrap() {
                SplitReport::Rows { selection, .. } => expect(relative, selection.total_rows),
                SplitReport::Beir {
                    corpus,
                    queries_in_file,
                    judgements,
                    ..
                } => {
                    expect(format!("{relative}/corpus.jsonl"), corpus);
                    expect(format!("{relative}/queries.jsonl"), queries_in_file);
                    expect(format!("{relative}/qrels/{split}.tsv"), judgements);
                }
                SplitReport::WordNet { .. } => {
                    for pos in ["noun", "verb", "adj", "adv"] {
                        for file in [format!("data.{pos}"), format!("index.{pos}")] {
                            let text = std::fs::read_to_string(
                                root.root().unwrap().join(&relative).join(&file),
                            )
                            .unwrap();
                            expect(
                                format!("{relative}/{file}"),
                                text.lines().filter(|l| !l.starts_with("  ")).count(),
                            );
                        }
                    }
                }
            }
        }
    }
    assert!(checked >= 80, "only {checked} files checked");
    eprintln!("{checked} mirror files match MANIFEST.tsv");
}

#[test]
fn reranking_rows_load_with_their_candidate_lists() {
    let rows = fixtures()
        .load::<crate::RerankingQuery>("askubuntudupquestions", "test")
        .unwrap()
        .rows;
    assert_eq!(rows.len(), 3);
    assert_eq!((rows[0].positive.len(), rows[0].negative.len()), (2, 3));
    assert_eq!(rows[1].texts().len(), 5);
    // MTEB's hub records keep their lists through the column mapping
    #[cfg(feature = "fetch")]
    hub_records_keep_their_candidate_lists();
}

#[cfg(feature = "fetch")]
fn hub_records_keep_their_candidate_lists() {
    let record = serde_json::json!({"query": "q", "positive": ["a"], "negative": ["b", "c"]});
    let mapped = crate::map_record(
        &record,
        &[
            ("query", "query"),
            ("positive", "positive"),
            ("negative", "negative"),
        ],
    )
    .unwrap();
    assert_eq!(mapped, [record]);
}
