//! The registered suites: each reads its options and calls its crate.

use std::sync::Arc;

use sage_core::{CostHint, RunSeed, Similarity};
use sage_data::{DataRoot, DatasetKind};
use sage_human_pref::Source;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::{
    as_refs, datasets_or_local_defaults, failed, options, Outcome, Request, Result, Subject, Suite,
    SuiteError,
};

/// The five SAGE tasks write `sage/<task>.json`: the report's SAGE table reads that folder.
fn sage_task_location(task: &'static str) -> (&'static str, String) {
    ("sage", task.to_owned())
}

/// A SAGE task's cost hint. Measured on the 2-core development CPU, 2026-11-24: a metric's
/// seconds are the mean of the four classical metrics' job times in one default bench-all; the
/// model's are all-MiniLM-L6-v2's job times in a default run the same day, taken while the
/// machine also compiled (about twice an idle machine's; the ratios hold; retrieval was stopped
/// at 2,200 s unfinished). `--quick`'s 15 to 30 rows, 2 clustering subsets of 200 texts and 40
/// retrieval documents of one corpus are 1/25 to 1/100 of the defaults: 0.02.
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

/// SAGE task 1, human-preference alignment ([`sage_human_pref`]); options:
/// [`sage_human_pref::Options`].
pub struct HumanPref;

