//! Paraphrasing a dataset's texts with any [`ChatModel`]: the prompt, the length rule with its
//! retries and fallback, the cache, and the LLM judge.
//!
//! Seeds: run r of a PTEB evaluation paraphrases with seed `seed + r` (1337, 1338, … by
//! default, as the paper). The first attempt at a text sends exactly that seed (what an Ollama
//! or vLLM user of the paper's setup sends); retry k sends a seed derived from it with
//! `RunSeed(seed).rng_for_item("pteb/retry", k)`, since the same seed would give the same answer
//! again. The local backend mixes the prompt into its sampler stream, so texts do not share
//! random draws. Every text's answer is a function of (paraphraser, seed, text) alone: the same
//! on any number of threads, in any order, whatever other texts share its batch (the shared
//! prompt prefix comes from fixed probes, not from the data).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use rand::RngCore;
use sage_core::RunSeed;
use sage_measures::{mean, spearman};
use serde::{Deserialize, Serialize};

use crate::cache::{request_key, ParaphraseCache};
use crate::prompt::{
    clean_answer, echoes_instruction, judge_messages, messages_with, parse_rating, PromptStyle,
};
use crate::{PtebError, Result};
use sage_llm::{ChatMessage, ChatModel, Completion, Sampling};

/// Two inputs that share no first character: the prompt prefix shared by every request is
/// what their two prompts share. It comes from the prompt alone, never from the data, so a
/// text's answer does not depend on which texts were asked for with it.
const PROBES: [&str; 2] = ["x", "y"];

/// How paraphrases are asked for and accepted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParaphraseSettings {
    /// Which prompt.
    pub prompt: PromptStyle,
    /// Sampling temperature (the paper: 0.8).
    pub temperature: f64,
    /// Nucleus mass (the paper: 0.9).
    pub top_p: f64,
    /// Attempts per text before falling back to the original (the authors' code: 5).
    pub max_attempts: u32,
    /// An answer longer than this many times the input (in characters) is rejected (5).
    pub max_length_ratio: f64,
}

impl Default for ParaphraseSettings {
    fn default() -> Self {
        ParaphraseSettings {
            prompt: PromptStyle::English,
            temperature: 0.8,
            top_p: 0.9,
            max_attempts: 5,
            max_length_ratio: 5.0,
        }
    }
}

/// Everything that determines a paraphrase besides seed and text; recorded in reports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParaphraserIdentity {
    /// The backend and model ([`ChatModel::identity`]).
    pub backend: String,
    /// The settings.
    #[serde(flatten)]
    pub settings: ParaphraseSettings,
    /// The instruction text of the prompt.
    pub instruction: String,
}

/// One text's outcome.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Paraphrase {
    /// The paraphrase, or the original text after a fallback.
    pub text: String,
    /// Requests made.
    pub attempts: u32,
    /// Every attempt was rejected and the original text is used.
    pub fallback: bool,
}

/// Counts of one [`Paraphraser::paraphrase_all`] call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParaphraseStats {
    /// Distinct texts.
    pub unique_texts: u64,
    /// Texts found in the cache.
    pub cache_hits: u64,
    /// Texts generated now.
    pub generated: u64,
    /// Requests beyond the first, over all texts (cached ones included).
    pub retries: u64,
    /// Texts left as they were because every attempt was rejected (cached ones included).
    pub fallbacks: u64,
}

/// A paraphraser: a chat model, the settings and (optionally) the cache.
pub struct Paraphraser {
    // shared: the prompt-sensitivity analysis runs one paraphraser per wording on one model
    model: Arc<dyn ChatModel>,
    settings: ParaphraseSettings,
    cache: Option<Arc<ParaphraseCache>>,
}

impl Paraphraser {
    /// A paraphraser over `model`.
    pub fn new(
        model: Box<dyn ChatModel>,
        settings: ParaphraseSettings,
        cache: Option<Arc<ParaphraseCache>>,
    ) -> Paraphraser {
        Paraphraser {
            model: Arc::from(model),
            settings,
            cache,
        }
    }

    /// This paraphraser (its model, settings and cache) asking with another prompt.
    pub fn with_prompt(&self, prompt: PromptStyle) -> Paraphraser {
        Paraphraser {
            model: Arc::clone(&self.model),
            settings: ParaphraseSettings {
                prompt,
                ..self.settings.clone()
            },
            cache: self.cache.clone(),
        }
    }

