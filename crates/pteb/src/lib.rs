//! # pteb
//!
//! PTEB (Frank & Afli, "PTEB: Towards Robust Text Embedding Evaluation via Stochastic
//! Paraphrasing at Evaluation Time with LLMs"): MTEB-style tasks scored on the original data and
//! again on paraphrases an LLM writes at evaluation time, over several seeds, with robust
//! statistics.
//!
//! Data flows one way: a [`sage_data`] dataset → [`Paraphraser`] (any [`ChatModel`] of
//! [`sage_llm`]: a local GGUF model through candle, [`GgufChat`], or an OpenAI-compatible server,
//! [`OpenAiChat`]) → the
//! encoder ([`sage_core::Embedder`]) → the task's MTEB measure (from [`sage_measures`]) →
//! [`PtebReport`] with per-dataset original score, mean ± std over runs, delta, the
//! paraphrases' quality against a gate ([`QualityGate`]: a fixed reference encoder's agreement
//! between each original and its paraphrase, edit distance, fallbacks, an optional LLM judge),
//! and the pooled Hodges–Lehmann shift with its bootstrap interval and
//! the Wilcoxon signed-rank test. [`compare`] sets several encoders against a baseline with Holm's
//! correction, as the paper's Table 7.
//!
//! Design choices, where the paper is silent:
//! - Paraphrases depend on (paraphraser, seed, text) only, and are cached on that key
//!   ([`ParaphraseCache`]): a re-run, or a run of another encoder, reuses them; a killed run loses
//!   only the group of requests in flight ([`ChatModel::batch_hint`]). Duplicate texts within a dataset (STS sentences that recur)
//!   get one paraphrase per run.
//! - An answer is accepted when it is non-empty, was not cut at the token limit, is at most
//!   5× the input's length in characters, and does not repeat a clause of the instruction that
//!   the input lacks (small models answer with the prompt's words); otherwise the request is retried with a new seed, up to
//!   5 attempts, then the original text is used and counted as a fallback.
//! - Edit distance is word-level Levenshtein over whitespace-separated words, divided by the longer
//!   text's word count (the paper's normalisation), averaged per dataset.
//! - Which texts are paraphrased, per task: STS both sentences; classification the test texts
//!   (train texts too with an option); clustering every text; pair classification both
//!   sentences; reranking query and candidates; retrieval the queries only; summarisation the
//!   machine summaries (the human references stay).
#![deny(missing_docs)]

mod ablation;
pub mod aggregate;
mod cache;
mod evaluate;
mod llm;
pub mod mteb;
mod paraphrase;
mod prompt;
pub mod protocol;
mod qualify;
mod quality;
mod tasks;
#[cfg(test)]
mod testing;

pub use ablation::{PromptAblation, PromptCondition, PromptVersus};
pub use cache::{default_cache_path, merge_paraphrase_caches, request_key, ParaphraseCache};
pub use evaluate::{
    compare, evaluate, load_subsets, load_task, prompt_ablation, Comparison, DatasetResult,
    Options, Paraphrasing, Pooled, Progress, PtebReport, RunResult, Silent, SubsetTask,
    DEFAULT_DATASETS,
};
// the chat models live in sage-llm; PTEB's API keeps naming them
pub use llm::LlmConfig;
pub use paraphrase::{
    Judge, Paraphrase, ParaphraseSettings, ParaphraseStats, Paraphraser, ParaphraserIdentity,
};
pub use prompt::{
    clean_answer, echoes_instruction, judge_messages, parse_rating, strip_reasoning, PromptStyle,
    SHIPPED_WORDINGS,
};
pub use qualify::{
    qualification_tables, qualify, JudgeCandidate, ParaphraserCandidate, ParaphraserOnDataset,
    Qualification,
};
pub use quality::{
    judge_sts_spearman, mean_figures, measure_run, DatasetQuality, JudgeResult, QualityFigures,
    QualityGate, RunQuality, Verdict, DEFAULT_REFERENCE_ENCODER, NOT_QUALIFIED_ADVICE,
};
pub use sage_llm::{
    locate_gguf, sample_top_p, ChatMessage, ChatModel, Completion, GgufChat, LlmError, OpenAiChat,
    Retry, Sampling, DEFAULT_BATCH_CPU, DEFAULT_BATCH_CUDA,
};
pub use tasks::{group_summaries, RerankingSample, SummarizationSample, TaskData, TaskKind};

use std::path::PathBuf;

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PtebError {
    /// A data error.
    #[error(transparent)]
    Data(#[from] sage_data::DataError),
    /// A measure or embedding error.
    #[error(transparent)]
    Core(#[from] sage_core::SageError),
    /// A chat model (the paraphraser or the judge) failed: its file, its server, its decoding.
    #[error(transparent)]
    Llm(#[from] sage_llm::LlmError),
    /// The paraphrase cache failed.
    #[error("paraphrase cache {}: {message}", path.display())]
    Cache {
        /// The cache file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A task could not be run on the data given.
    #[error("{0}")]
    Task(String),
}

impl From<sage_cache::CacheError> for PtebError {
    fn from(e: sage_cache::CacheError) -> Self {
        PtebError::Cache {
            path: e.path,
            message: e.message,
        }
    }
}

/// Result alias of this crate.
pub type Result<T, E = PtebError> = std::result::Result<T, E>;
