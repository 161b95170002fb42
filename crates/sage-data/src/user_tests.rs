//! A user's own datasets: every layout and format, kind detection, column mapping, the errors a
//! hostile or mistaken file gets, and that the same rows are the same rows whatever the file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sage_core::RunSeed;

use super::*;
use crate::user::UserSpec;

fn fixtures() -> DataRoot {
    DataRoot::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/fixtures/mirror"))
}

fn fixture(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/fixtures/mirror")
        .join(relative)
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

fn hints(kind: Option<&str>, columns: &str) -> PathHints {
    PathHints {
        kind: kind.map(str::to_owned),
        columns: PathHints::parse_columns(columns).unwrap(),
    }
}

const TICKETS_CSV: &str = "body,queue\n\
\"Card declined, twice\",payments\n\
Password reset link expired,account\n\
\"Refund not received\nafter 10 days\",payments\n\
Cannot log in,account\n";

const TICKETS_JSONL: &str = r#"{"text": "Card declined, twice", "label": "payments"}
{"text": "Password reset link expired", "label": "account"}
{"text": "Refund not received\nafter 10 days", "label": "payments"}
{"text": "Cannot log in", "label": "account"}
"#;

#[test]
fn a_csv_with_other_column_names_is_labeled_texts_with_the_jsonl_checksum() {
    let dir = tempfile::tempdir().unwrap();
    let csv = write(dir.path(), "tickets.csv", TICKETS_CSV);
    let jsonl = write(dir.path(), "tickets-ours.jsonl", TICKETS_JSONL);
    let mut root = DataRoot::without_mirror();
    // without a mapping nothing fits: the error names the columns and says how to map them
    let e = root
        .resolve(csv.to_str().unwrap(), &PathHints::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("tickets.csv") && e.contains("(body, queue)") && e.contains("--columns"),
        "{e}"
    );
    let (name, split) = root
        .resolve(csv.to_str().unwrap(), &hints(None, "text=body,label=queue"))
        .unwrap();
    assert_eq!((name.as_str(), split.as_str()), ("tickets", "test"));
    assert_eq!(root.kind("tickets").unwrap(), DatasetKind::Clustering);
    let from_csv = root.load::<LabeledText>("tickets", "test").unwrap();
    assert_eq!(from_csv.rows.len(), 4);
    // a quoted cell keeps its comma and its newline
    assert_eq!(from_csv.rows[0].text, "Card declined, twice");
    assert_eq!(from_csv.rows[2].text, "Refund not received\nafter 10 days");
    let (ours, _) = root
        .resolve(jsonl.to_str().unwrap(), &PathHints::default())
        .unwrap();
    let from_jsonl = root.load::<LabeledText>(&ours, "test").unwrap();
    assert_eq!(from_csv.rows, from_jsonl.rows);
    let (_, a) = crate::sample(&from_csv, None, RunSeed(1));
    let (_, b) = crate::sample(&from_jsonl, None, RunSeed(1));
    assert_eq!(a.checksum, b.checksum);
}

#[test]
fn documents_with_a_content_column_are_numbered_by_line() {
    let dir = tempfile::tempdir().unwrap();
    let notes = write(
        dir.path(),
        "notes.jsonl",
        "{\"content\": \"Patient stable.\", \"ward\": \"B\"}\n\n{\"content\": \"Discharged home.\", \"ward\": \"C\"}\n",
    );
    let mut root = DataRoot::without_mirror();
    let (name, split) = root
        .resolve(notes.to_str().unwrap(), &hints(None, "text=content"))
        .unwrap();
    let u = root.user_dataset(&name).unwrap();
    assert_eq!(u.kind, DatasetKind::Documents);
    assert!(u.line_ids && u.detected);
    assert_eq!(u.columns["text"], "content");
    let docs = root.documents(&name, &split).unwrap();
    let ids: Vec<&str> = docs.rows.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids, ["1", "3"], "ids are the lines, blank lines skipped");
    assert_eq!(docs.rows[1].text, "Discharged home.");
}

