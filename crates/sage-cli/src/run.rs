//! `sage run <suite>`: every suite of the registry as a subcommand, its flags read off its
//! options' declaration ([`crate::suite_options`]), beside the arguments every suite takes
//! ([`TaskArgs`]). PTEB has a subcommand of its own for what only it takes (`--compare`, MTEB
//! result files); its options' flags come from the same declaration.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Arg, ArgMatches, Args, Command, FromArgMatches, Subcommand};
use sage_suites::{Registry, Request, Subject, Suite};
use serde_json::{Map, Value};

use crate::embed::ModelArgs;
use crate::output::Output;
use crate::remote::Loaded;
use crate::result_file::{write_result, ResultFile};
use crate::suite_options::{options_from, with_option_flags, OptionArgs};

/// The subcommands of `sage run` that the derive knows; every other suite of the registry is
/// added by [`with_suites`] and run by [`run_suite`].
#[derive(Debug, Subcommand)]
pub enum Task {
    /// PTEB (Frank & Afli): MTEB tasks scored on the original data and on paraphrases an LLM
    /// writes now, over several seeds (1337, 1338, ...); per dataset original, mean +- std,
    /// delta, edit distance, fallbacks; pooled Hodges-Lehmann shift and Wilcoxon test.
    Pteb(Box<crate::pteb::PtebArgs>),
    /// A name the registry does not have.
    #[command(external_subcommand)]
    Unknown(Vec<String>),
}

/// `sage run --help`'s last words: what every suite takes.
pub(crate) const RUN_HELP: &str = "Every suite (`sage suites` lists them, each with its options \
and their defaults) takes --similarity S, --dataset NAME/SPLIT|PATH (repeatable), --seed N, \
--data-dir DIR, --output FILE, the model flags, --options JSON and --option KEY=VALUE; its other \
flags are its options' own, each laid over --options when given. A suite registered beyond the \
shipped ones runs the same way.";

/// `run` (the `sage run` command) with a subcommand for every suite of `registry` (PTEB's own
/// given its options' flags).
pub(crate) fn with_suites(mut run: Command, registry: &Registry) -> Command {
    for suite in registry.suites() {
        run = if run.find_subcommand(suite.name()).is_some() {
            run.mut_subcommand(suite.name(), |own| with_option_flags(own, &suite.options()))
        } else {
            run.subcommand(suite_command(suite))
        };
    }
    run
}

/// A suite's subcommand: what every suite takes, and a flag per option it declares. A suite
/// that declares none takes `--max-rows`, its `max_rows` option, as before declarations.
fn suite_command(suite: &dyn Suite) -> Command {
    // the summary after the arguments: theirs would name the struct
    let command = TaskArgs::augment_args(Command::new(suite.name())).about(suite.summary());
    let options = suite.options();
    if options.is_empty() {
        command.arg(
            Arg::new("max_rows")
                .long("max-rows")
                .value_name("N")
                .value_parser(clap::value_parser!(usize))
                .help("Rows sampled per dataset: the suite's max_rows option"),
        )
    } else {
        with_option_flags(command, &options)
    }
}

/// Whether `sage run NAME` is one of the subcommands [`with_suites`] added (not one the derive
/// knows).
pub(crate) fn is_added(name: &str, registry: &Registry) -> bool {
    let derived = Task::augment_subcommands(Command::new("run"));
    derived.find_subcommand(name).is_none() && registry.find(name).is_ok()
}

/// `sage run NAME ...` for a suite of the registry: its arguments, its options from
/// `--options`, `--option` and its flags, checked before any model is loaded.
pub(crate) fn run_suite(name: &str, given: &ArgMatches, registry: &Registry) -> Result<()> {
    let suite = registry.find(name)?;
    let mut task = TaskArgs::from_arg_matches(given)?;
    let declared = suite.options();
    let mut options = options_from(&declared, given, &task.options)?;
    if declared.is_empty() {
        if let Some(rows) = given.get_one::<usize>("max_rows") {
            options.insert("max_rows".into(), Value::from(*rows));
        }
    }
    // EvalRank's spelling from before every suite named its subject with --similarity:
    // `--similarity cos|l2 --model M`
    if name == "evalrank" && task.model.model.is_some() {
        if let Some(old @ ("cos" | "l2")) = task.similarity.as_deref() {
            eprintln!(
                "sage: note: evalrank: --similarity {old} is --vector-similarity {old} now; \
                 --similarity names the model, as in every suite"
            );
            options.insert("similarity".into(), Value::from(old));
            task.similarity = None;
        }
    }
    task.run(registry, name, options)
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
    fn run(&self, registry: &Registry, name: &str, options: Map<String, Value>) -> Result<()> {
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
    options: Map<String, Value>,
) -> Result<Map<String, Value>> {
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

/// Runs a subcommand the derive knows: PTEB, or a name no suite has (an error naming the ones
/// there are). `given` is the subcommand's parsed arguments.
pub fn run(task: Task, registry: &Registry, given: &ArgMatches) -> Result<()> {
    match task {
        Task::Pteb(args) => crate::pteb::run(*args, registry, given),
        Task::Unknown(args) => {
            let name = args.first().map_or("", String::as_str);
            registry.find(name)?;
            bail!("sage run {name}: no such subcommand")
        }
    }
}
