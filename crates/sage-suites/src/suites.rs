//! The registered suites: each reads its options and calls its crate.

use std::path::PathBuf;
use std::sync::Arc;

use evalrank::{Level, ListSource, PostProcess};
use sage_core::{CostHint, VectorSimilarity};
use sage_data::DatasetKind;
use sage_human_pref::Source;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::{
    as_refs, datasets_or_local_defaults, failed, options, report, Outcome, Request, Result,
    Subject, Suite, SuiteError,
};

/// A SAGE task over documents: its crate's `Options` read from the request (the request's seed put
/// in by `seed`), its datasets or the local defaults, and its crate's `evaluate`.
fn document_task<O, R, E>(
    suite: &'static str,
    kinds: &[DatasetKind],
    subject: &Subject,
    request: &Request,
    defaults: &[(&'static str, &'static str)],
    seed: impl FnOnce(&mut O, sage_core::RunSeed),
    evaluate: impl FnOnce(
        &dyn sage_core::Similarity,
        &sage_data::DataRoot,
        &[(&str, &str)],
        O,
    ) -> std::result::Result<R, E>,
) -> Result<Outcome>
where
    O: serde::de::DeserializeOwned + sage_core::CheckOptions,
    R: serde::Serialize,
    E: std::error::Error + Send + Sync + 'static,
{
    let mut o: O = options(suite, &request.options)?;
    seed(&mut o, request.seed);
    let mut notes = Vec::new();
    let datasets = datasets_or_local_defaults(suite, kinds, request, defaults, &mut notes)?;
    let similarity = subject.similarity();
    let r = evaluate(similarity.as_ref(), request.root, &as_refs(&datasets), o)
        .map_err(failed(suite))?;
    Ok(Outcome {
        report: report(suite, &r)?,
        notes,
    })
}

/// The five SAGE tasks write `sage/<task>.json`: the report's SAGE table reads that folder.
fn sage_task_location(task: &'static str) -> (&'static str, String) {
    ("sage", task.to_owned())
}

/// A SAGE task's cost hint. Measured on the 2-core development CPU, 2026-11-24: a metric's
/// seconds are the mean of the four classical metrics' job times in one default bench-all; the
/// model's are all-MiniLM-L6-v2's job times in a default run the same day, taken while the
/// machine also compiled (about twice an idle machine's; the ratios hold; retrieval was stopped
/// at 2,200 s unfinished). `--quick`'s 30 rows, 2 clustering subsets of 200 texts and 60
/// retrieval documents are 1/25 to 1/100 of the defaults: 0.02.
fn sage_task_cost(task: &'static str, metric_seconds: f64, model_seconds: f64) -> CostHint {
    CostHint {
        task: task.into(),
        metric_seconds,
        model_seconds,
        quick_share: 0.02,
    }
}

pub(crate) fn names(datasets: &[(&str, &str)]) -> Vec<String> {
    datasets.iter().map(|(n, s)| format!("{n}/{s}")).collect()
}

/// SAGE task 1, human-preference alignment ([`sage_human_pref`]). Options: `max_rows`, `margin`
/// (least mean-rating difference for two summaries to become a comparison; default per dataset:
/// SummEval 0.4, REALSumm 0.1, others 10% of the observed range).
pub struct HumanPref;

#[derive(Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct HumanPrefOptions {
    max_rows: Option<usize>,
    margin: Option<f64>,
}

impl sage_core::CheckOptions for HumanPrefOptions {
    fn check(&self) -> sage_core::Result<()> {
        sage_core::within_if_set("max_rows", self.max_rows, 1..=10_000_000)?;
        sage_core::within_if_set("margin", self.margin, 0.0..=f64::MAX)
    }
}

/// `summarize-from-feedback/<any>` names the two feedback tables; any other name a rating
/// dataset, with `margin` overriding its default.
fn human_pref_source(dataset: &str, split: &str, margin: Option<f64>) -> Source {
    let default_margin = match dataset {
        "summarize-from-feedback" => return Source::summarize_from_feedback(),
        "summeval" => Some(0.4),
        "realsumm" => Some(0.1),
        _ => None,
    };
    Source::Ratings {
        dataset: dataset.to_owned(),
        split: split.to_owned(),
        margin: margin.or(default_margin),
    }
}

