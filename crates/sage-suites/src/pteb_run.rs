//! PTEB as a suite ([`Pteb`]), its options ([`PtebOptions`]: the one schema of every caller),
//! and what a PTEB run loads once ([`PtebRun`]): the suite evaluates one encoder with it,
//! `sage run pteb --compare` several on the same paraphrases.

use std::path::PathBuf;
use std::sync::Arc;

use pteb::{Judge, Paraphraser, PtebReport};
use sage_core::{Embedder, RunSeed};
use sage_data::{DataRoot, DatasetKind};
use serde_json::{Map, Value};

use crate::{
    as_refs, datasets_or_local_defaults, failed, options, Outcome, Request, Result, Subject, Suite,
    SuiteError,
};

const SUITE: &str = "pteb";

const NO_PARAPHRASER: &str = "name the paraphrasing LLM: paraphraser=<GGUF file or folder, a \
                              folder name under $SAGE_MODELS_DIR, or an OpenAI-compatible URL>";

/// PTEB ([`pteb`]): MTEB-style tasks on the original texts and on LLM paraphrases written at
/// evaluation time, with the paraphrase-quality record and gate of every dataset. Options:
/// [`PtebOptions`].
pub struct Pteb;

sage_core::suite_options! {
    /// The options of a PTEB run: the one declaration `sage run pteb`'s flags, `--options`,
    /// bench.toml and Python keywords all read, with each field's range.
    #[derive(Clone, Debug)]
    pub struct PtebOptions {
        /// The paraphrasing LLM (required): a .gguf file, a folder with one, a folder name under
        /// $SAGE_MODELS_DIR (SmolLM2-135M-Instruct-GGUF), or an OpenAI-compatible base URL
        /// (http://localhost:11434/v1 for Ollama) with `llm_model`.
        pub paraphraser: Option<String> = None, sage_core::OptionSpec::any().required();
        /// An LLM judge (the same forms) rating paraphrases 0-5 and itself checked against STS
        /// gold scores; none by default (slow).
        pub judge: Option<String> = None, sage_core::OptionSpec::any();
        /// Paraphrase runs; run r uses seed + r.
        pub runs: usize = pteb::Options::default().runs, sage_core::OptionSpec::whole(1, 1_000);
        /// Rows sampled per dataset (pairs, test texts, queries, summaries by document); all
        /// when unset.
        pub max_rows: Option<usize> = pteb::Options::default().max_rows, sage_core::OptionSpec::whole(1, 10_000_000);
        /// Classification training texts sampled; all when unset.
        pub max_train_rows: Option<usize> = pteb::Options::default().max_train_rows,
            sage_core::OptionSpec::whole(1, 10_000_000);
        /// Classification experiments, each a logistic regression on its own draw of training
        /// texts, their accuracies averaged (MTEB's protocol: 10).
        pub classification_experiments: usize = pteb::Options::default().classification_experiments,
            sage_core::OptionSpec::whole(1, 1_000);
        /// Training texts per label in each classification experiment; MTEB's for the task
        /// when unset (32 for AmazonCounterfactual, else 8).
        pub samples_per_label: Option<usize> = pteb::Options::default().samples_per_label,
            sage_core::OptionSpec::whole(1, 10_000_000);
        /// Paraphrase classification training texts too.
        pub paraphrase_train: bool = pteb::Options::default().paraphrase_train, sage_core::OptionSpec::any();
        /// Pairs the judge rates per dataset.
        pub judge_pairs: usize = pteb::Options::default().judge_pairs, sage_core::OptionSpec::whole(1, 10_000_000);
        /// Pool and compare datasets whose paraphrases failed the quality gate too (their
        /// numbers are always reported, marked).
        pub pool_unqualified: bool = pteb::Options::default().pool_unqualified, sage_core::OptionSpec::any();
        /// The fixed encoder that compares each original with its paraphrase (never the encoder
        /// under test): a model spec, loaded with its own defaults.
        pub quality_encoder: String = pteb::DEFAULT_REFERENCE_ENCODER.to_owned(), sage_core::OptionSpec::any();
        /// The quality gate's thresholds ([`pteb::QualityGate`] says where each default comes
        /// from).
        pub gate: pteb::QualityGate = pteb::Options::default().gate,
            sage_core::OptionSpec::section(<pteb::QualityGate as sage_core::SuiteOptions>::FIELDS);
        /// Sampling and engine settings of the paraphraser and the judge.
        pub llm: pteb::LlmConfig = pteb::LlmConfig::default(),
            sage_core::OptionSpec::section(<pteb::LlmConfig as sage_core::SuiteOptions>::FIELDS);
        /// The paraphrase cache file (default: paraphrases.redb in sage's cache folder,
        /// $SAGE_CACHE_DIR or ~/.cache/sage-rs).
        pub paraphrase_cache: Option<PathBuf> = None,
            sage_core::OptionSpec::any().env("SAGE_PARAPHRASE_CACHE");
        /// Neither read nor write the paraphrase cache.
        pub no_paraphrase_cache: bool = false, sage_core::OptionSpec::any();
        /// Also read the other paraphrase cache files (`paraphrases*.redb`) of this folder for
        /// what the cache lacks (a sharded run's shards each write their own).
        pub read_paraphrase_caches: Option<PathBuf> = None,
            sage_core::OptionSpec::any().env("SAGE_READ_PARAPHRASE_CACHES");
        /// Languages to run (eng, eng-Latn or en): a dataset of language subsets (STS17's
        /// en-ar) keeps the subsets whose every side is one of them; empty: every subset.
        pub languages: Vec<String> = Vec::new(), sage_core::OptionSpec::any();
        /// Paraphrase-prompt wordings to compare (the prompt-sensitivity analysis, the paper's
        /// Table 12): `default`, `variant-1`, `variant-2`, or a file holding a wording
        /// (`{language}` where a non-English text's language goes). Each is a paired condition
        /// on the same rows and seeds, the first the reference; empty: the default prompt.
        pub prompts: Vec<String> = Vec::new(), sage_core::OptionSpec::any();
        /// Run local LLMs and the reference encoder on the first CUDA GPU.
        pub cuda: bool = false, sage_core::OptionSpec::any();
    }
    also_check = paraphraser_named;
}