impl Suite for HumanPref {
    fn options(&self) -> Vec<sage_core::OptionInfo> {
        sage_core::describe::<sage_human_pref::Options>()
    }
    fn check_options(&self, options: &Map<String, Value>) -> Result<()> {
        crate::options::<sage_human_pref::Options>(self.name(), options).map(drop)
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
    fn reference_datasets(&self) -> Vec<String> {
        // the paper's two tables behind `summarize-from-feedback`, and the rated summaries'
        // documents
        [
            "summarize-from-feedback-comparisons/validation",
            "summarize-from-feedback-axis/validation",
            "summeval-docs/docs",
            "realsumm-docs/docs",
        ]
        .map(String::from)
        .to_vec()
    }
    fn run(&self, subject: &Subject, request: &Request) -> Result<Outcome> {
        let suite = self.name();
        let o: sage_human_pref::Options = options(suite, &request.options)?;
        let sources: Vec<Source> = if request.datasets.is_empty() {
            let sources = Source::available(request.root);
            if sources.is_empty() {
                return Err(SuiteError::NoLocalData {
                    suite,
                    root: request.root.describe(),
                    missing: self.default_datasets(),
                    names: vec![
                        "summeval".into(),
                        "summeval-docs".into(),
                        "realsumm".into(),
                        "realsumm-docs".into(),
                    ],
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
                .map(|(d, s)| Source::named(d, s, o.margin))
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
        Outcome::of(suite, &r, Vec::new())
    }
}

/// A SAGE task over documents, described by the values its crate exports: the registry holds one
/// per task ([`ROBUSTNESS`], [`SENSITIVITY`], [`CLUSTERING`], [`RETRIEVAL`]). Its options are the
/// crate's `Options` (the request's seed put in by `set_seed`), its datasets those named or the
/// local defaults, and its report the crate's `evaluate` returns, with the notes `notes` reads
/// from it.
pub struct DocumentTask<O, R, E> {
    name: &'static str,
    summary: &'static str,
    kinds: &'static [DatasetKind],
    default_datasets: &'static [(&'static str, &'static str)],
    /// Seconds of a default job on the reference host: a classical metric's, then the reference
    /// model's (see [`sage_task_cost`]).
    cost: (f64, f64),
    set_seed: fn(&mut O, RunSeed),
    evaluate: Evaluate<O, R, E>,
    notes: fn(&R) -> Vec<String>,
}

/// A SAGE task crate's `evaluate`: a similarity on datasets (registry name, split) of a root.
type Evaluate<O, R, E> =
    fn(&dyn Similarity, &DataRoot, &[(&str, &str)], O) -> std::result::Result<R, E>;

fn no_notes<R>(_: &R) -> Vec<String> {
    Vec::new()
}

impl<O, R, E> Suite for DocumentTask<O, R, E>
where
    O: DeserializeOwned + sage_core::SuiteOptions + sage_core::CheckOptions,
    R: sage_core::SuiteReport,
    E: std::error::Error + Send + Sync + 'static,
{
    fn options(&self) -> Vec<sage_core::OptionInfo> {
        sage_core::describe::<O>()
    }
    fn check_options(&self, options: &Map<String, Value>) -> Result<()> {
        crate::options::<O>(self.name, options).map(drop)
    }
    fn kinds(&self) -> &'static [DatasetKind] {
        self.kinds
    }
    fn result_location(&self, _options: &Map<String, Value>) -> (&'static str, String) {
        sage_task_location(self.name)
    }
    fn cost_hints(&self) -> Vec<CostHint> {
        vec![sage_task_cost(self.name, self.cost.0, self.cost.1)]
    }
    fn name(&self) -> &'static str {
        self.name
    }
    fn summary(&self) -> &'static str {
        self.summary
    }
    fn default_datasets(&self) -> Vec<String> {
        names(self.default_datasets)
    }
    fn run(&self, subject: &Subject, request: &Request) -> Result<Outcome> {
        let suite = self.name;
        let mut options: O = crate::options(suite, &request.options)?;
        (self.set_seed)(&mut options, request.seed);
        let mut notes = Vec::new();
        let datasets = datasets_or_local_defaults(
            suite,
            self.kinds,
            request,
            self.default_datasets,
            &mut notes,
        )?;
        let similarity = subject.similarity();
        let r = (self.evaluate)(
            similarity.as_ref(),
            request.root,
            &as_refs(&datasets),
            options,
        )
        .map_err(failed(suite))?;
        notes.extend((self.notes)(&r));
        Outcome::of(suite, &r, notes)
    }
}

/// SAGE task 2, transformation robustness ([`sage_robustness`]); options:
/// [`sage_robustness::Options`].
pub const ROBUSTNESS: DocumentTask<
    sage_robustness::Options,
    sage_robustness::RobustnessReport,
    sage_robustness::RobustnessError,
> = DocumentTask {
    name: "robustness",
    summary: "SAGE task 2: superficial > summary > semantic perturbations of documents",
    kinds: &[DatasetKind::DocumentSummary],
    default_datasets: &sage_robustness::DEFAULT_DATASETS,
    cost: (3.2, 3e+02),
    set_seed: |o, seed| o.seed = seed,
    evaluate: sage_robustness::evaluate,
    notes: no_notes,
};

/// SAGE task 3, information sensitivity ([`sage_sensitivity`]); options:
/// [`sage_sensitivity::Options`] (`truncate_tokens: null` keeps whole documents).
pub const SENSITIVITY: DocumentTask<
    sage_sensitivity::Options,
    sage_sensitivity::SensitivityReport,
    sage_sensitivity::SensitivityError,
> = DocumentTask {
    name: "sensitivity",
    summary: "SAGE task 3: similarity against the expected degradation of needle insertion and token removal",
    kinds: &[
        DatasetKind::Documents,
        DatasetKind::DocumentSummary,
        DatasetKind::Beir,
    ],
    default_datasets: &sage_sensitivity::DEFAULT_DATASETS,
    cost: (1.0, 1e+03),
    set_seed: |o, seed| o.seed = seed,
    evaluate: sage_sensitivity::evaluate,
    notes: no_notes,
};

/// SAGE task 4, clustering ([`sage_cluster`]); options: [`sage_cluster::Options`].
pub const CLUSTERING: DocumentTask<
    sage_cluster::Options,
    sage_cluster::ClusterReport,
    sage_cluster::ClusterError,
> = DocumentTask {
    name: "clustering",
    summary: "SAGE task 4: complete-linkage clustering of seeded subsets, V-measure",
    kinds: &[DatasetKind::Clustering, DatasetKind::Classification],
    default_datasets: &sage_cluster::DEFAULT_DATASETS,
    cost: (4.6, 2e+02),
    set_seed: |o, seed| o.seed = seed,
    evaluate: sage_cluster::evaluate,
    notes: no_notes,
};

/// SAGE task 5, retrieval robustness ([`sage_retrieval`]); options: [`sage_retrieval::Options`]
/// (`mode`: `distractor` or `replace`).
pub const RETRIEVAL: DocumentTask<
    sage_retrieval::Options,
    sage_retrieval::RetrievalReport,
    sage_retrieval::RetrievalError,
> = DocumentTask {
    name: "retrieval",
    summary: "SAGE task 5: NDCG@10 retention on perturbed copies of BEIR corpora",
    kinds: &[DatasetKind::Beir],
    default_datasets: &sage_retrieval::DEFAULT_DATASETS,
    cost: (4.5, 2e+03),
    set_seed: |o, seed| o.seed = seed,
    evaluate: sage_retrieval::evaluate,
    notes: sage_retrieval::notes,
};

/// Production noise ([`sage_noise`]): retention curves of retrieval (noisy queries), STS and
/// pair classification (noisy second sentence), classification and clustering (noisy texts)
/// under the twelve noise channels and filler padding. Options: [`sage_noise::Options`], the one schema (checked before any work).
pub struct Noise;

impl Suite for Noise {
    fn options(&self) -> Vec<sage_core::OptionInfo> {
        sage_core::describe::<sage_noise::Options>()
    }
    fn check_options(&self, options: &Map<String, Value>) -> Result<()> {
        crate::options::<sage_noise::Options>(self.name(), options).map(drop)
    }
    fn kinds(&self) -> &'static [DatasetKind] {
        &sage_noise::KINDS
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
        Outcome::of(self.name(), &r, notes)
    }
}

/// What a model keeps when its vectors are stored small ([`sage_compression`]): float16, int8
/// and binary (with and without rescoring) at every Matryoshka width, against float32, with
/// paired bootstrap intervals and bytes per vector. Options: [`sage_compression::Options`]. A
/// classical metric has no vectors: its run says so and has no score.
pub struct Compression;

impl Suite for Compression {
    fn options(&self) -> Vec<sage_core::OptionInfo> {
        sage_core::describe::<sage_compression::Options>()
    }
    fn check_options(&self, options: &Map<String, Value>) -> Result<()> {
        crate::options::<sage_compression::Options>(self.name(), options).map(drop)
    }
    fn kinds(&self) -> &'static [DatasetKind] {
        &sage_compression::KINDS
    }
    fn name(&self) -> &'static str {
        "compression"
    }
    fn summary(&self) -> &'static str {
        "Stored small: retention of NDCG@10 / Spearman / AP / accuracy / V-measure with vectors \
         stored as float16, int8, binary and rescored binary at each Matryoshka width, against \
         float32, with paired bootstrap intervals and bytes per vector"
    }
    fn default_datasets(&self) -> Vec<String> {
        names(&sage_compression::DEFAULT_DATASETS)
    }
    /// all-MiniLM-L6-v2's `sage run compression` with bench.toml's options, from a cold
    /// embedding cache, on the 2-core development CPU (2026-12-02; 183 s, a debug build while
    /// another build ran: an upper bound): the texts are embedded once, 160 s of it SciFact's
    /// 1,000 documents, and every point is arithmetic on their vectors (under 10 s). After the
    /// noise suite, whose samples are the same, the vectors come from the embedding cache. A
    /// metric's run reads nothing and writes its not-applicable report (0.016 s, the whole
    /// `sage run compression --similarity bm25` process).
    fn cost_hints(&self) -> Vec<CostHint> {
        vec![CostHint {
            task: self.name().into(),
            metric_seconds: 0.02,
            model_seconds: 183.0,
            quick_share: 0.05,
        }]
    }
    fn run(&self, subject: &Subject, request: &Request) -> Result<Outcome> {
        let suite = self.name();
        let mut o: sage_compression::Options = options(suite, &request.options)?;
        o.seed = request.seed;
        let similarity = subject.similarity();
        let model = match subject {
            Subject::Model(model) => model,
            Subject::Metric(_) => {
                let r = sage_compression::not_applicable(similarity.name(), o);
                let notes = r.notes.clone();
                return Outcome::of(suite, &r, notes);
            }
        };
        let mut notes = Vec::new();
        let datasets = datasets_or_local_defaults(
            suite,
            self.kinds(),
            request,
            &sage_compression::DEFAULT_DATASETS,
            &mut notes,
        )?;
        let r = sage_compression::evaluate(
            model.as_ref(),
            similarity.as_ref(),
            request.root,
            &as_refs(&datasets),
            o,
        )
        .map_err(failed(suite))?;
        notes.extend(r.notes.iter().cloned());
        Outcome::of(suite, &r, notes)
    }
}

