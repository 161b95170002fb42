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
    /// Train and test (text, label), scored as MTEB scores classification: a logistic
    /// regression fitted per experiment on that experiment's few training texts per label, its
    /// test accuracy averaged over the experiments.
    Classification {
        /// Training texts.
        train: Vec<(String, String)>,
        /// Test texts.
        test: Vec<(String, String)>,
        /// Paraphrase the training texts too (those some experiment trains on).
        paraphrase_train: bool,
        /// Each experiment's training rows, as indices into `train`, drawn as MTEB draws them.
        experiments: Vec<Vec<usize>>,
    },
    /// (text, label), clustered as MTEB clusters the task: in `sets` consecutive sets of the
    /// rows (NumPy's `array_split`: the first sets one row longer where the rows do not divide
    /// evenly), each with as many clusters as it has labels, the V-measures averaged.
    Clustering {
        /// The rows, in the order the sets are cut from.
        rows: Vec<(String, String)>,
        /// How many sets: MTEB's for the task, fewer where a sample is too small for them.
        sets: usize,
    },
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
            TaskData::Clustering { .. } => TaskKind::Clustering,
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
                experiments,
            } => {
                let mut t: Vec<&str> = test.iter().map(|(x, _)| x.as_str()).collect();
                if *paraphrase_train {
                    t.extend(trained_on(experiments).map(|i| train[i].0.as_str()));
                }
                t
            }
            TaskData::Clustering { rows, .. } => rows.iter().map(|(t, _)| t.as_str()).collect(),
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
            TaskData::Clustering { rows, .. } => rows.len(),
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
                experiments,
            } => {
                let train_rewrite = if *paraphrase_train { rewrite } else { None };
                let labels: Vec<&str> = {
                    let mut l: Vec<&str> = train.iter().map(|(_, l)| l.as_str()).collect();
                    l.sort_unstable();
                    l.dedup();
                    l
                };
                let index = |l: &str| labels.binary_search(&l).ok();
                // every training text some experiment uses, embedded once
                let used: Vec<usize> = trained_on(experiments).collect();
                let xs: Vec<&str> = used
                    .iter()
                    .map(|&i| rw(train_rewrite, &train[i].0))
                    .collect();
                let x_used = to_f64(&embed(embedder, &xs, Role::Plain)?);
                let row_of: HashMap<usize, usize> =
                    used.iter().enumerate().map(|(r, &i)| (i, r)).collect();
                let xt: Vec<&str> = test.iter().map(|(t, _)| rw(rewrite, t)).collect();
                let x_test = to_f64(&embed(embedder, &xt, Role::Plain)?);
                let mut accuracies = Vec::with_capacity(experiments.len());
                for (k, rows) in experiments.iter().enumerate() {
                    let picked: Vec<usize> = rows.iter().map(|i| row_of[i]).collect();
                    let x_train = x_used.select(ndarray::Axis(0), &picked);
                    let ys: Array1<usize> = rows
                        .iter()
                        .map(|&i| index(&train[i].1).unwrap_or(usize::MAX))
                        .collect();
                    let model = MultiLogisticRegression::default()
                        .max_iterations(100)
                        .fit(&Dataset::new(x_train, ys))
                        .map_err(|e| {
                            PtebError::Task(format!("logistic regression, experiment {k}: {e}"))
                        })?;
                    let predicted = model.predict(&x_test);
                    let correct = test
                        .iter()
                        .zip(predicted.iter())
                        .filter(|((_, l), &p)| index(l) == Some(p))
                        .count();
                    accuracies.push(correct as f64 / test.len().max(1) as f64);
                }
                Ok(accuracies.iter().sum::<f64>() / accuracies.len().max(1) as f64)
            }
            TaskData::Clustering { rows, sets } => {
                let texts: Vec<&str> = rows.iter().map(|(t, _)| rw(rewrite, t)).collect();
                let x = to_f64(&embed(embedder, &texts, Role::Plain)?);
                let mut v_measures = Vec::with_capacity(*sets);
                for (i, range) in array_split(rows.len(), *sets).into_iter().enumerate() {
                    let part = &rows[range.clone()];
                    let x = x.slice(ndarray::s![range, ..]).to_owned();
                    let k = part
                        .iter()
                        .map(|(_, l)| l.as_str())
                        .collect::<std::collections::BTreeSet<_>>()
                        .len();
                    // set 0 draws as a one-set task always has
                    let stream = match i {
                        0 => "pteb/kmeans".to_owned(),
                        i => format!("pteb/kmeans/{i}"),
                    };
                    let model = KMeans::params_with_rng(k, seed.rng(&stream))
                        .n_runs(3)
                        .max_n_iterations(300)
                        .tolerance(1e-4)
                        .fit(&DatasetBase::from(x.clone()))
                        .map_err(|e| PtebError::Task(format!("k-means, set {i}: {e}")))?;
                    let predicted: Vec<usize> = model.predict(&x).to_vec();
                    let truth: Vec<&str> = part.iter().map(|(_, l)| l.as_str()).collect();
                    v_measures.push(v_measure(&truth, &predicted)?.v_measure);
                }
                Ok(v_measures.iter().sum::<f64>() / v_measures.len().max(1) as f64)
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

/// Each experiment's training rows as MTEB draws them (`AbsTaskClassification._undersample_data`,
/// v1): one index order shuffled again before each experiment, and in that order the first
/// `per_label` rows of each label kept. MTEB shuffles with NumPy's global generator; this uses
/// the run's seeded one, so the draws are MTEB's in kind, not in bytes.
pub fn undersample(
    labels: &[&str],
    experiments: usize,
    per_label: usize,
    seed: RunSeed,
) -> Vec<Vec<usize>> {
    use rand::seq::SliceRandom;
    let mut rng = seed.rng("pteb/classification-undersample");
    let mut order: Vec<usize> = (0..labels.len()).collect();
    (0..experiments)
        .map(|_| {
            order.shuffle(&mut rng);
            let mut taken: HashMap<&str, usize> = HashMap::new();
            order
                .iter()
                .copied()
                .filter(|&i| {
                    let n = taken.entry(labels[i]).or_default();
                    *n += 1;
                    *n <= per_label
                })
                .collect()
        })
        .collect()
}

/// NumPy's `array_split(range(n), sets)`: `sets` consecutive ranges covering `0..n`, the
/// first `n % sets` of them one longer.
pub fn array_split(n: usize, sets: usize) -> Vec<std::ops::Range<usize>> {
    let sets = sets.max(1);
    let (base, longer) = (n / sets, n % sets);
    let mut start = 0;
    (0..sets)
        .map(|i| {
            let end = start + base + usize::from(i < longer);
            let range = start..end;
            start = end;
            range
        })
        .collect()
}

/// The most sets, up to `wanted`, that `labels` cut into by [`array_split`] with every set
/// clusterable (two texts or more, two labels or more, a label shared); 1 when none is: a
/// sample too small for MTEB's sets is clustered as one, and the error, if any, is that one's.
pub fn clustering_sets(labels: &[&str], wanted: usize) -> usize {
    (1..=wanted.max(1))
        .rev()
        .find(|&sets| {
            array_split(labels.len(), sets)
                .into_iter()
                .all(|r| sage_measures::unclusterable(&labels[r]).is_none())
        })
        .unwrap_or(1)
}

/// The training rows any experiment uses, each once, in index order.
fn trained_on(experiments: &[Vec<usize>]) -> impl Iterator<Item = usize> {
    experiments
        .iter()
        .flatten()
        .copied()
        .collect::<std::collections::BTreeSet<usize>>()
        .into_iter()
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
        let labels: Vec<&str> = train.iter().map(|(_, l)| l.as_str()).collect();
        let experiments = undersample(&labels, 3, 1, seed);
        let classification = TaskData::Classification {
            train: train.clone(),
            test: vec![
                (s("refund payment"), s("refund")),
                (s("lost today"), s("lost")),
            ],
            paraphrase_train: false,
            experiments,
        };
        assert!((classification.score(&e, None, seed).unwrap() - 1.0).abs() < 1e-9);
        assert_eq!(classification.paraphrased_texts().len(), 2);

        let rows = vec![
            (s("goal match striker"), s("sport")),
            (s("goal match keeper"), s("sport")),
            (s("vote party election"), s("politics")),
            (s("vote party senate"), s("politics")),
        ];
        let clustering = TaskData::Clustering {
            rows: [rows.clone(), rows].concat(),
            sets: 2,
        };
        assert!((clustering.score(&e, None, seed).unwrap() - 1.0).abs() < 1e-9);
    }

    /// MTEB's MasakhaNEWS sets are `np.array_split(texts, 5)`: 376 Amharic headlines are sets
    /// of 76, 75, 75, 75, 75; a sample too small for five clusterable sets keeps fewer.
    #[test]
    fn clustering_sets_are_numpys_array_split() {
        let lens = |n, k| -> Vec<usize> { array_split(n, k).iter().map(|r| r.len()).collect() };
        assert_eq!(lens(376, 5), [76, 75, 75, 75, 75]);
        assert_eq!(lens(948, 5), [190, 190, 190, 189, 189]);
        assert_eq!(lens(7, 1), [7]);
        assert_eq!(array_split(7, 3), [0..3, 3..5, 5..7]);
        let labels = ["a", "b", "a", "b", "a", "b", "a", "b", "a"];
        // four sets would leave pairs of two labels: nothing shared to cluster
        assert_eq!(clustering_sets(&labels, 5), 3);
        assert_eq!(clustering_sets(&labels[..3], 5), 1);
        assert_eq!(clustering_sets(&["a", "b", "a", "b"], 1), 1);
    }

    /// MTEB's undersampling: at most `per_label` rows of each label per experiment, every
    /// label kept, a fresh draw per experiment, the same draws for the same seed.
    #[test]
    fn undersampling_keeps_a_few_rows_of_each_label_per_experiment() {
        let labels: Vec<&str> = (0..200)
            .map(|i| ["a", "b", "c", "rare"][if i % 50 == 0 { 3 } else { i % 3 }])
            .collect();
        let seed = RunSeed(7);
        let drawn = undersample(&labels, 10, 8, seed);
        assert_eq!(drawn.len(), 10);
        for rows in &drawn {
            let mut counts: HashMap<&str, usize> = HashMap::new();
            for &i in rows {
                *counts.entry(labels[i]).or_default() += 1;
            }
            assert_eq!(counts["a"], 8);
            assert_eq!(counts["b"], 8);
            assert_eq!(counts["c"], 8);
            // a label with fewer rows than asked keeps all of them
            assert_eq!(counts["rare"], 4);
        }
        assert_ne!(drawn[0], drawn[1]);
        assert_eq!(drawn, undersample(&labels, 10, 8, seed));
        assert_ne!(drawn, undersample(&labels, 10, 8, RunSeed(8)));
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
