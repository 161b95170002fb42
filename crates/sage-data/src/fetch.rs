//! `sage data fetch`: a registered dataset from the Hugging Face hub into the local layout.
//!
//! Each file the registry names for a split is resolved through sage-hub (cache first; a
//! download into the hub cache unless `HF_HUB_OFFLINE` is set), read — JSON lines, gzipped or
//! zipped JSON lines, or Parquet (through polars, nested columns included) — mapped onto our
//! schema by the registry's column paths, and written atomically to the split's local path,
//! where every loader finds it. BEIR sets are read from MTEB's copies, which keep corpus, queries
//! and each split's judgements (`qrels/<split>.jsonl`, written as BEIR's `qrels/<split>.tsv`) in
//! one repository.
//!
//! ## Column paths
//!
//! Each registry column is `(ours, theirs)`, `theirs` a path into a source record: `a.b` (nested
//! field), `a[2]` (list element), `a[]` (every element: the record is *exploded* into one row per
//! element, all `[]` columns of a record in step), `{index}` (the element's index, as a string),
//! `x+SEP+y` (fields joined with the literal SEP), `{file}` (the name of the file the record
//! came from, up to its first dot), `{folder}` (the folder it is in: MTEB's per-subset
//! Parquet, `de/test-00000-of-00001.parquet`) and `{row}` (the record's 0-based position in its
//! file: an id for sources without one, BillSum's). A missing field is an error naming the
//! file and row.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use hf_hub::{Repo, RepoType};
use sage_hub::HubSettings;
use serde::Serialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::error::{parse_error, DataError, Result};
use crate::load::DataRoot;
use crate::registry::{entry, DatasetEntry, DatasetKind, HubSource, HubTransform};

/// What one fetched split became.
#[derive(Clone, Debug, Serialize)]
pub struct Fetched {
    /// Registry name.
    pub dataset: String,
    /// Split.
    pub split: String,
    /// Hub files read (in the hub cache).
    pub sources: Vec<PathBuf>,
    /// Files written in the local layout.
    pub written: Vec<PathBuf>,
    /// Rows written (BEIR: corpus documents).
    pub rows: usize,
    /// The hub commit the files came from, when the cache records it.
    pub revision: Option<String>,
    /// Already local and left alone (no overwrite asked).
    pub skipped: bool,
}

/// The most a zipped hub file may unpack to: a bound on what a damaged or hostile archive can
/// make us allocate, far above any registered dataset's file.
const UNZIPPED_LIMIT: u64 = 4 << 30;

/// Reads every record of a hub file as JSON: JSON lines, gzipped or zipped (one file in the
/// archive), or Parquet.
fn read_records(path: &Path) -> Result<Vec<Value>> {
    let io = |e: std::io::Error| DataError::Io {
        path: path.to_owned(),
        message: e.to_string(),
    };
    let name = path.to_string_lossy();
    if name.ends_with(".parquet") {
        return read_parquet(path);
    }
    let file = File::open(path).map_err(io)?;
    let reader: Box<dyn Read> = if name.ends_with(".gz") {
        Box::new(flate2::read::MultiGzDecoder::new(file))
    } else if name.ends_with(".zip") {
        let bytes = std::fs::read(path).map_err(io)?;
        let member = crate::rebuild::archive::zip_member(
            &bytes,
            crate::rebuild::archive::SOLE_MEMBER,
            UNZIPPED_LIMIT,
        )
        .map_err(|message| DataError::Io {
            path: path.to_owned(),
            message,
        })?;
        Box::new(std::io::Cursor::new(member))
    } else {
        Box::new(file)
    };
    let mut records = Vec::new();
    for (i, line) in BufReader::new(reader).lines().enumerate() {
        let line = line.map_err(io)?;
        if line.trim().is_empty() {
            continue;
        }
        records.push(
            serde_json::from_str(&line)
                .map_err(|e| parse_error(path, i + 1, format!("not JSON: {e}")))?,
        );
    }
    Ok(records)
}

fn read_parquet(path: &Path) -> Result<Vec<Value>> {
    use polars::prelude::{JsonFormat, JsonWriter, ParquetReader, SerReader, SerWriter};
    let fail = |e: polars::error::PolarsError| DataError::Io {
        path: path.to_owned(),
        message: format!("reading Parquet: {e}"),
    };
    let file = File::open(path).map_err(|e| DataError::Io {
        path: path.to_owned(),
        message: e.to_string(),
    })?;
    let mut frame = ParquetReader::new(file).finish().map_err(fail)?;
    let mut lines = Vec::new();
    JsonWriter::new(&mut lines)
        .with_json_format(JsonFormat::JsonLines)
        .finish(&mut frame)
        .map_err(fail)?;
    lines
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_slice(l)
                .map_err(|e| parse_error(path, i + 1, format!("row as JSON: {e}")))
        })
        .collect()
}

/// One step of a column path.
enum Step<'a> {
    Field(&'a str),
    Index(usize),
    Each,
}

fn steps(path: &str) -> Vec<Step<'_>> {
    let mut out = Vec::new();
    for part in path.split('.') {
        let (name, mut rest) = part.split_at(part.find('[').unwrap_or(part.len()));
        if !name.is_empty() {
            out.push(Step::Field(name));
        }
        while let Some(close) = rest.find(']') {
            let inner = &rest[1..close];
            out.push(match inner.parse() {
                Ok(i) => Step::Index(i),
                Err(_) => Step::Each,
            });
            rest = &rest[close + 1..];
        }
    }
    out
}

/// The value at `path` in `record`, `[]` taken as element `each`.
fn resolve<'v>(record: &'v Value, path: &str, each: Option<usize>) -> Option<&'v Value> {
    let mut at = record;
    for step in steps(path) {
        at = match step {
            Step::Field(name) => at.get(name)?,
            Step::Index(i) => at.get(i)?,
            Step::Each => at.get(each?)?,
        };
    }
    Some(at)
}

