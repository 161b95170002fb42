//! `sage`: the command line of sage-rs, as a library so that it can be started over any suite
//! registry.
//!
//! Line-oriented and scriptable: JSON lines in, JSON out, errors on stderr naming the file and
//! line, exit status 1 on any error. Never a panic on bad input.
//!
//! The `sage` binary is [`main`] over [`Registry::standard`]. A crate that defines its own suite
//! or metric registers it and starts the same command line over its registry:
//!
//! ```no_run
//! # use sage_suites::Registry;
//! # fn main() -> std::process::ExitCode {
//! # let my_metric = sage_metrics::Metric::JACCARD;
//! sage_cli::main(Registry::standard() /* .with_suite(MySuite) */.with_metric(my_metric))
//! # }
//! ```
//!
//! Then `sage run <its suite>`, `sage suites`, `sage metrics`, `--similarity <its metric>` and
//! `cargo xtask bench-all --sage <that binary>` take them like the shipped ones.
#![deny(missing_docs)]

mod cache;
mod data;
mod embed;
mod fetch;
mod jsonl;
mod measure;
mod output;
mod perturb;
mod pteb;
mod remote;
mod result_file;
mod run;
mod score;
mod suite_options;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use sage_suites::Registry;

/// Evaluation harness for text-embedding models and text-similarity metrics
/// (SAGE, EvalRank, PTEB, ALIGN-SIM).
#[derive(Debug, Parser)]
#[command(name = "sage", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// One value per process, read once: boxing the larger subcommands would save nothing
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
enum Command {
    /// Score text pairs with a similarity metric or an embedding model (cosine).
    ///
    /// Reads JSON lines {"text1": ..., "text2": ...} (other keys ignored) and writes one
    /// {"score": x} line per input line, in the same order. text1 is the reference (BM25's
    /// one-document corpus), text2 the candidate (BM25's query). BM25 scores are min-max
    /// normalised over the whole input (a constant batch gives 0.5 everywhere); --raw gives the
    /// raw BM25Plus scores. With --model, each distinct text is embedded once and pairs are
    /// scored by cosine similarity.
    Score {
        /// levenshtein | rouge | jaccard | bm25, or another registered metric (`sage metrics`)
        #[arg(long, required_unless_present = "model", conflicts_with = "model")]
        metric: Option<String>,
        /// Un-normalised BM25Plus scores (bm25 only).
        #[arg(long)]
        raw: bool,
        #[command(flatten)]
        model: embed::ModelArgs,
        /// JSON-lines input ("-" for standard input).
        #[arg(long)]
        input: PathBuf,
        /// Output file (written atomically); standard output when absent.
        #[arg(long)]
        output: Option<PathBuf>,
        /// Run Levenshtein even when the input needs more than 5·10¹⁰ bit-parallel steps (about
        /// a minute per core): above that it is refused with its size, as a pair of 5 MB texts
        /// would otherwise run for minutes unannounced.
        #[arg(long)]
        allow_long: bool,
    },
    /// Embed texts with a local model: {"text"} lines in, an .npy matrix or {"embedding"} lines
    /// out (one row per line, same order).
    Embed {
        #[command(flatten)]
        model: embed::ModelArgs,
        /// JSON-lines input with a "text" key ("-" for standard input).
        #[arg(long)]
        input: PathBuf,
        /// out.npy (float32 matrix) or out.jsonl; JSON lines on standard output when absent.
        #[arg(long)]
        output: Option<PathBuf>,
    },
    /// Perturb texts: SAGE's robustness and sensitivity transforms, ALIGN-SIM's WordNet and
    /// jumbling perturbations.
    ///
    /// Reads JSON lines with a "text" key and writes, per line and in order, the input object with
    /// "text" replaced by the perturbed text, plus "perturbation" (its id), "seed" and the
    /// provenance fields ("kind" and what changed). Line i is perturbed with the generator derived
    /// from (seed, perturbation id, i): the same seed gives the same bytes on any machine and any
    /// number of threads.
    #[command(after_help = perturb::kinds_help())]
    Perturb(perturb::PerturbArgs),
    /// Run an evaluation task.
    #[command(after_help = run::RUN_HELP)]
    Run {
        #[command(subcommand)]
        task: run::Task,
    },
    /// List the evaluation suites `sage run` takes from the suite registry: one JSON line each
    /// ({"name", "summary", "default_datasets", "kinds", "takes_metrics", "result_suite",
    /// "result_task", "cost_hints", "options"}: each option's key, flag, help, range and
    /// default), for scripts and bench-all (which balances shards by the hints). `sage suites
    /// check` asks about one run.
    Suites {
        #[command(subcommand)]
        command: Option<SuitesCommand>,
    },
    /// List the classical metrics `--similarity` and `--metric` take: one JSON line each
    /// ({"name"}), for scripts and bench-all.
    Metrics,
    /// The dataset registry and the local data mirror.
    Data {
        #[command(subcommand)]
        command: data::DataCommand,
    },
    /// List the embedding models on this machine: folders under $SAGE_MODELS_DIR (default
    /// ~/.cache/sage-models) and model snapshots in the Hugging Face cache; one JSON line each
    /// ({"spec", "dir", "origin"}); pass a spec to --model or --similarity. `sage models fetch`
    /// gets the ones the tests and the default run use.
    Models {
        #[command(subcommand)]
        command: Option<ModelsCommand>,
    },
    /// The GPU `--cuda` runs on: one JSON line ({"gpu", "name", "compute_capability",
    /// "free_bytes", "total_bytes", "driver_cuda", "libraries_cuda"}), or one line saying why
    /// none can be used (no CUDA in this build, no GPU, a driver too old), exit status 1.
    /// bench-all asks it before a `device = "cuda"` run.
    Gpu,
    /// Tables and plots of a results folder (as `cargo xtask bench-all` writes it): writes
    /// report.md, summary.csv and a self-contained report.html into it.
    Report {
        /// The results folder (similarity/suite/task.json files).
        dir: PathBuf,
        /// An MTEB results folder (a clone of MTEB's results repository, or the cache `sage run
        /// pteb --mteb-output` writes): each model's published scores go beside its PTEB
        /// original scores.
        #[arg(long, value_name = "DIR")]
        mteb_results: Option<PathBuf>,
    },
    /// Compute an evaluation measure on line-oriented input and print one JSON object.
    Measure {
        #[command(subcommand)]
        measure: measure::MeasureCommand,
    },
    /// PTEB's paraphraser selection: `sage pteb qualify`.
    Pteb {
        #[command(subcommand)]
        command: PtebCommand,
    },
    /// Check or repair the embedding cache offline.
    Cache {
        #[command(subcommand)]
        command: cache::CacheCommand,
    },
    /// Every suite on every similarity, one result file per (similarity, suite, task), then the
    /// report: `cargo xtask bench-all` without a checkout, run by this `sage` (so by its
    /// registry) with no build.
    ///
    /// Takes bench-all's options: --config FILE, --quick, --overwrite, --out DIR (default:
    /// ./results), --sage BIN, --plan, --list-jobs, --jobs FILE, --shard I/N, --costs FILE,
    /// --gather (see docs/src/bench-all.md). Data: the configuration's data_dir, else
    /// $SAGE_DATA_DIR, else ./data/fixtures/mirror when run in a checkout.
    #[command(disable_help_flag = true)]
    BenchAll {
        /// bench-all's options, as `cargo xtask bench-all` takes them.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

#[derive(Debug, Subcommand)]
enum ModelsCommand {
    /// Fetch models from the Hugging Face hub into folders under $SAGE_MODELS_DIR: the hub
    /// cache first (HF_HUB_CACHE, HF_HOME), so HF_HUB_OFFLINE=1 builds them from a copied cache;
    /// a complete folder is kept. One JSON line per model ({"name", "status", "dir"}).
    Fetch {
        /// Models by folder name (default: the set the tests and the default run use; `all`:
        /// every known model). `--list` names them.
        names: Vec<String>,
        /// Where the folders go (default: $SAGE_MODELS_DIR, else ~/.cache/sage-models).
        #[arg(long)]
        dest: Option<PathBuf>,
        /// List the known models and exit.
        #[arg(long)]
        list: bool,
    },
}

#[derive(Debug, Subcommand)]
enum SuitesCommand {
    /// Whether a run of suite NAME with these options can be made here, running nothing: its
    /// options read and checked (an error names the bad one), what this machine lacks for it (a
    /// model not fetched), and where its result goes. One JSON line ({"name", "result_suite",
    /// "result_task", "missing"}): what bench-all asks of every configured run before its first
    /// job.
    Check {
        /// The suite, as `sage run` takes it.
        name: String,
        #[command(flatten)]
        options: suite_options::OptionArgs,
    },
}

#[derive(Debug, Subcommand)]
enum PtebCommand {
    /// Score candidate judges against STS gold ratings and candidate paraphrasers on a sample
    /// (judge similarity, edit distance, runtime, the judge-free quality figures and the
    /// quality gate's verdict per dataset): the PTEB paper's selection step, so a paraphraser is
    /// picked with evidence.
    Qualify(Box<pteb::QualifyArgs>),
}

/// Fixes the worker count once, before any thread starts. candle asks for it on every CPU
/// matrix product and, unless `RAYON_NUM_THREADS` is set, each asking re-reads /proc/cpuinfo to
/// count physical cores: 9% of a CPU paraphrasing run, whose attention is thousands of small
/// products per pass. The count set is candle's own choice, so candle computes as before;
/// rayon's pool (ours) then has that many workers too.
fn fix_thread_count() {
    if std::env::var_os("RAYON_NUM_THREADS").is_none() {
        let threads = candle_core::utils::get_num_threads();
        std::env::set_var("RAYON_NUM_THREADS", threads.to_string());
    }
}

/// Keeps large buffers in the heap. glibc serves an allocation over its mmap threshold (at
/// most 32 MiB) with fresh pages from the kernel and unmaps them when freed, so a transformer's
/// activations (a batch of 8,192 tokens through a 3,072-wide layer is 100 MB) page-fault in
/// anew at every layer: 10 million faults and 16% of the wall time embedding long documents
/// with all-mpnet-base-v2 (SAGE sensitivity, one document per dataset: 44.4 s, heap-only 37.4 s,
/// same peak memory). With mmap off and trimming off, freed buffers are reused. A heap also
/// grows 16 MiB at a time (`M_TOP_PAD`): a worker thread's arena otherwise grows by one
/// `mprotect` per allocation past its end, ~4% of a `sage score --metric rouge` process over
/// 900 CNN/DailyMail pairs. Left alone when the user tunes glibc's allocator through its own
/// variables.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn keep_large_buffers_in_the_heap() {
    let tuned = [
        "GLIBC_TUNABLES",
        "MALLOC_MMAP_MAX_",
        "MALLOC_TRIM_THRESHOLD_",
        "MALLOC_TOP_PAD_",
    ]
    .iter()
    .any(|v| std::env::var_os(v).is_some());
    if !tuned {
        // SAFETY: mallopt only changes the allocator's parameters; it is called before any
        // other thread exists.
        unsafe {
            libc::mallopt(libc::M_MMAP_MAX, 0);
            libc::mallopt(libc::M_TRIM_THRESHOLD, libc::c_int::MAX);
            libc::mallopt(libc::M_TOP_PAD, 16 << 20);
        }
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn keep_large_buffers_in_the_heap() {}

/// Keeps caught panics off the terminal: redb's (sage-embed catches them, a structurally broken
/// cache file, and reports an error that says what to do) and polars' on a user's Parquet file
/// (sage-data turns them into an error naming the file). The default "thread panicked" text would
/// only read as a crash. Every other panic is printed as usual.
fn quiet_caught_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let in_redb = info.location().is_some_and(|l| l.file().contains("/redb-"));
        // polars on a user's Parquet file: sage-data catches it and says what failed, once
        if !in_redb && !sage_data::reading_parquet() {
            default(info);
        }
    }));
}

