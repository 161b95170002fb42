//! `sage run <task>`: evaluation tasks.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Subcommand, ValueEnum};
use evalrank::{Level, ListSource, PostProcess};
use sage_core::VectorSimilarity;
use sage_human_pref::Source as HumanPrefSource;

use crate::embed::ModelArgs;
use crate::output::Output;

/// The tasks.
#[derive(Debug, Subcommand)]
pub enum Task {
    /// ALIGN-SIM's five criteria (paraphrase, synonym, antonym, negation, jumbling) on MRPC,
    /// PAWS-Wiki and AFIN for a metric or an embedding model; prints a JSON report.
    AlignSim {
        /// A classical metric: levenshtein | rouge | jaccard | bm25 (or give --model).
        #[arg(long, required_unless_present = "model", conflicts_with = "model")]
        similarity: Option<sage_metrics::Metric>,
        #[command(flatten)]
        model: ModelArgs,
        /// Paraphrase datasets as name/split (default: mrpc/test and paws-wiki/test, those local).
        #[arg(long = "dataset")]
        datasets: Vec<String>,
        /// Rows sampled per dataset (seeded; 1 to 10,000,000).
        #[arg(long, default_value_t = 1750, value_parser = within(1..=10_000_000))]
        max_rows: usize,
        /// Run seed (sampling, random pairs, perturbations).
        #[arg(long, default_value_t = sage_core::RunSeed::default().0)]
        seed: u64,
        /// WordNet 3.0 dict folder (default: wordnet/dict under the data root).
        #[arg(long)]
        wordnet: Option<PathBuf>,
        /// Data root (default: $SAGE_DATA_DIR).
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// Write the report here (atomically) instead of standard output.
        #[arg(long)]
        output: Option<PathBuf>,
    },
    /// SAGE task 1, human-preference alignment: pairwise comparisons (accuracy, precision,
    /// recall, F1) and Pearson correlations with human ratings. Default sources: the
    /// summarize_from_feedback tables when local, SummEval and REALSumm.
    HumanPref {
        #[command(flatten)]
        task: TaskArgs,
        /// Least mean-rating difference for two summaries of a document to become a comparison
        /// (default per dataset: SummEval 0.4, REALSumm 0.1, others 10% of the observed range).
        #[arg(long)]
        margin: Option<f64>,
    },
    /// SAGE task 2, transformation robustness: superficial > summary > semantic similarity
    /// conditions on CNN/DailyMail, BillSum and SumPubMed.
    Robustness {
        #[command(flatten)]
        task: TaskArgs,
        /// Truncate documents to their first N cl100k tokens first (1 to 1,000,000; default:
        /// whole documents).
        #[arg(long, value_parser = within(1..=1_000_000))]
        truncate_tokens: Option<usize>,
    },
    /// SAGE task 3, information sensitivity: needle insertion and token removal against the
    /// expected 1 - p/(1+p) degradation.
    Sensitivity {
        #[command(flatten)]
        task: TaskArgs,
        /// Truncate documents to their first N cl100k tokens first (the authors' 2,048; 1 to
        /// 1,000,000).
        #[arg(long, default_value_t = 2048, conflicts_with = "whole_documents", value_parser = within(1..=1_000_000))]
        truncate_tokens: usize,
        /// Do not truncate.
        #[arg(long)]
        whole_documents: bool,
    },
    /// SAGE task 4, clustering: complete linkage on 1 - similarity, cut at the true number of
    /// classes, V-measure; seeded subsets of TwentyNewsgroups, Reddit and StackExchange.
    Clustering {
        #[command(flatten)]
        task: TaskArgs,
        /// Subsets per dataset (1 to 1,000).
        #[arg(long, default_value_t = sage_cluster::Options::default().subsets, value_parser = within(1..=1_000))]
        subsets: usize,
        /// Texts per subset, at most (2 to 50,000: memory grows with its square, ~5 GB at
        /// 50,000).
        #[arg(long, default_value_t = sage_cluster::Options::default().max_texts, value_parser = within(2..=50_000))]
        max_texts: usize,
        /// Classes per subset, at most (2 to 10,000).
        #[arg(long, default_value_t = sage_cluster::Options::default().max_classes, value_parser = within(2..=10_000))]
        max_classes: usize,
    },
    /// SAGE task 5, retrieval robustness: NDCG@10 retention on 18 perturbed copies of a BEIR
    /// corpus (SciFact and NFCorpus by default), harmonic mean.
    Retrieval {
        #[command(flatten)]
        task: TaskArgs,
        /// distractor: originals + perturbed copies; replace: perturbed copies only.
        #[arg(long, value_enum, default_value_t = RetrievalModeArg::Distractor)]
        mode: RetrievalModeArg,
        /// Corpus documents sampled (every relevant one kept; 1 to 10,000,000).
        #[arg(long, value_parser = within(1..=10_000_000))]
        max_docs: Option<usize>,
        /// Queries sampled (1 to 1,000,000).
        #[arg(long, value_parser = within(1..=1_000_000))]
        max_queries: Option<usize>,
        /// Most query-document pairs scored at once (bounds memory: about 50 bytes a pair;
        /// 1,000 to 100,000,000).
        #[arg(long, default_value_t = sage_retrieval::Options::default().pair_budget, value_parser = within(1_000..=100_000_000))]
        pair_budget: usize,
    },
    /// PTEB (Frank & Afli): MTEB tasks scored on the original data and on paraphrases an LLM
    /// writes now, over several seeds (1337, 1338, ...); per dataset original, mean +- std,
    /// delta, edit distance, fallbacks; pooled Hodges-Lehmann shift and Wilcoxon test.
    Pteb(Box<crate::pteb::PtebArgs>),
    /// EvalRank (Wang et al., ACL 2022): MRR / Hits@1 / Hits@3 of positive pairs ranked against
    /// a background set, plus the classic Spearman similarity score; prints a JSON report.
    Evalrank {
        /// word: the 13 word-similarity sets; sentence: STS-B and STR-2022.
        #[arg(long, value_enum)]
        level: LevelArg,
        /// Vector similarity.
        #[arg(long, value_enum, default_value_t = SimilarityArg::Cos)]
        similarity: SimilarityArg,
        /// shipped: the toolkit's lists (default); constructed: built from the raw datasets.
        #[arg(long, value_enum, default_value_t = ListsArg::Shipped)]
        lists: ListsArg,
        /// Post-processing fitted on the embedded set: none, whitening, or abtt (remove the top
        /// --abtt-k principal components).
        #[arg(long, value_enum, default_value_t = PostArg::None)]
        post: PostArg,
        /// Components removed by --post abtt (1 to 1,000).
        #[arg(long, default_value_t = 2, value_parser = within(1..=1_000))]
        abtt_k: usize,
        #[command(flatten)]
        model: ModelArgs,
        /// Data root (default: $SAGE_DATA_DIR).
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// Write the report here (atomically) instead of standard output.
        #[arg(long)]
        output: Option<PathBuf>,
    },
}

