//! Any OpenAI-compatible chat-completions server (Ollama, vLLM, llama.cpp's server, hosted
//! APIs): `POST {base}/chat/completions` with the messages, temperature, top_p, max_tokens and
//! seed. What users of bigger paraphrasers run.

use std::time::Duration;

use sage_redact::{redact, redact_url};
use serde::Deserialize;
use serde_json::json;

use crate::chat::{ChatMessage, ChatModel, Completion, Sampling};
use crate::{LlmError, Result};

/// An OpenAI-compatible chat endpoint.
pub struct OpenAiChat {
    base_url: String,
    model: String,
    api_key: Option<String>,
    agent: ureq::Agent,
}

#[derive(Deserialize)]
struct Response {
    choices: Vec<Choice>,
}

#[derive(Deserialize)]
struct Choice {
    message: Message,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Message {
    content: Option<String>,
}

impl OpenAiChat {
    /// A client of `base_url` (e.g. `http://localhost:11434/v1`; a trailing
    /// `/chat/completions` is accepted too) asking for `model`. `api_key` goes in an
    /// `Authorization: Bearer` header when given. Requests time out after `timeout`.
    pub fn new(
        base_url: &str,
        model: &str,
        api_key: Option<String>,
        timeout: Duration,
    ) -> OpenAiChat {
        let base = base_url.trim_end_matches('/');
        let base = base.strip_suffix("/chat/completions").unwrap_or(base);
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            // a redirected POST would go as a GET without its body, maybe to another host, and
            // whatever answered would be read as the completion (as sage-embed's clients refuse)
            .max_redirects(0)
            .build()
            .into();
        OpenAiChat {
            base_url: base.to_owned(),
            model: model.to_owned(),
            api_key,
            agent,
        }
    }

    fn url(&self) -> String {
        format!("{}/chat/completions", self.base_url)
    }

    /// An error that shows neither the key nor a password inside the URL (the one redaction
    /// rule of every HTTP client, [`sage_redact`]).
    fn error(&self, message: impl Into<String>) -> LlmError {
        let secrets: Vec<&str> = self.api_key.iter().map(String::as_str).collect();
        LlmError::Http {
            url: redact_url(&self.url()),
            message: redact(&message.into(), &secrets),
        }
    }
}

impl ChatModel for OpenAiChat {
    fn identity(&self) -> String {
        // the server's model name is all we know of its weights; the identity is written into
        // results and cache keys, so a URL password never is
        format!("openai:{}#{}", redact_url(&self.base_url), self.model)
    }

    fn count_tokens(&self, text: &str) -> Result<usize> {
        // No tokenizer on this side: about four characters a token in English, rounded up.
        Ok(text.chars().count().div_ceil(4).max(1))
    }

    fn complete(&self, messages: &[ChatMessage], sampling: &Sampling) -> Result<Completion> {
        let mut body = json!({
            "model": self.model,
            "messages": messages,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
            "seed": sampling.seed,
            "stream": false,
        });
        if !sampling.stop.is_empty() {
            body["stop"] = json!(sampling.stop);
        }
        let mut request = self.agent.post(&self.url());
        if let Some(key) = &self.api_key {
            request = request.header("Authorization", &format!("Bearer {key}"));
        }
        // a sized body (Content-Length), which every server reads; not chunked encoding
        let body = body.to_string();
        let mut response = request
            .header("Content-Type", "application/json")
            .send(body.as_bytes())
            .map_err(|e| self.error(format!("request failed: {e}")))?;
        let status = response.status();
        let text = response
            .body_mut()
            .read_to_string()
            .map_err(|e| self.error(format!("reading the answer: {e}")))?;
        if !status.is_success() {
            return Err(self.error(format!("HTTP {status}: {text}")));
        }
        let parsed: Response = serde_json::from_str(&text)
            .map_err(|e| self.error(format!("not a chat-completions answer ({e}): {text}")))?;
        let choice = parsed
            .choices
            .into_iter()
            .next()
            .ok_or_else(|| self.error("the answer has no choices"))?;
        Ok(Completion {
            text: choice.message.content.unwrap_or_default(),
            truncated: choice.finish_reason.as_deref() == Some("length"),
        })
    }
}

#[cfg(test)]
mod tests {
    use sage_loopback::{Reply, Server};
    use serde_json::json;

    use super::*;

    /// A paraphraser URL with `user:pass@` and a server that echoes the key: neither reaches
    /// the identity (written into results and cache keys) nor the error.
    #[test]
    fn no_password_or_key_reaches_identity_or_error() {
        let server = Server::start(|_req: &sage_loopback::Request| {
            Reply::json(
                500,
                &json!({"error": {"message": "failed for Authorization: Bearer sk-chat-secret-42"}}),
            )
        });
        let url = format!(
            "{}/v1",
            server.url().replace("http://", "http://bob:pa55word@")
        );
        let chat = OpenAiChat::new(
            &url,
            "m",
            Some("sk-chat-secret-42".into()),
            Duration::from_secs(5),
        );
        assert!(!chat.identity().contains("pa55word"), "{}", chat.identity());
        let e = chat
            .complete(
                &[],
                &Sampling {
                    temperature: 0.0,
                    top_p: 1.0,
                    max_tokens: 8,
                    seed: 1,
                    stop: vec![],
                },
            )
            .unwrap_err()
            .to_string();
        assert!(e.contains("HTTP 500"), "{e}");
        for secret in ["pa55word", "sk-chat-secret-42"] {
            assert!(!e.contains(secret), "{e}");
        }
    }
}
