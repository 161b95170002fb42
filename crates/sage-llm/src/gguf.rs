//! Local GGUF chat models through candle: llama (SmolLM2) and qwen2 (Qwen2.5) on our packed
//! decoder ([`crate::llama`], many requests per forward pass), gemma3 on candle's model (one
//! request at a time per thread); the model's own Jinja chat template and a seeded nucleus
//! sampler.
//!
//! Why our own sampler rather than candle's `LogitsProcessor`: its generator is `rand`'s
//! `StdRng`, whose algorithm `rand` does not promise to keep; ours draws from sage-core's
//! ChaCha20 streams ([`sage_core::RunSeed`]), so a seed means the same tokens on any machine.
//! Each request has its own stream, so what shares its batch does not change its draws.
//!
//! The system prompt and instruction are the same for every text, so their key/value cache is
//! computed once ([`ChatModel::prepare`]) and each request continues from a cheap clone of it
//! (candle's tensors are reference-counted): only the text and the answer are run per request.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor};
use candle_transformers::models::quantized_gemma3;
use rand::Rng;
use rayon::prelude::*;
use sage_core::{ExperimentRng, RunSeed};
use sha2::{Digest, Sha256};
use tokenizers::Tokenizer;

use crate::chat::{complete_in_rounds, ChatMessage, ChatModel, Completion, Retry, Sampling};
use crate::llama::{KvCache, PackedDecoder};
use crate::{LlmError, Result};

enum Model {
    /// llama, qwen2: requests decoded together.
    Packed(PackedDecoder),
    /// gemma3: candle's model, whose weights are `Clone` (reference-counted), so each request
    /// runs on its own clone, in parallel with others.
    Gemma3(quantized_gemma3::ModelWeights),
}

/// The shared prompt prefix, already run.
enum Prefix {
    Packed(Vec<u32>, KvCache),
    Gemma3(Vec<u32>, Box<quantized_gemma3::ModelWeights>),
}

/// Whether `prompt` continues the shared prefix `tokens` (and has a token of its own to run).
fn extends(prompt: &[u32], tokens: &[u32]) -> bool {
    prompt.len() > tokens.len() && prompt.starts_with(tokens)
}

/// Requests decoded together by default on the CPU: past this, two cores gain little and the
/// caches grow.
pub const DEFAULT_BATCH_CPU: usize = 32;
/// Requests decoded together by default on a GPU.
pub const DEFAULT_BATCH_CUDA: usize = 256;
/// Most bytes of keys and values a pooled pass allocates (f32: 256 slots of 1,000 tokens of
/// SmolLM2-135M take 11 GiB); past it, long requests get fewer slots.
const POOL_BYTES: usize = 16 << 30;

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
    prefix: Mutex<Option<Prefix>>,
    max_batch: usize,
    /// Keys and values in one preallocated pool, decoding requests attending together.
    pooled: bool,
    /// Decoding lanes: threads that each decode their own requests, `max_batch` at a time.
    lanes: usize,
    lane_pools: OnceLock<Vec<rayon::ThreadPool>>,
}

