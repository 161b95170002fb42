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

    /// The completions of several requests, each asked again while `retry` says so: when
    /// attempt `k` (from 0) of request `i` answers `c`, `retry(i, k, &c)` gives the sampling of
    /// attempt `k + 1` (same messages), or `None` to keep `c`. Returns, per request in order,
    /// the attempt kept and its completion, each attempt being what [`ChatModel::complete`]
    /// answers for it. The default asks in rounds (every first attempt, then every second
    /// one...); the local GGUF model overrides it to start each retry as soon as it is
    /// decided, in the batch still running.
    fn complete_retrying(
        &self,
        requests: &[(&[ChatMessage], &Sampling)],
        retry: &Retry,
    ) -> Result<Vec<(u32, Completion)>> {
        complete_in_rounds(self, requests, retry)
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

/// The rule of [`ChatModel::complete_retrying`]: `(request, attempt, completion)` to the
/// sampling of the next attempt, or `None` to keep the completion.
pub type Retry<'a> = dyn Fn(usize, u32, &Completion) -> Option<Sampling> + Sync + 'a;

/// [`ChatModel::complete_retrying`] in rounds of [`ChatModel::complete_batch`]: round `k`
/// holds attempt `k` of every request still open.
pub(crate) fn complete_in_rounds<M: ChatModel + ?Sized>(
    model: &M,
    requests: &[(&[ChatMessage], &Sampling)],
    retry: &Retry,
) -> Result<Vec<(u32, Completion)>> {
    let mut kept: Vec<Option<(u32, Completion)>> = vec![None; requests.len()];
    let mut open: Vec<(usize, Sampling)> = requests
        .iter()
        .enumerate()
        .map(|(i, (_, sampling))| (i, (*sampling).clone()))
        .collect();
    let mut attempt = 0u32;
    while !open.is_empty() {
        let round: Vec<(&[ChatMessage], &Sampling)> = open
            .iter()
            .map(|(i, sampling)| (requests[*i].0, sampling))
            .collect();
        let completions = model.complete_batch(&round)?;
        let mut next = Vec::new();
        for ((i, _), completion) in open.iter().zip(completions) {
            match retry(*i, attempt, &completion) {
                Some(sampling) => next.push((*i, sampling)),
                None => kept[*i] = Some((attempt, completion)),
            }
        }
        open = next;
        attempt += 1;
    }
    Ok(kept
        .into_iter()
        .map(|k| k.expect("every request ends with a kept attempt"))
        .collect())
}