/// Downstream transfer as SentEval measures it ([`sage_transfer`]): logistic regression on the
/// model's sentence vectors over EvalRank's ten SentEval tasks, accuracy with intervals.
/// Options: [`sage_transfer::Options`]. A classical metric has no vectors: its run says so and
/// has no score.
pub struct Transfer;

impl Suite for Transfer {
    fn options(&self) -> Vec<sage_core::OptionInfo> {
        sage_core::describe::<sage_transfer::Options>()
    }
    fn check_options(&self, options: &Map<String, Value>) -> Result<()> {
        crate::options::<sage_transfer::Options>(self.name(), options).map(drop)
    }
    fn kinds(&self) -> &'static [DatasetKind] {
        &sage_transfer::KINDS
    }
    fn name(&self) -> &'static str {
        "transfer"
    }
    fn summary(&self) -> &'static str {
        "SentEval transfer (EvalRank's downstream side): logistic-regression accuracy on the \
         model's vectors over SciCite, MR, CR, MPQA, SUBJ, SST-2, SST-5, TREC, MRPC and SICK-E, \
         SentEval's split schemes and grid, bootstrap intervals"
    }
    fn default_datasets(&self) -> Vec<String> {
        names(&sage_transfer::DEFAULT_TASKS)
    }
    /// all-MiniLM-L6-v2's `sage run transfer` on the 2-core development CPU (2026-12-06, AVX2
    /// EPYC, release build, idle): 97 s from the embedding cache, 82 s of it fitting the ten
    /// tasks' classifiers; 204 s with 93k of its 147k texts to embed (a cold cache adds about a
    /// minute more). A metric's run reads nothing and writes its not-applicable report.
    /// `--quick` (two tasks, 150 rows, 3 folds) is a few seconds, a twentieth; a metric's run
    /// costs the same either way, and its quick share keeps it above the listing's rounding.
    fn cost_hints(&self) -> Vec<CostHint> {
        vec![CostHint {
            task: self.name().into(),
            metric_seconds: 0.02,
            model_seconds: 270.0,
            quick_share: 0.05,
        }]
    }
    fn run(&self, subject: &Subject, request: &Request) -> Result<Outcome> {
        let suite = self.name();
        let mut o: sage_transfer::Options = options(suite, &request.options)?;
        o.seed = request.seed;
        let similarity = subject.similarity();
        let model = match subject {
            Subject::Model(model) => model,
            Subject::Metric(_) => {
                let r = sage_transfer::not_applicable(similarity.name(), o);
                let notes = r.notes.clone();
                return Outcome::of(suite, &r, notes);
            }
        };
        let mut notes = Vec::new();
        let tasks = datasets_or_local_defaults(
            suite,
            self.kinds(),
            request,
            &sage_transfer::DEFAULT_TASKS,
            &mut notes,
        )?;
        let r = sage_transfer::evaluate(
            model.as_ref(),
            similarity.name(),
            request.root,
            &as_refs(&tasks),
            o,
        )
        .map_err(failed(suite))?;
        notes.extend(r.notes.iter().cloned());
        Outcome::of(suite, &r, notes)
    }
}

