//! `sage run <task>`: evaluation tasks.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Subcommand, ValueEnum};
use evalrank::{Level, ListSource, PostProcess};
use sage_core::VectorSimilarity;

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
        /// Paraphrase datasets as name/split (default: mrpc/test and paws-wiki/test).
        #[arg(long = "dataset")]
        datasets: Vec<String>,
        /// Rows sampled per dataset (seeded).
        #[arg(long, default_value_t = 1750)]
        max_rows: usize,
        /// Run seed (sampling, random pairs, perturbations).
        #[arg(long, default_value_t = sage_core::RunSeed::default().0)]
        seed: u64,
        /// WordNet 3.0 dict folder (default: <data root>/wordnet/dict).
        #[arg(long)]
        wordnet: Option<PathBuf>,
        /// Data root (default: $SAGE_DATA_DIR).
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// Write the report here (atomically) instead of standard output.
        #[arg(long)]
        output: Option<PathBuf>,
    },
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
        /// Components removed by --post abtt.
        #[arg(long, default_value_t = 2)]
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
                vec![
                    ("mrpc".into(), "test".into()),
                    ("paws-wiki".into(), "test".into()),
                ]
            } else {
                datasets
                    .iter()
                    .map(|d| {
                        d.split_once('/')
                            .map(|(n, s)| (n.to_owned(), s.to_owned()))
                            .ok_or_else(|| anyhow::anyhow!("--dataset {d:?}: expected name/split"))
                    })
                    .collect::<Result<_>>()?
            };
            let refs: Vec<(&str, &str)> = datasets
                .iter()
                .map(|(n, s)| (n.as_str(), s.as_str()))
                .collect();
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
            serde_json::to_writer_pretty(&mut out, &report)?;
            out.write_all(b"\n")?;
            out.finish()
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
            serde_json::to_writer_pretty(&mut out, &report)?;
            out.write_all(b"\n")?;
            out.finish()
        }
    }
}