#[test]
fn a_beir_folder_outside_the_registry_loads_as_the_registry_copy_does() {
    let dir = tempfile::tempdir().unwrap();
    let mine = dir.path().join("mybeir");
    sage_test_env::copy_tree(&fixture("retrieval/scifact"), &mine);
    let mut root = fixtures();
    let (name, split) = root
        .resolve(mine.to_str().unwrap(), &PathHints::default())
        .unwrap();
    assert_eq!((name.as_str(), split.as_str()), ("mybeir", "test"));
    assert_eq!(root.kind("mybeir").unwrap(), DatasetKind::Beir);
    let user = root.beir("mybeir", "test").unwrap();
    let registry = root.beir("scifact", "test").unwrap();
    assert_eq!(user.corpus, registry.corpus);
    assert_eq!(user.queries, registry.queries);
    assert_eq!(user.qrels, registry.qrels);
    // sensitivity reads its corpus as documents
    assert_eq!(
        root.documents("mybeir", "test").unwrap().rows,
        root.documents("scifact", "test").unwrap().rows
    );
    // a folder with two qrels splits: PATH#SPLIT picks one, and a missing one is named
    write(&mine, "qrels/dev.tsv", "query-id\tcorpus-id\tscore\n");
    let mut root = DataRoot::without_mirror();
    let arg = format!("{}#dev", mine.display());
    assert_eq!(root.resolve(&arg, &PathHints::default()).unwrap().1, "dev");
    let e = root
        .resolve(&format!("{}#train", mine.display()), &PathHints::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no split \"train\"") && e.contains("dev, test"),
        "{e}"
    );
}

#[test]
fn qrels_that_name_missing_documents_are_refused_by_a_run_and_counted_by_a_check() {
    let dir = tempfile::tempdir().unwrap();
    let mine = dir.path().join("broken");
    sage_test_env::copy_tree(&fixture("retrieval/scifact"), &mine);
    let qrels = std::fs::read_to_string(mine.join("qrels/test.tsv")).unwrap();
    let first_query = qrels.lines().nth(1).unwrap().split('\t').next().unwrap();
    write(
        &mine,
        "qrels/test.tsv",
        &format!("{qrels}{first_query}\tno-such-doc\t1\n"),
    );
    let mut root = DataRoot::without_mirror();
    root.resolve(mine.to_str().unwrap(), &PathHints::default())
        .unwrap();
    let line = qrels.lines().count() + 1;
    let e = root.beir("broken", "test").unwrap_err().to_string();
    assert!(
        e.contains(&format!("test.tsv:{line}")) && e.contains("no-such-doc"),
        "{e}"
    );
    match root.inspect("broken", "test", None, RunSeed(1)).unwrap() {
        SplitReport::Beir {
            qrels_to_missing_documents,
            ..
        } => assert_eq!(qrels_to_missing_documents, [line]),
        other => panic!("{other:?}"),
    }
    // a document id given twice: refused at its second line, counted by a check
    std::fs::write(mine.join("qrels/test.tsv"), &qrels).unwrap();
    let corpus = std::fs::read_to_string(mine.join("corpus.jsonl")).unwrap();
    let first = corpus.lines().next().unwrap();
    std::fs::write(mine.join("corpus.jsonl"), format!("{corpus}{first}\n")).unwrap();
    let repeated = corpus.lines().count() + 1;
    let e = root.beir("broken", "test").unwrap_err().to_string();
    assert!(
        e.contains(&format!("corpus.jsonl:{repeated}")) && e.contains("(first on line 1)"),
        "{e}"
    );
    match root.inspect("broken", "test", None, RunSeed(1)).unwrap() {
        SplitReport::Beir {
            duplicate_document_ids,
            ..
        } => assert_eq!(duplicate_document_ids, 1),
        other => panic!("{other:?}"),
    }
}