impl Suite for HumanPref {
    fn check_options(&self, options: &Map<String, Value>) -> Result<()> {
        crate::options::<HumanPrefOptions>(self.name(), options).map(drop)
    }
    fn kinds(&self) -> &'static [DatasetKind] {
        &[DatasetKind::SummaryRatings, DatasetKind::SummaryAxisRatings]
    }
    fn result_location(&self, _options: &Map<String, Value>) -> (&'static str, String) {
        sage_task_location(self.name())
    }
    fn cost_hints(&self) -> Vec<CostHint> {
        vec![sage_task_cost(self.name(), 0.7, 8e+01)]
    }
    fn name(&self) -> &'static str {
        "human-pref"
    }
    fn summary(&self) -> &'static str {
        "SAGE task 1: agreement with human preferences and ratings of summaries"
    }
    fn default_datasets(&self) -> Vec<String> {
        vec![
            "summarize-from-feedback/validation".into(),
            "summeval/ratings".into(),
            "realsumm/ratings".into(),
        ]
    }
    fn run(&self, subject: &Subject, request: &Request) -> Result<Outcome> {
        let suite = self.name();
        let o: HumanPrefOptions = options(suite, &request.options)?;
        let sources: Vec<Source> = if request.datasets.is_empty() {
            let sources = Source::available(request.root);
            if sources.is_empty() {
                return Err(SuiteError::NoLocalData {
                    suite,
                    root: request.root.describe(),
                    missing: self.default_datasets(),
                });
            }
            sources
        } else {
            for (name, _) in &request.datasets {
                if name != "summarize-from-feedback" {
                    crate::check_kind(suite, self.kinds(), request.root, name)?;
                }
            }
            request
                .datasets
                .iter()
                .map(|(d, s)| human_pref_source(d, s, o.margin))
                .collect()
        };
        let similarity = subject.similarity();
        let r = sage_human_pref::evaluate(
            similarity.as_ref(),
            request.root,
            &sources,
            o.max_rows,
            request.seed,
        )
        .map_err(failed(suite))?;
        Ok(Outcome {
            report: report(suite, &r)?,
            notes: Vec::new(),
        })
    }
}

/// SAGE task 2, transformation robustness ([`sage_robustness`]); options:
/// [`sage_robustness::Options`].
pub struct Robustness;

impl Suite for Robustness {
    fn check_options(&self, options: &Map<String, Value>) -> Result<()> {
        crate::options::<sage_robustness::Options>(self.name(), options).map(drop)
    }
    fn kinds(&self) -> &'static [DatasetKind] {
        &[DatasetKind::DocumentSummary]
    }
    fn result_location(&self, _options: &Map<String, Value>) -> (&'static str, String) {
        sage_task_location(self.name())
    }
    fn cost_hints(&self) -> Vec<CostHint> {
        vec![sage_task_cost(self.name(), 3.2, 3e+02)]
    }
    fn name(&self) -> &'static str {
        "robustness"
    }
    fn summary(&self) -> &'static str {
        "SAGE task 2: superficial > summary > semantic perturbations of documents"
    }
    fn default_datasets(&self) -> Vec<String> {
        names(&sage_robustness::DEFAULT_DATASETS)
    }
    fn run(&self, subject: &Subject, request: &Request) -> Result<Outcome> {
        document_task(
            self.name(),
            self.kinds(),
            subject,
            request,
            &sage_robustness::DEFAULT_DATASETS,
            |o: &mut sage_robustness::Options, seed| o.seed = seed,
            sage_robustness::evaluate,
        )
    }
}

/// SAGE task 3, information sensitivity ([`sage_sensitivity`]); options:
/// [`sage_sensitivity::Options`] (`truncate_tokens: null` keeps whole documents).
pub struct Sensitivity;

