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

/// The texts the damage tests cache.
const THREE: [&str; 3] = ["one", "two", "three"];

/// `embeddings.redb` in `dir`, holding [`THREE`]'s vectors and closed: what the damage tests
/// damage.
fn closed_cache_of_three(dir: &Path) -> PathBuf {
    let path = dir.join("embeddings.redb");
    CachedEmbedder::open(Flaky::new(usize::MAX), &path)
        .unwrap()
        .embed(&THREE)
        .unwrap();
    path
}

/// Found by the cache fuzz target: one byte of the primary commit slot (the high byte of the
/// system tree's root page number, offset 239 there) made redb, which trusts a cleanly closed
/// file's slot, allocate 2 TiB on open: the process aborted, past any panic catching. Every
/// open now checks the slot first; the file is named, verify reports it, repair moves it
/// aside, a merge refuses it, and a sibling shard's damaged file is skipped.
#[test]
fn a_damaged_commit_slot_is_refused_before_redb_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let (path, texts) = (closed_cache_of_three(dir.path()), THREE);
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
        counts(cached.stats()),
        CacheStats {
            hits: 1,
            misses: 3,
            corrupt: 3,
            from_siblings: 0,
            embedding_seconds: 0.0
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

/// Pages of the cache rewritten into branches that name themselves as their child: redb,
/// trusting the cleanly closed file, recursed until the stack overflowed (the cache fuzz
/// target's crash, in `sage cache verify`'s walk of the widths table). Verify, open and repair
/// refuse the file, naming it, before any walk; the run after the repair starts a new file.
#[test]
fn a_page_naming_itself_as_its_child_is_refused_before_any_walk() {
    let dir = tempfile::tempdir().unwrap();
    let (path, texts) = (closed_cache_of_three(dir.path()), THREE);
    let tag = model_tag(Flaky::new(usize::MAX).identity());
    let rewritten = sage_cache::point_leaves_at_themselves(&path, tag.as_slice()).unwrap();
    assert!(rewritten >= 1, "the widths table's leaf holds the tag");

    let verified = check_cache(&path, false).unwrap_err().to_string();
    assert!(
        verified.contains("embeddings.redb") && verified.contains("corrupted"),
        "{verified}"
    );
    let opened = match CachedEmbedder::open(Flaky::new(usize::MAX), &path) {
        Ok(_) => panic!("the damaged file is opened"),
        Err(e) => e.to_string(),
    };
    assert!(
        opened.contains("embeddings.redb") && opened.contains("sage cache repair"),
        "{opened}"
    );
    let repaired = check_cache(&path, true).unwrap();
    assert!(repaired.moved_to.expect("moved aside").exists());
    let fresh = CachedEmbedder::open(Flaky::new(usize::MAX), &path).unwrap();
    assert_eq!(
        fresh.embed(&texts).unwrap(),
        Flaky::new(usize::MAX).embed(&texts).unwrap()
    );
}

/// A closed cache whose last commit (the one closing wrote) is damaged: verify says so, repair
/// and a run go back to the commit before, which holds every vector, and say so.
#[test]
fn a_damaged_last_commit_is_dropped_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("embeddings.redb");
    let cache = CachedEmbedder::open(Flaky::new(usize::MAX), &path).unwrap();
    cache.embed(&THREE).unwrap();
    let before_close = std::fs::read(&path).unwrap();
    drop(cache);
    assert!(sage_cache::damage_pages_written_since(&path, &before_close).unwrap() >= 1);
    let repaired_copy = dir.path().join("embeddings-copy.redb");
    std::fs::copy(&path, &repaired_copy).unwrap();
    let verified = check_cache(&repaired_copy, false).unwrap_err().to_string();
    assert!(
        verified.contains("embeddings-copy.redb")
            && verified.contains("last commit fails its checksums"),
        "{verified}"
    );
    let repaired = check_cache(&repaired_copy, true).unwrap();
    assert!(repaired.rolled_back && repaired.moved_to.is_none());
    assert_eq!((repaired.entries, repaired.corrupt), (3, 0));
    assert!(!check_cache(&repaired_copy, false).unwrap().rolled_back);

    let reopened = CachedEmbedder::open(Flaky::new(0), &path).unwrap();
    assert_eq!(
        reopened.corruption().as_deref(),
        Some(sage_cache::ROLLED_BACK)
    );
    assert_eq!(
        reopened.embed(&THREE).unwrap(),
        Flaky::new(usize::MAX).embed(&THREE).unwrap(),
        "every vector comes from the commit before (the embedder would fail)"
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
            counts(cached.stats()),
            CacheStats {
                hits: 0,
                misses: 6,
                corrupt: 0,
                from_siblings: 0,
                embedding_seconds: 0.0
            }
        );
    }
    let cached = CachedEmbedder::open(Flaky::new(usize::MAX), &path)
        .unwrap()
        .with_chunk(3);
    let resumed = cached.embed(&refs).unwrap();
    assert_eq!(
        counts(cached.stats()),
        CacheStats {
            hits: 6,
            misses: 4,
            corrupt: 0,
            from_siblings: 0,
            embedding_seconds: 0.0
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
        counts(cached.stats()),
        CacheStats {
            hits: 16,
            misses: 4,
            corrupt: 0,
            from_siblings: 0,
            embedding_seconds: 0.0
        }
    );
}

#[test]
fn a_text_repeated_in_one_call_is_embedded_once() {
    let dir = tempfile::tempdir().unwrap();
    let cached = CachedEmbedder::open(Flaky::new(usize::MAX), dir.path().join("c.redb")).unwrap();
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
        counts(b.stats()),
        CacheStats {
            hits: 0,
            misses: 1,
            corrupt: 0,
            from_siblings: 0,
            embedding_seconds: 0.0
        }
    );
}

/// The counts of `stats`, without the seconds: those are measured.
fn counts(stats: CacheStats) -> CacheStats {
    CacheStats {
        embedding_seconds: 0.0,
        ..stats
    }
}

/// A model that takes `pause` per call.
struct Slow(Flaky, std::time::Duration);

impl Embedder for Slow {
    fn identity(&self) -> &EmbedderIdentity {
        self.0.identity()
    }
    fn dimension(&self) -> usize {
        self.0.dimension()
    }
    fn embed(&self, texts: &[&str]) -> sage_core::Result<Array2<f32>> {
        std::thread::sleep(self.1);
        self.0.embed(texts)
    }
}

/// The seconds of a job's embedding work are the model's calls for what the cache lacked: a
/// call answered from the cache adds none.
#[test]
fn the_seconds_in_the_model_are_counted_and_hits_add_none() {
    let tmp = tempfile::tempdir().unwrap();
    let pause = std::time::Duration::from_millis(30);
    let cache = CachedEmbedder::open(
        Slow(Flaky::new(usize::MAX), pause),
        tmp.path().join("c.redb"),
    )
    .unwrap();
    cache.embed(&["one", "two"]).unwrap();
    let first = cache.stats().embedding_seconds;
    assert!(first >= pause.as_secs_f64(), "{first}");
    cache.embed(&["two", "one"]).unwrap();
    assert_eq!(cache.stats().embedding_seconds, first);
    assert_eq!((cache.stats().hits, cache.stats().misses), (2, 2));
}