/// A whole-number flag within its documented range, checked before any work: clap's error names
/// the flag, the value and the range.
pub(crate) fn within(
    range: std::ops::RangeInclusive<u64>,
) -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::<usize>::new().range(range)
}

/// What every SAGE task takes: a similarity, datasets, a sample size, a seed, where to write.
#[derive(Debug, clap::Args)]
pub struct TaskArgs {
    /// levenshtein | rouge | jaccard | bm25, or an embedding model (a folder, a folder name
    /// under $SAGE_MODELS_DIR, or a hub id), compared by cosine.
    #[arg(long, required_unless_present = "model")]
    similarity: Option<String>,
    #[command(flatten)]
    model: ModelArgs,
    /// Datasets as name/split (default: the task's paper datasets that are local).
    #[arg(long = "dataset")]
    datasets: Vec<String>,
    /// Rows sampled per dataset (seeded; 1 to 10,000,000; default: all).
    #[arg(long, value_parser = within(1..=10_000_000))]
    max_rows: Option<usize>,
    /// Run seed (sampling, perturbations).
    #[arg(long, default_value_t = sage_core::RunSeed::default().0)]
    seed: u64,
    /// Data root (default: $SAGE_DATA_DIR).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Write the report here (atomically) instead of standard output.
    #[arg(long)]
    output: Option<PathBuf>,
}

impl TaskArgs {
    /// The similarity named by --similarity (a metric name first, else a model) or --model.
    fn similarity(&self) -> Result<Box<dyn sage_core::Similarity>> {
        let spec = match (&self.similarity, &self.model.model) {
            (Some(_), Some(_)) => bail!("give --similarity or --model, not both"),
            (Some(s), None) | (None, Some(s)) => s,
            (None, None) => bail!("give --similarity"),
        };
        if let Ok(metric) = spec.parse::<sage_metrics::Metric>() {
            return Ok(metric.similarity());
        }
        Ok(Box::new(sage_core::EmbeddingSimilarity::cosine(
            self.model.load(spec)?,
        )))
    }

    fn datasets(&self) -> Result<Vec<(String, String)>> {
        parse_datasets(&self.datasets)
    }

    fn seed(&self) -> sage_core::RunSeed {
        sage_core::RunSeed(self.seed)
    }

