//! Where sage-rs keeps what it computes once and reuses (embeddings, paraphrases), and what every
//! cache file is checked for before redb opens it.

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
/// file), for up to `patience` ([`CACHE_OPEN_PATIENCE`] in every caller but tests); then its last
/// result.
pub fn open_when_free<T, E>(
    patience: std::time::Duration,
    mut attempt: impl FnMut() -> Result<T, E>,
    is_busy: impl Fn(&E) -> bool,
) -> Result<T, E> {
    let started = std::time::Instant::now();
    loop {
        match attempt() {
            Err(e) if is_busy(&e) && started.elapsed() < patience => {
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

// redb's file header (format 3, redb 3.x: `tree_store/page_store/header.rs`), read here before
// redb trusts it: the magic number, the god byte's flags, and the two commit slots.
const MAGIC: [u8; 9] = [b'r', b'e', b'd', b'b', 0x1A, 0x0A, 0xA9, 0x0D, 0x0A];
const GOD_BYTE: usize = MAGIC.len();
const PRIMARY_BIT: u8 = 1;
const RECOVERY_REQUIRED: u8 = 2;
const TWO_PHASE_COMMIT: u8 = 4;
const SLOT_0: usize = 64;
const SLOT_SIZE: usize = 128;
const SLOT_CHECKSUM: usize = SLOT_SIZE - 16;
const FORMAT_VERSION: u8 = 3;

/// Why the redb file at `path` must not be opened as it stands, or `None` when it may be.
///
/// redb trusts a cleanly closed file's commit slot without checking its checksum (it checks the
/// slots only when recovering a file a killed process left open). A damaged root page number
/// there makes it size its first read from the damage: an allocation of up to 8 TB, which aborts
/// the process before any error can be returned (found by the cache fuzz target). So every
/// cache file's primary commit slot is checked here first, the same way redb's recovery checks
/// it (xxh3-128 of the slot's first 112 bytes against its last 16, file format 3). Files that
/// are not redb files, are too short, or are flagged for recovery are left to redb, which
/// reports or recovers them itself. An unreadable file is left to redb too, which names the
/// I/O error.
pub fn redb_header_damage(path: &std::path::Path) -> Option<String> {
    use std::io::Read;
    let mut header = [0u8; SLOT_0 + 2 * SLOT_SIZE];
    let mut file = std::fs::File::open(path).ok()?;
    file.read_exact(&mut header).ok()?;
    let god = header[GOD_BYTE];
    if header[..MAGIC.len()] != MAGIC || god & RECOVERY_REQUIRED != 0 {
        return None;
    }
    let primary = usize::from(god & PRIMARY_BIT != 0);
    let slot = &header[SLOT_0 + primary * SLOT_SIZE..][..SLOT_SIZE];
    if slot[0] != FORMAT_VERSION {
        return None;
    }
    let stored = u128::from_le_bytes(slot[SLOT_CHECKSUM..].try_into().ok()?);
    let computed = xxhash_rust::xxh3::xxh3_128_with_seed(&slot[..SLOT_CHECKSUM], 0);
    (stored != computed).then(|| {
        format!(
            "the file is damaged: its header's commit slot {primary} (bytes {}..{}) fails its \
             checksum",
            SLOT_0 + primary * SLOT_SIZE,
            SLOT_0 + (primary + 1) * SLOT_SIZE
        )
    })
}

/// How [`mark_for_full_check`] found a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marked {
    /// No redb file there (missing, too short, another format): redb creates or refuses it.
    NotRedb,
    /// Its last writer closed it cleanly; now marked.
    Closed,
    /// A writer left it open (killed), so redb recovers it anyway; now marked (or already was).
    LeftOpen,
    /// Another process holds it (a writer, or a sibling reading it for a moment): nothing was
    /// written.
    Busy,
}

/// Marks the redb file at `path` the way a writer killed mid-commit leaves it (recovery
/// required, the last commit not two-phase), so that redb's next read-write open checks every
/// page against the checksum its parent holds, from the roots down, before it follows a pointer
/// in it, and goes back to the commit before when the last one fails.
///
/// redb trusts a cleanly closed file's pages. A damaged branch page can name itself, or an
/// ancestor, as its child; redb's tree walks then recurse until the stack overflows, which
/// aborts the process where no panic can be caught (found by the cache fuzz target, in a
/// `widths` table). Forcing the recovery costs one read of the file at open, what redb does
/// after every crash anyway. The file is locked (as redb locks it) while its header byte is
/// rewritten, so a process holding it is never written under.
pub fn mark_for_full_check(path: &std::path::Path) -> std::io::Result<Marked> {
    use std::io::{Read, Seek, SeekFrom, Write};
    let mut file = match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Marked::NotRedb),
        Err(e) => return Err(e),
    };
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => return Ok(Marked::Busy),
        // where the file system has no locks redb opens the file unlocked too (and warns the
        // user to run one process at a time)
        Err(std::fs::TryLockError::Error(e)) if e.kind() == std::io::ErrorKind::Unsupported => {}
        Err(std::fs::TryLockError::Error(e)) => return Err(e),
    }
    let mut head = [0u8; GOD_BYTE + 1];
    if file.read_exact(&mut head).is_err() || head[..MAGIC.len()] != MAGIC {
        return Ok(Marked::NotRedb);
    }
    let god = head[GOD_BYTE];
    let found = if god & RECOVERY_REQUIRED != 0 {
        Marked::LeftOpen
    } else {
        Marked::Closed
    };
    let marked = (god | RECOVERY_REQUIRED) & !TWO_PHASE_COMMIT;
    if marked != god {
        file.seek(SeekFrom::Start(GOD_BYTE as u64))?;
        file.write_all(&[marked])?;
    }
    // the lock goes with the file handle
    Ok(found)
}

