//! `sage run <task>`: evaluation tasks.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Parser;
use clap::{Subcommand, ValueEnum};
use sage_suites::{Registry, Request, Subject};
use serde_json::Value;

use crate::embed::ModelArgs;
use crate::output::Output;
use crate::remote::Loaded;
use crate::result_file::{write_result, ResultFile};
use crate::suite_options::{FlagOptions, OptionArgs};

/// The tasks.
#[derive(Debug, Subcommand)]
pub enum Task {
    /// ALIGN-SIM's five criteria (paraphrase, synonym, antonym, negation, jumbling) on MRPC,
    /// PAWS-Wiki and AFIN for a metric or an embedding model; prints a JSON report.
    AlignSim {
        /// What is evaluated: levenshtein | rouge | jaccard | bm25, or an embedding model (as
        /// --model takes it), compared by cosine.
        #[arg(long, required_unless_present = "model")]
        similarity: Option<String>,
        #[command(flatten)]
        model: ModelArgs,
        /// Paraphrase datasets as name/split, or a file or folder of your own (PATH, PATH#SPLIT)
        /// (default: mrpc/test and paws-wiki/test, those local).
        #[arg(long = "dataset")]
        datasets: Vec<String>,
        #[command(flatten)]
        user: crate::data::UserDataArgs,
        /// Rows sampled per dataset (seeded; 1 to 10,000,000; default 1,750).
        #[arg(long)]
        max_rows: Option<usize>,
        /// Run seed (sampling, random pairs, perturbations).
        #[arg(long, default_value_t = sage_core::RunSeed::default().0)]
        seed: u64,
        /// WordNet 3.0 dict folder (default: wordnet/dict under the data root).
        #[arg(long)]
        wordnet: Option<PathBuf>,
        #[command(flatten)]
        options: OptionArgs,
        /// Data root (default: $SAGE_DATA_DIR).
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// Write the result file here (atomically): the report inside the envelope that bench-all
        /// writes and `sage report` reads (rows used, notes, seed, host). Without it, the report
        /// alone goes to standard output.
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
        #[arg(long)]
        truncate_tokens: Option<usize>,
    },
    /// SAGE task 3, information sensitivity: needle insertion and token removal against the
    /// expected 1 - p/(1+p) degradation.
    Sensitivity {
        #[command(flatten)]
        task: TaskArgs,
        /// Truncate documents to their first N cl100k tokens first (the authors' 2,048; 1 to
        /// 1,000,000).
        #[arg(long, default_value_t = sage_sensitivity::Options::default().truncate_tokens.unwrap_or_default(), conflicts_with = "whole_documents")]
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
        #[arg(long, default_value_t = sage_cluster::Options::default().subsets)]
        subsets: usize,
        /// Texts per subset, at most (2 to 50,000: memory grows with its square, ~5 GB at
        /// 50,000).
        #[arg(long, default_value_t = sage_cluster::Options::default().max_texts)]
        max_texts: usize,
        /// Classes per subset, at most (2 to 10,000).
        #[arg(long, default_value_t = sage_cluster::Options::default().max_classes)]
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
        /// Corpus documents sampled, every one relevant to a kept query among them; drawn queries
        /// whose relevant documents alone would pass it are left out and counted (1 to
        /// 10,000,000).
        #[arg(long)]
        max_docs: Option<usize>,
        /// Queries sampled (1 to 1,000,000).
        #[arg(long)]
        max_queries: Option<usize>,
        /// Most query-document pairs scored at once (bounds memory: about 50 bytes a pair;
        /// 1,000 to 100,000,000).
        #[arg(long, default_value_t = sage_retrieval::Options::default().pair_budget)]
        pair_budget: usize,
    },
    /// PTEB (Frank & Afli): MTEB tasks scored on the original data and on paraphrases an LLM
    /// writes now, over several seeds (1337, 1338, ...); per dataset original, mean +- std,
    /// delta, edit distance, fallbacks; pooled Hodges-Lehmann shift and Wilcoxon test.
    Pteb(Box<crate::pteb::PtebArgs>),
    /// EvalRank (Wang et al., ACL 2022): MRR / Hits@1 / Hits@3 of positive pairs ranked against
    /// a background set, plus the classic Spearman similarity score; prints a JSON report.
    Evalrank {
        /// word: the 13 word-similarity sets; sentence: STS-B and STR-2022 (required, here or
        /// as the `level` option).
        #[arg(long, value_enum, required_unless_present_any = ["options", "option"])]
        level: Option<LevelArg>,
        /// The embedding model evaluated (the same as --model; every suite names what it
        /// evaluates with --similarity). The old `--similarity cos|l2` still works, with a note:
        /// that is --vector-similarity now.
        #[arg(long)]
        similarity: Option<String>,
        /// How two vectors compare: cosine or Euclidean distance.
        #[arg(long, value_enum, default_value_t = SimilarityArg::Cos)]
        vector_similarity: SimilarityArg,
        /// shipped: the toolkit's lists (default); constructed: built from the raw datasets.
        #[arg(long, value_enum, default_value_t = ListsArg::Shipped)]
        lists: ListsArg,
        /// Post-processing fitted on the embedded set: none, whitening, or abtt (remove the top
        /// --abtt-k principal components).
        #[arg(long, value_enum, default_value_t = PostArg::None)]
        post: PostArg,
        /// Components removed by --post abtt (1 to 1,000).
        #[arg(long, default_value_t = evalrank::DEFAULT_ABTT_K)]
        abtt_k: usize,
        /// Run seed: EvalRank samples nothing, so it changes nothing; taken as every suite takes
        /// it, and recorded in the result file.
        #[arg(long, default_value_t = sage_core::RunSeed::default().0)]
        seed: u64,
        #[command(flatten)]
        model: ModelArgs,
        /// Your own lists instead of the level's: text-pairs datasets (positive pairs), STS
        /// datasets (their top quarter by score) and vocabularies (background), as name/split or
        /// PATH.
        #[arg(long = "dataset")]
        datasets: Vec<String>,
        #[command(flatten)]
        user: crate::data::UserDataArgs,
        /// Data root (default: $SAGE_DATA_DIR).
        #[arg(long)]
        data_dir: Option<PathBuf>,
        #[command(flatten)]
        options: OptionArgs,
        /// Write the result file here (atomically): the report inside the envelope that bench-all
        /// writes and `sage report` reads (rows used, notes, seed, host). Without it, the report
        /// alone goes to standard output.
        #[arg(long)]
        output: Option<PathBuf>,
    },
    /// Any other registered suite (`sage suites`), with the flags of [`RegisteredRun`].
    #[command(external_subcommand)]
    Registered(Vec<String>),
}

