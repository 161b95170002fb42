//! Local GGUF chat models through candle's quantized architectures: llama (SmolLM2), qwen2
//! (Qwen2.5) and gemma3, with the model's own Jinja chat template and a seeded nucleus sampler.
//!
//! Why our own sampler rather than candle's `LogitsProcessor`: its generator is `rand`'s
//! `StdRng`, whose algorithm `rand` does not promise to keep; ours draws from sage-core's
//! ChaCha20 streams ([`sage_core::RunSeed`]), so a seed means the same tokens on any machine.
//!
//! The system prompt and instruction are the same for every text, so their key/value cache is
//! computed once ([`ChatModel::prepare`]) and each request continues from a cheap clone of it
//! (candle's weights are reference-counted): only the text and the answer are run per request.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor};
use candle_transformers::models::{quantized_gemma3, quantized_llama, quantized_qwen2};
use rand::Rng;
use sage_core::RunSeed;
use sha2::{Digest, Sha256};
use tokenizers::Tokenizer;

use crate::chat::{ChatMessage, ChatModel, Completion, Sampling};
use crate::{PtebError, Result};

/// Architectures whose candle weights are `Clone` (reference-counted tensors): each request
/// runs on its own clone, so requests run in parallel and share a prefilled prompt prefix.
#[derive(Clone)]
enum Weights {
    Llama(quantized_llama::ModelWeights),
    Gemma3(quantized_gemma3::ModelWeights),
}

enum Model {
    Cloneable(Weights),
    /// candle's qwen2 weights are not `Clone`: one request at a time, from an empty cache.
    Exclusive(Mutex<quantized_qwen2::ModelWeights>),
}

trait Forward {
    fn forward(&mut self, x: &Tensor, index_pos: usize) -> candle_core::Result<Tensor>;
}

impl Forward for Weights {
    fn forward(&mut self, x: &Tensor, index_pos: usize) -> candle_core::Result<Tensor> {
        match self {
            Weights::Llama(m) => m.forward(x, index_pos),
            Weights::Gemma3(m) => m.forward(x, index_pos),
        }
    }
}

impl Forward for quantized_qwen2::ModelWeights {
    fn forward(&mut self, x: &Tensor, index_pos: usize) -> candle_core::Result<Tensor> {
        quantized_qwen2::ModelWeights::forward(self, x, index_pos)
    }
}

/// A GGUF chat model on the CPU (or the first CUDA GPU with the `cuda` feature).
pub struct GgufChat {
    file: PathBuf,
    checksum: String,
    architecture: String,
    model: Model,
    tokenizer: Tokenizer,
    template: String,
    bos_token: String,
    eos_token: String,
    stop_ids: Vec<u32>,
    device: Device,
    prefix: Mutex<Option<(Vec<u32>, Weights)>>,
}

fn gguf_error(path: &Path, e: impl std::fmt::Display) -> PtebError {
    PtebError::Model {
        path: path.to_owned(),
        message: e.to_string(),
    }
}

/// The GGUF file named by `spec`: a `.gguf` file, a folder holding exactly one, or the name of
/// such a folder under `SAGE_MODELS_DIR`.
pub fn locate_gguf(spec: &str) -> Result<PathBuf> {
    let direct = PathBuf::from(spec);
    let candidates = [
        Some(direct.clone()),
        std::env::var_os("SAGE_MODELS_DIR")
            .filter(|d| !d.is_empty())
            .map(|d| PathBuf::from(d).join(spec)),
    ];
    for path in candidates.into_iter().flatten() {
        if path.is_file() {
            return Ok(path);
        }
        if path.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(&path)
                .map_err(|e| gguf_error(&path, e))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.extension()
                        .is_some_and(|x| x.eq_ignore_ascii_case("gguf"))
                })
                .collect();
            found.sort();
            return match found.len() {
                1 => Ok(found.remove(0)),
                0 => Err(gguf_error(&path, "no .gguf file in this folder")),
                _ => Err(gguf_error(
                    &path,
                    format!(
                        "several .gguf files in this folder, name one: {}",
                        found
                            .iter()
                            .map(|p| p.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )),
            };
        }
    }
    Err(PtebError::Model {
        path: direct,
        message: "not a .gguf file, a folder with one, or a folder name under $SAGE_MODELS_DIR"
            .into(),
    })
}

