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
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use ndarray::Array2;
use redb::{Database, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition};
use sage_cache::CacheMerge;
use sage_core::{Embedder, EmbedderIdentity, RemoteUsage, Role, SageError};
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
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
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
    /// Seconds in the model's embed calls for the misses, storing their vectors included.
    pub embedding_seconds: f64,
}

/// What a planned run would send: distinct texts found in the cache and not, and the tokens of
/// the ones not found (see [`CachedEmbedder::planning`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PlanCounts {
    /// Distinct texts (per role) already cached: they cost nothing.
    pub cached_texts: u64,
    /// Texts that would be sent: each distinct text (per role) the cache lacks, once; and every
    /// text given to a caller that bypasses the cache ([`Embedder::uncached`]: the throughput
    /// suite times the model itself), each time it is given, cached or not.
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

/// A planning cache's answer to [`Embedder::uncached`]: the model as a caller that bypasses the
/// cache would reach it. Such a caller sends every text it is given, cached or repeated, so each
/// one counts as sent; none is (stand-in vectors, as for the cache's misses).
struct PlanBypass {
    planner: Arc<Planner>,
    identity: EmbedderIdentity,
    dimension: usize,
    /// The model's usage when planning began (nothing is sent, so it stays so): `Some` tells the
    /// caller, as the model itself would, that texts sent cost requests and tokens.
    usage: Option<RemoteUsage>,
}

impl Embedder for PlanBypass {
    fn identity(&self) -> &EmbedderIdentity {
        &self.identity
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    fn embed(&self, texts: &[&str]) -> sage_core::Result<Array2<f32>> {
        {
            let mut seen = self.planner.seen.lock().unwrap_or_else(|e| e.into_inner());
            for text in texts {
                seen.1.texts_to_send += 1;
                seen.1.tokens_to_send += (self.planner.count_tokens)(text);
            }
        }
        let width = match self.dimension {
            0 => STAND_IN_WIDTH,
            d => d,
        };
        let values: Vec<f32> = texts
            .iter()
            .flat_map(|text| stand_in(&Sha256::digest(text.as_bytes()).into(), width))
            .collect();
        Ok(Array2::from_shape_vec((texts.len(), width), values)
            .expect("one stand-in of the width per text"))
    }

    fn remote_usage(&self) -> Option<RemoteUsage> {
        self.usage.clone()
    }
}

/// The width of stand-in vectors for a model that states none and has no vector cached yet.
const STAND_IN_WIDTH: usize = 16;

/// The vector a plan answers for a text it does not send, derived from the text's `key`:
/// distinct texts get distinct vectors, so no task stumbles on ties or constants.
fn stand_in(key: &[u8; 32], width: usize) -> Vec<f32> {
    let mut state = u64::from_le_bytes(key[..8].try_into().expect("8 bytes"));
    (0..width)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 40) as f32 / (1u64 << 24) as f32) - 0.5
        })
        .collect()
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
    /// Nanoseconds in the model's embed calls.
    embedding_nanos: AtomicU64,
    /// The folder whose other `embeddings*.redb` files are read for what this one lacks.
    siblings: Option<PathBuf>,
    /// What the first corrupt entry failed.
    first_corruption: Mutex<Option<String>>,
    planner: Option<Arc<Planner>>,
    /// What [`Embedder::uncached`] gives while planning.
    plan_bypass: Option<PlanBypass>,
    /// The model's tag ([`model_tag`]), which every entry it stores carries.
    tag: Tag,
}

/// `embeddings.redb` in [`sage_cache::cache_dir`].
pub fn default_cache_path() -> PathBuf {
    sage_cache::cache_dir().join("embeddings.redb")
}

fn cache_error(path: &Path, e: impl std::fmt::Display) -> EmbedError {
    EmbedError::Cache {
        path: path.to_owned(),
        message: e.to_string(),
    }
}

impl From<sage_cache::CacheError> for EmbedError {
    fn from(e: sage_cache::CacheError) -> Self {
        EmbedError::Cache {
            path: e.path,
            message: e.message,
        }
    }
}

/// What a user does about an embedding cache file that cannot be used.
fn remedy(path: &Path) -> sage_cache::Remedy {
    sage_cache::Remedy {
        broken: format!(
            "`sage cache repair --cache {}` moves it aside, or pass --no-cache",
            path.display()
        ),
        in_use: "run one at a time, pass another --cache file, or --no-cache".into(),
    }
}

/// Runs `work` on the redb file at `path`, a redb panic becoming an error that says what to do
/// ([`sage_cache::guarded`]).
fn guarded<T>(path: &Path, work: impl FnOnce() -> Result<T>) -> Result<T> {
    sage_cache::guarded(path, &remedy(path), work)
}