/// A paraphraser is named (`required` says so to a front end; a struct built in code is checked
/// here).
fn paraphraser_named(options: &PtebOptions) -> sage_core::Result<()> {
    match options.paraphraser {
        Some(_) => Ok(()),
        None => Err(sage_core::SageError::InvalidArgument(NO_PARAPHRASER.into())),
    }
}

impl PtebOptions {
    /// Reads `options` (the JSON object every caller's options become) and checks their ranges:
    /// what the suite's `run` reads, for a caller that runs PTEB itself (`sage run pteb
    /// --compare`).
    pub fn read(options: &Map<String, Value>) -> Result<PtebOptions> {
        crate::options(SUITE, options)
    }

    /// Every option within its range, as the suite checks them (for a caller that builds the
    /// struct itself: `sage run pteb`'s flags).
    pub fn checked(&self) -> Result<()> {
        crate::checked(SUITE, self)
    }

    /// The paraphraser's spec: required, so its absence fails [`sage_core::CheckOptions`].
    fn paraphraser(&self) -> Result<&str> {
        self.paraphraser
            .as_deref()
            .ok_or_else(|| SuiteError::Options {
                suite: SUITE,
                message: NO_PARAPHRASER.into(),
            })
    }

    /// The reference encoder, with its own defaults (the pooling or truncation the encoder under
    /// test was loaded with must not change the yardstick) and the environment's settings; a
    /// caller with settings of its own (`sage run pteb`'s remote flags) loads it itself.
    pub fn default_reference(&self) -> Result<Arc<dyn Embedder>> {
        sage_embed::load(
            &self.quality_encoder,
            &sage_embed::LoadOptions {
                transformer: sage_embed::TransformerOptions {
                    cuda: self.cuda,
                    ..sage_embed::TransformerOptions::default()
                },
                ..sage_embed::LoadOptions::from_env()
            },
        )
        .map(|loaded| loaded.embedder())
        .map_err(|e| SuiteError::Run {
            suite: SUITE,
            source: format!(
                "loading the reference encoder {:?} of the paraphrase-quality record (fetch it, \
                 or name another with quality_encoder=, --quality-encoder): {e}",
                self.quality_encoder
            )
            .into(),
        })
    }
}