fn file_sha256(path: &Path) -> Result<String> {
    let mut f = File::open(path).map_err(|e| gguf_error(path, e))?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h).map_err(|e| gguf_error(path, e))?;
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

impl GgufChat {
    /// Loads the model named by `spec` (see [`locate_gguf`]). The tokenizer is the
    /// `tokenizer.json` beside the file; the chat template is `chat_template.jinja` beside it or
    /// else the GGUF's `tokenizer.chat_template`.
    pub fn load(spec: &str, cuda: bool) -> Result<GgufChat> {
        let file = locate_gguf(spec)?;
        let folder = file.parent().unwrap_or(Path::new(".")).to_owned();
        let device = if cuda {
            Device::new_cuda(0).map_err(|e| gguf_error(&file, e))?
        } else {
            Device::Cpu
        };
        let mut reader = File::open(&file).map_err(|e| gguf_error(&file, e))?;
        let content = gguf_file::Content::read(&mut reader).map_err(|e| gguf_error(&file, e))?;
        let meta_str = |key: &str| -> Option<String> {
            content
                .metadata
                .get(key)
                .and_then(|v| v.to_string().ok().cloned())
        };
        let meta_u32 = |key: &str| content.metadata.get(key).and_then(|v| v.to_u32().ok());
        let architecture = meta_str("general.architecture")
            .ok_or_else(|| gguf_error(&file, "no general.architecture in the GGUF metadata"))?;
        let template_file = folder.join("chat_template.jinja");
        let template = if template_file.is_file() {
            std::fs::read_to_string(&template_file).map_err(|e| gguf_error(&template_file, e))?
        } else {
            meta_str("tokenizer.chat_template").ok_or_else(|| {
                gguf_error(
                    &file,
                    "no chat template: neither chat_template.jinja beside it nor tokenizer.chat_template in the GGUF",
                )
            })?
        };
        let bos_id = meta_u32("tokenizer.ggml.bos_token_id");
        let eos_id = meta_u32("tokenizer.ggml.eos_token_id");
        let tokenizer_file = folder.join("tokenizer.json");
        let tokenizer =
            Tokenizer::from_file(&tokenizer_file).map_err(|e| gguf_error(&tokenizer_file, e))?;
        let token_text = |id: Option<u32>| {
            id.and_then(|i| tokenizer.id_to_token(i))
                .unwrap_or_default()
        };
        let bos_token = token_text(bos_id);
        let eos_token = token_text(eos_id);
        // End-of-turn markers of the chat formats these families use, where the vocabulary has
        // them: a chat answer ends at the first.
        let mut stop_ids: Vec<u32> = eos_id.into_iter().collect();
        for marker in [
            "<|im_end|>",
            "<|endoftext|>",
            "<end_of_turn>",
            "<|eot_id|>",
            "<eos>",
        ] {
            if let Some(id) = tokenizer.token_to_id(marker) {
                if !stop_ids.contains(&id) {
                    stop_ids.push(id);
                }
            }
        }
        let model = match architecture.as_str() {
            "llama" => Model::Cloneable(Weights::Llama(
                quantized_llama::ModelWeights::from_gguf(content, &mut reader, &device)
                    .map_err(|e| gguf_error(&file, e))?,
            )),
            "qwen2" => Model::Exclusive(Mutex::new(
                quantized_qwen2::ModelWeights::from_gguf(content, &mut reader, &device)
                    .map_err(|e| gguf_error(&file, e))?,
            )),
            "gemma3" => Model::Cloneable(Weights::Gemma3(
                quantized_gemma3::ModelWeights::from_gguf(content, &mut reader, &device)
                    .map_err(|e| gguf_error(&file, e))?,
            )),
            other => {
                return Err(gguf_error(
                    &file,
                    format!("architecture {other:?} is not supported (llama, qwen2, gemma3)"),
                ))
            }
        };
        let checksum = file_sha256(&file)?;
        Ok(GgufChat {
            file,
            checksum,
            architecture,
            model,
            tokenizer,
            template,
            bos_token,
            eos_token,
            stop_ids,
            device,
            prefix: Mutex::new(None),
        })
    }

    /// The GGUF file.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// `general.architecture` of the file.
    pub fn architecture(&self) -> &str {
        &self.architecture
    }