/// `sage models fetch`: each asked model fetched (or found complete), one JSON line each; every
/// model is tried, and the run fails at the end naming those that could not be had.
fn fetch_models(names: &[String], dest: Option<PathBuf>, list: bool) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if list {
        for m in sage_embed::HUB_MODELS {
            let sources: Vec<&str> = m.files.iter().map(|(repo, _, _)| *repo).collect();
            writeln!(
                out,
                "{}",
                serde_json::json!({"name": m.name, "default": m.default, "about": m.about, "hub": sources})
            )?;
        }
        for (name, where_from) in sage_embed::NOT_ON_THE_HUB {
            writeln!(
                out,
                "{}",
                serde_json::json!({"name": name, "default": true, "hub": [], "about": where_from})
            )?;
        }
        return Ok(());
    }
    let resolve = sage_embed::ResolveOptions::from_env();
    let Some(dest) = dest.or(resolve.models_dir) else {
        anyhow::bail!("no models folder: set SAGE_MODELS_DIR or pass --dest");
    };
    let models: Vec<&sage_embed::HubModel> = match names {
        [] => sage_embed::HUB_MODELS
            .iter()
            .filter(|m| m.default)
            .collect(),
        [all] if all == "all" => sage_embed::HUB_MODELS.iter().collect(),
        names => names
            .iter()
            .map(|n| sage_embed::hub_model(n))
            .collect::<Result<_, _>>()?,
    };
    if names.is_empty() {
        for (name, where_from) in sage_embed::NOT_ON_THE_HUB {
            eprintln!("sage: note: models: {name} is not fetched (not on the hub in sage's layout: {where_from}); tests that need it say they skipped");
        }
    }
    let mut failed = Vec::new();
    for model in models {
        match sage_embed::fetch_model(model, &dest, &resolve.hub) {
            Ok(fetched) => {
                let (status, dir) = match fetched {
                    sage_embed::Fetched::Fetched(dir) => ("fetched", dir),
                    sage_embed::Fetched::Present(dir) => ("present", dir),
                };
                writeln!(
                    out,
                    "{}",
                    serde_json::json!({"name": model.name, "status": status, "dir": dir})
                )?;
            }
            Err(e) => {
                eprintln!("sage: error: {}", sage_core::printable(&e.to_string()));
                failed.push(model.name);
            }
        }
    }
    if !failed.is_empty() {
        anyhow::bail!("could not fetch {}", failed.join(", "));
    }
    Ok(())
}