/// Test damage: rewrites each leaf page of the redb file at `path` whose bytes contain `needle`
/// (the live one and any stale copy an earlier commit left) into a branch page whose only child
/// is the page itself, the damage that sent redb's tree walks into endless recursion. Returns
/// how many pages were rewritten. Only for files of one region (a few MB), the ones tests write.
#[cfg(any(test, feature = "test-damage"))]
pub fn point_leaves_at_themselves(path: &std::path::Path, needle: &[u8]) -> std::io::Result<usize> {
    const LEAF: u8 = 1;
    const BRANCH: u8 = 2;
    let mut bytes = std::fs::read(path)?;
    let field = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    // after the magic number and god byte, two bytes of padding, then the page size and the
    // region header's pages (`header.rs`)
    let page_size = field(GOD_BYTE + 3) as usize;
    let region_header_pages = field(GOD_BYTE + 7) as usize;
    // the super-header fills the first page; region 0's header pages follow it
    let first_data_page = page_size * (1 + region_header_pages);
    let pages: Vec<usize> = (first_data_page..bytes.len().saturating_sub(page_size - 1))
        .step_by(page_size)
        .filter(|&at| {
            let page = &bytes[at..at + page_size];
            page[0] == LEAF && page.windows(needle.len()).any(|w| w == needle)
        })
        .collect();
    for &at in &pages {
        let own_number = ((at - first_data_page) / page_size) as u64; // region 0, order 0
        let page = &mut bytes[at..at + page_size];
        page.fill(0);
        page[0] = BRANCH; // no keys: one child, whose checksum (16 bytes at 8) stays zero
        page[24..32].copy_from_slice(&own_number.to_le_bytes());
    }
    std::fs::write(path, &bytes)?;
    Ok(pages.len())
}

