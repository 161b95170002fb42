//! The registry of named datasets: kind, splits, local-mirror path and Hugging Face source.

use serde::Serialize;

/// What a dataset holds, and so which row type it loads as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DatasetKind {
    /// [`crate::StsPair`]: sentence1, sentence2, score (+ subset).
    StsPairs,
    /// [`crate::LabeledPair`]: sentence1, sentence2, label 0/1 (paraphrase / duplicate).
    ParaphrasePairs,
    /// [`crate::NegationPair`]: sentence, affirmative.
    NegationPairs,
    /// [`crate::DocumentSummary`]: id, text, summary (+ title).
    DocumentSummary,
    /// [`crate::Document`]: id, text (+ title, label).
    Documents,
    /// [`crate::SummaryRating`]: doc_id, source, summary, system + rating dimensions.
    SummaryRatings,
    /// [`crate::SummaryDocument`]: doc_id, source, reference.
    SummaryDocuments,
    /// [`crate::SummaryComparison`]: summarize_from_feedback comparisons.
    SummaryComparisons,
    /// [`crate::AxisRating`]: summarize_from_feedback axis evaluations.
    SummaryAxisRatings,
    /// [`crate::LabeledText`]: text, label (clustering).
    Clustering,
    /// corpus.jsonl, queries.jsonl, `qrels/<split>.tsv`.
    Beir,
    /// [`crate::LabeledText`]: text, label (classification).
    Classification,
    /// [`crate::LabeledPair`]: sentence1, sentence2, label 0/1 (pair classification).
    PairClassification,
    /// [`crate::ClassedPair`]: sentence1, sentence2, label (any number of classes: entailment,
    /// neutral, contradiction).
    PairClasses,
    /// [`crate::RerankingQuery`]: query, positive (list), negative (list).
    Reranking,
    /// [`crate::WordPair`]: `word1<TAB>word2<TAB>score` lines.
    WordSimilarity,
    /// [`crate::Line`]: one word or sentence per line.
    Vocabulary,
    /// [`crate::TextPair`]: `a<TAB>b` lines (EvalRank positive pairs).
    TextPairs,
    /// The WordNet 3.0 database folder.
    WordNet,
}

impl DatasetKind {
    /// Every kind, in listing order.
    pub const ALL: &'static [DatasetKind] = &[
        DatasetKind::StsPairs,
        DatasetKind::ParaphrasePairs,
        DatasetKind::PairClassification,
        DatasetKind::PairClasses,
        DatasetKind::NegationPairs,
        DatasetKind::DocumentSummary,
        DatasetKind::Documents,
        DatasetKind::Clustering,
        DatasetKind::Classification,
        DatasetKind::Beir,
        DatasetKind::Reranking,
        DatasetKind::SummaryRatings,
        DatasetKind::SummaryDocuments,
        DatasetKind::SummaryComparisons,
        DatasetKind::SummaryAxisRatings,
        DatasetKind::WordSimilarity,
        DatasetKind::Vocabulary,
        DatasetKind::TextPairs,
        DatasetKind::WordNet,
    ];

    /// The kind a user names: its [`name`](Self::name), or a plainer word for it (`sts`,
    /// `labeled-texts`, `retrieval`, ...).
    pub fn parse(name: &str) -> Option<DatasetKind> {
        let name = name.trim().to_ascii_lowercase().replace('_', "-");
        let alias = match name.as_str() {
            "sts" => Some(DatasetKind::StsPairs),
            "paraphrase" | "pairs" => Some(DatasetKind::ParaphrasePairs),
            "labeled-texts" | "labelled-texts" => Some(DatasetKind::Clustering),
            "retrieval" => Some(DatasetKind::Beir),
            "summaries" => Some(DatasetKind::DocumentSummary),
            _ => None,
        };
        alias.or_else(|| DatasetKind::ALL.iter().copied().find(|k| k.name() == name))
    }

    /// Name used in listings.
    pub fn name(self) -> &'static str {
        match self {
            DatasetKind::StsPairs => "sts-pairs",
            DatasetKind::ParaphrasePairs => "paraphrase-pairs",
            DatasetKind::NegationPairs => "negation-pairs",
            DatasetKind::DocumentSummary => "document-summary",
            DatasetKind::Documents => "documents",
            DatasetKind::SummaryRatings => "summary-ratings",
            DatasetKind::SummaryDocuments => "summary-documents",
            DatasetKind::SummaryComparisons => "summary-comparisons",
            DatasetKind::SummaryAxisRatings => "summary-axis-ratings",
            DatasetKind::Clustering => "clustering",
            DatasetKind::Beir => "beir",
            DatasetKind::Classification => "classification",
            DatasetKind::PairClassification => "pair-classification",
            DatasetKind::PairClasses => "pair-classes",
            DatasetKind::Reranking => "reranking",
            DatasetKind::WordSimilarity => "word-similarity",
            DatasetKind::Vocabulary => "vocabulary",
            DatasetKind::TextPairs => "text-pairs",
            DatasetKind::WordNet => "wordnet",
        }
    }
}

/// Where a dataset lives on the Hugging Face hub and how its columns map onto ours.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct HubSource {
    /// Dataset repository id.
    pub repo: &'static str,
    /// Revision (branch, tag or commit).
    pub revision: &'static str,
    /// Dataset config / subset, where the repository has several.
    pub config: Option<&'static str>,
    /// Files to fetch, relative to the repository root (`{split}` is substituted).
    pub files: &'static [&'static str],
    /// (our column, their column or JSON path) pairs. A path may name alternatives,
    /// `info.post|info.article`: the first that is present and not null.
    pub columns: &'static [(&'static str, &'static str)],
    /// How the records become our layout when a column map cannot say it; `None`: the
    /// columns alone.
    pub transform: Option<HubTransform>,
}

/// A source's records made into our layout by a rule of their own.
#[derive(Clone, Copy, Debug, Serialize)]
pub enum HubTransform {
    /// One question a record with its answers in the columns whose names start with
    /// `answer_prefix`, made into a BEIR set as MTEB's task makes it
    /// (mteb/tasks/Retrieval/dan/TwitterHjerneRetrieval.py, v1): an answer counts when it has
    /// more than 3 space-separated words; a question of fewer than 4 words that has answers is
    /// left out; queries and new answers are numbered by one counter in record order, an
    /// answer seen before keeping its number; every answer of a question is relevant (1).
    QuestionAnswers {
        /// The question's column.
        question: &'static str,
        /// The prefix of the answers' columns.
        answer_prefix: &'static str,
    },
}

/// One registered dataset.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct DatasetEntry {
    /// Registry name.
    pub name: &'static str,
    /// What it holds.
    pub kind: DatasetKind,
    /// Its splits (for BEIR: the qrels splits; `all` for single-file sets).
    pub splits: &'static [&'static str],
    /// Path in the local mirror relative to the data root; `{split}` is substituted. For BEIR
    /// and WordNet, the folder.
    pub local: &'static str,
    /// Rating dimensions (summary ratings) — the keys read into `SummaryRating::ratings`.
    pub dimensions: &'static [&'static str],
    /// The hub source, when the dataset is on the hub.
    pub hub: Option<HubSource>,
    /// Splits whose rows under MTEB's name differ from the mirror file of that name: (MTEB's
    /// split, the mirror splits whose rows, in this order, make it). MTEB's SICK-R `test` is all
    /// 9,927 SICK pairs, the mirror's `sickr/test` SICK's own 4,927-pair test split. PTEB, which
    /// compares with MTEB's published scores, reads these ([`crate::DataRoot::load_mteb`]).
    pub mteb_rows: &'static [(&'static str, &'static [&'static str])],
    /// One line about it.
    pub description: &'static str,
    /// The language of every text, as MTEB writes it (`dan-Latn`), of a one-language dataset
    /// that is not English; `None`: English, or stated by each row (a file of language subsets).
    pub language: Option<&'static str>,
}

