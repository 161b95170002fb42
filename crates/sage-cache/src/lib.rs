//! # sage-cache
//!
//! The cache files of sage-rs: the embedding cache (sage-embed's `CachedEmbedder`) and the
//! paraphrase cache (pteb's `ParaphraseCache`) are both redb files in one folder
//! ([`cache_dir`]), and this crate holds what every such file needs, once:
//!
//! - [`cache_dir`]: the folder, one variable (`SAGE_CACHE_DIR`) moving every cache of a cluster
//!   run to shared storage.
//! - [`open`]: a file opened for writing, its folder created, a damaged header refused before
//!   redb reads it ([`redb_header_damage`]: redb would otherwise abort the process), every page
//!   checked against its checksum before redb follows a pointer in it ([`mark_for_full_check`]:
//!   a damaged page naming itself as its child sent redb into endless recursion), a sibling's
//!   momentary read lock waited out ([`open_when_free`]), and a redb panic on a structurally
//!   broken file turned into an error ([`guarded`]). Every failure names the file and what the
//!   user can do ([`Remedy`]).
//! - [`read_siblings`]: a sharded run's other cache files (`<stem>*.redb` in one folder,
//!   [`sibling_caches`]), each opened read-only for one lookup and skipped while its writer holds
//!   it or when it cannot be read. A cache answers from them what it lacks, so shards share work
//!   without sharing a file.
//! - [`CacheMerge`]: what folding the shards' files into one did, the same counts for every kind.
//!
//! What is stored, and how an entry is checked, stays with the cache that stores it: vectors
//! with their checksums and widths in sage-embed, paraphrase outcomes as JSON in pteb.
#![deny(missing_docs)]

mod files;
mod store;

pub use files::{
    cache_dir, mark_for_full_check, open_when_free, redb_header_damage, sibling_caches, CacheMerge,
    Marked, CACHE_OPEN_PATIENCE,
};
#[cfg(any(test, feature = "test-damage"))]
pub use files::{damage_pages_written_since, point_leaves_at_themselves};
pub use store::{
    guarded, open, open_checked, open_failure, open_read_only, read_siblings, refuse_damaged,
    CacheError, Opened, Remedy, ROLLED_BACK,
};
