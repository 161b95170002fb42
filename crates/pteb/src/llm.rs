//! How a paraphraser or judge spec becomes a chat model: the one reading of `--paraphraser`,
//! `--judge` and their LLM settings, shared by `sage run pteb`, `sage pteb qualify` and the
//! `pteb` suite of the registry (Python's `sage_rs.run("pteb", ...)`).

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use crate::{
    ChatModel, GgufChat, Judge, OpenAiChat, ParaphraseCache, ParaphraseSettings, Paraphraser,
    PromptStyle, PtebError, Result,
};

/// The LLM settings of a PTEB run; every field has the CLI flag's default.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmConfig {
    /// The model a server is asked for (an HTTP paraphraser or judge needs it).
    pub llm_model: Option<String>,
    /// Requests a local GGUF LLM decodes together per lane (default: the engine's).
    pub llm_batch: Option<usize>,
    /// Decoding lanes of a local LLM (default: the engine's).
    pub llm_lanes: Option<usize>,
    /// Pooled attention (`true`) or per-request (`false`); default: the engine's per device.
    pub llm_pooled_attention: Option<bool>,
    /// The environment variable holding a server's API key (never the key itself).
    pub api_key_env: String,
    /// Seconds before an HTTP request is abandoned.
    pub http_timeout: u64,
    /// The multilingual prompt.
    pub multilingual: bool,
    /// Sampling temperature.
    pub temperature: f64,
    /// Nucleus mass.
    pub top_p: f64,
    /// Most tokens of a judge answer.
    pub judge_max_tokens: usize,
}

impl Default for LlmConfig {
    fn default() -> Self {
        let sampling = ParaphraseSettings::default();
        LlmConfig {
            llm_model: None,
            llm_batch: None,
            llm_lanes: None,
            llm_pooled_attention: None,
            api_key_env: "OPENAI_API_KEY".into(),
            http_timeout: 300,
            multilingual: false,
            temperature: sampling.temperature,
            top_p: sampling.top_p,
            judge_max_tokens: 16,
        }
    }
}

impl LlmConfig {
    /// The chat model `spec` names: an OpenAI-compatible server (`http(s)://...`, with
    /// `llm_model`) or a local GGUF (a file, a folder with one, or a folder name under
    /// `$SAGE_MODELS_DIR`).
    pub fn chat_model(&self, spec: &str, cuda: bool) -> Result<Box<dyn ChatModel>> {
        if spec.starts_with("http://") || spec.starts_with("https://") {
            let Some(model) = &self.llm_model else {
                return Err(PtebError::Task(format!(
                    "{} is a server: name the model it should run (--llm-model, llm_model=)",
                    sage_redact::redact_url(spec)
                )));
            };
            let key = std::env::var(&self.api_key_env)
                .ok()
                .filter(|k| !k.is_empty());
            return Ok(Box::new(OpenAiChat::new(
                spec,
                model,
                key,
                Duration::from_secs(self.http_timeout.max(1)),
            )));
        }
        let mut model = GgufChat::load(spec, cuda)?;
        if let Some(batch) = self.llm_batch {
            model = model.with_batch(batch);
        }
        if let Some(lanes) = self.llm_lanes {
            model = model.with_lanes(lanes);
        }
        if let Some(pooled) = self.llm_pooled_attention {
            model = model.with_pooled_attention(pooled);
        }
        Ok(Box::new(model))
    }

    /// The paraphraser `spec` names, with the prompt and sampling settings.
    pub fn paraphraser(
        &self,
        spec: &str,
        cuda: bool,
        cache: Option<Arc<ParaphraseCache>>,
    ) -> Result<Paraphraser> {
        let settings = ParaphraseSettings {
            prompt: if self.multilingual {
                PromptStyle::Multilingual
            } else {
                PromptStyle::English
            },
            temperature: self.temperature,
            top_p: self.top_p,
            ..ParaphraseSettings::default()
        };
        Ok(Paraphraser::new(
            self.chat_model(spec, cuda)?,
            settings,
            cache,
        ))
    }

    /// The judge `spec` names.
    pub fn judge(
        &self,
        spec: &str,
        cuda: bool,
        cache: Option<Arc<ParaphraseCache>>,
    ) -> Result<Judge> {
        Ok(Judge::new(
            self.chat_model(spec, cuda)?,
            cache,
            self.judge_max_tokens,
        ))
    }
}
