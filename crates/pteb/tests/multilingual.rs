//! PTEB's multilingual datasets end to end on the fixture mirror's samples (STS17's six official
//! tracks, AmazonCounterfactual's four subsets, MasakhaNEWS's sixteen languages, RTE3's four, a
//! Danish retrieval set laid out as TwitterHjerne, a Russian reranking set as RuBQ) with a small
//! random XLM-RoBERTa checkpoint as the encoder (the family of paraphrase-multilingual-mpnet-base-v2
//! and multilingual-e5-large-instruct, built by tests/python-reference/tiny_models.py with
//! transformers), and a paraphraser that reverses the words and records what it was asked: one
//! result per language subset, each with its languages, every text asked for in its own language,
//! and MTEB files whose subsets and languages are MTEB's. Needs the reference Python (torch,
//! transformers, sentence-transformers) and all-MiniLM-L6-v2's tokenizer; says `skipped:`
//! without them.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use pteb::{evaluate, Options, ParaphraseSettings, Paraphraser, Paraphrasing, Silent};
use sage_data::DataRoot;
use sage_embed::{load, LoadOptions};
use sage_llm::{ChatMessage, ChatModel, Completion, Sampling};

/// Reverses the text's words; records (instruction, text) of every request.
struct Reversing(Arc<Mutex<Vec<(String, String)>>>);

impl ChatModel for Reversing {
    fn identity(&self) -> String {
        "reversing".into()
    }
    fn count_tokens(&self, text: &str) -> sage_llm::Result<usize> {
        Ok(text.split_whitespace().count())
    }
    fn complete(&self, m: &[ChatMessage], _: &Sampling) -> sage_llm::Result<Completion> {
        let (instruction, text) = m[1].content.split_once("\n\nText: ").unwrap();
        self.0
            .lock()
            .unwrap()
            .push((instruction.to_owned(), text.to_owned()));
        let mut words: Vec<&str> = text.split_whitespace().collect();
        words.reverse();
        // a one-word text reversed is itself: the accepted answer must differ a little
        Ok(Completion {
            text: format!("{} .", words.join(" ")),
            truncated: false,
        })
    }
}

