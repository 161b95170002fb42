//! Typed rows, one struct per dataset kind, read from JSON objects with errors that name the
//! file, the line and the key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{parse_error, DataError, Result};
use crate::lines;
use crate::records::{for_each_line, Cells};

/// Where a row is being read from, for error messages.
pub struct At<'a> {
    pub path: &'a Path,
    pub line: usize,
    pub object: &'a Map<String, Value>,
    /// Whether cells are typed (JSON, Parquet) or all text (CSV, TSV: numbers and labels are
    /// parsed from the text, and an empty cell of an optional column is absent).
    pub cells: Cells,
}

impl At<'_> {
    /// An error at this row.
    fn error(&self, message: String) -> DataError {
        parse_error(self.path, self.line, message)
    }

    /// The row's language subset and its languages, one per side of a row of `sides` texts
    /// compared with each other (2 for a pair, 1 otherwise): the `languages` list when the row
    /// has one, else the subset's name when it is made of language codes (`en-ar`, `de`;
    /// [`crate::languages::subset_languages`]); one language given covers every side. Each is
    /// written as MTEB writes it (`ara-Arab`).
    fn subset_and_languages(&self, sides: usize) -> Result<(Option<String>, Vec<String>)> {
        let subset = self.opt_str("subset")?;
        let mut languages = self.opt_str_list("languages")?;
        if languages.is_empty() {
            languages = subset
                .as_deref()
                .and_then(crate::languages::subset_languages)
                .unwrap_or_default();
        }
        if languages.len() == 1 && sides > 1 {
            languages = vec![languages[0].clone(); sides];
        }
        if !languages.is_empty() && languages.len() != sides {
            return Err(self.error(format!(
                "{} languages for a row of {sides} side(s) (one per side, or one for all)",
                languages.len()
            )));
        }
        for language in &mut languages {
            *language = crate::languages::mteb_code(language)
                .ok_or_else(|| {
                    self.error(format!(
                        "unknown language {language:?}: write it as MTEB does (eng-Latn) or as \
                         an ISO 639-1 code (en)"
                    ))
                })?
                .to_owned();
        }
        Ok((subset, languages))
    }

    fn get(&self, key: &str) -> Result<&Value> {
        self.object
            .get(key)
            .ok_or_else(|| parse_error(self.path, self.line, format!("missing key {key:?}")))
    }

    /// The cell `key` when present and, for text cells, not empty.
    fn present(&self, key: &str) -> Option<&Value> {
        match self.object.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if self.cells == Cells::Text && s.is_empty() => None,
            Some(v) => Some(v),
        }
    }

    /// A text cell holding a number or a JSON list, read as that.
    fn parsed(&self, key: &str) -> Result<Option<Value>> {
        match (self.cells, self.get(key)?) {
            (Cells::Text, Value::String(s)) => {
                let s = s.trim();
                serde_json::from_str(s).map(Some).map_err(|_| {
                    parse_error(
                        self.path,
                        self.line,
                        format!("column {key:?}: {s:?} is not a number"),
                    )
                })
            }
            _ => Ok(None),
        }
    }

    pub fn str(&self, key: &str) -> Result<String> {
        match self.get(key)? {
            Value::String(s) => Ok(s.clone()),
            other => Err(parse_error(
                self.path,
                self.line,
                format!("{key:?} must be a string, got {other}"),
            )),
        }
    }

    pub fn opt_str(&self, key: &str) -> Result<Option<String>> {
        match self.present(key) {
            None => Ok(None),
            Some(_) => self.str(key).map(Some),
        }
    }

    /// A list of strings; absent or null reads as an empty list (a text cell holds it as JSON).
    pub fn opt_str_list(&self, key: &str) -> Result<Vec<String>> {
        let parsed;
        let value = match self.present(key) {
            Some(Value::String(s)) if self.cells == Cells::Text => {
                parsed = serde_json::from_str::<Value>(s).map_err(|_| {
                    parse_error(
                        self.path,
                        self.line,
                        format!("column {key:?} must hold a JSON list of strings"),
                    )
                })?;
                Some(&parsed)
            }
            other => other,
        };
        match value {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| match v {
                    Value::String(s) => Ok(s.clone()),
                    other => Err(parse_error(
                        self.path,
                        self.line,
                        format!("{key:?}[{i}] must be a string, got {other}"),
                    )),
                })
                .collect(),
            Some(other) => Err(parse_error(
                self.path,
                self.line,
                format!("{key:?} must be a list of strings, got {other}"),
            )),
        }
    }

    pub fn f64(&self, key: &str) -> Result<f64> {
        let parsed = self.parsed(key)?;
        match parsed.as_ref().map_or_else(|| self.get(key), Ok)? {
            Value::Number(n) => n.as_f64().ok_or_else(|| {
                parse_error(
                    self.path,
                    self.line,
                    format!("{key:?} is not a finite number"),
                )
            }),
            other => Err(parse_error(
                self.path,
                self.line,
                format!("{key:?} must be a number, got {other}"),
            )),
        }
    }

    pub fn label01(&self, key: &str) -> Result<bool> {
        if self.cells == Cells::Text {
            if let Value::String(s) = self.get(key)? {
                match s.trim().to_ascii_lowercase().as_str() {
                    "1" | "true" => return Ok(true),
                    "0" | "false" => return Ok(false),
                    _ => {}
                }
            }
        }
        match self.get(key)? {
            Value::Number(n) if n.as_i64() == Some(1) => Ok(true),
            Value::Number(n) if n.as_i64() == Some(0) => Ok(false),
            Value::Bool(b) => Ok(*b),
            other => Err(parse_error(
                self.path,
                self.line,
                format!("{key:?} must be 0 or 1, got {other}"),
            )),
        }
    }

    /// `label` as a class of each `row` ("text", "pair"): an empty cell would quietly become a
    /// class of its own, so it is refused with the file and line.
    fn class(&self, label: String, row: &str) -> Result<String> {
        if label.trim().is_empty() {
            return Err(parse_error(
                self.path,
                self.line,
                format!("empty label: every {row} needs its class (an empty cell is not one)"),
            ));
        }
        Ok(label)
    }

    pub fn label_string(&self, key: &str) -> Result<String> {
        match self.get(key)? {
            Value::String(s) => Ok(s.clone()),
            Value::Number(n) => Ok(n.to_string()),
            other => Err(parse_error(
                self.path,
                self.line,
                format!("{key:?} must be a string or a number, got {other}"),
            )),
        }
    }
}

