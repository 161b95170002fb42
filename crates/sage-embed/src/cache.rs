//! A persistent, crash-safe embedding cache (redb).
//!
//! Key: SHA-256 of the embedder identity's cache key (model id, weights revision, pooling,
//! normalisation, max length), what the text's role changes (a prompt, an `input_type`) and the
//! text; value: an 8-byte checksum, the 8-byte tag of the model (the first bytes of SHA-256 of
//! its identity), then the vector as little-endian f32. A second table records each model's
//! width, written with its first vectors.
//!
//! The cache does not trust its bytes: the checksum is SHA-256 of the key, the tag and the
//! vector, so an entry whose bytes changed, or that sits under another key (another identity or
//! text), fails it, as does a width other than its model's recorded one or a value that is not
//! finite. A model whose answers change width (a server that now serves another model under the
//! same name) is refused before anything of the new width is stored: its old and new vectors
//! would otherwise mix in one run, and every later run would fail. Such an entry is counted as corrupt
//! ([`CacheStats::corrupt`], with the first failure in [`CachedEmbedder::corruption`]) and
//! recomputed and overwritten like a miss: never returned. Misses are
//! embedded and committed in chunks, each chunk its own durable transaction, so a killed process
//! loses at most the chunk in flight and a re-run embeds only what is missing.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use ndarray::Array2;
use redb::{Database, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition};
use sage_core::{CacheMerge, Embedder, EmbedderIdentity, RemoteUsage, Role, SageError};
use sha2::{Digest, Sha256};

use crate::error::{EmbedError, Result};

/// v3: checksummed values tagged with their model (v2 entries, untagged, are read when their
/// width agrees with their model's and moved here; v1 entries, unchecked, are never read).
const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("embeddings-v3");

/// Each model's width: its tag → values per vector.
const WIDTHS: TableDefinition<&[u8], u64> = TableDefinition::new("widths-v3");

/// The previous layout: checksum, then the vector, with no model tag.
const V2_TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("embeddings-v2");

/// Bytes of checksum before each stored vector.
const CHECKSUM: usize = 8;

/// Bytes of the model tag after the checksum.
const TAG: usize = 8;

/// A model's tag: the first bytes of SHA-256 of its identity's cache key (every role of a model
/// shares one width, so one tag).
type Tag = [u8; TAG];

fn model_tag(identity: &EmbedderIdentity) -> Tag {
    let digest = Sha256::digest(identity.cache_key().as_bytes());
    let mut tag = [0u8; TAG];
    tag.copy_from_slice(&digest[..TAG]);
    tag
}

/// The first bytes of SHA-256(key ‖ tag ‖ vector bytes) (v2: no tag).
fn checksum(key: &[u8], tag: &[u8], vector: &[u8]) -> [u8; CHECKSUM] {
    let digest = Sha256::new()
        .chain_update(key)
        .chain_update(tag)
        .chain_update(vector)
        .finalize();
    let mut out = [0u8; CHECKSUM];
    out.copy_from_slice(&digest[..CHECKSUM]);
    out
}

/// The stored value of `vector` under `key` for the model tagged `tag`, into `out`.
fn encode_entry(key: &[u8], tag: &Tag, vector: ndarray::ArrayView1<f32>, out: &mut Vec<u8>) {
    out.clear();
    out.extend([0u8; CHECKSUM]);
    out.extend(tag);
    out.extend(vector.iter().flat_map(|x| x.to_le_bytes()));
    let sum = checksum(key, tag, &out[CHECKSUM + TAG..]);
    out[..CHECKSUM].copy_from_slice(&sum);
}

/// A checked entry: its model's tag and its vector.
struct Entry {
    tag: Tag,
    values: Vec<f32>,
}

/// The entry stored under `key`, or why the stored bytes are not one (`dim` 0: any width).
fn decode_entry(key: &[u8], bytes: &[u8], dim: usize) -> std::result::Result<Entry, String> {
    if bytes.len() < CHECKSUM + TAG + 4 || !(bytes.len() - CHECKSUM - TAG).is_multiple_of(4) {
        return Err(format!(
            "an entry of {} bytes is not a checksum, a model tag and a vector",
            bytes.len()
        ));
    }
    let (sum, tagged) = bytes.split_at(CHECKSUM);
    let (tag, vector) = tagged.split_at(TAG);
    if sum != checksum(key, tag, vector) {
        return Err(
            "an entry fails its checksum (changed bytes, or stored under another key)".into(),
        );
    }
    Ok(Entry {
        tag: tag.try_into().expect("TAG bytes"),
        values: decode_values(vector, dim)?,
    })
}

/// The vector of a v2 entry (checksum, vector; no tag), or why it is not one.
fn decode_v2_entry(key: &[u8], bytes: &[u8], dim: usize) -> std::result::Result<Vec<f32>, String> {
    if bytes.len() < CHECKSUM + 4 || !(bytes.len() - CHECKSUM).is_multiple_of(4) {
        return Err(format!("an older entry of {} bytes", bytes.len()));
    }
    let (sum, vector) = bytes.split_at(CHECKSUM);
    if sum != checksum(key, &[], vector) {
        return Err("an older entry fails its checksum".into());
    }
    decode_values(vector, dim)
}

/// Little-endian f32 values, `dim` of them (0: any number), all finite.
fn decode_values(vector: &[u8], dim: usize) -> std::result::Result<Vec<f32>, String> {
    if dim != 0 && vector.len() != dim * 4 {
        return Err(format!(
            "an entry of {} values where the model gives {dim}",
            vector.len() / 4
        ));
    }
    let values: Vec<f32> = vector
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    if values.iter().any(|v| !v.is_finite()) {
        return Err("an entry holds a value that is not a finite number".into());
    }
    Ok(values)
}

/// Hits and misses since the cache was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CacheStats {
    /// Texts found in the cache.
    pub hits: u64,
    /// Texts embedded (and stored).
    pub misses: u64,
    /// Entries found corrupt (and recomputed, so also counted in `misses`).
    pub corrupt: u64,
    /// Of the hits, texts found in another cache file ([`CachedEmbedder::reading_siblings`])
    /// and copied into this one.
    pub from_siblings: u64,
}

/// What a planned run would send: distinct texts found in the cache and not, and the tokens of
/// the ones not found (see [`CachedEmbedder::planning`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PlanCounts {
    /// Distinct texts (per role) already cached: they cost nothing.
    pub cached_texts: u64,
    /// Distinct texts (per role) that would be sent.
    pub texts_to_send: u64,
    /// Estimated tokens of the texts to send.
    pub tokens_to_send: u64,
}

/// Counts the tokens of a text as the embedder would be billed for it.
pub type TokenCounter = Box<dyn Fn(&str) -> u64 + Send + Sync>;

struct Planner {
    count_tokens: TokenCounter,
    seen: Mutex<(HashSet<[u8; 32]>, PlanCounts)>,
}

/// An [`Embedder`] that looks texts up in a persistent cache before embedding them.
pub struct CachedEmbedder<E> {
    inner: E,
    /// `None` only while being dropped (see the `Drop` impl).
    db: Option<Database>,
    path: PathBuf,
    chunk: usize,
    hits: AtomicU64,
    misses: AtomicU64,
    corrupt: AtomicU64,
    from_siblings: AtomicU64,
    /// The folder whose other `embeddings*.redb` files are read for what this one lacks.
    siblings: Option<PathBuf>,
    /// What the first corrupt entry failed.
    first_corruption: Mutex<Option<String>>,
    planner: Option<Planner>,
    /// The model's tag ([`model_tag`]), which every entry it stores carries.
    tag: Tag,
}

/// `embeddings.redb` in [`sage_core::cache_dir`].
pub fn default_cache_path() -> PathBuf {
    sage_core::cache_dir().join("embeddings.redb")
}

fn cache_error(path: &Path, e: impl std::fmt::Display) -> EmbedError {
    EmbedError::Cache {
        path: path.to_owned(),
        message: e.to_string(),
    }
}

