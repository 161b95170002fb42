//! Corpora, chunked ranking, retentions, a whole run.

use std::collections::{BTreeSet, HashMap};

use rand::seq::index;
use rayon::prelude::*;
use sage_core::{RunSeed, Similarity, Timings};
use sage_data::{Beir, BeirDocument, DataRoot};
use sage_measures as measures;
use sage_perturb::retrieval_set;
use serde::{Deserialize, Serialize};

use crate::topk::TopK;
use crate::{Result, RetrievalError};

/// The BEIR sets shipped locally (registry name, qrels split); any other BEIR set can be named.
pub const DEFAULT_DATASETS: [(&str, &str); 2] = [("nfcorpus", "test"), ("scifact", "test")];

/// How a perturbed corpus is built.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Originals plus perturbed copies; only originals relevant.
    #[default]
    Distractor,
    /// Perturbed copies only, relevance carried over.
    Replace,
}

sage_core::suite_options! {
    /// Run options: the one declaration the flags, `--options`, bench.toml and Python keywords
    /// all read, with each field's range.
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Options {
        /// distractor: the originals and their perturbed copies; replace: the copies only.
        pub mode: Mode = Mode::Distractor, sage_core::OptionSpec::any();
        /// Corpus documents sampled (seeded), every one relevant to a kept query among them;
        /// drawn queries whose relevant documents alone would pass it are left out and counted.
        /// All when unset.
        pub max_docs: Option<usize> = None, sage_core::OptionSpec::whole(1, 10_000_000);
        /// Queries sampled (seeded); all judged ones when unset.
        pub max_queries: Option<usize> = None, sage_core::OptionSpec::whole(1, 1_000_000);
        /// Most query-document pairs scored at once (bounds memory: about 50 bytes a pair).
        pub pair_budget: usize = 1 << 20, sage_core::OptionSpec::whole(1_000, 100_000_000);
        /// Run seed (the request's, never an option).
        pub seed: RunSeed = RunSeed::default(), sage_core::OptionSpec::run_seed();
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// One perturbation's result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RetentionReport {
    /// Perturbation id.
    pub perturbation: String,
    /// Mean NDCG@10 on the perturbed corpus.
    pub ndcg_at_10: f64,
    /// ndcg_at_10 / clean NDCG@10.
    pub retention: f64,
}

/// One dataset.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DatasetReport {
    /// Registry name and qrels split.
    pub dataset: String,
    /// Corpus build mode.
    pub mode: Mode,
    /// Documents in the corpus file.
    pub corpus_total: usize,
    /// Documents used.
    pub corpus_used: usize,
    /// Checksum of the used documents' ids and texts.
    pub corpus_checksum: String,
    /// The checks of the set's files ([`sage_data::verify`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<sage_core::FileCheck>,
    /// Queries evaluated.
    pub queries: usize,
    /// Judged queries left out: no relevant document (relevance > 0) in the corpus.
    pub queries_without_relevant: usize,
    /// Drawn queries left out because their relevant documents alone would pass `max_docs`
    /// (absent when none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub queries_over_document_budget: usize,
    /// Judgements with a negative relevance in the qrels file, scored as judged non-relevant
    /// (0), as trec_eval does (absent when none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub negative_judgements: usize,
    /// Mean NDCG@10 on the clean corpus.
    pub ndcg_clean: f64,
    /// Per perturbation, in retrieval_set order.
    pub retentions: Vec<RetentionReport>,
    /// Harmonic mean of the retentions.
    pub score: f64,
    /// NDCG@10 of each query on the clean corpus (the bootstrap's units).
    #[serde(skip)]
    pub clean_per_query: Vec<f64>,
    /// NDCG@10 of each query on each perturbed corpus, in retrieval_set order.
    #[serde(skip)]
    pub perturbed_per_query: Vec<Vec<f64>>,
}

/// A whole task-5 run: its options, one [`DatasetReport`] per dataset, the category score with
/// its bootstrap interval (queries resampled within each dataset) and resamples.
pub type RetrievalReport = sage_measures::CategoryReport<Options, DatasetReport>;

/// A document as ranked: file position (keys its perturbation streams), id, text.
#[derive(Clone, Debug, PartialEq)]
pub struct Doc {
    /// Position in the corpus file.
    pub position: usize,
    /// Document id.
    pub id: String,
    /// `title + " " + text`, or the text alone when there is no title.
    pub text: String,
}