/// Rows of one dataset split, with where they came from.
#[derive(Clone, Debug)]
pub struct Loaded<T> {
    /// Registry name.
    pub dataset: String,
    /// Split.
    pub split: String,
    /// The file read.
    pub path: PathBuf,
    /// The rows, in file order.
    pub rows: Vec<T>,
    /// 1-based lines of rows with an empty text (kept or dropped per the policy).
    pub empty_text_lines: Vec<usize>,
    /// The checks of the registry files read ([`crate::verify`]); empty for a user's file.
    pub files: Vec<sage_core::FileCheck>,
}

/// A row type: which of its fields are texts (and, sealed inside this crate, how it is read).
pub trait Row: Sized + Send + Sync + sealed::ReadRow {
    /// The texts of the row (checked for emptiness, hashed for checksums).
    fn texts(&self) -> Vec<&str>;

    /// The row's id, for kinds whose rows have one (checked for duplicates).
    fn id(&self) -> Option<&str> {
        None
    }
}

pub(crate) mod sealed {
    use super::*;

    /// How a row type is read; crate-private so the reading helpers stay internal.
    pub trait ReadRow: Sized {
        /// Reads one JSON object.
        fn from_json(at: &At<'_>, extra: &[&str]) -> Result<Self>;
        /// Reads a whole file of these rows, with their 1-based line numbers (JSON lines
        /// unless the row type says otherwise).
        fn read(path: &Path, extra: &[&str]) -> Result<Vec<(usize, Self)>> {
            read_jsonl(path, extra)
        }
    }
}

/// A sentence pair with a graded similarity (STS).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StsPair {
    /// First sentence.
    pub sentence1: String,
    /// Second sentence.
    pub sentence2: String,
    /// Gold score on the dataset's own scale.
    pub score: f64,
    /// Sub-corpus (STS12–16), or language subset (STS17's `en-ar`, STS22's `en`).
    pub subset: Option<String>,
    /// The language of each sentence, as MTEB writes them (`eng-Latn`); empty when the file
    /// says nothing (read as English). A file's `languages` list, else the subset's name when
    /// it is made of language codes ([`crate::languages::subset_languages`]); a one-language
    /// subset (`en`) covers both sentences.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub languages: Vec<String>,
}

