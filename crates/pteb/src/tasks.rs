//! The MTEB task definitions PTEB re-runs, each scored the same way on original and
//! paraphrased text: the only difference between the two is the `rewrite` map applied to the
//! texts the task paraphrases.

use std::collections::{BTreeMap, HashMap};

use linfa::prelude::*;
use linfa_clustering::KMeans;
use linfa_logistic::MultiLogisticRegression;
use ndarray::{Array1, Array2};
use sage_core::{cosine, Embedder, Role, RunSeed};
use sage_measures::{
    average_precision_score, ndcg_at_k, spearman, trec_order, v_measure, RankedDoc,
};
use serde::{Deserialize, Serialize};

use crate::{PtebError, Result};

/// The seven task types of the paper.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskKind {
    /// Spearman of cosine vs gold similarity; both sentences paraphrased.
    Sts,
    /// Logistic-regression accuracy on embeddings; test texts paraphrased.
    Classification,
    /// k-means (k = number of labels) V-measure; every text paraphrased.
    Clustering,
    /// Average precision of cosine for the positive label; both sentences paraphrased.
    PairClassification,
    /// MAP of candidates ranked by cosine to the query; query and candidates paraphrased.
    Reranking,
    /// nDCG@10 of the corpus ranked by cosine; queries only paraphrased.
    Retrieval,
    /// Mean over documents of the Spearman between human relevance and the best cosine of a
    /// machine summary to the human references; machine summaries paraphrased.
    Summarization,
}

impl TaskKind {
    /// Name in reports.
    pub fn name(self) -> &'static str {
        match self {
            TaskKind::Sts => "sts",
            TaskKind::Classification => "classification",
            TaskKind::Clustering => "clustering",
            TaskKind::PairClassification => "pair-classification",
            TaskKind::Reranking => "reranking",
            TaskKind::Retrieval => "retrieval",
            TaskKind::Summarization => "summarization",
        }
    }

    /// The main score's name, as MTEB reports it.
    pub fn metric(self) -> &'static str {
        match self {
            TaskKind::Sts | TaskKind::Summarization => "cosine_spearman",
            TaskKind::Classification => "accuracy",
            TaskKind::Clustering => "v_measure",
            TaskKind::PairClassification => "cosine_ap",
            TaskKind::Reranking => "map",
            TaskKind::Retrieval => "ndcg_at_10",
        }
    }
}

/// The retrieval datasets MTEB's task metadata scores with `ignore_identical_ids` (a query's
/// own id left out of its ranking: ArguAna's queries are arguments of its corpus): ArguAna,
/// FiQA2018, QuoraRetrieval, FEVER and MSMARCO (mteb/tasks/retrieval/eng/*).
pub(crate) const IGNORE_IDENTICAL_IDS: &[&str] = &["arguana", "fiqa", "quora", "fever", "msmarco"];

/// One reranking sample (MTEB's reranking format).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RerankingSample {
    /// The query.
    pub query: String,
    /// Relevant candidates.
    pub positive: Vec<String>,
    /// Irrelevant candidates.
    pub negative: Vec<String>,
}

/// One SummEval document as the summarisation task sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SummarizationSample {
    /// The human reference summaries.
    pub references: Vec<String>,
    /// The machine summaries.
    pub summaries: Vec<String>,
    /// Human relevance of each machine summary.
    pub relevance: Vec<f64>,
}

