//! A user's own dataset: a file or a folder on disk, evaluated like a registry dataset.
//!
//! A path is a dataset. A folder in BEIR layout (`corpus.jsonl`, `queries.jsonl`,
//! `qrels/<split>.tsv`) has its qrels files as splits; a folder of `<split>.<ext>` files (how HF
//! datasets and MTEB custom tasks lay splits out) has those; a single file is one split, `test`
//! unless `PATH#SPLIT` names it. Files are JSON lines, CSV or TSV with a header, or Parquet
//! ([`Format`]).
//!
//! What a dataset holds — its [`DatasetKind`] — is read from the column names ([`detect`]): the
//! kinds whose required columns are all there, less any whose columns are a strict subset of
//! another candidate's (a file with `text` and `summary` is document-summary, not just
//! documents). Kinds that read as the same row type are one candidate (paraphrase-pairs and
//! pair-classification, clustering and classification). More than one candidate left is an error
//! that lists them, never a guess; `kind` says it outright. `columns` maps a user's column names
//! onto ours (`text=content`).
//!
//! A user dataset is named by its table name, or its file or folder name; its results carry that
//! name and the content checksum of the rows used, which depends on the texts only, so the same
//! rows in another format or under other column names give the same checksum. Random draws
//! (samples, perturbations) are keyed by the split's content, as for registry datasets (see
//! [`sample`](mod@crate::sample)): the same rows give the same bytes under any name, and a renamed
//! copy of a registry dataset scores as the registry one.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{column_list, parse_error, DataError, Result};
use crate::records::{self, Cells, Format};
use crate::registry::DatasetKind;

/// What [`UserDataset::for_each_row`] calls with each row: its line, its cells in our column
/// names, and whether they are typed.
pub(crate) type RowVisitor<'a> = dyn FnMut(usize, &Map<String, Value>, Cells) -> Result<()> + 'a;

/// How a user's dataset is laid out on disk.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "layout")]
pub enum Layout {
    /// A BEIR folder: corpus.jsonl, queries.jsonl, `qrels/<split>.tsv`.
    Beir,
    /// One file per split.
    Files {
        /// The format of every split's file.
        format: Format,
        /// Split → file.
        files: BTreeMap<String, PathBuf>,
    },
}

/// What a user says of a dataset besides its path (a `[datasets.NAME]` table, `--kind`,
/// `--columns`); every field may be left out.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct UserSpec {
    /// The file or folder (relative to the table's file for a table).
    pub path: PathBuf,
    /// The kind, by [`DatasetKind::parse`]'s names; absent: detected from the columns.
    #[serde(default)]
    pub kind: Option<String>,
    /// Our column name → the file's (`{ text = "content" }`).
    #[serde(default)]
    pub columns: BTreeMap<String, String>,
    /// The splits to use (a path with `{split}` takes its files from these); absent: every split
    /// the layout has.
    #[serde(default)]
    pub splits: Option<Vec<String>>,
    /// Summary ratings: the rating columns (absent: every column but doc_id, source, summary and
    /// system).
    #[serde(default)]
    pub dimensions: Option<Vec<String>>,
}

/// A user's dataset, opened: its layout read, its kind known and its columns checked.
#[derive(Clone, Debug, Serialize)]
pub struct UserDataset {
    /// The name results and `NAME/split` use.
    pub name: String,
    /// The file or folder given.
    pub path: PathBuf,
    /// Its layout and splits.
    #[serde(flatten)]
    pub layout: Layout,
    /// What it holds.
    pub kind: DatasetKind,
    /// Whether the kind was detected (else given).
    pub detected: bool,
    /// Our column → the file's, for the columns a reading uses (mapped or found as named).
    pub columns: BTreeMap<String, String>,
    /// Summary ratings: the rating dimensions.
    pub dimensions: Vec<String>,
    /// Whether ids are the row's line number (the file has no id column).
    pub line_ids: bool,
}