/// How many rows `record` explodes into under `columns` (1 without `[]` paths).
fn explode_len(
    record: &Value,
    columns: &[(&str, &str)],
) -> std::result::Result<Option<usize>, String> {
    let mut len = None;
    for (_, theirs) in columns {
        for part in theirs.split('+').step_by(2) {
            if let Some(cut) = part.find("[]") {
                let list = resolve(record, &part[..cut], None)
                    .and_then(Value::as_array)
                    .ok_or_else(|| format!("{:?} is not a list", &part[..cut]))?;
                match len {
                    Some(n) if n != list.len() => {
                        return Err(format!(
                            "lists of different lengths ({n} and {} at {:?})",
                            list.len(),
                            &part[..cut]
                        ))
                    }
                    _ => len = Some(list.len()),
                }
            }
        }
    }
    Ok(len)
}

/// Our rows from one source record.
pub fn map_record(
    record: &Value,
    columns: &[(&str, &str)],
) -> std::result::Result<Vec<Value>, String> {
    let rows = explode_len(record, columns)?;
    let one = |each: Option<usize>| -> std::result::Result<Value, String> {
        let mut row = Map::new();
        for (ours, theirs) in columns {
            let value = if *theirs == "{index}" {
                Value::String(each.unwrap_or(0).to_string())
            } else if theirs.contains('+') {
                let mut joined = String::new();
                for (k, part) in theirs.split('+').enumerate() {
                    if k % 2 == 1 {
                        joined.push_str(part);
                        continue;
                    }
                    match resolve(record, part, each).ok_or_else(|| format!("no field {part:?}"))? {
                        Value::String(s) => joined.push_str(s),
                        other => joined.push_str(&other.to_string()),
                    }
                }
                Value::String(joined)
            } else if theirs.contains('|') {
                theirs
                    .split('|')
                    .find_map(|path| resolve(record, path, each).filter(|v| !v.is_null()))
                    .cloned()
                    .ok_or_else(|| format!("none of {theirs:?} is present and not null"))?
            } else {
                resolve(record, theirs, each)
                    .cloned()
                    .ok_or_else(|| format!("no field {theirs:?}"))?
            };
            row.insert((*ours).to_owned(), value);
        }
        Ok(Value::Object(row))
    };
    match rows {
        None => Ok(vec![one(None)?]),
        Some(n) => (0..n).map(|i| one(Some(i))).collect(),
    }
}

/// BEIR's corpus, queries and judgements (as MTEB's JSON-lines qrels) from records of one
/// question and its answers ([`HubTransform::QuestionAnswers`] gives the rule, MTEB's).
#[allow(clippy::type_complexity)]
fn question_answers(
    records: &[(PathBuf, Value)],
    question: &str,
    answer_prefix: &str,
) -> Result<(Vec<Value>, Vec<Value>, Vec<Value>)> {
    let words = |s: &str| s.split(' ').count();
    let (mut corpus, mut queries, mut qrels) = (Vec::new(), Vec::new(), Vec::new());
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut n = 0usize;
    for (i, (path, record)) in records.iter().enumerate() {
        let Some(Value::Object(fields)) = Some(record) else {
            return Err(parse_error(path, i + 1, "a record is not an object"));
        };
        let q = match fields.get(question) {
            Some(Value::String(q)) => q,
            _ => {
                return Err(parse_error(
                    path,
                    i + 1,
                    format!("no text field {question:?}"),
                ))
            }
        };
        // the answer columns in the source's order (`Answer 1` … `Answer 10`): a record read
        // here keeps its keys sorted as text, so they are put back in the order of the number
        // they end with
        let mut columns: Vec<(&String, &Value)> = fields
            .iter()
            .filter(|(k, _)| k.starts_with(answer_prefix))
            .collect();
        columns.sort_by_key(|(k, _)| {
            let digits: String = k.chars().rev().take_while(char::is_ascii_digit).collect();
            let number: u64 = digits
                .chars()
                .rev()
                .collect::<String>()
                .parse()
                .unwrap_or(0);
            (number, (*k).clone())
        });
        let answers: Vec<&str> = columns
            .iter()
            .filter_map(|(_, v)| v.as_str())
            .filter(|a| !a.is_empty() && words(a) > 3)
            .collect();
        if words(q) < 4 && !answers.is_empty() {
            continue;
        }
        let query_id = n.to_string();
        queries.push(serde_json::json!({"_id": query_id, "text": q}));
        n += 1;
        for answer in answers {
            let id = match seen.get(answer) {
                Some(&id) => id,
                None => {
                    seen.insert(answer.to_owned(), n);
                    corpus.push(
                        serde_json::json!({"_id": n.to_string(), "title": "", "text": answer}),
                    );
                    n += 1;
                    n - 1
                }
            };
            qrels.push(serde_json::json!({
                "query-id": query_id,
                "corpus-id": id.to_string(),
                "score": 1
            }));
        }
    }
    Ok((corpus, queries, qrels))
}

/// BEIR's `qrels/<split>.tsv` (`query-id TAB corpus-id TAB score` under that header) from
/// MTEB's JSON-lines judgements, written atomically.
fn write_qrels_tsv(gate: &Gate<'_>, target: &Path, source: &Path, records: &[Value]) -> Result<()> {
    let mut text = String::from("query-id\tcorpus-id\tscore\n");
    for (i, record) in records.iter().enumerate() {
        let field = |key: &str| -> Result<String> {
            match record.get(key) {
                Some(Value::String(s)) => Ok(s.clone()),
                Some(Value::Number(n)) => Ok(n.to_string()),
                _ => Err(parse_error(source, i + 1, format!("no field {key:?}"))),
            }
        };
        let (query, doc, score) = (field("query-id")?, field("corpus-id")?, field("score")?);
        if [&query, &doc].iter().any(|s| s.contains(['\t', '\n'])) {
            return Err(parse_error(
                source,
                i + 1,
                "an id holds a TAB or a line break",
            ));
        }
        text.push_str(&format!("{query}\t{doc}\t{score}\n"));
    }
    gate.write(target, text.as_bytes())
}