    fn write(&self, report: &impl serde::Serialize) -> Result<()> {
        let mut out = Output::create(self.output.clone())?;
        serde_json::to_writer_pretty(&mut out, &crate::remote::finish(report)?)?;
        out.write_all(b"\n")?;
        out.finish()
    }
}

/// `summarize-from-feedback/<any>` names the two feedback tables; any other name a rating
/// dataset, with `margin` overriding its default.
fn human_pref_source(dataset: String, split: String, margin: Option<f64>) -> HumanPrefSource {
    let default_margin = match dataset.as_str() {
        "summarize-from-feedback" => return HumanPrefSource::summarize_from_feedback(),
        "summeval" => Some(0.4),
        "realsumm" => Some(0.1),
        _ => None,
    };
    HumanPrefSource::Ratings {
        dataset,
        split,
        margin: margin.or(default_margin),
    }
}

pub(crate) fn parse_datasets(datasets: &[String]) -> Result<Vec<(String, String)>> {
    datasets
        .iter()
        .map(|d| {
            d.split_once('/')
                .map(|(n, s)| (n.to_owned(), s.to_owned()))
                .ok_or_else(|| anyhow::anyhow!("--dataset {d:?}: expected name/split"))
        })
        .collect()
}

/// The task's default datasets that are in the local mirror; the others are named on stderr
/// (with how to get them), and none at all is an error listing every reason.
pub(crate) fn local_defaults(
    root: &sage_data::DataRoot,
    task: &str,
    defaults: &[(&'static str, &'static str)],
) -> Result<Vec<(&'static str, &'static str)>> {
    let (present, missing) = root.partition_local(defaults);
    let missing: Vec<String> = missing.iter().map(ToString::to_string).collect();
    if present.is_empty() {
        bail!(
            "{task}: none of its datasets is in the local mirror {}:\n  {}",
            root.root().display(),
            missing.join("\n  ")
        );
    }
    for reason in &missing {
        eprintln!("sage: note: {task}: skipped: {reason}");
    }
    Ok(present)
}