/// `sage report DIR`: the report files, and one line saying where they are.
fn report(dir: &std::path::Path, mteb_results: Option<&std::path::Path>) -> anyhow::Result<()> {
    let written = sage_report::write_report(dir, mteb_results)?;
    eprintln!(
        "sage: report of {} result files: {} (report.md, summary.csv, report.html)",
        written.result_files,
        dir.display()
    );
    Ok(())
}

/// `sage suites check`: one run of a suite checked, nothing run.
fn check_suite(
    registry: &Registry,
    name: &str,
    options: &suite_options::OptionArgs,
) -> anyhow::Result<()> {
    let suite = registry.find(name)?;
    let options = options.base()?;
    suite.check_options(&options)?;
    let (result_suite, result_task) = suite.result_location(&options);
    println!(
        "{}",
        serde_json::json!({
            "name": suite.name(),
            "result_suite": result_suite,
            "result_task": result_task,
            "missing": suite.missing(&options),
        })
    );
    Ok(())
}

/// `sage bench-all`: bench-all driving this very binary, so a `sage` of one's own benches its own
/// registry without a checkout or a build.
fn bench_all(args: &[String]) -> anyhow::Result<()> {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        let mut cli = Cli::command();
        cli.find_subcommand_mut("bench-all")
            .expect("bench-all is a subcommand")
            .print_long_help()?;
        return Ok(());
    }
    let invocation = sage_bench::Invocation::parse(args, PathBuf::from("results"))?;
    let this = std::env::current_exe()?;
    let environment = sage_bench::Environment {
        sage: Box::new(move |_cuda| Ok(this.clone())),
        // in a checkout, its fixtures, as `cargo xtask bench-all` falls back on
        fallback_data_dir: std::path::absolute("data/fixtures/mirror")
            .ok()
            .filter(|d| d.is_dir()),
        revision: option_env!("SAGE_GIT_REVISION").map(str::to_owned),
    };
    Ok(sage_bench::bench_all(&invocation, &environment)?)
}

