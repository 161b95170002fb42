//! The paraphrase cache: a redb file beside the embedding cache (`paraphrases.redb`).
//!
//! Key: SHA-256 of the request's identity — the paraphraser (backend, model and checksum,
//! prompt, temperature, top-p, retry rule), the seed and the text. Value: the outcome as JSON.
//! Every outcome is committed on its own as soon as it exists, so a killed run loses at most
//! the generations in flight, and a re-run (or a run with another encoder) generates only what
//! is missing.

use std::path::{Path, PathBuf};

use redb::{Database, ReadableDatabase, TableDefinition};
use serde::{de::DeserializeOwned, Serialize};
use sha2::{Digest, Sha256};

use crate::{PtebError, Result};

const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("paraphrases-v1");

/// A persistent map from request identities to outcomes.
pub struct ParaphraseCache {
    db: Database,
    path: PathBuf,
}

/// `SAGE_CACHE_DIR`, else `$XDG_CACHE_HOME/sage-rs`, else `~/.cache/sage-rs`:
/// `paraphrases.redb` there.
pub fn default_cache_path() -> PathBuf {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    env("SAGE_CACHE_DIR")
        .or_else(|| env("XDG_CACHE_HOME").map(|d| d.join("sage-rs")))
        .or_else(|| env("HOME").map(|h| h.join(".cache/sage-rs")))
        .unwrap_or_else(|| PathBuf::from(".sage-cache"))
        .join("paraphrases.redb")
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

impl ParaphraseCache {
    /// Opens (creating file and folder if missing) the cache at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<ParaphraseCache> {
        let path = path.as_ref().to_owned();
        let error = |m: String| PtebError::Cache {
            path: path.clone(),
            message: m,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| error(format!("cannot create folder: {e}")))?;
        }
        let db = Database::create(&path).map_err(|e| match e {
            redb::DatabaseError::DatabaseAlreadyOpen => error(
                "in use by another process (run one at a time, or pass another --paraphrase-cache)"
                    .into(),
            ),
            other => error(other.to_string()),
        })?;
        Ok(ParaphraseCache { db, path })
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

    /// The stored value of `key`; `None` when absent or unreadable (then it is recomputed and
    /// overwritten).
    pub fn get<T: DeserializeOwned>(&self, key: &[u8; 32]) -> Result<Option<T>> {
        let txn = self.db.begin_read().map_err(|e| self.error(e))?;
        let table = match txn.open_table(TABLE) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(self.error(e)),
        };
        let value = table.get(key.as_slice()).map_err(|e| self.error(e))?;
        Ok(value.and_then(|v| serde_json::from_slice(v.value()).ok()))
    }

    /// Stores `value` under `key` durably.
    pub fn put<T: Serialize>(&self, key: &[u8; 32], value: &T) -> Result<()> {
        let bytes = serde_json::to_vec(value).map_err(|e| self.error(e))?;
        let txn = self.db.begin_write().map_err(|e| self.error(e))?;
        {
            let mut table = txn.open_table(TABLE).map_err(|e| self.error(e))?;
            table
                .insert(key.as_slice(), bytes.as_slice())
                .map_err(|e| self.error(e))?;
        }
        txn.commit().map_err(|e| self.error(e))
    }
}
