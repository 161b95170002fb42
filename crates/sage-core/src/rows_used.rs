//! Which rows a result used, and what a result file needs of a suite's typed report.
//!
//! Two results are comparable only on the same rows: the report's paired tests, `sage report`'s
//! "not the same rows" check and a reader of a result file all look at these records. Each
//! suite's report says its own ([`SuiteReport::rows_used`]) from its typed fields, so nothing
//! reads them back out of JSON, and a record is one of three typed shapes.

use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

/// Which rows of a dataset split a result used (sage-data's sampler draws them and documents the
/// rule and the checksum).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RowSelection {
    /// Registry name.
    pub dataset: String,
    /// Split.
    pub split: String,
    /// Rows available after the empty-text policy.
    pub total_rows: usize,
    /// Rows used.
    pub used_rows: usize,
    /// The cap asked for.
    pub max_rows: Option<usize>,
    /// The seed the rows were drawn with.
    pub seed: u64,
    /// Rows with an empty text in the file (kept or dropped per the policy).
    pub empty_text_rows: usize,
    /// Checksum of the used rows: the first 16 hex digits of the SHA-256 of their texts.
    pub checksum: String,
    /// Checksum of every row of the split (after the empty-text policy): the key of the run's
    /// random streams over it. Absent in results written before it was recorded.
    #[serde(default)]
    pub split_checksum: String,
    /// The files the rows were read from, each with its sha256 and whether those bytes are
    /// known ones (a registry file: sage-data checks it when it reads it); empty for a user's
    /// own file, and in results written before files were checked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FileCheck>,
}

/// One file a result read, and whether its bytes are known ones.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileCheck {
    /// Its path under the data root (`sts/stsb/test.jsonl`).
    pub path: String,
    /// Its sha256, lower-case hex.
    pub sha256: String,
    /// What its sha256 was checked against.
    pub verified: Verified,
}

/// What a file's sha256 was checked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verified {
    /// Equal to the pin of the file a pinned public source rebuilds (sage-data's
    /// `sources.toml`, or the table `SAGE_DATA_PINS` names).
    Pin,
    /// Equal to the sha256 recorded when the file was first made from the Hugging Face hub (the
    /// data folder's `PROVENANCE.json`), or to a shared lock file's (`sage data lock`,
    /// carried by `SAGE_DATA_PINS`).
    Lock,
    /// The file has a pin, and these are other bytes (a sample or fixture under a registry
    /// name, or an edited copy): the numbers do not rest on the published data.
    DiffersFromPin,
    /// Nothing to check it against (a hub-made file fetched before sha256s were recorded, or
    /// a file placed by hand).
    Unverified,
}

/// The documents of a corpus that a result's queries were ranked against (retrieval).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CorpusSelection {
    /// `name/split`.
    pub dataset: String,
    /// Checksum of the ranked documents' ids and texts.
    pub corpus_checksum: String,
    /// Documents in the corpus file.
    pub corpus_total: usize,
    /// Documents ranked.
    pub corpus_used: usize,
    /// Queries scored.
    pub queries: usize,
    /// The checks of the set's corpus, queries and judgements files (as
    /// [`RowSelection::files`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FileCheck>,
}

/// One seeded subset of a labelled split (clustering draws several per dataset).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubsetSelection {
    /// `name/split`.
    pub dataset: String,
    /// Rows in the file.
    pub total_rows: usize,
    /// Texts in the subset.
    pub texts: usize,
    /// Classes among them.
    pub classes: usize,
    /// Checksum of the subset's texts and labels.
    pub checksum: String,
}

/// One record of the rows a result used.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum RowsUsed {
    /// Rows drawn from a split.
    Rows(RowSelection),
    /// A corpus ranked against.
    Corpus(CorpusSelection),
    /// A subset of a split.
    Subset(SubsetSelection),
    /// A record this version does not know (a file written by another version), kept as read.
    Other(Map<String, Value>),
}

impl Serialize for RowsUsed {
    /// As an object with its keys sorted, the order every result file has had (they were once
    /// collected as JSON maps): the same run gives the same bytes.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let value = match self {
            RowsUsed::Rows(r) => serde_json::to_value(r),
            RowsUsed::Corpus(c) => serde_json::to_value(c),
            RowsUsed::Subset(s) => serde_json::to_value(s),
            RowsUsed::Other(map) => return map.serialize(serializer),
        }
        .map_err(serde::ser::Error::custom)?;
        value.serialize(serializer)
    }
}

