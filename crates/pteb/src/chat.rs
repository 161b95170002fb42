//! The one interface every LLM backend implements: a chat completion with sampling parameters and
//! a seed.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::Result;

/// One chat message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// The text.
    pub content: String,
}

impl ChatMessage {
    /// A system message.
    pub fn system(content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: "system".into(),
            content: content.into(),
        }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: "user".into(),
            content: content.into(),
        }
    }
}

/// Sampling settings of one request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sampling {
    /// Softmax temperature; 0 means greedy (argmax).
    pub temperature: f64,
    /// Nucleus: the smallest set of most likely tokens whose probability reaches `top_p`.
    pub top_p: f64,
    /// Most tokens generated.
    pub max_tokens: usize,
    /// The request's seed (the backend's sampler is a function of it).
    pub seed: u64,
    /// Generation ends where the answer first contains one of these (not included).
    pub stop: Vec<String>,
}

/// What a backend answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The generated text (special tokens removed).
    pub text: String,
    /// Generation stopped at `max_tokens` rather than at an end-of-turn token.
    pub truncated: bool,
}

/// A chat LLM: a local GGUF model ([`crate::GgufChat`]) or an OpenAI-compatible server
/// ([`crate::OpenAiChat`]).
pub trait ChatModel: Send + Sync {
    /// Everything that determines the answers besides the request: backend, model file or name
    /// and its checksum where known. Part of every paraphrase-cache key.
    fn identity(&self) -> String;

    /// Prompt-length measure used to bound answers: tokens where the backend has a tokenizer,
    /// else a character-based estimate.
    fn count_tokens(&self, text: &str) -> Result<usize>;

    /// One completion of `messages`.
    fn complete(&self, messages: &[ChatMessage], sampling: &Sampling) -> Result<Completion>;

    /// The completions of several requests, in order; each is what [`ChatModel::complete`]
    /// answers for it. Backends that decode requests together (the local GGUF model) override
    /// it; the default sends them in parallel.
    fn complete_batch(&self, requests: &[(&[ChatMessage], &Sampling)]) -> Result<Vec<Completion>> {
        requests
            .par_iter()
            .map(|(messages, sampling)| self.complete(messages, sampling))
            .collect()
    }

    /// How many requests to hand [`ChatModel::complete_batch`] at once to keep the backend
    /// busy. Callers save results between calls, so a killed run loses at most one call's work.
    fn batch_hint(&self) -> usize {
        4 * rayon::current_num_threads()
    }

    /// A hint that many requests will share the messages common to `examples` (two renderings
    /// of the same prompt for different inputs): local backends compute that shared prefix once.
    fn prepare(&self, _examples: [&[ChatMessage]; 2]) -> Result<()> {
        Ok(())
    }
}