/// A task's data, loaded and sampled.
#[derive(Clone, Debug)]
pub enum TaskData {
    /// (sentence1, sentence2, gold).
    Sts(Vec<(String, String, f64)>),
    /// Train and test (text, label).
    Classification {
        /// Training texts.
        train: Vec<(String, String)>,
        /// Test texts.
        test: Vec<(String, String)>,
        /// Paraphrase the training texts too.
        paraphrase_train: bool,
    },
    /// (text, label).
    Clustering(Vec<(String, String)>),
    /// (sentence1, sentence2, positive).
    PairClassification(Vec<(String, String, bool)>),
    /// Samples.
    Reranking(Vec<RerankingSample>),
    /// A BEIR-style corpus.
    Retrieval {
        /// (id, title + " " + text).
        corpus: Vec<(String, String)>,
        /// (id, text), only queries with judgements.
        queries: Vec<(String, String)>,
        /// query id → document id → relevance.
        qrels: HashMap<String, HashMap<String, i32>>,
        /// Leave out of a query's ranking the document with the query's own id (MTEB's
        /// `ignore_identical_ids`: ArguAna's queries are arguments of its corpus).
        ignore_identical_ids: bool,
    },
    /// Documents.
    Summarization(Vec<SummarizationSample>),
}

/// Texts of a run: the original, or its paraphrase when the run has one.
fn rw<'a>(rewrite: Option<&'a HashMap<String, String>>, text: &'a str) -> &'a str {
    rewrite
        .and_then(|m| m.get(text))
        .map(String::as_str)
        .unwrap_or(text)
}

/// `texts` embedded in `role`: retrieval and reranking embed queries and documents in their
/// roles (asymmetric models prompt them differently), every other task as plain text.
fn embed(embedder: &dyn Embedder, texts: &[&str], role: Role) -> Result<Array2<f32>> {
    Ok(embedder.embed_as(texts, role)?)
}

fn to_f64(m: &Array2<f32>) -> Array2<f64> {
    m.mapv(f64::from)
}

impl TaskData {
    /// The task type.
    pub fn kind(&self) -> TaskKind {
        match self {
            TaskData::Sts(_) => TaskKind::Sts,
            TaskData::Classification { .. } => TaskKind::Classification,
            TaskData::Clustering(_) => TaskKind::Clustering,
            TaskData::PairClassification(_) => TaskKind::PairClassification,
            TaskData::Reranking(_) => TaskKind::Reranking,
            TaskData::Retrieval { .. } => TaskKind::Retrieval,
            TaskData::Summarization(_) => TaskKind::Summarization,
        }
    }

    /// The texts this task paraphrases (with repeats, in data order).
    pub fn paraphrased_texts(&self) -> Vec<&str> {
        match self {
            TaskData::Sts(rows) => rows
                .iter()
                .flat_map(|(a, b, _)| [a.as_str(), b.as_str()])
                .collect(),
            TaskData::Classification {
                train,
                test,
                paraphrase_train,
            } => {
                let mut t: Vec<&str> = test.iter().map(|(x, _)| x.as_str()).collect();
                if *paraphrase_train {
                    t.extend(train.iter().map(|(x, _)| x.as_str()));
                }
                t
            }
            TaskData::Clustering(rows) => rows.iter().map(|(t, _)| t.as_str()).collect(),
            TaskData::PairClassification(rows) => rows
                .iter()
                .flat_map(|(a, b, _)| [a.as_str(), b.as_str()])
                .collect(),
            TaskData::Reranking(samples) => samples
                .iter()
                .flat_map(|s| {
                    std::iter::once(s.query.as_str())
                        .chain(s.positive.iter().map(String::as_str))
                        .chain(s.negative.iter().map(String::as_str))
                })
                .collect(),
            TaskData::Retrieval { queries, .. } => {
                queries.iter().map(|(_, q)| q.as_str()).collect()
            }
            TaskData::Summarization(docs) => docs
                .iter()
                .flat_map(|d| d.summaries.iter().map(String::as_str))
                .collect(),
        }
    }

