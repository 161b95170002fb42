//! Offline care of cache files: `sage cache verify` / `repair` ([`check_cache`]) and `sage cache
//! merge` ([`merge_caches`]), which read a file without embedding anything.

use super::*;

/// Why [`check_cache`] could not finish reading a file.
pub(super) enum Unread {
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
    /// Repair: the last commit failed its checksums (the file was damaged after it was closed)
    /// and was dropped, redb going back to the commit before it; what it stored is recomputed
    /// when next needed. Verifying reports such a file as damaged instead.
    pub rolled_back: bool,
    /// Repair: corrupt entries removed (they are recomputed when next needed).
    pub removed: u64,
    /// Repair: the file could not be read and was moved here; the next run starts a new cache.
    pub moved_to: Option<PathBuf>,
}

/// The entries of the v1 (unchecksummed) table, which this version never reads.
pub(super) const OLD_TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("embeddings-v1");

/// Checks every page and every entry of the cache file at `path` offline (`sage cache
/// verify`); with `repair`, also drops a damaged last commit for the one before, removes the
/// corrupt entries, and moves a file that cannot be read at all aside (`sage cache repair`).
/// Without `repair` nothing is written.
pub fn check_cache(path: &Path, repair: bool) -> Result<CacheCheck> {
    if !path.is_file() {
        return Err(cache_error(path, "no such cache file"));
    }
    let broken = match guarded(path, || Ok(inspect_cache(path, repair))) {
        Ok(Ok(check)) => return Ok(check),
        Ok(Err(Unread::Other(e))) => return Err(e),
        Ok(Err(Unread::Broken(e))) | Err(e) => e,
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
pub(super) fn inspect_cache(path: &Path, repair: bool) -> std::result::Result<CacheCheck, Unread> {
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
        let broken = corrupted(&e);
        let said = sage_cache::open_failure(path, &remedy(path), e).into();
        if broken {
            Unread::Broken(said)
        } else {
            Unread::Other(said)
        }
    };
    if !repair {
        return verify_a_copy(path, &unread);
    }
    sage_cache::refuse_damaged(path, path, &remedy(path)).map_err(|e| Unread::Broken(e.into()))?;
    // every page is checked at open, as redb's integrity check would, and a damaged last
    // commit dropped for the one before it
    let opened = sage_cache::open_checked(path).map_err(unread)?;
    let db = opened.database;
    let (mut check, bad_keys) = {
        let txn = db.begin_read().map_err(|e| cache_error(path, e))?;
        read_entries(path, &txn)?
    };
    check.rolled_back = opened.rolled_back;
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
pub(super) fn read_widths(
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
/// which is opened (every page checked, [`sage_cache::open_checked`]), read and removed. So
/// verifying changes no byte of the file (opening it
/// in place writes redb's allocator state on close, and recovers a file a killed run left open)
/// and works on a file the user may only read. redb's read-only mode is not used: on a damaged
/// file it sizes a read from the damaged bytes (an 8 GB allocation, found by the cache fuzz
/// target), where the read-write mode reports the damage.
pub(super) fn verify_a_copy(
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
        sage_cache::refuse_damaged(&copy, path, &remedy(path))
            .map_err(|e| Unread::Broken(e.into()))?;
        let opened = sage_cache::open_checked(&copy).map_err(unread)?;
        if opened.rolled_back {
            return Err(Unread::Broken(cache_error(
                path,
                "its last commit fails its checksums (the file was damaged after it was \
                 closed); `sage cache repair` goes back to the commit before it",
            )));
        }
        let db = opened.database;
        let txn = db.begin_read().map_err(|e| cache_error(path, e))?;
        let (check, _) = read_entries(path, &txn)?;
        drop(txn);
        drop(db);
        Ok(check)
    })()
}

/// Every entry of the cache read in `txn`, checked: the counts, and the keys of corrupt entries.
pub(super) fn read_entries(
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
    let mut merge = CacheMerge {
        into: into.to_owned(),
        sources: sources.len(),
        ..CacheMerge::default()
    };
    let created = !into.exists();
    let merged = guarded(into, || {
        // opened as every cache file is (sage_cache::open): folder made, header and pages
        // checked, a sibling's read waited out
        let target = sage_cache::open(into, &remedy(into))?.database;
        let txn = target.begin_write().map_err(|e| cache_error(into, e))?;
        {
            let mut table = txn.open_table(TABLE).map_err(|e| cache_error(into, e))?;
            let mut widths = txn.open_table(WIDTHS).map_err(|e| cache_error(into, e))?;
            for source in sources {
                if source == into {
                    return Err(cache_error(source, "is the merge's target too"));
                }
                guarded(source, || {
                    let db = sage_cache::open_read_only(source, &remedy(source))?;
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
