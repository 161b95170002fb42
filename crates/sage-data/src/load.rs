//! Reading the local mirror into typed rows.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use sage_core::RunSeed;
use serde::Serialize;

use crate::error::{parse_error, DataError, Result};
use crate::registry::{entry, DatasetEntry, DatasetKind};
use crate::rows::{
    read_jsonl, BeirDocument, BeirQuery, Document, DocumentSummary, Line, Loaded, Row, TextPair,
    WordPair,
};
use crate::sample::{RowSelection, Sampled};
use crate::user::{UserDataset, UserSpec};

mod beir;
use beir::read_corpus;
pub use beir::Beir;

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
        /// Rows whose texts repeat an earlier row's exactly.
        duplicate_rows: usize,
        /// Rows whose id repeats an earlier row's (kinds with ids).
        duplicate_ids: usize,
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
        /// Corpus documents whose `_id` repeats an earlier one's.
        duplicate_document_ids: usize,
        /// Queries whose `_id` repeats an earlier one's.
        duplicate_query_ids: usize,
        /// Judgements naming a document the corpus lacks (a run refuses these; first lines).
        qrels_to_missing_documents: Vec<usize>,
        /// Judgements naming a query queries.jsonl lacks (first lines).
        qrels_to_missing_queries: Vec<usize>,
        /// The checks of its files ([`crate::verify`]); empty for a user's set.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        files: Vec<sage_core::FileCheck>,
    },
    /// The WordNet folder (read by sage-perturb's WordNet reader).
    WordNet {
        /// Registry name.
        dataset: String,
        /// The folder.
        path: PathBuf,
    },
}

/// Which corpus positions a sampled BEIR load keeps ([`DataRoot::beir_sampled`]), given the set
/// with its ids and stream key but no documents yet.
pub type KeepDocuments<'k> = dyn Fn(&Beir) -> Vec<usize> + 'k;

/// The rows of one split, not yet sampled ([`DataRoot::rows`]).
pub struct SplitRows<'a, T> {
    dataset: String,
    split: String,
    path: PathBuf,
    files: Vec<sage_core::FileCheck>,
    visit: Box<crate::sample::Visit<'a, T>>,
}