    /// What this paraphraser is.
    pub fn identity(&self) -> ParaphraserIdentity {
        ParaphraserIdentity {
            backend: self.model.identity(),
            settings: self.settings.clone(),
            instruction: self.settings.prompt.instruction().to_owned(),
        }
    }

    /// The chat model.
    pub fn model(&self) -> &dyn ChatModel {
        self.model.as_ref()
    }

    /// The cache key: an English text's (or one of no stated language) is what it was before
    /// rows had languages; another language's adds the instruction it is asked with.
    fn key(&self, seed: u64, text: &str, instruction: &str) -> [u8; 32] {
        let identity = serde_json::to_string(&self.identity()).unwrap_or_default();
        let seed = seed.to_string();
        if instruction == self.settings.prompt.instruction() {
            request_key(&["paraphrase-v3", &identity, &seed, text])
        } else {
            request_key(&["paraphrase-v3", &identity, &seed, text, instruction])
        }
    }

    /// Paraphrases one text with `seed`, without the cache.
    pub fn paraphrase_one(&self, text: &str, seed: u64) -> Result<Paraphrase> {
        let instruction = self.settings.prompt.instruction().to_owned();
        let mut outcomes =
            self.paraphrase_group(&[Attempts::new(self, text, seed, &instruction)?])?;
        Ok(outcomes.pop().expect("one outcome per text"))
    }

    /// The outcome of each text's attempts: its first accepted answer, or the original once
    /// every attempt was rejected. A rejected answer's retry is asked for as soon as it is
    /// rejected ([`ChatModel::complete_retrying`]).
    fn paraphrase_group(&self, attempts: &[Attempts]) -> Result<Vec<Paraphrase>> {
        let max_attempts = self.settings.max_attempts;
        if max_attempts == 0 {
            return Ok(attempts.iter().map(Attempts::fallback).collect());
        }
        let first: Vec<Sampling> = attempts.iter().map(|a| a.sampling(0)).collect();
        let requests: Vec<(&[ChatMessage], &Sampling)> = attempts
            .iter()
            .zip(&first)
            .map(|(a, s)| (a.messages.as_slice(), s))
            .collect();
        let retry = |i: usize, k: u32, completion: &Completion| {
            let attempt = &attempts[i];
            (attempt.accept(completion).is_none() && k + 1 < max_attempts)
                .then(|| attempt.sampling(k + 1))
        };
        let kept = self.model.complete_retrying(&requests, &retry)?;
        Ok(attempts
            .iter()
            .zip(kept)
            .map(
                |(attempt, (k, completion))| match attempt.accept(&completion) {
                    Some(answer) => attempt.success(answer, k),
                    // always too long (or cut at max_tokens): every attempt, then the original
                    None => attempt.fallback(),
                },
            )
            .collect())
    }