impl Suite for Sensitivity {
    fn check_options(&self, options: &Map<String, Value>) -> Result<()> {
        crate::options::<sage_sensitivity::Options>(self.name(), options).map(drop)
    }
    fn kinds(&self) -> &'static [DatasetKind] {
        &[
            DatasetKind::Documents,
            DatasetKind::DocumentSummary,
            DatasetKind::Beir,
        ]
    }
    fn result_location(&self, _options: &Map<String, Value>) -> (&'static str, String) {
        sage_task_location(self.name())
    }
    fn cost_hints(&self) -> Vec<CostHint> {
        vec![sage_task_cost(self.name(), 1.0, 1e+03)]
    }
    fn name(&self) -> &'static str {
        "sensitivity"
    }
    fn summary(&self) -> &'static str {
        "SAGE task 3: similarity against the expected degradation of needle insertion and token removal"
    }
    fn default_datasets(&self) -> Vec<String> {
        names(&sage_sensitivity::DEFAULT_DATASETS)
    }
    fn run(&self, subject: &Subject, request: &Request) -> Result<Outcome> {
        document_task(
            self.name(),
            self.kinds(),
            subject,
            request,
            &sage_sensitivity::DEFAULT_DATASETS,
            |o: &mut sage_sensitivity::Options, seed| o.seed = seed,
            sage_sensitivity::evaluate,
        )
    }
}

/// SAGE task 4, clustering ([`sage_cluster`]); options: [`sage_cluster::Options`].
pub struct Clustering;

impl Suite for Clustering {
    fn check_options(&self, options: &Map<String, Value>) -> Result<()> {
        crate::options::<sage_cluster::Options>(self.name(), options).map(drop)
    }
    fn kinds(&self) -> &'static [DatasetKind] {
        &[DatasetKind::Clustering, DatasetKind::Classification]
    }
    fn result_location(&self, _options: &Map<String, Value>) -> (&'static str, String) {
        sage_task_location(self.name())
    }
    fn cost_hints(&self) -> Vec<CostHint> {
        vec![sage_task_cost(self.name(), 4.6, 2e+02)]
    }
    fn name(&self) -> &'static str {
        "clustering"
    }
    fn summary(&self) -> &'static str {
        "SAGE task 4: complete-linkage clustering of seeded subsets, V-measure"
    }
    fn default_datasets(&self) -> Vec<String> {
        names(&sage_cluster::DEFAULT_DATASETS)
    }
    fn run(&self, subject: &Subject, request: &Request) -> Result<Outcome> {
        document_task(
            self.name(),
            self.kinds(),
            subject,
            request,
            &sage_cluster::DEFAULT_DATASETS,
            |o: &mut sage_cluster::Options, seed| o.seed = seed,
            sage_cluster::evaluate,
        )
    }
}

/// SAGE task 5, retrieval robustness ([`sage_retrieval`]); options: [`sage_retrieval::Options`]
/// (`mode`: `distractor` or `replace`).
pub struct Retrieval;

impl Suite for Retrieval {
    fn check_options(&self, options: &Map<String, Value>) -> Result<()> {
        crate::options::<sage_retrieval::Options>(self.name(), options).map(drop)
    }
    fn kinds(&self) -> &'static [DatasetKind] {
        &[DatasetKind::Beir]
    }
    fn result_location(&self, _options: &Map<String, Value>) -> (&'static str, String) {
        sage_task_location(self.name())
    }
    fn cost_hints(&self) -> Vec<CostHint> {
        vec![sage_task_cost(self.name(), 4.5, 2e+03)]
    }
    fn name(&self) -> &'static str {
        "retrieval"
    }
    fn summary(&self) -> &'static str {
        "SAGE task 5: NDCG@10 retention on perturbed copies of BEIR corpora"
    }
    fn default_datasets(&self) -> Vec<String> {
        names(&sage_retrieval::DEFAULT_DATASETS)
    }
    fn run(&self, subject: &Subject, request: &Request) -> Result<Outcome> {
        let mut negative = Vec::new();
        let mut over_budget = Vec::new();
        let mut outcome = document_task(
            self.name(),
            self.kinds(),
            subject,
            request,
            &sage_retrieval::DEFAULT_DATASETS,
            |o: &mut sage_retrieval::Options, seed| o.seed = seed,
            |similarity, root, datasets, options| {
                let report = sage_retrieval::evaluate(similarity, root, datasets, options)?;
                negative = report
                    .datasets
                    .iter()
                    .filter(|d| d.negative_judgements > 0)
                    .map(|d| (d.dataset.clone(), d.negative_judgements))
                    .collect();
                over_budget = report
                    .datasets
                    .iter()
                    .filter(|d| d.queries_over_document_budget > 0)
                    .map(|d| (d.dataset.clone(), d.queries_over_document_budget, d.queries))
                    .collect();
                Ok::<_, sage_retrieval::RetrievalError>(report)
            },
        )?;
        outcome
            .notes
            .extend(negative.into_iter().map(|(dataset, n)| {
                format!(
                    "{dataset}: {n} judgements with a negative relevance were scored as judged \
                 non-relevant (0), as trec_eval does"
                )
            }));
        outcome
            .notes
            .extend(over_budget.into_iter().map(|(dataset, left, kept)| {
                format!(
                    "{dataset}: {left} drawn queries left out, {kept} kept: their relevant \
                     documents alone would pass max_docs (raise it to rank them)"
                )
            }));
        Ok(outcome)
    }
}