    /// The prompt exactly as the model sees it: the chat template rendered with the messages
    /// and the generation prompt.
    pub fn render(&self, messages: &[ChatMessage]) -> Result<String> {
        let mut env = minijinja::Environment::new();
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function(
            "raise_exception",
            |message: String| -> std::result::Result<String, minijinja::Error> {
                Err(minijinja::Error::new(
                    minijinja::ErrorKind::InvalidOperation,
                    message,
                ))
            },
        );
        env.render_str(
            &self.template,
            minijinja::context! {
                messages => messages,
                add_generation_prompt => true,
                bos_token => &self.bos_token,
                eos_token => &self.eos_token,
            },
        )
        .map_err(|e| gguf_error(&self.file, format!("chat template: {e:#}")))
    }

    fn tokenize(&self, prompt: &str) -> Result<Vec<u32>> {
        // The template writes every special token itself (BOS included where the format wants
        // it), so the tokenizer must not add its own.
        Ok(self
            .tokenizer
            .encode(prompt, false)
            .map_err(|e| gguf_error(&self.file, e))?
            .get_ids()
            .to_vec())
    }

    fn forward(&self, model: &mut impl Forward, tokens: &[u32], pos: usize) -> Result<Vec<f32>> {
        let input = Tensor::new(tokens, &self.device)
            .and_then(|t| t.unsqueeze(0))
            .map_err(|e| gguf_error(&self.file, e))?;
        model
            .forward(&input, pos)
            .and_then(|l| l.squeeze(0))
            .and_then(|l| l.to_dtype(candle_core::DType::F32))
            .and_then(|l| l.to_vec1::<f32>())
            .map_err(|e| gguf_error(&self.file, e))
    }
}

impl ChatModel for GgufChat {
    fn identity(&self) -> String {
        format!(
            "gguf:{}@sha256:{}",
            self.file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            self.checksum
        )
    }

    fn count_tokens(&self, text: &str) -> Result<usize> {
        Ok(self.tokenize(text)?.len())
    }

    fn prepare(&self, examples: [&[ChatMessage]; 2]) -> Result<()> {
        let a = self.tokenize(&self.render(examples[0])?)?;
        let b = self.tokenize(&self.render(examples[1])?)?;
        let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
        // The last shared token may merge differently with other inputs: leave it out.
        let shared = common.saturating_sub(1);
        let Model::Cloneable(weights) = &self.model else {
            return Ok(());
        };
        if shared == 0 {
            return Ok(());
        }
        let mut model = weights.clone();
        self.forward(&mut model, &a[..shared], 0)?;
        *self.prefix.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((a[..shared].to_vec(), model));
        Ok(())
    }

    fn complete(&self, messages: &[ChatMessage], sampling: &Sampling) -> Result<Completion> {
        let prompt = self.tokenize(&self.render(messages)?)?;
        match &self.model {
            Model::Cloneable(weights) => {
                let (mut model, start) = {
                    let prefix = self.prefix.lock().unwrap_or_else(|p| p.into_inner());
                    match &*prefix {
                        Some((tokens, model))
                            if prompt.len() > tokens.len() && prompt.starts_with(tokens) =>
                        {
                            (model.clone(), tokens.len())
                        }
                        _ => (weights.clone(), 0),
                    }
                };
                self.generate(&mut model, &prompt, start, sampling)
            }
            Model::Exclusive(model) => {
                let mut model = model.lock().unwrap_or_else(|p| p.into_inner());
                self.generate(&mut *model, &prompt, 0, sampling)
            }
        }
    }
}