/// Runs `work` on the redb file at `path`, turning a panic inside redb (it panics on some
/// structurally broken files: a truncated one, overwritten page headers) into an error that says
/// what to do.
fn guarded<T>(path: &Path, work: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))
        .unwrap_or_else(|panic| Err(broken_file(path, &panic.as_ref())))
}

/// The error for a file redb panicked on (`panic` is the panic's payload).
fn broken_file(path: &Path, panic: &&(dyn std::any::Any + Send)) -> EmbedError {
    let what = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("a panic");
    cache_error(
        path,
        format!(
            "the file is structurally broken (redb: {what}); `sage cache repair --cache {}` \
             moves it aside, or pass --no-cache",
            path.display()
        ),
    )
}

/// Refuses a cache file whose header redb would trust and misread (see
/// [`sage_core::redb_header_damage`]); called before every open, since the misreading aborts the
/// process where no panic can be caught.
fn refuse_damaged(path: &Path) -> Result<()> {
    refuse_damaged_as(path, path)
}

/// [`refuse_damaged`] for the file at `read`, reported as `named` (a copy of it, say).
fn refuse_damaged_as(read: &Path, named: &Path) -> Result<()> {
    match sage_core::redb_header_damage(read) {
        None => Ok(()),
        Some(why) => Err(cache_error(
            named,
            format!(
                "{why}; `sage cache repair --cache {}` moves it aside, or pass --no-cache",
                named.display()
            ),
        )),
    }
}

/// A failure to open the cache file, said the way a user can act on it.
fn open_error(path: &Path, e: redb::DatabaseError) -> EmbedError {
    match e {
        redb::DatabaseError::DatabaseAlreadyOpen => cache_error(
            path,
            "in use by another process (run one at a time, pass another --cache file, or --no-cache)",
        ),
        other => cache_error(path, other),
    }
}

/// Why [`check_cache`] could not finish reading a file.
enum Unread {
    /// The file itself is damaged (redb says it is corrupted, or could not repair it): repair
    /// moves it aside.
    Broken(EmbedError),
    /// Anything else (in use by another process, an I/O error): the file is left where it is.
    Other(EmbedError),
}

impl From<EmbedError> for Unread {
    fn from(e: EmbedError) -> Self {
        Unread::Other(e)
    }
}

/// What [`check_cache`] found in a cache file, and what repairing it did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CacheCheck {
    /// The file.
    pub path: PathBuf,
    /// Checksummed entries read.
    pub entries: u64,
    /// Entries that failed their checks (see the module documentation).
    pub corrupt: u64,
    /// What the first corrupt entry failed.
    pub first_failure: Option<String>,
    /// Entries from before checksums (never returned; recomputed when next needed).
    pub unchecked_old_entries: u64,
    /// Entries from before model tags: checked when next read, and used (and moved to the
    /// current table) only when their width agrees with their model's; their model cannot be
    /// known offline.
    pub untagged_older_entries: u64,
    /// Repair: corrupt entries removed (they are recomputed when next needed).
    pub removed: u64,
    /// Repair: the file could not be read and was moved here; the next run starts a new cache.
    pub moved_to: Option<PathBuf>,
}

/// The entries of the v1 (unchecksummed) table, which this version never reads.
const OLD_TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("embeddings-v1");

/// Checks every entry of the cache file at `path` offline (`sage cache verify`); with `repair`,
/// also runs redb's integrity check, removes the corrupt entries, and moves a file that cannot
/// be read at all aside (`sage cache repair`). Without `repair` nothing is written.
pub fn check_cache(path: &Path, repair: bool) -> Result<CacheCheck> {
    if !path.is_file() {
        return Err(cache_error(path, "no such cache file"));
    }
    let inspected =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| inspect_cache(path, repair)));
    let broken = match inspected {
        Ok(Ok(check)) => return Ok(check),
        Ok(Err(Unread::Other(e))) => return Err(e),
        Ok(Err(Unread::Broken(e))) => e,
        Err(panic) => broken_file(path, &panic.as_ref()),
    };
    if !repair {
        return Err(broken);
    }
    let aside = path.with_extension(format!(
        "broken-{}.redb",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    ));
    std::fs::rename(path, &aside)
        .map_err(|e| cache_error(path, format!("{broken}; moving it aside failed: {e}")))?;
    Ok(CacheCheck {
        path: path.to_owned(),
        first_failure: Some(broken.to_string()),
        moved_to: Some(aside),
        ..CacheCheck::default()
    })
}

/// [`check_cache`]'s reading (and, with `repair`, removing), panics left to the caller.
fn inspect_cache(path: &Path, repair: bool) -> std::result::Result<CacheCheck, Unread> {
    // what redb reports for bytes that are not a database (a garbage header reads as invalid
    // data); an I/O failure of another kind (permissions, a full disk) is not the file's fault
    let corrupted = |e: &redb::DatabaseError| match e {
        redb::DatabaseError::RepairAborted
        | redb::DatabaseError::Storage(redb::StorageError::Corrupted(_)) => true,
        redb::DatabaseError::Storage(redb::StorageError::Io(io)) => matches!(
            io.kind(),
            std::io::ErrorKind::InvalidData | std::io::ErrorKind::UnexpectedEof
        ),
        _ => false,
    };
    let unread = |e: redb::DatabaseError| {
        if corrupted(&e) {
            Unread::Broken(open_error(path, e))
        } else {
            Unread::Other(open_error(path, e))
        }
    };
    if !repair {
        return verify_a_copy(path, &unread);
    }
    refuse_damaged(path).map_err(Unread::Broken)?;
    let mut db = Database::open(path).map_err(unread)?;
    db.check_integrity().map_err(|e| {
        let error = cache_error(path, format!("integrity check: {e}"));
        if corrupted(&e) {
            Unread::Broken(error)
        } else {
            Unread::Other(error)
        }
    })?;
    let (mut check, bad_keys) = {
        let txn = db.begin_read().map_err(|e| cache_error(path, e))?;
        read_entries(path, &txn)?
    };
    if !bad_keys.is_empty() {
        let txn = db.begin_write().map_err(|e| cache_error(path, e))?;
        {
            let mut table = txn.open_table(TABLE).map_err(|e| cache_error(path, e))?;
            for key in &bad_keys {
                table
                    .remove(key.as_slice())
                    .map_err(|e| cache_error(path, e))?;
            }
        }
        txn.commit().map_err(|e| cache_error(path, e))?;
        check.removed = bad_keys.len() as u64;
    }
    // closed here, while `check` is still a local: redb may panic while closing a damaged file
    // (the caller reports that file as broken), and a panic in a destructor that runs after the
    // return value is built leaks it (LeakSanitizer, in the cache fuzz target)
    drop(db);
    Ok(check)
}

/// Each model's recorded width in the cache read in `txn`.
fn read_widths(
    path: &Path,
    txn: &redb::ReadTransaction,
) -> Result<std::collections::HashMap<Tag, u64>> {
    let mut widths = std::collections::HashMap::new();
    match txn.open_table(WIDTHS) {
        Ok(table) => {
            for item in table.iter().map_err(|e| cache_error(path, e))? {
                let (tag, width) = item.map_err(|e| cache_error(path, e))?;
                if let Ok(tag) = Tag::try_from(tag.value()) {
                    widths.insert(tag, width.value());
                }
            }
        }
        Err(redb::TableError::TableDoesNotExist(_)) => {}
        Err(e) => return Err(cache_error(path, e)),
    }
    Ok(widths)
}