/// A query as ranked: its position in the queries file (keys its perturbation streams), its
/// text and its judgements.
#[derive(Clone, Debug, PartialEq)]
pub struct Query {
    /// Position in the queries file.
    pub position: usize,
    /// The query.
    pub text: String,
    /// Document id → relevance.
    pub qrels: HashMap<String, i32>,
}

/// A BEIR split as a run ranks it: the queries kept (with a relevant document in the corpus,
/// sampled to `max_queries`), the documents used (every relevant one, sampled to `max_docs`),
/// and what was left out. The one reading of a BEIR split by the tasks that rank it.
#[derive(Clone, Debug)]
pub struct RankingSet {
    /// `name/split`.
    pub dataset: String,
    /// Content key of the split: the label perturbation streams derive from.
    pub stream_key: String,
    /// The queries kept, in file order.
    pub queries: Vec<Query>,
    /// The documents used, in file order.
    pub documents: Vec<Doc>,
    /// Documents in the corpus file.
    pub corpus_total: usize,
    /// Checksum of the used documents' ids and texts.
    pub corpus_checksum: String,
    /// The checks of the set's corpus, queries and judgements files.
    pub files: Vec<sage_core::FileCheck>,
    /// Judged queries left out: no relevant document in the corpus.
    pub queries_without_relevant: usize,
    /// Drawn queries left out because their relevant documents would pass `max_docs`.
    pub queries_over_document_budget: usize,
    /// Judgements with a negative relevance, scored as 0.
    pub negative_judgements: usize,
}

/// How a [`RankingSet`] is sampled.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sampling {
    /// Corpus documents sampled (seeded), every one relevant to a kept query kept; all when
    /// `None`. Drawn queries whose relevant documents would pass it are left out (counted).
    pub max_docs: Option<usize>,
    /// Queries sampled (seeded); all judged ones when `None`.
    pub max_queries: Option<usize>,
    /// The run seed.
    pub seed: RunSeed,
}

/// The [`RankingSet`] of `name/split` (BEIR kind): only the documents it uses are read into
/// memory (the plan is made on ids first).
pub fn load_ranking_set(
    root: &DataRoot,
    name: &str,
    split: &str,
    sampling: Sampling,
    timings: &mut Timings,
) -> Result<RankingSet> {
    let planned = std::cell::RefCell::new(None);
    let beir = timings.time(format!("load/{name}/{split}"), || {
        root.beir_sampled(name, split, &|b| {
            let plan = plan(b, sampling);
            let positions = plan.positions.clone();
            *planned.borrow_mut() = Some(plan);
            positions
        })
    })?;
    let plan = planned
        .into_inner()
        .expect("a sampled load asks for its plan");
    ranking_set(&beir, plan)
}

/// Ranks `docs` (id, text) for every query, chunk by chunk, into one top-10 per query.
fn rank_chunk(
    similarity: &dyn Similarity,
    queries: &[&str],
    docs: &[(String, String)],
    tops: &mut [TopK],
) -> Result<()> {
    let pairs: Vec<(&str, &str)> = docs
        .iter()
        .flat_map(|(_, text)| queries.iter().map(move |q| (text.as_str(), *q)))
        .collect();
    let scores = similarity.score_pairs_for_ranking(&pairs)?;
    for (d, (id, _)) in docs.iter().enumerate() {
        let row = &scores[d * queries.len()..(d + 1) * queries.len()];
        for (top, &s) in tops.iter_mut().zip(row) {
            top.offer(f64::from(s), id);
        }
    }
    Ok(())
}

/// Top-10 per query over `docs`, each transformed by `transform` chunk by chunk.
fn rank_corpus(
    similarity: &dyn Similarity,
    queries: &[&str],
    docs: &[Doc],
    chunk: usize,
    transform: &(dyn Fn(&Doc) -> Result<(String, String)> + Sync),
) -> Result<Vec<TopK>> {
    let mut tops = vec![TopK::new(10); queries.len()];
    for block in docs.chunks(chunk) {
        let texts: Vec<(String, String)> =
            block.par_iter().map(transform).collect::<Result<_>>()?;
        rank_chunk(similarity, queries, &texts, &mut tops)?;
    }
    Ok(tops)
}