/// The columns a kind's rows read: required, then optional.
struct KindColumns {
    kind: DatasetKind,
    required: &'static [&'static str],
    optional: &'static [&'static str],
}

/// The kinds a file can be detected as, in the order candidates are listed. Kinds reading the
/// same rows as one of these (classification, pair classification, axis ratings, vocabulary)
/// are given with `kind`.
const DETECTABLE: &[KindColumns] = &[
    KindColumns {
        kind: DatasetKind::StsPairs,
        required: &["sentence1", "sentence2", "score"],
        optional: &["subset"],
    },
    KindColumns {
        kind: DatasetKind::ParaphrasePairs,
        required: &["sentence1", "sentence2", "label"],
        optional: &[],
    },
    KindColumns {
        kind: DatasetKind::NegationPairs,
        required: &["sentence", "affirmative"],
        optional: &[],
    },
    KindColumns {
        kind: DatasetKind::DocumentSummary,
        required: &["text", "summary"],
        optional: &["id", "title"],
    },
    KindColumns {
        kind: DatasetKind::Documents,
        required: &["text"],
        optional: &["id", "title", "label"],
    },
    KindColumns {
        kind: DatasetKind::Clustering,
        required: &["text", "label"],
        optional: &[],
    },
    KindColumns {
        kind: DatasetKind::SummaryRatings,
        required: &["doc_id", "source", "summary", "system"],
        optional: &[],
    },
    KindColumns {
        kind: DatasetKind::SummaryDocuments,
        required: &["doc_id", "source", "reference"],
        optional: &["references"],
    },
    KindColumns {
        kind: DatasetKind::SummaryComparisons,
        required: &["id", "post", "summary_0", "summary_1", "choice"],
        optional: &[],
    },
    KindColumns {
        kind: DatasetKind::Reranking,
        required: &["query", "positive", "negative"],
        optional: &[],
    },
    KindColumns {
        kind: DatasetKind::WordSimilarity,
        required: &["word1", "word2", "score"],
        optional: &[],
    },
    KindColumns {
        kind: DatasetKind::TextPairs,
        required: &["a", "b"],
        optional: &[],
    },
];

/// The columns of `kind`'s rows (a kind not in [`DETECTABLE`] reads as the one it shares rows
/// with).
fn columns_of(kind: DatasetKind) -> Option<&'static KindColumns> {
    let same_rows = match kind {
        DatasetKind::PairClassification | DatasetKind::PairClasses => DatasetKind::ParaphrasePairs,
        DatasetKind::Classification => DatasetKind::Clustering,
        DatasetKind::SummaryAxisRatings => DatasetKind::SummaryRatings,
        DatasetKind::Vocabulary => {
            return Some(&KindColumns {
                kind: DatasetKind::Vocabulary,
                required: &["text"],
                optional: &[],
            })
        }
        other => other,
    };
    DETECTABLE.iter().find(|k| k.kind == same_rows)
}

/// The kinds whose columns `columns` has, the most specific only (see the module docs); the
/// caller errs unless there is exactly one.
pub fn detect(columns: &[String]) -> Vec<DatasetKind> {
    let has = |c: &&str| columns.iter().any(|h| h == c);
    let candidates: Vec<&KindColumns> = DETECTABLE
        .iter()
        .filter(|k| k.required.iter().all(has))
        .collect();
    candidates
        .iter()
        .filter(|k| {
            !candidates.iter().any(|other| {
                other.required.len() > k.required.len()
                    && k.required.iter().all(|c| other.required.contains(c))
            })
        })
        .map(|k| k.kind)
        .collect()
}

