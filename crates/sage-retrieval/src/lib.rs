//! # sage-retrieval
//!
//! SAGE task 5, retrieval robustness (Goel et al. 2025, Appendix A.6), over any [`Similarity`](sage_core::Similarity)
//! on any BEIR-format dataset.
//!
//! For each of the 18 perturbations of sage-perturb's [`retrieval_set`] (the 6 robustness
//! transforms; needle insertion and token removal at {0.15, 0.5} × positions {0, 0.5, 1}) every
//! document gets a perturbed copy, and the queries are ranked against a perturbed corpus:
//!
//! - **distractor** (default; the paper's adversarially augmented corpus): the originals plus
//!   their perturbed copies, only the originals relevant. A copy is named `<id>~<k>` (k = the
//!   perturbation's index); under trec_eval's tie rule (score descending, then id descending) a
//!   copy scoring exactly like its original ranks above it — a duplicate the similarity cannot
//!   tell apart is a perfect distractor (uncased models meet this under random capitalisation);
//! - **replace**: every document replaced by its perturbed copy, relevance carried over.
//!
//! NDCG@10 (sage-core's trec_eval-equal measure, queries without a relevant document in the
//! corpus excluded) on the clean corpus and on each perturbed one; `retention_t = NDCG_t /
//! NDCG_clean`; score = harmonic mean of the 18 retentions (0 if any is 0); category score =
//! mean over datasets.
//!
//! A document's text is `title + " " + text` (BEIR's convention for dense retrievers) or the
//! text alone when it has no title; it is the reference of each pair and the query the
//! candidate (BM25: the document is the one-document corpus).
//!
//! ## Scale
//!
//! Documents are scored in chunks sized so that a chunk holds at most `pair_budget` query–document
//! pairs, each query keeping a top-10 heap: memory is O(corpus + chunk + queries × 10), never
//! queries × corpus. Perturbed copies are made chunk by chunk, scored and dropped. In distractor
//! mode the originals' top-10 is computed once and merged with each perturbation's copies.
//! Scores come from [`Similarity::score_pairs_for_ranking`](sage_core::Similarity::score_pairs_for_ranking), comparable across chunks (raw BM25
//! rather than its per-batch min–max). Each chunk is one batch, so an embedding model embeds each
//! document text once per perturbation (queries once per chunk; a cached model reads them back).
//! `max_docs` samples the corpus (seeded) keeping every document relevant to a kept query;
//! `max_queries` samples the queries.
#![deny(missing_docs)]

mod task;
mod topk;

pub use sage_perturb::retrieval_set;
pub use task::{
    evaluate, evaluate_dataset, load_ranking_set, notes, DatasetReport, Doc, Mode, Options, Query,
    RankingSet, RetentionReport, RetrievalReport, Sampling, DEFAULT_DATASETS,
};
pub use topk::TopK;

/// Errors of this crate: the error every task over perturbed data shares.
pub type RetrievalError = sage_task::TaskError;

/// Result alias of this crate.
pub type Result<T, E = RetrievalError> = std::result::Result<T, E>;