impl<'a, T: Row + Clone + 'a> SplitRows<'a, T> {
    fn in_memory(loaded: Loaded<T>) -> Self {
        let (rows, empty) = (loaded.rows, loaded.empty_text_lines.len());
        SplitRows {
            dataset: loaded.dataset,
            split: loaded.split,
            path: loaded.path,
            files: loaded.files,
            visit: Box::new(move |each| {
                for row in &rows {
                    each(row.clone())?;
                }
                Ok(empty)
            }),
        }
    }

    /// Rows read from `path` by `records` each time they are visited, as `S` with their lines,
    /// then the empty-text `policy` applied to the `S` (as a whole load applies it), then `into`.
    fn streamed<S: Row + 'a>(
        (dataset, split, path): (&str, &str, PathBuf),
        policy: EmptyTextPolicy,
        records: impl Fn(&mut dyn FnMut(usize, S) -> Result<()>) -> Result<()> + 'a,
        into: impl Fn(S) -> T + 'a,
    ) -> Self {
        let at = path.clone();
        SplitRows {
            dataset: dataset.to_owned(),
            split: split.to_owned(),
            path,
            files: Vec::new(),
            visit: Box::new(move |each| {
                let mut empty = Vec::new();
                records(&mut |line, row| {
                    if !has_empty_text(&row) {
                        return each(into(row));
                    }
                    empty.push(line);
                    match policy {
                        EmptyTextPolicy::Keep => each(into(row)),
                        EmptyTextPolicy::Drop | EmptyTextPolicy::Fail => Ok(()),
                    }
                })?;
                if policy == EmptyTextPolicy::Fail && !empty.is_empty() {
                    return Err(DataError::EmptyText {
                        path: at.clone(),
                        lines: empty,
                    });
                }
                Ok(empty.len())
            }),
        }
    }

    /// At most `max_rows` rows, drawn with `seed` as [`crate::sample()`] draws them.
    pub fn sample(&self, max_rows: Option<usize>, seed: RunSeed) -> Result<Sampled<T>> {
        self.draw(max_rows, seed, None)
    }

    /// Whole groups of rows (rows with equal `group_of`), as [`crate::sample_grouped`] draws them.
    pub fn sample_grouped(
        &self,
        max_rows: Option<usize>,
        seed: RunSeed,
        group_of: impl Fn(&T) -> String,
    ) -> Result<Sampled<T>> {
        self.draw(max_rows, seed, Some(&group_of))
    }

    /// Rows the caller picks from every row's key: `choose` gets each row's `key_of`, in file
    /// order, and the split checksum, and returns the positions it wants (ascending); only
    /// those rows are kept (a user's file is streamed twice). Returns the keys too. The record's
    /// seed and cap are the caller's to state.
    pub fn pick(
        &self,
        key_of: impl Fn(&T) -> String,
        mut choose: impl FnMut(&[String], &str) -> Vec<usize>,
    ) -> Result<(Vec<String>, Sampled<T>)> {
        let name = crate::sample::SplitName {
            dataset: &self.dataset,
            split: &self.split,
            path: &self.path,
            files: &self.files,
        };
        crate::sample::pick(name, &*self.visit, &key_of, &mut choose)
    }

    fn draw(
        &self,
        max_rows: Option<usize>,
        seed: RunSeed,
        group_of: Option<&dyn Fn(&T) -> String>,
    ) -> Result<Sampled<T>> {
        let name = crate::sample::SplitName {
            dataset: &self.dataset,
            split: &self.split,
            path: &self.path,
            files: &self.files,
        };
        crate::sample::draw(name, &*self.visit, max_rows, seed, group_of)
    }
}

/// Where datasets come from: the local mirror of the registry (SAGE_DATA_DIR), when there is
/// one, and the user's own datasets registered on it ([`DataRoot::add_user`],
/// [`DataRoot::resolve`]). Every loader looks a name up in both, so a suite reads a user's
/// dataset exactly as a registry one.
#[derive(Clone, Debug)]
pub struct DataRoot {
    root: Option<PathBuf>,
    policy: EmptyTextPolicy,
    user: std::sync::Arc<BTreeMap<String, UserDataset>>,
}

/// What a dataset name and split stand for.
enum Found<'a> {
    Registry(&'static DatasetEntry, PathBuf),
    User(&'a UserDataset, PathBuf),
}

impl Found<'_> {
    fn kind(&self) -> DatasetKind {
        match self {
            Found::Registry(e, _) => e.kind,
            Found::User(u, _) => u.kind,
        }
    }

    fn path(&self) -> &Path {
        match self {
            Found::Registry(_, p) | Found::User(_, p) => p,
        }
    }
}

/// What a user says of every path given on one command line (`--kind`, `--columns`).
#[derive(Clone, Debug, Default)]
pub struct PathHints {
    /// The kind, by name.
    pub kind: Option<String>,
    /// Our column → the file's.
    pub columns: BTreeMap<String, String>,
}

impl PathHints {
    /// `ours=theirs,...` (the `--columns` flag) read into [`PathHints::columns`].
    /// Nothing is passed over in silence: an empty mapping (`,,`), one of ours given twice, or
    /// one of theirs mapped onto two of ours is an error (one trailing comma is spelling; an
    /// empty text maps nothing).
    pub fn parse_columns(text: &str) -> std::result::Result<BTreeMap<String, String>, String> {
        let body = text.strip_suffix(',').unwrap_or(text);
        let mut columns = BTreeMap::new();
        if text.trim().is_empty() {
            return Ok(columns);
        }
        for pair in body.split(',') {
            let (ours, theirs) = pair
                .split_once('=')
                .map(|(o, t)| (o.trim().to_owned(), t.trim().to_owned()))
                .filter(|(o, t)| !o.is_empty() && !t.is_empty())
                .ok_or_else(|| {
                    format!("column mapping {pair:?} in {text:?}: expected ours=theirs")
                })?;
            if let Some(before) = columns.insert(ours.clone(), theirs.clone()) {
                return Err(format!(
                    "column {ours:?} is mapped twice (onto {before:?} and {theirs:?})"
                ));
            }
        }
        crate::user::one_of_ours_each(&columns)?;
        Ok(columns)
    }
}

