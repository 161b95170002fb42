//! `sage cache verify`, `repair` and `merge`: the embedding cache's checks and upkeep, offline.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Subcommand;
use sage_embed::{check_cache, default_cache_path, merge_caches};

#[derive(Subcommand, Debug)]
pub enum CacheCommand {
    /// Check every entry of the embedding cache (checksum of key and vector, width, finite
    /// values) and print what was found as one JSON object; writes nothing. Exit status 1 when
    /// an entry is corrupt or the file cannot be read.
    Verify {
        /// Cache file (default: $SAGE_CACHE_DIR or ~/.cache/sage-rs, embeddings.redb).
        #[arg(long)]
        cache: Option<PathBuf>,
    },
    /// Verify, with every page checked against its checksum (a damaged last commit is dropped
    /// for the one before: `rolled_back`), and remove corrupt entries (they are recomputed when
    /// next needed); a file that cannot be read at all is moved aside (`*.broken-<time>.redb`)
    /// so that the next run starts a new cache. Prints what was done as one JSON object.
    Repair {
        /// Cache file (default: $SAGE_CACHE_DIR or ~/.cache/sage-rs, embeddings.redb).
        #[arg(long)]
        cache: Option<PathBuf>,
    },
    /// Fold other cache files (other machines', other shards') into the cache: every entry is
    /// checked and copied when the cache lacks its key; corrupt ones are skipped and counted.
    /// Idempotent; the sources are only read. Prints what was done as one JSON object.
    Merge {
        /// Cache file merged into (default: $SAGE_CACHE_DIR or ~/.cache/sage-rs,
        /// embeddings.redb); created if missing.
        #[arg(long)]
        cache: Option<PathBuf>,
        /// Cache files to fold in.
        #[arg(required = true)]
        sources: Vec<PathBuf>,
        /// The files are paraphrase caches (PTEB's `paraphrases*.redb`; default target
        /// paraphrases.redb), not embedding caches.
        #[arg(long)]
        paraphrases: bool,
    },
}

pub fn run(command: CacheCommand) -> Result<()> {
    let (path, repair) = match command {
        CacheCommand::Verify { cache } => (cache, false),
        CacheCommand::Repair { cache } => (cache, true),
        CacheCommand::Merge {
            cache,
            sources,
            paraphrases,
        } => {
            let merged = if paraphrases {
                let into = cache.unwrap_or_else(pteb::default_cache_path);
                pteb::merge_paraphrase_caches(&into, &sources)?
            } else {
                merge_caches(&cache.unwrap_or_else(default_cache_path), &sources)?
            };
            println!("{}", serde_json::to_string(&merged)?);
            return Ok(());
        }
    };
    let path = path.unwrap_or_else(default_cache_path);
    let check = check_cache(&path, repair)?;
    println!("{}", serde_json::to_string(&check)?);
    if !repair && check.corrupt > 0 {
        bail!(
            "{}: {} of {} entries corrupt (first: {}); `sage cache repair` removes them",
            path.display(),
            check.corrupt,
            check.entries,
            check.first_failure.as_deref().unwrap_or("?")
        );
    }
    Ok(())
}