/// ALIGN-SIM's five criteria ([`align_sim`]); options: [`align_sim::Options`].
pub struct AlignSim;

impl Suite for AlignSim {
    fn options(&self) -> Vec<sage_core::OptionInfo> {
        sage_core::describe::<align_sim::Options>()
    }
    fn check_options(&self, options: &Map<String, Value>) -> Result<()> {
        crate::options::<align_sim::Options>(self.name(), options).map(drop)
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
        names(&align_sim::DEFAULT_DATASETS)
    }
    fn reference_datasets(&self) -> Vec<String> {
        // the negation criterion's AFIN and the synonyms' and antonyms' WordNet
        vec!["afin/test".into(), "wordnet/all".into()]
    }
    fn result_location(&self, _options: &Map<String, Value>) -> (&'static str, String) {
        ("align-sim", "criteria".to_owned())
    }
    /// all-MiniLM-L6-v2's `sage run align-sim --max-rows 1750` (the default) alone, idle machine
    /// (2026-11-24); a metric's from a default bench-all the same day. Quick: 60 of 1,750 rows.
    fn cost_hints(&self) -> Vec<CostHint> {
        vec![CostHint {
            task: "criteria".into(),
            metric_seconds: 1.6,
            model_seconds: 89.0,
            quick_share: 60.0 / align_sim::DEFAULT_MAX_ROWS as f64,
        }]
    }
    fn run(&self, subject: &Subject, request: &Request) -> Result<Outcome> {
        let suite = self.name();
        let o: align_sim::Options = options(suite, &request.options)?;
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
            &align_sim::DEFAULT_DATASETS,
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
        Outcome::of(suite, &r, notes)
    }
}