impl sealed::ReadRow for StsPair {
    fn from_json(at: &At<'_>, _: &[&str]) -> Result<Self> {
        let (subset, languages) = at.subset_and_languages(2)?;
        Ok(StsPair {
            sentence1: at.str("sentence1")?,
            sentence2: at.str("sentence2")?,
            score: at.f64("score")?,
            subset,
            languages,
        })
    }
}

impl Row for StsPair {
    fn texts(&self) -> Vec<&str> {
        vec![&self.sentence1, &self.sentence2]
    }
}

/// A sentence pair with a binary label (paraphrase, duplicate, pair classification).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabeledPair {
    /// First sentence.
    pub sentence1: String,
    /// Second sentence.
    pub sentence2: String,
    /// 1 = paraphrase / duplicate / positive.
    pub label: bool,
    /// Language subset (RTE3's `de`), when the file has several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subset: Option<String>,
    /// The language of each sentence (`deu-Latn`); empty: not stated (English).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub languages: Vec<String>,
}

impl sealed::ReadRow for LabeledPair {
    fn from_json(at: &At<'_>, _: &[&str]) -> Result<Self> {
        let (subset, languages) = at.subset_and_languages(2)?;
        Ok(LabeledPair {
            sentence1: at.str("sentence1")?,
            sentence2: at.str("sentence2")?,
            label: at.label01("label")?,
            subset,
            languages,
        })
    }
}

impl Row for LabeledPair {
    fn texts(&self) -> Vec<&str> {
        vec![&self.sentence1, &self.sentence2]
    }
}

/// A sentence pair with a class label of any number of classes (SICK's entailment,
/// neutral, contradiction). Any pair dataset reads as these rows, a 0/1 label as `"0"`/`"1"`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassedPair {
    /// First sentence.
    pub sentence1: String,
    /// Second sentence.
    pub sentence2: String,
    /// Its class.
    pub label: String,
}

impl sealed::ReadRow for ClassedPair {
    fn from_json(at: &At<'_>, _: &[&str]) -> Result<Self> {
        // a paraphrase file's true/false is the 1/0 its numbers say
        let label = match at.get("label")? {
            Value::Bool(b) => u8::from(*b).to_string(),
            _ => at.label_string("label")?,
        };
        let label = at.class(label, "pair")?;
        Ok(ClassedPair {
            sentence1: at.str("sentence1")?,
            sentence2: at.str("sentence2")?,
            label,
        })
    }
}

impl Row for ClassedPair {
    fn texts(&self) -> Vec<&str> {
        vec![&self.sentence1, &self.sentence2]
    }
}

/// A sentence with a verbal negation and its affirmative interpretation (AFIN).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NegationPair {
    /// The negated sentence.
    pub sentence: String,
    /// Its affirmative interpretation.
    pub affirmative: String,
}

impl sealed::ReadRow for NegationPair {
    fn from_json(at: &At<'_>, _: &[&str]) -> Result<Self> {
        Ok(NegationPair {
            sentence: at.str("sentence")?,
            affirmative: at.str("affirmative")?,
        })
    }
}

impl Row for NegationPair {
    fn texts(&self) -> Vec<&str> {
        vec![&self.sentence, &self.affirmative]
    }
}

/// A document with its reference summary.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DocumentSummary {
    /// Id.
    pub id: String,
    /// The document.
    pub text: String,
    /// Its summary.
    pub summary: String,
    /// Title, where the dataset has one.
    pub title: Option<String>,
}

impl sealed::ReadRow for DocumentSummary {
    fn from_json(at: &At<'_>, _: &[&str]) -> Result<Self> {
        Ok(DocumentSummary {
            id: at.str("id")?,
            text: at.str("text")?,
            summary: at.str("summary")?,
            title: at.opt_str("title")?,
        })
    }
}

impl Row for DocumentSummary {
    fn id(&self) -> Option<&str> {
        Some(&self.id)
    }
    fn texts(&self) -> Vec<&str> {
        vec![&self.text, &self.summary]
    }
}

/// A plain document.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Document {
    /// Id.
    pub id: String,
    /// The text.
    pub text: String,
    /// Title, where the dataset has one.
    pub title: Option<String>,
    /// Class label, where the dataset has one (amazon_polarity: 0 negative, 1 positive).
    pub label: Option<String>,
}

impl sealed::ReadRow for Document {
    fn from_json(at: &At<'_>, _: &[&str]) -> Result<Self> {
        let label = if at.present("label").is_some() {
            Some(at.label_string("label")?)
        } else {
            None
        };
        Ok(Document {
            id: at.str("id")?,
            text: at.str("text")?,
            title: at.opt_str("title")?,
            label,
        })
    }
}

