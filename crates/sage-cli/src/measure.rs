//! `sage measure`: the evaluation measures of sage-core on line-oriented input.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Subcommand};
use sage_core::RunSeed;
use sage_measures::RankedDoc;
use serde_json::{json, Value};

use crate::jsonl::{open, read_records, shown, Record};

/// Which measure, and its input.
#[derive(Debug, Subcommand)]
pub enum MeasureCommand {
    /// Pearson's r of {"x","y"} lines (as scipy.stats.pearsonr).
    Pearson(InputFile),
    /// Spearman's rho of {"x","y"} lines, ties averaged (as scipy.stats.spearmanr).
    Spearman(InputFile),
    /// Two-sided Wilcoxon signed-rank test of x − y over {"x","y"} lines (as scipy.stats.wilcoxon).
    Wilcoxon(InputFile),
    /// Hodges–Lehmann estimate of x − y over {"x","y"} lines, with a percentile-bootstrap CI.
    HodgesLehmann(HodgesLehmannArgs),
    /// Homogeneity, completeness and V-measure of {"label_true","label_pred"} lines (as scikit-learn).
    VMeasure(InputFile),
    /// Accuracy, precision, recall, F1 of binary {"label_true","label_pred"} lines (true/1 = positive).
    Classification(InputFile),
    /// Holm-adjusted p-values of {"p"} lines (as statsmodels multipletests "holm").
    Holm(HolmArgs),
    /// Mean and standard deviation of {"x"} lines.
    MeanStd(MeanStdArgs),
    /// Harmonic mean of {"x"} lines (as scipy.stats.hmean).
    HarmonicMean(InputFile),
    /// Mean NDCG@k of a TREC run against qrels (trec_eval ndcg_cut.k).
    Ndcg(RankingArgs),
    /// Mean reciprocal rank of a TREC run against qrels (trec_eval recip_rank; --k for MRR@k).
    Mrr(RankingArgs),
    /// Mean average precision of a TREC run against qrels (trec_eval map).
    Map(RankingArgs),
}

#[derive(Debug, Args)]
pub struct InputFile {
    /// JSON-lines input ("-" for standard input); the keys each measure reads are in its help.
    #[arg(long)]
    input: PathBuf,
}

#[derive(Debug, Args)]
pub struct HodgesLehmannArgs {
    /// JSON-lines input with numeric "x" and "y".
    #[arg(long)]
    input: PathBuf,
    /// Coverage of the confidence interval.
    #[arg(long, default_value_t = 0.95)]
    confidence: f64,
    /// Bootstrap resamples (1 to 1,000,000).
    #[arg(long, default_value_t = 1000, value_parser = within(1..=1_000_000))]
    resamples: usize,
    /// Run seed of the bootstrap.
    #[arg(long, default_value_t = RunSeed::default().0)]
    seed: u64,
}

#[derive(Debug, Args)]
pub struct HolmArgs {
    /// JSON-lines input with a p-value "p" per line.
    #[arg(long)]
    input: PathBuf,
    /// Family-wise error rate.
    #[arg(long, default_value_t = 0.05)]
    alpha: f64,
}

#[derive(Debug, Args)]
pub struct MeanStdArgs {
    /// JSON-lines input with a number "x" per line.
    #[arg(long)]
    input: PathBuf,
    /// Delta degrees of freedom of the standard deviation (0 = population, numpy's default;
    /// at most 1,000).
    #[arg(long, default_value_t = 0, value_parser = within(0..=1_000))]
    ddof: usize,
}

#[derive(Debug, Args)]
pub struct RankingArgs {
    /// TREC run file: `query-id Q0 doc-id rank score tag` per line (the rank column is ignored;
    /// documents are ordered by score, ties by doc id descending, as trec_eval does).
    #[arg(long)]
    run: PathBuf,
    /// Relevance judgements: BEIR TSV (`query-id<TAB>corpus-id<TAB>score`, header optional) or
    /// TREC qrels (`query-id 0 doc-id relevance`).
    #[arg(long)]
    qrels: PathBuf,
    /// Rank cutoff (required for ndcg; optional MRR@k for mrr; not used by map; 1 to
    /// 1,000,000).
    #[arg(long, value_parser = within(1..=1_000_000))]
    k: Option<usize>,
    /// Also print the value of every query.
    #[arg(long)]
    per_query: bool,
}

