//! Retrieval under noise: every distinct query text of every condition ranked in one pass over
//! the corpus.

use std::collections::HashMap;

use rayon::prelude::*;
use sage_core::{normalize_rows, Role, Timings};
use sage_measures::ndcg_at_k;
use sage_retrieval::{Doc, RankingSet, TopK};

use crate::conditions::{Noisy, Tally};
use crate::{Condition, DatasetReport, Measured, NoiseError, Options, Result, Scorer, Statistic};

/// Documents an embedding model embeds per chunk: small enough that a chunk's scores against
/// every query text stay a few hundred MB, large enough to batch well.
const EMBEDDING_CHUNK: usize = 256;

/// Distinct texts, numbered in order of first appearance: each is ranked once, however many
/// conditions produce it.
#[derive(Default)]
pub(crate) struct Distinct {
    index: HashMap<String, usize>,
    pub(crate) texts: Vec<String>,
}

impl Distinct {
    /// The clean texts and every condition's noisy texts, each numbered once; the ids come back
    /// per condition with the clean texts first, the order the measured values take.
    pub(crate) fn of(clean: &[&str], noisy: &[Noisy]) -> (Self, Vec<Vec<usize>>) {
        let mut distinct = Self::default();
        let mut ids = vec![clean.iter().map(|t| distinct.id(t)).collect()];
        ids.extend(
            noisy
                .iter()
                .map(|n| n.texts.iter().map(|t| distinct.id(t)).collect()),
        );
        (distinct, ids)
    }

    fn id(&mut self, text: &str) -> usize {
        if let Some(&i) = self.index.get(text) {
            return i;
        }
        self.texts.push(text.to_owned());
        self.index.insert(text.to_owned(), self.texts.len() - 1);
        self.texts.len() - 1
    }
}

/// The `k` best of `docs` for every text of `texts` (in `texts` order), the texts embedded as
/// `roles.0` and the documents as `roles.1`; a metric scores at most `pair_budget` pairs at once.
pub(crate) fn nearest(
    scorer: Scorer,
    texts: &[String],
    docs: &[Doc],
    k: usize,
    roles: (Role, Role),
    pair_budget: usize,
) -> Result<Vec<TopK>> {
    let mut tops = vec![TopK::new(k); texts.len()];
    let queries: Vec<&str> = texts.iter().map(String::as_str).collect();
    match scorer.embedder {
        Some(embedder) => {
            // cosine as a dot product of unit rows: each side normalised once
            let mut q = embedder.embed_as(&queries, roles.0)?;
            normalize_rows(&mut q);
            for block in docs.chunks(EMBEDDING_CHUNK) {
                let texts: Vec<&str> = block.iter().map(|d| d.text.as_str()).collect();
                let mut d = embedder.embed_as(&texts, roles.1)?;
                normalize_rows(&mut d);
                let scores = q.dot(&d.t());
                tops.par_iter_mut().enumerate().for_each(|(i, top)| {
                    for (doc, &s) in block.iter().zip(scores.row(i)) {
                        top.offer(f64::from(s), &doc.id);
                    }
                });
            }
        }
        None => {
            let chunk = (pair_budget / queries.len().max(1)).max(1);
            for block in docs.chunks(chunk) {
                let pairs: Vec<(&str, &str)> = block
                    .iter()
                    .flat_map(|d| queries.iter().map(move |q| (d.text.as_str(), *q)))
                    .collect();
                let scores = scorer.similarity.score_pairs_for_ranking(&pairs)?;
                for (d, doc) in block.iter().enumerate() {
                    let row = &scores[d * queries.len()..(d + 1) * queries.len()];
                    for (top, &s) in tops.iter_mut().zip(row) {
                        top.offer(f64::from(s), &doc.id);
                    }
                }
            }
        }
    }
    Ok(tops)
}

/// Top-10 of every query text over `docs`, as retrieval ranks them.
fn rank(scorer: Scorer, texts: &[String], docs: &[Doc], options: &Options) -> Result<Vec<TopK>> {
    nearest(
        scorer,
        texts,
        docs,
        10,
        (Role::Query, Role::Document),
        options.pair_budget,
    )
}

fn ndcg(tops: &[&TopK], set: &RankingSet) -> Result<Vec<f64>> {
    Ok(tops
        .iter()
        .zip(&set.queries)
        .map(|(top, q)| ndcg_at_k(&top.ranked(), &q.qrels, 10))
        .collect::<sage_core::Result<_>>()?)
}

/// The retrieval dataset's per-query NDCG@10, clean and under every condition.
pub(crate) fn retrieval(
    scorer: Scorer,
    set: &RankingSet,
    conditions: &[Condition],
    options: &Options,
    timings: &mut Timings,
) -> Result<Measured> {
    let dataset = set.dataset.clone();
    let stream = format!("noise/{}", set.stream_key);
    let clean: Vec<&str> = set.queries.iter().map(|q| q.text.as_str()).collect();
    let keys: Vec<u64> = set.queries.iter().map(|q| q.position as u64).collect();
    let mut noisy = Vec::new();
    for condition in conditions {
        noisy.push(condition.apply_keyed(&stream, &clean, &keys, options.seed)?);
    }
    let tallies: Vec<Tally> = noisy.iter().map(|n| n.tally.clone()).collect();
    let mut values = Vec::with_capacity(conditions.len() + 1);
    if options.noisy_documents {
        let tops = timings.time(format!("rank/{dataset}/clean"), || {
            rank(
                scorer,
                &clean.iter().map(|q| (*q).to_owned()).collect::<Vec<_>>(),
                &set.documents,
                options,
            )
        })?;
        values.push(ndcg(&tops.iter().collect::<Vec<_>>(), set)?);
        let texts: Vec<&str> = set.documents.iter().map(|d| d.text.as_str()).collect();
        let positions: Vec<u64> = set.documents.iter().map(|d| d.position as u64).collect();
        for (condition, n) in conditions.iter().zip(&noisy) {
            let documents = condition.apply_keyed(
                &format!("{stream}/documents"),
                &texts,
                &positions,
                options.seed,
            )?;
            let docs: Vec<Doc> = set
                .documents
                .iter()
                .zip(documents.texts)
                .map(|(d, text)| Doc { text, ..d.clone() })
                .collect();
            let tops = timings.time(format!("rank/{dataset}/{}", condition.id()), || {
                rank(scorer, &n.texts, &docs, options)
            })?;
            values.push(ndcg(&tops.iter().collect::<Vec<_>>(), set)?);
        }
    } else {
        // one pass: the clean queries and every changed noisy query, each text once
        let (texts, ids) = Distinct::of(&clean, &noisy);
        let tops = timings.time(format!("rank/{dataset}/all conditions"), || {
            rank(scorer, &texts.texts, &set.documents, options)
        })?;
        for ids in &ids {
            values.push(ndcg(
                &ids.iter().map(|&i| &tops[i]).collect::<Vec<_>>(),
                set,
            )?);
        }
    }
    if values[0].is_empty() {
        return Err(NoiseError::Insufficient(format!(
            "{dataset}: no query to rank"
        )));
    }
    Ok(Measured {
        report: DatasetReport {
            corpus_total: Some(set.corpus_total),
            corpus_used: Some(set.documents.len()),
            corpus_checksum: Some(set.corpus_checksum.clone()),
            corpus_files: set.files.clone(),
            ..DatasetReport::empty(
                dataset,
                crate::Task::Retrieval,
                if options.noisy_documents {
                    "queries and documents"
                } else {
                    "queries"
                },
                set.queries.len(),
            )
        },
        statistic: Statistic::Mean,
        values,
        tallies,
    })
}