/// NDCG@10 of every query.
fn query_ndcg(tops: &[TopK], qrels: &[HashMap<String, i32>]) -> Result<Vec<f64>> {
    Ok(tops
        .iter()
        .zip(qrels)
        .map(|(top, q)| measures::ndcg_at_k(&top.ranked(), q, 10))
        .collect::<sage_core::Result<_>>()?)
}

fn retention(ndcg: f64, clean: f64) -> f64 {
    if clean > 0.0 {
        ndcg / clean
    } else {
        0.0
    }
}

/// The dataset score from per-query NDCG@10 (`queries` of them, drawn as `drawn`): the harmonic
/// mean over perturbations of mean NDCG_t / mean clean NDCG. The report's and the bootstrap's
/// one definition.
fn retention_score(clean: &[f64], perturbed: &[Vec<f64>], drawn: &[usize]) -> f64 {
    let mean_of = |v: &[f64]| drawn.iter().map(|&i| v[i]).sum::<f64>() / drawn.len() as f64;
    let clean = mean_of(clean);
    let retentions: Vec<f64> = perturbed
        .iter()
        .map(|p| retention(mean_of(p), clean))
        .collect();
    measures::harmonic_mean(&retentions).unwrap_or(f64::NAN)
}

fn document_text(title: &str, text: &str) -> String {
    if title.is_empty() {
        text.to_owned()
    } else {
        format!("{title} {text}")
    }
}

/// What a run ranks: the queries kept (indices into `Beir::queries`), the corpus positions used
/// (ascending), and how many queries have no relevant document in the corpus. A function of the
/// ids alone, so that the corpus can be streamed and only these documents kept
/// ([`DataRoot::beir_sampled`]).
struct Plan {
    kept: Vec<usize>,
    positions: Vec<usize>,
    queries_without_relevant: usize,
    queries_over_document_budget: usize,
}

fn plan(beir: &Beir, sampling: Sampling) -> Plan {
    // keyed by content, not name: see sage_data::sample
    let stream = &beir.stream_key;
    let seed = sampling.seed;
    // queries with a relevant document, optionally sampled
    let corpus_ids: BTreeSet<&str> = beir.corpus_ids.iter().map(String::as_str).collect();
    let judged: Vec<usize> = (0..beir.queries.len())
        .filter(|&i| {
            beir.qrels[&beir.queries[i].id]
                .iter()
                .any(|(d, &r)| r > 0 && corpus_ids.contains(d.as_str()))
        })
        .collect();
    let queries_without_relevant = beir.queries.len() - judged.len();
    // in the order drawn: which queries fit the document budget depends on it
    let drawn: Vec<usize> = match sampling.max_queries {
        Some(max) if max < judged.len() => index::sample(
            &mut seed.rng(&format!("retrieval/{stream}/queries")),
            judged.len(),
            max,
        )
        .into_iter()
        .map(|i| judged[i])
        .collect(),
        _ => judged,
    };
    let relevant_to = |i: usize| {
        beir.qrels[&beir.queries[i].id]
            .iter()
            .filter(|(_, &r)| r > 0)
            .map(|(d, _)| d.as_str())
    };
    // The corpus holds every document relevant to a kept query. Where those alone would pass
    // `max_docs` (NFCorpus judges ~40 documents per query), queries are kept in the order drawn
    // while their relevant documents fit, the first always: `max_docs` bounds the work, as a
    // user who sets it expects, and the queries left out are counted in the report.
    let mut relevant: BTreeSet<&str> = BTreeSet::new();
    let mut kept = Vec::with_capacity(drawn.len());
    for &i in &drawn {
        let fits = match sampling.max_docs {
            Some(max) => {
                let new = relevant_to(i).filter(|d| !relevant.contains(d)).count();
                relevant.len() + new <= max
            }
            None => true,
        };
        if fits || kept.is_empty() {
            relevant.extend(relevant_to(i));
            kept.push(i);
        }
    }
    let queries_over_document_budget = drawn.len() - kept.len();
    kept.sort_unstable();
    // the corpus: every document relevant to a kept query, then a seeded sample of the rest
    let total = beir.corpus_ids.len();
    let positions: Vec<usize> = match sampling.max_docs {
        Some(max) if max < total => {
            let (must, rest): (Vec<usize>, Vec<usize>) =
                (0..total).partition(|&i| relevant.contains(beir.corpus_ids[i].as_str()));
            let room = max.saturating_sub(must.len()).min(rest.len());
            let mut picked = must;
            picked.extend(
                index::sample(
                    &mut seed.rng(&format!("retrieval/{stream}/docs")),
                    rest.len(),
                    room,
                )
                .into_iter()
                .map(|i| rest[i]),
            );
            picked.sort_unstable();
            picked
        }
        _ => (0..total).collect(),
    };
    Plan {
        kept,
        positions,
        queries_without_relevant,
        queries_over_document_budget,
    }
}