impl UserDataset {
    /// Opens the dataset `spec` describes under `name`: reads its layout, maps and checks its
    /// columns, and detects its kind unless the spec gives it.
    pub fn open(name: &str, spec: &UserSpec) -> Result<UserDataset> {
        check_name(name, &spec.path)?;
        let given_kind = spec
            .kind
            .as_deref()
            .map(|k| {
                DatasetKind::parse(k).ok_or_else(|| DataError::Io {
                    path: spec.path.clone(),
                    message: format!(
                        "unknown kind {k:?}; kinds: {}",
                        DatasetKind::ALL
                            .iter()
                            .map(|k| k.name())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                })
            })
            .transpose()?;
        let layout = layout(&spec.path, spec.splits.as_deref())?;
        let (format, first) = match &layout {
            Layout::Beir => {
                if given_kind.is_some_and(|k| k != DatasetKind::Beir) {
                    return Err(DataError::Io {
                        path: spec.path.clone(),
                        message: format!(
                            "a BEIR folder holds beir, not {}",
                            given_kind.map_or("", |k| k.name())
                        ),
                    });
                }
                if !spec.columns.is_empty() {
                    return Err(DataError::Io {
                        path: spec.path.clone(),
                        message: "a BEIR folder has BEIR's columns (_id, title, text); \
                                  column mappings are for files"
                            .into(),
                    });
                }
                return Ok(UserDataset {
                    name: name.to_owned(),
                    path: spec.path.clone(),
                    layout,
                    kind: DatasetKind::Beir,
                    detected: given_kind.is_none(),
                    columns: BTreeMap::new(),
                    dimensions: Vec::new(),
                    line_ids: false,
                });
            }
            Layout::Files { format, files } => (
                *format,
                files.values().next().expect("a layout has a split").clone(),
            ),
        };
        let found = records::columns(&first, format)?;
        let mapped = map_header(&first, &found, &spec.columns)?;
        let kind = match given_kind {
            Some(k) => k,
            None => match detect(&mapped).as_slice() {
                [one] => *one,
                [] => {
                    return Err(DataError::Detect {
                        path: first,
                        columns: found,
                        candidates: Vec::new(),
                    })
                }
                many => {
                    return Err(DataError::Detect {
                        path: first,
                        columns: found,
                        candidates: many.iter().map(|k| k.name().to_owned()).collect(),
                    })
                }
            },
        };
        let wanted = columns_of(kind).ok_or_else(|| DataError::Io {
            path: spec.path.clone(),
            message: format!(
                "a file cannot hold {} (a folder layout of its own)",
                kind.name()
            ),
        })?;
        let missing: Vec<&str> = wanted
            .required
            .iter()
            .copied()
            .filter(|c| !mapped.iter().any(|h| h == c))
            // documents without an id column are numbered by line
            .filter(|c| !(*c == "id" && line_numbered(kind)))
            .collect();
        if !missing.is_empty() {
            return Err(parse_error(
                &first,
                1,
                format!(
                    "{} needs the column{} {} (the file has {}); map one with --columns {}=THEIRS",
                    kind.name(),
                    if missing.len() == 1 { "" } else { "s" },
                    missing.join(", "),
                    column_list(&found),
                    missing[0]
                ),
            ));
        }
        let reverse: BTreeMap<&str, &str> = spec
            .columns
            .iter()
            .map(|(ours, theirs)| (ours.as_str(), theirs.as_str()))
            .collect();
        let dimensions = if matches!(
            kind,
            DatasetKind::SummaryRatings | DatasetKind::SummaryAxisRatings
        ) {
            let dims = match &spec.dimensions {
                Some(d) => d.clone(),
                None => mapped
                    .iter()
                    .filter(|c| !wanted.required.contains(&c.as_str()))
                    .cloned()
                    .collect(),
            };
            if dims.is_empty() {
                return Err(parse_error(
                    &first,
                    1,
                    "summary ratings need at least one rating column besides doc_id, source, \
                     summary and system",
                ));
            }
            if let Some(d) = dims.iter().find(|d| !mapped.contains(d)) {
                return Err(parse_error(
                    &first,
                    1,
                    format!(
                        "no rating column {d:?} (the file has {})",
                        column_list(&found)
                    ),
                ));
            }
            dims
        } else {
            Vec::new()
        };
        let columns = wanted
            .required
            .iter()
            .chain(wanted.optional)
            .chain(
                dimensions
                    .iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .iter(),
            )
            .filter(|c| mapped.iter().any(|h| h == *c))
            .map(|c| {
                let theirs = reverse.get(c).copied().unwrap_or(c);
                (c.to_string(), theirs.to_owned())
            })
            .collect();
        Ok(UserDataset {
            name: name.to_owned(),
            path: spec.path.clone(),
            line_ids: line_numbered(kind) && !mapped.iter().any(|h| h == "id"),
            layout,
            kind,
            detected: given_kind.is_none(),
            columns,
            dimensions,
        })
    }

    /// Its splits, in order.
    pub fn splits(&self) -> Vec<String> {
        match &self.layout {
            Layout::Beir => beir_splits(&self.path),
            Layout::Files { files, .. } => files.keys().cloned().collect(),
        }
    }

    /// The file of `split` (BEIR: the folder).
    pub fn split_path(&self, split: &str) -> Option<PathBuf> {
        match &self.layout {
            Layout::Beir => {
                let qrels = self.path.join("qrels").join(format!("{split}.tsv"));
                qrels.is_file().then(|| self.path.clone())
            }
            Layout::Files { files, .. } => files.get(split).cloned(),
        }
    }

    /// Calls `each` with every row of `split` as an object in our column names, with its line.
    pub(crate) fn for_each_row(&self, split: &str, each: &mut RowVisitor<'_>) -> Result<()> {
        let Layout::Files { format, files } = &self.layout else {
            unreachable!("BEIR folders are read by DataRoot::beir")
        };
        let path = &files[split];
        let format = *format;
        let renames: Vec<(&str, &str)> = self
            .columns
            .iter()
            .filter(|(ours, theirs)| ours != theirs)
            .map(|(ours, theirs)| (ours.as_str(), theirs.as_str()))
            .collect();
        records::for_each(path, format, &mut |line, mut object| {
            for (ours, theirs) in &renames {
                if let Some(v) = object.remove(*theirs) {
                    object.insert((*ours).to_owned(), v);
                }
            }
            if self.line_ids {
                object.insert("id".into(), Value::String(line.to_string()));
            }
            each(line, &object, format.cells())
        })
    }
}

/// Kinds whose rows have an id that a file may leave out (then the line number is the id).
fn line_numbered(kind: DatasetKind) -> bool {
    matches!(kind, DatasetKind::Documents | DatasetKind::DocumentSummary)
}

/// A character a dataset name may hold: names must survive `NAME/split` and a results file, so
/// no `/`, `#`, white space or control characters.
fn name_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | '+')
}