/// Writes JSON lines atomically (a temporary file renamed into place), through `gate`.
fn write_jsonl<'a>(
    gate: &Gate<'_>,
    path: &Path,
    rows: impl Iterator<Item = &'a Value>,
) -> Result<usize> {
    let io = |e: std::io::Error| DataError::Io {
        path: path.to_owned(),
        message: e.to_string(),
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let tmp = path.with_extension("partial");
    let mut out = Hashing {
        out: std::io::BufWriter::new(File::create(&tmp).map_err(io)?),
        sha: Sha256::new(),
    };
    let mut n = 0;
    for row in rows {
        serde_json::to_writer(&mut out, row).map_err(|e| io(e.into()))?;
        out.write_all(b"\n").map_err(io)?;
        n += 1;
    }
    let sha = crate::sample::hex(&out.sha.finalize());
    out.out
        .into_inner()
        .map_err(|e| io(e.into_error()))?
        .sync_all()
        .map_err(io)?;
    if let Err(e) = gate.admit(path, &sha) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    std::fs::rename(&tmp, path).map_err(io)?;
    Ok(n)
}

/// A writer that hashes what passes through it.
struct Hashing<W> {
    out: W,
    sha: Sha256,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(bytes)?;
        self.sha.update(&bytes[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// What a fetch may place: a file made from the hub whose sha256 is recorded (a lock) must come
/// out as those bytes, or it is refused and the recorded file stays; every file placed is
/// remembered, so the fetch can record it.
struct Gate<'a> {
    root: &'a Path,
    made: std::cell::RefCell<BTreeMap<String, String>>,
}

impl Gate<'_> {
    /// The path of `dest` under the data root, `/`-separated, as pins and locks name files.
    fn relative(&self, dest: &Path) -> String {
        let rel = dest.strip_prefix(self.root).unwrap_or(dest);
        rel.components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/")
    }

    /// Checks that `dest` may become the bytes of sha256 `sha`, and remembers it.
    fn admit(&self, dest: &Path, sha: &str) -> Result<()> {
        let rel = self.relative(dest);
        match crate::verify::expected(self.root, &rel)? {
            Some(crate::verify::Expected::Lock { sha256, by }) if sha256 != sha => {
                return Err(DataError::Io {
                    path: dest.to_owned(),
                    message: format!(
                        "the hub's files now make other bytes than the ones recorded: {by} \
                         records {sha256}, this fetch made {sha}; the recorded file is left as \
                         it was. The revision's files changed (a moving branch, or a damaged \
                         hub cache); to accept the new bytes, remove the entry from {by}"
                    ),
                });
            }
            // a hub copy of a pinned dataset is what its hub copy is; the pin stays the pin's
            Some(crate::verify::Expected::Pin(_)) => {}
            _ => {
                self.made.borrow_mut().insert(rel, sha.to_owned());
            }
        }
        Ok(())
    }

    /// Writes `bytes` at `dest` atomically, once admitted.
    fn write(&self, dest: &Path, bytes: &[u8]) -> Result<()> {
        self.admit(dest, &crate::sample::hex(&Sha256::digest(bytes)))?;
        if let Some(dir) = dest.parent() {
            std::fs::create_dir_all(dir).map_err(|e| DataError::Io {
                path: dir.to_owned(),
                message: e.to_string(),
            })?;
        }
        sage_core::write_atomically(dest, bytes).map_err(|e| DataError::Io {
            path: dest.to_owned(),
            message: e.to_string(),
        })
    }
}

fn hub_file(
    hub: &HubSettings,
    dataset: &str,
    repo: &Repo,
    file: &str,
    local: &Path,
) -> Result<PathBuf> {
    hub.get(
        repo,
        file,
        &format!("put the converted files at {}", local.display()),
    )
    .map_err(|source| DataError::Hub {
        dataset: dataset.to_owned(),
        source,
    })
}

fn fetch_split(
    root: &DataRoot,
    e: &DatasetEntry,
    source: &HubSource,
    split: &str,
    hub: &HubSettings,
    gate: &Gate<'_>,
) -> Result<Fetched> {
    let repo = Repo::with_revision(
        source.repo.to_owned(),
        RepoType::Dataset,
        source.revision.to_owned(),
    );
    let local = root
        .root()
        .ok_or(DataError::NoRoot)?
        .join(e.local_path(split));
    let mut sources = Vec::new();
    let mut written = Vec::new();
    let mut rows = 0;
    if let (
        DatasetKind::Beir,
        Some(HubTransform::QuestionAnswers {
            question,
            answer_prefix,
        }),
    ) = (e.kind, source.transform)
    {
        let mut records = Vec::new();
        for file in source.files {
            let path = hub_file(hub, e.name, &repo, file, &local)?;
            records.extend(read_records(&path)?.into_iter().map(|r| (path.clone(), r)));
            sources.push(path);
        }
        let (corpus, queries, qrels) = question_answers(&records, question, answer_prefix)?;
        rows = corpus.len();
        written.push(local.join("corpus.jsonl"));
        write_jsonl(gate, &written[0], corpus.iter())?;
        written.push(local.join("queries.jsonl"));
        write_jsonl(gate, &written[1], queries.iter())?;
        let target = local.join("qrels").join(format!("{split}.tsv"));
        write_qrels_tsv(gate, &target, &sources[0], &qrels)?;
        written.push(target);
    } else if e.kind == DatasetKind::Beir {
        let mut qrels_here = false;
        for file in source.files {
            let file = file.replace("{split}", split);
            let path = hub_file(hub, e.name, &repo, &file, &local)?;
            let records = read_records(&path)?;
            let name = file.trim_end_matches(".gz");
            if name.starts_with("qrels/") {
                // MTEB's own copies keep the judgements beside the corpus, as JSON lines
                let target = local.join("qrels").join(format!("{split}.tsv"));
                write_qrels_tsv(gate, &target, &path, &records)?;
                sources.push(path);
                written.push(target);
                qrels_here = true;
                continue;
            }
            let n = write_jsonl(gate, &local.join(name), records.iter())?;
            if name.starts_with("corpus") {
                rows = n;
            }
            sources.push(path);
            written.push(local.join(name));
        }
        if !qrels_here {
            return Err(DataError::NoSource {
                dataset: e.name.to_owned(),
                hint: format!("its hub copy names no qrels file for split {split}"),
            });
        }
    } else {
        let mut out = Vec::new();
        for file in source.files {
            let file = file.replace("{split}", split);
            let path = hub_file(hub, e.name, &repo, &file, &local)?;
            // `{file}`: the file's name up to its first dot (MTEB's STS17 keeps each language
            // pair in a file of its own, `test/en-de.jsonl.gz`)
            let mut parts = file.rsplit('/');
            let stem = parts
                .next()
                .and_then(|name| name.split('.').next())
                .unwrap_or_default();
            let folder = parts.next().unwrap_or_default();
            let (by_position, columns): (Vec<_>, Vec<_>) = source
                .columns
                .iter()
                .copied()
                .partition(|(_, theirs)| matches!(*theirs, "{file}" | "{folder}" | "{row}"));
            for (i, record) in read_records(&path)?.iter().enumerate() {
                let mut rows =
                    map_record(record, &columns).map_err(|m| parse_error(&path, i + 1, m))?;
                for row in &mut rows {
                    if let Value::Object(row) = row {
                        for (ours, theirs) in &by_position {
                            let value = match *theirs {
                                "{file}" => stem.to_owned(),
                                "{folder}" => folder.to_owned(),
                                _ => i.to_string(),
                            };
                            row.insert((*ours).to_owned(), Value::String(value));
                        }
                    }
                }
                out.extend(rows);
            }
            sources.push(path);
        }
        rows = write_jsonl(gate, &local, out.iter())?;
        written.push(local);
    }
    Ok(Fetched {
        dataset: e.name.to_owned(),
        split: split.to_owned(),
        sources,
        written,
        rows,
        revision: hub.cached_commit(&repo),
        skipped: false,
    })
}

/// Fetches `splits` (all of the dataset's when empty) of `name` into `root`'s layout. Splits
/// already local are left alone unless `overwrite`.
pub fn fetch(
    root: &DataRoot,
    name: &str,
    splits: &[&str],
    hub: &HubSettings,
    overwrite: bool,
) -> Result<Vec<Fetched>> {
    let e = entry(name).ok_or_else(|| DataError::UnknownDataset {
        name: name.to_owned(),
    })?;
    let source = e.hub.as_ref().ok_or_else(|| DataError::NoHubSource {
        dataset: name.to_owned(),
        hint: root.root().map_or_else(
            || format!("<data root>/{}", e.local_path("<split>")),
            |r| r.join(e.local_path("<split>")).display().to_string(),
        ),
    })?;
    let splits: Vec<&str> = if splits.is_empty() {
        e.splits.to_vec()
    } else {
        splits.to_vec()
    };
    if let Some(unknown) = splits.iter().find(|s| !e.splits.contains(s)) {
        return Err(DataError::UnknownSplit {
            dataset: name.to_owned(),
            split: (*unknown).to_owned(),
            available: e.splits.iter().map(|s| s.to_string()).collect(),
        });
    }
    let folder = root.root().ok_or(DataError::NoRoot)?;
    // one fetch or rebuild at a time per data folder: the provenance record is shared
    let _lock = crate::rebuild::lock_folder(folder)?;
    let gate = Gate {
        root: folder,
        made: Default::default(),
    };
    let mut done = Vec::new();
    let mut fetched = Ok(());
    for split in splits {
        if !overwrite && root.is_local(e, split) {
            done.push(Fetched {
                dataset: name.to_owned(),
                split: split.to_owned(),
                sources: Vec::new(),
                written: Vec::new(),
                rows: 0,
                revision: None,
                skipped: true,
            });
            continue;
        }
        match fetch_split(root, e, source, split, hub, &gate) {
            Ok(split) => done.push(split),
            Err(error) => {
                fetched = Err(error);
                break;
            }
        }
    }
    // what was placed is recorded even when a later split failed: it is on disk
    record_made(folder, e, source, &gate.made.borrow())?;
    fetched.map(|()| done)
}

/// Adds the sha256 of the files a hub fetch made to the data folder's provenance record, under
/// the dataset with its licence and source: the lock later fetches and every load check against
/// ([`crate::verify`]). Files already recorded keep their entry (a changed one was refused).
fn record_made(
    folder: &Path,
    e: &DatasetEntry,
    source: &HubSource,
    made: &BTreeMap<String, String>,
) -> Result<()> {
    if made.is_empty() {
        return Ok(());
    }
    let mut record = crate::verify::read_provenance(folder)?;
    let licence = crate::pins::Pins::active()
        .ok()
        .and_then(|p| p.dataset(e.name))
        .map(|d| d.licence.clone());
    let entry = record
        .entry(e.name.to_owned())
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(entry) = entry else {
        return Err(DataError::Io {
            path: folder.join(crate::verify::PROVENANCE),
            message: format!("its entry for {} is not an object", e.name),
        });
    };
    if let Some(licence) = licence {
        entry.insert("licence".into(), Value::String(licence));
    }
    entry.insert(
        "origins".into(),
        Value::Array(vec![Value::String(format!(
            "hf:{}@{}",
            source.repo, source.revision
        ))]),
    );
    let files = entry
        .entry("files")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(files) = files {
        for (path, sha) in made {
            files
                .entry(path.clone())
                .or_insert_with(|| Value::String(sha.clone()));
        }
    }
    let mut bytes = serde_json::to_vec_pretty(&record).map_err(|e| DataError::Io {
        path: folder.join(crate::verify::PROVENANCE),
        message: e.to_string(),
    })?;
    bytes.push(b'\n');
    let path = folder.join(crate::verify::PROVENANCE);
    sage_core::write_atomically(&path, &bytes).map_err(|e| DataError::Io {
        path,
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;
    use crate::{DocumentSummary, LabeledText, SummaryComparison};

    const COMMIT: &str = "1111111111111111111111111111111111111111";

    /// The commit the registry pins `repo` at, else [`COMMIT`] (the branch head's).
    fn commit_of(repo: &str) -> &'static str {
        crate::REGISTRY
            .iter()
            .filter_map(|e| e.hub)
            .find(|h| h.repo == repo && h.revision != "main")
            .map_or(COMMIT, |h| h.revision)
    }

    /// A hub cache as huggingface_hub lays it out, written by the test: the file under
    /// `datasets--owner--name/snapshots/<commit>/`, `refs/<revision>` naming the commit (the
    /// revision the registry pins, else main).
    fn put(cache: &Path, repo: &str, file: &str, bytes: &[u8]) {
        let folder = cache.join(format!("datasets--{}", repo.replace('/', "--")));
        let commit = commit_of(repo);
        let path = folder.join("snapshots").join(commit).join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
        std::fs::create_dir_all(folder.join("refs")).unwrap();
        let revision = if commit == COMMIT { "main" } else { commit };
        std::fs::write(folder.join("refs").join(revision), commit).unwrap();
    }

    fn gz(text: &str) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(text.as_bytes()).unwrap();
        e.finish().unwrap()
    }

    /// Parquet with nested columns, made by polars from JSON lines.
    fn parquet(json_lines: &str) -> Vec<u8> {
        use polars::prelude::{JsonFormat, JsonReader, ParquetWriter, SerReader};
        let mut frame = JsonReader::new(Cursor::new(json_lines.as_bytes().to_vec()))
            .with_json_format(JsonFormat::JsonLines)
            .finish()
            .unwrap();
        let mut out = Vec::new();
        ParquetWriter::new(&mut out).finish(&mut frame).unwrap();
        out
    }

    fn offline(cache: &Path) -> HubSettings {
        HubSettings::offline_at(cache)
    }

    #[test]
    fn mteb_clustering_explodes_into_rows() {
        let tmp = tempfile::tempdir().unwrap();
        let (cache, data) = (tmp.path().join("hub"), tmp.path().join("data"));
        put(
            &cache,
            "mteb/twentynewsgroups-clustering",
            "test.jsonl.gz",
            &gz(concat!(
                "{\"sentences\": [\"a\", \"b\", \"c\"], \"labels\": [\"x\", \"y\", \"x\"]}\n",
                "{\"sentences\": [\"d\"], \"labels\": [\"z\"]}\n"
            )),
        );
        let root = DataRoot::new(&data);
        let got = fetch(&root, "twentynewsgroups", &[], &offline(&cache), false).unwrap();
        assert_eq!(
            (got[0].rows, got[0].revision.as_deref()),
            (4, Some(commit_of("mteb/twentynewsgroups-clustering")))
        );
        let rows = root
            .load::<LabeledText>("twentynewsgroups", "test")
            .unwrap()
            .rows;
        let labels: Vec<&str> = rows.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(labels, ["x", "y", "x", "z"]);
        // a second fetch leaves the local copy alone
        assert!(fetch(&root, "twentynewsgroups", &[], &offline(&cache), false).unwrap()[0].skipped);
    }

    #[test]
    fn summarize_from_feedback_parquet_with_nested_columns() {
        let tmp = tempfile::tempdir().unwrap();
        let (cache, data) = (tmp.path().join("hub"), tmp.path().join("data"));
        let lines = concat!(
            "{\"info\": {\"id\": \"t3_1\", \"post\": \"My post.\", \"title\": \"T\"}, ",
            "\"summaries\": [{\"text\": \"good\", \"policy\": \"sup\"}, {\"text\": \"bad\", \"policy\": \"ref\"}], ",
            "\"choice\": 0, \"worker\": \"w1\"}\n",
            "{\"info\": {\"id\": \"t3_2\", \"post\": \"Other post.\", \"title\": \"U\"}, ",
            "\"summaries\": [{\"text\": \"meh\", \"policy\": \"sup\"}, {\"text\": \"fine\", \"policy\": \"ref\"}], ",
            "\"choice\": 1, \"worker\": \"w2\"}\n",
            // a CNN/DailyMail batch: an article and a null post
            "{\"info\": {\"id\": \"cnn-1\", \"post\": null, \"article\": \"(CNN) News.\"}, ",
            "\"summaries\": [{\"text\": \"short\", \"policy\": \"sup\"}, {\"text\": \"long\", \"policy\": \"ref\"}], ",
            "\"choice\": 1, \"worker\": \"w3\"}\n"
        );
        put(
            &cache,
            "openai/summarize_from_feedback",
            "comparisons/validation/0000.parquet",
            &parquet(lines),
        );
        let root = DataRoot::new(&data);
        let hub = offline(&cache);
        fetch(
            &root,
            "summarize-from-feedback-comparisons",
            &["validation"],
            &hub,
            false,
        )
        .unwrap();
        let rows = root
            .load::<SummaryComparison>("summarize-from-feedback-comparisons", "validation")
            .unwrap()
            .rows;
        assert_eq!(rows.len(), 3);
        assert_eq!(
            (
                rows[1].id.as_str(),
                rows[1].post.as_str(),
                rows[1].summary_1.as_str(),
                rows[1].choice
            ),
            ("t3_2", "Other post.", "fine", 1)
        );
        assert_eq!(
            (rows[2].id.as_str(), rows[2].post.as_str()),
            ("cnn-1", "(CNN) News.")
        );
    }

    /// SAGE's test splits of BillSum and CNN/DailyMail from their owners' Parquet copies at the
    /// commits the registry pins: BillSum has no id, so its rows are numbered by `{row}`.
    #[test]
    fn sage_test_splits_come_from_the_owners_copies() {
        let tmp = tempfile::tempdir().unwrap();
        let (cache, data) = (tmp.path().join("hub"), tmp.path().join("data"));
        put(
            &cache,
            "FiscalNote/billsum",
            "data/test-00000-of-00001.parquet",
            &parquet(
                "{\"text\": \"SECTION 1. SHORT TITLE.\", \"summary\": \"Amends the Act.\", \"title\": \"A bill\"}\n\
                 {\"text\": \"SEC. 2. FINDINGS.\", \"summary\": \"Requires a report.\", \"title\": \"Another bill\"}\n",
            ),
        );
        put(
            &cache,
            "abisee/cnn_dailymail",
            "3.0.0/test-00000-of-00001.parquet",
            &parquet(
                "{\"article\": \"(CNN) A storm hit.\", \"highlights\": \"Storm hits.\", \"id\": \"f001\"}\n",
            ),
        );
        let root = DataRoot::new(&data);
        for name in ["billsum-test", "cnn-dailymail-test"] {
            let fetched = fetch(&root, name, &[], &offline(&cache), false).unwrap();
            assert_eq!(fetched.len(), 1);
            assert_eq!(fetched[0].split, "test");
            let revision = fetched[0].revision.as_deref().unwrap_or_default();
            assert_eq!(revision.len(), 40, "{name}: fetched at {revision:?}");
        }
        let bills = root
            .load::<DocumentSummary>("billsum-test", "test")
            .unwrap();
        let ids: Vec<&str> = bills.rows.iter().map(|b| b.id.as_str()).collect();
        assert_eq!(ids, ["0", "1"]);
        assert_eq!(bills.rows[1].summary, "Requires a report.");
        assert_eq!(bills.rows[1].title.as_deref(), Some("Another bill"));
        let news = root
            .load::<DocumentSummary>("cnn-dailymail-test", "test")
            .unwrap();
        assert_eq!(news.rows[0].id, "f001");
        assert_eq!(news.rows[0].text, "(CNN) A storm hit.");
    }

    /// MTEB's own BEIR copies (mteb/arguana at MTEB's pin): uncompressed JSON lines, and the
    /// judgements beside them as JSON lines, which become BEIR's qrels TSV.
    #[test]
    fn mteb_beir_copy_keeps_its_qrels_beside_the_corpus() {
        let tmp = tempfile::tempdir().unwrap();
        let (cache, data) = (tmp.path().join("hub"), tmp.path().join("data"));
        put(
            &cache,
            "mteb/arguana",
            "corpus.jsonl",
            b"{\"_id\": \"a1\", \"title\": \"\", \"text\": \"cats\"}\n{\"_id\": \"a2\", \"title\": \"\", \"text\": \"dogs\"}\n",
        );
        put(
            &cache,
            "mteb/arguana",
            "queries.jsonl",
            b"{\"_id\": \"a1\", \"text\": \"cats\"}\n",
        );
        put(
            &cache,
            "mteb/arguana",
            "qrels/test.jsonl",
            b"{\"query-id\": \"a1\", \"corpus-id\": \"a2\", \"score\": 1}\n",
        );
        let root = DataRoot::new(&data);
        let got = fetch(&root, "arguana", &["test"], &offline(&cache), false).unwrap();
        assert_eq!(
            got[0].revision.as_deref(),
            Some("c22ab2a51041ffd869aaddef7af8d8215647e41a")
        );
        let beir = root.beir("arguana", "test").unwrap();
        assert_eq!((beir.corpus.len(), beir.queries.len()), (2, 1));
        assert_eq!(beir.qrels["a1"]["a2"], 1);
        // a split other than test takes its own judgements (FiQA's dev, at MTEB's pin)
        for (file, bytes) in [
            (
                "corpus.jsonl",
                &b"{\"_id\": \"d1\", \"title\": \"\", \"text\": \"loans\"}\n"[..],
            ),
            (
                "queries.jsonl",
                b"{\"_id\": \"q9\", \"text\": \"rates?\"}\n",
            ),
            (
                "qrels/dev.jsonl",
                b"{\"query-id\": \"q9\", \"corpus-id\": \"d1\", \"score\": 1}\n",
            ),
        ] {
            put(&cache, "mteb/fiqa", file, bytes);
        }
        fetch(&root, "fiqa", &["dev"], &offline(&cache), false).unwrap();
        assert_eq!(root.beir("fiqa", "dev").unwrap().qrels["q9"]["d1"], 1);
    }

    /// TwitterHjerne as MTEB makes it from the source's question and answer columns: answers of
    /// more than 3 words, short questions with answers left out, one counter numbering queries
    /// and new answers, a repeated answer keeping its number, answers in column order.
    #[test]
    fn question_answer_records_become_a_beir_set_as_mtebs() {
        let tmp = tempfile::tempdir().unwrap();
        let (cache, data) = (tmp.path().join("hub"), tmp.path().join("data"));
        let lines = concat!(
            "{\"Question\": \"Hvor kan jeg købe kartofler i dag?\", \"Answer 1\": \"Økologiske er vel ok måske?\", \"Answer 2\": \"Nej\", \"Answer 10\": \"\"}\n",
            "{\"Question\": \"Hvem?\", \"Answer 1\": \"Det ved jeg ikke rigtig\", \"Answer 2\": null, \"Answer 10\": null}\n",
            "{\"Question\": \"Kort?\", \"Answer 1\": \"Nej\", \"Answer 2\": null, \"Answer 10\": null}\n",
            "{\"Question\": \"Hvad bruger I til medieovervågning?\", \"Answer 1\": \"Økologiske er vel ok måske?\", ",
            "\"Answer 2\": \"Infomedia og mnjah det er fint\", \"Answer 10\": \"Det var en god dag\"}\n"
        );
        put(
            &cache,
            "sorenmulli/da-hashtag-twitterhjerne",
            "data/train-00000-of-00001-52a08236c9c7dcd4.parquet",
            &parquet(lines),
        );
        let root = DataRoot::new(&data);
        let got = fetch(&root, "twitterhjerne", &[], &offline(&cache), false).unwrap();
        assert_eq!(got[0].rows, 3);
        let beir = root.beir("twitterhjerne", "train").unwrap();
        let corpus: Vec<(&str, &str)> = beir
            .corpus
            .iter()
            .map(|d| (d.id.as_str(), d.text.as_str()))
            .collect();
        assert_eq!(
            corpus,
            [
                ("1", "Økologiske er vel ok måske?"),
                ("4", "Infomedia og mnjah det er fint"),
                ("5", "Det var en god dag")
            ]
        );
        let mut judged: Vec<(&str, &str)> = beir
            .qrels
            .iter()
            .flat_map(|(q, docs)| docs.keys().map(move |d| (q.as_str(), d.as_str())))
            .collect();
        judged.sort_unstable();
        assert_eq!(judged, [("0", "1"), ("3", "1"), ("3", "4"), ("3", "5")]);
        assert!(beir
            .queries
            .iter()
            .any(|q| q.id == "3" && q.text.starts_with("Hvad bruger")));
        assert!(!beir.queries.iter().any(|q| q.text == "Hvem?"));
    }

    /// A subset named by the file (MTEB's STS17: `test/en-de.jsonl.gz`) or by its folder
    /// (MTEB's per-subset Parquet: `de/test-00000-of-00001.parquet`); its languages follow.
    #[test]
    fn subsets_are_named_by_file_or_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let (cache, data) = (tmp.path().join("hub"), tmp.path().join("data"));
        for pair in ["en-de", "fr-en", "it-en", "nl-en", "ko-ko"] {
            // one repository, two registry datasets (the Korean pairs are not the paper's)
            put(
                &cache,
                "mteb/sts17-crosslingual-sts",
                &format!("test/{pair}.jsonl.gz"),
                &gz(&format!(
                    "{{\"sentence1\": \"a {pair}\", \"sentence2\": \"b\", \"score\": 2.5}}\n"
                )),
            );
        }
        let root = DataRoot::new(&data);
        fetch(&root, "sts17-extra", &[], &offline(&cache), false).unwrap();
        fetch(&root, "sts17-ko", &[], &offline(&cache), false).unwrap();
        let korean = root
            .load::<crate::StsPair>("sts17-ko", "test")
            .unwrap()
            .rows;
        assert_eq!(korean[0].languages, ["kor-Hang", "kor-Hang"]);
        let rows = root
            .load::<crate::StsPair>("sts17-extra", "test")
            .unwrap()
            .rows;
        let got: Vec<(Option<&str>, Vec<&str>)> = rows
            .iter()
            .map(|r| {
                (
                    r.subset.as_deref(),
                    r.languages.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(got[0], (Some("en-de"), vec!["eng-Latn", "deu-Latn"]));
        assert_eq!(got.len(), 4);
        assert_eq!(got[3], (Some("nl-en"), vec!["nld-Latn", "eng-Latn"]));

        for subset in ["en", "en-ext", "de", "ja"] {
            put(
                &cache,
                "mteb/amazon_counterfactual",
                &format!("{subset}/test-00000-of-00001.parquet"),
                &parquet(&format!("{{\"text\": \"t {subset}\", \"label\": 1, \"label_text\": \"counterfactual\"}}\n")),
            );
        }
        fetch(
            &root,
            "amazon-counterfactual",
            &["test"],
            &offline(&cache),
            false,
        )
        .unwrap();
        let rows = root
            .load::<LabeledText>("amazon-counterfactual", "test")
            .unwrap()
            .rows;
        let got: Vec<(&str, Option<&str>, Vec<&str>)> = rows
            .iter()
            .map(|r| {
                (
                    r.text.as_str(),
                    r.subset.as_deref(),
                    r.languages.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(got[1], ("t en-ext", Some("en-ext"), vec!["eng-Latn"]));
        assert_eq!(got[3], ("t ja", Some("ja"), vec!["jpn-Jpan"]));
    }

    /// The paper's last two multilingual sets as their pins lay them out: MTEB's RTE3 as one
    /// Parquet per language (a pair a row, `labels` 0/1), ai-forever's RuBQ as one zipped JSON
    /// lines file of v1 reranking records.
    #[test]
    fn rte3_per_language_parquet_and_rubq_zipped_json_lines() {
        let tmp = tempfile::tempdir().unwrap();
        let (cache, data) = (tmp.path().join("hub"), tmp.path().join("data"));
        for (subset, label) in [("de", 1), ("en", 0), ("fr", 1), ("it", 0)] {
            put(
                &cache,
                "mteb/RTE3",
                &format!("{subset}/test-00000-of-00001.parquet"),
                &parquet(&format!(
                    "{{\"sentence1\": \"p {subset}\", \"sentence2\": \"h\", \"labels\": {label}}}\n"
                )),
            );
        }
        let root = DataRoot::new(&data);
        fetch(&root, "rte3", &[], &offline(&cache), false).unwrap();
        let rows = root
            .load::<crate::LabeledPair>("rte3", "test")
            .unwrap()
            .rows;
        let got: Vec<(&str, bool, Option<&str>, Vec<&str>)> = rows
            .iter()
            .map(|r| {
                (
                    r.sentence1.as_str(),
                    r.label,
                    r.subset.as_deref(),
                    r.languages.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(got.len(), 4);
        // a pair's languages are one per side
        assert_eq!(got[0], ("p de", true, Some("de"), vec!["deu-Latn"; 2]));
        assert_eq!(got[3], ("p it", false, Some("it"), vec!["ita-Latn"; 2]));

        let records = concat!(
            "{\"query\": \"Кто написал «Войну и мир»?\", \"positive\": [\"Лев Толстой\"], \"negative\": [\"Пушкин\", \"Гоголь\"]}\n",
            "{\"query\": \"Столица России?\", \"positive\": [\"Москва\"], \"negative\": [\"Казань\"]}\n"
        );
        put(
            &cache,
            "ai-forever/rubq-reranking",
            "test.jsonl.zip",
            &crate::rebuild::archive::tests::zip_of("test.jsonl", records.as_bytes()),
        );
        let got = fetch(&root, "rubq-reranking", &[], &offline(&cache), false).unwrap();
        assert_eq!(got[0].rows, 2);
        let queries = root
            .load::<crate::RerankingQuery>("rubq-reranking", "test")
            .unwrap()
            .rows;
        assert_eq!(queries[0].positive, ["Лев Толстой"]);
        assert_eq!(queries[1].negative, ["Казань"]);
        assert_eq!(
            crate::entry("rubq-reranking").unwrap().language,
            Some("rus-Cyrl")
        );

        // a zip of two files is not guessed at
        put(
            &cache,
            "ai-forever/rubq-reranking",
            "test.jsonl.zip",
            &crate::rebuild::archive::tests::zips_of(&[
                ("test.jsonl", records.as_bytes()),
                ("dev.jsonl", records.as_bytes()),
            ]),
        );
        let e = fetch(&root, "rubq-reranking", &[], &offline(&cache), true)
            .unwrap_err()
            .to_string();
        assert!(e.contains("test.jsonl.zip") && e.contains("2 files"), "{e}");
    }

    /// Issue 80, point 6: the first fetch of a hub-only dataset records the sha256 of each file
    /// it makes; a later fetch whose files come out otherwise is refused and leaves the recorded
    /// file alone; a load checks the file against the record, says `lock` in the rows' record,
    /// and refuses the file once it is changed.
    #[test]
    fn hub_made_files_are_locked_at_first_fetch_and_checked_after() {
        let tmp = tempfile::tempdir().unwrap();
        let (cache, data) = (tmp.path().join("hub"), tmp.path().join("data"));
        let first = "{\"sentences\": [\"a\", \"b\", \"c\"], \"labels\": [\"x\", \"y\", \"x\"]}\n";
        put(
            &cache,
            "mteb/arxiv-clustering-s2s",
            "test.jsonl.gz",
            &gz(first),
        );
        let root = DataRoot::new(&data);
        fetch(&root, "arxiv-s2s", &[], &offline(&cache), false).unwrap();
        let provenance: Value =
            serde_json::from_slice(&std::fs::read(data.join("PROVENANCE.json")).unwrap()).unwrap();
        let file = "clustering/arxiv_s2s/test.jsonl";
        let recorded = provenance["arxiv-s2s"]["files"][file]
            .as_str()
            .unwrap()
            .to_owned();
        assert_eq!(
            recorded,
            crate::verify::sha256_of(&data.join(file)).unwrap()
        );
        assert!(provenance["arxiv-s2s"]["origins"][0]
            .as_str()
            .unwrap()
            .starts_with("hf:mteb/arxiv-clustering-s2s@"));
        let loaded = root.load::<LabeledText>("arxiv-s2s", "test").unwrap();
        assert_eq!(loaded.files[0].verified, crate::verify::Verified::Lock);
        let (_, rows) = crate::sample(&loaded, None, sage_core::RunSeed(1));
        assert_eq!(
            rows.files, loaded.files,
            "the result's record carries the check"
        );

        // the hub copy changed under the same revision: refused, the recorded file kept
        let kept = std::fs::read(data.join(file)).unwrap();
        put(
            &cache,
            "mteb/arxiv-clustering-s2s",
            "test.jsonl.gz",
            &gz(&first.replace("\"c\"", "\"changed\"")),
        );
        let e = fetch(&root, "arxiv-s2s", &[], &offline(&cache), true)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("other bytes than the ones recorded") && e.contains(&recorded),
            "{e}"
        );
        assert_eq!(std::fs::read(data.join(file)).unwrap(), kept);
        assert!(!data.join("clustering/arxiv_s2s/test.partial").exists());

        // the file edited in place: every load refuses it, naming both sha256s
        std::fs::write(data.join(file), "{\"text\": \"a\", \"label\": \"x\"}\n").unwrap();
        let e = root
            .load::<LabeledText>("arxiv-s2s", "test")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("changed since its sha256 was recorded") && e.contains(&recorded),
            "{e}"
        );
    }

    #[test]
    fn offline_misses_and_bad_records_say_what_and_where() {
        let tmp = tempfile::tempdir().unwrap();
        let (cache, data) = (tmp.path().join("hub"), tmp.path().join("data"));
        let root = DataRoot::new(&data);
        let e = fetch(&root, "arxiv-s2s", &[], &offline(&cache), false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("HF_HUB_OFFLINE")
                && e.contains("huggingface-cli download --repo-type dataset mteb/arxiv-clustering-s2s test.jsonl.gz"),
            "{e}"
        );
        put(
            &cache,
            "mteb/arxiv-clustering-s2s",
            "test.jsonl.gz",
            &gz("{\"sentences\": [\"a\"], \"labels\": [\"x\"]}\n{\"sentences\": [\"a\", \"b\"], \"labels\": [\"x\"]}\n"),
        );
        let e = fetch(&root, "arxiv-s2s", &[], &offline(&cache), false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("test.jsonl.gz:2: lists of different lengths"),
            "{e}"
        );
        assert!(
            !root.root().unwrap().join("clustering").exists(),
            "nothing half-written"
        );
        let e = fetch(&root, "afin", &[], &offline(&cache), false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("has no hub source"), "{e}");
    }

    #[test]
    fn column_paths() {
        let record: Value = serde_json::json!({
            "a": {"b": [10, 20]}, "t": "Title", "c": "Body", "xs": ["p", "q"]
        });
        let rows = map_record(
            &record,
            &[
                ("first", "a.b[0]"),
                ("x", "xs[]"),
                ("i", "{index}"),
                ("tc", "t+\n+c"),
            ],
        )
        .unwrap();
        assert_eq!(
            rows,
            vec![
                serde_json::json!({"first": 10, "x": "p", "i": "0", "tc": "Title\nBody"}),
                serde_json::json!({"first": 10, "x": "q", "i": "1", "tc": "Title\nBody"}),
            ]
        );
        assert!(map_record(&record, &[("x", "nope")])
            .unwrap_err()
            .contains("no field"));
    }

    /// `a|b`: the first alternative present and not null, else an error naming them all.
    #[test]
    fn column_path_alternatives() {
        let record: Value = serde_json::json!({"post": null, "article": "A", "title": "T"});
        let one = |path| map_record(&record, &[("text", path)]);
        assert_eq!(one("post|article").unwrap()[0]["text"], "A");
        assert_eq!(one("missing|title|article").unwrap()[0]["text"], "T");
        let e = one("post|missing").unwrap_err();
        assert!(e.contains("\"post|missing\""), "{e}");
    }
}