/// `sage run --help`'s last words: how a suite registered beyond the shipped ones is run.
pub(crate) const REGISTERED_HELP: &str = "A suite registered beyond these (`sage suites` lists \
every one) runs as: sage run NAME --similarity S [--dataset NAME/SPLIT|PATH]... [--seed N] \
[--data-dir DIR] [--datasets FILE] [--kind KIND] [--columns OURS=THEIRS,...] [--max-rows N] [--options JSON] [--option KEY=VALUE]... [--output FILE] (and the model \
flags). Its options are the suite's own: an unknown one is an error naming it. Every suite, \
shipped or not, takes --options and --option: a shipped suite's flags are aliases of its \
options, laid over them.";

/// The flags of a suite that has no subcommand of its own: those of every SAGE task (the subject,
/// datasets, seed, data root, output, `--options` and `--option`; `--max-rows` becomes the
/// `max_rows` option).
#[derive(Debug, clap::Parser)]
#[command(no_binary_name = true)]
struct RegisteredRun {
    #[command(flatten)]
    task: TaskArgs,
}

/// `sage run NAME ...` for a suite without a subcommand of its own.
fn run_other(args: &[String], registry: &Registry) -> Result<()> {
    let (name, flags) = args
        .split_first()
        .expect("clap gives an external subcommand its name");
    // an unknown name is said before its flags are read
    registry.find(name)?;
    let run = RegisteredRun::try_parse_from(flags)
        .map_err(|e| anyhow::anyhow!("sage run {name}: {}", e.render().to_string().trim_end()))?;
    let mut options = FlagOptions::new(None, &run.task.options)?;
    options.some("max_rows", run.task.max_rows);
    run.task.run(registry, name, options)
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
    /// Datasets as name/split, or a file or folder of your own: PATH or PATH#SPLIT (`sage data
    /// check PATH` says what it holds) (default: the task's paper datasets that are local).
    #[arg(long = "dataset")]
    datasets: Vec<String>,
    #[command(flatten)]
    user: crate::data::UserDataArgs,
    /// Rows sampled per dataset (seeded; 1 to 10,000,000; default: all).
    #[arg(long)]
    max_rows: Option<usize>,
    /// Run seed (sampling, perturbations).
    #[arg(long, default_value_t = sage_core::RunSeed::default().0)]
    seed: u64,
    /// Data root (default: $SAGE_DATA_DIR).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    #[command(flatten)]
    options: OptionArgs,
    /// Write the result file here (atomically): the report inside the envelope that bench-all
    /// writes and `sage report` reads (rows used, notes, seed, host). Without it, the report
    /// alone goes to standard output.
    #[arg(long)]
    output: Option<PathBuf>,
    /// First rebuild the registry datasets the run reads (those given, else the suite's
    /// defaults, and those it always reads) from their pinned sources, as `sage data fetch`
    /// does; present files are kept.
    #[arg(long)]
    fetch: bool,
}