pub fn run(measure: MeasureCommand) -> Result<Value> {
    Ok(match measure {
        MeasureCommand::Pearson(a) => {
            let (x, y) = read_xy(&a.input)?;
            json!({"measure": "pearson", "value": at(&a.input, sage_measures::pearson(&x, &y))?, "n": x.len()})
        }
        MeasureCommand::Spearman(a) => {
            let (x, y) = read_xy(&a.input)?;
            json!({"measure": "spearman", "value": at(&a.input, sage_measures::spearman(&x, &y))?, "n": x.len()})
        }
        MeasureCommand::Wilcoxon(a) => {
            let (x, y) = read_xy(&a.input)?;
            let mut v = serde_json::to_value(at(&a.input, sage_measures::wilcoxon(&x, &y))?)?;
            v["measure"] = json!("wilcoxon");
            v
        }
        MeasureCommand::HodgesLehmann(a) => {
            let (x, y) = read_xy(&a.input)?;
            let hl = at(
                &a.input,
                sage_measures::hodges_lehmann_bootstrap(
                    &x,
                    &y,
                    a.confidence,
                    a.resamples,
                    RunSeed(a.seed),
                ),
            )?;
            let mut v = serde_json::to_value(hl)?;
            v["measure"] = json!("hodges-lehmann");
            v
        }
        MeasureCommand::VMeasure(a) => {
            let records = read_records(&a.input)?;
            let truth = labels(&records, "label_true")?;
            let predicted = labels(&records, "label_pred")?;
            let mut v =
                serde_json::to_value(at(&a.input, sage_measures::v_measure(&truth, &predicted))?)?;
            v["measure"] = json!("v-measure");
            v["n"] = json!(records.len());
            v
        }
        MeasureCommand::Classification(a) => {
            let records = read_records(&a.input)?;
            let truth = records
                .iter()
                .map(|r| r.bool("label_true"))
                .collect::<Result<Vec<_>>>()?;
            let predicted = records
                .iter()
                .map(|r| r.bool("label_pred"))
                .collect::<Result<Vec<_>>>()?;
            let mut v = serde_json::to_value(at(
                &a.input,
                sage_measures::binary_classification(&truth, &predicted),
            )?)?;
            v["measure"] = json!("classification");
            v
        }
        MeasureCommand::Holm(a) => {
            let p = read_numbers(&a.input, "p")?;
            let mut v = serde_json::to_value(at(&a.input, sage_measures::holm(&p, a.alpha))?)?;
            v["measure"] = json!("holm");
            v
        }
        MeasureCommand::MeanStd(a) => {
            let x = read_numbers(&a.input, "x")?;
            let mut v = serde_json::to_value(at(&a.input, sage_measures::mean_std(&x, a.ddof))?)?;
            v["measure"] = json!("mean-std");
            v
        }
        MeasureCommand::HarmonicMean(a) => {
            let x = read_numbers(&a.input, "x")?;
            json!({"measure": "harmonic-mean", "value": at(&a.input, sage_measures::harmonic_mean(&x))?, "n": x.len()})
        }
        MeasureCommand::Ndcg(a) => {
            let k = a.k.ok_or_else(|| anyhow!("ndcg needs --k (e.g. --k 10)"))?;
            ranking(&a, &format!("ndcg@{k}"), |run, qrels| {
                Ok(sage_measures::ndcg_at_k(run, qrels, k)?)
            })?
        }
        MeasureCommand::Mrr(a) => {
            let name = a.k.map_or_else(|| "mrr".to_owned(), |k| format!("mrr@{k}"));
            ranking(&a, &name, |run, qrels| {
                Ok(sage_measures::reciprocal_rank(run, qrels, a.k)?)
            })?
        }
        MeasureCommand::Map(a) => {
            if a.k.is_some() {
                bail!("map takes no --k (trec_eval's map uses the whole run)");
            }
            ranking(&a, "map", |run, qrels| {
                Ok(sage_measures::average_precision(run, qrels))
            })?
        }
    })
}