/// A judgement of relevance -1 once counted as a judgement of its own and moved the results;
/// it is TREC's "judged, not relevant", read as 0 and counted.
#[test]
fn negative_relevance_reads_as_judged_not_relevant_and_is_counted() {
    let dir = tempfile::tempdir().unwrap();
    let qrels = std::fs::read_to_string(fixture("retrieval/scifact/qrels/test.tsv")).unwrap();
    let corpus = std::fs::read_to_string(fixture("retrieval/scifact/corpus.jsonl")).unwrap();
    let first_query = qrels.lines().nth(1).unwrap().split('\t').next().unwrap();
    let unjudged_doc: String = corpus
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["_id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .find(|id| !qrels.contains(&format!("{first_query}\t{id}\t")))
        .unwrap();
    let mut root = DataRoot::without_mirror();
    let mut load = |name: &str, relevance: &str| {
        let mine = dir.path().join(name);
        sage_test_env::copy_tree(&fixture("retrieval/scifact"), &mine);
        write(
            &mine,
            "qrels/test.tsv",
            &format!("{qrels}{first_query}\t{unjudged_doc}\t{relevance}\n"),
        );
        root.resolve(mine.to_str().unwrap(), &PathHints::default())
            .unwrap();
        root.beir(name, "test").unwrap()
    };
    let negative = load("negative", "-1");
    let zero = load("zero", "0");
    assert_eq!(negative.negative_judgements, 1);
    assert_eq!(zero.negative_judgements, 0);
    assert_eq!(negative.qrels, zero.qrels);
    assert_eq!(
        negative.stream_key, zero.stream_key,
        "the same random streams"
    );
}

#[test]
fn detection_never_guesses_and_kind_says_it_outright() {
    assert_eq!(
        crate::user::detect(&["text".into(), "summary".into(), "id".into()]),
        [DatasetKind::DocumentSummary]
    );
    assert_eq!(
        crate::user::detect(&["sentence1".into(), "sentence2".into(), "score".into()]),
        [DatasetKind::StsPairs]
    );
    let dir = tempfile::tempdir().unwrap();
    let both = write(
        dir.path(),
        "both.jsonl",
        "{\"text\": \"a\", \"summary\": \"b\", \"label\": \"x\"}\n",
    );
    let mut root = DataRoot::without_mirror();
    let e = root
        .resolve(both.to_str().unwrap(), &PathHints::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("fit several kinds: document-summary, clustering") && e.contains("--kind"),
        "{e}"
    );
    root.resolve(both.to_str().unwrap(), &hints(Some("labeled-texts"), ""))
        .unwrap();
    assert_eq!(root.kind("both").unwrap(), DatasetKind::Clustering);
    // a kind the rows cannot be read as is refused by the loader, naming both
    let e = root
        .load::<StsPair>("both", "test")
        .unwrap_err()
        .to_string();
    assert!(e.contains("holds clustering, not sts-pairs"), "{e}");
    let e = DataRoot::without_mirror()
        .resolve(both.to_str().unwrap(), &hints(Some("tables"), ""))
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown kind \"tables\""), "{e}");
}

#[test]
fn hostile_files_get_errors_that_name_the_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let mut root = DataRoot::without_mirror();
    let error = |name: &str, text: &[u8], columns: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let mut root = DataRoot::without_mirror();
        match root.resolve(path.to_str().unwrap(), &hints(None, columns)) {
            Err(e) => e.to_string(),
            Ok((n, s)) => root.load::<StsPair>(&n, &s).unwrap_err().to_string(),
        }
    };
    // a score that is not a number, in a mapped column: the file's name for it is given
    let e = error(
        "scores.csv",
        b"a,b,gold\nx,y,4.5\nx,z,high\n",
        "sentence1=a,sentence2=b,score=gold",
    );
    assert!(
        e.contains("scores.csv:3")
            && e.contains("\"high\" is not a number")
            && e.contains("\"gold\""),
        "{e}"
    );
    let e = error("wide.csv", b"sentence1,sentence2,score\nx,y,1,extra\n", "");
    assert!(
        e.contains("wide.csv:2") && e.contains("4 fields where the header has 3"),
        "{e}"
    );
    let e = error("twice.csv", b"sentence1,sentence1,score\nx,y,1\n", "");
    assert!(
        e.contains("twice.csv:1") && e.contains("appears twice"),
        "{e}"
    );
    let e = error("bad.tsv", b"sentence1\tsentence2\tscore\nx\t\xff\t1\n", "");
    assert!(e.contains("bad.tsv:2") && e.contains("UTF-8"), "{e}");
    let e = error(
        "bad.jsonl",
        b"{\"sentence1\": \"x\", \"sentence2\": \"y\", \"score\": 1}\n{\"sentence1\": 3, \"sentence2\": \"y\", \"score\": 1}\n",
        "",
    );
    assert!(
        e.contains("bad.jsonl:2") && e.contains("must be a string"),
        "{e}"
    );
    let e = error("map.csv", b"a,b\nx,y\n", "text=body");
    assert!(
        e.contains("no column \"body\"") && e.contains("the file has a, b"),
        "{e}"
    );
    let e = error("shadow.csv", b"text,body\nx,y\n", "text=body");
    assert!(e.contains("has a column \"text\" already"), "{e}");
    let e = error("empty.csv", b"", "");
    assert!(e.contains("empty.csv"), "{e}");
    let e = error("notes.xlsx", b"PK", "");
    assert!(
        e.contains("unknown file type") && e.contains(".parquet"),
        "{e}"
    );
    // a line longer than the bound is an error, not the machine's memory
    let mut huge = b"{\"text\": \"".to_vec();
    huge.resize(crate::records::MAX_LINE_BYTES + 10, b'a');
    let e = error("huge.jsonl", &huge, "");
    assert!(
        e.contains("huge.jsonl:1") && e.contains("longer than 64 MiB"),
        "{e}"
    );
    // a registry name cannot be taken by a file
    let stsb = write(dir.path(), "stsb.jsonl", "{\"text\": \"x\"}\n");
    let e = root
        .resolve(stsb.to_str().unwrap(), &PathHints::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("\"stsb\" is taken"), "{e}");
}