impl DataRoot {
    /// The mirror at `root`.
    pub fn new(root: impl Into<PathBuf>) -> DataRoot {
        DataRoot {
            root: Some(root.into()),
            policy: EmptyTextPolicy::default(),
            user: Default::default(),
        }
    }

    /// No mirror: only the user's own datasets (a registry name is an error saying how to set
    /// the mirror).
    pub fn without_mirror() -> DataRoot {
        DataRoot {
            root: None,
            policy: EmptyTextPolicy::default(),
            user: Default::default(),
        }
    }

    /// The mirror at SAGE_DATA_DIR, else at the default data folder when `sage data fetch` has
    /// made it ([`DataRoot::default_dir`]).
    pub fn from_env() -> Result<DataRoot> {
        std::env::var_os("SAGE_DATA_DIR")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| DataRoot::default_dir().filter(|d| d.is_dir()))
            .map(DataRoot::new)
            .ok_or(DataError::NoRoot)
    }

    /// Where `sage data fetch` puts the data when SAGE_DATA_DIR is unset, and where every command
    /// then finds it: `$XDG_DATA_HOME/sage-rs/data`, else `~/.local/share/sage-rs/data`.
    pub fn default_dir() -> Option<PathBuf> {
        let nonempty = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        nonempty("XDG_DATA_HOME")
            .or_else(|| nonempty("HOME").map(|home| home.join(".local").join("share")))
            .map(|base| base.join("sage-rs").join("data"))
    }

    /// The mirror at `dir`, else at SAGE_DATA_DIR, else none.
    pub fn from_flag_or_env(dir: Option<PathBuf>) -> DataRoot {
        match dir {
            Some(dir) => DataRoot::new(dir),
            None => DataRoot::from_env().unwrap_or_else(|_| DataRoot::without_mirror()),
        }
    }

    /// Sets the empty-text policy.
    pub fn with_empty_text_policy(mut self, policy: EmptyTextPolicy) -> DataRoot {
        self.policy = policy;
        self
    }

    /// The mirror's folder, when there is a mirror.
    pub fn root(&self) -> Option<&Path> {
        self.root.as_deref()
    }

    /// The mirror's folder for messages (`(no data directory)` without one).
    pub fn describe(&self) -> String {
        self.root.as_ref().map_or_else(
            || "(no data directory: SAGE_DATA_DIR unset)".to_owned(),
            |r| r.display().to_string(),
        )
    }

    /// Registers a user's dataset under `name`; the name may not be a registry dataset's or
    /// another user dataset's.
    pub fn add_user(&mut self, name: &str, spec: &UserSpec) -> Result<&UserDataset> {
        if entry(name).is_some() {
            return Err(DataError::NameTaken {
                name: name.to_owned(),
                by: "a registry dataset".into(),
            });
        }
        if let Some(other) = self.user.get(name) {
            if other.path != spec.path {
                return Err(DataError::NameTaken {
                    name: name.to_owned(),
                    by: format!("the user dataset at {}", other.path.display()),
                });
            }
        }
        let dataset = UserDataset::open(name, spec)?;
        std::sync::Arc::make_mut(&mut self.user).insert(name.to_owned(), dataset);
        Ok(&self.user[name])
    }

    /// Registers every `[datasets.NAME]` table of a TOML file (bench.toml, `--datasets FILE`).
    pub fn add_tables(&mut self, file: &Path) -> Result<Vec<String>> {
        let mut names = Vec::new();
        for (name, spec) in crate::user::read_tables(file)? {
            self.add_user(&name, &spec)?;
            names.push(name);
        }
        Ok(names)
    }

    /// The user's datasets, by name.
    pub fn user_datasets(&self) -> impl Iterator<Item = &UserDataset> {
        self.user.values()
    }

    /// The user dataset called `name`.
    pub fn user_dataset(&self, name: &str) -> Option<&UserDataset> {
        self.user.get(name)
    }

    /// A dataset argument as `(name, split)`: `name/split` of the registry or a user table, or a
    /// path (`PATH` or `PATH#SPLIT`; a folder or a file), which is registered under its file or
    /// folder name. `hints` apply to a path.
    pub fn resolve(&mut self, arg: &str, hints: &PathHints) -> Result<(String, String)> {
        let known =
            |root: &DataRoot, name: &str| entry(name).is_some() || root.user.contains_key(name);
        let (body, split) = match arg.rsplit_once('#') {
            Some((body, split)) if !split.is_empty() && !split.contains('/') => {
                (body, Some(split.to_owned()))
            }
            _ => (arg, None),
        };
        let path = Path::new(body);
        let path_like = split.is_some()
            || body.starts_with("./")
            || body.starts_with("../")
            || path.is_absolute()
            || crate::records::Format::of(path).is_some()
            || (!body.contains('/') && path.exists() && !known(self, body));
        if !path_like {
            if let Some((name, split)) = arg
                .split_once('/')
                .filter(|(n, s)| !n.is_empty() && !s.is_empty())
            {
                if known(self, name) {
                    return Ok((name.to_owned(), split.to_owned()));
                }
            }
            if !path.exists() {
                if known(self, arg) {
                    return Err(DataError::NoSplit {
                        dataset: arg.to_owned(),
                        available: self.splits(arg)?,
                    });
                }
                let name = arg.split('/').next().unwrap_or(arg);
                if Path::new(name).exists() {
                    return Err(DataError::UnknownButPath {
                        name: name.to_owned(),
                        split: arg.split_once('/').map(|(_, s)| s.to_owned()),
                    });
                }
                return Err(DataError::UnknownDataset {
                    name: name.to_owned(),
                });
            }
        }
        self.add_path(path, split, hints)
    }

    fn add_path(
        &mut self,
        path: &Path,
        split: Option<String>,
        hints: &PathHints,
    ) -> Result<(String, String)> {
        let is_file = path.is_file();
        let name = crate::user::name_from_path(
            &if is_file {
                path.file_stem()
            } else {
                path.file_name()
            }
            .or_else(|| path.components().next_back().map(|c| c.as_os_str()))
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        );
        let spec = UserSpec {
            path: path.to_owned(),
            kind: hints.kind.clone(),
            columns: hints.columns.clone(),
            splits: match (&split, is_file) {
                (Some(s), true) => Some(vec![s.clone()]),
                _ => None,
            },
            dimensions: None,
        };
        let dataset = self.add_user(&name, &spec)?;
        let splits = dataset.splits();
        let chosen = match split {
            Some(s) if splits.contains(&s) => s,
            Some(s) => {
                return Err(DataError::UnknownSplit {
                    dataset: name,
                    split: s,
                    available: splits,
                })
            }
            None if splits.iter().any(|s| s == "test") => "test".to_owned(),
            None if splits.len() == 1 => splits[0].clone(),
            None => {
                return Err(DataError::UnknownSplit {
                    dataset: name,
                    split: "test".into(),
                    available: splits,
                })
            }
        };
        Ok((name, chosen))
    }

    /// The splits of a registry or user dataset.
    pub fn splits(&self, name: &str) -> Result<Vec<String>> {
        if let Some(u) = self.user.get(name) {
            return Ok(u.splits());
        }
        entry(name)
            .map(|e| e.splits.iter().map(|s| s.to_string()).collect())
            .ok_or_else(|| DataError::UnknownDataset {
                name: name.to_owned(),
            })
    }

    /// The kind of a registry or user dataset.
    pub fn kind(&self, name: &str) -> Result<DatasetKind> {
        if let Some(u) = self.user.get(name) {
            return Ok(u.kind);
        }
        entry(name)
            .map(|e| e.kind)
            .ok_or_else(|| DataError::UnknownDataset {
                name: name.to_owned(),
            })
    }

    /// The rating dimensions of a summary-ratings dataset (empty for other kinds).
    pub fn dimensions(&self, name: &str) -> Result<Vec<String>> {
        if let Some(u) = self.user.get(name) {
            return Ok(u.dimensions.clone());
        }
        entry(name)
            .map(|e| e.dimensions.iter().map(|d| d.to_string()).collect())
            .ok_or_else(|| DataError::UnknownDataset {
                name: name.to_owned(),
            })
    }

    /// Whether `split` of `name` can be read (a user dataset, or a registry one in the mirror).
    pub fn has(&self, name: &str, split: &str) -> bool {
        self.find(name, split).is_ok()
    }

    fn find(&self, name: &str, split: &str) -> Result<Found<'_>> {
        if let Some(u) = self.user.get(name) {
            return match u.split_path(split) {
                Some(path) => Ok(Found::User(u, path)),
                None => Err(DataError::UnknownSplit {
                    dataset: name.to_owned(),
                    split: split.to_owned(),
                    available: u.splits(),
                }),
            };
        }
        let (e, path) = self.locate(name, split)?;
        Ok(Found::Registry(e, path))
    }

    /// Whether `split` of the entry is in the local mirror (for BEIR: its qrels file).
    pub fn is_local(&self, entry: &DatasetEntry, split: &str) -> bool {
        let Some(root) = &self.root else {
            return false;
        };
        let path = root.join(entry.local_path(split));
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
        let root = self.root.as_ref().ok_or(DataError::NoRoot)?;
        let path = root.join(e.local_path(split));
        if !self.is_local(e, split) {
            let pinned = crate::pins::Pins::builtin()
                .dataset(name)
                .is_some_and(|d| d.rebuildable());
            let hint = match &e.hub {
                _ if pinned => {
                    format!("`sage data fetch {name}` rebuilds it from its pinned source")
                }
                Some(h) => format!(
                    "it is on the Hugging Face hub as {} (sage data fetch {name})",
                    h.repo
                ),
                None => "it has no public source; put the files there in the documented layout"
                    .to_owned(),
            };
            return Err(DataError::NotLocal {
                dataset: name.to_owned(),
                path,
                hint,
            });
        }
        Ok((e, path))
    }

    /// Splits `wanted` (name, split) into those that can be read and, for the others, why not
    /// (the error says how to get them).
    pub fn partition_local<'a>(
        &self,
        wanted: &[(&'a str, &'a str)],
    ) -> (Vec<(&'a str, &'a str)>, Vec<DataError>) {
        let mut present = Vec::new();
        let mut missing = Vec::new();
        for &(name, split) in wanted {
            match self.find(name, split) {
                Ok(_) => present.push((name, split)),
                Err(e) => missing.push(e),
            }
        }
        (present, missing)
    }

    /// Rows of a JSON-lines or TSV dataset split, as `T`. The dataset's kind must load as `T`.
    pub fn load<T: Row + KindOf>(&self, name: &str, split: &str) -> Result<Loaded<T>> {
        let found = self.find(name, split)?;
        if !T::KINDS.contains(&found.kind()) {
            return Err(DataError::WrongKind {
                dataset: name.to_owned(),
                actual: found.kind().name(),
                expected: T::KINDS[0].name(),
            });
        }
        let read = match &found {
            Found::Registry(e, path) => T::read(path, e.dimensions)?,
            Found::User(u, path) => {
                let dimensions: Vec<&str> = u.dimensions.iter().map(String::as_str).collect();
                crate::rows::read_user::<T>(u, split, path, &dimensions)?
            }
        };
        let files = self.checks(&found, split, &[])?;
        let path = found.path().to_owned();
        let (rows, empty) = with_empty_lines(read);
        let rows = self.apply_policy(&path, rows, &empty)?;
        Ok(Loaded {
            dataset: name.to_owned(),
            split: split.to_owned(),
            path,
            rows,
            empty_text_lines: empty,
            files,
        })
    }

    /// The check of a registry file at `path` under the data root ([`crate::verify`]): an
    /// error when it is locked and changed.
    pub fn check(&self, path: &str) -> Result<sage_core::FileCheck> {
        let root = self.root.as_ref().ok_or(DataError::NoRoot)?;
        crate::verify::check(root, path)
    }

    /// The checks of the files `found` reads for `split`: the `members` of its folder (a BEIR
    /// set's files), or its file itself when `members` is empty. None for a user's dataset: it
    /// has no pin or lock to be checked against.
    fn checks(
        &self,
        found: &Found<'_>,
        split: &str,
        members: &[&str],
    ) -> Result<Vec<sage_core::FileCheck>> {
        let Found::Registry(e, _) = found else {
            return Ok(Vec::new());
        };
        let local = e.local_path(split);
        if members.is_empty() {
            return Ok(vec![self.check(&local)?]);
        }
        members
            .iter()
            .map(|member| self.check(&format!("{local}/{member}")))
            .collect()
    }

    /// The checks of a BEIR set's corpus, queries and `split`'s judgements.
    fn beir_checks(&self, found: &Found<'_>, split: &str) -> Result<Vec<sage_core::FileCheck>> {
        let qrels = format!("qrels/{split}.tsv");
        self.checks(found, split, &["corpus.jsonl", "queries.jsonl", &qrels])
    }

    /// Rows of `split` of `name` as MTEB's task of that name has them: the mirror splits the
    /// registry lists for it ([`DatasetEntry::mteb_rows`]) one after another, under `split`; any
    /// other dataset's split as [`load`](Self::load) reads it.
    pub fn load_mteb<T: Row + KindOf>(&self, name: &str, split: &str) -> Result<Loaded<T>> {
        let parts = match (self.user.contains_key(name), entry(name)) {
            (false, Some(e)) => e.mteb_parts(split),
            _ => vec![split],
        };
        if parts == [split] {
            return self.load(name, split);
        }
        let mut whole: Option<Loaded<T>> = None;
        for part in parts {
            let loaded = self.load::<T>(name, part)?;
            match &mut whole {
                None => {
                    whole = Some(Loaded {
                        split: split.to_owned(),
                        ..loaded
                    })
                }
                Some(w) => {
                    // empty-text lines stay per file; the first file's are the ones kept
                    w.rows.extend(loaded.rows);
                    w.files.extend(loaded.files);
                }
            }
        }
        Ok(whole.expect("an MTEB split has parts"))
    }

    /// The rows of `split` of `name` as `T`, to be sampled ([`SplitRows::sample`]): a user's file
    /// is streamed when sampled, so memory follows the sample, not the file; the mirror's files
    /// are read whole, as by [`load`](Self::load).
    pub fn rows<T: Row + KindOf + Clone + 'static>(
        &self,
        name: &str,
        split: &str,
    ) -> Result<SplitRows<'_, T>> {
        self.split_rows(name, split, false)
    }

    /// [`rows`](Self::rows) as MTEB's task of that name has them ([`load_mteb`](Self::load_mteb)).
    pub fn mteb_rows<T: Row + KindOf + Clone + 'static>(
        &self,
        name: &str,
        split: &str,
    ) -> Result<SplitRows<'_, T>> {
        self.split_rows(name, split, true)
    }

    /// [`rows`](Self::rows) of a split read as documents ([`documents`](Self::documents)): a
    /// user's file of documents (or of documents and summaries: a row's texts are then the
    /// document's alone) and every BEIR corpus are streamed.
    pub fn document_rows(&self, name: &str, split: &str) -> Result<SplitRows<'_, Document>> {
        let found = self.find(name, split)?;
        let kind = found.kind();
        let at = (name, split, found.path().to_owned());
        match found {
            Found::User(u, _)
                if matches!(kind, DatasetKind::Documents | DatasetKind::DocumentSummary) =>
            {
                Ok(self.user_rows(u, at))
            }
            _ if kind == DatasetKind::Beir => {
                let corpus = at.2.join("corpus.jsonl");
                let files = self.checks(&found, split, &["corpus.jsonl"])?;
                let mut rows = SplitRows::streamed(
                    (name, split, corpus.clone()),
                    self.policy,
                    move |each| read_corpus(&corpus, each),
                    |d: BeirDocument| Document {
                        id: d.id,
                        text: d.text,
                        title: (!d.title.is_empty()).then_some(d.title),
                        label: None,
                    },
                );
                rows.files = files;
                Ok(rows)
            }
            _ => Ok(SplitRows::in_memory(self.documents(name, split)?)),
        }
    }

    fn split_rows<T: Row + KindOf + Clone + 'static>(
        &self,
        name: &str,
        split: &str,
        mteb: bool,
    ) -> Result<SplitRows<'_, T>> {
        match self.find(name, split)? {
            Found::User(u, path) if T::KINDS.contains(&u.kind) => {
                Ok(self.user_rows(u, (name, split, path)))
            }
            // the kind error, as `load` words it; and the mirror, read whole
            _ if mteb => Ok(SplitRows::in_memory(self.load_mteb(name, split)?)),
            _ => Ok(SplitRows::in_memory(self.load(name, split)?)),
        }
    }

    /// A user's split, streamed each time it is visited.
    fn user_rows<'a, T: Row + Clone + 'a>(
        &self,
        data: &'a UserDataset,
        (name, split, path): (&str, &str, PathBuf),
    ) -> SplitRows<'a, T> {
        let (file, split_name) = (path.clone(), split.to_owned());
        SplitRows::streamed(
            (name, split, path),
            self.policy,
            move |each| {
                let dimensions: Vec<&str> = data.dimensions.iter().map(String::as_str).collect();
                crate::rows::visit_user::<T>(data, &split_name, &file, &dimensions, each)
            },
            |row| row,
        )
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
        let found = self.find(name, split)?;
        let path = found.path().to_owned();
        fn rows<T: Row + KindOf + Clone + 'static>(
            root: &DataRoot,
            name: &str,
            split: &str,
            max_rows: Option<usize>,
            seed: RunSeed,
        ) -> Result<SplitReport> {
            let loaded = root.load::<T>(name, split)?;
            let (_, selection) = crate::sample::sample(&loaded, max_rows, seed);
            let mut texts = HashSet::new();
            let mut ids = HashSet::new();
            let duplicate_rows = loaded
                .rows
                .iter()
                .filter(|r| !texts.insert(r.texts()))
                .count();
            let duplicate_ids = loaded
                .rows
                .iter()
                .filter_map(|r| r.id())
                .filter(|id| !ids.insert(*id))
                .count();
            Ok(SplitReport::Rows {
                selection,
                path: loaded.path,
                empty_text_lines: loaded.empty_text_lines.into_iter().take(20).collect(),
                duplicate_rows,
                duplicate_ids,
            })
        }
        match found.kind() {
            DatasetKind::StsPairs => rows::<crate::StsPair>(self, name, split, max_rows, seed),
            DatasetKind::ParaphrasePairs | DatasetKind::PairClassification => {
                rows::<crate::LabeledPair>(self, name, split, max_rows, seed)
            }
            DatasetKind::PairClasses => {
                rows::<crate::ClassedPair>(self, name, split, max_rows, seed)
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
                let files = self.beir_checks(&found, split)?;
                // counted, not refused: a check reports every problem a run would stop at
                let corpus = read_jsonl::<BeirDocument>(&path.join("corpus.jsonl"), &[])?;
                let queries = read_jsonl::<BeirQuery>(&path.join("queries.jsonl"), &[])?;
                let qrels =
                    crate::trec::read_qrels(&path.join("qrels").join(format!("{split}.tsv")))?;
                let mut seen = HashSet::new();
                let duplicate_document_ids = corpus
                    .iter()
                    .filter(|(_, d)| !seen.insert(d.id.as_str()))
                    .count();
                let mut seen_queries = HashSet::new();
                let duplicate_query_ids = queries
                    .iter()
                    .filter(|(_, q)| !seen_queries.insert(q.id.as_str()))
                    .count();
                let judged: HashSet<&str> = qrels.iter().map(|j| j.query.as_str()).collect();
                let corpus_rows: Vec<BeirDocument> =
                    corpus.iter().map(|(_, d)| d.clone()).collect();
                Ok(SplitReport::Beir {
                    dataset: name.to_owned(),
                    split: split.to_owned(),
                    corpus: corpus.len(),
                    queries_in_file: queries.len(),
                    queries: seen_queries.iter().filter(|q| judged.contains(*q)).count(),
                    judgements: qrels.len(),
                    corpus_checksum: crate::sample::checksum(&corpus_rows),
                    duplicate_document_ids,
                    duplicate_query_ids,
                    qrels_to_missing_documents: qrels
                        .iter()
                        .filter(|j| !seen.contains(j.doc.as_str()))
                        .map(|j| j.line)
                        .take(20)
                        .collect(),
                    qrels_to_missing_queries: qrels
                        .iter()
                        .filter(|j| !seen_queries.contains(j.query.as_str()))
                        .map(|j| j.line)
                        .take(20)
                        .collect(),
                    files,
                    path,
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
        let found = self.find(name, split)?;
        let path = found.path().to_owned();
        match found.kind() {
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
                    files: loaded.files,
                })
            }
            DatasetKind::Beir => {
                let corpus_path = path.join("corpus.jsonl");
                let files = self.checks(&found, split, &["corpus.jsonl"])?;
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
                    files,
                })
            }
            other => Err(DataError::WrongKind {
                dataset: name.to_owned(),
                actual: other.name(),
                expected: "documents, document-summary or beir",
            }),
        }
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
kind_of!(crate::ClassedPair => PairClasses, ParaphrasePairs, PairClassification);
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