/// Production noise ([`sage_noise`]): retention curves of retrieval (noisy queries), STS and
/// pair classification (noisy second sentence), classification and clustering (noisy texts)
/// under the twelve noise channels and filler padding. Options: [`sage_noise::Options`], the one schema (checked before any work).
pub struct Noise;

impl Suite for Noise {
    fn check_options(&self, options: &Map<String, Value>) -> Result<()> {
        crate::options::<sage_noise::Options>(self.name(), options).map(drop)
    }
    fn kinds(&self) -> &'static [DatasetKind] {
        &[
            DatasetKind::Beir,
            DatasetKind::StsPairs,
            DatasetKind::PairClassification,
            DatasetKind::ParaphrasePairs,
            DatasetKind::Classification,
            DatasetKind::Clustering,
        ]
    }
    fn name(&self) -> &'static str {
        "noise"
    }
    fn summary(&self) -> &'static str {
        "Production noise: retention curves of NDCG@10 / Spearman / AP / accuracy / V-measure \
         under typos, OCR, casing, boilerplate, truncation and length, with paired bootstrap \
         intervals"
    }
    fn default_datasets(&self) -> Vec<String> {
        names(&sage_noise::DEFAULT_DATASETS)
    }
    fn run(&self, subject: &Subject, request: &Request) -> Result<Outcome> {
        let mut o: sage_noise::Options = options(self.name(), &request.options)?;
        o.seed = request.seed;
        o.check().map_err(failed(self.name()))?;
        let mut notes = Vec::new();
        let datasets = datasets_or_local_defaults(
            self.name(),
            self.kinds(),
            request,
            &sage_noise::DEFAULT_DATASETS,
            &mut notes,
        )?;
        let similarity = subject.similarity();
        let scorer = sage_noise::Scorer {
            similarity: similarity.as_ref(),
            embedder: match subject {
                Subject::Model(model) => Some(model.as_ref()),
                Subject::Metric(_) => None,
            },
        };
        let r = sage_noise::evaluate(scorer, request.root, &as_refs(&datasets), o)
            .map_err(failed(self.name()))?;
        Ok(Outcome {
            report: report(self.name(), &r)?,
            notes,
        })
    }
}

/// ALIGN-SIM's five criteria ([`align_sim`]). Options: `max_rows` (rows sampled per dataset,
/// default 1,750), `wordnet` (the WordNet 3.0 dict folder; default `wordnet/dict` under the data
/// root).
pub struct AlignSim;

const ALIGN_SIM_DATASETS: [(&str, &str); 2] = [("mrpc", "test"), ("paws-wiki", "test")];

#[derive(Deserialize)]
#[serde(default, deny_unknown_fields)]
struct AlignSimOptions {
    max_rows: usize,
    wordnet: Option<PathBuf>,
}

impl sage_core::CheckOptions for AlignSimOptions {
    fn check(&self) -> sage_core::Result<()> {
        sage_core::within("max_rows", self.max_rows, 1..=10_000_000)
    }
}

impl Default for AlignSimOptions {
    fn default() -> Self {
        AlignSimOptions {
            max_rows: 1750,
            wordnet: None,
        }
    }
}