impl Row for Document {
    fn id(&self) -> Option<&str> {
        Some(&self.id)
    }
    fn texts(&self) -> Vec<&str> {
        vec![&self.text]
    }
}

/// Human ratings of one system summary (SummEval, REALSumm).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SummaryRating {
    /// Source document id.
    pub doc_id: String,
    /// Source document.
    pub source: String,
    /// The rated summary.
    pub summary: String,
    /// The system that wrote it.
    pub system: String,
    /// Rating per dimension (the registry lists each dataset's dimensions).
    pub ratings: BTreeMap<String, f64>,
}

impl sealed::ReadRow for SummaryRating {
    fn from_json(at: &At<'_>, dimensions: &[&str]) -> Result<Self> {
        let ratings = dimensions
            .iter()
            .map(|d| Ok((d.to_string(), at.f64(d)?)))
            .collect::<Result<_>>()?;
        Ok(SummaryRating {
            doc_id: at.str("doc_id")?,
            source: at.str("source")?,
            summary: at.str("summary")?,
            system: at.str("system")?,
            ratings,
        })
    }
}

impl Row for SummaryRating {
    fn texts(&self) -> Vec<&str> {
        vec![&self.source, &self.summary]
    }
}

/// A source document with its reference summary (the `docs.jsonl` of SummEval and REALSumm).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummaryDocument {
    /// Document id.
    pub doc_id: String,
    /// The document.
    pub source: String,
    /// Its reference summary.
    pub reference: String,
    /// Every human reference summary when the dataset has several (SummEval's 11); empty
    /// otherwise.
    pub references: Vec<String>,
}

impl sealed::ReadRow for SummaryDocument {
    fn from_json(at: &At<'_>, _: &[&str]) -> Result<Self> {
        Ok(SummaryDocument {
            doc_id: at.str("doc_id")?,
            source: at.str("source")?,
            reference: at.str("reference")?,
            references: at.opt_str_list("references")?,
        })
    }
}

impl Row for SummaryDocument {
    fn texts(&self) -> Vec<&str> {
        vec![&self.source, &self.reference]
    }
}

/// A pairwise human preference between two summaries of one post, in OpenAI's
/// summarize_from_feedback `comparisons` schema, flattened: `info.post` → `post`,
/// `summaries[i].text` → `summary_i`, `choice` (0 or 1, the preferred summary).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummaryComparison {
    /// Post id (`info.id`).
    pub id: String,
    /// The post.
    pub post: String,
    /// First summary.
    pub summary_0: String,
    /// Second summary.
    pub summary_1: String,
    /// Index of the summary the labeller preferred.
    pub choice: u8,
}

impl sealed::ReadRow for SummaryComparison {
    fn from_json(at: &At<'_>, _: &[&str]) -> Result<Self> {
        let choice = u8::from(at.label01("choice")?);
        Ok(SummaryComparison {
            id: at.str("id")?,
            post: at.str("post")?,
            summary_0: at.str("summary_0")?,
            summary_1: at.str("summary_1")?,
            choice,
        })
    }
}

impl Row for SummaryComparison {
    fn texts(&self) -> Vec<&str> {
        vec![&self.post, &self.summary_0, &self.summary_1]
    }
}

/// A summary rated on summarize_from_feedback's `axis` evaluations, flattened:
/// `info.post` → `post`, `summary.text` → `summary`, `summary.axes.*` → the dimensions
/// overall, accuracy, coverage, coherence (1–7).
pub type AxisRating = SummaryRating;

/// A text with a class or cluster label.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabeledText {
    /// The text.
    pub text: String,
    /// Its label.
    pub label: String,
    /// Language subset (AmazonCounterfactual's `de`, MasakhaNEWS's `swa`), when the file has
    /// several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subset: Option<String>,
    /// The text's language (`deu-Latn`), as a one-item list; empty: not stated (English).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub languages: Vec<String>,
}

impl sealed::ReadRow for LabeledText {
    fn from_json(at: &At<'_>, _: &[&str]) -> Result<Self> {
        let label = at.class(at.label_string("label")?, "text")?;
        let (subset, languages) = at.subset_and_languages(1)?;
        Ok(LabeledText {
            text: at.str("text")?,
            label,
            subset,
            languages,
        })
    }
}

impl Row for LabeledText {
    fn texts(&self) -> Vec<&str> {
        vec![&self.text]
    }
}