/// Task 5 on one loaded BEIR dataset: whole, or with the documents its sample ranks (those
/// [`evaluate`] has [`DataRoot::beir_sampled`] keep).
pub fn evaluate_dataset(
    similarity: &dyn Similarity,
    beir: &Beir,
    options: &Options,
    timings: &mut Timings,
) -> Result<DatasetReport> {
    let set = ranking_set(beir, plan(beir, options.sampling()))?;
    evaluate_set(similarity, &set, options, timings)
}

impl Options {
    fn sampling(&self) -> Sampling {
        Sampling {
            max_docs: self.max_docs,
            max_queries: self.max_queries,
            seed: self.seed,
        }
    }
}

/// The ranking set of `beir` under `plan` (made on its ids, before the documents were read).
fn ranking_set(
    beir: &Beir,
    Plan {
        kept,
        positions,
        queries_without_relevant,
        queries_over_document_budget,
    }: Plan,
) -> Result<RankingSet> {
    let name = &beir.dataset;
    if kept.is_empty() {
        return Err(RetrievalError::Insufficient(format!(
            "{name}/{}: no query has a relevant document in the corpus",
            beir.split
        )));
    }
    let queries: Vec<Query> = kept
        .iter()
        .map(|&i| Query {
            position: i,
            text: beir.queries[i].text.clone(),
            qrels: beir.qrels[&beir.queries[i].id]
                .iter()
                .map(|(d, &r)| (d.clone(), r))
                .collect(),
        })
        .collect();
    let used: Vec<&BeirDocument> = positions
        .iter()
        .map(|&i| {
            beir.document(i).ok_or_else(|| {
                RetrievalError::Insufficient(format!(
                    "{name}/{}: corpus document {i} was not loaded",
                    beir.split
                ))
            })
        })
        .collect::<Result<_>>()?;
    let documents: Vec<Doc> = positions
        .iter()
        .zip(&used)
        .map(|(&i, d)| Doc {
            position: i,
            id: d.id.clone(),
            text: document_text(&d.title, &d.text),
        })
        .collect();
    Ok(RankingSet {
        dataset: format!("{name}/{}", beir.split),
        stream_key: beir.stream_key.clone(),
        queries,
        documents,
        corpus_total: beir.corpus_ids.len(),
        corpus_checksum: sage_data::sample::checksum(used.iter().copied()),
        files: beir.files.clone(),
        queries_without_relevant,
        queries_over_document_budget,
        negative_judgements: beir.negative_judgements,
    })
}

