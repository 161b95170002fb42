//! Opening a cache file for writing, and reading its siblings: the failures a user meets (a
//! damaged file, one another process holds, one redb panics on) said once, naming the file and
//! what to do.

use std::ops::ControlFlow;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use redb::{Database, DatabaseError, ReadOnlyDatabase};

use crate::{
    mark_for_full_check, open_when_free, redb_header_damage, sibling_caches, Marked,
    CACHE_OPEN_PATIENCE,
};

/// What a user can do about a cache file that cannot be used, as each kind of cache says it
/// (its own flags).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Remedy {
    /// For a damaged or structurally broken file ("`sage cache repair --cache F` moves it
    /// aside, or pass --no-cache").
    pub broken: String,
    /// For a file another process holds ("run one at a time, or pass another --cache file").
    pub in_use: String,
}

/// A cache file that cannot be used: the file, and why (with what to do, from its [`Remedy`]).
/// Each cache's crate turns it into its own error.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", path.display())]
pub struct CacheError {
    /// The cache file.
    pub path: PathBuf,
    /// Why it cannot be used.
    pub message: String,
}

impl CacheError {
    /// The error `message` about the file at `path`.
    pub fn new(path: &Path, message: impl std::fmt::Display) -> CacheError {
        CacheError {
            path: path.to_owned(),
            message: message.to_string(),
        }
    }
}

/// Runs `work` on the redb file at `path`, turning a panic inside redb (it panics on some
/// structurally broken files: a truncated one, overwritten page headers) into an error that says
/// what to do.
pub fn guarded<T, E: From<CacheError>>(
    path: &Path,
    remedy: &Remedy,
    work: impl FnOnce() -> Result<T, E>,
) -> Result<T, E> {
    catch_unwind(AssertUnwindSafe(work)).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("a panic");
        Err(CacheError::new(
            path,
            format!(
                "the file is structurally broken (redb: {what}); {}",
                remedy.broken
            ),
        )
        .into())
    })
}

/// A cache file opened by [`open`] or [`open_checked`].
#[derive(Debug)]
pub struct Opened {
    /// The database, open for writing.
    pub database: Database,
    /// The file had been closed cleanly, yet its last commit failed its checksums (it was
    /// damaged since), so redb went back to the commit before it: what the last commit stored is
    /// gone, and is computed again when next needed. A killed writer's half-written last commit
    /// is dropped the same way, and is not reported: that is recovery, not damage.
    pub rolled_back: bool,
}

/// What a cache says of a file whose last commit was dropped ([`Opened::rolled_back`]).
pub const ROLLED_BACK: &str = "the file's last commit failed its checksums (the file was damaged \
     after it was closed): redb went back to the commit before it, and what the last one stored \
     is computed again when next needed";

/// The redb file at `path` opened for writing (created if missing), every page checked against
/// its checksum before redb follows a pointer in it ([`mark_for_full_check`]). The errors are
/// redb's; a file another process holds is `DatabaseAlreadyOpen`. [`open`] adds the folder, the
/// header check, the wait for a sibling's read and the words a user can act on; `sage cache
/// verify` and `repair` call this directly.
pub fn open_checked(path: &Path) -> Result<Opened, DatabaseError> {
    let found =
        mark_for_full_check(path).map_err(|e| DatabaseError::Storage(redb::StorageError::Io(e)))?;
    if found == Marked::Busy {
        return Err(DatabaseError::DatabaseAlreadyOpen);
    }
    let last_commit_failed = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&last_commit_failed);
    let database = redb::Builder::new()
        .set_repair_callback(move |session| {
            // redb reports 0.3 only when the last commit failed its checksums, just before it
            // goes back to the one before (`Database::do_repair`, redb 3)
            if (0.2..0.4).contains(&session.progress()) {
                flag.store(true, Ordering::Relaxed);
            }
        })
        .create(path)?;
    Ok(Opened {
        database,
        rolled_back: found == Marked::Closed && last_commit_failed.load(Ordering::Relaxed),
    })
}

/// The cache file at `path` opened for writing (created, with its folder, if missing). A
/// damaged header is refused before redb reads it ([`redb_header_damage`]), every page is
/// checked before redb trusts it ([`open_checked`]), a sibling's momentary read lock is waited
/// out ([`open_when_free`]), and a redb panic becomes an error ([`guarded`]).
pub fn open(path: &Path, remedy: &Remedy) -> Result<Opened, CacheError> {
    open_within(path, remedy, CACHE_OPEN_PATIENCE)
}

