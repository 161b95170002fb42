//! Where sage-rs keeps what it computes once and reuses (embeddings, paraphrases).

use std::path::PathBuf;

/// `SAGE_CACHE_DIR`, else `$XDG_CACHE_HOME/sage-rs`, else `~/.cache/sage-rs`, else
/// `.sage-cache`: the one folder every cache file of sage-rs lives in by default, so a cluster
/// run points all of them at shared storage with one variable.
pub fn cache_dir() -> PathBuf {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    env("SAGE_CACHE_DIR")
        .or_else(|| env("XDG_CACHE_HOME").map(|d| d.join("sage-rs")))
        .or_else(|| env("HOME").map(|h| h.join(".cache/sage-rs")))
        .unwrap_or_else(|| PathBuf::from(".sage-cache"))
}

/// The cache files in `dir` named `<stem>*.redb` other than `own` (and other than files a repair
/// moved aside), sorted: what other processes (a sharded run's other shards, an earlier merge)
/// wrote that a cache may read from.
pub fn sibling_caches(dir: &std::path::Path, stem: &str, own: &std::path::Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == "redb")
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(stem) && !n.contains(".broken-"))
                && p.as_path() != own
        })
        .collect();
    found.sort();
    found
}

/// What folding cache files into one did (`sage cache merge`): the same counts for every kind
/// of cache file.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CacheMerge {
    /// The file merged into.
    pub into: PathBuf,
    /// Source files read.
    pub sources: usize,
    /// Entries copied into the target (keys it did not have).
    pub copied: u64,
    /// Entries the target already held with the same bytes.
    pub already_present: u64,
    /// Entries the target held with other (sound) bytes: same key, another value (say, a
    /// vector computed on another device). The target's is kept.
    pub differing: u64,
    /// Source entries that failed their checks: never copied.
    pub corrupt_skipped: u64,
}