#[test]
fn named_tables_register_datasets_with_paths_relative_to_their_file() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "data/train.csv", TICKETS_CSV);
    write(dir.path(), "data/test.csv", TICKETS_CSV);
    write(
        dir.path(),
        "data/corpus/a.tsv",
        "sentence1\tsentence2\tscore\nx\ty\t1\n",
    );
    let tables = write(
        dir.path(),
        "mine.toml",
        r#"
[suites.other]
ignored = true

[datasets.tickets]
path = "data/{split}.csv"
splits = ["train", "test"]
kind = "classification"
columns = { text = "body", label = "queue" }

[datasets.split-folder]
path = "data"
columns = { text = "body", label = "queue" }
"#,
    );
    let mut root = fixtures();
    let names = root.add_tables(&tables).unwrap();
    assert_eq!(names, ["split-folder", "tickets"]);
    assert_eq!(root.kind("tickets").unwrap(), DatasetKind::Classification);
    assert_eq!(root.splits("tickets").unwrap(), ["test", "train"]);
    assert_eq!(
        root.load::<LabeledText>("tickets", "train")
            .unwrap()
            .rows
            .len(),
        4
    );
    // NAME/SPLIT resolves like a registry name
    assert_eq!(
        root.resolve("tickets/train", &PathHints::default())
            .unwrap(),
        ("tickets".to_owned(), "train".to_owned())
    );
    // a folder of split files (the csv ones; the sub-folder is not a split)
    assert_eq!(root.splits("split-folder").unwrap(), ["test", "train"]);
    let e = root
        .resolve("tickets", &PathHints::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("name a split, as tickets/SPLIT"), "{e}");
    let bad = write(
        dir.path(),
        "bad.toml",
        "[datasets.x]\npath = \"data/test.csv\"\ncolumn = {}\n",
    );
    let e = fixtures().add_tables(&bad).unwrap_err().to_string();
    assert!(e.contains("bad.toml:3") && e.contains("column"), "{e}");
}

#[test]
fn a_path_with_a_registry_name_is_told_apart_and_unknown_names_say_so() {
    let mut root = fixtures();
    assert_eq!(
        root.resolve("stsb/test", &PathHints::default()).unwrap(),
        ("stsb".to_owned(), "test".to_owned())
    );
    let e = root
        .resolve("nosuch/test", &PathHints::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown dataset \"nosuch\""), "{e}");
    // a folder here with the name given: the message says how to give it as a path
    let here = tempfile::Builder::new()
        .prefix("userdata")
        .tempdir_in(".")
        .unwrap();
    let folder = here
        .path()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let e = root
        .resolve(&format!("{folder}/test"), &PathHints::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("a path is a dataset") && e.ends_with(&format!("--dataset ./{folder}#test")),
        "{e}"
    );
    // no mirror: a registry name says how to set one
    let e = DataRoot::without_mirror()
        .load::<StsPair>("stsb", "test")
        .unwrap_err()
        .to_string();
    assert!(e.contains("SAGE_DATA_DIR"), "{e}");
}