/// Task 5 on a loaded ranking set.
fn evaluate_set(
    similarity: &dyn Similarity,
    set: &RankingSet,
    options: &Options,
    timings: &mut Timings,
) -> Result<DatasetReport> {
    let name = set.dataset.split('/').next().unwrap_or(&set.dataset);
    let stream = &set.stream_key;
    let seed = options.seed;
    let queries: Vec<&str> = set.queries.iter().map(|q| q.text.as_str()).collect();
    let qrels: Vec<HashMap<String, i32>> = set.queries.iter().map(|q| q.qrels.clone()).collect();
    let docs = &set.documents;
    let chunk = (options.pair_budget / queries.len()).max(1);
    let clean = timings.time(format!("rank/{name}/clean"), || {
        rank_corpus(similarity, &queries, docs, chunk, &|d| {
            Ok((d.id.clone(), d.text.clone()))
        })
    })?;
    let clean_per_query = query_ndcg(&clean, &qrels)?;
    let ndcg_clean = measures::mean(&clean_per_query)?;
    let mut perturbed_per_query = Vec::new();
    let mut retentions = Vec::new();
    for (k, perturbation) in retrieval_set().iter().enumerate() {
        let id = perturbation.id();
        let label = format!("retrieval/{stream}/{id}");
        let perturb = |d: &Doc| -> Result<(String, String)> {
            let text = perturbation
                .apply(&d.text, &mut seed.rng_for_item(&label, d.position as u64))?
                .text;
            let doc_id = match options.mode {
                Mode::Distractor => format!("{}~{k}", d.id),
                Mode::Replace => d.id.clone(),
            };
            Ok((doc_id, text))
        };
        let mut tops = timings.time(format!("rank/{name}/{id}"), || {
            rank_corpus(similarity, &queries, docs, chunk, &perturb)
        })?;
        if options.mode == Mode::Distractor {
            for (top, original) in tops.iter_mut().zip(&clean) {
                top.merge(original);
            }
        }
        let per_query = query_ndcg(&tops, &qrels)?;
        let ndcg = measures::mean(&per_query)?;
        perturbed_per_query.push(per_query);
        retentions.push(RetentionReport {
            perturbation: id,
            ndcg_at_10: ndcg,
            retention: retention(ndcg, ndcg_clean),
        });
    }
    let all: Vec<usize> = (0..clean_per_query.len()).collect();
    let score = retention_score(&clean_per_query, &perturbed_per_query, &all);
    Ok(DatasetReport {
        dataset: set.dataset.clone(),
        mode: options.mode,
        corpus_total: set.corpus_total,
        corpus_used: docs.len(),
        corpus_checksum: set.corpus_checksum.clone(),
        files: set.files.clone(),
        queries: queries.len(),
        queries_without_relevant: set.queries_without_relevant,
        queries_over_document_budget: set.queries_over_document_budget,
        negative_judgements: set.negative_judgements,
        ndcg_clean,
        retentions,
        score,
        clean_per_query,
        perturbed_per_query,
    })
}

impl sage_measures::DatasetScore for DatasetReport {
    fn score(&self) -> f64 {
        self.score
    }
    fn units(&self) -> usize {
        self.clean_per_query.len()
    }
    fn resampled_score(&self, drawn: &[usize]) -> f64 {
        retention_score(&self.clean_per_query, &self.perturbed_per_query, drawn)
    }
}

impl sage_core::DatasetRows for DatasetReport {
    fn rows_used(&self) -> Vec<sage_core::RowsUsed> {
        vec![sage_core::RowsUsed::Corpus(sage_core::CorpusSelection {
            dataset: self.dataset.clone(),
            corpus_checksum: self.corpus_checksum.clone(),
            corpus_total: self.corpus_total,
            corpus_used: self.corpus_used,
            queries: self.queries,
            files: self.files.clone(),
        })]
    }
}

/// Task 5 on each of `datasets` (registry name, qrels split; BEIR kind).
pub fn evaluate(
    similarity: &dyn Similarity,
    root: &DataRoot,
    datasets: &[(&str, &str)],
    options: Options,
) -> Result<RetrievalReport> {
    RetrievalReport::over_datasets(
        "retrieval",
        similarity.name(),
        options.seed,
        options,
        datasets,
        |name, split, options, timings| {
            let set = load_ranking_set(root, name, split, options.sampling(), timings)?;
            evaluate_set(similarity, &set, options, timings)
        },
    )
}

