//! Reading the local mirror into typed rows.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use sage_core::RunSeed;
use serde::Serialize;

use crate::error::{parse_error, DataError, Result};
use crate::registry::{entry, DatasetEntry, DatasetKind};
use crate::rows::{
    read_jsonl, BeirDocument, BeirQuery, Document, DocumentSummary, Line, Loaded, Row, TextPair,
    WordPair,
};
use crate::sample::RowSelection;

/// What to do with rows whose text is empty (or only whitespace). They are always counted and
/// their lines recorded in [`Loaded::empty_text_lines`]; the policy decides whether they stay.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EmptyTextPolicy {
    /// Keep them (and report them).
    #[default]
    Keep,
    /// Drop them (and report them).
    Drop,
    /// Refuse the file, naming the lines.
    Fail,
}

/// What [`DataRoot::inspect`] found in one split.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum SplitReport {
    /// A row dataset: which rows a run with these settings would use.
    Rows {
        /// Counts, seed and checksum.
        #[serde(flatten)]
        selection: RowSelection,
        /// The file read.
        path: PathBuf,
        /// Lines with an empty text (the first 20).
        empty_text_lines: Vec<usize>,
    },
    /// A BEIR dataset.
    Beir {
        /// Registry name.
        dataset: String,
        /// Qrels split.
        split: String,
        /// The folder read.
        path: PathBuf,
        /// Corpus documents.
        corpus: usize,
        /// Queries in queries.jsonl.
        queries_in_file: usize,
        /// Queries judged in this split.
        queries: usize,
        /// Judgement lines.
        judgements: usize,
        /// Checksum of the corpus.
        corpus_checksum: String,
    },
    /// The WordNet folder (read by sage-perturb's WordNet reader).
    WordNet {
        /// Registry name.
        dataset: String,
        /// The folder.
        path: PathBuf,
    },
}

/// A BEIR dataset: corpus, queries and the judgements of one split.
#[derive(Clone, Debug)]
pub struct Beir {
    /// Registry name.
    pub dataset: String,
    /// The qrels split.
    pub split: String,
    /// The folder read.
    pub dir: PathBuf,
    /// corpus.jsonl.
    pub corpus: Vec<BeirDocument>,
    /// queries.jsonl, only those with judgements in this split.
    pub queries: Vec<BeirQuery>,
    /// query id → document id → relevance.
    pub qrels: BTreeMap<String, BTreeMap<String, i32>>,
}

/// The root of the local mirror.
#[derive(Clone, Debug)]
pub struct DataRoot {
    root: PathBuf,
    policy: EmptyTextPolicy,
}

impl DataRoot {
    /// The mirror at `root`.
    pub fn new(root: impl Into<PathBuf>) -> DataRoot {
        DataRoot {
            root: root.into(),
            policy: EmptyTextPolicy::default(),
        }
    }

    /// The mirror at SAGE_DATA_DIR.
    pub fn from_env() -> Result<DataRoot> {
        std::env::var_os("SAGE_DATA_DIR")
            .filter(|v| !v.is_empty())
            .map(DataRoot::new)
            .ok_or(DataError::NoRoot)
    }

    /// Sets the empty-text policy.
    pub fn with_empty_text_policy(mut self, policy: EmptyTextPolicy) -> DataRoot {
        self.policy = policy;
        self
    }

    /// The root folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether `split` of the entry is in the local mirror (for BEIR: its qrels file).
    pub fn is_local(&self, entry: &DatasetEntry, split: &str) -> bool {
        let path = self.root.join(entry.local_path(split));
        match entry.kind {
            DatasetKind::Beir => path.join("qrels").join(format!("{split}.tsv")).is_file(),
            _ => path.exists(),
        }
    }