/// Test damage: flips a byte that its checksum covers in every tree page (leaf or branch) of
/// the redb file at `path` that differs from `before` (the file's bytes read earlier). Read
/// just before a clean close, `before` leaves the pages closing wrote: the last commit's own,
/// never a page of the commit before it, which redb does not write over. Returns how many pages
/// were damaged.
#[cfg(any(test, feature = "test-damage"))]
pub fn damage_pages_written_since(path: &std::path::Path, before: &[u8]) -> std::io::Result<usize> {
    const LEAF: u8 = 1;
    const BRANCH: u8 = 2;
    let mut bytes = std::fs::read(path)?;
    let page_size = u32::from_le_bytes(
        bytes[GOD_BYTE + 3..GOD_BYTE + 7]
            .try_into()
            .expect("4 bytes"),
    ) as usize;
    let written: Vec<usize> = (1..bytes.len().min(before.len()) / page_size)
        .map(|p| p * page_size)
        .filter(|&at| before[at..at + page_size] != bytes[at..at + page_size])
        .filter(|&at| matches!(bytes[at], LEAF | BRANCH))
        .collect();
    for &at in &written {
        // a branch's first child checksum, a leaf's first end offsets
        bytes[at + 8] ^= 0xFF;
    }
    std::fs::write(path, &bytes)?;
    Ok(written.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_file_is_tried_again_and_another_error_returned_at_once() {
        let mut tries = 0;
        let opened = open_when_free(
            CACHE_OPEN_PATIENCE,
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
            CACHE_OPEN_PATIENCE,
            || {
                tries += 1;
                Err("broken")
            },
            |e| *e == "busy",
        );
        assert_eq!((failed, tries), (Err("broken"), 1));
    }

    /// A real redb file with one table entry, closed cleanly; its primary slot's offset.
    fn written_file(dir: &std::path::Path) -> (std::path::PathBuf, usize) {
        let path = dir.join("cache.redb");
        let table: redb::TableDefinition<&str, u64> = redb::TableDefinition::new("t");
        let db = redb::Database::create(&path).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(table).unwrap().insert("a", 1).unwrap();
        txn.commit().unwrap();
        drop(db);
        let god = std::fs::read(&path).unwrap()[9];
        (path, 64 + 128 * usize::from(god & 1 != 0))
    }

    /// Marking says how the file was left and writes only a redb file nobody holds: the god
    /// byte gains "recovery required" and loses "two-phase commit", as a killed writer leaves it.
    #[test]
    fn marking_writes_the_god_byte_of_a_free_redb_file_only() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            mark_for_full_check(&dir.path().join("missing.redb")).unwrap(),
            Marked::NotRedb
        );
        let other = dir.path().join("other.redb");
        std::fs::write(&other, b"not a redb file at all").unwrap();
        assert_eq!(mark_for_full_check(&other).unwrap(), Marked::NotRedb);
        assert_eq!(std::fs::read(&other).unwrap(), b"not a redb file at all");

        let (path, _) = written_file(dir.path());
        let god = std::fs::read(&path).unwrap()[GOD_BYTE];
        assert_eq!(
            god & (RECOVERY_REQUIRED | TWO_PHASE_COMMIT),
            TWO_PHASE_COMMIT
        );
        assert_eq!(mark_for_full_check(&path).unwrap(), Marked::Closed);
        let marked = std::fs::read(&path).unwrap()[GOD_BYTE];
        assert_eq!(marked, (god | RECOVERY_REQUIRED) & !TWO_PHASE_COMMIT);
        assert_eq!(mark_for_full_check(&path).unwrap(), Marked::LeftOpen);

        let held = redb::Database::create(&path).unwrap();
        let while_held = std::fs::read(&path).unwrap();
        assert_eq!(mark_for_full_check(&path).unwrap(), Marked::Busy);
        assert_eq!(std::fs::read(&path).unwrap(), while_held);
        drop(held);
    }

    #[test]
    fn a_clean_redb_file_passes_and_a_damaged_commit_slot_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let (path, slot) = written_file(dir.path());
        assert_eq!(redb_header_damage(&path), None);
        let clean = std::fs::read(&path).unwrap();
        // the cache fuzz target's input: the high byte of the system tree's root page number,
        // whose top five bits are the page's order (4 KiB << 29 = 2 TiB)
        let mut bytes = clean.clone();
        bytes[slot + 47] = 0xEA;
        std::fs::write(&path, &bytes).unwrap();
        let why = redb_header_damage(&path).expect("damage found");
        assert!(why.contains("fails its checksum"), "{why}");
        // the secondary slot is not what redb reads from a cleanly closed file
        let mut bytes = clean.clone();
        let secondary = if slot == 64 { 192 } else { 64 };
        bytes[secondary + 47] ^= 0xFF;
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(redb_header_damage(&path), None);
    }

    #[test]
    fn files_redb_judges_itself_are_left_to_it() {
        let dir = tempfile::tempdir().unwrap();
        let (path, slot) = written_file(dir.path());
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[slot + 47] = 0xEA;
        // flagged for recovery: redb checks both slots itself
        let mut flagged = bytes.clone();
        flagged[9] |= 2;
        std::fs::write(&path, &flagged).unwrap();
        assert_eq!(redb_header_damage(&path), None);
        // not a redb file, too short, missing
        let other = dir.path().join("other.redb");
        std::fs::write(&other, vec![7u8; 4096]).unwrap();
        assert_eq!(redb_header_damage(&other), None);
        std::fs::write(&other, &bytes[..100]).unwrap();
        assert_eq!(redb_header_damage(&other), None);
        assert_eq!(redb_header_damage(&dir.path().join("missing.redb")), None);
    }
}