impl TaskArgs {
    /// Runs the registered suite `name` with these arguments and the suite's `options`.
    fn run(&self, registry: &Registry, name: &str, options: FlagOptions) -> Result<()> {
        let options = checked_options(registry, name, options)?;
        if self.fetch {
            // those given (else the suite's defaults), and those it reads whatever it is given
            let suite = registry.suites().find(|s| s.name() == name);
            let mut wanted = if self.datasets.is_empty() {
                suite.map(|s| s.default_datasets()).unwrap_or_default()
            } else {
                self.datasets.clone()
            };
            wanted.extend(suite.map(|s| s.reference_datasets()).unwrap_or_default());
            let names = crate::fetch::registry_names(wanted);
            let request = crate::fetch::Request {
                root: crate::fetch::data_root(self.data_dir.clone())?,
                overwrite: false,
                jobs: 4,
                keep_sources: false,
                sources: std::env::var("SAGE_DATA_SOURCES")
                    .ok()
                    .filter(|s| !s.is_empty()),
                quiet: false,
                splits: Vec::new(),
            };
            let failed: Vec<String> = crate::fetch::fetch(&names, &request)?
                .into_iter()
                .filter(|o| o.status == "failed")
                .map(|o| o.dataset)
                .collect();
            if !failed.is_empty() {
                anyhow::bail!("--fetch: not fetched: {} (see above)", failed.join(", "));
            }
        }
        let (root, datasets) =
            crate::data::resolve(self.data_dir.clone(), &self.user, &self.datasets)?;
        let request = Request {
            datasets,
            seed: sage_core::RunSeed(self.seed),
            options,
            ..Request::new(&root)
        };
        let subject = subject(registry, self.similarity.as_deref(), &self.model)?;
        run_registered(registry, name, &subject, &request, self.output.clone())
    }
}

/// What a suite evaluates: `--similarity` in every suite (a registered metric's name first, else
/// a model spec), or `--model`, its older spelling for models, loaded with the model flags; with
/// the spec it was given as, for the result file, and the models loaded, for their usage.
fn subject(
    registry: &Registry,
    similarity: Option<&str>,
    model: &ModelArgs,
) -> Result<(Subject, String, Loaded)> {
    let spec = match (similarity, &model.model) {
        (Some(_), Some(_)) => bail!("give --similarity or --model, not both (they name the same)"),
        (Some(s), None) => s,
        (None, Some(s)) => s.as_str(),
        (None, None) => bail!("give --similarity: a metric or an embedding model"),
    };
    let mut loaded = Loaded::default();
    let subject = registry.subject(spec, |spec| model.load(spec, &mut loaded))?;
    Ok((subject, spec.to_owned(), loaded))
}

/// The suite `name`'s options, read and checked against their ranges before any model is loaded
/// or data read. Each range lives once, in the suite's options (`CheckOptions`): a flag only
/// spells an option, so the error names the option (`max_texts` for `--max-texts`).
fn checked_options(
    registry: &Registry,
    name: &str,
    options: FlagOptions,
) -> Result<serde_json::Map<String, Value>> {
    let options = options.into_map();
    registry.find(name)?.check_options(&options)?;
    Ok(options)
}