/// [`check_cache`] without repair: the file is only read, into a copy in the temporary folder,
/// which is opened, checked and removed. So verifying changes no byte of the file (opening it
/// in place writes redb's allocator state on close, and recovers a file a killed run left open)
/// and works on a file the user may only read. redb's read-only mode is not used: on a damaged
/// file it sizes a read from the damaged bytes (an 8 GB allocation, found by the cache fuzz
/// target), where the read-write mode reports the damage.
fn verify_a_copy(
    path: &Path,
    unread: &dyn Fn(redb::DatabaseError) -> Unread,
) -> std::result::Result<CacheCheck, Unread> {
    let copy = std::env::temp_dir().join(format!(
        "sage-verify-{}-{}.redb",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    std::fs::copy(path, &copy).map_err(|e| {
        cache_error(
            path,
            format!("could not be copied to {} to verify: {e}", copy.display()),
        )
    })?;
    /// The copy goes however the check ends, a panic of redb's included.
    struct Removed<'a>(&'a Path);
    impl Drop for Removed<'_> {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(self.0);
        }
    }
    let _removed = Removed(&copy);
    // the copy is removed when `_removed` drops, after the check
    (|| {
        refuse_damaged_as(&copy, path).map_err(Unread::Broken)?;
        let db = Database::open(&copy).map_err(unread)?;
        let txn = db.begin_read().map_err(|e| cache_error(path, e))?;
        let (check, _) = read_entries(path, &txn)?;
        drop(txn);
        drop(db);
        Ok(check)
    })()
}

/// Every entry of the cache read in `txn`, checked: the counts, and the keys of corrupt entries.
fn read_entries(
    path: &Path,
    txn: &redb::ReadTransaction,
) -> std::result::Result<(CacheCheck, Vec<Vec<u8>>), Unread> {
    let mut check = CacheCheck {
        path: path.to_owned(),
        ..CacheCheck::default()
    };
    let mut bad_keys = Vec::new();
    let widths = read_widths(path, txn)?;
    match txn.open_table(TABLE) {
        Ok(table) => {
            for item in table.iter().map_err(|e| cache_error(path, e))? {
                let (key, value) = item.map_err(|e| cache_error(path, e))?;
                check.entries += 1;
                let checked = decode_entry(key.value(), value.value(), 0).and_then(|entry| {
                    match widths.get(&entry.tag) {
                        Some(&w) if w == entry.values.len() as u64 => Ok(()),
                        Some(w) => Err(format!(
                            "an entry of {} values where its model's recorded width is {w} \
                             (the model behind its name changed)",
                            entry.values.len()
                        )),
                        None => Err("an entry whose model has no recorded width".into()),
                    }
                });
                if let Err(why) = checked {
                    check.corrupt += 1;
                    check.first_failure.get_or_insert(why);
                    bad_keys.push(key.value().to_vec());
                }
            }
        }
        Err(redb::TableError::TableDoesNotExist(_)) => {}
        Err(e) => return Err(cache_error(path, e).into()),
    }
    match txn.open_table(V2_TABLE) {
        Ok(older) => {
            check.untagged_older_entries = older.len().map_err(|e| cache_error(path, e))?
        }
        Err(redb::TableError::TableDoesNotExist(_)) => {}
        Err(e) => return Err(cache_error(path, e).into()),
    }
    match txn.open_table(OLD_TABLE) {
        Ok(old) => check.unchecked_old_entries = old.len().map_err(|e| cache_error(path, e))?,
        Err(redb::TableError::TableDoesNotExist(_)) => {}
        Err(e) => return Err(cache_error(path, e).into()),
    }
    Ok((check, bad_keys))
}

/// Folds the entries of the cache files `sources` into the cache file `into` (created if
/// missing): every source entry is checked (checksum of key and vector, width, finite values)
/// and copied when the target lacks its key; a corrupt one is skipped and counted. Idempotent:
/// merging again copies nothing. The sources are only read; all copies are one transaction, so
/// a killed merge leaves the target as it was.
pub fn merge_caches(into: &Path, sources: &[PathBuf]) -> Result<CacheMerge> {
    if let Some(dir) = into.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| cache_error(into, format!("cannot create folder: {e}")))?;
    }
    let mut merge = CacheMerge {
        into: into.to_owned(),
        sources: sources.len(),
        ..CacheMerge::default()
    };
    let created = !into.exists();
    let merged = guarded(into, || {
        refuse_damaged(into)?;
        let target = Database::create(into).map_err(|e| open_error(into, e))?;
        let txn = target.begin_write().map_err(|e| cache_error(into, e))?;
        {
            let mut table = txn.open_table(TABLE).map_err(|e| cache_error(into, e))?;
            let mut widths = txn.open_table(WIDTHS).map_err(|e| cache_error(into, e))?;
            for source in sources {
                if source == into {
                    return Err(cache_error(source, "is the merge's target too"));
                }
                guarded(source, || {
                    refuse_damaged(source)?;
                    let db =
                        redb::ReadOnlyDatabase::open(source).map_err(|e| open_error(source, e))?;
                    let read = db.begin_read().map_err(|e| cache_error(source, e))?;
                    // a model whose width differs between the files: its entries are not copied
                    let mut agreed = std::collections::HashMap::new();
                    for (tag, width) in read_widths(source, &read)? {
                        let held = widths
                            .get(tag.as_slice())
                            .map_err(|e| cache_error(into, e))?
                            .map(|w| w.value());
                        match held {
                            None => {
                                widths
                                    .insert(tag.as_slice(), width)
                                    .map_err(|e| cache_error(into, e))?;
                                agreed.insert(tag, width);
                            }
                            Some(w) if w == width => {
                                agreed.insert(tag, width);
                            }
                            Some(_) => {}
                        }
                    }
                    let entries = match read.open_table(TABLE) {
                        Ok(t) => t,
                        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(()),
                        Err(e) => return Err(cache_error(source, e)),
                    };
                    for item in entries.iter().map_err(|e| cache_error(source, e))? {
                        let (key, value) = item.map_err(|e| cache_error(source, e))?;
                        let (key, value) = (key.value(), value.value());
                        let Ok(entry) = decode_entry(key, value, 0) else {
                            merge.corrupt_skipped += 1;
                            continue;
                        };
                        if agreed.get(&entry.tag) != Some(&(entry.values.len() as u64)) {
                            merge.differing += 1;
                            continue;
                        }
                        let held = table
                            .get(key)
                            .map_err(|e| cache_error(into, e))?
                            .map(|v| v.value().to_vec());
                        match held {
                            None => {
                                table.insert(key, value).map_err(|e| cache_error(into, e))?;
                                merge.copied += 1;
                            }
                            Some(bytes) if bytes == value => merge.already_present += 1,
                            Some(bytes) if decode_entry(key, &bytes, 0).is_err() => {
                                // the target's own entry is corrupt: the sound one replaces it
                                table.insert(key, value).map_err(|e| cache_error(into, e))?;
                                merge.copied += 1;
                            }
                            Some(_) => merge.differing += 1,
                        }
                    }
                    Ok(())
                })?;
            }
        }
        txn.commit().map_err(|e| cache_error(into, e))?;
        drop(target);
        Ok(())
    });
    if merged.is_err() && created {
        // a failed merge leaves no new, empty target behind
        let _ = std::fs::remove_file(into);
    }
    merged.map(|()| merge)
}

