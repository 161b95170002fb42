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

/// How long opening a cache file for writing waits for another process to let go of it: a
/// sibling reading it (a sharded run's other shard) holds it for one lookup. A writer holds its
/// file for its whole run, so waiting longer would not help.
pub const CACHE_OPEN_PATIENCE: std::time::Duration = std::time::Duration::from_secs(10);

/// `attempt`, tried again every 50 ms while its error `is_busy` (another process holds the
/// file), for up to [`CACHE_OPEN_PATIENCE`]; then its last result.
pub fn open_when_free<T, E>(
    mut attempt: impl FnMut() -> Result<T, E>,
    is_busy: impl Fn(&E) -> bool,
) -> Result<T, E> {
    let started = std::time::Instant::now();
    loop {
        match attempt() {
            Err(e) if is_busy(&e) && started.elapsed() < CACHE_OPEN_PATIENCE => {
                std::thread::sleep(std::time::Duration::from_millis(50))
            }
            done => return done,
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_file_is_tried_again_and_another_error_returned_at_once() {
        let mut tries = 0;
        let opened = open_when_free(
            || {
                tries += 1;
                if tries < 3 {
                    Err("busy")
                } else {
                    Ok(tries)
                }
            },
            |e| *e == "busy",
        );
        assert_eq!(opened, Ok(3));
        let mut tries = 0;
        let failed: Result<(), &str> = open_when_free(
            || {
                tries += 1;
                Err("broken")
            },
            |e| *e == "busy",
        );
        assert_eq!((failed, tries), (Err("broken"), 1));
    }
}