#[test]
fn mteb_rows_of_sickr_are_all_three_splits() {
    let dir = tempfile::tempdir().unwrap();
    for (split, n) in [("train", 3), ("validation", 1), ("test", 2)] {
        let rows: String = (0..n)
            .map(|i| {
                format!(
                    "{{\"sentence1\": \"{split} {i}\", \"sentence2\": \"b\", \"score\": 1.0}}\n"
                )
            })
            .collect();
        write(dir.path(), &format!("sts/sickr/{split}.jsonl"), &rows);
    }
    let root = DataRoot::new(dir.path());
    assert_eq!(root.load::<StsPair>("sickr", "test").unwrap().rows.len(), 2);
    let mteb = root.load_mteb::<StsPair>("sickr", "test").unwrap();
    assert_eq!((mteb.rows.len(), mteb.split.as_str()), (6, "test"));
    assert_eq!(mteb.rows[0].sentence1, "train 0");
    assert_eq!(mteb.rows[5].sentence1, "test 1");
    // a dataset MTEB names as the mirror does reads the same either way
    assert_eq!(
        fixtures()
            .load_mteb::<StsPair>("stsb", "test")
            .unwrap()
            .rows,
        fixtures().load::<StsPair>("stsb", "test").unwrap().rows
    );
}

#[test]
fn columns_are_read_from_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let tsv = write(
        dir.path(),
        "pairs.tsv",
        "sentence1\tsentence2\tlabel\nx\ty\t1\nx\tz\tfalse\n",
    );
    let mut root = DataRoot::without_mirror();
    let (name, split) = root
        .resolve(tsv.to_str().unwrap(), &PathHints::default())
        .unwrap();
    assert_eq!(root.kind(&name).unwrap(), DatasetKind::ParaphrasePairs);
    let rows = root.load::<LabeledPair>(&name, &split).unwrap().rows;
    assert_eq!(
        rows.iter().map(|r| r.label).collect::<Vec<_>>(),
        [true, false]
    );
    let mut columns = BTreeMap::new();
    columns.insert("text".to_owned(), "body".to_owned());
    let spec = UserSpec {
        path: tsv.clone(),
        columns,
        ..UserSpec::default()
    };
    let e = DataRoot::without_mirror()
        .add_user("x", &spec)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no column \"body\""), "{e}");
}

/// The same rows as JSON lines, CSV and Parquet: the same rows, the same checksum.
#[cfg(feature = "parquet")]
#[test]
fn parquet_rows_equal_the_same_rows_in_other_formats() {
    use polars::prelude::{JsonFormat, JsonReader, ParquetWriter, SerReader};
    let dir = tempfile::tempdir().unwrap();
    let mut frame = JsonReader::new(std::io::Cursor::new(
        TICKETS_JSONL
            .replace("\"text\"", "\"body\"")
            .replace("\"label\"", "\"queue\"")
            .into_bytes(),
    ))
    .with_json_format(JsonFormat::JsonLines)
    .finish()
    .unwrap();
    let parquet = dir.path().join("tickets.parquet");
    ParquetWriter::new(std::fs::File::create(&parquet).unwrap())
        .finish(&mut frame)
        .unwrap();
    let csv = write(dir.path(), "sub/tickets.csv", TICKETS_CSV);
    let from = |path: &Path| {
        let mut root = DataRoot::without_mirror();
        let (n, s) = root
            .resolve(
                path.to_str().unwrap(),
                &hints(None, "text=body,label=queue"),
            )
            .unwrap();
        let loaded = root.load::<LabeledText>(&n, &s).unwrap();
        let (_, selection) = crate::sample(&loaded, None, RunSeed(3));
        (loaded.rows, selection.checksum)
    };
    assert_eq!(from(&parquet), from(&csv));
}

