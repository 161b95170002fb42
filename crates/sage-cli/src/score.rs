//! `sage score`: one similarity per input pair.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use sage_core::{EmbeddingSimilarity, Similarity};
use sage_metrics::{Bm25Plus, Metric};

use crate::embed::ModelArgs;
use crate::jsonl::read_records;
use crate::output::Output;

pub fn run(
    metric: Option<Metric>,
    raw: bool,
    model: &ModelArgs,
    input: &Path,
    output: Option<PathBuf>,
) -> Result<()> {
    let records = read_records(input)?;
    // Validate every line before scoring anything: a bad line costs nothing computed.
    let texts: Vec<(&str, &str)> = records
        .iter()
        .map(|r| Ok((r.str("text1")?, r.str("text2")?)))
        .collect::<Result<_>>()?;
    let similarity: Box<dyn Similarity> = match (metric, raw, &model.model) {
        (Some(Metric::Bm25), true, _) => Box::new(Bm25Plus::raw()),
        (Some(m), true, _) => {
            anyhow::bail!("--raw only applies to bm25 ({m} has no batch normalisation)")
        }
        (Some(m), false, _) => m.similarity(),
        (None, true, _) => anyhow::bail!("--raw only applies to bm25"),
        (None, false, Some(spec)) => Box::new(EmbeddingSimilarity::cosine(model.load(spec)?)),
        (None, false, None) => anyhow::bail!("give --metric or --model"),
    };
    let scores = similarity
        .score_pairs(&texts)
        .with_context(|| format!("scoring {} with {}", input.display(), similarity.name()))?;
    let mut out = Output::create(output)?;
    if crate::remote::planning() {
        serde_json::to_writer_pretty(&mut out, &crate::remote::finish(&())?)?;
        out.write_all(b"\n")?;
        return out.finish();
    }
    crate::remote::finish(&())?;
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