/// [`open`], waiting at most `patience` for another holder to let go: tests of the refusal need
/// not wait the 10 s a real sibling gets.
fn open_within(
    path: &Path,
    remedy: &Remedy,
    patience: std::time::Duration,
) -> Result<Opened, CacheError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| CacheError::new(path, format!("cannot create folder: {e}")))?;
    }
    guarded(path, remedy, || {
        refuse_damaged(path, path, remedy)?;
        open_when_free(
            patience,
            || open_checked(path),
            |e| matches!(e, DatabaseError::DatabaseAlreadyOpen),
        )
        .map_err(|e| open_failure(path, remedy, e))
    })
}

/// Refuses the file at `read` when its header is one redb would trust and misread
/// ([`redb_header_damage`]), reported as `named` (the user's file, where `read` is a copy of
/// it): called before every open, since the misreading aborts the process where no panic can
/// be caught.
pub fn refuse_damaged(read: &Path, named: &Path, remedy: &Remedy) -> Result<(), CacheError> {
    match redb_header_damage(read) {
        None => Ok(()),
        Some(why) => Err(CacheError::new(named, format!("{why}; {}", remedy.broken))),
    }
}

/// A failure to open the cache file at `path`, said the way a user can act on it: another
/// process holds it, it is damaged, or what redb said.
pub fn open_failure(path: &Path, remedy: &Remedy, e: DatabaseError) -> CacheError {
    match e {
        DatabaseError::DatabaseAlreadyOpen => CacheError::new(
            path,
            format!("in use by another process ({})", remedy.in_use),
        ),
        corrupted @ DatabaseError::Storage(redb::StorageError::Corrupted(_)) => {
            CacheError::new(path, format!("{corrupted}; {}", remedy.broken))
        }
        other => CacheError::new(path, other),
    }
}

/// The cache file at `path` opened to be read whole (a merge's source): a damaged header
/// refused first, a failure to open said as [`open_failure`] says it. redb may still panic on
/// a structurally broken file: read it inside [`guarded`].
pub fn open_read_only(path: &Path, remedy: &Remedy) -> Result<ReadOnlyDatabase, CacheError> {
    refuse_damaged(path, path, remedy)?;
    ReadOnlyDatabase::open(path).map_err(|e| open_failure(path, remedy, e))
}