    /// Paraphrases every distinct text of `texts` with `seed` (cache first); returns one
    /// paraphrase per input text, in input order. Texts go to the model
    /// [`ChatModel::batch_hint`] at a time, a rejected answer's retry asked for as soon as it
    /// is rejected ([`ChatModel::complete_retrying`]), and each group is cached before the
    /// next: a killed run loses one group at most. `progress` is called with the number of
    /// distinct texts done after each.
    pub fn paraphrase_all(
        &self,
        texts: &[&str],
        seed: u64,
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<(Vec<Paraphrase>, ParaphraseStats)> {
        self.paraphrase_all_in(texts, None, seed, progress)
    }

    /// [`Self::paraphrase_all`] for texts in `language` (MTEB's `ara-Arab`, or `en`): the
    /// prompt names it ([`PromptStyle::instruction_in`]); an error when it cannot.
    pub fn paraphrase_all_in(
        &self,
        texts: &[&str],
        language: Option<&str>,
        seed: u64,
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<(Vec<Paraphrase>, ParaphraseStats)> {
        let instruction = self
            .settings
            .prompt
            .instruction_in(language)
            .map_err(PtebError::Task)?;
        let unique: Vec<&str> = texts
            .iter()
            .copied()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let total = unique.len() as u64;
        let mut done = 0u64;
        let mut outcomes: HashMap<&str, Paraphrase> = HashMap::with_capacity(unique.len());
        let mut missing = Vec::new();
        for &text in &unique {
            let cached = match &self.cache {
                Some(c) => c.get::<Paraphrase>(&self.key(seed, text, &instruction))?,
                None => None,
            };
            match cached {
                Some(p) => {
                    outcomes.insert(text, p);
                    done += 1;
                    progress(done, total);
                }
                None => missing.push(text),
            }
        }
        let cache_hits = outcomes.len() as u64;
        if !missing.is_empty() {
            self.model.prepare([
                &messages_with(&instruction, PROBES[0]),
                &messages_with(&instruction, PROBES[1]),
            ])?;
        }
        for group in missing.chunks(self.model.batch_hint().max(1)) {
            let attempts: Vec<Attempts> = group
                .iter()
                .map(|text| Attempts::new(self, text, seed, &instruction))
                .collect::<Result<_>>()?;
            for (&text, outcome) in group.iter().zip(self.paraphrase_group(&attempts)?) {
                if let Some(c) = &self.cache {
                    c.put(&self.key(seed, text, &instruction), &outcome)?;
                }
                outcomes.insert(text, outcome);
                done += 1;
                progress(done, total);
            }
        }
        let stats = ParaphraseStats {
            unique_texts: total,
            cache_hits,
            generated: total - cache_hits,
            retries: outcomes
                .values()
                .map(|p| u64::from(p.attempts.saturating_sub(1)))
                .sum(),
            fallbacks: outcomes.values().filter(|p| p.fallback).count() as u64,
        };
        Ok((texts.iter().map(|t| outcomes[t].clone()).collect(), stats))
    }
}

/// One text's requests: the prompt, the per-attempt seeds and the rule that accepts an answer.
struct Attempts<'a> {
    settings: &'a ParaphraseSettings,
    text: &'a str,
    instruction: &'a str,
    seed: u64,
    messages: Vec<ChatMessage>,
    max_tokens: usize,
    stop: Vec<String>,
}

impl<'a> Attempts<'a> {
    fn new(
        paraphraser: &'a Paraphraser,
        text: &'a str,
        seed: u64,
        instruction: &'a str,
    ) -> Result<Attempts<'a>> {
        let s = &paraphraser.settings;
        let input_tokens = paraphraser.model.count_tokens(text)?.max(1) as f64;
        Ok(Attempts {
            settings: s,
            text,
            instruction,
            seed,
            messages: messages_with(instruction, text),
            // An answer that needs more tokens than this is over the length limit anyway.
            max_tokens: (s.max_length_ratio * input_tokens).ceil() as usize + 16,
            // A one-paragraph input gets a one-paragraph answer: what follows a blank line is
            // the notes and alternatives the prompt asked not to write.
            stop: if text.contains("\n\n") {
                vec![]
            } else {
                vec!["\n\n".to_owned()]
            },
        })
    }

    /// The request of attempt `k` (from 0).
    fn sampling(&self, k: u32) -> Sampling {
        let seed = if k == 0 {
            self.seed
        } else {
            RunSeed(self.seed)
                .rng_for_item("pteb/retry", u64::from(k))
                .next_u64()
        };
        Sampling {
            temperature: self.settings.temperature,
            top_p: self.settings.top_p,
            max_tokens: self.max_tokens,
            seed,
            stop: self.stop.clone(),
        }
    }

    /// The cleaned answer if it is an acceptable paraphrase.
    fn accept(&self, completion: &Completion) -> Option<String> {
        let s = self.settings;
        let answer = clean_answer(&completion.text, self.text);
        let chars = answer.chars().count() as f64;
        let input_chars = self.text.chars().count().max(1) as f64;
        // an answer cut at the token limit is complete if its first paragraph ended
        let whole = !completion.truncated
            || (self.stop.len() == 1
                && crate::prompt::strip_reasoning(&completion.text)
                    .trim()
                    .contains("\n\n"));
        (whole
            && chars > 0.0
            && chars <= s.max_length_ratio * input_chars
            && !echoes_instruction(&answer, self.text, self.instruction))
        .then_some(answer)
    }

    fn success(&self, answer: String, k: u32) -> Paraphrase {
        Paraphrase {
            text: answer,
            attempts: k + 1,
            fallback: false,
        }
    }

    fn fallback(&self) -> Paraphrase {
        Paraphrase {
            text: self.text.to_owned(),
            attempts: self.settings.max_attempts,
            fallback: true,
        }
    }
}

/// An LLM judge of semantic similarity (0–5), greedy decoding.
pub struct Judge {
    model: Box<dyn ChatModel>,
    cache: Option<Arc<ParaphraseCache>>,
    max_tokens: usize,
}