mod maintenance;
pub use maintenance::{check_cache, merge_caches, CacheCheck};

impl<E: Embedder> CachedEmbedder<E> {
    /// Wraps `inner` with the cache file at `path` (created, with its folder, if missing).
    /// Misses are committed every 256 texts, or, for an embedder that delivers batches (a remote
    /// one), every answer as it arrives.
    pub fn open(inner: E, path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_owned();
        // a sibling's momentary read lock (see `reading_siblings`) is waited out
        let opened = sage_cache::open(&path, &remedy(&path))?;
        let tag = model_tag(inner.identity());
        let cache = CachedEmbedder {
            inner,
            db: Some(opened.database),
            path,
            chunk: 256,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            corrupt: AtomicU64::new(0),
            from_siblings: AtomicU64::new(0),
            embedding_nanos: AtomicU64::new(0),
            siblings: None,
            first_corruption: Mutex::new(None),
            planner: None,
            plan_bypass: None,
            tag,
        };
        if opened.rolled_back {
            cache.note_corrupt(sage_cache::ROLLED_BACK.into());
        }
        Ok(cache)
    }

    /// A planning cache: texts found are returned as usual, texts not found are counted (once
    /// each, with `count_tokens`) and answered with stand-in vectors, never sent to the embedder
    /// and never stored. A task run through it tells what the real run would send
    /// ([`CachedEmbedder::plan`]); its scores mean nothing. A caller that bypasses the cache
    /// ([`Embedder::uncached`]) gets a view that counts every text it is given, since it would
    /// send them all.
    pub fn planning(inner: E, path: impl AsRef<Path>, count_tokens: TokenCounter) -> Result<Self> {
        let mut cache = Self::open(inner, path)?;
        let planner = Arc::new(Planner {
            count_tokens,
            seen: Mutex::new((HashSet::new(), PlanCounts::default())),
        });
        // the cache's vectors' width when the model states none before it is called (a remote
        // one), so that stand-ins match what the cache gives
        let dimension = guarded(&cache.path, || {
            let txn = cache
                .db()
                .begin_read()
                .map_err(|e| cache_error(&cache.path, e))?;
            cache.expected_width(&txn)
        })?;
        cache.plan_bypass = Some(PlanBypass {
            planner: Arc::clone(&planner),
            identity: cache.inner.identity().clone(),
            dimension,
            usage: cache.inner.remote_usage(),
        });
        cache.planner = Some(planner);
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
            embedding_seconds: self.embedding_nanos.load(Ordering::Relaxed) as f64 * 1e-9,
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
        // a sibling unreadable for now (its writer holds it, or it needs its owner's repair) is
        // skipped: the text is embedded here instead, which gives the same vector
        sage_cache::read_siblings(dir, "embeddings", &self.path, |_, db| {
            let Ok(txn) = db.begin_read() else {
                return ControlFlow::Continue(());
            };
            let Ok(table) = txn.open_table(TABLE) else {
                return ControlFlow::Continue(());
            };
            for (i, key) in keys.iter().enumerate() {
                if rows[i].is_some() {
                    continue;
                }
                let Ok(entry) = table.get(key.as_slice()) else {
                    return ControlFlow::Continue(());
                };
                let entry = entry.and_then(|v| decode_entry(key, v.value(), dim).ok());
                if let Some(vector) = entry.filter(|e| e.tag == self.tag).map(|e| e.values) {
                    found.push(vector.clone());
                    found_rows.push(i);
                    rows[i] = Some(vector);
                }
            }
            if rows.iter().all(Option::is_some) {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
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
            0 => rows
                .iter()
                .flatten()
                .next()
                .map_or(STAND_IN_WIDTH, Vec::len),
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
            rows[i] = Some(stand_in(key, width));
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
    pass_through!(
        inner: identity,
        dimension,
        role_variant,
        remote_usage,
        count_tokens,
        load_seconds,
        compute,
        matryoshka_trained,
        full_precision
    );

    fn embed(&self, texts: &[&str]) -> sage_core::Result<Array2<f32>> {
        self.embed_as(texts, Role::Plain)
    }

    fn uncached(&self) -> Option<&dyn Embedder> {
        match &self.plan_bypass {
            Some(bypass) => Some(bypass),
            None => Some(&self.inner),
        }
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
                let started = std::time::Instant::now();
                let embedded =
                    self.inner
                        .embed_batches(&group_texts, role, &mut |start, vectors| {
                            let at =
                                group.get(start..start + vectors.nrows()).ok_or_else(|| {
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
                        });
                // a failed call's seconds were spent too
                self.embedding_nanos
                    .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
                embedded?;
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
mod tests;