impl<E: Embedder> CachedEmbedder<E> {
    /// Wraps `inner` with the cache file at `path` (created, with its folder, if missing).
    /// Misses are committed every 256 texts, or, for an embedder that delivers batches (a remote
    /// one), every answer as it arrives.
    pub fn open(inner: E, path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_owned();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| cache_error(&path, format!("cannot create folder: {e}")))?;
        }
        // a sibling's momentary read lock (see `reading_siblings`) is waited out
        let db = guarded(&path, || {
            refuse_damaged(&path)?;
            sage_core::open_when_free(
                || Database::create(&path),
                |e| matches!(e, redb::DatabaseError::DatabaseAlreadyOpen),
            )
            .map_err(|e| open_error(&path, e))
        })?;
        let tag = model_tag(inner.identity());
        Ok(CachedEmbedder {
            inner,
            db: Some(db),
            path,
            chunk: 256,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            corrupt: AtomicU64::new(0),
            from_siblings: AtomicU64::new(0),
            siblings: None,
            first_corruption: Mutex::new(None),
            planner: None,
            tag,
        })
    }

    /// A planning cache: texts found are returned as usual, texts not found are counted (once
    /// each, with `count_tokens`) and answered with stand-in vectors, never sent to the embedder
    /// and never stored. A task run through it tells what the real run would send
    /// ([`CachedEmbedder::plan`]); its scores mean nothing.
    pub fn planning(inner: E, path: impl AsRef<Path>, count_tokens: TokenCounter) -> Result<Self> {
        let mut cache = Self::open(inner, path)?;
        cache.planner = Some(Planner {
            count_tokens,
            seen: Mutex::new((HashSet::new(), PlanCounts::default())),
        });
        Ok(cache)
    }

    /// What a planning cache has counted so far; `None` for a real one.
    pub fn plan(&self) -> Option<PlanCounts> {
        self.planner
            .as_ref()
            .map(|p| p.seen.lock().unwrap_or_else(|e| e.into_inner()).1)
    }

    /// Also look up what this cache lacks in the other `embeddings*.redb` files of `dir` (a
    /// sharded run's other shards, the merged cache), and copy what is found (checked like any
    /// entry) into this file, so that each shard's file ends up holding everything its jobs used.
    ///
    /// redb allows one writer per file, so shards that run together each write their own file;
    /// a sibling is opened read-only for the length of one lookup and skipped while its writer
    /// holds it (a shard still running) or when it cannot be read (a killed shard's file waits
    /// for its owner's repair).
    pub fn reading_siblings(mut self, dir: impl Into<PathBuf>) -> Self {
        self.siblings = Some(dir.into());
        self
    }

    /// Commit misses every `texts` texts (the most a crash can lose).
    pub fn with_chunk(mut self, texts: usize) -> Self {
        self.chunk = texts.max(1);
        self
    }

    /// Hits and misses so far.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            corrupt: self.corrupt.load(Ordering::Relaxed),
            from_siblings: self.from_siblings.load(Ordering::Relaxed),
        }
    }

    /// The wrapped embedder.
    pub fn inner(&self) -> &E {
        &self.inner
    }

    /// The cache file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn key(&self, text: &str, variant: Option<&str>) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(self.inner.identity().cache_key_for(variant).as_bytes());
        h.update([0]);
        h.update(text.as_bytes());
        h.finalize().into()
    }

    /// The cached vector of each key, `None` where there is none or where the entry is corrupt
    /// (counted, then recomputed and overwritten by the caller).
    fn lookup(&self, keys: &[[u8; 32]]) -> Result<Vec<Option<Vec<f32>>>> {
        guarded(&self.path, || self.lookup_unguarded(keys))
    }

    /// The width entries must have: the model's own, else the one recorded with its first
    /// vectors (0: neither known yet).
    fn expected_width(&self, txn: &redb::ReadTransaction) -> Result<usize> {
        if self.inner.dimension() != 0 {
            return Ok(self.inner.dimension());
        }
        match txn.open_table(WIDTHS) {
            Ok(widths) => Ok(widths
                .get(self.tag.as_slice())
                .map_err(|e| cache_error(&self.path, e))?
                .map_or(0, |w| w.value() as usize)),
            Err(redb::TableError::TableDoesNotExist(_)) => Ok(0),
            Err(e) => Err(cache_error(&self.path, e)),
        }
    }

    fn note_corrupt(&self, why: String) {
        self.corrupt.fetch_add(1, Ordering::Relaxed);
        let mut first = self.first_corruption.lock().expect("not poisoned");
        first.get_or_insert(why);
    }

    fn lookup_unguarded(&self, keys: &[[u8; 32]]) -> Result<Vec<Option<Vec<f32>>>> {
        let txn = self
            .db()
            .begin_read()
            .map_err(|e| cache_error(&self.path, e))?;
        let dim = self.expected_width(&txn)?;
        let mut rows: Vec<Option<Vec<f32>>> = vec![None; keys.len()];
        match txn.open_table(TABLE) {
            Ok(table) => {
                for (row, key) in rows.iter_mut().zip(keys) {
                    let found = table
                        .get(key.as_slice())
                        .map_err(|e| cache_error(&self.path, e))?;
                    let Some(found) = found else { continue };
                    match decode_entry(key, found.value(), dim) {
                        Ok(entry) if entry.tag == self.tag => *row = Some(entry.values),
                        Ok(_) => self.note_corrupt("an entry tagged with another model".into()),
                        Err(why) => self.note_corrupt(why),
                    }
                }
            }
            Err(redb::TableError::TableDoesNotExist(_)) => {}
            Err(e) => return Err(cache_error(&self.path, e)),
        }
        // an older build's entries carry no model tag: used when they agree with the model's
        // width (and moved to the current table), recomputed when they do not
        let mut older: Vec<(usize, Vec<f32>)> = Vec::new();
        match txn.open_table(V2_TABLE) {
            Ok(table) => {
                for (i, key) in keys.iter().enumerate().filter(|(i, _)| rows[*i].is_none()) {
                    let found = table
                        .get(key.as_slice())
                        .map_err(|e| cache_error(&self.path, e))?;
                    if let Some(found) = found {
                        match decode_v2_entry(key, found.value(), dim) {
                            Ok(vector) => older.push((i, vector)),
                            Err(why) => self.note_corrupt(why),
                        }
                    }
                }
            }
            Err(redb::TableError::TableDoesNotExist(_)) => {}
            Err(e) => return Err(cache_error(&self.path, e)),
        }
        drop(txn);
        if let Some((_, first)) = older.first() {
            let width = first.len();
            if older.iter().any(|(_, v)| v.len() != width) {
                // nothing tells which width is the model's: none of them is trusted
                for _ in 0..older.len() {
                    self.note_corrupt(
                        "older entries of different widths under one model (its server changed \
                         model): recomputed"
                            .into(),
                    );
                }
            } else {
                // a planning run writes nothing
                if self.planner.is_none() {
                    let positions: Vec<usize> = older.iter().map(|(i, _)| *i).collect();
                    let flat: Vec<f32> =
                        older.iter().flat_map(|(_, v)| v.iter().copied()).collect();
                    let vectors = Array2::from_shape_vec((older.len(), width), flat)
                        .expect("rows of one width");
                    self.store_unguarded(keys, &positions, &vectors)?;
                }
                for (i, vector) in older {
                    rows[i] = Some(vector);
                }
            }
        }
        Ok(rows)
    }

    /// Fills the rows still `None` from the sibling cache files that can be read now, and stores
    /// what was found in this file.
    fn fill_from_siblings(&self, keys: &[[u8; 32]], rows: &mut [Option<Vec<f32>>]) -> Result<()> {
        let Some(dir) = &self.siblings else {
            return Ok(());
        };
        let dim = self.inner.dimension();
        let mut found_rows = Vec::new();
        let mut found = Vec::new();
        for sibling in sage_core::sibling_caches(dir, "embeddings", &self.path) {
            if rows.iter().all(Option::is_some) {
                break;
            }
            // unreadable for now (its writer holds it, or it needs its owner's repair): the
            // text is embedded here instead, which gives the same vector
            let _ = guarded(&sibling, || {
                if refuse_damaged(&sibling).is_err() {
                    return Ok(());
                }
                let Ok(db) = redb::ReadOnlyDatabase::open(&sibling) else {
                    return Ok(());
                };
                let txn = db.begin_read().map_err(|e| cache_error(&sibling, e))?;
                let Ok(table) = txn.open_table(TABLE) else {
                    return Ok(());
                };
                for (i, key) in keys.iter().enumerate() {
                    if rows[i].is_some() {
                        continue;
                    }
                    let entry = table
                        .get(key.as_slice())
                        .map_err(|e| cache_error(&sibling, e))?;
                    let entry = entry.and_then(|v| decode_entry(key, v.value(), dim).ok());
                    if let Some(vector) = entry.filter(|e| e.tag == self.tag).map(|e| e.values) {
                        found.push(vector.clone());
                        found_rows.push(i);
                        rows[i] = Some(vector);
                    }
                }
                Ok(())
            });
        }
        if found.is_empty() {
            return Ok(());
        }
        let width = found[0].len();
        if found.iter().any(|v| v.len() != width) {
            return Err(cache_error(
                &self.path,
                "sibling cache files hold vectors of different widths under one model identity",
            ));
        }
        let flat: Vec<f32> = found.into_iter().flatten().collect();
        let vectors =
            Array2::from_shape_vec((found_rows.len(), width), flat).expect("rows of one width");
        let order: Vec<usize> = (0..found_rows.len()).collect();
        let found_keys: Vec<[u8; 32]> = found_rows.iter().map(|&i| keys[i]).collect();
        self.store(&found_keys, &order, &vectors)?;
        self.from_siblings
            .fetch_add(found_rows.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    fn db(&self) -> &Database {
        self.db
            .as_ref()
            .expect("the database is taken only by drop")
    }

    /// What the first corrupt entry found since the cache was opened failed, if any.
    pub fn corruption(&self) -> Option<String> {
        self.first_corruption.lock().expect("not poisoned").clone()
    }

    fn store(&self, keys: &[[u8; 32]], rows: &[usize], vectors: &Array2<f32>) -> Result<()> {
        guarded(&self.path, || self.store_unguarded(keys, rows, vectors))
    }

    /// Stores `vectors` (row k under `keys[rows[k]]`) in one transaction, after checking their
    /// width against the model's recorded one (recording it with the first vectors): a model
    /// whose width changed stores nothing.
    fn store_unguarded(
        &self,
        keys: &[[u8; 32]],
        rows: &[usize],
        vectors: &Array2<f32>,
    ) -> Result<()> {
        let txn = self
            .db()
            .begin_write()
            .map_err(|e| cache_error(&self.path, e))?;
        {
            let mut widths = txn
                .open_table(WIDTHS)
                .map_err(|e| cache_error(&self.path, e))?;
            let width = vectors.ncols() as u64;
            let recorded = widths
                .get(self.tag.as_slice())
                .map_err(|e| cache_error(&self.path, e))?
                .map(|w| w.value());
            match recorded {
                None => {
                    widths
                        .insert(self.tag.as_slice(), width)
                        .map_err(|e| cache_error(&self.path, e))?;
                }
                Some(w) if w != width => {
                    // the transaction is dropped uncommitted: nothing of these vectors is kept
                    return Err(cache_error(
                        &self.path,
                        format!(
                            "{} now gives {width}-wide vectors where this cache holds {w}-wide \
                             ones for it: the model behind the name changed, and the two must \
                             not mix (nothing of the new vectors was stored). Pass another \
                             --cache file to keep both, or move this one aside",
                            self.inner.identity().model_id
                        ),
                    ));
                }
                Some(_) => {}
            }
            let mut table = txn
                .open_table(TABLE)
                .map_err(|e| cache_error(&self.path, e))?;
            let mut bytes = Vec::with_capacity(CHECKSUM + TAG + vectors.ncols() * 4);
            for (k, &row) in rows.iter().enumerate() {
                encode_entry(&keys[row], &self.tag, vectors.row(k), &mut bytes);
                table
                    .insert(keys[row].as_slice(), bytes.as_slice())
                    .map_err(|e| cache_error(&self.path, e))?;
            }
        }
        txn.commit().map_err(|e| cache_error(&self.path, e))
    }

    /// Counts the texts `rows` lacks (those the cache did not have) for the plan and gives each
    /// a stand-in vector derived from its key.
    fn plan_missing(
        &self,
        planner: &Planner,
        texts: &[&str],
        keys: &[[u8; 32]],
        rows: &mut [Option<Vec<f32>>],
    ) {
        let width = match self.inner.dimension() {
            0 => rows.iter().flatten().next().map_or(16, Vec::len),
            d => d,
        };
        let mut seen = planner.seen.lock().unwrap_or_else(|e| e.into_inner());
        for (i, key) in keys.iter().enumerate() {
            let first_time = seen.0.insert(*key);
            // rows are filled in index order, so rows[i] is still what the cache had
            if rows[i].is_some() {
                seen.1.cached_texts += u64::from(first_time);
                continue;
            }
            if first_time {
                seen.1.texts_to_send += 1;
                seen.1.tokens_to_send += (planner.count_tokens)(texts[i]);
            }
            // distinct texts get distinct vectors, so no task stumbles on ties or constants
            let mut state = u64::from_le_bytes(key[..8].try_into().expect("8 bytes"));
            rows[i] = Some(
                (0..width)
                    .map(|_| {
                        state = state
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        ((state >> 40) as f32 / (1u64 << 24) as f32) - 0.5
                    })
                    .collect(),
            );
        }
    }
}

impl<E> Drop for CachedEmbedder<E> {
    /// redb commits its allocator state when a database closes, and on some damaged files it
    /// panics there (found by the cache fuzz target: an assertion in a b-tree delete). Every
    /// vector this cache returned was checked on its way out, so nothing computed is lost by
    /// catching that panic: the file stays as it is, and the next open or `sage cache verify`
    /// reports it.
    fn drop(&mut self) {
        if let Some(db) = self.db.take() {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(db)));
        }
    }
}