fn gguf_error(path: &Path, e: impl std::fmt::Display) -> LlmError {
    LlmError::Model {
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
    Err(LlmError::Model {
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
        let device = sage_device::open(cuda)?;
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
            a if PackedDecoder::supports(a) => Model::Packed(
                PackedDecoder::from_gguf(&content, &mut reader, &device)
                    .map_err(|e| gguf_error(&file, e))?,
            ),
            "gemma3" => Model::Gemma3(
                quantized_gemma3::ModelWeights::from_gguf(content, &mut reader, &device)
                    .map_err(|e| gguf_error(&file, e))?,
            ),
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
            max_batch: if cuda {
                DEFAULT_BATCH_CUDA
            } else {
                DEFAULT_BATCH_CPU
            },
            pooled: device.is_cuda(),
            lanes: if device.is_cpu() {
                rayon::current_num_threads()
            } else {
                1
            },
            lane_pools: OnceLock::new(),
            device,
            prefix: Mutex::new(None),
        })
    }

    /// Sets how many requests are decoded together (llama and qwen2; at least 1). Answers do
    /// not depend on it on the CPU; it trades memory (each running request holds its key/value
    /// cache) for throughput.
    pub fn with_batch(mut self, max_batch: usize) -> GgufChat {
        self.max_batch = max_batch.max(1);
        self
    }

    /// Chooses how decoding requests attend (llama and qwen2). Pooled: every request's keys
    /// and values live in one preallocated pool and all decoding requests attend in one batched
    /// product, a fixed number of device operations per pass (the default on a GPU, where an
    /// operation per request costs a kernel launch each). Per request (the CPU default): each
    /// attends alone over its own cache, which keeps an answer bit-for-bit independent of the
    /// other requests in its batch.
    pub fn with_pooled_attention(mut self, pooled: bool) -> GgufChat {
        self.pooled = pooled;
        self
    }

    /// Sets how many decoding lanes run at once (llama and qwen2 with per-request attention;
    /// at least 1). A lane is a thread decoding its own requests, `max_batch` at a time, taking
    /// the next request from a queue shared by all lanes. On the CPU the default is one lane per
    /// rayon thread: two single-threaded lanes outrun one lane whose every step is split over
    /// two threads (on two cores, the paraphrases of 64 STS-B texts take 7.4 s instead of
    /// 9.2 s), since a step's small products and per-request attention leave threads waiting on
    /// each other. Answers do not depend on it. Pooled attention always decodes in one lane.
    pub fn with_lanes(mut self, lanes: usize) -> GgufChat {
        self.lanes = lanes.max(1);
        self
    }

    /// Decoding lanes (see [`GgufChat::with_lanes`]).
    pub fn lanes(&self) -> usize {
        if self.pooled {
            1
        } else {
            self.lanes
        }
    }

    /// Requests decoded together.
    pub fn batch(&self) -> usize {
        self.max_batch
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

    fn forward_gemma3(
        &self,
        model: &mut quantized_gemma3::ModelWeights,
        tokens: &[u32],
        pos: usize,
    ) -> Result<Vec<f32>> {
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
        if shared == 0 {
            return Ok(());
        }
        let tokens = a[..shared].to_vec();
        let prefix = match &self.model {
            Model::Packed(decoder) => {
                let mut cache = KvCache::default();
                decoder
                    .forward(&mut [(&tokens[..], &mut cache)])
                    .map_err(|e| gguf_error(&self.file, e))?;
                Prefix::Packed(tokens, cache)
            }
            Model::Gemma3(weights) => {
                let mut model = weights.clone();
                self.forward_gemma3(&mut model, &tokens, 0)?;
                Prefix::Gemma3(tokens, Box::new(model))
            }
        };
        *self.prefix.lock().unwrap_or_else(|p| p.into_inner()) = Some(prefix);
        Ok(())
    }

    fn complete(&self, messages: &[ChatMessage], sampling: &Sampling) -> Result<Completion> {
        let mut one = self.complete_batch(&[(messages, sampling)])?;
        Ok(one.remove(0))
    }

    fn complete_batch(&self, requests: &[(&[ChatMessage], &Sampling)]) -> Result<Vec<Completion>> {
        match &self.model {
            Model::Packed(decoder) => {
                let kept = self.generate_packed(decoder, requests, None)?;
                Ok(kept.into_iter().map(|(_, completion)| completion).collect())
            }
            Model::Gemma3(weights) => self
                .prompts(requests)?
                .par_iter()
                .zip(requests)
                .map(|(prompt, (_, sampling))| {
                    let (mut model, start) = {
                        let prefix = self.prefix.lock().unwrap_or_else(|p| p.into_inner());
                        match &*prefix {
                            Some(Prefix::Gemma3(tokens, model)) if extends(prompt, tokens) => {
                                (model.as_ref().clone(), tokens.len())
                            }
                            _ => (weights.clone(), 0),
                        }
                    };
                    let mut answer = Answer::new(prompt, sampling);
                    let mut logits = self.forward_gemma3(&mut model, &prompt[start..], start)?;
                    loop {
                        match answer.advance(self, &logits)? {
                            Step::Done(completion) => return Ok(completion),
                            Step::Next(token) => {
                                let pos = prompt.len() + answer.generated.len() - 1;
                                logits = self.forward_gemma3(&mut model, &[token], pos)?;
                            }
                        }
                    }
                })
                .collect(),
        }
    }

    fn complete_retrying(
        &self,
        requests: &[(&[ChatMessage], &Sampling)],
        retry: &Retry,
    ) -> Result<Vec<(u32, Completion)>> {
        match &self.model {
            Model::Packed(decoder) => self.generate_packed(decoder, requests, Some(retry)),
            Model::Gemma3(_) => complete_in_rounds(self, requests, retry),
        }
    }

    fn batch_hint(&self) -> usize {
        match self.model {
            // Enough requests per call that the batches stay full while the slowest (and their
            // retries) finish: a call ends with its lanes' batches running down to one answer.
            // 16 batches per lane rather than 4: 512 STS-B texts on 2 cores 43.6 → 41.0 s
            // (retries joining the running batches), the same answers.
            Model::Packed(_) => self.max_batch * self.lanes() * 16,
            Model::Gemma3(_) => rayon::current_num_threads() * 4,
        }
    }
}

/// What one request's next token did.
enum Step {
    /// Run this token and come back with the logits after it.
    Next(u32),
    /// The answer is complete.
    Done(Completion),
}

/// One request's answer as it is sampled: its own random stream, the tokens so far and the
/// rules that end it (an end-of-turn token, a stop string, the token limit).
struct Answer {
    sampling: Sampling,
    rng: ExperimentRng,
    generated: Vec<u32>,
}

impl Answer {
    fn new(prompt: &[u32], sampling: &Sampling) -> Answer {
        // the prompt is mixed into the stream so that texts sharing a seed do not share draws
        let prompt_hash = prompt.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &t| {
            (h ^ u64::from(t)).wrapping_mul(0x0000_0100_0000_01b3)
        });
        Answer {
            sampling: sampling.clone(),
            rng: RunSeed(sampling.seed).rng_for_item("pteb/gguf-sampler", prompt_hash),
            generated: Vec::new(),
        }
    }

    fn decode(&self, chat: &GgufChat) -> Result<String> {
        chat.tokenizer
            .decode(&self.generated, true)
            .map_err(|e| gguf_error(&chat.file, e))
    }

    /// Takes the logits after the last token run and samples the next one.
    fn advance(&mut self, chat: &GgufChat, logits: &[f32]) -> Result<Step> {
        if self.generated.len() >= self.sampling.max_tokens {
            return Ok(Step::Done(Completion {
                text: self.decode(chat)?,
                truncated: true,
            }));
        }
        let next = sample_top_p(
            logits,
            self.sampling.temperature,
            self.sampling.top_p,
            &mut self.rng,
        );
        if chat.stop_ids.contains(&next) {
            return Ok(Step::Done(Completion {
                text: self.decode(chat)?,
                truncated: false,
            }));
        }
        self.generated.push(next);
        if !self.sampling.stop.is_empty() {
            let text = self.decode(chat)?;
            // a stop right after a lead-in ("Here is the paraphrase:") is not the end yet
            let stop_at = self
                .sampling
                .stop
                .iter()
                .filter_map(|s| text.find(s.as_str()))
                .filter(|&at| {
                    let before = text[..at].trim_end();
                    !before.is_empty() && !before.ends_with(':')
                })
                .min();
            if let Some(cut) = stop_at {
                return Ok(Step::Done(Completion {
                    text: text[..cut].to_owned(),
                    truncated: false,
                }));
            }
        }
        if self.generated.len() == self.sampling.max_tokens {
            return Ok(Step::Done(Completion {
                text: self.decode(chat)?,
                truncated: true,
            }));
        }
        Ok(Step::Next(next))
    }
}