    /// The registry entry of `name` and the local path of `split`, checked.
    pub fn locate(&self, name: &str, split: &str) -> Result<(&'static DatasetEntry, PathBuf)> {
        let e = entry(name).ok_or_else(|| DataError::UnknownDataset {
            name: name.to_owned(),
        })?;
        if !e.splits.contains(&split) {
            return Err(DataError::UnknownSplit {
                dataset: name.to_owned(),
                split: split.to_owned(),
                available: e.splits.iter().map(|s| s.to_string()).collect(),
            });
        }
        let path = self.root.join(e.local_path(split));
        if !self.is_local(e, split) {
            let hint = match &e.hub {
                Some(h) => format!(
                    "it is on the Hugging Face hub as {} (sage data fetch {name})",
                    h.repo
                ),
                None => {
                    "it has no hub source; put the files there in the documented layout".to_owned()
                }
            };
            return Err(DataError::NotLocal {
                dataset: name.to_owned(),
                path,
                hint,
            });
        }
        Ok((e, path))
    }

    /// Splits `wanted` (name, split) into those in the local mirror and, for the others, why not
    /// (the [`locate`](Self::locate) error, which says how to get them).
    pub fn partition_local<'a>(
        &self,
        wanted: &[(&'a str, &'a str)],
    ) -> (Vec<(&'a str, &'a str)>, Vec<DataError>) {
        let mut present = Vec::new();
        let mut missing = Vec::new();
        for &(name, split) in wanted {
            match self.locate(name, split) {
                Ok(_) => present.push((name, split)),
                Err(e) => missing.push(e),
            }
        }
        (present, missing)
    }

    /// Rows of a JSON-lines or TSV dataset split, as `T`. The dataset's kind must load as `T`.
    pub fn load<T: Row + KindOf>(&self, name: &str, split: &str) -> Result<Loaded<T>> {
        let (e, path) = self.locate(name, split)?;
        if !T::KINDS.contains(&e.kind) {
            return Err(DataError::WrongKind {
                dataset: name.to_owned(),
                actual: e.kind.name(),
                expected: T::KINDS[0].name(),
            });
        }
        let (rows, empty) = with_empty_lines(T::read(&path, e.dimensions)?);
        let rows = self.apply_policy(&path, rows, &empty)?;
        Ok(Loaded {
            dataset: name.to_owned(),
            split: split.to_owned(),
            path,
            rows,
            empty_text_lines: empty,
        })
    }

    fn apply_policy<T>(
        &self,
        path: &Path,
        rows: Vec<(usize, T)>,
        empty: &[usize],
    ) -> Result<Vec<T>> {
        match self.policy {
            EmptyTextPolicy::Fail if !empty.is_empty() => Err(DataError::EmptyText {
                path: path.to_owned(),
                lines: empty.to_vec(),
            }),
            EmptyTextPolicy::Drop => Ok(rows
                .into_iter()
                .filter(|(line, _)| !empty.contains(line))
                .map(|(_, r)| r)
                .collect()),
            _ => Ok(rows.into_iter().map(|(_, r)| r).collect()),
        }
    }

    /// Loads `split` of `name` whatever its kind and reports what a run would use: rows, empty
    /// texts, the seeded selection and its checksum (BEIR: corpus, queries, judgements).
    pub fn inspect(
        &self,
        name: &str,
        split: &str,
        max_rows: Option<usize>,
        seed: RunSeed,
    ) -> Result<SplitReport> {
        let (e, path) = self.locate(name, split)?;
        fn rows<T: Row + KindOf + Clone>(
            root: &DataRoot,
            name: &str,
            split: &str,
            max_rows: Option<usize>,
            seed: RunSeed,
        ) -> Result<SplitReport> {
            let loaded = root.load::<T>(name, split)?;
            let (_, selection) = crate::sample::sample(&loaded, max_rows, seed);
            Ok(SplitReport::Rows {
                selection,
                path: loaded.path,
                empty_text_lines: loaded.empty_text_lines.into_iter().take(20).collect(),
            })
        }
        match e.kind {
            DatasetKind::StsPairs => rows::<crate::StsPair>(self, name, split, max_rows, seed),
            DatasetKind::ParaphrasePairs | DatasetKind::PairClassification => {
                rows::<crate::LabeledPair>(self, name, split, max_rows, seed)
            }
            DatasetKind::NegationPairs => {
                rows::<crate::NegationPair>(self, name, split, max_rows, seed)
            }
            DatasetKind::DocumentSummary => {
                rows::<crate::DocumentSummary>(self, name, split, max_rows, seed)
            }
            DatasetKind::Documents => rows::<crate::Document>(self, name, split, max_rows, seed),
            DatasetKind::SummaryRatings | DatasetKind::SummaryAxisRatings => {
                rows::<crate::SummaryRating>(self, name, split, max_rows, seed)
            }
            DatasetKind::SummaryDocuments => {
                rows::<crate::SummaryDocument>(self, name, split, max_rows, seed)
            }
            DatasetKind::SummaryComparisons => {
                rows::<crate::SummaryComparison>(self, name, split, max_rows, seed)
            }
            DatasetKind::Clustering | DatasetKind::Classification => {
                rows::<crate::LabeledText>(self, name, split, max_rows, seed)
            }
            DatasetKind::Reranking => {
                rows::<crate::RerankingQuery>(self, name, split, max_rows, seed)
            }
            DatasetKind::WordSimilarity => rows::<WordPair>(self, name, split, max_rows, seed),
            DatasetKind::TextPairs => rows::<TextPair>(self, name, split, max_rows, seed),
            DatasetKind::Vocabulary => rows::<Line>(self, name, split, max_rows, seed),
            DatasetKind::Beir => {
                let beir = self.beir(name, split)?;
                let queries_in_file =
                    read_jsonl::<BeirQuery>(&beir.dir.join("queries.jsonl"), &[])?.len();
                Ok(SplitReport::Beir {
                    dataset: name.to_owned(),
                    split: split.to_owned(),
                    corpus: beir.corpus.len(),
                    queries_in_file,
                    queries: beir.queries.len(),
                    judgements: beir.qrels.values().map(|d| d.len()).sum(),
                    corpus_checksum: crate::sample::checksum(&beir.corpus),
                    path: beir.dir,
                })
            }
            DatasetKind::WordNet => {
                if !path.join("index.noun").is_file() {
                    return Err(DataError::Io {
                        path,
                        message: "no WordNet database (index.noun missing)".into(),
                    });
                }
                Ok(SplitReport::WordNet {
                    dataset: name.to_owned(),
                    path,
                })
            }
        }
    }

    /// The long texts of any document-bearing dataset as [`Document`]s, for the tasks that only
    /// need texts (information sensitivity): document+summary sets give their documents (title
    /// kept, summary dropped), plain document sets their rows, and BEIR sets their corpus (title
    /// kept; `split` names the qrels split that must be local, the corpus is shared by all).
    pub fn documents(&self, name: &str, split: &str) -> Result<Loaded<Document>> {
        let (e, path) = self.locate(name, split)?;
        match e.kind {
            DatasetKind::Documents => self.load::<Document>(name, split),
            DatasetKind::DocumentSummary => {
                let loaded = self.load::<DocumentSummary>(name, split)?;
                Ok(Loaded {
                    dataset: loaded.dataset,
                    split: loaded.split,
                    path: loaded.path,
                    rows: loaded
                        .rows
                        .into_iter()
                        .map(|r| Document {
                            id: r.id,
                            text: r.text,
                            title: r.title,
                            label: None,
                        })
                        .collect(),
                    empty_text_lines: loaded.empty_text_lines,
                })
            }
            DatasetKind::Beir => {
                let corpus_path = path.join("corpus.jsonl");
                let (corpus, empty) =
                    with_empty_lines(read_jsonl::<BeirDocument>(&corpus_path, &[])?);
                let corpus = self.apply_policy(&corpus_path, corpus, &empty)?;
                Ok(Loaded {
                    dataset: name.to_owned(),
                    split: split.to_owned(),
                    path: corpus_path,
                    rows: corpus
                        .into_iter()
                        .map(|d| Document {
                            id: d.id,
                            text: d.text,
                            title: (!d.title.is_empty()).then_some(d.title),
                            label: None,
                        })
                        .collect(),
                    empty_text_lines: empty,
                })
            }
            other => Err(DataError::WrongKind {
                dataset: name.to_owned(),
                actual: other.name(),
                expected: "documents, document-summary or beir",
            }),
        }
    }

    /// A BEIR dataset with the judgements of `split`. Every judged query must be in
    /// queries.jsonl and every judged document in corpus.jsonl, or the qrels line is named.
    pub fn beir(&self, name: &str, split: &str) -> Result<Beir> {
        let (e, dir) = self.locate(name, split)?;
        if e.kind != DatasetKind::Beir {
            return Err(DataError::WrongKind {
                dataset: name.to_owned(),
                actual: e.kind.name(),
                expected: DatasetKind::Beir.name(),
            });
        }
        let corpus_path = dir.join("corpus.jsonl");
        let (corpus, empty_docs) = with_empty_lines(read_jsonl::<BeirDocument>(&corpus_path, &[])?);
        let corpus = self.apply_policy(&corpus_path, corpus, &empty_docs)?;
        let queries_path = dir.join("queries.jsonl");
        let (queries, empty_queries) =
            with_empty_lines(read_jsonl::<BeirQuery>(&queries_path, &[])?);
        let queries = self.apply_policy(&queries_path, queries, &empty_queries)?;
        let qrels_path = dir.join("qrels").join(format!("{split}.tsv"));
        let qrels = crate::trec::read_qrels(&qrels_path)?;
        let doc_ids: HashSet<&str> = corpus.iter().map(|d| d.id.as_str()).collect();
        let query_ids: HashSet<&str> = queries.iter().map(|q| q.id.as_str()).collect();
        for crate::trec::Judgement {
            line, query, doc, ..
        } in &qrels
        {
            if !query_ids.contains(query.as_str()) {
                return Err(parse_error(
                    &qrels_path,
                    *line,
                    format!("query id {query:?} is not in {}", queries_path.display()),
                ));
            }
            if !doc_ids.contains(doc.as_str()) {
                return Err(parse_error(
                    &qrels_path,
                    *line,
                    format!("corpus id {doc:?} is not in {}", corpus_path.display()),
                ));
            }
        }
        let mut judged: BTreeMap<String, BTreeMap<String, i32>> = BTreeMap::new();
        for j in qrels {
            judged
                .entry(j.query)
                .or_default()
                .insert(j.doc, j.relevance);
        }
        let queries = queries
            .into_iter()
            .filter(|q| judged.contains_key(&q.id))
            .collect();
        Ok(Beir {
            dataset: name.to_owned(),
            split: split.to_owned(),
            dir,
            corpus,
            queries,
            qrels: judged,
        })
    }
}

