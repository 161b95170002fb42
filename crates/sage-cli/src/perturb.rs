//! `sage perturb`: one perturbation over a JSON-lines file of texts.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{anyhow, Result};
use sage_core::RunSeed;
use sage_perturb::PerturbationSpec;
use serde_json::Value;

use crate::jsonl::{read_records, shown};
use crate::output::Output;

#[derive(Debug, clap::Args)]
pub struct PerturbArgs {
    /// The perturbation (see the list below).
    #[arg(long)]
    kind: String,
    /// A parameter as key=value (repeatable), e.g. --param p=0.5 --param pos=1.
    #[arg(long = "param")]
    params: Vec<String>,
    /// Run seed.
    #[arg(long, default_value_t = RunSeed::default().0)]
    seed: u64,
    /// JSON-lines input ("-" for standard input).
    #[arg(long)]
    input: PathBuf,
    /// Output file (written atomically); standard output when absent.
    #[arg(long)]
    output: Option<PathBuf>,
    /// WordNet 3.0 dict folder for the WordNet kinds (default: $SAGE_DATA_DIR/wordnet/dict).
    #[arg(long)]
    wordnet: Option<PathBuf>,
}

pub fn run(args: PerturbArgs) -> Result<()> {
    let params = args
        .params
        .iter()
        .map(|p| {
            p.split_once('=')
                .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
                .ok_or_else(|| anyhow!("--param {p:?}: expected key=value"))
        })
        .collect::<Result<Vec<_>>>()?;
    let spec = PerturbationSpec {
        kind: args.kind.clone(),
        params,
    };
    let perturbation = spec.build_with_wordnet_dir(args.wordnet.clone())?;
    let records = read_records(&args.input)?;
    let texts: Vec<&str> = records
        .iter()
        .map(|r| r.str("text"))
        .collect::<Result<_>>()?;
    let id = perturbation.id();
    let perturbed = sage_perturb::perturb_texts(perturbation.as_ref(), &texts, RunSeed(args.seed))
        .map_err(|(i, e)| {
            anyhow::Error::new(e).context(format!(
                "{}:{}: {id}",
                shown(&args.input),
                records[i].line
            ))
        })?;
    let mut out = Output::create(args.output)?;
    for (record, p) in records.iter().zip(perturbed) {
        let mut object = record.object.clone();
        let Value::Object(provenance) = serde_json::to_value(&p.provenance)? else {
            unreachable!("a tagged enum serialises to an object")
        };
        object.extend(provenance);
        object.insert("perturbation".into(), Value::String(id.clone()));
        object.insert("seed".into(), Value::from(args.seed));
        object.insert("text".into(), Value::String(p.text));
        serde_json::to_writer(&mut out, &object)?;
        out.write_all(b"\n")?;
    }
    out.finish()
}

/// The kinds and their parameters, for `--help`.
pub fn kinds_help() -> String {
    let mut help = String::from("Kinds (default parameters):\n");
    for kind in PerturbationSpec::KINDS {
        help.push_str(&format!("  {:<24} {}\n", kind.name, kind.describe()));
    }
    help
}