/// A user's file is sampled streamed (two passes, holding the sample): the same rows, positions
/// and record as sampling the whole file loaded in memory, plain and grouped, under every
/// empty-text policy.
#[test]
fn a_streamed_sample_equals_the_sample_of_the_whole_file() {
    let tmp = tempfile::tempdir().unwrap();
    // 300 ratings of 60 documents (5 each), every 37th summary empty
    let mut lines = String::from("doc_id,source,summary,system,relevance\n");
    for i in 0..300 {
        let summary = if i % 37 == 0 {
            String::new()
        } else {
            format!("summary {i} of document {}", i / 5)
        };
        lines += &format!(
            "d{},source text {},{summary},s{},{}\n",
            i / 5,
            i / 5,
            i % 5,
            i % 4
        );
    }
    let path = write(tmp.path(), "ratings.csv", &lines);
    for policy in [EmptyTextPolicy::Keep, EmptyTextPolicy::Drop] {
        let mut root = DataRoot::without_mirror().with_empty_text_policy(policy);
        let (name, split) = root
            .resolve(path.to_str().unwrap(), &PathHints::default())
            .unwrap();
        let loaded = root.load::<SummaryRating>(&name, &split).unwrap();
        for max in [None, Some(0), Some(7), Some(120), Some(299), Some(1000)] {
            let streamed = root
                .rows::<SummaryRating>(&name, &split)
                .unwrap()
                .sample(max, RunSeed(11))
                .unwrap();
            let (indices, selection) = sample_indices(&loaded, max, RunSeed(11));
            let in_memory: Vec<SummaryRating> =
                indices.iter().map(|&i| loaded.rows[i].clone()).collect();
            assert_eq!(streamed.positions, indices, "{policy:?} {max:?}");
            assert_eq!(streamed.rows, in_memory, "{policy:?} {max:?}");
            assert_eq!(streamed.selection, selection, "{policy:?} {max:?}");
            let group = |r: &SummaryRating| r.doc_id.clone();
            let streamed = root
                .rows::<SummaryRating>(&name, &split)
                .unwrap()
                .sample_grouped(max, RunSeed(11), group)
                .unwrap();
            let (rows, selection) = sample_grouped(&loaded, max, RunSeed(11), group);
            assert_eq!((streamed.rows, streamed.selection), (rows, selection));
        }
    }
    // the empty summaries: kept and counted, dropped and counted, or refused by line
    let mut root = DataRoot::without_mirror().with_empty_text_policy(EmptyTextPolicy::Fail);
    let (name, split) = root
        .resolve(path.to_str().unwrap(), &PathHints::default())
        .unwrap();
    let e = root
        .rows::<SummaryRating>(&name, &split)
        .unwrap()
        .sample(Some(10), RunSeed(11))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("ratings.csv: 9 rows with an empty text (first on line 2)"),
        "{e}"
    );
    // a file of another kind is refused as by `load`
    let e = root
        .rows::<LabeledText>(&name, &split)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("holds summary-ratings"), "{e}");
}

/// A BEIR corpus streamed for a sample holds only the documents kept, and they, the ids, the
/// queries, the judgements and the stream key equal the whole load's.
#[test]
fn a_sampled_beir_load_holds_only_the_documents_kept() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/examples/clinic-faq");
    let mut root = DataRoot::without_mirror();
    let (name, split) = root
        .resolve(examples.to_str().unwrap(), &PathHints::default())
        .unwrap();
    let whole = root.beir(&name, &split).unwrap();
    assert_eq!(whole.corpus.len(), 40);
    let seen = std::cell::Cell::new(0);
    let sampled = root
        .beir_sampled(&name, &split, &|b| {
            // the ids and key are known before any document is kept
            assert!(b.corpus.is_empty());
            seen.set(b.corpus_ids.len());
            vec![0, 7, 39]
        })
        .unwrap();
    assert_eq!(seen.get(), 40);
    assert_eq!(sampled.corpus_positions, [0, 7, 39]);
    let kept: Vec<&BeirDocument> = [0, 7, 39].iter().map(|&i| &whole.corpus[i]).collect();
    assert_eq!(sampled.corpus.iter().collect::<Vec<_>>(), kept);
    assert_eq!(sampled.document(7), Some(&whole.corpus[7]));
    assert_eq!(sampled.document(8), None);
    assert_eq!(
        (
            &sampled.corpus_ids,
            &sampled.queries,
            &sampled.qrels,
            &sampled.stream_key
        ),
        (
            &whole.corpus_ids,
            &whole.queries,
            &whole.qrels,
            &whole.stream_key
        )
    );
    // the key is the content's: the same set built in memory has it
    let rebuilt = Beir::from_parts(
        "other",
        "dev",
        whole.corpus.clone(),
        whole.queries.clone(),
        whole.qrels.clone(),
    );
    assert_eq!(rebuilt.stream_key, whole.stream_key);
}