/// `entry` with every text in `language` (MTEB's form, `dan-Latn`).
const fn in_language(mut entry: DatasetEntry, language: &'static str) -> DatasetEntry {
    entry.language = Some(language);
    entry
}

macro_rules! entry {
    ($name:literal, $kind:ident, [$($split:literal),*], $local:literal, $hub:expr, $desc:literal) => {
        DatasetEntry { name: $name, kind: DatasetKind::$kind, splits: &[$($split),*], local: $local, dimensions: &[], hub: $hub, mteb_rows: &[], description: $desc, language: None }
    };
}

/// GLUE's Parquet copy at a commit (MTEB has no GLUE task; this commit is the one the hub's
/// `datasets` cache names for its MRPC, QQP and SST-2 files).
const GLUE_REVISION: &str = "bcdcba79d07bc864c1c254ccfcedcce55bcc9a8c";

/// A hub source at the commit MTEB's task metadata pins for it (mteb/tasks/..., `revision`), so
/// the hub copy is the one MTEB's published scores were computed on.
const fn hub_at(
    revision: &'static str,
    repo: &'static str,
    config: Option<&'static str>,
    files: &'static [&'static str],
    columns: &'static [(&'static str, &'static str)],
) -> Option<HubSource> {
    Some(HubSource {
        repo,
        revision,
        config,
        files,
        columns,
        transform: None,
    })
}

/// OpenAI's summarize-from-feedback as the hub's Parquet conversion made it: its `main` holds
/// only a loading script that downloads OpenAI's JSON files, so the Parquet files are read at
/// this commit of the `refs/convert/parquet` branch ("Update parquet files", 2023-08-17; later
/// commits there only add DuckDB indexes beside the same files).
const SUMMARIZE_FROM_FEEDBACK_PARQUET: &str = "195fc27ff714b2aff32ab8aba9bbee1d35663700";

const STS_COLUMNS: &[(&str, &str)] = &[
    ("sentence1", "sentence1"),
    ("sentence2", "sentence2"),
    ("score", "score"),
];
const MTEB_STS_FILES: &[&str] = &["{split}.jsonl.gz"];
/// MTEB's STS17 keeps one file per language pair; the subset is the file's name.
const STS_SUBSET_FROM_FILE: &[(&str, &str)] = &[
    ("sentence1", "sentence1"),
    ("sentence2", "sentence2"),
    ("score", "score"),
    ("subset", "{file}"),
];
const STS17_FILES: &[&str] = &[
    "test/ar-ar.jsonl.gz",
    "test/en-ar.jsonl.gz",
    "test/es-es.jsonl.gz",
    "test/es-en.jsonl.gz",
    "test/en-en.jsonl.gz",
    "test/en-tr.jsonl.gz",
];
/// MTEB's STS22 at its pin keeps each subset's test pairs under `test/` as STS17 does; the
/// file names are read off MTEB's subset list (the hub is not reachable from where this was
/// written: `sage data fetch sts22` names a file it does not find).
const STS22_FILES: &[&str] = &[
    "test/en.jsonl.gz",
    "test/de.jsonl.gz",
    "test/es.jsonl.gz",
    "test/pl.jsonl.gz",
    "test/tr.jsonl.gz",
    "test/ar.jsonl.gz",
    "test/ru.jsonl.gz",
    "test/zh.jsonl.gz",
    "test/fr.jsonl.gz",
    "test/de-en.jsonl.gz",
    "test/es-en.jsonl.gz",
    "test/it.jsonl.gz",
    "test/pl-en.jsonl.gz",
    "test/zh-en.jsonl.gz",
    "test/es-it.jsonl.gz",
    "test/de-fr.jsonl.gz",
    "test/de-pl.jsonl.gz",
    "test/fr-pl.jsonl.gz",
];
const STS17_EXTRA_FILES: &[&str] = &[
    "test/en-de.jsonl.gz",
    "test/fr-en.jsonl.gz",
    "test/it-en.jsonl.gz",
    "test/nl-en.jsonl.gz",
];
const PAIR_COLUMNS: &[(&str, &str)] = &[
    ("sentence1", "sentence1"),
    ("sentence2", "sentence2"),
    ("label", "label"),
];
/// MTEB's per-subset Parquet of a pair classification task (its v2 uploads: one row a pair,
/// `labels` 0/1 per row; RTE3's neutral pairs already left out and entailment made 1, as the
/// task's v1 `dataset_transform` did before the upload); the subset is the file's folder.
const SUBSET_PAIR_COLUMNS: &[(&str, &str)] = &[
    ("sentence1", "sentence1"),
    ("sentence2", "sentence2"),
    ("label", "labels"),
    ("subset", "{folder}"),
];
const MTEB_CLUSTERING: &[(&str, &str)] = &[("text", "sentences[]"), ("label", "labels[]")];
const MTEB_CLUSTERING_FILES: &[&str] = &["test.jsonl.gz"];
/// MTEB's copies of the BEIR sets at the revisions its tasks pin: plain JSON lines, the
/// judgements beside the corpus (mteb/abstasks/retrieval_dataset_loaders.py reads them so).
const MTEB_BEIR_FILES: &[&str] = &["corpus.jsonl", "queries.jsonl", "qrels/{split}.jsonl"];
const BEIR_COLUMNS: &[(&str, &str)] = &[("_id", "_id"), ("title", "title"), ("text", "text")];