/// Runs the command line (`std::env::args`) over `registry`'s suites and metrics: the whole of
/// the `sage` binary, which passes [`Registry::standard`].
///
/// (See [`command`] for the command line alone.)
pub fn main(registry: Registry) -> ExitCode {
    quiet_caught_panics();
    keep_large_buffers_in_the_heap();
    fix_thread_count();
    // a misspelt cap would otherwise cap nothing and the run would measure what was not asked
    if let Err(e) = sage_kernels::cpu::requested() {
        eprintln!("sage: error: {e}");
        return ExitCode::FAILURE;
    }
    let matches = command_over(&registry).get_matches();
    // a suite's own subcommand, made from the registry: run it before the derive reads the rest
    let result = match matches.subcommand() {
        Some(("run", run)) => match run.subcommand() {
            Some((name, given)) if run::is_added(name, &registry) => {
                Some(run::run_suite(name, given, &registry))
            }
            _ => None,
        },
        _ => None,
    };
    let result = match result {
        Some(result) => result,
        None => run_derived(&matches, &registry),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // A closed pipe (`sage data list | head`) is the reader's choice, not an error.
        Err(e)
            if e.chain().any(|c| {
                let broken = Some(std::io::ErrorKind::BrokenPipe);
                c.downcast_ref::<std::io::Error>().map(std::io::Error::kind) == broken
                    || c.downcast_ref::<serde_json::Error>()
                        .and_then(serde_json::Error::io_error_kind)
                        == broken
            }) =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("sage: error: {}", sage_core::said_once(e.as_ref()));
            ExitCode::FAILURE
        }
    }
}