impl From<RowSelection> for RowsUsed {
    fn from(rows: RowSelection) -> RowsUsed {
        RowsUsed::Rows(rows)
    }
}

impl RowsUsed {
    /// The dataset the record names, `name/split` (a corpus or subset record's name holds its
    /// split already); `None` for a record of another version without one.
    pub fn dataset(&self) -> Option<String> {
        match self {
            RowsUsed::Rows(r) => Some(format!("{}/{}", r.dataset, r.split)),
            RowsUsed::Corpus(c) => Some(c.dataset.clone()),
            RowsUsed::Subset(s) => Some(s.dataset.clone()),
            RowsUsed::Other(map) => {
                let field = |k: &str| map.get(k).and_then(Value::as_str);
                match (field("dataset"), field("split")) {
                    (Some(name), Some(split)) => Some(format!("{name}/{split}")),
                    (name, _) => name.map(str::to_owned),
                }
            }
        }
    }

    /// The records once each, in the order first met: two parts of a report that read the same
    /// rows (a rating task's comparisons and correlations) name them once.
    pub fn distinct(records: impl IntoIterator<Item = RowsUsed>) -> Vec<RowsUsed> {
        let mut out: Vec<RowsUsed> = Vec::new();
        for record in records {
            if !out.contains(&record) {
                out.push(record);
            }
        }
        out
    }
}

/// The rows one part of a report used: one dataset's report in a `sage_measures::CategoryReport`, whose
/// [`SuiteReport`] lists them dataset by dataset.
pub trait DatasetRows {
    /// Every row selection this part used, in report order.
    fn rows_used(&self) -> Vec<RowsUsed>;
}

/// What a result file needs of a suite's typed report besides the report itself: its headline
/// score and the rows it used. Every suite's report implements it; the suite's outcome carries
/// both beside the serialised report.
pub trait SuiteReport: Serialize {
    /// The one number a ranking sorts by, when the suite has one.
    fn score(&self) -> Option<f64>;
    /// Every row selection the report used, in report order (duplicates are dropped by the
    /// caller).
    fn rows_used(&self) -> Vec<RowsUsed>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(dataset: &str, checksum: &str) -> RowSelection {
        RowSelection {
            dataset: dataset.into(),
            split: "test".into(),
            total_rows: 10,
            used_rows: 3,
            max_rows: Some(3),
            seed: 1337,
            empty_text_rows: 0,
            checksum: checksum.into(),
            split_checksum: "ff".into(),
            files: Vec::new(),
        }
    }

    /// Each shape writes its keys sorted and reads back as itself; a record of another version
    /// reads as `Other` and writes back unchanged.
    #[test]
    fn records_round_trip_with_sorted_keys() {
        let records = vec![
            RowsUsed::Rows(rows("stsb", "ab")),
            RowsUsed::Corpus(CorpusSelection {
                files: Vec::new(),
                dataset: "scifact/test".into(),
                corpus_checksum: "cd".into(),
                corpus_total: 9,
                corpus_used: 4,
                queries: 2,
            }),
            RowsUsed::Subset(SubsetSelection {
                dataset: "twentynewsgroups/test".into(),
                total_rows: 100,
                texts: 20,
                classes: 4,
                checksum: "ef".into(),
            }),
            RowsUsed::Other(
                serde_json::json!({"checksum": "ab", "dataset": "stsb", "used_rows": 3})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        ];
        let text = serde_json::to_string(&records).unwrap();
        assert!(
            text.starts_with(r#"[{"checksum":"ab","dataset":"stsb","empty_text_rows":0,"#),
            "{text}"
        );
        assert!(text.contains(r#"{"corpus_checksum":"cd","corpus_total":9,"#));
        let read: Vec<RowsUsed> = serde_json::from_str(&text).unwrap();
        assert_eq!(read, records);
        let named: Vec<Option<String>> = records.iter().map(RowsUsed::dataset).collect();
        assert_eq!(
            named,
            ["stsb/test", "scifact/test", "twentynewsgroups/test", "stsb"].map(|d| Some(d.into()))
        );
    }

    #[test]
    fn distinct_keeps_the_first_of_equal_records() {
        let (a, b) = (rows("a", "1"), rows("b", "2"));
        let out = RowsUsed::distinct([a.clone(), b.clone(), a.clone()].map(RowsUsed::from));
        assert_eq!(out, vec![RowsUsed::Rows(a), RowsUsed::Rows(b)]);
    }
}