/// Every registered dataset: everything in the local mirror (`../shared/data`) and the
/// datasets the seed papers use that are only on the hub.
pub const REGISTRY: &[DatasetEntry] = &[
    // STS
    entry!(
        "stsb",
        StsPairs,
        ["train", "validation", "test"],
        "sts/stsb/{split}.jsonl",
        hub_at(
            "b0fddb56ed78048fa8b90373c8a3cfc37b684831",
            "mteb/stsbenchmark-sts",
            None,
            MTEB_STS_FILES,
            STS_COLUMNS
        ),
        "STS Benchmark, scores 0-5"
    ),
    DatasetEntry {
        name: "sickr",
        kind: DatasetKind::StsPairs,
        splits: &["train", "validation", "test"],
        local: "sts/sickr/{split}.jsonl",
        dimensions: &[],
        hub: hub_at(
            "20a6d6f312dd54037fe07a32d58e5e168867909d",
            "mteb/sickr-sts",
            None,
            MTEB_STS_FILES,
            STS_COLUMNS,
        ),
        // mteb/sickr-sts has one split, test, of every SICK pair (train + trial + test)
        mteb_rows: &[("test", &["train", "validation", "test"])],
        description: "SICK relatedness, scores 1-5 (MTEB's SICK-R test: all three splits)",
        language: None,
    },
    entry!(
        "sts12",
        StsPairs,
        ["test"],
        "sts/sts12/{split}.jsonl",
        hub_at(
            "a0d554a64d88156834ff5ae9920b964011b16384",
            "mteb/sts12-sts",
            None,
            MTEB_STS_FILES,
            STS_COLUMNS
        ),
        "SemEval STS 2012"
    ),
    entry!(
        "sts13",
        StsPairs,
        ["test"],
        "sts/sts13/{split}.jsonl",
        hub_at(
            "7e90230a92c190f1bf69ae9002b8cea547a64cca",
            "mteb/sts13-sts",
            None,
            MTEB_STS_FILES,
            STS_COLUMNS
        ),
        "SemEval STS 2013 (no SMT)"
    ),
    entry!(
        "sts14",
        StsPairs,
        ["test"],
        "sts/sts14/{split}.jsonl",
        hub_at(
            "6031580fec1f6af667f0bd2da0a551cf4f0b2375",
            "mteb/sts14-sts",
            None,
            MTEB_STS_FILES,
            STS_COLUMNS
        ),
        "SemEval STS 2014"
    ),
    entry!(
        "sts15",
        StsPairs,
        ["test"],
        "sts/sts15/{split}.jsonl",
        hub_at(
            "ae752c7c21bf194d8b67fd573edf7ae58183cbe3",
            "mteb/sts15-sts",
            None,
            MTEB_STS_FILES,
            STS_COLUMNS
        ),
        "SemEval STS 2015"
    ),
    entry!(
        "sts16",
        StsPairs,
        ["test"],
        "sts/sts16/{split}.jsonl",
        hub_at(
            "4d8694f8f0e0100860b497b999b3dbed754a0513",
            "mteb/sts16-sts",
            None,
            MTEB_STS_FILES,
            STS_COLUMNS
        ),
        "SemEval STS 2016"
    ),
    entry!(
        "sts17",
        StsPairs,
        ["test"],
        "sts/sts17/{split}.jsonl",
        hub_at(
            "faeb762787bd10488a50c8b5be4a3b82e411949c",
            "mteb/sts17-crosslingual-sts",
            None,
            STS17_FILES,
            STS_SUBSET_FROM_FILE
        ),
        "SemEval STS 2017, its six official tracks (ar-ar, en-ar, es-es, es-en, en-en, en-tr)"
    ),
    entry!(
        "sts17-extra",
        StsPairs,
        ["test"],
        "sts/sts17-extra/{split}.jsonl",
        hub_at(
            "faeb762787bd10488a50c8b5be4a3b82e411949c",
            "mteb/sts17-crosslingual-sts",
            None,
            STS17_EXTRA_FILES,
            STS_SUBSET_FROM_FILE
        ),
        "STS 2017 cross-lingual pairs only MTEB's copy has (en-de, fr-en, it-en, nl-en)"
    ),
    entry!(
        "sts17-ko",
        StsPairs,
        ["test"],
        "sts/sts17-ko/{split}.jsonl",
        hub_at(
            "faeb762787bd10488a50c8b5be4a3b82e411949c",
            "mteb/sts17-crosslingual-sts",
            None,
            &["test/ko-ko.jsonl.gz"],
            STS_SUBSET_FROM_FILE
        ),
        "STS 2017's Korean pairs in MTEB's copy (ko-ko; not among the PTEB paper's languages)"
    ),
    entry!(
        "sts22",
        StsPairs,
        ["test"],
        "sts/sts22/{split}.jsonl",
        hub_at(
            "de9d86b3b84231dc21f76c7b7af1f28e2f57f6e3",
            "mteb/sts22-crosslingual-sts",
            None,
            STS22_FILES,
            STS_SUBSET_FROM_FILE
        ),
        "SemEval 2022 Task 8, multilingual news article similarity (18 language subsets)"
    ),
    entry!(
        "biosses",
        StsPairs,
        ["test"],
        "sts/biosses/{split}.jsonl",
        hub_at(
            "d3fb88f8f02e40887cd149695127462bbcf29b4a",
            "mteb/biosses-sts",
            None,
            MTEB_STS_FILES,
            STS_COLUMNS
        ),
        "BIOSSES biomedical STS"
    ),
    entry!(
        "str2022",
        StsPairs,
        ["all"],
        "sts/str2022/{split}.jsonl",
        None,
        "STR-2022 semantic relatedness (EvalRank's sentence set)"
    ),
    // paraphrase and negation
    entry!(
        "mrpc",
        ParaphrasePairs,
        ["train", "test"],
        "paraphrase/mrpc/{split}.jsonl",
        hub_at(
            GLUE_REVISION,
            "nyu-mll/glue",
            Some("mrpc"),
            &["mrpc/{split}-00000-of-00001.parquet"],
            PAIR_COLUMNS
        ),
        "Microsoft Research Paraphrase Corpus"
    ),
    entry!(
        "paws-wiki",
        ParaphrasePairs,
        ["dev", "test"],
        "paraphrase/paws_wiki/{split}.jsonl",
        // no MTEB task: a commit of the owners' Parquet copy
        hub_at(
            "161ece9501cf0a11f3e48bd356eaa82de46d6a09",
            "google-research-datasets/paws",
            Some("labeled_final"),
            &["labeled_final/{split}-00000-of-00001.parquet"],
            PAIR_COLUMNS
        ),
        "PAWS-Wiki labeled final"
    ),
    entry!(
        "qqp",
        ParaphrasePairs,
        ["sample"],
        "paraphrase/qqp/{split}.jsonl",
        None,
        "Quora Question Pairs, tiny local sample (qqp-full is on the hub)"
    ),
    entry!(
        "qqp-full",
        ParaphrasePairs,
        ["train", "validation"],
        "paraphrase/qqp_full/{split}.jsonl",
        hub_at(
            GLUE_REVISION,
            "nyu-mll/glue",
            Some("qqp"),
            &["qqp/{split}-00000-of-00001.parquet"],
            &[
                ("sentence1", "question1"),
                ("sentence2", "question2"),
                ("label", "label")
            ]
        ),
        "Quora Question Pairs, full (GLUE)"
    ),
    entry!(
        "afin",
        NegationPairs,
        ["train", "dev", "test"],
        "paraphrase/afin/{split}.jsonl",
        None,
        "AFIN: negated sentences and affirmative interpretations"
    ),
    // documents and summaries
    entry!(
        "cnn-dailymail",
        DocumentSummary,
        ["sample"],
        "summarization/cnn_dailymail/{split}.jsonl",
        None,
        "CNN/DailyMail: 300 articles with highlights from a GitHub subset CSV (SAGE's test split: cnn-dailymail-test)"
    ),
    entry!(
        "cnn-dailymail-test",
        DocumentSummary,
        ["test"],
        "summarization/cnn_dailymail_test/{split}.jsonl",
        // no MTEB task: a commit of the owners' Parquet copy (its test file: 11,490 articles,
        // sha256 04e322d2… as public code that pins it records)
        hub_at(
            "3adf6249f0cc8409a97a4d38471529ef5f7dc496",
            "abisee/cnn_dailymail",
            Some("3.0.0"),
            &["3.0.0/test-00000-of-00001.parquet"],
            &[("id", "id"), ("text", "article"), ("summary", "highlights")]
        ),
        "CNN/DailyMail 3.0.0 test split, all 11,490 articles: SAGE's (runs sample it: max_rows, seed)"
    ),
    entry!(
        "billsum",
        DocumentSummary,
        ["sample"],
        "summarization/billsum/{split}.jsonl",
        None,
        "BillSum: 100 US bills with summaries from a GitHub copy of the train split (SAGE's test split: billsum-test)"
    ),
    entry!(
        "billsum-test",
        DocumentSummary,
        ["test"],
        "summarization/billsum_test/{split}.jsonl",
        // no MTEB task: a commit of the owners' Parquet copy
        hub_at(
            "80bf8bc45b509641bd203107fff6a1db72949eaa",
            "FiscalNote/billsum",
            None,
            &["data/test-00000-of-00001.parquet"],
            &[("id", "{row}"), ("text", "text"), ("summary", "summary"), ("title", "title")]
        ),
        "BillSum test split, all 3,269 US bills: SAGE's (runs sample it: max_rows, seed)"
    ),
    entry!(
        "sumpubmed",
        DocumentSummary,
        ["sample"],
        "summarization/sumpubmed/{split}.jsonl",
        None,
        "SumPubMed biomedical abstracts (body lower-cased)"
    ),
    entry!(
        "paul-graham-essays",
        Documents,
        ["sample"],
        "documents/paul_graham_essays/{split}.jsonl",
        None,
        "Paul Graham's 215 essays"
    ),
    entry!(
        "amazon-polarity",
        Documents,
        ["sample"],
        "documents/amazon_polarity/{split}.jsonl",
        None,
        "Amazon reviews, 1,000-row local sample (amazon-polarity-full is on the hub)"
    ),
    entry!(
        "amazon-polarity-full",
        Documents,
        ["test"],
        "documents/amazon_polarity_full/{split}.jsonl",
        // a commit of the owners' Parquet copy: MTEB's AmazonPolarityClassification pins
        // mteb/amazon_polarity@e2d317d, whose file layout at that commit is not known here
        hub_at(
            "9d9c45c18f8c3cf1b23a3c27917b60cbf28f3289",
            "fancyzhx/amazon_polarity",
            Some("amazon_polarity"),
            &["amazon_polarity/test-00000-of-00001.parquet"],
            &[
                ("title", "title"),
                ("text", "title+\n+content"),
                ("label", "label")
            ]
        ),
        "Amazon reviews, full 400k test split"
    ),
    // human preference
    DatasetEntry {
        name: "summeval",
        kind: DatasetKind::SummaryRatings,
        splits: &["ratings"],
        local: "human_pref/summeval/{split}.jsonl",
        dimensions: &["coherence", "consistency", "fluency", "relevance"],
        hub: hub_at(
            "cda12ad7615edc362dbf25a00fdd61d3b1eaf93c",
            "mteb/summeval",
            None,
            &["test.jsonl.gz"],
            &[
                ("doc_id", "id"),
                ("source", "text"),
                ("summary", "machine_summaries[]"),
                ("system", "{index}"),
                ("coherence", "coherence[]"),
                ("consistency", "consistency[]"),
                ("fluency", "fluency[]"),
                ("relevance", "relevance[]"),
            ],
        ),
        mteb_rows: &[],
        description: "SummEval expert ratings (1-5)",
        language: None,
    },
    entry!(
        "summeval-docs",
        SummaryDocuments,
        ["docs"],
        "human_pref/summeval/{split}.jsonl",
        None,
        "SummEval source documents and references"
    ),
    DatasetEntry {
        name: "realsumm",
        kind: DatasetKind::SummaryRatings,
        splits: &["ratings"],
        local: "human_pref/realsumm/{split}.jsonl",
        dimensions: &["litepyramid_recall"],
        hub: None,
        mteb_rows: &[],
        description: "REALSumm LitePyramid recall (0-1)",
        language: None,
    },
    entry!(
        "realsumm-docs",
        SummaryDocuments,
        ["docs"],
        "human_pref/realsumm/{split}.jsonl",
        None,
        "REALSumm source documents and references"
    ),
    entry!(
        "summarize-from-feedback-comparisons",
        SummaryComparisons,
        ["train", "validation"],
        "human_pref/summarize_from_feedback/comparisons_{split}.jsonl",
        hub_at(
            SUMMARIZE_FROM_FEEDBACK_PARQUET,
            "openai/summarize_from_feedback",
            Some("comparisons"),
            &["comparisons/{split}/0000.parquet"],
            &[
                ("id", "info.id"),
                // the CNN/DailyMail batches carry an article where the TL;DR ones carry a post
                ("post", "info.post|info.article"),
                ("summary_0", "summaries[0].text"),
                ("summary_1", "summaries[1].text"),
                ("choice", "choice")
            ]
        ),
        "OpenAI TL;DR pairwise preferences"
    ),
    DatasetEntry {
        name: "summarize-from-feedback-axis",
        kind: DatasetKind::SummaryAxisRatings,
        splits: &["validation", "test"],
        local: "human_pref/summarize_from_feedback/axis_{split}.jsonl",
        dimensions: &["overall", "accuracy", "coverage", "coherence"],
        hub: hub_at(
            SUMMARIZE_FROM_FEEDBACK_PARQUET,
            "openai/summarize_from_feedback",
            Some("axis"),
            &["axis/{split}/0000.parquet"],
            &[
                ("doc_id", "info.id"),
                // the test split rates CNN/DailyMail summaries: an article, no post
                ("source", "info.post|info.article"),
                ("summary", "summary.text"),
                ("system", "summary.policy"),
                ("overall", "summary.axes.overall"),
                ("accuracy", "summary.axes.accuracy"),
                ("coverage", "summary.axes.coverage"),
                ("coherence", "summary.axes.coherence"),
            ],
        ),
        mteb_rows: &[],
        description: "OpenAI TL;DR axis ratings (1-7)",
        language: None,
    },
    // clustering
    entry!(
        "masakhanews",
        Clustering,
        ["test"],
        "clustering/masakhanews/{split}.jsonl",
        hub_at(
            "5dddcb139010208a28c3dcc2568560061c210097",
            "mteb/MasakhaNEWSClusteringS2S",
            None,
            &[
                "amh/{split}-00000-of-00001.parquet",
                "eng/{split}-00000-of-00001.parquet",
                "fra/{split}-00000-of-00001.parquet",
                "hau/{split}-00000-of-00001.parquet",
                "ibo/{split}-00000-of-00001.parquet",
                "lin/{split}-00000-of-00001.parquet",
                "lug/{split}-00000-of-00001.parquet",
                "orm/{split}-00000-of-00001.parquet",
                "pcm/{split}-00000-of-00001.parquet",
                "run/{split}-00000-of-00001.parquet",
                "sna/{split}-00000-of-00001.parquet",
                "som/{split}-00000-of-00001.parquet",
                "swa/{split}-00000-of-00001.parquet",
                "tir/{split}-00000-of-00001.parquet",
                "xho/{split}-00000-of-00001.parquet",
                "yor/{split}-00000-of-00001.parquet",
            ],
            &[
                ("text", "sentences[]"),
                ("label", "labels[]"),
                ("subset", "{folder}")
            ]
        ),
        "MasakhaNEWS headlines by topic, 16 languages of Africa (clustering S2S)"
    ),
    entry!(
        "twentynewsgroups",
        Clustering,
        ["test"],
        "clustering/twentynewsgroups/{split}.jsonl",
        hub_at(
            "6125ec4e24fa026cec8a478383ee943acfbd5449",
            "mteb/twentynewsgroups-clustering",
            None,
            MTEB_CLUSTERING_FILES,
            MTEB_CLUSTERING
        ),
        "20 Newsgroups subjects"
    ),
    entry!(
        "reddit",
        Clustering,
        ["test"],
        "clustering/reddit/{split}.jsonl",
        hub_at(
            "24640382cdbf8abc73003fb0fa6d111a705499eb",
            "mteb/reddit-clustering",
            None,
            MTEB_CLUSTERING_FILES,
            MTEB_CLUSTERING
        ),
        "Reddit titles by subreddit (MTEB source pool)"
    ),
    entry!(
        "stackexchange",
        Clustering,
        ["test"],
        "clustering/stackexchange/{split}.jsonl",
        hub_at(
            "6cbc1f7b2bc0622f2e39d2c77fa502909748c259",
            "mteb/stackexchange-clustering",
            None,
            MTEB_CLUSTERING_FILES,
            MTEB_CLUSTERING
        ),
        "StackExchange titles by site (MTEB source pool)"
    ),
    entry!(
        "reddit-p2p",
        Clustering,
        ["test"],
        "clustering/reddit_p2p/{split}.jsonl",
        hub_at(
            "385e3cb46b4cfa89021f56c4380204149d0efe33",
            "mteb/reddit-clustering-p2p",
            None,
            MTEB_CLUSTERING_FILES,
            MTEB_CLUSTERING
        ),
        "Reddit posts by subreddit"
    ),
    entry!(
        "stackexchange-p2p",
        Clustering,
        ["test"],
        "clustering/stackexchange_p2p/{split}.jsonl",
        hub_at(
            "815ca46b2622cec33ccafc3735d572c266efdb44",
            "mteb/stackexchange-clustering-p2p",
            None,
            MTEB_CLUSTERING_FILES,
            MTEB_CLUSTERING
        ),
        "StackExchange posts by site"
    ),
    entry!(
        "arxiv-s2s",
        Clustering,
        ["test"],
        "clustering/arxiv_s2s/{split}.jsonl",
        hub_at(
            "f910caf1a6075f7329cdf8c1a6135696f37dbd53",
            "mteb/arxiv-clustering-s2s",
            None,
            MTEB_CLUSTERING_FILES,
            MTEB_CLUSTERING
        ),
        "arXiv titles by category"
    ),
    entry!(
        "arxiv-p2p",
        Clustering,
        ["test"],
        "clustering/arxiv_p2p/{split}.jsonl",
        hub_at(
            "a122ad7f3f0291bf49cc6f4d32aa80929df69d5d",
            "mteb/arxiv-clustering-p2p",
            None,
            MTEB_CLUSTERING_FILES,
            MTEB_CLUSTERING
        ),
        "arXiv titles+abstracts by category"
    ),
    entry!(
        "biorxiv-s2s",
        Clustering,
        ["test"],
        "clustering/biorxiv_s2s/{split}.jsonl",
        hub_at(
            "258694dd0231531bc1fd9de6ceb52a0853c6d908",
            "mteb/biorxiv-clustering-s2s",
            None,
            MTEB_CLUSTERING_FILES,
            MTEB_CLUSTERING
        ),
        "bioRxiv titles by category"
    ),
    entry!(
        "biorxiv-p2p",
        Clustering,
        ["test"],
        "clustering/biorxiv_p2p/{split}.jsonl",
        hub_at(
            "65b79d1d13f80053f67aca9498d9402c2d9f1f40",
            "mteb/biorxiv-clustering-p2p",
            None,
            MTEB_CLUSTERING_FILES,
            MTEB_CLUSTERING
        ),
        "bioRxiv titles+abstracts by category"
    ),
    entry!(
        "medrxiv-s2s",
        Clustering,
        ["test"],
        "clustering/medrxiv_s2s/{split}.jsonl",
        hub_at(
            "35191c8c0dca72d8ff3efcd72aa802307d469663",
            "mteb/medrxiv-clustering-s2s",
            None,
            MTEB_CLUSTERING_FILES,
            MTEB_CLUSTERING
        ),
        "medRxiv titles by category"
    ),
    entry!(
        "medrxiv-p2p",
        Clustering,
        ["test"],
        "clustering/medrxiv_p2p/{split}.jsonl",
        hub_at(
            "e7a26af6f3ae46b30dde8737f02c07b1505bcc73",
            "mteb/medrxiv-clustering-p2p",
            None,
            MTEB_CLUSTERING_FILES,
            MTEB_CLUSTERING
        ),
        "medRxiv titles+abstracts by category"
    ),
    // retrieval (BEIR)
    entry!(
        "scifact",
        Beir,
        ["test", "train"],
        "retrieval/scifact",
        hub_at(
            "0228b52cf27578f30900b9e5271d331663a030d7",
            "mteb/scifact",
            None,
            MTEB_BEIR_FILES,
            BEIR_COLUMNS
        ),
        "BEIR SciFact"
    ),
    entry!(
        "nfcorpus",
        Beir,
        ["test", "dev"],
        "retrieval/nfcorpus",
        hub_at(
            "ec0fa4fe99da2ff19ca1214b7966684033a58814",
            "mteb/nfcorpus",
            None,
            MTEB_BEIR_FILES,
            BEIR_COLUMNS
        ),
        "BEIR NFCorpus (test+dev documents)"
    ),
    entry!(
        "arguana",
        Beir,
        ["test"],
        "retrieval/arguana",
        hub_at(
            "c22ab2a51041ffd869aaddef7af8d8215647e41a",
            "mteb/arguana",
            None,
            MTEB_BEIR_FILES,
            BEIR_COLUMNS
        ),
        "BEIR ArguAna (SAGE sensitivity documents; PTEB retrieval, at MTEB's pin)"
    ),
    in_language(
        entry!(
            "twitterhjerne",
            Beir,
            ["train"],
            "retrieval/twitterhjerne",
            Some(HubSource {
                repo: "sorenmulli/da-hashtag-twitterhjerne",
                // MTEB's TwitterHjerneRetrieval pin (v1, before MTEB's own converted copy)
                revision: "099ee143c7fdfa6bd7965be8c801cb161c313b29",
                config: None,
                files: &["data/train-00000-of-00001-52a08236c9c7dcd4.parquet"],
                columns: &[],
                transform: Some(HubTransform::QuestionAnswers {
                    question: "Question",
                    answer_prefix: "Answer",
                }),
            }),
            "#Twitterhjerne: Danish questions on Twitter and their answers (retrieval)"
        ),
        "dan-Latn",
    ),
    entry!(
        "fiqa",
        Beir,
        ["test", "dev", "train"],
        "retrieval/fiqa",
        hub_at(
            "27a168819829fe9bcd655c2df245fb19452e8e06",
            "mteb/fiqa",
            None,
            MTEB_BEIR_FILES,
            BEIR_COLUMNS
        ),
        "BEIR FiQA-2018"
    ),
    entry!(
        "trec-covid",
        Beir,
        ["test"],
        "retrieval/trec-covid",
        hub_at(
            "bb9466bac8153a0349341eb1b22e06409e78ef4e",
            "mteb/trec-covid",
            None,
            MTEB_BEIR_FILES,
            BEIR_COLUMNS
        ),
        "BEIR TREC-COVID"
    ),
    entry!(
        "scidocs",
        Beir,
        ["test"],
        "retrieval/scidocs",
        hub_at(
            "f8c2fcf00f625baaa80f62ec5bd9e1fff3b8ae88",
            "mteb/scidocs",
            None,
            MTEB_BEIR_FILES,
            BEIR_COLUMNS
        ),
        "BEIR SCIDOCS"
    ),
    entry!(
        "quora",
        Beir,
        ["test", "dev"],
        "retrieval/quora",
        hub_at(
            "e4e08e0b7dbe3c8700f0daef558ff32256715259",
            "mteb/quora",
            None,
            MTEB_BEIR_FILES,
            BEIR_COLUMNS
        ),
        "BEIR Quora"
    ),
    entry!(
        "nq",
        Beir,
        ["test"],
        "retrieval/nq",
        hub_at(
            "b774495ed302d8c44a3a7ea25c90dbce03968f31",
            "mteb/nq",
            None,
            MTEB_BEIR_FILES,
            BEIR_COLUMNS
        ),
        "BEIR Natural Questions"
    ),
    entry!(
        "hotpotqa",
        Beir,
        ["test", "dev", "train"],
        "retrieval/hotpotqa",
        hub_at(
            "ab518f4d6fcca38d87c25209f94beba119d02014",
            "mteb/hotpotqa",
            None,
            MTEB_BEIR_FILES,
            BEIR_COLUMNS
        ),
        "BEIR HotpotQA"
    ),
    entry!(
        "dbpedia-entity",
        Beir,
        ["test", "dev"],
        "retrieval/dbpedia-entity",
        hub_at(
            "c0f706b76e590d620bd6618b3ca8efdd34e2d659",
            "mteb/dbpedia",
            None,
            MTEB_BEIR_FILES,
            BEIR_COLUMNS
        ),
        "BEIR DBpedia-Entity"
    ),
    entry!(
        "fever",
        Beir,
        ["test", "dev", "train"],
        "retrieval/fever",
        hub_at(
            "bea83ef9e8fb933d90a2f1d5515737465d613e12",
            "mteb/fever",
            None,
            MTEB_BEIR_FILES,
            BEIR_COLUMNS
        ),
        "BEIR FEVER"
    ),
    entry!(
        "climate-fever",
        Beir,
        ["test"],
        "retrieval/climate-fever",
        hub_at(
            "47f2ac6acb640fc46020b02a5b59fdda04d39380",
            "mteb/climate-fever",
            None,
            MTEB_BEIR_FILES,
            BEIR_COLUMNS
        ),
        "BEIR Climate-FEVER"
    ),
    // CQADupStack, BEIR's twelve StackExchange forums: MTEB scores each forum as a task of its
    // own (CQADupstack<Forum>Retrieval) and reports their mean as CQADupstackRetrieval; one
    // registry set per forum, at the revision MTEB's v1 task pins (Android's too: MTEB v2 moved
    // it to a Parquet copy, mteb/CQADupstackAndroidRetrieval, that its published v1 results
    // were not computed on)
    entry!(
        "cqadupstack-android",
        Beir,
        ["test"],
        "retrieval/cqadupstack/android",
        hub_at(
            "f46a197baaae43b4f621051089b82a364682dfeb",
            "mteb/cqadupstack-android",
            None,
            MTEB_BEIR_FILES,
            BEIR_COLUMNS
        ),
        "BEIR CQADupStack, Android forum (one of MTEB's twelve CQADupStack tasks)"
    ),
    entry!(
        "cqadupstack-english",
        Beir,
        ["test"],
        "retrieval/cqadupstack/english",
        hub_at(
            "ad9991cb51e31e31e430383c75ffb2885547b5f0",
            "mteb/cqadupstack-english",
            None,
            MTEB_BEIR_FILES,
            BEIR_COLUMNS
        ),
        "BEIR CQADupStack, English forum (one of MTEB's twelve CQADupStack tasks)"
    ),
    entry!(
        "cqadupstack-gaming",
        Beir,
        ["test"],
        "retrieval/cqadupstack/gaming",
        hub_at(
            "4885aa143210c98657558c04aaf3dc47cfb54340",
            "mteb/cqadupstack-gaming",
            None,
            MTEB_BEIR_FILES,
            BEIR_COLUMNS
        ),
        "BEIR CQADupStack, Gaming forum (one of MTEB's twelve CQADupStack tasks)"
    ),
    entry!(
        "cqadupstack-gis",
        Beir,
        ["test"],
        "retrieval/cqadupstack/gis",
        hub_at(
            "5003b3064772da1887988e05400cf3806fe491f2",
            "mteb/cqadupstack-gis",
            None,
            MTEB_BEIR_FILES,
            BEIR_COLUMNS
        ),
        "BEIR CQADupStack, GIS forum (one of MTEB's twelve CQADupStack tasks)"
    ),
    entry!(
        "cqadupstack-mathematica",
        Beir,
        ["test"],
        "retrieval/cqadupstack/mathematica",
        hub_at(
            "90fceea13679c63fe563ded68f3b6f06e50061de",
            "mteb/cqadupstack-mathematica",
            None,
            MTEB_BEIR_FILES,
            BEIR_COLUMNS
        ),
        "BEIR CQADupStack, Mathematica forum (one of MTEB's twelve CQADupStack tasks)"
    ),
    entry!(
        "cqadupstack-physics",
        Beir,
        ["test"],
        "retrieval/cqadupstack/physics",
        hub_at(
            "79531abbd1fb92d06c6d6315a0cbbbf5bb247ea4",
            "mteb/cqadupstack-physics",
            None,
            MTEB_BEIR_FILES,
            BEIR_COLUMNS
        ),
        "BEIR CQADupStack, Physics forum (one of MTEB's twelve CQADupStack tasks)"
    ),
    entry!(
        "cqadupstack-programmers",
        Beir,
        ["test"],
        "retrieval/cqadupstack/programmers",
        hub_at(
            "6184bc1440d2dbc7612be22b50686b8826d22b32",
            "mteb/cqadupstack-programmers",
            None,
            MTEB_BEIR_FILES,
            BEIR_COLUMNS
        ),
        "BEIR CQADupStack, Programmers forum (one of MTEB's twelve CQADupStack tasks)"
    ),
    entry!(
        "cqadupstack-stats",
        Beir,
        ["test"],
        "retrieval/cqadupstack/stats",
        hub_at(
            "65ac3a16b8e91f9cee4c9828cc7c335575432a2a",
            "mteb/cqadupstack-stats",
            None,
            MTEB_BEIR_FILES,
            BEIR_COLUMNS
        ),
        "BEIR CQADupStack, Stats forum (one of MTEB's twelve CQADupStack tasks)"
    ),
    entry!(
        "cqadupstack-tex",
        Beir,
        ["test"],
        "retrieval/cqadupstack/tex",
        hub_at(
            "46989137a86843e03a6195de44b09deda022eec7",
            "mteb/cqadupstack-tex",
            None,
            MTEB_BEIR_FILES,
            BEIR_COLUMNS
        ),
        "BEIR CQADupStack, TeX forum (one of MTEB's twelve CQADupStack tasks)"
    ),
    entry!(
        "cqadupstack-unix",
        Beir,
        ["test"],
        "retrieval/cqadupstack/unix",
        hub_at(
            "6c6430d3a6d36f8d2a829195bc5dc94d7e063e53",
            "mteb/cqadupstack-unix",
            None,
            MTEB_BEIR_FILES,
            BEIR_COLUMNS
        ),
        "BEIR CQADupStack, Unix forum (one of MTEB's twelve CQADupStack tasks)"
    ),
    entry!(
        "cqadupstack-webmasters",
        Beir,
        ["test"],
        "retrieval/cqadupstack/webmasters",
        hub_at(
            "160c094312a0e1facb97e55eeddb698c0abe3571",
            "mteb/cqadupstack-webmasters",
            None,
            MTEB_BEIR_FILES,
            BEIR_COLUMNS
        ),
        "BEIR CQADupStack, Webmasters forum (one of MTEB's twelve CQADupStack tasks)"
    ),
    entry!(
        "cqadupstack-wordpress",
        Beir,
        ["test"],
        "retrieval/cqadupstack/wordpress",
        hub_at(
            "4ffe81d471b1924886b33c7567bfb200e9eec5c4",
            "mteb/cqadupstack-wordpress",
            None,
            MTEB_BEIR_FILES,
            BEIR_COLUMNS
        ),
        "BEIR CQADupStack, WordPress forum (one of MTEB's twelve CQADupStack tasks)"
    ),
    entry!(
        "webis-touche2020",
        Beir,
        ["test"],
        "retrieval/webis-touche2020",
        hub_at(
            "a34f9a33db75fa0cbb21bb5cfc3dae8dc8bec93f",
            "mteb/touche2020",
            None,
            MTEB_BEIR_FILES,
            BEIR_COLUMNS
        ),
        "BEIR Touché-2020"
    ),
    entry!(
        "msmarco",
        Beir,
        ["dev", "train"],
        "retrieval/msmarco",
        hub_at(
            "c5a29a104738b98a9e76336939199e264163d4a0",
            "mteb/msmarco",
            None,
            MTEB_BEIR_FILES,
            BEIR_COLUMNS
        ),
        "BEIR MS MARCO"
    ),
    // classification and pair classification
    entry!(
        "amazon-counterfactual",
        Classification,
        ["train", "validation", "test"],
        "classification/amazon_counterfactual/{split}.jsonl",
        hub_at(
            "1f7e6a9d6fa6e64c53d146e428565640410c0df1",
            "mteb/amazon_counterfactual",
            None,
            &[
                "en/{split}-00000-of-00001.parquet",
                "en-ext/{split}-00000-of-00001.parquet",
                "de/{split}-00000-of-00001.parquet",
                "ja/{split}-00000-of-00001.parquet",
            ],
            &[("text", "text"), ("label", "label"), ("subset", "{folder}")]
        ),
        "Amazon reviews' counterfactual statements (en, en-ext, de, ja)"
    ),
    entry!(
        "banking77",
        Classification,
        ["train", "test"],
        "classification/banking77/{split}.jsonl",
        hub_at(
            "0fd18e25b25c072e09e0d92ab615fda904d66300",
            "mteb/banking77",
            None,
            &["{split}.jsonl.gz"],
            &[("text", "text"), ("label", "label_text")]
        ),
        "Banking77 intents"
    ),
    entry!(
        "askubuntudupquestions",
        Reranking,
        ["test"],
        "reranking/askubuntudupquestions/{split}.jsonl",
        Some(HubSource {
            repo: "mteb/askubuntudupquestions-reranking",
            // the revision MTEB pins for AskUbuntuDupQuestions
            revision: "2000358ca161889fa9c082cb41daa8dcfb161a54",
            config: None,
            files: &["{split}.jsonl.gz"],
            columns: &[
                ("query", "query"),
                ("positive", "positive"),
                ("negative", "negative")
            ],
            transform: None,
        }),
        "AskUbuntu duplicate questions (MTEB reranking)"
    ),
    in_language(
        entry!(
            "rubq-reranking",
            Reranking,
            ["test"],
            "reranking/rubq/{split}.jsonl",
            Some(HubSource {
                repo: "ai-forever/rubq-reranking",
                // MTEB's RuBQReranking pin (v1, before MTEB's own converted copy)
                revision: "2e96b8f098fa4b0950fc58eacadeb31c0d0c7fa2",
                config: None,
                files: &["test.jsonl.zip"],
                columns: &[
                    ("query", "query"),
                    ("positive", "positive"),
                    ("negative", "negative")
                ],
                transform: None,
            }),
            "RuBQ 2.0 questions and Russian Wikipedia paragraphs to rerank (MTEB's RuBQReranking)"
        ),
        "rus-Cyrl",
    ),
    entry!(
        "mr",
        Classification,
        ["all"],
        "classification/mr/{split}.jsonl",
        None,
        "SentEval MR movie reviews"
    ),
    entry!(
        "cr",
        Classification,
        ["all"],
        "classification/cr/{split}.jsonl",
        None,
        "SentEval CR product reviews"
    ),
    entry!(
        "subj",
        Classification,
        ["all"],
        "classification/subj/{split}.jsonl",
        None,
        "SentEval SUBJ subjectivity"
    ),
    entry!(
        "mpqa",
        Classification,
        ["all"],
        "classification/mpqa/{split}.jsonl",
        None,
        "SentEval MPQA opinion polarity"
    ),
    entry!(
        "sst2",
        Classification,
        ["train", "dev", "test"],
        "classification/sst2/{split}.jsonl",
        None,
        "SST-2 (SentEval copy locally)"
    ),
    entry!(
        "sst5",
        Classification,
        ["train", "dev", "test"],
        "classification/sst5/{split}.jsonl",
        None,
        "SST-5 fine-grained sentiment (SentEval)"
    ),
    entry!(
        "trec",
        Classification,
        ["train", "test"],
        "classification/trec/{split}.jsonl",
        None,
        "TREC question types"
    ),
    entry!(
        "scicite",
        Classification,
        ["train", "dev", "test"],
        "classification/scicite/{split}.jsonl",
        None,
        "SciCite citation intents (EvalRank's SentEval copy)"
    ),
    entry!(
        "sick-e",
        PairClasses,
        ["train", "dev", "test"],
        "pair_classification/sick_e/{split}.jsonl",
        None,
        "SICK entailment: entailment, neutral or contradiction (SentEval's SICK-E)"
    ),
    entry!(
        "twitter-semeval2015",
        PairClassification,
        ["dev", "test"],
        "pair_classification/twitter_semeval2015/{split}.jsonl",
        hub_at(
            "70970daeab8776df92f5ea462b6173c0b46fd2d1",
            "mteb/twittersemeval2015-pairclassification",
            None,
            &["test.jsonl.gz"],
            PAIR_COLUMNS
        ),
        "Twitter paraphrase (SemEval 2015)"
    ),
    entry!(
        "rte3",
        PairClassification,
        ["test"],
        "pair_classification/rte3/{split}.jsonl",
        hub_at(
            "54ea0052267265f4906dd77b0a3d041d301a5ee6",
            "mteb/RTE3",
            None,
            &[
                "de/test-00000-of-00001.parquet",
                "en/test-00000-of-00001.parquet",
                "fr/test-00000-of-00001.parquet",
                "it/test-00000-of-00001.parquet",
            ],
            SUBSET_PAIR_COLUMNS
        ),
        "RTE-3 entailment in German, English, French and Italian (1 entailment, 0 contradiction)"
    ),
    // word similarity (EvalRank)
    entry!(
        "en-mc-30",
        WordSimilarity,
        ["all"],
        "word_similarity/EN-MC-30.tsv",
        None,
        "Miller-Charles 30"
    ),
    entry!(
        "en-men-tr-3k",
        WordSimilarity,
        ["all"],
        "word_similarity/EN-MEN-TR-3k.tsv",
        None,
        "MEN 3k (0-50)"
    ),
    entry!(
        "en-mturk-287",
        WordSimilarity,
        ["all"],
        "word_similarity/EN-MTurk-287.tsv",
        None,
        "MTurk-287"
    ),
    entry!(
        "en-mturk-771",
        WordSimilarity,
        ["all"],
        "word_similarity/EN-MTurk-771.tsv",
        None,
        "MTurk-771"
    ),
    entry!(
        "en-rg-65",
        WordSimilarity,
        ["all"],
        "word_similarity/EN-RG-65.tsv",
        None,
        "Rubenstein-Goodenough 65"
    ),
    entry!(
        "en-rw-stanford",
        WordSimilarity,
        ["all"],
        "word_similarity/EN-RW-STANFORD.tsv",
        None,
        "Stanford Rare Words"
    ),
    entry!(
        "en-simlex-999",
        WordSimilarity,
        ["all"],
        "word_similarity/EN-SIMLEX-999.tsv",
        None,
        "SimLex-999"
    ),
    entry!(
        "en-simverb-3500",
        WordSimilarity,
        ["all"],
        "word_similarity/EN-SimVerb-3500.tsv",
        None,
        "SimVerb-3500"
    ),
    entry!(
        "en-verb-143",
        WordSimilarity,
        ["all"],
        "word_similarity/EN-VERB-143.tsv",
        None,
        "Verb-143 (144 pairs as released)"
    ),
    entry!(
        "en-ws-353-all",
        WordSimilarity,
        ["all"],
        "word_similarity/EN-WS-353-ALL.tsv",
        None,
        "WordSim-353 all"
    ),
    entry!(
        "en-ws-353-rel",
        WordSimilarity,
        ["all"],
        "word_similarity/EN-WS-353-REL.tsv",
        None,
        "WordSim-353 relatedness"
    ),
    entry!(
        "en-ws-353-sim",
        WordSimilarity,
        ["all"],
        "word_similarity/EN-WS-353-SIM.tsv",
        None,
        "WordSim-353 similarity"
    ),
    entry!(
        "en-yp-130",
        WordSimilarity,
        ["all"],
        "word_similarity/EN-YP-130.tsv",
        None,
        "Yang-Powers verbs 130"
    ),
    // vocabularies and EvalRank's own lists
    entry!(
        "wiki-20k",
        Vocabulary,
        ["all"],
        "vocab/wiki_20k.txt",
        None,
        "20k Wikipedia vocabulary (EvalRank background)"
    ),
    entry!(
        "google-10k",
        Vocabulary,
        ["all"],
        "vocab/google_10k.txt",
        None,
        "Google 10k English words"
    ),
    entry!(
        "evalrank-word-pairs",
        TextPairs,
        ["all"],
        "evalrank/word_evalrank/pos_pair_5514.txt",
        None,
        "EvalRank word positive pairs (5,514)"
    ),
    entry!(
        "evalrank-word-basic-vocab",
        Vocabulary,
        ["all"],
        "evalrank/word_evalrank/basic_vocab.txt",
        None,
        "EvalRank basic word vocabulary"
    ),
    entry!(
        "evalrank-word-wiki-vocab",
        Vocabulary,
        ["all"],
        "evalrank/word_evalrank/wiki_vocab.txt",
        None,
        "EvalRank wiki vocabulary"
    ),
    entry!(
        "evalrank-sent-pairs",
        TextPairs,
        ["all"],
        "evalrank/sent_evalrank/pos_pair.txt",
        None,
        "EvalRank sentence positive pairs"
    ),
    entry!(
        "evalrank-sent-background",
        Vocabulary,
        ["all"],
        "evalrank/sent_evalrank/background_sent.txt",
        None,
        "EvalRank sentence background"
    ),
    entry!(
        "wordnet",
        WordNet,
        ["all"],
        "wordnet/dict",
        None,
        "WordNet 3.0 database"
    ),
];