/// The small things a hostile probe found: each was silent or wrong.
#[test]
fn column_mappings_names_and_labels_say_what_is_wrong() {
    // `,,,` was ignored; two of ours onto one of theirs said `no column "body"` while listing it
    assert!(PathHints::parse_columns(",,,")
        .unwrap_err()
        .contains("expected ours=theirs"));
    assert!(PathHints::parse_columns("text=body,label=body")
        .unwrap_err()
        .contains("\"body\" is mapped onto both"));
    assert_eq!(
        PathHints::parse_columns("text=body,").unwrap(),
        BTreeMap::from([("text".to_owned(), "body".to_owned())])
    );
    let dir = tempfile::tempdir().unwrap();
    // a file name with a space (or a control character) names its dataset with `_` instead
    let spaced = write(dir.path(), "my tickets\u{1b}.jsonl", TICKETS_JSONL);
    let mut root = DataRoot::without_mirror();
    let (name, split) = root
        .resolve(spaced.to_str().unwrap(), &PathHints::default())
        .unwrap();
    assert_eq!((name.as_str(), split.as_str()), ("my_tickets_", "test"));
    // an empty label was a class of its own
    let unlabelled = write(
        dir.path(),
        "unlabelled.csv",
        "text,label\nfirst,a\nsecond,\nthird,b\n",
    );
    let mut root = DataRoot::without_mirror();
    let (name, split) = root
        .resolve(unlabelled.to_str().unwrap(), &hints(Some("clustering"), ""))
        .unwrap();
    let e = root
        .load::<LabeledText>(&name, &split)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("unlabelled.csv:3") && e.contains("empty label"),
        "{e}"
    );
    // a FIFO is not read (it would block)
    #[cfg(unix)]
    {
        let fifo = dir.path().join("pipe.csv");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .is_ok_and(|s| s.success());
        if made {
            let e = crate::records::columns(&fifo, Format::Csv)
                .unwrap_err()
                .to_string();
            assert!(e.contains("not a regular file"), "{e}");
        } else {
            eprintln!("skipped: the FIFO case (no mkfifo here)");
        }
    }
}

/// Each a sparse 3 GiB file (no disk): BEIR's queries and qrels were read whole before the line
/// cap was looked at (3.15 GB, and 6.3 GB then "counted as a missing document"); now the cap
/// holds while the line is read.
#[test]
fn beir_files_with_a_giant_line_are_refused_at_that_line() {
    let dir = tempfile::tempdir().unwrap();
    for (file, line) in [
        ("queries.jsonl", 2),
        ("qrels/test.tsv", 3),
        ("corpus.jsonl", 2),
    ] {
        let mine = dir.path().join(file.replace(['/', '.'], "-"));
        write(
            &mine,
            "corpus.jsonl",
            "{\"_id\": \"d1\", \"text\": \"x\"}\n",
        );
        write(
            &mine,
            "queries.jsonl",
            "{\"_id\": \"q1\", \"text\": \"hi\"}\n",
        );
        write(
            &mine,
            "qrels/test.tsv",
            "query-id\tcorpus-id\tscore\nq1\td1\t1\n",
        );
        std::fs::OpenOptions::new()
            .write(true)
            .open(mine.join(file))
            .unwrap()
            .set_len(3 << 30)
            .unwrap();
        let mut root = DataRoot::without_mirror();
        let (name, split) = root
            .resolve(mine.to_str().unwrap(), &PathHints::default())
            .unwrap();
        for e in [
            root.beir(&name, &split).unwrap_err().to_string(),
            root.inspect(&name, &split, None, RunSeed(1))
                .unwrap_err()
                .to_string(),
        ] {
            assert!(
                e.contains(&format!("{file}:{line}")) && e.contains("longer than 64 MiB"),
                "{file}: {e}"
            );
        }
    }
}
