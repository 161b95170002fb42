//! The paraphrase cache: a redb file beside the embedding cache (`paraphrases.redb`).
//!
//! Key: SHA-256 of the request's identity — the paraphraser (backend, model and checksum,
//! prompt, temperature, top-p, retry rule), the seed and the text. Value: the outcome as JSON.
//! Every outcome is committed on its own as soon as it exists, so a killed run loses at most
//! the generations in flight, and a re-run (or a run with another encoder) generates only what
//! is missing.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use serde::{de::DeserializeOwned, Serialize};
use sha2::{Digest, Sha256};

use crate::{PtebError, Result};

const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("paraphrases-v1");

/// A persistent map from request identities to outcomes.
pub struct ParaphraseCache {
    db: Database,
    path: PathBuf,
    /// The folder whose other `paraphrases*.redb` files are read for what this one lacks.
    siblings: Option<PathBuf>,
}

/// `paraphrases.redb` in [`sage_cache::cache_dir`].
pub fn default_cache_path() -> PathBuf {
    sage_cache::cache_dir().join("paraphrases.redb")
}

/// The key of a request: SHA-256 of its parts, each followed by a 0 byte.
pub fn request_key(parts: &[&str]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0]);
    }
    h.finalize().into()
}

/// What a user does about a paraphrase cache file that cannot be used.
fn remedy() -> sage_cache::Remedy {
    sage_cache::Remedy {
        broken: "move it aside or pass another --paraphrase-cache".into(),
        in_use: "run one at a time, or pass another --paraphrase-cache".into(),
    }
}

impl ParaphraseCache {
    /// Opens (creating file and folder if missing) the cache at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<ParaphraseCache> {
        let path = path.as_ref().to_owned();
        // a dropped last commit ([`sage_cache::Opened::rolled_back`]) costs only paraphrases
        // asked again: this cache keeps no corruption count to report it in
        let db = sage_cache::open(&path, &remedy())?.database;
        Ok(ParaphraseCache {
            db,
            path,
            siblings: None,
        })
    }

    /// The cache a run's settings name: none when `disabled`; else the file at `path` (default
    /// [`default_cache_path`]), reading what it lacks from the other cache files of `siblings`
    /// when given (see [`ParaphraseCache::reading_siblings`]).
    pub fn for_run(
        disabled: bool,
        path: Option<&Path>,
        siblings: Option<&Path>,
    ) -> Result<Option<std::sync::Arc<ParaphraseCache>>> {
        if disabled {
            return Ok(None);
        }
        let mut cache = match path {
            Some(path) => ParaphraseCache::open(path)?,
            None => ParaphraseCache::open(default_cache_path())?,
        };
        if let Some(dir) = siblings {
            cache = cache.reading_siblings(dir);
        }
        Ok(Some(std::sync::Arc::new(cache)))
    }

    /// Also look up what this cache lacks in the other `paraphrases*.redb` files of `dir` (a
    /// sharded run's other shards, the merged cache), copying what is found into this file.
    /// A sibling is opened read-only for one lookup, and skipped while its writer holds it or
    /// when it cannot be read: the paraphrase is then generated here, the same one (seeded).
    pub fn reading_siblings(mut self, dir: impl Into<PathBuf>) -> Self {
        self.siblings = Some(dir.into());
        self
    }

    /// The bytes stored under `key` in the first readable sibling that has them.
    fn sibling_bytes(&self, key: &[u8; 32]) -> Option<Vec<u8>> {
        let dir = self.siblings.as_ref()?;
        let mut found = None;
        sage_cache::read_siblings(dir, "paraphrases", &self.path, |_, db| {
            let bytes = (|| {
                let txn = db.begin_read().ok()?;
                let table = txn.open_table(TABLE).ok()?;
                let bytes = table.get(key.as_slice()).ok()??.value().to_vec();
                Some(bytes)
            })();
            match bytes {
                Some(bytes) => {
                    found = Some(bytes);
                    ControlFlow::Break(())
                }
                None => ControlFlow::Continue(()),
            }
        });
        found
    }

    /// The cache file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn error(&self, e: impl std::fmt::Display) -> PtebError {
        PtebError::Cache {
            path: self.path.clone(),
            message: e.to_string(),
        }
    }

    /// The stored value of `key` (here, else in a readable sibling, then copied here); `None`
    /// when absent or unreadable (then it is recomputed and overwritten).
    pub fn get<T: DeserializeOwned>(&self, key: &[u8; 32]) -> Result<Option<T>> {
        match self.get_own(key)? {
            Some(found) => Ok(Some(found)),
            None => self.get_from_siblings(key),
        }
    }

    fn get_own<T: DeserializeOwned>(&self, key: &[u8; 32]) -> Result<Option<T>> {
        let txn = self.db.begin_read().map_err(|e| self.error(e))?;
        let table = match txn.open_table(TABLE) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(self.error(e)),
        };
        let value = table.get(key.as_slice()).map_err(|e| self.error(e))?;
        Ok(value.and_then(|v| serde_json::from_slice(v.value()).ok()))
    }

    fn get_from_siblings<T: DeserializeOwned>(&self, key: &[u8; 32]) -> Result<Option<T>> {
        let Some(bytes) = self.sibling_bytes(key) else {
            return Ok(None);
        };
        let Ok(found) = serde_json::from_slice::<T>(&bytes) else {
            return Ok(None);
        };
        self.put_bytes(key, &bytes)?;
        Ok(Some(found))
    }

    /// Stores `value` under `key` durably.
    pub fn put<T: Serialize>(&self, key: &[u8; 32], value: &T) -> Result<()> {
        let bytes = serde_json::to_vec(value).map_err(|e| self.error(e))?;
        self.put_bytes(key, &bytes)
    }

    fn put_bytes(&self, key: &[u8; 32], bytes: &[u8]) -> Result<()> {
        let txn = self.db.begin_write().map_err(|e| self.error(e))?;
        {
            let mut table = txn.open_table(TABLE).map_err(|e| self.error(e))?;
            table
                .insert(key.as_slice(), bytes)
                .map_err(|e| self.error(e))?;
        }
        txn.commit().map_err(|e| self.error(e))
    }
}