impl<E: Embedder> Embedder for CachedEmbedder<E> {
    fn identity(&self) -> &EmbedderIdentity {
        self.inner.identity()
    }

    fn dimension(&self) -> usize {
        self.inner.dimension()
    }

    fn embed(&self, texts: &[&str]) -> sage_core::Result<Array2<f32>> {
        self.embed_as(texts, Role::Plain)
    }

    fn role_variant(&self, role: Role) -> Option<String> {
        self.inner.role_variant(role)
    }

    fn remote_usage(&self) -> Option<RemoteUsage> {
        self.inner.remote_usage()
    }

    fn embed_as(&self, texts: &[&str], role: Role) -> sage_core::Result<Array2<f32>> {
        let variant = self.inner.role_variant(role);
        let keys: Vec<[u8; 32]> = texts
            .iter()
            .map(|t| self.key(t, variant.as_deref()))
            .collect();
        let mut rows = self.lookup(&keys)?;
        if self.planner.is_none() {
            self.fill_from_siblings(&keys, &mut rows)?;
        }
        // a text repeated within the call is embedded (and paid for) once
        let mut first_of: std::collections::HashMap<[u8; 32], usize> = Default::default();
        let mut repeats: Vec<(usize, usize)> = Vec::new();
        let mut missing: Vec<usize> = Vec::new();
        for i in (0..texts.len()).filter(|&i| rows[i].is_none()) {
            match first_of.entry(keys[i]) {
                std::collections::hash_map::Entry::Occupied(e) => repeats.push((i, *e.get())),
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(i);
                    missing.push(i);
                }
            }
        }
        self.hits.fetch_add(
            (texts.len() - missing.len() - repeats.len()) as u64,
            Ordering::Relaxed,
        );
        if let Some(planner) = &self.planner {
            self.plan_missing(planner, texts, &keys, &mut rows);
        } else {
            // a remote embedder gets everything at once (its own batches, in flight together)
            // and every answer is stored as it arrives; a local one is fed in chunks, each
            // committed, so a crash loses at most one
            let groups: Vec<&[usize]> = if self.inner.delivers_batches() {
                vec![&missing[..]]
            } else {
                missing.chunks(self.chunk).collect()
            };
            for group in groups.into_iter().filter(|g| !g.is_empty()) {
                let group_texts: Vec<&str> = group.iter().map(|&i| texts[i]).collect();
                self.inner
                    .embed_batches(&group_texts, role, &mut |start, vectors| {
                        let at = group.get(start..start + vectors.nrows()).ok_or_else(|| {
                            SageError::InvalidArgument(format!(
                                "embedder delivered rows {start}..{} of {}",
                                start + vectors.nrows(),
                                group.len()
                            ))
                        })?;
                        self.store(&keys, at, &vectors)?;
                        for (k, &i) in at.iter().enumerate() {
                            rows[i] = Some(vectors.row(k).to_vec());
                        }
                        self.misses.fetch_add(at.len() as u64, Ordering::Relaxed);
                        Ok(())
                    })?;
            }
        }
        for (i, first) in repeats {
            rows[i] = rows[first].clone();
        }
        let width = rows
            .iter()
            .flatten()
            .next()
            .map_or(self.dimension(), Vec::len);
        let mut out = Array2::zeros((texts.len(), width));
        for (i, row) in rows.iter().enumerate() {
            let row = row.as_ref().ok_or_else(|| {
                SageError::InvalidArgument(format!("embedder delivered no vector for text {i}"))
            })?;
            if row.len() != width {
                return Err(cache_error(
                    &self.path,
                    format!(
                        "vectors of {} and {width} values under one model identity",
                        row.len()
                    ),
                )
                .into());
            }
            out.row_mut(i).assign(&ndarray::ArrayView1::from(row));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// Deterministic vectors from the text bytes; fails once `fail_after` texts were embedded.
    struct Flaky {
        identity: EmbedderIdentity,
        embedded: AtomicUsize,
        fail_after: usize,
    }

    impl Flaky {
        fn new(fail_after: usize) -> Self {
            Flaky {
                identity: EmbedderIdentity {
                    model_id: "test/flaky".into(),
                    revision: Some("r1".into()),
                    pooling: "mean".into(),
                    normalize: false,
                    max_length: 8,
                },
                embedded: AtomicUsize::new(0),
                fail_after,
            }
        }
    }

    impl Embedder for Flaky {
        fn identity(&self) -> &EmbedderIdentity {
            &self.identity
        }
        fn dimension(&self) -> usize {
            4
        }
        fn embed(&self, texts: &[&str]) -> sage_core::Result<Array2<f32>> {
            let before = self.embedded.fetch_add(texts.len(), Ordering::SeqCst);
            if before + texts.len() > self.fail_after {
                return Err(sage_core::SageError::InvalidArgument(
                    "simulated crash".into(),
                ));
            }
            Ok(Array2::from_shape_fn((texts.len(), 4), |(i, j)| {
                texts[i]
                    .bytes()
                    .map(|b| f32::from(b) * (j + 1) as f32)
                    .sum::<f32>()
            }))
        }
    }

    /// A server-like model: its width is known only from its answers (`dimension` 0) and may
    /// change between runs; counts the texts it embeds.
    struct Server {
        identity: EmbedderIdentity,
        width: usize,
        embedded: AtomicUsize,
    }

    impl Server {
        fn new(width: usize) -> Self {
            Server {
                identity: EmbedderIdentity {
                    model_id: "openai:m".into(),
                    revision: Some("127.0.0.1:9/v1".into()),
                    pooling: "remote".into(),
                    normalize: false,
                    max_length: 8192,
                },
                width,
                embedded: AtomicUsize::new(0),
            }
        }
    }

    impl Embedder for Server {
        fn identity(&self) -> &EmbedderIdentity {
            &self.identity
        }
        fn dimension(&self) -> usize {
            0
        }
        fn embed(&self, texts: &[&str]) -> sage_core::Result<Array2<f32>> {
            self.embedded.fetch_add(texts.len(), Ordering::SeqCst);
            Ok(Array2::from_shape_fn(
                (texts.len(), self.width),
                |(i, j)| texts[i].len() as f32 + j as f32,
            ))
        }
    }

    /// Before, the second run's wider vectors were stored beside the first run's, `verify`
    /// found nothing and every later run failed without sending anything.
    #[test]
    fn a_model_whose_width_changed_stores_nothing_and_verify_finds_a_stray() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("embeddings.redb");
        let first = CachedEmbedder::open(Server::new(4), &path).unwrap();
        first.embed(&["a", "bb"]).unwrap();
        drop(first);
        let changed = CachedEmbedder::open(Server::new(6), &path).unwrap();
        let e = changed
            .embed(&["a", "ccc", "dddd"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("now gives 6-wide vectors where this cache holds 4-wide"),
            "{e}"
        );
        drop(changed);
        let check = check_cache(&path, false).unwrap();
        assert_eq!(
            (check.entries, check.corrupt),
            (2, 0),
            "nothing of the 6-wide run"
        );
        // the old model again: everything works, the cached texts are not sent
        let back = CachedEmbedder::open(Server::new(4), &path).unwrap();
        assert_eq!(back.embed(&["a", "ccc"]).unwrap().ncols(), 4);
        assert_eq!(back.inner().embedded.load(Ordering::SeqCst), 1);
        let tag = back.tag;
        let key = back.key("stray", None);
        drop(back);
        // an entry of another width under the model, sound in itself: verify finds it, repair
        // removes it
        let mut bytes = Vec::new();
        encode_entry(&key, &tag, ndarray::arr1(&[1.0f32; 6]).view(), &mut bytes);
        tamper(&path, key, &bytes);
        let found = check_cache(&path, false).unwrap();
        assert_eq!((found.entries, found.corrupt), (4, 1));
        assert!(found.first_failure.unwrap().contains("recorded width is 4"));
        assert_eq!(check_cache(&path, true).unwrap().removed, 1);
        assert_eq!(check_cache(&path, false).unwrap().corrupt, 0);
    }

    /// Writes entries in the previous (v2) layout, as an older build did: checksum, then the
    /// vector `0, 1, 2, ...` of the given width, with no model tag.
    fn write_v2(path: &Path, entries: &[([u8; 32], usize)]) {
        let db = Database::create(path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut table = txn.open_table(V2_TABLE).unwrap();
            for (key, width) in entries {
                let vector: Vec<u8> = (0..*width).flat_map(|j| (j as f32).to_le_bytes()).collect();
                let mut value = checksum(key, &[], &vector).to_vec();
                value.extend(&vector);
                table.insert(key.as_slice(), value.as_slice()).unwrap();
            }
        }
        txn.commit().unwrap();
    }

    /// What an older build left: untagged entries, of two widths under one model. Mixed ones are
    /// recomputed, never returned together; agreeing ones are used and moved to the current
    /// table.
    #[test]
    fn an_older_builds_entries_are_used_only_when_their_width_agrees() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("embeddings.redb");
        let server = Server::new(4);
        let probe = CachedEmbedder::open(Server::new(4), &path).unwrap();
        let keys: Vec<[u8; 32]> = ["a", "bb", "ccc"]
            .iter()
            .map(|t| probe.key(t, None))
            .collect();
        drop(probe);
        write_v2(&path, &[(keys[0], 4), (keys[1], 6)]);
        assert_eq!(check_cache(&path, false).unwrap().untagged_older_entries, 2);
        let cached = CachedEmbedder::open(server, &path).unwrap();
        let got = cached.embed(&["a", "bb"]).unwrap();
        assert_eq!(got, Server::new(4).embed(&["a", "bb"]).unwrap());
        assert_eq!(cached.stats().corrupt, 2);
        drop(cached);
        // agreeing older entries: used as they are, nothing sent
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("embeddings.redb");
        write_v2(&path, &[(keys[0], 4), (keys[2], 4)]);
        let cached = CachedEmbedder::open(Server::new(4), &path).unwrap();
        let got = cached.embed(&["a", "ccc"]).unwrap();
        assert_eq!(got.row(0).to_vec(), vec![0.0, 1.0, 2.0, 3.0]);
        assert_eq!(cached.inner().embedded.load(Ordering::SeqCst), 0);
        drop(cached);
        assert_eq!(
            check_cache(&path, false).unwrap().entries,
            2,
            "moved to the current table"
        );
    }