/// The name of a dataset given by path: its file stem (or folder name) with each character a
/// name may not hold written as `_` (`my tickets.csv` is `my_tickets`); a `[datasets.NAME]`
/// table names it otherwise.
pub(crate) fn name_from_path(stem: &str) -> String {
    stem.chars()
        .map(|c| if name_char(c) { c } else { '_' })
        .collect()
}

/// An error unless each column of the file is mapped onto at most one of ours.
pub(crate) fn one_of_ours_each(
    columns: &BTreeMap<String, String>,
) -> std::result::Result<(), String> {
    let mut onto: BTreeMap<&str, &str> = BTreeMap::new();
    for (ours, theirs) in columns {
        if ours == theirs {
            continue;
        }
        if let Some(first) = onto.insert(theirs, ours) {
            return Err(format!(
                "the file's column {theirs:?} is mapped onto both {first:?} and {ours:?}; a \
                 column is one of ours"
            ));
        }
    }
    Ok(())
}

fn check_name(name: &str, path: &Path) -> Result<()> {
    let ok = !name.is_empty() && name.chars().all(name_char);
    if ok {
        Ok(())
    } else {
        Err(DataError::Io {
            path: path.to_owned(),
            message: format!(
                "dataset name {name:?}: use letters, digits, '-', '_', '.' and '+' only \
                 (name it with a [datasets.NAME] table)"
            ),
        })
    }
}