/// Runs a registered suite and prints its notes on stderr. With `--output`, writes the result
/// file there (see [`write_result`]); without, the report on standard output.
fn run_registered(
    registry: &Registry,
    name: &str,
    (subject, spec, loaded): &(Subject, String, Loaded),
    request: &Request,
    output: Option<PathBuf>,
) -> Result<()> {
    let suite = registry.find(name)?;
    let to_file = output.is_some();
    // before anything is computed or sent: a paid API is not billed for a run that cannot
    // write its result
    let out = Output::create(output)?;
    let start = std::time::Instant::now();
    let outcome = suite.run(subject, request)?;
    for note in &outcome.notes {
        eprintln!("sage: note: {name}: {}", sage_core::printable(note));
    }
    let file = to_file.then(|| ResultFile {
        suite: name,
        request,
        similarity: subject.record(Some(spec)),
        start,
    });
    write_result(out, outcome, loaded, registry, file)
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

/// Runs `task`; `given` is its subcommand's parsed arguments, which say which flags were given.
pub fn run(task: Task, registry: &Registry, given: &clap::ArgMatches) -> Result<()> {
    match task {
        Task::Pteb(args) => crate::pteb::run(*args, registry, given),
        Task::Registered(args) => run_other(&args, registry),
        Task::AlignSim {
            similarity,
            model,
            datasets,
            user,
            max_rows,
            seed,
            wordnet,
            options,
            data_dir,
            output,
        } => {
            let mut flags = FlagOptions::new(Some(given), &options)?;
            flags.some("max_rows", max_rows).some("wordnet", wordnet);
            let options = checked_options(registry, "align-sim", flags)?;
            let subject = subject(registry, similarity.as_deref(), &model)?;
            let (root, datasets) = crate::data::resolve(data_dir, &user, &datasets)?;
            let request = Request {
                datasets,
                seed: sage_core::RunSeed(seed),
                options,
                ..Request::new(&root)
            };
            run_registered(registry, "align-sim", &subject, &request, output)
        }
        Task::HumanPref { task, margin } => {
            let mut flags = FlagOptions::new(Some(given), &task.options)?;
            flags.some("max_rows", task.max_rows).some("margin", margin);
            task.run(registry, "human-pref", flags)
        }
        Task::Robustness {
            task,
            truncate_tokens,
        } => {
            let mut flags = FlagOptions::new(Some(given), &task.options)?;
            flags
                .some("max_rows", task.max_rows)
                .some("truncate_tokens", truncate_tokens);
            task.run(registry, "robustness", flags)
        }
        Task::Sensitivity {
            task,
            truncate_tokens,
            whole_documents,
        } => {
            let mut flags = FlagOptions::new(Some(given), &task.options)?;
            flags.some("max_rows", task.max_rows).given(
                "truncate_tokens",
                "truncate_tokens",
                truncate_tokens,
            );
            if whole_documents {
                // no cut: the option's null
                flags.some("truncate_tokens", Some(Value::Null));
            }
            task.run(registry, "sensitivity", flags)
        }
        Task::Clustering {
            task,
            subsets,
            max_texts,
            max_classes,
        } => {
            if task.max_rows.is_some() {
                bail!("clustering samples subsets: use --max-texts and --subsets");
            }
            let mut flags = FlagOptions::new(Some(given), &task.options)?;
            flags
                .given("subsets", "subsets", subsets)
                .given("max_texts", "max_texts", max_texts)
                .given("max_classes", "max_classes", max_classes);
            task.run(registry, "clustering", flags)
        }
        Task::Retrieval {
            task,
            mode,
            max_docs,
            max_queries,
            pair_budget,
        } => {
            if task.max_rows.is_some() {
                bail!("retrieval samples with --max-docs and --max-queries");
            }
            let mut flags = FlagOptions::new(Some(given), &task.options)?;
            flags
                .given(
                    "mode",
                    "mode",
                    match mode {
                        RetrievalModeArg::Distractor => "distractor",
                        RetrievalModeArg::Replace => "replace",
                    },
                )
                .some("max_docs", max_docs)
                .some("max_queries", max_queries)
                .given("pair_budget", "pair_budget", pair_budget);
            task.run(registry, "retrieval", flags)
        }
        Task::Evalrank {
            level,
            similarity,
            vector_similarity,
            lists,
            post,
            abtt_k,
            seed,
            model,
            datasets,
            user,
            data_dir,
            options,
            output,
        } => {
            // `--similarity cos|l2 --model M`: the spelling from before every suite named its
            // subject with --similarity
            let (similarity, old_vector_similarity) = match similarity.as_deref() {
                Some(old @ ("cos" | "l2")) if model.model.is_some() => {
                    eprintln!(
                        "sage: note: evalrank: --similarity {old} is --vector-similarity {old} now; \
                         --similarity names the model, as in every suite"
                    );
                    (None, Some(old == "l2"))
                }
                _ => (similarity, None),
            };
            let vector_name = |l2: bool| if l2 { "l2" } else { "cosine" };
            let mut flags = FlagOptions::new(Some(given), &options)?;
            flags
                .some(
                    "level",
                    level.map(|level| match level {
                        LevelArg::Word => "word",
                        LevelArg::Sentence => "sentence",
                    }),
                )
                .given(
                    "vector_similarity",
                    "similarity",
                    vector_name(matches!(vector_similarity, SimilarityArg::L2)),
                )
                .some("similarity", old_vector_similarity.map(vector_name))
                .given(
                    "lists",
                    "lists",
                    match lists {
                        ListsArg::Shipped => "shipped",
                        ListsArg::Constructed => "constructed",
                    },
                )
                .given(
                    "post",
                    "post",
                    match post {
                        PostArg::None => "none",
                        PostArg::Whitening => "whitening",
                        PostArg::Abtt => "abtt",
                    },
                )
                .given("abtt_k", "abtt_k", abtt_k);
            let options = checked_options(registry, "evalrank", flags)?;
            let (root, datasets) = crate::data::resolve(data_dir, &user, &datasets)?;
            let subject = subject(registry, similarity.as_deref(), &model)?;
            let request = Request {
                datasets,
                seed: sage_core::RunSeed(seed),
                options,
                ..Request::new(&root)
            };
            run_registered(registry, "evalrank", &subject, &request, output)
        }
    }
}