/// EvalRank ([`evalrank`]): positive pairs ranked against a background set; options:
/// [`evalrank::Options`]. Without datasets the level names its lists; with datasets (text pairs, STS pairs, vocabularies: the
/// user's own) those make the lists ([`evalrank::run_on_datasets`]). The run seed draws the lists
/// only where `max_pairs` or `max_background` cut them.
pub struct EvalRank;

impl Suite for EvalRank {
    fn options(&self) -> Vec<sage_core::OptionInfo> {
        sage_core::describe::<evalrank::Options>()
    }
    fn check_options(&self, options: &Map<String, Value>) -> Result<()> {
        crate::options::<evalrank::Options>(self.name(), options).map(drop)
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
    fn reference_datasets(&self) -> Vec<String> {
        // the lists it ranks in (word and sentence level) and the classic scores' gold sets
        let mut read: Vec<String> = evalrank::lists::word_sets()
            .iter()
            .map(|n| format!("{n}/all"))
            .collect();
        read.extend(
            [
                "wiki-20k",
                "evalrank-word-pairs",
                "evalrank-word-basic-vocab",
                "evalrank-word-wiki-vocab",
                "evalrank-sent-pairs",
                "evalrank-sent-background",
            ]
            .map(|n| format!("{n}/all")),
        );
        read.push("stsb/test".into());
        read
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
    /// machine (2026-11-24). A metric runs no EvalRank. `--quick` (bench.toml: 500 directed
    /// pairs among 2,000 background items) embeds about a tenth of either level's texts.
    fn cost_hints(&self) -> Vec<CostHint> {
        [
            (evalrank::Level::Word, 14.7),
            (evalrank::Level::Sentence, 71.6),
        ]
        .into_iter()
        .map(|(level, model_seconds)| CostHint {
            task: level.name().into(),
            metric_seconds: 0.0,
            model_seconds,
            quick_share: 0.1,
        })
        .collect()
    }
    fn run(&self, subject: &Subject, request: &Request) -> Result<Outcome> {
        let suite = self.name();
        let model = subject.model(suite)?;
        let o: evalrank::Options = options(suite, &request.options)?;
        let post = o.post_process();
        let r = if request.datasets.is_empty() {
            evalrank::run(
                request.root,
                model.as_ref(),
                o.level,
                o.lists,
                o.cut(request.seed),
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
                o.cut(request.seed),
                o.similarity,
                post,
            )
        }
        .map_err(failed(suite))?;
        Outcome::of(suite, &r, Vec::new())
    }
}

/// What a similarity costs to run on this host ([`sage_throughput`]): texts and tokens per second
/// at three lengths, latency, load time, memory, and an API model's bill for the sample. Options:
/// those of [`sage_throughput::Options`].
pub struct Throughput;

impl Suite for Throughput {
    fn options(&self) -> Vec<sage_core::OptionInfo> {
        sage_core::describe::<sage_throughput::Options>()
    }
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
        // a precision this CPU can only emulate gives its numbers, not its speed: said beside
        // the speed, so that no one picks it for speed
        if let Some(compute) = r.compute.as_deref().filter(|c| c.contains("emulated")) {
            notes.push(format!(
                "computed as `{compute}`: this CPU lacks the instructions the precision needs \
                 (bf16: AVX512-BF16), so its products are emulated in float32 and run slower \
                 than f32; it reproduces the precision's numbers, not its speed"
            ));
        }
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
        Outcome::of(self.name(), &r, notes)
    }
}