    /// The texts to paraphrase grouped by the language the prompt must keep: `languages` one per
    /// side of a pair (a cross-lingual STS pair has each side paraphrased in its own language),
    /// empty when the rows state none (one group, no language named).
    pub fn paraphrase_groups<'a>(
        &'a self,
        languages: &'a [String],
    ) -> Vec<(Option<&'a str>, Vec<&'a str>)> {
        match (self, languages) {
            (TaskData::Sts(rows), [first, second]) if first != second => vec![
                (
                    Some(first.as_str()),
                    rows.iter().map(|(a, _, _)| a.as_str()).collect(),
                ),
                (
                    Some(second.as_str()),
                    rows.iter().map(|(_, b, _)| b.as_str()).collect(),
                ),
            ],
            _ => vec![(
                languages.first().map(String::as_str),
                self.paraphrased_texts(),
            )],
        }
    }

    /// Rows (pairs, texts, samples, queries, documents) the task scores.
    pub fn len(&self) -> usize {
        match self {
            TaskData::Sts(r) => r.len(),
            TaskData::Classification { test, .. } => test.len(),
            TaskData::Clustering(r) => r.len(),
            TaskData::PairClassification(r) => r.len(),
            TaskData::Reranking(s) => s.len(),
            TaskData::Retrieval { queries, .. } => queries.len(),
            TaskData::Summarization(d) => d.len(),
        }
    }

    /// Whether there is nothing to score.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The task's main score with `embedder`, on the original texts (`rewrite` = `None`) or
    /// with each paraphrased text replaced by its paraphrase. `seed` drives the task's own
    /// randomness (k-means initialisation), the same for original and paraphrased runs.
    pub fn score(
        &self,
        embedder: &dyn Embedder,
        rewrite: Option<&HashMap<String, String>>,
        seed: RunSeed,
    ) -> Result<f64> {
        match self {
            TaskData::Sts(rows) => {
                let a: Vec<&str> = rows.iter().map(|(x, _, _)| rw(rewrite, x)).collect();
                let b: Vec<&str> = rows.iter().map(|(_, y, _)| rw(rewrite, y)).collect();
                let (ea, eb) = (
                    embed(embedder, &a, Role::Plain)?,
                    embed(embedder, &b, Role::Plain)?,
                );
                let cos: Vec<f64> = (0..rows.len())
                    .map(|i| f64::from(cosine(ea.row(i), eb.row(i))))
                    .collect();
                let gold: Vec<f64> = rows.iter().map(|r| r.2).collect();
                Ok(spearman(&cos, &gold)?)
            }
            TaskData::Classification {
                train,
                test,
                paraphrase_train,
            } => {
                let train_rewrite = if *paraphrase_train { rewrite } else { None };
                let labels: Vec<&str> = {
                    let mut l: Vec<&str> = train.iter().map(|(_, l)| l.as_str()).collect();
                    l.sort_unstable();
                    l.dedup();
                    l
                };
                let index = |l: &str| labels.binary_search(&l).ok();
                let xs: Vec<&str> = train.iter().map(|(t, _)| rw(train_rewrite, t)).collect();
                let ys: Array1<usize> = train
                    .iter()
                    .map(|(_, l)| index(l).unwrap_or(usize::MAX))
                    .collect();
                let x_train = to_f64(&embed(embedder, &xs, Role::Plain)?);
                let model = MultiLogisticRegression::default()
                    .max_iterations(100)
                    .fit(&Dataset::new(x_train, ys))
                    .map_err(|e| PtebError::Task(format!("logistic regression: {e}")))?;
                let xt: Vec<&str> = test.iter().map(|(t, _)| rw(rewrite, t)).collect();
                let predicted = model.predict(&to_f64(&embed(embedder, &xt, Role::Plain)?));
                let correct = test
                    .iter()
                    .zip(predicted.iter())
                    .filter(|((_, l), &p)| index(l) == Some(p))
                    .count();
                Ok(correct as f64 / test.len().max(1) as f64)
            }
            TaskData::Clustering(rows) => {
                let texts: Vec<&str> = rows.iter().map(|(t, _)| rw(rewrite, t)).collect();
                let x = to_f64(&embed(embedder, &texts, Role::Plain)?);
                let k = rows
                    .iter()
                    .map(|(_, l)| l.as_str())
                    .collect::<std::collections::BTreeSet<_>>()
                    .len();
                let model = KMeans::params_with_rng(k, seed.rng("pteb/kmeans"))
                    .n_runs(3)
                    .max_n_iterations(300)
                    .tolerance(1e-4)
                    .fit(&DatasetBase::from(x.clone()))
                    .map_err(|e| PtebError::Task(format!("k-means: {e}")))?;
                let predicted = model.predict(&x);
                let truth: Vec<&str> = rows.iter().map(|(_, l)| l.as_str()).collect();
                let predicted: Vec<usize> = predicted.to_vec();
                Ok(v_measure(&truth, &predicted)?.v_measure)
            }
            TaskData::PairClassification(rows) => {
                let a: Vec<&str> = rows.iter().map(|(x, _, _)| rw(rewrite, x)).collect();
                let b: Vec<&str> = rows.iter().map(|(_, y, _)| rw(rewrite, y)).collect();
                let (ea, eb) = (
                    embed(embedder, &a, Role::Plain)?,
                    embed(embedder, &b, Role::Plain)?,
                );
                let cos: Vec<f64> = (0..rows.len())
                    .map(|i| f64::from(cosine(ea.row(i), eb.row(i))))
                    .collect();
                let truth: Vec<bool> = rows.iter().map(|r| r.2).collect();
                Ok(average_precision_score(&truth, &cos)?)
            }
            TaskData::Reranking(samples) => {
                let queries: Vec<&str> = samples.iter().map(|s| rw(rewrite, &s.query)).collect();
                let mut candidates: Vec<&str> = Vec::new();
                for s in samples {
                    candidates.extend(s.positive.iter().map(|t| rw(rewrite, t)));
                    candidates.extend(s.negative.iter().map(|t| rw(rewrite, t)));
                }
                let eq = embed(embedder, &queries, Role::Query)?;
                let ec = embed(embedder, &candidates, Role::Document)?;
                let mut at = 0;
                let mut sum = 0.0;
                let mut counted = 0usize;
                for (qi, s) in samples.iter().enumerate() {
                    let q = eq.row(qi);
                    let n = s.positive.len() + s.negative.len();
                    let scores: Vec<f64> = (0..n)
                        .map(|j| f64::from(cosine(q, ec.row(at + j))))
                        .collect();
                    at += n;
                    // MTEB skips samples without a positive or a negative
                    if s.positive.is_empty() || s.negative.is_empty() {
                        continue;
                    }
                    let truth: Vec<bool> = (0..n).map(|j| j < s.positive.len()).collect();
                    sum += average_precision_score(&truth, &scores)?;
                    counted += 1;
                }
                if counted == 0 {
                    return Err(PtebError::Task(
                        "reranking: no sample has both positive and negative candidates".into(),
                    ));
                }
                Ok(sum / counted as f64)
            }
            TaskData::Retrieval {
                corpus,
                queries,
                qrels,
                ignore_identical_ids,
            } => {
                let docs: Vec<&str> = corpus.iter().map(|(_, t)| t.as_str()).collect();
                let qs: Vec<&str> = queries.iter().map(|(_, q)| rw(rewrite, q)).collect();
                let ed = embed(embedder, &docs, Role::Document)?;
                let eq = embed(embedder, &qs, Role::Query)?;
                let mut total = 0.0;
                for (qi, (qid, _)) in queries.iter().enumerate() {
                    let q = eq.row(qi);
                    let mut run: Vec<RankedDoc<'_>> = corpus
                        .iter()
                        .enumerate()
                        .filter(|(_, (id, _))| !(*ignore_identical_ids && id == qid))
                        .map(|(di, (id, _))| RankedDoc {
                            id: id.as_str(),
                            score: f64::from(cosine(q, ed.row(di))),
                        })
                        .collect();
                    trec_order(&mut run);
                    run.truncate(100);
                    let judged = qrels.get(qid).cloned().unwrap_or_default();
                    total += ndcg_at_k(&run, &judged, 10)?;
                }
                Ok(total / queries.len().max(1) as f64)
            }
            TaskData::Summarization(docs) => {
                let mut sum = 0.0;
                let mut counted = 0usize;
                for d in docs {
                    let summaries: Vec<&str> = d.summaries.iter().map(|t| rw(rewrite, t)).collect();
                    let refs: Vec<&str> = d.references.iter().map(String::as_str).collect();
                    let es = embed(embedder, &summaries, Role::Plain)?;
                    let er = embed(embedder, &refs, Role::Plain)?;
                    let best: Vec<f64> = (0..summaries.len())
                        .map(|i| {
                            (0..refs.len())
                                .map(|j| f64::from(cosine(es.row(i), er.row(j))))
                                .fold(f64::NEG_INFINITY, f64::max)
                        })
                        .collect();
                    // MTEB skips documents whose human scores are all equal (no ranking)
                    let first = d.relevance[0];
                    if d.relevance.iter().all(|&r| r == first) {
                        continue;
                    }
                    sum += spearman(&best, &d.relevance)?;
                    counted += 1;
                }
                if counted == 0 {
                    return Err(PtebError::Task(
                        "summarization: no document with varying human scores".into(),
                    ));
                }
                Ok(sum / counted as f64)
            }
        }
    }
}