fn as_refs(datasets: &[(String, String)]) -> Vec<(&str, &str)> {
    datasets
        .iter()
        .map(|(n, s)| (n.as_str(), s.as_str()))
        .collect()
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum RetrievalModeArg {
    Distractor,
    Replace,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum LevelArg {
    Word,
    Sentence,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum SimilarityArg {
    Cos,
    L2,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum PostArg {
    None,
    Whitening,
    Abtt,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ListsArg {
    Shipped,
    Constructed,
}

pub fn run(task: Task) -> Result<()> {
    match task {
        Task::Pteb(args) => crate::pteb::run(*args),
        Task::AlignSim {
            similarity,
            model,
            datasets,
            max_rows,
            seed,
            wordnet,
            data_dir,
            output,
        } => {
            let root = crate::data::root(data_dir)?;
            let similarity: Box<dyn sage_core::Similarity> = match (similarity, &model.model) {
                (Some(metric), _) => metric.similarity(),
                (None, Some(spec)) => {
                    Box::new(sage_core::EmbeddingSimilarity::cosine(model.load(spec)?))
                }
                (None, None) => bail!("give --similarity or --model"),
            };
            let wordnet = sage_perturb::WordNet::open(
                wordnet.unwrap_or_else(|| root.root().join("wordnet/dict")),
            )?;
            let datasets: Vec<(String, String)> = if datasets.is_empty() {
                local_defaults(
                    &root,
                    "align-sim",
                    &[("mrpc", "test"), ("paws-wiki", "test")],
                )?
                .into_iter()
                .map(|(n, s)| (n.to_owned(), s.to_owned()))
                .collect()
            } else {
                parse_datasets(&datasets)?
            };
            let refs = as_refs(&datasets);
            let report = align_sim::evaluate(
                similarity.as_ref(),
                &root,
                std::sync::Arc::new(wordnet),
                &refs,
                Some(max_rows),
                sage_core::RunSeed(seed),
            )
            .context("ALIGN-SIM")?;
            let mut out = Output::create(output)?;
            serde_json::to_writer_pretty(&mut out, &crate::remote::finish(&report)?)?;
            out.write_all(b"\n")?;
            out.finish()
        }
        Task::HumanPref { task, margin } => {
            let root = crate::data::root(task.data_dir.clone())?;
            let sources: Vec<HumanPrefSource> = if task.datasets.is_empty() {
                HumanPrefSource::available(&root)
            } else {
                task.datasets()?
                    .into_iter()
                    .map(|(dataset, split)| human_pref_source(dataset, split, margin))
                    .collect()
            };
            let similarity = task.similarity()?;
            let report = sage_human_pref::evaluate(
                similarity.as_ref(),
                &root,
                &sources,
                task.max_rows,
                task.seed(),
            )
            .context("human-preference alignment")?;
            task.write(&report)
        }
        Task::Robustness {
            task,
            truncate_tokens,
        } => {
            let root = crate::data::root(task.data_dir.clone())?;
            let named = task.datasets()?;
            let datasets = if named.is_empty() {
                local_defaults(&root, "robustness", &sage_robustness::DEFAULT_DATASETS)?
            } else {
                as_refs(&named)
            };
            let similarity = task.similarity()?;
            let report = sage_robustness::evaluate(
                similarity.as_ref(),
                &root,
                &datasets,
                sage_robustness::Options {
                    max_rows: task.max_rows,
                    truncate_tokens,
                    seed: task.seed(),
                },
            )
            .context("transformation robustness")?;
            task.write(&report)
        }
        Task::Sensitivity {
            task,
            truncate_tokens,
            whole_documents,
        } => {
            let root = crate::data::root(task.data_dir.clone())?;
            let named = task.datasets()?;
            let datasets = if named.is_empty() {
                local_defaults(&root, "sensitivity", &sage_sensitivity::DEFAULT_DATASETS)?
            } else {
                as_refs(&named)
            };
            let similarity = task.similarity()?;
            let report = sage_sensitivity::evaluate(
                similarity.as_ref(),
                &root,
                &datasets,
                sage_sensitivity::Options {
                    max_rows: task.max_rows,
                    truncate_tokens: (!whole_documents).then_some(truncate_tokens),
                    seed: task.seed(),
                },
            )
            .context("information sensitivity")?;
            task.write(&report)
        }
        Task::Clustering {
            task,
            subsets,
            max_texts,
            max_classes,
        } => {
            let root = crate::data::root(task.data_dir.clone())?;
            let named = task.datasets()?;
            let datasets = if named.is_empty() {
                local_defaults(&root, "clustering", &sage_cluster::DEFAULT_DATASETS)?
            } else {
                as_refs(&named)
            };
            if task.max_rows.is_some() {
                bail!("clustering samples subsets: use --max-texts and --subsets");
            }
            let similarity = task.similarity()?;
            let report = sage_cluster::evaluate(
                similarity.as_ref(),
                &root,
                &datasets,
                sage_cluster::Options {
                    subsets,
                    max_texts,
                    max_classes,
                    seed: task.seed(),
                },
            )
            .context("clustering")?;
            task.write(&report)
        }
        Task::Retrieval {
            task,
            mode,
            max_docs,
            max_queries,
            pair_budget,
        } => {
            let root = crate::data::root(task.data_dir.clone())?;
            let named = task.datasets()?;
            let datasets = if named.is_empty() {
                local_defaults(&root, "retrieval", &sage_retrieval::DEFAULT_DATASETS)?
            } else {
                as_refs(&named)
            };
            if task.max_rows.is_some() {
                bail!("retrieval samples with --max-docs and --max-queries");
            }
            let similarity = task.similarity()?;
            let report = sage_retrieval::evaluate(
                similarity.as_ref(),
                &root,
                &datasets,
                sage_retrieval::Options {
                    mode: match mode {
                        RetrievalModeArg::Distractor => sage_retrieval::Mode::Distractor,
                        RetrievalModeArg::Replace => sage_retrieval::Mode::Replace,
                    },
                    max_docs,
                    max_queries,
                    pair_budget: pair_budget.max(1),
                    seed: task.seed(),
                },
            )
            .context("retrieval robustness")?;
            task.write(&report)
        }
        Task::Evalrank {
            level,
            similarity,
            lists,
            post,
            abtt_k,
            model,
            data_dir,
            output,
        } => {
            let Some(spec) = &model.model else {
                bail!("--model is required")
            };
            let root = crate::data::root(data_dir)?;
            let embedder = model.load(spec)?;
            let level = match level {
                LevelArg::Word => Level::Word,
                LevelArg::Sentence => Level::Sentence,
            };
            let source = match lists {
                ListsArg::Shipped => ListSource::Shipped,
                ListsArg::Constructed => ListSource::Constructed,
            };
            let similarity = match similarity {
                SimilarityArg::Cos => VectorSimilarity::Cosine,
                SimilarityArg::L2 => VectorSimilarity::L2,
            };
            let post = match post {
                PostArg::None => PostProcess::None,
                PostArg::Whitening => PostProcess::Whitening,
                PostArg::Abtt => PostProcess::Abtt { k: abtt_k },
            };
            let report = evalrank::run(&root, embedder.as_ref(), level, source, similarity, post)
                .context("EvalRank")?;
            let mut out = Output::create(output)?;
            serde_json::to_writer_pretty(&mut out, &crate::remote::finish(&report)?)?;
            out.write_all(b"\n")?;
            out.finish()
        }
    }
}
