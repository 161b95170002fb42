//! A persistent, crash-safe embedding cache (redb).
//!
//! Key: SHA-256 of the embedder identity's cache key (model id, weights revision, pooling,
//! normalisation, max length) and the text; value: the vector as little-endian f32. Misses are
//! embedded and committed in chunks, each chunk its own durable transaction, so a killed process
//! loses at most the chunk in flight and a re-run embeds only what is missing.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use ndarray::Array2;
use redb::{Database, ReadableDatabase, TableDefinition};
use sage_core::{Embedder, EmbedderIdentity};
use sha2::{Digest, Sha256};

use crate::error::{EmbedError, Result};

const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("embeddings-v1");

/// Hits and misses since the cache was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CacheStats {
    /// Texts found in the cache.
    pub hits: u64,
    /// Texts embedded (and stored).
    pub misses: u64,
}

/// An [`Embedder`] that looks texts up in a persistent cache before embedding them.
pub struct CachedEmbedder<E> {
    inner: E,
    db: Database,
    path: PathBuf,
    chunk: usize,
    hits: AtomicU64,
    misses: AtomicU64,
}

/// `SAGE_CACHE_DIR`, else `$XDG_CACHE_HOME/sage-rs`, else `~/.cache/sage-rs`: the folder of
/// `embeddings.redb`.
pub fn default_cache_path() -> PathBuf {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let dir = env("SAGE_CACHE_DIR")
        .or_else(|| env("XDG_CACHE_HOME").map(|d| d.join("sage-rs")))
        .or_else(|| env("HOME").map(|h| h.join(".cache/sage-rs")))
        .unwrap_or_else(|| PathBuf::from(".sage-cache"));
    dir.join("embeddings.redb")
}

fn cache_error(path: &Path, e: impl std::fmt::Display) -> EmbedError {
    EmbedError::Cache {
        path: path.to_owned(),
        message: e.to_string(),
    }
}

impl<E: Embedder> CachedEmbedder<E> {
    /// Wraps `inner` with the cache file at `path` (created, with its folder, if missing).
    /// Misses are committed every 256 texts.
    pub fn open(inner: E, path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_owned();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| cache_error(&path, format!("cannot create folder: {e}")))?;
        }
        let db = Database::create(&path).map_err(|e| match e {
            redb::DatabaseError::DatabaseAlreadyOpen => cache_error(
                &path,
                "in use by another process (run one at a time, pass another --cache file, or --no-cache)",
            ),
            other => cache_error(&path, other),
        })?;
        Ok(CachedEmbedder {
            inner,
            db,
            path,
            chunk: 256,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        })
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

    fn key(&self, text: &str) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(self.inner.identity().cache_key().as_bytes());
        h.update([0]);
        h.update(text.as_bytes());
        h.finalize().into()
    }

    fn lookup(&self, keys: &[[u8; 32]], out: &mut Array2<f32>) -> Result<Vec<usize>> {
        let dim = out.ncols();
        let txn = self
            .db
            .begin_read()
            .map_err(|e| cache_error(&self.path, e))?;
        let table = match txn.open_table(TABLE) {
            Ok(t) => Some(t),
            Err(redb::TableError::TableDoesNotExist(_)) => None,
            Err(e) => return Err(cache_error(&self.path, e)),
        };
        let mut missing = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            let found = match &table {
                Some(t) => t
                    .get(key.as_slice())
                    .map_err(|e| cache_error(&self.path, e))?,
                None => None,
            };
            match found {
                // a value of the wrong size (another model under a colliding key, a truncated
                // write) is treated as a miss and overwritten
                Some(v) if v.value().len() == dim * 4 => {
                    for (slot, b) in out.row_mut(i).iter_mut().zip(v.value().chunks_exact(4)) {
                        *slot = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                    }
                }
                _ => missing.push(i),
            }
        }
        Ok(missing)
    }

    fn store(&self, keys: &[[u8; 32]], rows: &[usize], vectors: &Array2<f32>) -> Result<()> {
        let txn = self
            .db
            .begin_write()
            .map_err(|e| cache_error(&self.path, e))?;
        {
            let mut table = txn
                .open_table(TABLE)
                .map_err(|e| cache_error(&self.path, e))?;
            let mut bytes = Vec::with_capacity(vectors.ncols() * 4);
            for (k, &row) in rows.iter().enumerate() {
                bytes.clear();
                bytes.extend(vectors.row(k).iter().flat_map(|x| x.to_le_bytes()));
                table
                    .insert(keys[row].as_slice(), bytes.as_slice())
                    .map_err(|e| cache_error(&self.path, e))?;
            }
        }
        txn.commit().map_err(|e| cache_error(&self.path, e))
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
        let keys: Vec<[u8; 32]> = texts.iter().map(|t| self.key(t)).collect();
        let mut out = Array2::zeros((texts.len(), self.dimension()));
        let missing = self.lookup(&keys, &mut out)?;
        self.hits
            .fetch_add((texts.len() - missing.len()) as u64, Ordering::Relaxed);
        for chunk in missing.chunks(self.chunk) {
            let chunk_texts: Vec<&str> = chunk.iter().map(|&i| texts[i]).collect();
            let vectors = self.inner.embed(&chunk_texts)?;
            self.store(&keys, chunk, &vectors)?;
            for (k, &i) in chunk.iter().enumerate() {
                out.row_mut(i).assign(&vectors.row(k));
            }
            self.misses.fetch_add(chunk.len() as u64, Ordering::Relaxed);
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
            assert_eq!(cached.stats(), CacheStats { hits: 0, misses: 6 });
        }
        let cached = CachedEmbedder::open(Flaky::new(usize::MAX), &path)
            .unwrap()
            .with_chunk(3);
        let resumed = cached.embed(&refs).unwrap();
        assert_eq!(cached.stats(), CacheStats { hits: 6, misses: 4 });
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
                misses: 4
            }
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
        assert_eq!(b.stats(), CacheStats { hits: 0, misses: 1 });
    }
}
