//! How a paraphraser or judge spec becomes a chat model: the one reading of `--paraphraser`,
//! `--judge` and their LLM settings, shared by `sage run pteb`, `sage pteb qualify` and the
//! `pteb` suite of the registry (Python's `sage_rs.run("pteb", ...)`).

use std::sync::Arc;
use std::time::Duration;

use crate::{
    ChatModel, GgufChat, Judge, OpenAiChat, ParaphraseCache, ParaphraseSettings, Paraphraser,
    PromptStyle, PtebError, Result,
};

sage_core::suite_options! {
    /// The LLM settings of a PTEB run, each with its default.
    #[derive(Clone, Debug, PartialEq)]
    pub struct LlmConfig {
        /// The model name a server is asked for (an HTTP paraphraser or judge needs it).
        pub llm_model: Option<String> = None, sage_core::OptionSpec::any();
        /// Requests a local GGUF LLM (llama, qwen2) decodes together in each decoding lane;
        /// unset: 32 on the CPU, 256 on CUDA. Answers do not depend on it on the CPU.
        pub llm_batch: Option<usize> = None, sage_core::OptionSpec::whole(1, 100_000);
        /// Decoding lanes of a local LLM with per-request attention: threads that each decode
        /// their own requests from one shared queue; unset: one per worker thread on the CPU,
        /// 1 on CUDA. Answers do not depend on it.
        pub llm_lanes: Option<usize> = None, sage_core::OptionSpec::whole(1, 10_000);
        /// How a local LLM's requests attend: true, pooled (keys in one preallocated pool, all
        /// requests in one batched product; an answer then depends on its batch to rounding);
        /// false, per request (each alone, bit-for-bit batch-independent). Unset: pooled on
        /// CUDA, per request on the CPU, where it is faster.
        pub llm_pooled_attention: Option<bool> = None, sage_core::OptionSpec::any();
        /// The environment variable holding a server's API key (sent as a Bearer token when
        /// set); never the key itself.
        pub api_key_env: String = "OPENAI_API_KEY".into(), sage_core::OptionSpec::any();
        /// Seconds before an HTTP request is abandoned.
        pub http_timeout: u64 = 300, sage_core::OptionSpec::whole(1, 1_000_000);
        /// The multilingual prompt (the paraphrase stays in the input's language).
        pub multilingual: bool = false, sage_core::OptionSpec::any();
        /// Sampling temperature.
        pub temperature: f64 = ParaphraseSettings::default().temperature,
            sage_core::OptionSpec::at_least(0.0);
        /// Nucleus mass.
        pub top_p: f64 = ParaphraseSettings::default().top_p, sage_core::OptionSpec::between(0.0, 1.0);
        /// Most tokens of a judge answer (raise it for reasoning models).
        pub judge_max_tokens: usize = 16, sage_core::OptionSpec::whole(1, 1_000_000);
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
