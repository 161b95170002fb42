//! Test doubles shared by this crate's unit tests: an encoder and a chat model whose answers a
//! test can predict.

use std::sync::Mutex;

use ndarray::Array2;
use sage_core::{Embedder, EmbedderIdentity};

use sage_core::{RunSeed, Timings};
use sage_data::RowSelection;
use sage_measures::{mean, mean_std};

use crate::evaluate::pooled;
use crate::paraphrase::ParaphraseSettings;
use crate::quality::{DatasetQuality, QualityFigures, Verdict};
use crate::{DatasetResult, Options, ParaphraserIdentity, PtebReport, RunResult, TaskKind};
use sage_llm::{ChatMessage, ChatModel, Completion, Sampling};

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
    fn count_tokens(&self, text: &str) -> sage_llm::Result<usize> {
        Ok(text.split_whitespace().count())
    }
    fn complete(&self, m: &[ChatMessage], s: &Sampling) -> sage_llm::Result<Completion> {
        self.calls.lock().unwrap().push(s.seed);
        let text = m[1].content.rsplit("Text: ").next().unwrap();
        let (text, truncated) = (self.answer)(text, s.seed);
        Ok(Completion { text, truncated })
    }
}

/// Quality figures that pass the default gate.
pub(crate) fn figures() -> QualityFigures {
    QualityFigures {
        reference_cosine: 0.9,
        share_below: 0.0,
        edit_distance: 0.5,
        fallback_share: 0.05,
    }
}

/// A PTEB report of STS datasets `(name, original, three paraphrased scores)`; datasets whose
/// name starts with `unqualified` fail the quality gate.
pub(crate) fn report(model: &str, scores: &[(&str, f64, [f64; 3])]) -> PtebReport {
    let datasets: Vec<DatasetResult> = scores
        .iter()
        .map(|(name, original, runs)| DatasetResult {
            dataset: (*name).into(),
            split: "test".into(),
            subset: None,
            languages: Vec::new(),
            task: TaskKind::Sts,
            metric: "cosine_spearman".into(),
            rows: RowSelection {
                dataset: (*name).into(),
                split: "test".into(),
                total_rows: 10,
                used_rows: 10,
                max_rows: None,
                seed: 1337,
                empty_text_rows: 0,
                checksum: "0".into(),
                split_checksum: "0".into(),
                files: Vec::new(),
            },
            original: *original,
            runs: runs
                .iter()
                .enumerate()
                .map(|(r, &score)| RunResult {
                    seed: 1337 + r as u64,
                    score,
                    quality: figures(),
                    texts: 20,
                    fallbacks: 1,
                    retries: 0,
                    cache_hits: 0,
                })
                .collect(),
            paraphrased: mean_std(runs, 1).unwrap(),
            delta: mean(runs).unwrap() - original,
            fallbacks: 3,
            examples: vec![],
            quality: DatasetQuality {
                reference_encoder: "words".into(),
                figures: figures(),
                judge: None,
                verdict: Verdict {
                    qualified: !name.starts_with("unqualified"),
                    ..Verdict::default()
                },
            },
        })
        .collect();
    let options = Options::default();
    let pooled = pooled(&datasets, &options, RunSeed(1337)).unwrap();
    PtebReport {
        suite: "pteb".into(),
        encoder: EmbedderIdentity {
            model_id: model.into(),
            revision: None,
            pooling: "mean".into(),
            normalize: true,
            max_length: 256,
        },
        paraphraser: ParaphraserIdentity {
            backend: "test".into(),
            settings: ParaphraseSettings::default(),
            instruction: "x".into(),
        },
        options,
        seeds: vec![1337, 1338, 1339],
        fallbacks: 3 * datasets.len() as u64,
        unqualified: datasets
            .iter()
            .filter(|d| !d.quality.verdict.qualified)
            .map(|d| d.label())
            .collect(),
        datasets,
        pooled,
        skipped: Vec::new(),
        by_task: Vec::new(),
        prompt_ablation: None,
        timings: Timings::default(),
    }
}