/// Where a running request's keys and values are.
enum Held {
    /// Its own cache, grown by concatenation.
    Own(KvCache),
    /// A slot of the pass's [`KvPool`](crate::llama::KvPool), with this many tokens in it.
    Slot(usize, usize),
}

impl Held {
    fn len(&self) -> usize {
        match self {
            Held::Own(cache) => cache.len(),
            Held::Slot(_, len) => *len,
        }
    }
}

/// A request being decoded by the packed decoder.
struct Running {
    request: usize,
    /// Which attempt at the request (from 0; see [`ChatModel::complete_retrying`]).
    attempt: u32,
    held: Held,
    /// Tokens to run in the next pass: the prompt (after the shared prefix), then one token.
    feed: Vec<u32>,
    answer: Answer,
}

impl GgufChat {
    /// The requests' prompts rendered by the chat template and tokenized.
    fn prompts(&self, requests: &[(&[ChatMessage], &Sampling)]) -> Result<Vec<Vec<u32>>> {
        requests
            .iter()
            .map(|(messages, _)| self.tokenize(&self.render(messages)?))
            .collect()
    }

    /// Decodes the requests, `max_batch` at a time in each decoding lane; a finished request's
    /// place goes to the next one at once, and a retry `retry` asks for (the same prompt,
    /// another sampling) joins the queue as soon as it is decided, ahead of the requests not
    /// started yet. Returns each request's kept attempt and its completion.
    fn generate_packed(
        &self,
        decoder: &PackedDecoder,
        requests: &[(&[ChatMessage], &Sampling)],
        retry: Option<&Retry>,
    ) -> Result<Vec<(u32, Completion)>> {
        let prompts = self.prompts(requests)?;
        let samplings: Vec<&Sampling> = requests.iter().map(|(_, s)| *s).collect();
        let prefix = match &*self.prefix.lock().unwrap_or_else(|p| p.into_inner()) {
            Some(Prefix::Packed(tokens, cache)) => Some((tokens.clone(), cache.clone())),
            _ => None,
        };
        if let Some(prompt) = prompts.iter().find(|p| p.len() >= decoder.context_length()) {
            return Err(gguf_error(
                &self.file,
                format!(
                    "a prompt of {} tokens does not fit the model's context of {}",
                    prompt.len(),
                    decoder.context_length()
                ),
            ));
        }
        let lanes = self.lanes().min(prompts.len()).max(1);
        let work = LaneWork {
            decoder,
            prompts: &prompts,
            samplings: &samplings,
            prefix: prefix.as_ref(),
            // a short call is spread evenly rather than filling the first lane
            batch: self.max_batch.min(prompts.len().div_ceil(lanes)),
            next: AtomicUsize::new(0),
            retries: Mutex::new(Vec::new()),
            retry,
            failed: AtomicBool::new(false),
        };
        let finished: Vec<(usize, u32, Completion)> = if lanes == 1 {
            self.decode_lane(&work)?
        } else {
            let pools = self.lane_pools()?;
            let outcomes: Vec<Result<Vec<(usize, u32, Completion)>>> =
                std::thread::scope(|scope| {
                    let running: Vec<_> = pools[..lanes]
                        .iter()
                        .map(|pool| scope.spawn(|| pool.install(|| self.decode_lane(&work))))
                        .collect();
                    running
                        .into_iter()
                        .map(|lane| lane.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                        .collect()
                });
            let mut finished = Vec::with_capacity(prompts.len());
            for outcome in outcomes {
                finished.extend(outcome?);
            }
            finished
        };
        let mut done: Vec<Option<(u32, Completion)>> = vec![None; prompts.len()];
        for (request, attempt, completion) in finished {
            done[request] = Some((attempt, completion));
        }
        Ok(done
            .into_iter()
            .map(|c| c.expect("every request runs until done"))
            .collect())
    }

    /// One single-threaded rayon pool per decoding lane, built on first use.
    fn lane_pools(&self) -> Result<&[rayon::ThreadPool]> {
        if let Some(pools) = self.lane_pools.get() {
            return Ok(pools);
        }
        let pools = (0..self.lanes)
            .map(|lane| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(1)
                    .thread_name(move |_| format!("pteb-lane-{lane}"))
                    .build()
                    .map_err(|e| gguf_error(&self.file, format!("decoding lane {lane}: {e}")))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(self.lane_pools.get_or_init(|| pools))
    }

    /// Takes requests from the shared queue until it is empty (or another lane failed) and
    /// decodes them, up to `max_batch` at a time.
    fn decode_lane(&self, work: &LaneWork) -> Result<Vec<(usize, u32, Completion)>> {
        let outcome = self.decode_lane_inner(work);
        if outcome.is_err() {
            work.failed.store(true, Ordering::Relaxed);
        }
        outcome
    }

    fn decode_lane_inner(&self, work: &LaneWork) -> Result<Vec<(usize, u32, Completion)>> {
        let LaneWork {
            decoder,
            prompts,
            samplings,
            prefix,
            mut batch,
            retry,
            ..
        } = *work;
        let fail = |e: candle_core::Error| gguf_error(&self.file, e);
        let pool = if self.pooled && batch > 0 {
            let longest = prompts
                .iter()
                .zip(samplings)
                .map(|(p, s)| p.len() + s.max_tokens)
                .max()
                .unwrap_or(1)
                .min(decoder.context_length());
            // long requests get fewer slots rather than exhaust the device's memory
            let per_slot = decoder.kv_bytes_per_token() * longest;
            batch = batch.min((POOL_BYTES / per_slot).max(1));
            Some(decoder.pool(batch, longest).map_err(fail)?)
        } else {
            None
        };
        // a request's answer ends where its keys would outgrow their storage
        let limit = pool
            .as_ref()
            .map_or(decoder.context_length(), |p| p.capacity());
        let mut free_slots: Vec<usize> = (0..batch).rev().collect();
        let mut done = Vec::new();
        let mut running: Vec<Running> = Vec::new();
        loop {
            if work.failed.load(Ordering::Relaxed) {
                return Ok(done);
            }
            while running.len() < batch {
                // retries first: they hold back the end of the call
                let retried = work.retries.lock().unwrap_or_else(|p| p.into_inner()).pop();
                let (request, attempt, answer) = match retried {
                    Some((request, attempt, sampling)) => {
                        (request, attempt, Answer::new(&prompts[request], &sampling))
                    }
                    None => {
                        let request = work.next.fetch_add(1, Ordering::Relaxed);
                        if request >= prompts.len() {
                            break;
                        }
                        (
                            request,
                            0,
                            Answer::new(&prompts[request], samplings[request]),
                        )
                    }
                };
                let prompt = &prompts[request];
                let shared = match prefix {
                    Some((tokens, cache)) if extends(prompt, tokens) => Some(cache),
                    _ => None,
                };
                let held = match &pool {
                    Some(pool) => {
                        let slot = free_slots.pop().expect("a slot per running request");
                        if let Some(cache) = shared {
                            pool.load(slot, cache).map_err(fail)?;
                        }
                        Held::Slot(slot, shared.map_or(0, KvCache::len))
                    }
                    None => Held::Own(shared.cloned().unwrap_or_default()),
                };
                running.push(Running {
                    request,
                    attempt,
                    feed: prompt[held.len()..].to_vec(),
                    held,
                    answer,
                });
            }
            if running.is_empty() {
                return Ok(done);
            }
            let logits = match &pool {
                Some(pool) => {
                    let steps: Vec<(&[u32], usize, usize)> = running
                        .iter()
                        .map(|r| match r.held {
                            Held::Slot(slot, len) => (r.feed.as_slice(), slot, len),
                            Held::Own(_) => unreachable!("a pooled pass holds slots only"),
                        })
                        .collect();
                    decoder.forward_pooled(pool, &steps)
                }
                None => {
                    let mut steps: Vec<(&[u32], &mut KvCache)> = running
                        .iter_mut()
                        .map(|r| match &mut r.held {
                            Held::Own(cache) => (r.feed.as_slice(), cache),
                            Held::Slot(..) => unreachable!("an unpooled pass holds caches"),
                        })
                        .collect();
                    decoder.forward(&mut steps)
                }
            }
            .and_then(|l| l.to_vec2::<f32>())
            .map_err(fail)?;
            for r in &mut running {
                if let Held::Slot(_, len) = &mut r.held {
                    *len += r.feed.len();
                }
            }
            // each request samples from its own stream: in parallel, in any order
            let steps: Vec<Step> = running
                .par_iter_mut()
                .zip(&logits)
                .map(|(r, logits)| {
                    let step = r.answer.advance(self, logits)?;
                    // an answer that reaches the end of the context ends there, as if cut at
                    // its token limit
                    Ok(match step {
                        Step::Next(_) if r.held.len() >= limit => Step::Done(Completion {
                            text: r.answer.decode(self)?,
                            truncated: true,
                        }),
                        step => step,
                    })
                })
                .collect::<Result<_>>()?;
            let mut kept = Vec::with_capacity(running.len());
            for (mut r, step) in running.into_iter().zip(steps) {
                match step {
                    Step::Next(token) => {
                        r.feed.clear();
                        r.feed.push(token);
                        kept.push(r);
                    }
                    Step::Done(completion) => {
                        if let Held::Slot(slot, _) = r.held {
                            free_slots.push(slot);
                        }
                        match retry.and_then(|retry| retry(r.request, r.attempt, &completion)) {
                            Some(sampling) => work
                                .retries
                                .lock()
                                .unwrap_or_else(|p| p.into_inner())
                                .push((r.request, r.attempt + 1, sampling)),
                            None => done.push((r.request, r.attempt, completion)),
                        }
                    }
                }
            }
            running = kept;
        }
    }
}

/// The requests of one call, shared by its decoding lanes.
struct LaneWork<'a> {
    decoder: &'a PackedDecoder,
    prompts: &'a [Vec<u32>],
    samplings: &'a [&'a Sampling],
    prefix: Option<&'a (Vec<u32>, KvCache)>,
    /// Most requests a lane decodes together.
    batch: usize,
    /// The next request no lane has taken.
    next: AtomicUsize,
    /// Retries decided and not started: (request, attempt, sampling). A lane finishing a
    /// request keeps going while any wait, so none is left behind.
    retries: Mutex<Vec<(usize, u32, Sampling)>>,
    /// When to ask again ([`ChatModel::complete_retrying`]); never when `None`.
    retry: Option<&'a Retry<'a>>,
    /// Set by a lane that failed: the others stop.
    failed: AtomicBool,
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
    // Only the head of the order is read: select the best few, sort those, and look further
    // only when their mass falls short of top_p. The order is total (probability, then id),
    // so the head is exactly the head of a full sort, and so is the draw.
    let order = |a: &(u32, f64), b: &(u32, f64)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    let mut head = probs.len().min(256);
    let cut = loop {
        if head < probs.len() {
            probs.select_nth_unstable_by(head - 1, order);
        }
        probs[..head].sort_by(order);
        let mut kept = 0.0;
        let found = probs[..head].iter().position(|p| {
            kept += p.1 / total;
            kept >= top_p
        });
        match found {
            Some(i) => break i + 1,
            None if head == probs.len() => break head,
            None => head = (head * 8).min(probs.len()),
        }
    };
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
mod tests;