/// Every command the derive knows, run.
fn run_derived(matches: &clap::ArgMatches, registry: &Registry) -> anyhow::Result<()> {
    let cli = Cli::from_arg_matches(matches).unwrap_or_else(|e| e.exit());
    match cli.command {
        Command::Score {
            metric,
            raw,
            model,
            input,
            output,
            allow_long,
        } => metric
            .map(|name| registry.metric(&name))
            .transpose()
            .map_err(anyhow::Error::from)
            .and_then(|metric| score::run(metric, raw, &model, &input, output, allow_long)),
        Command::Embed {
            model,
            input,
            output,
        } => embed::run(&model, &input, output),
        Command::Perturb(args) => perturb::run(args),
        Command::Data { command } => data::run(command, registry),
        Command::Run { task } => {
            // which of a suite's flags were given, not defaulted: only those set its options
            let given = matches
                .subcommand_matches("run")
                .and_then(|run| run.subcommand())
                .map(|(_, given)| given)
                .expect("`sage run` has a suite");
            run::run(task, registry, given)
        }
        Command::Report { dir, mteb_results } => report(&dir, mteb_results.as_deref()),
        Command::Suites {
            command: Some(SuitesCommand::Check { name, options }),
        } => check_suite(registry, &name, &options),
        Command::Suites { command: None } => {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            registry
                .catalogue()
                .iter()
                .try_for_each(|s| -> anyhow::Result<()> {
                    writeln!(out, "{}", serde_json::to_string(s)?)?;
                    Ok(())
                })
        }
        Command::Metrics => {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            registry
                .metrics()
                .iter()
                .try_for_each(|m| -> anyhow::Result<()> {
                    writeln!(out, "{}", serde_json::json!({ "name": m.name() }))?;
                    Ok(())
                })
        }
        Command::Models {
            command: Some(ModelsCommand::Fetch { names, dest, list }),
        } => fetch_models(&names, dest, list),
        Command::Models { command: None } => {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            sage_embed::discover_models(&sage_embed::ResolveOptions::from_env())
                .iter()
                .try_for_each(|m| -> anyhow::Result<()> {
                    writeln!(out, "{}", serde_json::to_string(m)?)?;
                    Ok(())
                })
        }
        Command::Gpu => {
            let gpu = sage_device::describe(0)?;
            println!(
                "{}",
                serde_json::json!({
                    "gpu": gpu.ordinal,
                    "name": gpu.name,
                    "compute_capability": format!("{}.{}", gpu.compute_capability.0, gpu.compute_capability.1),
                    "free_bytes": gpu.memory.free,
                    "total_bytes": gpu.memory.total,
                    "driver_cuda": gpu.driver.to_string(),
                    "libraries_cuda": gpu.libraries.to_string(),
                })
            );
            Ok(())
        }
        Command::Cache { command } => cache::run(command),
        Command::BenchAll { args } => bench_all(&args),
        Command::Pteb {
            command: PtebCommand::Qualify(args),
        } => {
            let given = matches
                .subcommand_matches("pteb")
                .and_then(|pteb| pteb.subcommand_matches("qualify"))
                .expect("`sage pteb qualify` was parsed");
            pteb::qualify(*args, registry, given)
        }
        Command::Measure { measure } => measure::run(measure).and_then(|value| {
            use std::io::Write;
            writeln!(std::io::stdout(), "{}", serde_json::to_string(&value)?)?;
            Ok(())
        }),
    }
}

/// The `sage` command line of the standard registry, as clap knows it: what the guide's
/// examples are checked against, and what shell completions are made from.
pub fn command() -> clap::Command {
    command_over(&Registry::standard())
}

/// The command line over `registry`: a `sage run` subcommand per suite, each with its options'
/// flags, and `sage pteb qualify` with the PTEB options it takes.
fn command_over(registry: &Registry) -> clap::Command {
    Cli::command()
        .mut_subcommand("run", |run| run::with_suites(run, registry))
        .mut_subcommand("pteb", |pteb| {
            pteb.mut_subcommand("qualify", |qualify| {
                suite_options::with_option_flags(qualify, &pteb::qualify_options(registry))
            })
        })
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    /// A 16 MiB buffer (over glibc's default mmap threshold of 128 KiB, under a thread arena's
    /// 64 MiB) comes from the heap, not from a fresh mapping, once the setting is made.
    #[test]
    fn large_buffers_come_from_the_heap() {
        super::keep_large_buffers_in_the_heap();
        // SAFETY: mallinfo2 only reads the allocator's counters.
        let mapped = || unsafe { libc::mallinfo2() }.hblks;
        let before = mapped();
        let buffer = std::hint::black_box(vec![1u8; 16 << 20]);
        assert!(mapped() <= before, "a 16 MiB buffer was mapped on its own");
        drop(buffer);
    }
}