#[test]
fn multilingual_defaults_run_per_language_with_a_random_xlm_roberta() {
    let what = "multilingual_defaults_run_per_language_with_a_random_xlm_roberta";
    let Some(tokenizer) = sage_test_env::model_dir_or_skip("all-MiniLM-L6-v2", what) else {
        return;
    };
    let Some(python) = sage_test_env::reference_python_or_skip(what) else {
        return;
    };
    let built = tempfile::tempdir().unwrap();
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/python-reference/tiny_models.py");
    let done = std::process::Command::new(&python)
        .arg(&script)
        .arg(built.path())
        .arg(&tokenizer)
        .arg("xlm-roberta")
        .env("HF_HUB_OFFLINE", "1")
        .env("TRANSFORMERS_OFFLINE", "1")
        .output()
        .unwrap();
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let cache = tempfile::tempdir().unwrap();
    let encoder = load(
        built.path().join("xlm-roberta").to_str().unwrap(),
        &LoadOptions::from_env().cached(cache.path().join("embeddings.redb")),
    )
    .unwrap()
    .embedder();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let paraphraser = Paraphraser::new(
        Box::new(Reversing(asked.clone())),
        ParaphraseSettings::default(),
        None,
    );
    let root =
        DataRoot::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/fixtures/mirror"));
    let datasets = [
        ("sts17", "test"),
        ("amazon-counterfactual", "test"),
        ("masakhanews", "test"),
        ("twitterhjerne", "train"),
        ("rte3", "test"),
        ("rubq-reranking", "test"),
    ];
    let report = evaluate(
        encoder.as_ref(),
        Paraphrasing {
            paraphraser: &paraphraser,
            judge: None,
            reference: encoder.as_ref(),
        },
        &root,
        &datasets,
        &Options {
            runs: 2,
            ..Options::default()
        },
        &Silent,
    )
    .unwrap();

    // one result per language subset, with its languages
    let got: BTreeMap<String, Vec<String>> = report
        .datasets
        .iter()
        .map(|d| (d.label(), d.languages.clone()))
        .collect();
    assert_eq!(got.len(), 6 + 4 + 16 + 1 + 4 + 1, "{got:?}");
    // a one-language set: no subset, the language the registry names
    assert_eq!(got["twitterhjerne/train"], ["dan-Latn"]);
    assert_eq!(got["rubq-reranking/test"], ["rus-Cyrl"]);
    assert_eq!(got["rte3/test/fr"], ["fra-Latn", "fra-Latn"]);
    assert_eq!(got["sts17/test/en-tr"], ["eng-Latn", "tur-Latn"]);
    assert_eq!(got["amazon-counterfactual/test/en-ext"], ["eng-Latn"]);
    assert_eq!(got["amazon-counterfactual/test/ja"], ["jpn-Jpan"]);
    assert_eq!(got["masakhanews/test/amh"], ["amh-Ethi"]);
    assert_eq!(got["masakhanews/test/pcm"], ["pcm-Latn"]);
    for d in &report.datasets {
        assert!(d.original.is_finite(), "{}", d.label());
        assert_eq!(d.runs.len(), 2, "{}", d.label());
        assert!(d.runs.iter().all(|r| r.score.is_finite()), "{}", d.label());
    }

    // each text was asked for in its own language
    let asked = asked.lock().unwrap();
    let rows = root
        .load_mteb::<sage_data::LabeledText>("masakhanews", "test")
        .unwrap()
        .rows;
    for row in rows.iter().filter(|r| r.subset.as_deref() == Some("swa")) {
        let instructions: Vec<&str> = asked
            .iter()
            .filter(|(_, t)| *t == row.text)
            .map(|(i, _)| i.as_str())
            .collect();
        assert!(!instructions.is_empty(), "{} not paraphrased", row.text);
        assert!(
            instructions
                .iter()
                .all(|i| i.starts_with("The text below is in Swahili.")),
            "{instructions:?}"
        );
    }
    let danish = root.beir("twitterhjerne", "train").unwrap().queries;
    for query in &danish {
        assert!(
            asked
                .iter()
                .any(|(i, t)| *t == query.text && i.starts_with("The text below is in Danish.")),
            "{} not asked for in Danish",
            query.text
        );
    }
    let russian = root
        .load_mteb::<sage_data::RerankingQuery>("rubq-reranking", "test")
        .unwrap()
        .rows;
    for text in russian
        .iter()
        .flat_map(|q| std::iter::once(&q.query).chain(&q.positive))
    {
        assert!(
            asked
                .iter()
                .any(|(i, t)| t == text && i.starts_with("The text below is in Russian.")),
            "{text} not asked for in Russian"
        );
    }
    let english_instruction = pteb::PromptStyle::English.instruction();
    let en_rows = root
        .load_mteb::<sage_data::LabeledText>("amazon-counterfactual", "test")
        .unwrap()
        .rows;
    let english = en_rows
        .iter()
        .find(|r| r.subset.as_deref() == Some("en"))
        .unwrap();
    assert!(asked
        .iter()
        .any(|(i, t)| *t == english.text && i == english_instruction));

    // MTEB's files: one per task, one entry per subset, MTEB's languages
    let out = tempfile::tempdir().unwrap();
    pteb::mteb::write_original_scores(out.path(), &report).unwrap();
    let read = pteb::mteb::read_results(out.path()).unwrap();
    let subsets = |task: &str| -> Vec<String> {
        read.iter()
            .filter(|s| s.task == task)
            .map(|s| s.hf_subset.clone())
            .collect()
    };
    assert_eq!(subsets("STS17").len(), 6);
    assert_eq!(
        subsets("AmazonCounterfactualClassification"),
        ["en", "en-ext", "de", "ja"]
    );
    assert_eq!(subsets("MasakhaNEWSClusteringS2S").len(), 16);
    assert_eq!(subsets("TwitterHjerneRetrieval"), ["default"]);
    assert_eq!(subsets("RTE3"), ["de", "en", "fr", "it"]);
    assert_eq!(subsets("RuBQReranking"), ["default"]);
    let danish_file = find(out.path(), "TwitterHjerneRetrieval.json").expect("its file");
    let danish_file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(danish_file).unwrap()).unwrap();
    assert_eq!(
        danish_file["scores"]["train"][0]["languages"],
        serde_json::json!(["dan-Latn"])
    );
    let file = find(out.path(), "MasakhaNEWSClusteringS2S.json").expect("MasakhaNEWS's file");
    let written: serde_json::Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    let tir = written["scores"]["test"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["hf_subset"] == "tir")
        .unwrap();
    assert_eq!(tir["languages"], serde_json::json!(["tir-Ethi"]));
}

/// The file called `name` somewhere under `dir`.
fn find(dir: &Path, name: &str) -> Option<std::path::PathBuf> {
    for entry in std::fs::read_dir(dir).ok()? {
        let path = entry.ok()?.path();
        if path.is_dir() {
            if let Some(found) = find(&path, name) {
                return Some(found);
            }
        } else if path.file_name().is_some_and(|n| n == name) {
            return Some(path);
        }
    }
    None
}