/// Hands `visit` each sibling of `own` (the `<stem>*.redb` files of `dir`: a sharded run's
/// other shards, an earlier merge) that can be read now, each opened read-only for the visit
/// alone, until `visit` breaks. A sibling its writer holds, a damaged one and one redb panics
/// on are skipped: what it would have answered is computed again, the same (seeded).
pub fn read_siblings(
    dir: &Path,
    stem: &str,
    own: &Path,
    mut visit: impl FnMut(&Path, &ReadOnlyDatabase) -> ControlFlow<()>,
) {
    for sibling in sibling_caches(dir, stem, own) {
        let flow = catch_unwind(AssertUnwindSafe(|| {
            if redb_header_damage(&sibling).is_some() {
                return ControlFlow::Continue(());
            }
            match ReadOnlyDatabase::open(&sibling) {
                Ok(db) => visit(&sibling, &db),
                Err(_) => ControlFlow::Continue(()),
            }
        }))
        .unwrap_or(ControlFlow::Continue(()));
        if flow.is_break() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use redb::{ReadableDatabase, ReadableTable, TableDefinition};

    use super::*;

    const TABLE: TableDefinition<&str, u64> = TableDefinition::new("t");

    fn remedy() -> Remedy {
        Remedy {
            broken: "move it aside".into(),
            in_use: "run one at a time".into(),
        }
    }

    fn put(db: &Database, key: &str, value: u64) {
        let txn = db.begin_write().unwrap();
        txn.open_table(TABLE).unwrap().insert(key, value).unwrap();
        txn.commit().unwrap();
    }

    /// A fresh file and its folder are made; a second writer is refused with the remedy; a
    /// damaged header is refused before redb reads it, naming the file and the remedy.
    #[test]
    fn opening_names_the_file_and_the_remedy() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("deep/er/cache.redb");
        let db = open(&path, &remedy()).unwrap().database;
        put(&db, "a", 1);
        let busy = open_within(&path, &remedy(), std::time::Duration::ZERO).unwrap_err();
        assert_eq!(busy.path, path);
        assert!(
            busy.message
                .contains("in use by another process (run one at a time)"),
            "{busy}"
        );
        drop(db);
        let mut bytes = std::fs::read(&path).unwrap();
        let slot = 64 + 128 * usize::from(bytes[9] & 1 != 0);
        bytes[slot + 47] = 0xEA;
        std::fs::write(&path, &bytes).unwrap();
        let damaged = open(&path, &remedy()).unwrap_err();
        assert!(
            damaged
                .message
                .contains("fails its checksum; move it aside"),
            "{damaged}"
        );
        assert!(damaged.to_string().starts_with(&path.display().to_string()));
    }

    /// A leaf page rewritten into a branch naming itself as its child: redb, trusting the
    /// cleanly closed file, recursed until the stack overflowed and the process aborted (the
    /// cache fuzz target's crash). Checked at open, the page fails its checksum, and the file is
    /// refused with the remedy; the entries read fine before the damage.
    #[test]
    fn a_page_that_names_itself_as_its_child_is_refused_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache.redb");
        {
            let db = open(&path, &remedy()).unwrap().database;
            put(&db, "needle-key", 7);
            let txn = db.begin_read().unwrap();
            let table = txn.open_table(TABLE).unwrap();
            assert_eq!(table.iter().unwrap().count(), 1);
        }
        assert!(crate::point_leaves_at_themselves(&path, b"needle-key").unwrap() >= 1);
        let refused = open(&path, &remedy()).expect_err("the damaged file is refused");
        assert_eq!(refused.path, path);
        assert!(
            refused.message.contains("corrupted") && refused.message.ends_with("move it aside"),
            "{refused}"
        );
    }

    /// A cleanly closed file whose last commit (the one closing wrote) is damaged: redb, told
    /// to check every page, finds it, goes back to the commit before, which holds every entry,
    /// and the open says so ([`Opened::rolled_back`]).
    #[test]
    fn a_damaged_last_commit_is_dropped_for_the_one_before_and_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache.redb");
        let db = open(&path, &remedy()).unwrap().database;
        put(&db, "kept", 7);
        let before_close = std::fs::read(&path).unwrap();
        drop(db);
        assert!(crate::damage_pages_written_since(&path, &before_close).unwrap() >= 1);
        let opened = open(&path, &remedy()).unwrap();
        assert!(opened.rolled_back);
        let txn = opened.database.begin_read().unwrap();
        let kept = txn.open_table(TABLE).unwrap().get("kept").unwrap();
        assert_eq!(kept.map(|v| v.value()), Some(7));
    }

    /// A file closed cleanly and opened again keeps every entry: the check at open rebuilds
    /// nothing a user sees, and reports no rollback.
    #[test]
    fn a_sound_file_opens_with_its_entries_and_no_rollback() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache.redb");
        for (round, key) in ["a", "b", "c"].iter().enumerate() {
            let opened = open(&path, &remedy()).unwrap();
            assert!(!opened.rolled_back);
            put(&opened.database, key, round as u64);
        }
        let opened = open(&path, &remedy()).unwrap();
        assert!(!opened.rolled_back);
        let txn = opened.database.begin_read().unwrap();
        let table = txn.open_table(TABLE).unwrap();
        let entries: Vec<(String, u64)> = table
            .iter()
            .unwrap()
            .map(|e| {
                let (k, v) = e.unwrap();
                (k.value().to_owned(), v.value())
            })
            .collect();
        assert_eq!(entries, [("a".into(), 0), ("b".into(), 1), ("c".into(), 2)]);
    }

    #[test]
    fn a_panic_inside_becomes_the_broken_file_error() {
        let path = Path::new("x.redb");
        let r: Result<(), CacheError> = guarded(path, &remedy(), || panic!("page out of range"));
        let e = r.unwrap_err();
        assert_eq!(
            e.message,
            "the file is structurally broken (redb: page out of range); move it aside"
        );
    }

    /// Siblings are visited in name order, the own file, a held one and a damaged one skipped,
    /// until the visit breaks.
    #[test]
    fn siblings_that_can_be_read_now_are_visited_until_the_visit_breaks() {
        let dir = tempfile::tempdir().unwrap();
        let at = |name: &str| dir.path().join(name);
        for (i, name) in ["c.shard-0.redb", "c.shard-1.redb", "c.shard-3.redb"]
            .iter()
            .enumerate()
        {
            put(&open(&at(name), &remedy()).unwrap().database, "k", i as u64);
        }
        let held = open(&at("c.shard-2.redb"), &remedy()).unwrap().database;
        put(&held, "k", 2);
        std::fs::write(at("c.shard-4.redb"), vec![0u8; 64]).unwrap();
        let mut seen = Vec::new();
        read_siblings(dir.path(), "c", &at("c.shard-1.redb"), |_, db| {
            let txn = db.begin_read().unwrap();
            seen.push(
                txn.open_table(TABLE)
                    .unwrap()
                    .get("k")
                    .unwrap()
                    .unwrap()
                    .value(),
            );
            ControlFlow::Continue(())
        });
        assert_eq!(seen, [0, 2]);
        let mut first = Vec::new();
        read_siblings(dir.path(), "c", Path::new(""), |path, _| {
            first.push(path.file_name().unwrap().to_owned());
            ControlFlow::Break(())
        });
        assert_eq!(first, ["c.shard-0.redb"]);
        drop(held);
    }
}