/// The entry named `name`.
pub fn entry(name: &str) -> Option<&'static DatasetEntry> {
    REGISTRY.iter().find(|e| e.name == name)
}

impl DatasetEntry {
    /// The mirror splits whose rows MTEB's `split` of this dataset is (itself, for most).
    pub fn mteb_parts<'a>(&self, split: &'a str) -> Vec<&'a str>
    where
        'static: 'a,
    {
        self.mteb_rows
            .iter()
            .find(|(s, _)| *s == split)
            .map_or_else(|| vec![split], |(_, parts)| parts.to_vec())
    }

    /// The local path of `split` relative to the data root.
    pub fn local_path(&self, split: &str) -> String {
        self.local.replace("{split}", split)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_entries_consistent() {
        let mut names: Vec<&str> = REGISTRY.iter().map(|e| e.name).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len(), "duplicate registry names");
        for e in REGISTRY {
            assert!(!e.splits.is_empty(), "{}", e.name);
            let templated = e.local.contains("{split}");
            assert!(
                templated || e.splits.len() == 1 || e.kind == DatasetKind::Beir,
                "{}: several splits need {{split}} in the path",
                e.name
            );
            assert_eq!(
                e.dimensions.is_empty(),
                !matches!(
                    e.kind,
                    DatasetKind::SummaryRatings | DatasetKind::SummaryAxisRatings
                ),
                "{}",
                e.name
            );
        }
    }

    #[test]
    fn the_papers_hub_only_sets_are_registered() {
        for name in [
            "summarize-from-feedback-comparisons",
            "summarize-from-feedback-axis",
            "arxiv-s2s",
            "biorxiv-p2p",
            "medrxiv-s2s",
            "arguana",
            "billsum-test",
            "cnn-dailymail-test",
            "qqp-full",
            "amazon-polarity-full",
            "trec-covid",
            "rte3",
            "rubq-reranking",
            "cqadupstack-android",
            "cqadupstack-wordpress",
        ] {
            assert!(entry(name).and_then(|e| e.hub).is_some(), "{name}");
        }
    }

    /// A BEIR set's hub copy carries its judgements (MTEB's `qrels/<split>.jsonl`), unless a
    /// transform makes them (TwitterHjerne's answers): fetch reads them nowhere else.
    #[test]
    fn beir_hub_copies_carry_their_qrels() {
        for e in REGISTRY.iter().filter(|e| e.kind == DatasetKind::Beir) {
            if let Some(hub) = e.hub.filter(|h| h.transform.is_none()) {
                assert!(
                    hub.files.iter().any(|f| f.starts_with("qrels/")),
                    "{}",
                    e.name
                );
            }
        }
    }

    /// Every hub source `sage data list` shows is at a commit, MTEB's where MTEB has the task,
    /// so no dataset moves under a result (the ones with a pinned public source too: their hub
    /// copy is named as the original).
    #[test]
    fn hub_sources_are_at_a_fixed_revision() {
        for e in REGISTRY {
            let Some(hub) = e.hub else { continue };
            assert!(
                hub.revision.len() == 40 && hub.revision.chars().all(|c| c.is_ascii_hexdigit()),
                "{} reads {} at {:?}, not a commit",
                e.name,
                hub.repo,
                hub.revision
            );
        }
    }
}
