//! What a `sage run` writes: the report alone, or with `--output` the result file bench-all
//! writes and `sage report` reads. Every subcommand writes through here.

use std::io::Write;

use anyhow::Result;
use sage_suites::{Registry, Request};

use crate::output::Output;
use crate::remote::Loaded;

/// What a result file says beyond the report: the suite, how it was asked for, its subject,
/// and when it started.
pub(crate) struct ResultFile<'a> {
    pub suite: &'a str,
    pub request: &'a Request<'a>,
    pub similarity: sage_core::SimilarityRecord,
    pub start: std::time::Instant,
}

/// Writes what a suite run gave to `out`: a remote model's plan when only planning; else with a
/// `file` the result file (the report, with the remote models' usage, in the envelope bench-all
/// and `sage report` read: rows used, notes, seed, host); else the report alone.
pub(crate) fn write_result(
    mut out: Output,
    outcome: sage_suites::Outcome,
    loaded: &Loaded,
    registry: &Registry,
    file: Option<ResultFile>,
) -> Result<()> {
    let report = loaded.finish(&outcome.report)?;
    match file.filter(|_| !loaded.planning()) {
        Some(file) => {
            let mut envelope = sage_suites::Outcome { report, ..outcome }.envelope(
                registry.find(file.suite)?,
                file.request,
                file.similarity,
                parameters(file.request.root),
                file.start.elapsed().as_secs_f64(),
            );
            envelope.run.embedding = loaded.work();
            serde_json::to_writer_pretty(&mut out, &envelope)?;
        }
        None => serde_json::to_writer_pretty(&mut out, &report)?,
    }
    out.write_all(b"\n")?;
    out.finish()
}

/// How this `sage` was asked to run, for a result file: its arguments (server URLs redacted,
/// paths under the home folder as `~`) and the data root.
pub(crate) fn parameters(root: &sage_data::DataRoot) -> sage_core::Parameters {
    use sage_redact::{home_relative, redact_url};
    sage_core::Parameters {
        data_dir: root
            .root()
            .map(|r| home_relative(&r.display().to_string()))
            .unwrap_or_default(),
        sage_args: std::env::args()
            .skip(1)
            .map(|a| home_relative(&redact_url(&a)))
            .collect(),
    }
}