/// The file's columns in our names: every mapping's source must be there, and a mapping may not
/// shadow a column of the file that already has our name.
fn map_header(
    path: &Path,
    found: &[String],
    columns: &BTreeMap<String, String>,
) -> Result<Vec<String>> {
    one_of_ours_each(columns).map_err(|e| parse_error(path, 1, e))?;
    let mut mapped: Vec<String> = found.to_vec();
    for (ours, theirs) in columns {
        if ours == theirs {
            continue;
        }
        let Some(at) = mapped.iter().position(|h| h == theirs) else {
            return Err(parse_error(
                path,
                1,
                format!(
                    "no column {theirs:?} to map onto {ours:?} (the file has {})",
                    column_list(found)
                ),
            ));
        };
        if found.iter().any(|h| h == ours) {
            return Err(parse_error(
                path,
                1,
                format!(
                    "the file has a column {ours:?} already; mapping {theirs:?} onto it would \
                     hide it (map {ours:?} elsewhere or drop the mapping)"
                ),
            ));
        }
        mapped[at] = ours.clone();
    }
    Ok(mapped)
}

/// The layout of `path`: a BEIR folder, a folder of split files, a `{split}` template or a file.
fn layout(path: &Path, splits: Option<&[String]>) -> Result<Layout> {
    let text = path.to_string_lossy();
    if text.contains("{split}") {
        let splits = splits
            .filter(|s| !s.is_empty())
            .ok_or_else(|| DataError::Io {
                path: path.to_owned(),
                message: "a path with {split} needs `splits`".into(),
            })?;
        let format = format_of(path)?;
        let files = splits
            .iter()
            .map(|s| {
                let file = PathBuf::from(text.replace("{split}", s));
                must_be_file(&file)?;
                Ok((s.clone(), file))
            })
            .collect::<Result<_>>()?;
        return Ok(Layout::Files { format, files });
    }
    let meta = std::fs::metadata(path).map_err(|e| DataError::Io {
        path: path.to_owned(),
        message: format!("no such file or folder: {e}"),
    })?;
    if meta.is_file() {
        let split = match splits {
            None => "test".to_owned(),
            Some([one]) => one.clone(),
            Some(_) => {
                return Err(DataError::Io {
                    path: path.to_owned(),
                    message: "one file is one split: give one split name, or a path with {split}"
                        .into(),
                })
            }
        };
        return Ok(Layout::Files {
            format: format_of(path)?,
            files: BTreeMap::from([(split, path.to_owned())]),
        });
    }
    if path.join("corpus.jsonl").is_file() || path.join("queries.jsonl").is_file() {
        for file in ["corpus.jsonl", "queries.jsonl"] {
            must_be_file(&path.join(file))?;
        }
        if beir_splits(path).is_empty() {
            return Err(DataError::Io {
                path: path.join("qrels"),
                message: "a BEIR folder needs qrels/<split>.tsv".into(),
            });
        }
        return Ok(Layout::Beir);
    }
    // a folder of split files, as HF datasets writes them
    let mut files: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut format = None;
    let entries = std::fs::read_dir(path).map_err(|e| DataError::Io {
        path: path.to_owned(),
        message: format!("cannot list: {e}"),
    })?;
    for entry in entries.flatten() {
        let file = entry.path();
        let (Some(f), Some(stem)) = (Format::of(&file), file.file_stem()) else {
            continue;
        };
        if !file.is_file() {
            continue;
        }
        if format.is_some_and(|g| g != f) {
            return Err(DataError::Io {
                path: path.to_owned(),
                message: "split files in two formats; keep one".into(),
            });
        }
        format = Some(f);
        files.insert(stem.to_string_lossy().into_owned(), file);
    }
    let Some(format) = format else {
        return Err(DataError::Io {
            path: path.to_owned(),
            message: format!(
                "neither a BEIR folder (corpus.jsonl, queries.jsonl, qrels/) nor a folder of \
                 split files ({})",
                Format::EXTENSIONS
            ),
        });
    };
    if let Some(wanted) = splits {
        files = wanted
            .iter()
            .map(|s| {
                files
                    .remove(s)
                    .map(|f| (s.clone(), f))
                    .ok_or_else(|| DataError::Io {
                        path: path.to_owned(),
                        message: format!("no split file {s:?} here"),
                    })
            })
            .collect::<Result<_>>()?;
    }
    Ok(Layout::Files { format, files })
}