impl Suite for AlignSim {
    fn check_options(&self, options: &Map<String, Value>) -> Result<()> {
        crate::options::<AlignSimOptions>(self.name(), options).map(drop)
    }
    fn kinds(&self) -> &'static [DatasetKind] {
        &[
            DatasetKind::ParaphrasePairs,
            DatasetKind::PairClassification,
        ]
    }
    fn name(&self) -> &'static str {
        "align-sim"
    }
    fn summary(&self) -> &'static str {
        "ALIGN-SIM: paraphrase, synonym, antonym, negation and jumbling criteria"
    }
    fn default_datasets(&self) -> Vec<String> {
        names(&ALIGN_SIM_DATASETS)
    }
    fn result_location(&self, _options: &Map<String, Value>) -> (&'static str, String) {
        ("align-sim", "criteria".to_owned())
    }
    /// all-MiniLM-L6-v2's `sage run align-sim --max-rows 1750` alone, idle machine
    /// (2026-11-24); a metric's from a default bench-all the same day. Quick: 60 of 1,750 rows.
    fn cost_hints(&self) -> Vec<CostHint> {
        vec![CostHint {
            task: "criteria".into(),
            metric_seconds: 1.6,
            model_seconds: 89.0,
            quick_share: 60.0 / 1750.0,
        }]
    }
    fn run(&self, subject: &Subject, request: &Request) -> Result<Outcome> {
        let suite = self.name();
        let o: AlignSimOptions = options(suite, &request.options)?;
        let wordnet_dir = match (o.wordnet, request.root.root()) {
            (Some(dir), _) => dir,
            (None, Some(root)) => root.join("wordnet/dict"),
            (None, None) => {
                return Err(SuiteError::Options {
                    suite,
                    message: "the synonym and antonym criteria need WordNet 3.0: give \
                              wordnet=<dict folder> (--wordnet) or a data directory that has \
                              wordnet/dict"
                        .into(),
                })
            }
        };
        let wordnet = sage_perturb::WordNet::open(wordnet_dir).map_err(failed(suite))?;
        let mut notes = Vec::new();
        let datasets = datasets_or_local_defaults(
            suite,
            self.kinds(),
            request,
            &ALIGN_SIM_DATASETS,
            &mut notes,
        )?;
        let similarity = subject.similarity();
        let r = align_sim::evaluate(
            similarity.as_ref(),
            request.root,
            Arc::new(wordnet),
            &as_refs(&datasets),
            Some(o.max_rows),
            request.seed,
        )
        .map_err(failed(suite))?;
        Ok(Outcome {
            report: report(suite, &r)?,
            notes,
        })
    }
}

/// EvalRank ([`evalrank`]): positive pairs ranked against a background set. Options: `level`
/// (`word` or `sentence`, required), `similarity` (`cosine` or `l2`), `lists` (`shipped` or
/// `constructed`), `post` (`none`, `whitening` or `abtt`), `abtt_k` (default 2). Without
/// datasets the level names its lists; with datasets (text pairs, STS pairs, vocabularies: the
/// user's own) those make the lists ([`evalrank::run_on_datasets`]). No seed: nothing is sampled.
pub struct EvalRank;