/// Folds the paraphrase cache files `sources` into the one at `into` (created if missing):
/// an entry is copied when `into` lacks its key, or holds bytes there that are not an outcome
/// (JSON); a source entry that is not one is skipped and counted. Idempotent; the sources are
/// only read; all copies are one transaction, so a killed merge leaves the target as it was.
pub fn merge_paraphrase_caches(into: &Path, sources: &[PathBuf]) -> Result<sage_cache::CacheMerge> {
    let error = |path: &Path, e: &dyn std::fmt::Display| PtebError::Cache {
        path: path.to_owned(),
        message: e.to_string(),
    };
    let target = ParaphraseCache::open(into)?;
    let mut merge = sage_cache::CacheMerge {
        into: into.to_owned(),
        sources: sources.len(),
        ..sage_cache::CacheMerge::default()
    };
    let is_outcome = |bytes: &[u8]| serde_json::from_slice::<serde_json::Value>(bytes).is_ok();
    let txn = target.db.begin_write().map_err(|e| error(into, &e))?;
    {
        let mut table = txn.open_table(TABLE).map_err(|e| error(into, &e))?;
        for source in sources {
            if source == into {
                return Err(error(source, &"is the merge's target too"));
            }
            let db = sage_cache::open_read_only(source, &remedy())?;
            let read = db.begin_read().map_err(|e| error(source, &e))?;
            let entries = match read.open_table(TABLE) {
                Ok(t) => t,
                Err(redb::TableError::TableDoesNotExist(_)) => continue,
                Err(e) => return Err(error(source, &e)),
            };
            for item in entries.iter().map_err(|e| error(source, &e))? {
                let (key, value) = item.map_err(|e| error(source, &e))?;
                let (key, value) = (key.value(), value.value());
                if !is_outcome(value) {
                    merge.corrupt_skipped += 1;
                    continue;
                }
                let held = table
                    .get(key)
                    .map_err(|e| error(into, &e))?
                    .map(|v| v.value().to_vec());
                match held {
                    Some(bytes) if bytes == value => merge.already_present += 1,
                    Some(bytes) if is_outcome(&bytes) => merge.differing += 1,
                    _ => {
                        table.insert(key, value).map_err(|e| error(into, &e))?;
                        merge.copied += 1;
                    }
                }
            }
        }
    }
    txn.commit().map_err(|e| error(into, &e))?;
    Ok(merge)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(path: &Path, entries: &[(&str, &str)]) {
        let cache = ParaphraseCache::open(path).unwrap();
        for (text, paraphrase) in entries {
            cache
                .put(&request_key(&[text]), &paraphrase.to_string())
                .unwrap();
        }
    }

    /// Shards' paraphrase files fold into one: the union; a source entry that is not JSON is
    /// skipped; the target's own differing entry is kept; merging again copies nothing.
    #[test]
    fn merging_paraphrase_caches_is_a_checked_idempotent_union() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, into) = (
            dir.path().join("paraphrases.shard-0.redb"),
            dir.path().join("paraphrases.shard-1.redb"),
            dir.path().join("paraphrases.redb"),
        );
        put(&a, &[("one", "uno"), ("two", "dos")]);
        put(&b, &[("two", "dos"), ("three", "tres")]);
        put(&into, &[("three", "drei")]);
        {
            let db = Database::create(&b).unwrap();
            let txn = db.begin_write().unwrap();
            txn.open_table(TABLE)
                .unwrap()
                .insert(request_key(&["four"]).as_slice(), b"{not json".as_slice())
                .unwrap();
            txn.commit().unwrap();
        }
        let merged = merge_paraphrase_caches(&into, &[a.clone(), b.clone()]).unwrap();
        assert_eq!(
            (
                merged.copied,
                merged.already_present,
                merged.differing,
                merged.corrupt_skipped
            ),
            (2, 1, 1, 1)
        );
        let again = merge_paraphrase_caches(&into, &[a.clone(), b.clone()]).unwrap();
        assert_eq!((again.copied, again.already_present), (0, 3));
        let cache = ParaphraseCache::open(&into).unwrap();
        let get = |t: &str| cache.get::<String>(&request_key(&[t])).unwrap();
        assert_eq!(get("one").as_deref(), Some("uno"));
        assert_eq!(get("three").as_deref(), Some("drei"));
        assert_eq!(get("four"), None);
        assert!(merge_paraphrase_caches(&a, std::slice::from_ref(&a)).is_err());
    }

    /// A shard's cache answers from a finished sibling (and keeps the answer), and skips one
    /// whose writer holds it.
    #[test]
    fn a_shard_reads_its_siblings_paraphrases() {
        let dir = tempfile::tempdir().unwrap();
        put(
            &dir.path().join("paraphrases.shard-0.redb"),
            &[("one", "uno")],
        );
        let busy = ParaphraseCache::open(dir.path().join("paraphrases.shard-2.redb")).unwrap();
        busy.put(&request_key(&["two"]), &"dos".to_string())
            .unwrap();
        let own = dir.path().join("paraphrases.shard-1.redb");
        let shard = ParaphraseCache::open(&own)
            .unwrap()
            .reading_siblings(dir.path());
        assert_eq!(
            shard
                .get::<String>(&request_key(&["one"]))
                .unwrap()
                .as_deref(),
            Some("uno")
        );
        assert_eq!(shard.get::<String>(&request_key(&["two"])).unwrap(), None);
        drop(shard);
        drop(busy);
        let alone = ParaphraseCache::open(&own).unwrap();
        assert_eq!(
            alone
                .get::<String>(&request_key(&["one"]))
                .unwrap()
                .as_deref(),
            Some("uno"),
            "copied into the shard's own file"
        );
    }
}