/// The splits of a BEIR folder: its `qrels/*.tsv` files.
pub(crate) fn beir_splits(dir: &Path) -> Vec<String> {
    let mut splits: Vec<String> = std::fs::read_dir(dir.join("qrels"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "tsv") && p.is_file())
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    splits.sort();
    splits
}

fn format_of(path: &Path) -> Result<Format> {
    Format::of(path).ok_or_else(|| DataError::Io {
        path: path.to_owned(),
        message: format!("unknown file type; sage reads {}", Format::EXTENSIONS),
    })
}

fn must_be_file(path: &Path) -> Result<()> {
    if path.is_file() {
        Ok(())
    } else {
        Err(DataError::Io {
            path: path.to_owned(),
            message: "no such file".into(),
        })
    }
}

/// The `[datasets.NAME]` tables of a TOML file (bench.toml or a file given to `--datasets`), each
/// path taken relative to the file's folder. Other tables in the file are not this reader's.
pub fn read_tables(file: &Path) -> Result<Vec<(String, UserSpec)>> {
    #[derive(Deserialize)]
    struct Tables {
        #[serde(default)]
        datasets: BTreeMap<String, UserSpec>,
    }
    let mut text = String::new();
    crate::regular_file::open(file)?
        .read_to_string(&mut text)
        .map_err(|e| DataError::Io {
            path: file.to_owned(),
            message: format!("cannot read: {e}"),
        })?;
    let tables: Tables = toml::from_str(&text).map_err(|e| {
        let line = e
            .span()
            .map_or(0, |s| text[..s.start].matches('\n').count() + 1);
        parse_error(file, line, e.message().to_owned())
    })?;
    let base = file.parent().unwrap_or(Path::new("."));
    Ok(tables
        .datasets
        .into_iter()
        .map(|(name, mut spec)| {
            if spec.path.is_relative() {
                spec.path = base.join(&spec.path);
            }
            (name, spec)
        })
        .collect())
}

impl UserDataset {
    /// `e` with the file's own column names beside ours, where the message names a mapped one.
    pub(crate) fn name_columns(&self, e: DataError) -> DataError {
        let DataError::Parse {
            path,
            line,
            mut message,
        } = e
        else {
            return e;
        };
        let named: Vec<String> = self
            .columns
            .iter()
            .filter(|(ours, theirs)| ours != theirs && message.contains(&format!("{ours:?}")))
            .map(|(ours, theirs)| format!("{ours:?} is the file's column {theirs:?}"))
            .collect();
        if !named.is_empty() {
            message = format!("{message} ({})", named.join("; "));
        }
        DataError::Parse {
            path,
            line,
            message,
        }
    }
}

/// The columns a kind's rows read from a user's file, required and optional, in our names; `None`
/// for a kind that is a folder layout (BEIR, WordNet).
pub fn kind_columns(
    kind: DatasetKind,
) -> Option<(&'static [&'static str], &'static [&'static str])> {
    columns_of(kind).map(|k| (k.required, k.optional))
}