#[derive(Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
enum PostName {
    #[default]
    None,
    Whitening,
    Abtt,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EvalRankOptions {
    level: Level,
    #[serde(default)]
    similarity: VectorSimilarity,
    #[serde(default)]
    lists: ListSource,
    #[serde(default)]
    post: PostName,
    #[serde(default = "default_abtt_k")]
    abtt_k: usize,
}

impl sage_core::CheckOptions for EvalRankOptions {
    fn check(&self) -> sage_core::Result<()> {
        sage_core::within("abtt_k", self.abtt_k, 1..=1_000)
    }
}

impl EvalRank {
    /// Principal components `post: abtt` removes when `abtt_k` is not given (the EvalRank
    /// authors' setting); `sage run evalrank --abtt-k` defaults to it.
    pub const DEFAULT_ABTT_K: usize = 2;
}

fn default_abtt_k() -> usize {
    EvalRank::DEFAULT_ABTT_K
}

impl Suite for EvalRank {
    fn check_options(&self, options: &Map<String, Value>) -> Result<()> {
        crate::options::<EvalRankOptions>(self.name(), options).map(drop)
    }
    fn kinds(&self) -> &'static [DatasetKind] {
        &[
            DatasetKind::TextPairs,
            DatasetKind::StsPairs,
            DatasetKind::Vocabulary,
        ]
    }
    fn name(&self) -> &'static str {
        "evalrank"
    }
    fn summary(&self) -> &'static str {
        "EvalRank: MRR and Hits@k of positive pairs against a background set"
    }
    fn default_datasets(&self) -> Vec<String> {
        Vec::new()
    }
    fn takes_metrics(&self) -> bool {
        false
    }
    fn result_location(&self, options: &Map<String, Value>) -> (&'static str, String) {
        // one file per level, as bench-all's evalrank/word and evalrank/sentence
        let level = options
            .get("level")
            .and_then(Value::as_str)
            .unwrap_or("level");
        ("evalrank", level.to_owned())
    }
    /// all-MiniLM-L6-v2's `sage run evalrank --level word` and `--level sentence` alone, idle
    /// machine (2026-11-24). A metric runs no EvalRank; `--quick` has no smaller lists.
    fn cost_hints(&self) -> Vec<CostHint> {
        [("word", 14.7), ("sentence", 71.6)]
            .into_iter()
            .map(|(level, model_seconds)| CostHint {
                task: level.into(),
                metric_seconds: 0.0,
                model_seconds,
                quick_share: 1.0,
            })
            .collect()
    }
    fn run(&self, subject: &Subject, request: &Request) -> Result<Outcome> {
        let suite = self.name();
        let model = subject.model(suite)?;
        let o: EvalRankOptions = options(suite, &request.options)?;
        let post = match o.post {
            PostName::None => PostProcess::None,
            PostName::Whitening => PostProcess::Whitening,
            PostName::Abtt => PostProcess::Abtt { k: o.abtt_k },
        };
        let r = if request.datasets.is_empty() {
            evalrank::run(
                request.root,
                model.as_ref(),
                o.level,
                o.lists,
                o.similarity,
                post,
            )
        } else {
            // the user's positive pairs and background instead of the level's lists
            for (name, _) in &request.datasets {
                crate::check_kind(suite, self.kinds(), request.root, name)?;
            }
            evalrank::run_on_datasets(
                request.root,
                model.as_ref(),
                o.level,
                &as_refs(&request.datasets),
                o.similarity,
                post,
            )
        }
        .map_err(failed(suite))?;
        Ok(Outcome {
            report: report(suite, &r)?,
            notes: Vec::new(),
        })
    }
}

/// What a similarity costs to run on this host ([`sage_throughput`]): texts and tokens per second
/// at three lengths, latency, load time, memory, and an API model's bill for the sample. Options:
/// those of [`sage_throughput::Options`].
pub struct Throughput;

impl Suite for Throughput {
    fn check_options(&self, options: &Map<String, Value>) -> Result<()> {
        crate::options::<sage_throughput::Options>(self.name(), options).map(drop)
    }
    fn name(&self) -> &'static str {
        "throughput"
    }
    fn summary(&self) -> &'static str {
        "Cost on this host: texts and tokens per second at short, ~128-token and window-length \
         inputs, single-text latency p50/p95, load time, peak memory; pairs per second for a \
         metric; requests, tokens and USD for an API model's bounded sample"
    }
    fn default_datasets(&self) -> Vec<String> {
        names(&sage_throughput::DEFAULT_DATASETS)
    }
    fn kinds(&self) -> &'static [DatasetKind] {
        &sage_throughput::KINDS
    }
    fn run(&self, subject: &Subject, request: &Request) -> Result<Outcome> {
        let mut o: sage_throughput::Options = options(self.name(), &request.options)?;
        o.seed = request.seed;
        let mut notes = Vec::new();
        let datasets = datasets_or_local_defaults(
            self.name(),
            self.kinds(),
            request,
            &sage_throughput::DEFAULT_DATASETS,
            &mut notes,
        )?;
        let (pool, rows) = sage_throughput::pool(request.root, &as_refs(&datasets), &o)
            .map_err(failed(self.name()))?;
        let r = match subject {
            Subject::Model(model) => {
                sage_throughput::measure_model(model.as_ref(), &pool, rows, &o)
            }
            Subject::Metric(metric) => {
                sage_throughput::measure_metric(metric.similarity().as_ref(), &pool, rows, &o)
            }
        }
        .map_err(failed(self.name()))?;
        let given: Vec<_> = r.lengths.iter().map(|l| l.length).collect();
        for length in [
            sage_throughput::Length::Short,
            sage_throughput::Length::Medium,
            sage_throughput::Length::Window,
        ] {
            if !given.contains(&length) {
                notes.push(format!(
                    "no {} texts: the datasets hold none of that length, and too few shorter \
                     ones to join into one",
                    length.name()
                ));
            }
        }
        Ok(Outcome {
            report: report(self.name(), &r)?,
            notes,
        })
    }
}
