//! `sage perturb`: one perturbation over a JSON-lines file of texts.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{anyhow, Context, Result};
use rayon::prelude::*;
use sage_core::RunSeed;
use sage_perturb::{PerturbationSpec, WordNet};
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
    let wordnet_dir = args.wordnet.clone();
    let perturbation = spec.build(|| {
        let dir = wordnet_dir.or_else(WordNet::default_dir).ok_or_else(|| {
            sage_perturb::PerturbError::Spec(format!(
                "{} needs WordNet: pass --wordnet DIR or set SAGE_DATA_DIR (uses $SAGE_DATA_DIR/wordnet/dict)",
                args.kind
            ))
        })?;
        Ok(Arc::new(WordNet::open(dir)?))
    })?;
    let records = read_records(&args.input)?;
    let texts: Vec<&str> = records
        .iter()
        .map(|r| r.str("text"))
        .collect::<Result<_>>()?;
    let id = perturbation.id();
    let seed = RunSeed(args.seed);
    let perturbed = texts
        .par_iter()
        .enumerate()
        .map(|(i, text)| {
            perturbation
                .apply(text, &mut seed.rng_for_item(&id, i as u64))
                .with_context(|| format!("{}:{}: {id}", shown(&args.input), records[i].line))
        })
        .collect::<Result<Vec<_>>>()?;
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