/// Names the input in a measure's error ("x.jsonl: pearson is undefined: ...").
fn at<T>(input: &Path, result: sage_core::Result<T>) -> Result<T> {
    result.with_context(|| shown(input))
}

fn read_xy(path: &Path) -> Result<(Vec<f64>, Vec<f64>)> {
    let records = read_records(path)?;
    let x = records
        .iter()
        .map(|r| r.f64("x"))
        .collect::<Result<Vec<_>>>()?;
    let y = records
        .iter()
        .map(|r| r.f64("y"))
        .collect::<Result<Vec<_>>>()?;
    Ok((x, y))
}

fn read_numbers(path: &Path, key: &str) -> Result<Vec<f64>> {
    read_records(path)?.iter().map(|r| r.f64(key)).collect()
}

fn labels(records: &[Record], key: &str) -> Result<Vec<String>> {
    records.iter().map(|r| r.label(key)).collect()
}

type Qrels = HashMap<String, HashMap<String, i32>>;
type Run = BTreeMap<String, Vec<(String, f64)>>;

fn ranking(
    args: &RankingArgs,
    name: &str,
    measure: impl Fn(&[RankedDoc<'_>], &HashMap<String, i32>) -> Result<f64>,
) -> Result<Value> {
    let qrels = read_qrels(&args.qrels)?;
    let run = read_run(&args.run)?;
    let mut per_query = BTreeMap::new();
    let mut without_judgements = 0usize;
    for (query, docs) in &run {
        // trec_eval evaluates only queries that have judgements
        let Some(judged) = qrels.get(query) else {
            without_judgements += 1;
            continue;
        };
        let ranked: Vec<RankedDoc<'_>> = docs
            .iter()
            .map(|(id, score)| RankedDoc { id, score: *score })
            .collect();
        per_query.insert(query.clone(), measure(&ranked, judged)?);
    }
    let values: Vec<f64> = per_query.values().copied().collect();
    if values.is_empty() {
        bail!(
            "{} and {} share no query id: nothing to evaluate",
            shown(&args.run),
            shown(&args.qrels)
        );
    }
    let mut out = json!({
        "measure": name,
        "value": sage_measures::mean(&values)?,
        "queries": values.len(),
        "run_queries_without_judgements": without_judgements,
        "judged_queries_not_in_run": qrels.keys().filter(|q| !run.contains_key(*q)).count(),
    });
    if args.per_query {
        out["per_query"] = serde_json::to_value(per_query)?;
    }
    Ok(out)
}

/// A TREC run by query, documents in file order (see [`sage_data::trec`]).
fn read_run(path: &Path) -> Result<Run> {
    let mut run: Run = BTreeMap::new();
    for r in sage_data::trec::parse_run(Path::new(&shown(path)), open(path)?)? {
        run.entry(r.query).or_default().push((r.doc, r.score));
    }
    Ok(run)
}

/// Judgements by query and document (see [`sage_data::trec`]).
fn read_qrels(path: &Path) -> Result<Qrels> {
    let mut qrels: Qrels = HashMap::new();
    for j in sage_data::trec::parse_qrels(Path::new(&shown(path)), open(path)?)? {
        qrels.entry(j.query).or_default().insert(j.doc, j.relevance);
    }
    Ok(qrels)
}

/// A whole-number flag within its documented range, checked before any work (the measures
/// take these as plain arguments, so clap is where they are bounded): the error names the flag,
/// the value and the range.
fn within(range: std::ops::RangeInclusive<u64>) -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::<usize>::new().range(range)
}