/// Which dataset kinds load as a row type.
pub trait KindOf {
    /// The kinds, the first being the one named in errors.
    const KINDS: &'static [DatasetKind];
}

macro_rules! kind_of {
    ($t:ty => $($k:ident),+) => {
        impl KindOf for $t {
            const KINDS: &'static [DatasetKind] = &[$(DatasetKind::$k),+];
        }
    };
}
kind_of!(crate::StsPair => StsPairs);
kind_of!(crate::LabeledPair => ParaphrasePairs, PairClassification);
kind_of!(crate::NegationPair => NegationPairs);
kind_of!(crate::DocumentSummary => DocumentSummary);
kind_of!(crate::Document => Documents);
kind_of!(crate::SummaryRating => SummaryRatings, SummaryAxisRatings);
kind_of!(crate::SummaryDocument => SummaryDocuments);
kind_of!(crate::SummaryComparison => SummaryComparisons);
kind_of!(crate::LabeledText => Clustering, Classification);
kind_of!(crate::RerankingQuery => Reranking);
kind_of!(WordPair => WordSimilarity);
kind_of!(TextPair => TextPairs);
kind_of!(Line => Vocabulary);

/// Splits off the lines of rows with an empty (or whitespace-only) text.
fn with_empty_lines<T: Row>(rows: Vec<(usize, T)>) -> (Vec<(usize, T)>, Vec<usize>) {
    let empty = rows
        .iter()
        .filter(|(_, r)| r.texts().iter().any(|t| t.trim().is_empty()))
        .map(|(line, _)| *line)
        .collect();
    (rows, empty)
}
