//! # sage-llm
//!
//! The chat LLMs sage-rs runs: PTEB's paraphraser and judge, and anything else that needs an
//! instruction-following model. One trait, [`ChatModel`], with two implementations:
//! - [`GgufChat`]: a local GGUF file through candle, many requests decoded together. llama and
//!   qwen2 run on our batched decoder (`llama.rs`: per-request or pooled attention, one KV cache
//!   per request) with sage-kernels' quantized products (Q4_1 and Q8_0 in an interleaved
//!   layout, AVX-512 VNNI and AVX2 paths that give candle's bits); gemma3 runs on candle's
//!   model. Sampling is ours (`sample_top_p`), seeded per request, so an answer depends on
//!   (model, prompt, seed) only, not on its batch (on the CPU).
//! - [`OpenAiChat`]: any OpenAI-compatible `/chat/completions` server (vLLM, Ollama, llama.cpp,
//!   a hosted API), with retries and the one redaction rule of `sage_redact` for what
//!   errors may show.
//!
//! Why a crate of its own: it is about half of what PTEB was, and a user of PTEB's tasks and
//! statistics with a served model needs none of it compiled for the CPU. `pteb`
//! re-exports what it uses, so `pteb::GgufChat` still names the same type.
#![deny(missing_docs)]

use std::path::PathBuf;

mod chat;
mod gguf;
mod http;
mod llama;
pub mod rotary;

pub use chat::{ChatMessage, ChatModel, Completion, Retry, Sampling};
pub use gguf::{locate_gguf, sample_top_p, GgufChat, DEFAULT_BATCH_CPU, DEFAULT_BATCH_CUDA};
pub use http::OpenAiChat;

/// Errors of the chat models.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// A measure or seed error from sage-core.
    #[error(transparent)]
    Core(#[from] sage_core::SageError),
    /// The LLM file could not be used.
    #[error("{}: {message}", path.display())]
    Model {
        /// The file or folder.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The HTTP backend failed.
    #[error("{url}: {message}")]
    Http {
        /// The endpoint.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// The GPU asked for cannot be used (no GPU, no CUDA in this build, an old driver).
    #[error(transparent)]
    Device(#[from] sage_device::DeviceError),
}

/// Result alias of this crate.
pub type Result<T, E = LlmError> = std::result::Result<T, E>;