/// A reranking query with its relevant and irrelevant candidates (MTEB's reranking format).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RerankingQuery {
    /// The query.
    pub query: String,
    /// Relevant candidates.
    pub positive: Vec<String>,
    /// Irrelevant candidates.
    pub negative: Vec<String>,
    /// Language subset, when the file has several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subset: Option<String>,
    /// The language of query and candidates (`rus-Cyrl`), as a one-item list; empty: not
    /// stated (English).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub languages: Vec<String>,
}

impl sealed::ReadRow for RerankingQuery {
    fn from_json(at: &At<'_>, _: &[&str]) -> Result<Self> {
        let (subset, languages) = at.subset_and_languages(1)?;
        Ok(RerankingQuery {
            query: at.str("query")?,
            positive: at.opt_str_list("positive")?,
            negative: at.opt_str_list("negative")?,
            subset,
            languages,
        })
    }
}

impl Row for RerankingQuery {
    fn texts(&self) -> Vec<&str> {
        std::iter::once(self.query.as_str())
            .chain(self.positive.iter().map(String::as_str))
            .chain(self.negative.iter().map(String::as_str))
            .collect()
    }
}

/// A word pair with a similarity judgement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WordPair {
    /// First word.
    pub word1: String,
    /// Second word.
    pub word2: String,
    /// Gold score on the set's own scale.
    pub score: f64,
}

impl sealed::ReadRow for WordPair {
    fn read(path: &Path, _: &[&str]) -> Result<Vec<(usize, Self)>> {
        read_tsv_word_pairs(path)
    }
    fn from_json(at: &At<'_>, _: &[&str]) -> Result<Self> {
        Ok(WordPair {
            word1: at.str("word1")?,
            word2: at.str("word2")?,
            score: at.f64("score")?,
        })
    }
}

impl Row for WordPair {
    fn texts(&self) -> Vec<&str> {
        vec![&self.word1, &self.word2]
    }
}

/// Two texts (EvalRank's positive pairs).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextPair {
    /// First text.
    pub a: String,
    /// Second text.
    pub b: String,
}

impl sealed::ReadRow for TextPair {
    fn read(path: &Path, _: &[&str]) -> Result<Vec<(usize, Self)>> {
        read_tab_pairs(path)
    }
    fn from_json(at: &At<'_>, _: &[&str]) -> Result<Self> {
        Ok(TextPair {
            a: at.str("a")?,
            b: at.str("b")?,
        })
    }
}

impl Row for TextPair {
    fn texts(&self) -> Vec<&str> {
        vec![&self.a, &self.b]
    }
}

/// One line of a plain list (vocabularies, EvalRank backgrounds).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Line {
    /// The line's text.
    pub text: String,
}

impl sealed::ReadRow for Line {
    fn read(path: &Path, _: &[&str]) -> Result<Vec<(usize, Self)>> {
        read_lines(path)
    }
    fn from_json(at: &At<'_>, _: &[&str]) -> Result<Self> {
        Ok(Line {
            text: at.str("text")?,
        })
    }
}

impl Row for Line {
    fn texts(&self) -> Vec<&str> {
        vec![&self.text]
    }
}

/// A BEIR corpus document.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BeirDocument {
    /// `_id`.
    pub id: String,
    /// Title (may be empty).
    pub title: String,
    /// Text.
    pub text: String,
}

impl sealed::ReadRow for BeirDocument {
    fn from_json(at: &At<'_>, _: &[&str]) -> Result<Self> {
        Ok(BeirDocument {
            id: at.str("_id")?,
            title: at.opt_str("title")?.unwrap_or_default(),
            text: at.str("text")?,
        })
    }
}

impl Row for BeirDocument {
    fn id(&self) -> Option<&str> {
        Some(&self.id)
    }
    fn texts(&self) -> Vec<&str> {
        // a document with a title and no text is not empty
        if self.text.trim().is_empty() && !self.title.trim().is_empty() {
            vec![&self.title]
        } else {
            vec![&self.text]
        }
    }
}

/// A BEIR query.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BeirQuery {
    /// `_id`.
    pub id: String,
    /// Text.
    pub text: String,
}

impl sealed::ReadRow for BeirQuery {
    fn from_json(at: &At<'_>, _: &[&str]) -> Result<Self> {
        Ok(BeirQuery {
            id: at.str("_id")?,
            text: at.str("text")?,
        })
    }
}

impl Row for BeirQuery {
    fn id(&self) -> Option<&str> {
        Some(&self.id)
    }
    fn texts(&self) -> Vec<&str> {
        vec![&self.text]
    }
}