/// A repeated `_id` is refused at its second line: qrels name documents and queries by id, so a
/// repeat would make a judgement mean whichever copy a map kept.
fn unique_ids<T: Row>(path: &Path, rows: &[(usize, T)]) -> Result<()> {
    let mut first = FirstLines::default();
    for (line, row) in rows {
        if let Some(id) = row.id() {
            first.check(path, *line, id)?;
        }
    }
    Ok(())
}

/// The line each id was first seen on, for [`unique_ids`] over rows in memory or streamed.
#[derive(Default)]
struct FirstLines(HashMap<String, usize>);

impl FirstLines {
    /// `id` on `line`: an error naming both lines when it was seen before.
    fn check(&mut self, path: &Path, line: usize, id: &str) -> Result<()> {
        match self.0.get(id) {
            Some(earlier) => Err(parse_error(
                path,
                line,
                format!("_id {id:?} again (first on line {earlier})"),
            )),
            None => {
                self.0.insert(id.to_owned(), line);
                Ok(())
            }
        }
    }
}

/// Whether a row has an empty (or whitespace-only) text: what every empty-text policy acts on.
fn has_empty_text<T: Row>(row: &T) -> bool {
    row.texts().iter().any(|t| t.trim().is_empty())
}

/// Splits off the lines of rows with an empty (or whitespace-only) text.
fn with_empty_lines<T: Row>(rows: Vec<(usize, T)>) -> (Vec<(usize, T)>, Vec<usize>) {
    let empty = rows
        .iter()
        .filter(|(_, r)| has_empty_text(r))
        .map(|(line, _)| *line)
        .collect();
    (rows, empty)
}
