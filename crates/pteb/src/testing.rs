//! Test doubles shared by this crate's unit tests: an encoder and a chat model whose answers a
//! test can predict.

use std::sync::Mutex;

use ndarray::Array2;
use sage_core::{Embedder, EmbedderIdentity};

use crate::chat::{ChatMessage, ChatModel, Completion, Sampling};
use crate::Result;

/// Bag of hashed words: texts sharing words are close, texts sharing none are orthogonal
/// (with 256 bins, for these few words).
pub(crate) struct Words(EmbedderIdentity);

impl Words {
    pub(crate) fn new() -> Words {
        Words(EmbedderIdentity {
            model_id: "words".into(),
            revision: None,
            pooling: "sum".into(),
            normalize: false,
            max_length: 0,
        })
    }
}

impl Embedder for Words {
    fn identity(&self) -> &EmbedderIdentity {
        &self.0
    }
    fn dimension(&self) -> usize {
        256
    }
    fn embed(&self, texts: &[&str]) -> sage_core::Result<Array2<f32>> {
        let mut m = Array2::zeros((texts.len(), 256));
        for (i, t) in texts.iter().enumerate() {
            for w in t.split_whitespace() {
                let h = w.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                    (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
                });
                m[[i, (h % 256) as usize]] += 1.0;
            }
        }
        Ok(m)
    }
}

/// Answers from a script keyed by the request seed; records the requests.
pub(crate) struct Scripted {
    pub(crate) answer: fn(&str, u64) -> (String, bool),
    pub(crate) calls: Mutex<Vec<u64>>,
}

impl ChatModel for Scripted {
    fn identity(&self) -> String {
        "scripted".into()
    }
    fn count_tokens(&self, text: &str) -> Result<usize> {
        Ok(text.split_whitespace().count())
    }
    fn complete(&self, m: &[ChatMessage], s: &Sampling) -> Result<Completion> {
        self.calls.lock().unwrap().push(s.seed);
        let text = m[1].content.rsplit("Text: ").next().unwrap();
        let (text, truncated) = (self.answer)(text, s.seed);
        Ok(Completion { text, truncated })
    }
}