// How the rows' files are read: the row types above say which reader is theirs.

/// `rows`, or [`DataError::Empty`] naming `path` when there are none.
pub(crate) fn non_empty<T>(path: &Path, rows: Vec<T>) -> Result<Vec<T>> {
    if rows.is_empty() {
        Err(DataError::Empty {
            path: path.to_owned(),
        })
    } else {
        Ok(rows)
    }
}

/// JSON lines, one object a row.
pub(crate) fn read_jsonl<T: sealed::ReadRow>(
    path: &Path,
    extra: &[&str],
) -> Result<Vec<(usize, T)>> {
    let mut rows = Vec::new();
    for_each_line(path, &mut |line, raw| {
        let object = lines::json_object(raw).map_err(|e| parse_error(path, line, e))?;
        rows.push((
            line,
            T::from_json(
                &At {
                    path,
                    line,
                    object: &object,
                    cells: Cells::Typed,
                },
                extra,
            )?,
        ));
        Ok(())
    })?;
    non_empty(path, rows)
}

fn tab_fields<'a>(path: &Path, line: usize, raw: &'a str, want: usize) -> Result<Vec<&'a str>> {
    let fields: Vec<&str> = raw.split('\t').collect();
    if fields.len() != want {
        return Err(parse_error(
            path,
            line,
            format!(
                "expected {want} tab-separated fields, found {}",
                fields.len()
            ),
        ));
    }
    Ok(fields)
}

/// `word1<TAB>word2<TAB>score` lines.
pub(crate) fn read_tsv_word_pairs(path: &Path) -> Result<Vec<(usize, WordPair)>> {
    let mut rows = Vec::new();
    for_each_line(path, &mut |line, raw| {
        let f = tab_fields(path, line, raw, 3)?;
        let score = f[2]
            .trim()
            .parse::<f64>()
            .map_err(|_| parse_error(path, line, format!("score {:?} is not a number", f[2])))?;
        rows.push((
            line,
            WordPair {
                word1: f[0].to_owned(),
                word2: f[1].to_owned(),
                score,
            },
        ));
        Ok(())
    })?;
    non_empty(path, rows)
}

/// `a<TAB>b` lines.
pub(crate) fn read_tab_pairs(path: &Path) -> Result<Vec<(usize, TextPair)>> {
    let mut rows = Vec::new();
    for_each_line(path, &mut |line, raw| {
        let f = tab_fields(path, line, raw, 2)?;
        rows.push((
            line,
            TextPair {
                a: f[0].to_owned(),
                b: f[1].to_owned(),
            },
        ));
        Ok(())
    })?;
    non_empty(path, rows)
}

/// One row a non-blank line.
pub(crate) fn read_lines(path: &Path) -> Result<Vec<(usize, Line)>> {
    let mut rows = Vec::new();
    for_each_line(path, &mut |line, raw| {
        rows.push((
            line,
            Line {
                text: raw.to_owned(),
            },
        ));
        Ok(())
    })?;
    non_empty(path, rows)
}

/// Rows of `split` of a user's dataset, with their lines: each record in our column names, read
/// as `T` the same way the mirror's JSON lines are.
pub(crate) fn read_user<T: sealed::ReadRow>(
    dataset: &crate::user::UserDataset,
    split: &str,
    path: &Path,
    extra: &[&str],
) -> Result<Vec<(usize, T)>> {
    let mut rows = Vec::new();
    visit_user(dataset, split, path, extra, &mut |line, row| {
        rows.push((line, row));
        Ok(())
    })?;
    Ok(rows)
}

/// [`read_user`] one row at a time, without holding the rows: `each` gets each row with its line.
/// A split with no rows is an error, as for every loader.
pub(crate) fn visit_user<T: sealed::ReadRow>(
    dataset: &crate::user::UserDataset,
    split: &str,
    path: &Path,
    extra: &[&str],
    each: &mut dyn FnMut(usize, T) -> Result<()>,
) -> Result<()> {
    let mut any = false;
    dataset.for_each_row(split, &mut |line, object, cells| {
        let at = At {
            path,
            line,
            object,
            cells,
        };
        any = true;
        each(
            line,
            T::from_json(&at, extra).map_err(|e| dataset.name_columns(e))?,
        )
    })?;
    if any {
        Ok(())
    } else {
        Err(DataError::Empty {
            path: path.to_owned(),
        })
    }
}
