//! `sage score`: one similarity per input pair.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use sage_core::Similarity;
use sage_metrics::{Bm25Plus, Metric};

use crate::jsonl::read_records;
use crate::output::Output;

pub fn run(metric: Metric, raw: bool, input: &Path, output: Option<PathBuf>) -> Result<()> {
    let records = read_records(input)?;
    // Validate every line before scoring anything: a bad line costs nothing computed.
    let texts: Vec<(&str, &str)> = records
        .iter()
        .map(|r| Ok((r.str("text1")?, r.str("text2")?)))
        .collect::<Result<_>>()?;
    let similarity: Box<dyn Similarity> = match (metric, raw) {
        (Metric::Bm25, true) => Box::new(Bm25Plus::raw()),
        (_, true) => {
            anyhow::bail!("--raw only applies to bm25 ({metric} has no batch normalisation)")
        }
        (m, false) => m.similarity(),
    };
    let scores = similarity
        .score_pairs(&texts)
        .with_context(|| format!("scoring {} with {}", input.display(), similarity.name()))?;
    let mut out = Output::create(output)?;
    for s in scores {
        serde_json::to_writer(&mut out, &serde_json::json!({ "score": s }))?;
        out.write_all(b"\n")?;
    }
    out.finish()
}