    /// Overwrites the stored value of `text` (under `embedder`'s identity) with `bytes`.
    fn tamper(path: &Path, key: [u8; 32], bytes: &[u8]) {
        let db = Database::create(path).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(TABLE)
            .unwrap()
            .insert(key.as_slice(), bytes)
            .unwrap();
        txn.commit().unwrap();
    }

    /// Two caches filled by different runs fold into a third: the union, each vector as the
    /// embedder gives it; a corrupt source entry is skipped; merging again copies nothing.
    #[test]
    fn merging_caches_is_a_checked_idempotent_union() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, merged) = (
            dir.path().join("shard-0.redb"),
            dir.path().join("shard-1.redb"),
            dir.path().join("embeddings.redb"),
        );
        let fill = |path: &Path, texts: &[&str]| {
            let cache = CachedEmbedder::open(Flaky::new(usize::MAX), path).unwrap();
            cache.embed(texts).unwrap();
            texts.iter().map(|t| cache.key(t, None)).collect::<Vec<_>>()
        };
        fill(&a, &["one", "two", "three"]);
        let keys_b = fill(&b, &["three", "four"]);
        tamper(&b, keys_b[1], b"not a checksum and a vector");
        let report = merge_caches(&merged, &[a.clone(), b.clone()]).unwrap();
        assert_eq!(
            (
                report.copied,
                report.already_present,
                report.differing,
                report.corrupt_skipped
            ),
            (3, 1, 0, 1)
        );
        let again = merge_caches(&merged, &[a.clone(), b.clone()]).unwrap();
        assert_eq!((again.copied, again.already_present), (0, 4));
        // the merged file answers from its entries, and the corrupt one is recomputed
        let texts = ["one", "two", "three", "four"];
        let cache = CachedEmbedder::open(Flaky::new(1), &merged).unwrap();
        let got = cache.embed(&texts).unwrap();
        assert_eq!(got, Flaky::new(usize::MAX).embed(&texts).unwrap());
        assert_eq!((cache.stats().hits, cache.stats().misses), (3, 1));
        assert!(
            merge_caches(&a, std::slice::from_ref(&a)).is_err(),
            "a file into itself"
        );
    }

    /// Shards of one run: a cache reading its siblings takes what a finished sibling holds
    /// (checked: a corrupt sibling entry is recomputed), copies it into its own file, skips a
    /// sibling whose writer still holds it, and never writes a sibling.
    #[test]
    fn a_shard_reads_what_its_siblings_hold_and_skips_a_busy_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name);
        let done =
            CachedEmbedder::open(Flaky::new(usize::MAX), path("embeddings.shard-0.redb")).unwrap();
        done.embed(&["one", "two", "bad"]).unwrap();
        let bad_key = done.key("bad", None);
        drop(done);
        tamper(&path("embeddings.shard-0.redb"), bad_key, b"short");
        let sibling_bytes = std::fs::read(path("embeddings.shard-0.redb")).unwrap();
        // a shard still running: its writer holds the file
        let busy =
            CachedEmbedder::open(Flaky::new(usize::MAX), path("embeddings.shard-2.redb")).unwrap();
        busy.embed(&["three"]).unwrap();
        // "one" and "two" from shard 0; "bad" and "three" embedded here: 2 texts allowed
        let texts = ["one", "two", "bad", "three"];
        let shard = CachedEmbedder::open(Flaky::new(2), path("embeddings.shard-1.redb"))
            .unwrap()
            .reading_siblings(dir.path());
        let got = shard.embed(&texts).unwrap();
        assert_eq!(got, Flaky::new(usize::MAX).embed(&texts).unwrap());
        let stats = shard.stats();
        assert_eq!((stats.hits, stats.from_siblings, stats.misses), (2, 2, 2));
        drop(shard);
        drop(busy);
        assert_eq!(
            std::fs::read(path("embeddings.shard-0.redb")).unwrap(),
            sibling_bytes,
            "a sibling is only read"
        );
        // what was found is now in the shard's own file: it answers alone
        let alone = CachedEmbedder::open(Flaky::new(0), path("embeddings.shard-1.redb")).unwrap();
        assert_eq!(alone.embed(&texts).unwrap(), got);
        assert_eq!(alone.stats().hits, 4);
    }

    /// Found by the cache fuzz target: one byte of a cache file's header changed (offset 257 set
    /// to 24) made redb panic in `Database::drop`, after the run's vectors were computed, killing
    /// the process. Closing the cache now survives it, and what it returned is still right.
    #[test]
    fn a_damaged_header_does_not_panic_when_the_cache_closes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("embeddings.redb");
        let texts: Vec<String> = (0..48)
            .map(|i| format!("text {i} {}", "x".repeat(i)))
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let fresh = Flaky::new(usize::MAX).embed(&refs).unwrap();
        CachedEmbedder::open(Flaky::new(usize::MAX), &path)
            .unwrap()
            .embed(&refs)
            .unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[257] = 24;
        std::fs::write(&path, &bytes).unwrap();
        let closed = std::panic::catch_unwind(|| {
            if let Ok(cache) = CachedEmbedder::open(Flaky::new(usize::MAX), &path) {
                if let Ok(vectors) = cache.embed(&refs) {
                    assert_eq!(vectors, fresh);
                }
            }
        });
        assert!(closed.is_ok(), "a panic escaped the cache");
    }

    /// Found by the cache fuzz target: one byte of the primary commit slot (the high byte of the
    /// system tree's root page number, offset 239 there) made redb, which trusts a cleanly closed
    /// file's slot, allocate 2 TiB on open: the process aborted, past any panic catching. Every
    /// open now checks the slot first; the file is named, verify reports it, repair moves it
    /// aside, a merge refuses it, and a sibling shard's damaged file is skipped.
    #[test]
    fn a_damaged_commit_slot_is_refused_before_redb_reads_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("embeddings.redb");
        let texts = ["one", "two", "three"];
        CachedEmbedder::open(Flaky::new(usize::MAX), &path)
            .unwrap()
            .embed(&texts)
            .unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        let slot = 64 + 128 * usize::from(bytes[9] & 1 != 0);
        bytes[slot + 47] = 0xEA;
        std::fs::write(&path, &bytes).unwrap();

        let opened = CachedEmbedder::open(Flaky::new(usize::MAX), &path)
            .err()
            .expect("refused")
            .to_string();
        assert!(opened.contains("embeddings.redb"), "{opened}");
        assert!(opened.contains("fails its checksum"), "{opened}");
        assert!(opened.contains("sage cache repair"), "{opened}");
        assert!(check_cache(&path, false).is_err());
        let merged = dir.path().join("merged.redb");
        let refused = merge_caches(&merged, std::slice::from_ref(&path)).unwrap_err();
        assert!(
            refused.to_string().contains("fails its checksum"),
            "{refused}"
        );

        // a shard beside the damaged file embeds for itself
        let shard = CachedEmbedder::open(
            Flaky::new(usize::MAX),
            dir.path().join("embeddings.shard-1.redb"),
        )
        .unwrap()
        .reading_siblings(dir.path());
        assert_eq!(
            shard.embed(&texts).unwrap(),
            Flaky::new(usize::MAX).embed(&texts).unwrap()
        );
        assert_eq!(shard.stats().hits, 0);
        drop(shard);

        let repaired = check_cache(&path, true).unwrap();
        assert!(repaired.moved_to.is_some_and(|aside| aside.exists()));
        assert!(!path.exists());
        assert!(CachedEmbedder::open(Flaky::new(usize::MAX), &path).is_ok());
    }

    /// A changed byte, a value moved under another text's key, a NaN stored with a valid
    /// checksum, a cut entry: each is reported as corrupt and recomputed, never returned
    /// (before, four overwritten bytes returned a changed vector and a NaN printed as null).
    #[test]
    fn corrupt_entries_are_recomputed_never_returned() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("embeddings.redb");
        let texts = ["alpha text", "beta text", "gamma text", "delta text"];
        let fresh = Flaky::new(usize::MAX).embed(&texts).unwrap();
        let (keys, stored): (Vec<[u8; 32]>, Vec<Vec<u8>>) = {
            let cached = CachedEmbedder::open(Flaky::new(usize::MAX), &path).unwrap();
            cached.embed(&texts).unwrap();
            let keys: Vec<[u8; 32]> = texts.iter().map(|t| cached.key(t, None)).collect();
            let txn = cached.db().begin_read().unwrap();
            let table = txn.open_table(TABLE).unwrap();
            let stored = keys
                .iter()
                .map(|k| table.get(k.as_slice()).unwrap().unwrap().value().to_vec())
                .collect();
            (keys, stored)
        };
        let mut flipped = stored[0].clone();
        flipped[CHECKSUM + 2] ^= 0x40;
        tamper(&path, keys[0], &flipped);
        tamper(&path, keys[1], &stored[2]);
        let mut nan = stored[3][CHECKSUM..].to_vec();
        nan[TAG..TAG + 4].copy_from_slice(&f32::NAN.to_le_bytes());
        let mut with_sum = checksum(&keys[3], &nan[..TAG], &nan[TAG..]).to_vec();
        with_sum.extend(&nan);
        tamper(&path, keys[3], &with_sum);
        let cached = CachedEmbedder::open(Flaky::new(usize::MAX), &path).unwrap();
        let got = cached.embed(&texts).unwrap();
        assert_eq!(got, fresh, "every vector as the embedder gives it");
        assert_eq!(
            cached.stats(),
            CacheStats {
                hits: 1,
                misses: 3,
                corrupt: 3,
                from_siblings: 0
            }
        );
        assert!(cached.corruption().unwrap().contains("checksum"));
        drop(cached);
        // overwritten: the next run finds them sound
        let again = CachedEmbedder::open(Flaky::new(usize::MAX), &path).unwrap();
        assert_eq!(again.embed(&texts).unwrap(), fresh);
        assert_eq!(again.stats().corrupt, 0);
        drop(again);
        tamper(&path, keys[2], &stored[2][..CHECKSUM + 6]);
        let cut = CachedEmbedder::open(Flaky::new(usize::MAX), &path).unwrap();
        assert_eq!(cut.embed(&texts).unwrap(), fresh);
        assert_eq!(cut.stats().corrupt, 1);
        assert!(
            cut.corruption().unwrap().contains("bytes"),
            "{:?}",
            cut.corruption()
        );
    }

    /// `sage cache verify` counts what a run would find corrupt and writes nothing; `repair`
    /// removes those entries; a file redb cannot read (truncated, overwritten) is an error,
    /// never a panic, and repair moves it aside so that the next run starts afresh.
    #[test]
    fn verify_and_repair_offline() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("embeddings.redb");
        let texts = ["one", "two", "three"];
        let left_open = dir.path().join("left-open.redb");
        let key = {
            let cached = CachedEmbedder::open(Flaky::new(usize::MAX), &path).unwrap();
            cached.embed(&texts).unwrap();
            // the file as a killed run leaves it: committed entries, never closed
            std::fs::copy(&path, &left_open).unwrap();
            cached.key("two", None)
        };
        let unclean = std::fs::read(&left_open).unwrap();
        assert!(matches!(
            redb::ReadOnlyDatabase::open(&left_open),
            Err(redb::DatabaseError::RepairAborted)
        ));
        let check = check_cache(&left_open, false).unwrap();
        assert_eq!((check.entries, check.corrupt), (3, 0));
        assert!(
            std::fs::read(&left_open).unwrap() == unclean,
            "verify recovered the file itself"
        );
        let clean = check_cache(&path, false).unwrap();
        assert_eq!((clean.entries, clean.corrupt), (3, 0));
        tamper(&path, key, &[1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0x80, 0x7f]);
        let before = std::fs::read(&path).unwrap();
        let found = check_cache(&path, false).unwrap();
        assert_eq!((found.entries, found.corrupt, found.removed), (3, 1, 0));
        // verifying once rewrote 4,284 bytes of the file (redb's allocator state, on close)
        assert!(
            std::fs::read(&path).unwrap() == before,
            "verify changed the file"
        );
        assert!(found.first_failure.unwrap().contains("checksum"));
        assert_eq!(
            check_cache(&path, false).unwrap().corrupt,
            1,
            "verify writes nothing"
        );
        let repaired = check_cache(&path, true).unwrap();
        assert_eq!((repaired.corrupt, repaired.removed), (1, 1));
        let after = check_cache(&path, false).unwrap();
        assert_eq!((after.entries, after.corrupt), (2, 0));
        // a cache another process has open is left where it is, not moved aside as broken
        {
            let running = CachedEmbedder::open(Flaky::new(usize::MAX), &path).unwrap();
            let busy = check_cache(&path, true).unwrap_err().to_string();
            assert!(busy.contains("in use by another process"), "{busy}");
            assert!(path.exists());
            drop(running);
        }

        // cut the file short: whatever redb makes of it, no panic escapes
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() / 3]).unwrap();
        let opened = std::panic::catch_unwind(|| {
            CachedEmbedder::open(Flaky::new(usize::MAX), &path)
                .and_then(|c| c.embed(&texts).map_err(Into::into))
        })
        .expect("no panic");
        if let Err(e) = opened {
            assert!(e.to_string().contains("embeddings.redb"), "{e}");
        }
        // overwrite the header region with garbage
        let mut garbage = bytes.clone();
        for b in garbage.iter_mut().take(4096) {
            *b = 0xA5;
        }
        std::fs::write(&path, &garbage).unwrap();
        let verified = std::panic::catch_unwind(|| check_cache(&path, false)).expect("no panic");
        assert!(verified.is_err(), "{verified:?}");
        let moved = check_cache(&path, true).unwrap();
        let aside = moved.moved_to.expect("moved aside");
        assert!(aside.exists() && !path.exists());
        let fresh = CachedEmbedder::open(Flaky::new(usize::MAX), &path).unwrap();
        assert_eq!(
            fresh.embed(&texts).unwrap(),
            Flaky::new(usize::MAX).embed(&texts).unwrap()
        );
    }

    #[test]
    fn a_killed_run_resumes_with_only_the_missing_texts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/embeddings.redb");
        let texts: Vec<String> = (0..10).map(|i| format!("text number {i}")).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        {
            // dies while embedding the third chunk of 3
            let cached = CachedEmbedder::open(Flaky::new(7), &path)
                .unwrap()
                .with_chunk(3);
            assert!(cached.embed(&refs).is_err());
            assert_eq!(
                cached.stats(),
                CacheStats {
                    hits: 0,
                    misses: 6,
                    corrupt: 0,
                    from_siblings: 0
                }
            );
        }
        let cached = CachedEmbedder::open(Flaky::new(usize::MAX), &path)
            .unwrap()
            .with_chunk(3);
        let resumed = cached.embed(&refs).unwrap();
        assert_eq!(
            cached.stats(),
            CacheStats {
                hits: 6,
                misses: 4,
                corrupt: 0,
                from_siblings: 0
            }
        );
        assert_eq!(
            cached.inner().embedded.load(Ordering::SeqCst),
            4,
            "only the missing texts are embedded"
        );
        let fresh = Flaky::new(usize::MAX).embed(&refs).unwrap();
        assert_eq!(resumed, fresh, "cached vectors are bit-identical");
        let again = cached.embed(&refs).unwrap();
        assert_eq!(again, fresh);
        assert_eq!(
            cached.stats(),
            CacheStats {
                hits: 16,
                misses: 4,
                corrupt: 0,
                from_siblings: 0
            }
        );
    }

    #[test]
    fn a_text_repeated_in_one_call_is_embedded_once() {
        let dir = tempfile::tempdir().unwrap();
        let cached =
            CachedEmbedder::open(Flaky::new(usize::MAX), dir.path().join("c.redb")).unwrap();
        let got = cached.embed(&["a", "b", "a", "a"]).unwrap();
        assert_eq!(cached.inner().embedded.load(Ordering::SeqCst), 2);
        assert_eq!(got.row(0), got.row(2));
        assert_eq!(
            got,
            Flaky::new(usize::MAX).embed(&["a", "b", "a", "a"]).unwrap()
        );
    }

    #[test]
    fn identities_do_not_share_entries() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.redb");
        {
            let a = CachedEmbedder::open(Flaky::new(usize::MAX), &path).unwrap();
            a.embed(&["x"]).unwrap();
        }
        let mut other = Flaky::new(usize::MAX);
        other.identity.revision = Some("r2".into());
        let b = CachedEmbedder::open(other, &path).unwrap();
        b.embed(&["x"]).unwrap();
        assert_eq!(
            b.stats(),
            CacheStats {
                hits: 0,
                misses: 1,
                corrupt: 0,
                from_siblings: 0
            }
        );
    }
}