impl GgufChat {
    /// Runs `prompt[start..]` on a model whose cache holds `prompt[..start]`, then samples.
    fn generate(
        &self,
        model: &mut impl Forward,
        prompt: &[u32],
        start: usize,
        sampling: &Sampling,
    ) -> Result<Completion> {
        // the prompt is mixed into the stream so that texts sharing a seed do not share draws
        let prompt_hash = prompt.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &t| {
            (h ^ u64::from(t)).wrapping_mul(0x0000_0100_0000_01b3)
        });
        let mut rng = RunSeed(sampling.seed).rng_for_item("pteb/gguf-sampler", prompt_hash);
        let mut logits = self.forward(model, &prompt[start..], start)?;
        let mut generated: Vec<u32> = Vec::new();
        let mut truncated = true;
        while generated.len() < sampling.max_tokens {
            let next = sample_top_p(&logits, sampling.temperature, sampling.top_p, &mut rng);
            if self.stop_ids.contains(&next) {
                truncated = false;
                break;
            }
            generated.push(next);
            if !sampling.stop.is_empty() {
                let text = self
                    .tokenizer
                    .decode(&generated, true)
                    .map_err(|e| gguf_error(&self.file, e))?;
                // a stop right after a lead-in ("Here is the paraphrase:") is not the end yet
                let stop_at = sampling
                    .stop
                    .iter()
                    .filter_map(|s| text.find(s.as_str()))
                    .filter(|&at| {
                        let before = text[..at].trim_end();
                        !before.is_empty() && !before.ends_with(':')
                    })
                    .min();
                if let Some(cut) = stop_at {
                    return Ok(Completion {
                        text: text[..cut].to_owned(),
                        truncated: false,
                    });
                }
            }
            if generated.len() == sampling.max_tokens {
                break;
            }
            logits = self.forward(model, &[next], prompt.len() + generated.len() - 1)?;
        }
        let text = self
            .tokenizer
            .decode(&generated, true)
            .map_err(|e| gguf_error(&self.file, e))?;
        Ok(Completion { text, truncated })
    }
}

/// Nucleus sampling: softmax of `logits / temperature`, the most likely tokens kept until their
/// mass reaches `top_p` (the token that crosses it included), one drawn in proportion. Greedy
/// when `temperature` is 0. Ties in probability keep the lower token id first, so the draw is a
/// function of the logits and the generator alone.
pub fn sample_top_p(logits: &[f32], temperature: f64, top_p: f64, rng: &mut impl Rng) -> u32 {
    let argmax = || {
        logits
            .iter()
            .enumerate()
            .fold((0usize, f32::NEG_INFINITY), |best, (i, &l)| {
                if l > best.1 {
                    (i, l)
                } else {
                    best
                }
            })
            .0 as u32
    };
    if temperature <= 0.0 {
        return argmax();
    }
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let mut probs: Vec<(u32, f64)> = logits
        .iter()
        .enumerate()
        .map(|(i, &l)| (i as u32, ((l as f64 - max) / temperature).exp()))
        .collect();
    let total: f64 = probs.iter().map(|p| p.1).sum();
    if !(total.is_finite() && total > 0.0) {
        return argmax();
    }
    probs.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut kept = 0.0;
    let mut cut = probs.len();
    for (i, p) in probs.iter().enumerate() {
        kept += p.1 / total;
        if kept >= top_p {
            cut = i + 1;
            break;
        }
    }
    let nucleus = &probs[..cut];
    let mass: f64 = nucleus.iter().map(|p| p.1).sum();
    let mut target = rng.gen::<f64>() * mass;
    for p in nucleus {
        target -= p.1;
        if target < 0.0 {
            return p.0;
        }
    }
    nucleus[nucleus.len() - 1].0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_takes_the_argmax_and_top_p_keeps_the_nucleus() {
        let logits = [0.0f32, 5.0, 1.0, 4.9];
        let mut rng = RunSeed(1).rng("t");
        assert_eq!(sample_top_p(&logits, 0.0, 0.9, &mut rng), 1);
        // top-p so small that only the most likely token is in the nucleus
        for _ in 0..50 {
            assert_eq!(sample_top_p(&logits, 1.0, 0.01, &mut rng), 1);
        }
        // with p = 0.9, tokens 1 and 3 (~0.47 each) are drawn, never 0 or 2 (~0.02, ~0.05 left out)
        let mut seen = [0usize; 4];
        for _ in 0..400 {
            seen[sample_top_p(&logits, 1.0, 0.9, &mut rng) as usize] += 1;
        }
        assert_eq!((seen[0], seen[2]), (0, 0));
        assert!(seen[1] > 100 && seen[3] > 100, "{seen:?}");
    }

    #[test]
    fn same_seed_same_draws() {
        let logits: Vec<f32> = (0..100).map(|i| (i as f32 * 0.37).sin()).collect();
        let draw = |seed| {
            let mut rng = RunSeed(seed).rng("t");
            (0..20)
                .map(|_| sample_top_p(&logits, 0.8, 0.9, &mut rng))
                .collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
    }
}
