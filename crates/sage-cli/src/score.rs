//! `sage score`: one similarity per input pair.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use sage_core::{EmbeddingSimilarity, Similarity};
use sage_metrics::Metric;

use crate::embed::ModelArgs;
use crate::jsonl::read_records;
use crate::output::Output;

/// Bit-parallel steps of Levenshtein work run without `--allow-long` (about a minute per core).
const LEVENSHTEIN_LIMIT: u64 = 50_000_000_000;

/// Above this many steps the size is announced before the work starts.
const LEVENSHTEIN_ANNOUNCE: u64 = 1_000_000_000;

pub fn run(
    metric: Option<Metric>,
    raw: bool,
    model: &ModelArgs,
    input: &Path,
    output: Option<PathBuf>,
    allow_long: bool,
) -> Result<()> {
    let records = read_records(input)?;
    // Validate every line before scoring anything: a bad line costs nothing computed.
    let texts: Vec<(&str, &str)> = records
        .iter()
        .map(|r| Ok((r.str("text1")?, r.str("text2")?)))
        .collect::<Result<_>>()?;
    if metric == Some(Metric::LEVENSHTEIN) {
        check_levenshtein_work(&texts, input, allow_long)?;
    }
    // before anything is computed or sent (see `Output::create`)
    let mut out = Output::create(output)?;
    let mut loaded = crate::remote::Loaded::default();
    let similarity: Box<dyn Similarity> = match (metric, raw, &model.model) {
        (Some(m), true, _) => m.raw_similarity()?,
        (Some(m), false, _) => m.similarity(),
        (None, true, _) => anyhow::bail!("--raw only applies to bm25"),
        (None, false, Some(spec)) => {
            Box::new(EmbeddingSimilarity::cosine(model.load(spec, &mut loaded)?))
        }
        (None, false, None) => anyhow::bail!("give --metric or --model"),
    };
    let scores = similarity
        .score_pairs(&texts)
        .with_context(|| format!("scoring {} with {}", input.display(), similarity.name()))?;
    if loaded.planning() {
        serde_json::to_writer_pretty(&mut out, &loaded.finish(&())?)?;
        out.write_all(b"\n")?;
        return out.finish();
    }
    loaded.finish(&())?;
    // a score that is not a number would print as null: say which pair instead
    if let Some((record, score)) = records.iter().zip(&scores).find(|(_, s)| !s.is_finite()) {
        anyhow::bail!(
            "{}:{}: {} gave {score} for this pair: not a similarity",
            crate::jsonl::shown(input),
            record.line,
            similarity.name()
        );
    }
    for s in scores {
        serde_json::to_writer(&mut out, &serde_json::json!({ "score": s }))?;
        out.write_all(b"\n")?;
    }
    out.finish()
}

/// States the size of a long Levenshtein run before it starts, and refuses one past
/// [`LEVENSHTEIN_LIMIT`] unless allowed.
fn check_levenshtein_work(texts: &[(&str, &str)], input: &Path, allow_long: bool) -> Result<()> {
    let (steps, heaviest) = texts
        .iter()
        .enumerate()
        .map(|(i, (a, b))| (sage_metrics::levenshtein_work(a, b), i))
        .fold((0u64, (0u64, 0usize)), |(total, worst), (w, i)| {
            (total.saturating_add(w), worst.max((w, i)))
        });
    if steps <= LEVENSHTEIN_ANNOUNCE {
        return Ok(());
    }
    let cores = rayon::current_num_threads() as f64;
    let size = format!(
        "{}: levenshtein on {} pairs needs ~{steps:.1e} bit-parallel steps (the largest pair, line \
         {}, ~{:.1e}): about {:.0} s on {cores} cores",
        crate::jsonl::shown(input),
        texts.len(),
        heaviest.1 + 1,
        heaviest.0 as f64,
        steps as f64 / 1e9 / cores,
    );
    if steps > LEVENSHTEIN_LIMIT && !allow_long {
        anyhow::bail!(
            "{size}; the limit is {LEVENSHTEIN_LIMIT:.0e} steps: pass --allow-long to run it"
        );
    }
    eprintln!("sage: {size}");
    Ok(())
}
