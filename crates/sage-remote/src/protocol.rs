//! The four wire protocols, each as its provider's API reference documents it: request body,
//! endpoint, key header, response body, limits, and what a [`Role`] becomes.

use sage_core::Role;
use serde_json::{json, Value};

/// A wire protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// OpenAI's `POST {base}/embeddings`, and every server that speaks it (vLLM, TEI, Ollama,
    /// Infinity, llama.cpp's server, LM Studio).
    OpenAi,
    /// Voyage AI: OpenAI-like, plus `input_type` and `output_dimension`.
    Voyage,
    /// Cohere's `POST /v2/embed`.
    Cohere,
    /// Google's Gemini API, `models/{model}:batchEmbedContents`.
    Gemini,
}

/// Per-request limits a batch must respect.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// Most texts in one request.
    pub max_inputs: usize,
    /// Most tokens (all texts together) in one request.
    pub max_request_tokens: usize,
    /// Most tokens of one text the model reads; longer texts are truncated.
    pub max_input_tokens: usize,
    /// Whether the client must cut over-long texts itself (OpenAI answers 400 instead of
    /// truncating); otherwise the provider truncates, as documented, and the client only counts.
    pub client_truncates: bool,
}

impl Protocol {
    /// `openai`, `voyage`, `cohere`, `gemini`.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::OpenAi => "openai",
            Protocol::Voyage => "voyage",
            Protocol::Cohere => "cohere",
            Protocol::Gemini => "gemini",
        }
    }

    /// The protocol named `name`.
    pub fn from_name(name: &str) -> Option<Protocol> {
        Some(match name {
            "openai" => Protocol::OpenAi,
            "voyage" => Protocol::Voyage,
            "cohere" => Protocol::Cohere,
            "gemini" => Protocol::Gemini,
            _ => return None,
        })
    }

    /// The provider's own endpoint, used when a spec names no `@BASE_URL`.
    pub fn default_base_url(self) -> &'static str {
        match self {
            Protocol::OpenAi => "https://api.openai.com/v1",
            Protocol::Voyage => "https://api.voyageai.com/v1",
            Protocol::Cohere => "https://api.cohere.com",
            Protocol::Gemini => "https://generativelanguage.googleapis.com/v1beta",
        }
    }

    /// The environment variable the provider's own clients read the key from.
    pub fn key_variable(self) -> &'static str {
        match self {
            Protocol::OpenAi => "OPENAI_API_KEY",
            Protocol::Voyage => "VOYAGE_API_KEY",
            Protocol::Cohere => "CO_API_KEY",
            Protocol::Gemini => "GEMINI_API_KEY",
        }
    }

    /// Documented limits (as of 2025-10): OpenAI 2,048 inputs and 300,000 tokens per request,
    /// 8,192 tokens per input (8,191 for ada-002), an error beyond; Voyage 1,000 inputs,
    /// 120,000 tokens per request for voyage-3-large (320,000 for other voyage-3 models),
    /// 32,000 tokens per input, truncated; Cohere 96 texts per call, truncated at the end
    /// (`truncate: END`) past the model's context (512 tokens before v4, 128k for embed-v4.0);
    /// Gemini 100 requests per batch, 2,048 tokens per input, truncated.
    pub fn limits(self, model: &str) -> Limits {
        match self {
            Protocol::OpenAi => Limits {
                max_inputs: 2048,
                max_request_tokens: 300_000,
                max_input_tokens: if model.contains("ada-002") {
                    8191
                } else {
                    8192
                },
                client_truncates: true,
            },
            Protocol::Voyage => Limits {
                max_inputs: 1000,
                max_request_tokens: if model.contains("large") {
                    120_000
                } else {
                    320_000
                },
                max_input_tokens: 32_000,
                client_truncates: false,
            },
            Protocol::Cohere => Limits {
                max_inputs: 96,
                max_request_tokens: usize::MAX,
                max_input_tokens: if model.contains("v4") { 128_000 } else { 512 },
                client_truncates: false,
            },
            Protocol::Gemini => Limits {
                max_inputs: 100,
                max_request_tokens: usize::MAX,
                max_input_tokens: 2048,
                client_truncates: false,
            },
        }
    }

    /// What `role` is sent as (`input_type`, `taskType`), or `None` when the protocol has no such
    /// field (OpenAI) or the role sends none (Voyage's plain text).
    pub fn role_field(self, role: Role) -> Option<&'static str> {
        match (self, role) {
            (Protocol::OpenAi, _) => None,
            (Protocol::Voyage, Role::Plain) => None,
            (Protocol::Voyage, Role::Query) => Some("query"),
            (Protocol::Voyage, Role::Document) => Some("document"),
            // Cohere v3+ requires an input_type; symmetric similarity is its clustering use
            (Protocol::Cohere, Role::Plain) => Some("clustering"),
            (Protocol::Cohere, Role::Query) => Some("search_query"),
            (Protocol::Cohere, Role::Document) => Some("search_document"),
            (Protocol::Gemini, Role::Plain) => Some("SEMANTIC_SIMILARITY"),
            (Protocol::Gemini, Role::Query) => Some("RETRIEVAL_QUERY"),
            (Protocol::Gemini, Role::Document) => Some("RETRIEVAL_DOCUMENT"),
        }
    }

    /// The request URL under `base`.
    pub fn url(self, base: &str, model: &str) -> String {
        match self {
            Protocol::OpenAi | Protocol::Voyage => format!("{base}/embeddings"),
            Protocol::Cohere => format!("{base}/v2/embed"),
            Protocol::Gemini => format!("{base}/models/{model}:batchEmbedContents"),
        }
    }

    /// The header that carries `key`: `(name, value)`.
    pub fn key_header(self, key: &str) -> (&'static str, String) {
        match self {
            Protocol::Gemini => ("x-goog-api-key", key.to_owned()),
            _ => ("Authorization", format!("Bearer {key}")),
        }
    }

    /// The JSON body asking for `texts` in `role`, `dimensions` wide when given.
    pub fn body(self, model: &str, texts: &[&str], role: Role, dimensions: Option<usize>) -> Value {
        let role_field = self.role_field(role);
        match self {
            Protocol::OpenAi => {
                let mut body =
                    json!({ "model": model, "input": texts, "encoding_format": "float" });
                if let Some(d) = dimensions {
                    body["dimensions"] = json!(d);
                }
                body
            }
            Protocol::Voyage => {
                let mut body = json!({ "model": model, "input": texts, "truncation": true });
                if let Some(t) = role_field {
                    body["input_type"] = json!(t);
                }
                if let Some(d) = dimensions {
                    body["output_dimension"] = json!(d);
                }
                body
            }
            Protocol::Cohere => {
                let mut body = json!({
                    "model": model,
                    "texts": texts,
                    "input_type": role_field,
                    "embedding_types": ["float"],
                    "truncate": "END",
                });
                if let Some(d) = dimensions {
                    body["output_dimension"] = json!(d);
                }
                body
            }
            Protocol::Gemini => {
                let requests: Vec<Value> = texts
                    .iter()
                    .map(|t| {
                        let mut r = json!({
                            "model": format!("models/{model}"),
                            "content": { "parts": [{ "text": t }] },
                            "taskType": role_field,
                        });
                        if let Some(d) = dimensions {
                            r["outputDimensionality"] = json!(d);
                        }
                        r
                    })
                    .collect();
                json!({ "requests": requests })
            }
        }
    }

    /// The provider's own words for an error answer, when it has the documented shape.
    pub fn error_message(self, body: &str) -> Option<String> {
        let value: Value = serde_json::from_str(body).ok()?;
        let message = match self {
            Protocol::OpenAi | Protocol::Gemini => value.pointer("/error/message"),
            Protocol::Voyage => value.get("detail"),
            Protocol::Cohere => value.get("message"),
        }
        .or_else(|| value.pointer("/error/message"))
        .or_else(|| value.get("message"))
        .or_else(|| value.get("detail"))?;
        Some(match message {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_follow_each_reference() {
        let b = Protocol::OpenAi.body("m", &["a", "b"], Role::Query, Some(256));
        assert_eq!(
            b,
            json!({"model": "m", "input": ["a", "b"], "encoding_format": "float", "dimensions": 256})
        );
        let b = Protocol::Voyage.body("voyage-3-large", &["a"], Role::Document, Some(512));
        assert_eq!(
            b,
            json!({"model": "voyage-3-large", "input": ["a"], "truncation": true,
                   "input_type": "document", "output_dimension": 512})
        );
        assert!(Protocol::Voyage
            .body("v", &["a"], Role::Plain, None)
            .get("input_type")
            .is_none());
        let b = Protocol::Cohere.body("embed-v4.0", &["a"], Role::Query, None);
        assert_eq!(
            b,
            json!({"model": "embed-v4.0", "texts": ["a"], "input_type": "search_query",
                   "embedding_types": ["float"], "truncate": "END"})
        );
        let b = Protocol::Gemini.body("gemini-embedding-001", &["a"], Role::Document, Some(768));
        assert_eq!(
            b,
            json!({"requests": [{"model": "models/gemini-embedding-001",
                   "content": {"parts": [{"text": "a"}]}, "taskType": "RETRIEVAL_DOCUMENT",
                   "outputDimensionality": 768}]})
        );
        assert_eq!(
            Protocol::Gemini.url("https://g/v1beta", "gemini-embedding-001"),
            "https://g/v1beta/models/gemini-embedding-001:batchEmbedContents"
        );
        assert_eq!(Protocol::Cohere.url("https://c", "x"), "https://c/v2/embed");
    }

    #[test]
    fn provider_error_bodies_are_read() {
        assert_eq!(
            Protocol::OpenAi.error_message(r#"{"error":{"message":"Rate limit","type":"x"}}"#),
            Some("Rate limit".into())
        );
        assert_eq!(
            Protocol::Cohere.error_message(r#"{"message":"invalid api token"}"#),
            Some("invalid api token".into())
        );
        assert_eq!(
            Protocol::Voyage.error_message(r#"{"detail":"bad input_type"}"#),
            Some("bad input_type".into())
        );
        assert_eq!(Protocol::Gemini.error_message("<html>"), None);
    }
}