/// Rows of a summary-ratings table grouped into documents, with references from `docs`
/// (document id → references), in first-seen document order. Documents without references are
/// left out.
pub fn group_summaries(
    ratings: &[sage_data::SummaryRating],
    references: &HashMap<String, Vec<String>>,
) -> Vec<SummarizationSample> {
    let mut order: Vec<&str> = Vec::new();
    let mut by_doc: BTreeMap<&str, SummarizationSample> = BTreeMap::new();
    for r in ratings {
        let Some(refs) = references.get(&r.doc_id).filter(|r| !r.is_empty()) else {
            continue;
        };
        let entry = by_doc.entry(r.doc_id.as_str()).or_insert_with(|| {
            order.push(r.doc_id.as_str());
            SummarizationSample {
                references: refs.clone(),
                summaries: Vec::new(),
                relevance: Vec::new(),
            }
        });
        entry.summaries.push(r.summary.clone());
        entry
            .relevance
            .push(r.ratings.get("relevance").copied().unwrap_or(f64::NAN));
    }
    order.into_iter().filter_map(|d| by_doc.remove(d)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testing::Words;

    fn s(x: &str) -> String {
        x.to_owned()
    }

    #[test]
    fn every_task_scores_a_clear_case_perfectly_and_paraphrases_change_it() {
        let e = Words::new();
        let seed = RunSeed(1);
        let sts = TaskData::Sts(vec![
            (s("red apple pie"), s("red apple pie"), 5.0),
            (s("red apple cake"), s("red apple pie"), 3.0),
            (s("blue sky"), s("green grass"), 0.0),
        ]);
        assert!((sts.score(&e, None, seed).unwrap() - 1.0).abs() < 1e-9);
        // a paraphrase of the first sentence sharing no word breaks the ranking
        let rewrite: HashMap<String, String> = [(s("red apple pie"), s("crimson fruit tart"))]
            .into_iter()
            .collect();
        assert!(sts.score(&e, Some(&rewrite), seed).unwrap() < 1.0);
        assert_eq!(sts.paraphrased_texts().len(), 6);

        let pairs = TaskData::PairClassification(vec![
            (s("a b c"), s("a b c"), true),
            (s("d e"), s("f g"), false),
            (s("h i"), s("h i j"), true),
        ]);
        assert!((pairs.score(&e, None, seed).unwrap() - 1.0).abs() < 1e-9);

        let rerank = TaskData::Reranking(vec![RerankingSample {
            query: s("how to mount a drive"),
            positive: vec![s("mount a drive how")],
            negative: vec![s("install python"), s("wifi drops")],
        }]);
        assert!((rerank.score(&e, None, seed).unwrap() - 1.0).abs() < 1e-9);
        assert_eq!(rerank.paraphrased_texts().len(), 4);

        let mut qrels = HashMap::new();
        qrels.insert(s("q1"), [(s("d2"), 1)].into_iter().collect());
        let retrieval = |corpus: Vec<(String, String)>, ignore_identical_ids| TaskData::Retrieval {
            corpus,
            queries: vec![(s("q1"), s("why dogs bark"))],
            qrels: qrels.clone(),
            ignore_identical_ids,
        };
        let corpus = vec![(s("d1"), s("cats purr")), (s("d2"), s("dogs bark loudly"))];
        let plain = retrieval(corpus.clone(), false);
        assert!((plain.score(&e, None, seed).unwrap() - 1.0).abs() < 1e-9);
        // only the queries are paraphrased
        assert_eq!(plain.paraphrased_texts(), ["why dogs bark"]);
        // the query itself in the corpus (ArguAna): ranked first unless its id is left out
        let mut with_itself = corpus;
        with_itself.push((s("q1"), s("why dogs bark")));
        let counted = retrieval(with_itself.clone(), false)
            .score(&e, None, seed)
            .unwrap();
        assert!(counted < 0.99, "{counted}");
        let ignored = retrieval(with_itself, true).score(&e, None, seed).unwrap();
        assert!((ignored - 1.0).abs() < 1e-9, "{ignored}");

        let summaries = TaskData::Summarization(vec![SummarizationSample {
            references: vec![s("the council approved the new budget")],
            summaries: vec![
                s("the council approved the new budget"),
                s("council approved budget"),
                s("weather was sunny"),
            ],
            relevance: vec![5.0, 3.0, 1.0],
        }]);
        assert!((summaries.score(&e, None, seed).unwrap() - 1.0).abs() < 1e-9);

        let train = vec![
            (s("refund my card payment"), s("refund")),
            (s("card refund please"), s("refund")),
            (s("lost my card today"), s("lost")),
            (s("card was lost"), s("lost")),
        ];
        let classification = TaskData::Classification {
            train,
            test: vec![
                (s("refund payment"), s("refund")),
                (s("lost today"), s("lost")),
            ],
            paraphrase_train: false,
        };
        assert!((classification.score(&e, None, seed).unwrap() - 1.0).abs() < 1e-9);
        assert_eq!(classification.paraphrased_texts().len(), 2);

        let clustering = TaskData::Clustering(vec![
            (s("goal match striker"), s("sport")),
            (s("goal match keeper"), s("sport")),
            (s("vote party election"), s("politics")),
            (s("vote party senate"), s("politics")),
        ]);
        assert!((clustering.score(&e, None, seed).unwrap() - 1.0).abs() < 1e-9);
    }

    #[test]
    fn summaries_are_grouped_by_document_with_their_references() {
        let rating = |doc: &str, summary: &str, relevance: f64| sage_data::SummaryRating {
            doc_id: doc.into(),
            source: "src".into(),
            summary: summary.into(),
            system: "m".into(),
            ratings: [(s("relevance"), relevance)].into_iter().collect(),
        };
        let refs: HashMap<String, Vec<String>> =
            [(s("d1"), vec![s("r1"), s("r2")]), (s("d2"), vec![s("r3")])]
                .into_iter()
                .collect();
        let grouped = group_summaries(
            &[
                rating("d2", "a", 1.0),
                rating("d1", "b", 2.0),
                rating("d2", "c", 3.0),
                rating("d3", "x", 1.0),
            ],
            &refs,
        );
        assert_eq!(grouped.len(), 2, "d3 has no references");
        assert_eq!(grouped[0].summaries, ["a", "c"]);
        assert_eq!(grouped[0].relevance, [1.0, 3.0]);
        assert_eq!(grouped[1].references, ["r1", "r2"]);
    }
}