/// What a reader of a run's result should know that its scores do not say: judgements with a
/// negative relevance scored as non-relevant, and queries left out because their relevant
/// documents alone pass `max_docs`. One line per dataset concerned.
pub fn notes(report: &RetrievalReport) -> Vec<String> {
    let negative = report
        .datasets
        .iter()
        .filter(|d| d.negative_judgements > 0)
        .map(|d| {
            format!(
                "{}: {} judgements with a negative relevance were scored as judged \
                 non-relevant (0), as trec_eval does",
                d.dataset, d.negative_judgements
            )
        });
    let over_budget = report
        .datasets
        .iter()
        .filter(|d| d.queries_over_document_budget > 0)
        .map(|d| {
            format!(
                "{}: {} drawn queries left out, {} kept: their relevant documents alone would \
                 pass max_docs (raise it to rank them)",
                d.dataset, d.queries_over_document_budget, d.queries
            )
        });
    negative.chain(over_budget).collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use sage_data::{BeirDocument, BeirQuery};
    use sage_metrics::Metric;

    use super::*;

    struct Constant;

    impl Similarity for Constant {
        fn name(&self) -> &str {
            "constant"
        }
        fn score(&self, _: &str, _: &str) -> sage_core::Result<f32> {
            Ok(0.3)
        }
    }

    /// Six documents d1..d6; query q1 is about d6, q2 about d1, q3 about nothing in the corpus.
    fn tiny() -> Beir {
        let corpus = (1..=6)
            .map(|i| BeirDocument {
                id: format!("d{i}"),
                title: String::new(),
                text: format!("document number {i} is about topic {i}. It has two sentences."),
            })
            .collect();
        let queries = ["q1", "q2", "q3"]
            .iter()
            .map(|q| BeirQuery {
                id: q.to_string(),
                text: format!("query {q}"),
            })
            .collect();
        let qrels: BTreeMap<String, BTreeMap<String, i32>> =
            [("q1", "d6", 1), ("q2", "d1", 1), ("q3", "d2", 0)]
                .iter()
                .map(|(q, d, r)| (q.to_string(), [(d.to_string(), *r)].into()))
                .collect();
        Beir::from_parts("tiny", "test", corpus, queries, qrels)
    }

    fn run(mode: Mode, pair_budget: usize) -> DatasetReport {
        let options = Options {
            mode,
            pair_budget,
            ..Options::default()
        };
        evaluate_dataset(&Constant, &tiny(), &options, &mut Timings::default()).unwrap()
    }

    /// NFCorpus-like judgements: every query has many relevant documents, so `max_docs` bounds
    /// the queries as well as the distractors.
    #[test]
    fn max_docs_bounds_the_corpus_even_when_queries_judge_many_documents() {
        let corpus: Vec<BeirDocument> = (0..40)
            .map(|i| BeirDocument {
                id: format!("d{i}"),
                title: String::new(),
                text: format!("document {i}"),
            })
            .collect();
        let queries: Vec<BeirQuery> = (0..5)
            .map(|q| BeirQuery {
                id: format!("q{q}"),
                text: format!("query {q}"),
            })
            .collect();
        // query q judges documents 8q..8q+7 relevant: 8 each, 40 in all
        let qrels: BTreeMap<String, BTreeMap<String, i32>> = (0..5)
            .map(|q| {
                let docs = (8 * q..8 * q + 8).map(|d| (format!("d{d}"), 1)).collect();
                (format!("q{q}"), docs)
            })
            .collect();
        let beir = Beir::from_parts("many", "test", corpus, queries, qrels);
        let sampling = |max_docs| Sampling {
            max_docs,
            max_queries: None,
            seed: RunSeed(7),
        };
        let bounded = plan(&beir, sampling(Some(20)));
        // two queries' 16 documents fit in 20; a third's would make 24
        assert_eq!(bounded.kept.len(), 2);
        assert_eq!(bounded.queries_over_document_budget, 3);
        assert_eq!(bounded.positions.len(), 20);
        // a budget the relevant documents fit in keeps every query, as before
        let roomy = plan(&beir, sampling(Some(39)));
        assert_eq!(roomy.kept.len(), 4);
        let whole = plan(&beir, sampling(None));
        assert_eq!(whole.kept, [0, 1, 2, 3, 4]);
        assert_eq!(whole.queries_over_document_budget, 0);
        assert_eq!(whole.positions.len(), 40);
        // one query alone past the budget is still ranked (against its relevant documents)
        let tight = plan(&beir, sampling(Some(3)));
        assert_eq!(tight.kept.len(), 1);
        assert_eq!(tight.positions.len(), 8);
        // the report counts the left-out queries
        let options = Options {
            max_docs: Some(20),
            ..Options::default()
        };
        let report = evaluate_dataset(&Constant, &beir, &options, &mut Timings::default()).unwrap();
        assert_eq!(report.queries, 2);
        assert_eq!(report.queries_over_document_budget, 3);
        assert_eq!(report.corpus_used, 20);
    }

    #[test]
    fn ties_follow_trec_eval_by_hand() {
        // every score ties, so the order is by id descending: d6 .. d1. q1 finds d6 at rank 1
        // (NDCG 1), q2 finds d1 at rank 6 (1 / log2(7)); q3 has no relevant document: excluded.
        let r = run(Mode::Distractor, 1 << 20);
        let clean = (1.0 + 1.0 / 7f64.log2()) / 2.0;
        assert_eq!(r.queries, 2);
        assert_eq!(r.queries_without_relevant, 1);
        assert!((r.ndcg_clean - clean).abs() < 1e-12, "{}", r.ndcg_clean);
        // with copies "d6~k" > "d6" > "d5~k" > ...: d6 drops to rank 2, d1 to rank 12 (> 10)
        let distracted = (1.0 / 3f64.log2()) / 2.0;
        for t in &r.retentions {
            assert!((t.ndcg_at_10 - distracted).abs() < 1e-12, "{t:?}");
            assert!((t.retention - distracted / clean).abs() < 1e-12);
        }
        assert_eq!(r.retentions.len(), 18);
        assert!((r.score - distracted / clean).abs() < 1e-12);
    }

    #[test]
    fn replace_mode_keeps_ids_and_chunking_changes_nothing() {
        let r = run(Mode::Replace, 1 << 20);
        assert!(r
            .retentions
            .iter()
            .all(|t| (t.retention - 1.0).abs() < 1e-12));
        // one pair per batch: chunks of one document
        assert_eq!(run(Mode::Distractor, 1), run(Mode::Distractor, 1 << 20));
    }

    #[test]
    fn chunked_ranking_equals_one_batch_for_a_real_metric() {
        let beir = tiny();
        let report = |budget| {
            let options = Options {
                pair_budget: budget,
                ..Options::default()
            };
            evaluate_dataset(
                Metric::BM25.similarity().as_ref(),
                &beir,
                &options,
                &mut Timings::default(),
            )
            .unwrap()
        };
        assert_eq!(report(2), report(1 << 20));
    }

    #[test]
    fn fixture_run_is_byte_identical_across_runs() {
        let root = sage_testkit::fixtures();
        let run = || {
            let mut r = evaluate(
                Metric::JACCARD.similarity().as_ref(),
                &root,
                &[("scifact", "test")],
                Options::default(),
            )
            .unwrap();
            r.timings = Timings::default();
            serde_json::to_vec(&r).unwrap()
        };
        assert_eq!(run(), run());
    }

    /// Task 5 on SciFact and NFCorpus, 40 queries against 300 documents (every relevant one
    /// kept), for the four classical metrics; all-MiniLM-L6-v2 on 5 SciFact queries against 20
    /// documents (CI sets SAGE_DATA_DIR and SAGE_MODELS_DIR).
    #[test]
    fn real_corpora() {
        // a transformer embeds every perturbed copy (19 per document) on 2 CPU cores: kept small
        let Some((root, runs)) =
            sage_testkit::real_runs(module_path!(), 300, &[("all-MiniLM-L6-v2", 20)])
        else {
            return;
        };
        for (similarity, docs) in &runs {
            let options = Options {
                max_docs: Some(*docs),
                max_queries: Some(if *docs < 300 { 5 } else { 40 }),
                ..Options::default()
            };
            // NFCorpus's queries judge ~40 documents each, so max_docs keeps the queries whose
            // relevant documents fit: SciFact only for the transformer, whose cost is every
            // perturbed copy of every kept document
            let datasets: &[(&str, &str)] = if *docs < 300 {
                &[("scifact", "test")]
            } else {
                &DEFAULT_DATASETS
            };
            let r = evaluate(similarity.as_ref(), &root, datasets, options).unwrap();
            for d in &r.datasets {
                assert!(d.corpus_used >= *docs.min(&d.corpus_total));
                // Levenshtein's ratio ranks a short query against long documents by length as
                // much as by words: on the 40 SciFact queries seed 1337 draws, no relevant
                // document reaches a top 10
                if r.similarity == "levenshtein" {
                    assert!((0.0..=1.0).contains(&d.ndcg_clean), "{d:?}");
                } else {
                    assert!(d.ndcg_clean > 0.0, "{d:?}");
                }
            }
            eprintln!(
                "{:<18} retrieval {:.3} | {} | {:.1} s",
                r.similarity,
                r.score,
                r.datasets
                    .iter()
                    .map(|d| format!(
                        "{} clean {:.3} score {:.3} min {:.3}",
                        d.dataset,
                        d.ndcg_clean,
                        d.score,
                        d.retentions
                            .iter()
                            .map(|t| t.retention)
                            .fold(f64::INFINITY, f64::min)
                    ))
                    .collect::<Vec<_>>()
                    .join(" | "),
                r.timings.total_seconds()
            );
        }
    }
}