/// What a PTEB run loads once: the paraphraser, the judge, the reference encoder. Every encoder
/// it evaluates meets the same paraphrases (the cache holds them after the first).
pub struct PtebRun {
    paraphraser: Paraphraser,
    /// The wordings of the prompt-sensitivity analysis, each with its paraphraser (empty: the
    /// paraphraser's own prompt alone).
    wordings: Vec<(String, Paraphraser)>,
    judge: Option<Judge>,
    reference: Arc<dyn Embedder>,
    options: pteb::Options,
}

impl PtebRun {
    /// Loads the LLMs `o` names, then the quality record's encoder with `reference`
    /// ([`PtebOptions::default_reference`], or the caller's own loader); `seed` is run 0's seed.
    pub fn new(
        o: &PtebOptions,
        seed: RunSeed,
        reference: impl FnOnce(&PtebOptions) -> Result<Arc<dyn Embedder>>,
    ) -> Result<PtebRun> {
        let paraphraser = o.paraphraser()?;
        let cache = pteb::ParaphraseCache::for_run(
            o.no_paraphrase_cache,
            o.paraphrase_cache.as_deref(),
            o.read_paraphrase_caches.as_deref(),
        )
        .map_err(failed(SUITE))?;
        let loading = |spec: &str| {
            let spec = spec.to_owned();
            move |e: pteb::PtebError| SuiteError::Run {
                suite: SUITE,
                source: format!("loading the LLM {spec:?}: {e}").into(),
            }
        };
        let paraphraser = o
            .llm
            .paraphraser(paraphraser, o.cuda, cache.clone())
            .map_err(loading(paraphraser))?;
        let judge = match &o.judge {
            Some(spec) => Some(o.llm.judge(spec, o.cuda, cache).map_err(loading(spec))?),
            None => None,
        };
        let wordings = o
            .prompts
            .iter()
            .map(|name| {
                let prompt =
                    pteb::PromptStyle::wording(name).map_err(|message| SuiteError::Options {
                        suite: SUITE,
                        message,
                    })?;
                Ok((prompt.name().to_owned(), paraphraser.with_prompt(prompt)))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(PtebRun {
            paraphraser,
            wordings,
            judge,
            reference: reference(o)?,
            options: pteb::Options {
                runs: o.runs,
                seed: seed.0,
                max_rows: o.max_rows,
                max_train_rows: o.max_train_rows,
                classification_experiments: o.classification_experiments,
                samples_per_label: o.samples_per_label,
                paraphrase_train: o.paraphrase_train,
                judge_pairs: o.judge_pairs,
                gate: o.gate.clone(),
                pool_unqualified: o.pool_unqualified,
                languages: o.languages.clone(),
            },
        })
    }

    /// The request's datasets, else PTEB's paper datasets that are local (a note for each of
    /// the others).
    pub fn datasets(request: &Request, notes: &mut Vec<String>) -> Result<Vec<(String, String)>> {
        let chosen = datasets_or_local_defaults(
            SUITE,
            Pteb.kinds(),
            request,
            &pteb::DEFAULT_DATASETS,
            notes,
        )?;
        if !request.datasets.is_empty() {
            return Ok(chosen);
        }
        // a default classification set is local only with the train split its classifier
        // learns from (a mirror may hold the test split alone)
        let root = request.root;
        Ok(chosen
            .into_iter()
            .filter(|(name, _)| {
                let classification = root.kind(name).ok() == Some(DatasetKind::Classification);
                let complete = !classification || root.has(name, "train");
                if !complete {
                    notes.push(format!(
                        "skipped: dataset {name}: its train split, which PTEB's \
                         classifier learns from, is not in the local mirror (sage data fetch \
                         {name})"
                    ));
                }
                complete
            })
            .collect())
    }

    /// PTEB for `encoder` on `datasets` of `root`, telling `progress` how far it has got.
    pub fn evaluate(
        &self,
        encoder: &dyn Embedder,
        root: &DataRoot,
        datasets: &[(String, String)],
        progress: &dyn pteb::Progress,
    ) -> Result<PtebReport> {
        let run = |paraphraser: &Paraphraser| {
            pteb::evaluate(
                encoder,
                pteb::Paraphrasing {
                    paraphraser,
                    judge: self.judge.as_ref(),
                    reference: self.reference.as_ref(),
                },
                root,
                &as_refs(datasets),
                &self.options,
                progress,
            )
            .map_err(failed(SUITE))
        };
        match self.wordings.as_slice() {
            [] => run(&self.paraphraser),
            [(_, only)] => run(only),
            several => {
                let reports = several
                    .iter()
                    .map(|(name, paraphraser)| Ok((name.as_str(), run(paraphraser)?)))
                    .collect::<Result<Vec<_>>>()?;
                let pairs: Vec<(&str, &PtebReport)> =
                    reports.iter().map(|(n, r)| (*n, r)).collect();
                let ablation = pteb::prompt_ablation(&pairs, RunSeed(self.options.seed))
                    .map_err(failed(SUITE))?;
                let mut first = reports.into_iter().next().expect("two wordings or more").1;
                first.prompt_ablation = Some(ablation);
                Ok(first)
            }
        }
    }

    /// The options the run was loaded with (runs, seed, gate).
    pub fn options(&self) -> &pteb::Options {
        &self.options
    }

    /// A note for each dataset of `report` whose paraphrases failed the quality gate, and for
    /// each dataset left out because none of its languages was asked for.
    pub fn report_notes(report: &PtebReport) -> Vec<String> {
        let unqualified = report
            .datasets
            .iter()
            .filter(|d| !d.quality.verdict.qualified)
            .map(|d| {
                format!(
                    "{}: paraphraser not qualified ({}); {}",
                    d.label(),
                    d.quality.verdict.reasons.join("; "),
                    pteb::NOT_QUALIFIED_ADVICE
                )
            });
        let skipped = report
            .skipped
            .iter()
            .map(|s| format!("skipped: dataset {s}"));
        unqualified.chain(skipped).collect()
    }
}

impl Suite for Pteb {
    fn options(&self) -> Vec<sage_core::OptionInfo> {
        sage_core::describe::<PtebOptions>()
    }
    fn check_options(&self, options: &Map<String, Value>) -> Result<()> {
        crate::options::<PtebOptions>(SUITE, options).map(drop)
    }
    fn kinds(&self) -> &'static [DatasetKind] {
        &[
            DatasetKind::StsPairs,
            DatasetKind::PairClassification,
            DatasetKind::ParaphrasePairs,
            DatasetKind::Classification,
            DatasetKind::Clustering,
            DatasetKind::Beir,
            DatasetKind::SummaryRatings,
            DatasetKind::Reranking,
        ]
    }
    fn name(&self) -> &'static str {
        SUITE
    }
    fn summary(&self) -> &'static str {
        "PTEB: MTEB tasks on original texts and on LLM paraphrases, with a paraphrase-quality gate"
    }
    fn default_datasets(&self) -> Vec<String> {
        crate::suites::names(&pteb::DEFAULT_DATASETS)
    }
    fn result_location(&self, _options: &Map<String, Value>) -> (&'static str, String) {
        (SUITE, "mteb".to_owned())
    }
    /// The paraphraser, the judge and the quality record's reference encoder must be here: a
    /// path, or a folder under the models folder. A server URL (with `llm.llm_model`), a remote
    /// encoder or a hub id is taken on trust: the run says so if it is not there.
    fn missing(&self, options: &Map<String, Value>) -> Option<String> {
        let o: PtebOptions = crate::options(SUITE, options).ok()?;
        let models = sage_embed::ResolveOptions::from_env().models_dir;
        let local = |spec: &str| {
            std::path::Path::new(spec).exists()
                || models.as_ref().is_some_and(|m| m.join(spec).exists())
        };
        let encoder = o.quality_encoder.as_str();
        let path_like = encoder.starts_with(['/', '.', '~']);
        let remote_or_hub = !path_like && encoder.contains([':', '/']);
        if !remote_or_hub && !local(encoder) {
            return Some(format!(
                "the reference encoder of PTEB's paraphrase-quality record, {encoder:?}, not found \
                 (a path, or a folder under $SAGE_MODELS_DIR: bash ../shared/tools/fetch-models.sh \
                 minilm; or set the quality_encoder option)"
            ));
        }
        let llms = o.paraphraser.iter().map(|s| ("paraphraser", s));
        for (role, spec) in llms.chain(o.judge.iter().map(|s| ("judge", s))) {
            if spec.starts_with("http://") || spec.starts_with("https://") {
                if o.llm.llm_model.is_none() {
                    return Some(format!(
                        "the {role} is the server {}: set llm.llm_model",
                        sage_redact::redact_url(spec)
                    ));
                }
            } else if !local(spec) {
                return Some(format!(
                    "{role} {spec:?} not found (a path, or a folder under $SAGE_MODELS_DIR: bash \
                     ../shared/tools/fetch-models.sh smollm2)"
                ));
            }
        }
        None
    }
    /// Paraphrasing dominates: 0.08 s per paraphrase (docs/src/pteb.md) × about 63,000 texts of
    /// the default datasets × 5 runs. `--quick`: 10 STS-B pairs (20 texts) and 2 runs.
    fn cost_hints(&self) -> Vec<sage_core::CostHint> {
        vec![sage_core::CostHint {
            task: "mteb".into(),
            metric_seconds: 0.0,
            model_seconds: 25_000.0,
            quick_share: 20.0 * 2.0 / (63_000.0 * 5.0),
        }]
    }
    fn takes_metrics(&self) -> bool {
        false
    }
    fn run(&self, subject: &Subject, request: &Request) -> Result<Outcome> {
        let encoder = subject.model(SUITE)?;
        let o: PtebOptions = options(SUITE, &request.options)?;
        let mut notes = Vec::new();
        let datasets = PtebRun::datasets(request, &mut notes)?;
        let run = PtebRun::new(&o, request.seed, PtebOptions::default_reference)?;
        let r = run.evaluate(encoder.as_ref(), request.root, &datasets, &pteb::Silent)?;
        notes.extend(PtebRun::report_notes(&r));
        Outcome::of(SUITE, &r, notes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The defaults that are local: a classification set whose mirror holds its test split
    /// alone (the fixtures' Banking77) is skipped with a note rather than failing the run on its
    /// missing train split; one with both (AmazonCounterfactual's fixture) is kept; a dataset
    /// asked for by name is taken as asked.
    #[test]
    fn a_default_classification_set_needs_its_train_split() {
        let root = DataRoot::new(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/fixtures/mirror"),
        );
        let mut notes = Vec::new();
        let chosen = PtebRun::datasets(&Request::new(&root), &mut notes).unwrap();
        let names: Vec<&str> = chosen.iter().map(|(n, _)| n.as_str()).collect();
        assert!(!names.contains(&"banking77"), "{names:?}");
        assert!(names.contains(&"amazon-counterfactual"), "{names:?}");
        assert!(
            notes
                .iter()
                .any(|n| n.starts_with("skipped: dataset banking77: its train split")),
            "{notes:?}"
        );
        let asked = Request {
            datasets: vec![("banking77".into(), "test".into())],
            ..Request::new(&root)
        };
        assert_eq!(PtebRun::datasets(&asked, &mut Vec::new()).unwrap().len(), 1);
    }
}