impl Judge {
    /// A judge over `model`; answers are cut at `max_tokens` (raise it for reasoning models).
    pub fn new(
        model: Box<dyn ChatModel>,
        cache: Option<Arc<ParaphraseCache>>,
        max_tokens: usize,
    ) -> Judge {
        Judge {
            model,
            cache,
            max_tokens,
        }
    }

    /// The judge's model identity.
    pub fn identity(&self) -> String {
        self.model.identity()
    }

    /// The mean rating of `pairs` (`None` when no answer held a rating) and how many answers
    /// held none.
    pub(crate) fn mean_rating(
        &self,
        pairs: &[(&str, &str)],
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<(Option<f64>, usize)> {
        let ratings = self.rate_all(pairs, progress)?;
        let rated: Vec<f64> = ratings.iter().flatten().copied().collect();
        Ok((mean(&rated).ok(), ratings.len() - rated.len()))
    }

    /// The paper's check of a judge: the Spearman of its ratings of STS pairs with their gold
    /// scores (`None` with fewer than 3 ratings), and how many answers held no rating.
    pub(crate) fn gold_agreement(
        &self,
        rows: &[(String, String, f64)],
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<(Option<f64>, usize)> {
        let pairs: Vec<(&str, &str)> = rows
            .iter()
            .map(|(a, b, _)| (a.as_str(), b.as_str()))
            .collect();
        let ratings = self.rate_all(&pairs, progress)?;
        let (x, y): (Vec<f64>, Vec<f64>) = ratings
            .iter()
            .zip(rows)
            .filter_map(|(rating, row)| rating.map(|r| (r, row.2)))
            .unzip();
        let rho = if x.len() >= 3 {
            spearman(&x, &y).ok()
        } else {
            None
        };
        Ok((rho, ratings.len() - x.len()))
    }

    /// Ratings of each pair, in order; `None` where the answer held no number in 0–5.
    /// `progress` is called with the number of pairs rated after each.
    pub fn rate_all(
        &self,
        pairs: &[(&str, &str)],
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<Vec<Option<f64>>> {
        self.model.prepare([
            &judge_messages(PROBES[0], PROBES[0]),
            &judge_messages(PROBES[1], PROBES[1]),
        ])?;
        let identity = self.model.identity();
        let total = pairs.len() as u64;
        let key = |(a, b): &(&str, &str)| {
            request_key(&["judge-v3", &identity, &self.max_tokens.to_string(), a, b])
        };
        let greedy = Sampling {
            temperature: 0.0,
            top_p: 1.0,
            max_tokens: self.max_tokens,
            seed: 0,
            stop: vec![],
        };
        // the answer is cached, not the rating: a change in how answers are read applies to
        // cached answers too
        let mut answers: Vec<Option<String>> = match &self.cache {
            Some(c) => pairs
                .iter()
                .map(|p| c.get::<String>(&key(p)))
                .collect::<Result<_>>()?,
            None => vec![None; pairs.len()],
        };
        let mut done = answers.iter().filter(|a| a.is_some()).count() as u64;
        if done > 0 {
            progress(done, total);
        }
        let missing: Vec<usize> = (0..pairs.len()).filter(|&i| answers[i].is_none()).collect();
        for group in missing.chunks(self.model.batch_hint().max(1)) {
            let messages: Vec<Vec<ChatMessage>> = group
                .iter()
                .map(|&i| judge_messages(pairs[i].0, pairs[i].1))
                .collect();
            let requests: Vec<(&[ChatMessage], &Sampling)> =
                messages.iter().map(|m| (m.as_slice(), &greedy)).collect();
            let completions = self.model.complete_batch(&requests)?;
            for (&i, completion) in group.iter().zip(completions) {
                if let Some(c) = &self.cache {
                    c.put(&key(&pairs[i]), &completion.text)?;
                }
                answers[i] = Some(completion.text);
                done += 1;
                progress(done, total);
            }
        }
        Ok(answers
            .iter()
            .map(|a| parse_rating(a.as_deref().unwrap_or_default()))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    use crate::testing::Scripted;

    fn paraphraser(answer: fn(&str, u64) -> (String, bool)) -> Paraphraser {
        Paraphraser::new(
            Box::new(Scripted {
                answer,
                calls: Mutex::new(Vec::new()),
            }),
            ParaphraseSettings::default(),
            None,
        )
    }

    #[test]
    fn first_attempt_sends_the_run_seed() {
        let p = paraphraser(|t, _| {
            (
                format!("Reworded: {t}").replace("Reworded: ", "So, "),
                false,
            )
        });
        let out = p.paraphrase_one("cats sleep", 1338).unwrap();
        assert_eq!(
            out,
            Paraphrase {
                text: "So, cats sleep".into(),
                attempts: 1,
                fallback: false
            }
        );
    }

    #[test]
    fn long_answers_are_retried_then_fall_back() {
        // too long on the run seed, fine on a retry seed
        let p = paraphraser(|t, seed| {
            if seed == 1337 {
                (t.repeat(6), false)
            } else {
                ("short one".into(), false)
            }
        });
        let out = p.paraphrase_one("a b c", 1337).unwrap();
        assert_eq!(
            (out.text.as_str(), out.attempts, out.fallback),
            ("short one", 2, false)
        );
        // always too long (or cut at max_tokens): five attempts, then the original
        let p = paraphraser(|t, _| (t.repeat(6), false));
        let out = p.paraphrase_one("a b c", 1337).unwrap();
        assert_eq!(
            out,
            Paraphrase {
                text: "a b c".into(),
                attempts: 5,
                fallback: true
            }
        );
        let p = paraphraser(|_, _| ("x".into(), true));
        assert!(p.paraphrase_one("a b c", 1337).unwrap().fallback);
        // the prompt's own words are no paraphrase either
        let p = paraphraser(|_, seed| {
            if seed == 1337 {
                (
                    "Same facts, same claims, nothing added and nothing left out.".into(),
                    false,
                )
            } else {
                ("rap lyrics, nothing more".into(), false)
            }
        });
        let out = p.paraphrase_one("just rap lyrics", 1337).unwrap();
        assert_eq!(
            (out.text.as_str(), out.attempts),
            ("rap lyrics, nothing more", 2)
        );
    }

    #[test]
    fn duplicates_are_paraphrased_once_and_order_is_kept() {
        let p = paraphraser(|t, _| (t.to_uppercase(), false));
        let (out, stats) = p
            .paraphrase_all(&["b b", "a a", "b b"], 7, &|_, _| {})
            .unwrap();
        let texts: Vec<&str> = out.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(texts, ["B B", "A A", "B B"]);
        assert_eq!(
            (stats.unique_texts, stats.generated, stats.fallbacks),
            (2, 2, 0)
        );
    }

    #[test]
    fn the_cache_answers_a_rerun() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Arc::new(ParaphraseCache::open(dir.path().join("p.redb")).unwrap());
        let make = |cache: Arc<ParaphraseCache>| {
            Paraphraser::new(
                Box::new(Scripted {
                    answer: |t, seed| (format!("{t} ({seed})"), false),
                    calls: Mutex::new(Vec::new()),
                }),
                ParaphraseSettings::default(),
                Some(cache),
            )
        };
        let first = make(cache.clone());
        let (a, s1) = first
            .paraphrase_all(&["one", "two"], 5, &|_, _| {})
            .unwrap();
        assert_eq!((s1.generated, s1.cache_hits), (2, 0));
        let second = make(cache.clone());
        let (b, s2) = second
            .paraphrase_all(&["two", "one", "three"], 5, &|_, _| {})
            .unwrap();
        assert_eq!((s2.generated, s2.cache_hits), (1, 2));
        assert_eq!(b[1], a[0]);
        // another seed is another request
        let (_, s3) = second.paraphrase_all(&["one"], 6, &|_, _| {}).unwrap();
        assert_eq!(s3.generated, 1);
    }

    #[test]
    fn the_judge_parses_ratings_and_caches_them() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Arc::new(ParaphraseCache::open(dir.path().join("p.redb")).unwrap());
        let judge = |answer: fn(&str, u64) -> (String, bool)| {
            Judge::new(
                Box::new(Scripted {
                    answer,
                    calls: Mutex::new(Vec::new()),
                }),
                Some(cache.clone()),
                16,
            )
        };
        let rated = judge(|content, _| {
            if content.contains("Sentence 2: same") {
                ("5".into(), false)
            } else {
                ("<think>maybe 4, maybe 1</think>\n2".into(), false)
            }
        })
        .rate_all(&[("a", "same"), ("a", "other")], &|_, _| {})
        .unwrap();
        assert_eq!(rated, [Some(5.0), Some(2.0)]);
        // a judge that answers nonsense now still gets the cached ratings for those pairs
        let again = judge(|_, _| ("no idea".into(), false))
            .rate_all(&[("a", "same"), ("b", "new")], &|_, _| {})
            .unwrap();
        assert_eq!(again, [Some(5.0), None]);
    }
}
