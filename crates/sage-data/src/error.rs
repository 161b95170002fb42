use std::path::PathBuf;

/// Errors of sage-data.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DataError {
    /// A file could not be read.
    #[error("{}: {message}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A line (or row) of a file is malformed.
    #[error("{}:{line}: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What was wrong.
        message: String,
    },
    /// A file holds no rows.
    #[error("{}: no rows", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// Rows with empty text under the `Fail` policy.
    #[error("{}: {} rows with an empty text (first on line {})", path.display(), lines.len(), lines[0])]
    EmptyText {
        /// The file.
        path: PathBuf,
        /// 1-based lines of the offending rows.
        lines: Vec<usize>,
    },
    /// A name that is not in the registry.
    #[error("unknown dataset {name:?}; `sage data list` shows the registry")]
    UnknownDataset {
        /// The name given.
        name: String,
    },
    /// A name that is not registered but is a file or folder here: the user meant the path.
    #[error("unknown dataset {name:?}; {name:?} here is a path, and a path is a dataset: --dataset ./{name}{}", split.as_ref().map_or(String::new(), |s| format!("#{s}")))]
    UnknownButPath {
        /// The name given.
        name: String,
        /// The split given after it, if any.
        split: Option<String>,
    },
    /// A split the dataset does not have.
    #[error("dataset {dataset} has no split {split:?} (splits: {})", available.join(", "))]
    UnknownSplit {
        /// The dataset.
        dataset: String,
        /// The split asked for.
        split: String,
        /// The splits it has.
        available: Vec<String>,
    },
    /// A dataset named without a split.
    #[error("dataset {dataset}: name a split, as {dataset}/SPLIT (splits: {})", available.join(", "))]
    NoSplit {
        /// The dataset.
        dataset: String,
        /// The splits it has.
        available: Vec<String>,
    },
    /// The dataset is registered but not present locally.
    #[error("dataset {dataset} is not in the local mirror (expected {}): {hint}", path.display())]
    NotLocal {
        /// The dataset.
        dataset: String,
        /// Where it was expected.
        path: PathBuf,
        /// What to do.
        hint: String,
    },
    /// The dataset is of another kind than the loader asked for.
    #[error("dataset {dataset} holds {actual}, not {expected}")]
    WrongKind {
        /// The dataset.
        dataset: String,
        /// Its kind.
        actual: &'static str,
        /// The kind asked for.
        expected: &'static str,
    },
    /// A user's file whose kind its columns do not tell (no kind fits, or several do).
    #[error("{}: {}", path.display(), detect_message(columns, candidates))]
    Detect {
        /// The file.
        path: PathBuf,
        /// Its columns as written.
        columns: Vec<String>,
        /// The kinds that fit equally (empty: none).
        candidates: Vec<String>,
    },
    /// A user dataset whose name is taken (by the registry or another user dataset).
    #[error("dataset name {name:?} is taken ({by}); name it with a [datasets.NAME] table")]
    NameTaken {
        /// The name.
        name: String,
        /// What has it.
        by: String,
    },
    /// No data root: neither SAGE_DATA_DIR nor a flag.
    #[error("no data directory: `sage data fetch --all` makes the default one; or set SAGE_DATA_DIR, or pass --data-dir")]
    NoRoot,
    /// A hub file could not be had.
    #[cfg(feature = "fetch")]
    #[error("{dataset}: {source}")]
    Hub {
        /// The dataset.
        dataset: String,
        /// What the hub client said.
        source: sage_hub::HubError,
    },
    /// The dataset has no hub source.
    #[error("dataset {dataset} has no hub source; put its files in the local mirror ({hint})")]
    NoHubSource {
        /// The dataset.
        dataset: String,
        /// Where they go.
        hint: String,
    },
    /// The dataset has no pinned public source (or is not registered).
    #[error("dataset {dataset}: {hint}")]
    NoSource {
        /// The name given.
        dataset: String,
        /// Why, and what to do.
        hint: String,
    },
    /// An error from sage-core.
    #[error(transparent)]
    Core(#[from] sage_core::SageError),
}

/// Result alias of sage-data.
pub type Result<T, E = DataError> = std::result::Result<T, E>;

pub(crate) fn parse_error(
    path: &std::path::Path,
    line: usize,
    message: impl Into<String>,
) -> DataError {
    DataError::Parse {
        path: path.to_owned(),
        line,
        message: message.into(),
    }
}

/// A file's column names for a message: the first 20 and how many more, so a header of 500,000
/// names is a line, not megabytes.
pub(crate) fn column_list(columns: &[String]) -> String {
    const SHOWN: usize = 20;
    let mut list = columns
        .iter()
        .take(SHOWN)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if columns.len() > SHOWN {
        list.push_str(&format!(", and {} more", columns.len() - SHOWN));
    }
    list
}

fn detect_message(columns: &[String], candidates: &[String]) -> String {
    if candidates.is_empty() {
        format!(
            "cannot tell what it holds from its columns ({}): rename them to one kind's \
             (`sage data kinds` lists them) with --columns ours=theirs, or give --kind",
            column_list(columns)
        )
    } else {
        format!(
            "its columns ({}) fit several kinds: {}; say which with --kind",
            column_list(columns),
            candidates.join(", ")
        )
    }
}
