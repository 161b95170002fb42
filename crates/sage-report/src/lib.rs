//! The report of a sage-rs results folder (`cargo xtask bench-all`'s
//! `DIR/<similarity>/<suite>/<task>.json`): `sage report DIR` and `sage_rs.report(dir)`.
//!
//! Writes, atomically, into DIR:
//! - `report.html`: one self-contained file (inline CSS, SVG and a few lines of script; nothing
//!   fetched at view time). Its first screen is the answer to "which one, and is the difference
//!   real": a similarity × SAGE-category heatmap with 95% intervals and the best per column
//!   marked, then the ranking by the overall score with the pairs whose difference is
//!   significant. Then the details: every table, each with the plots that explain it beside it.
//!   Tables sort by any column on a click (and from the address: `#sort=<table>:<column>:asc`);
//!   notes about skipped datasets are one line that opens.
//! - `report.md`: the same answer and tables in markdown.
//! - `summary.csv`: every number of those tables, one per line.
//!
//! Design:
//! - Significance is a paired bootstrap over the units both similarities were scored on. Each
//!   SAGE task writes every bootstrap resample's score (`bootstrap` in its report); resample `b`
//!   of two runs with the same seed, label and group sizes drew the same unit indices, so when
//!   the rows are the same (the envelopes' row selections are equal) the per-resample
//!   differences are a paired bootstrap of the difference, with no unit written anywhere. The
//!   overall score's resample is the mean of its five categories' resamples (each category drew
//!   its units independently: a stratified bootstrap). Every pair of ranked similarities is
//!   tested, Holm-corrected over all of them.
//! - One colour per similarity in every plot and in the colour key, assigned in the report's
//!   similarity order, so a colour means the same thing across the page.
//! - Reads only the result files: a report can be made again, on another machine, from a copied
//!   folder.
#![deny(missing_docs)]

use std::path::{Path, PathBuf};

mod answer;
mod load;
mod plots;
mod render;
mod tables;

pub use answer::{Answer, Cell, Comparison, Heatmap, HeatmapRow, Ranked, Ranking};

/// Why a report could not be made. Nothing is written unless every input was read.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file or folder could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// A result file is not JSON, or not a result envelope.
    #[error("{}: not a sage-rs result file: {source}", path.display())]
    NotJson {
        /// The file.
        path: PathBuf,
        /// Where the parse failed (line and column).
        source: serde_json::Error,
    },
    /// A result file of another schema.
    #[error("{}: schema {found} is not {:?} (made by another harness version?)", path.display(), sage_core::RESULT_SCHEMA)]
    Schema {
        /// The file.
        path: PathBuf,
        /// Its `schema` value.
        found: String,
    },
    /// The folder holds no result file.
    #[error("{}: no result files (expected <similarity>/<suite>/<task>.json, as cargo xtask bench-all writes)", .0.display())]
    Empty(PathBuf),
    /// The MTEB results given to compare with could not be read.
    #[error("reading the MTEB results {}: {source}", path.display())]
    Mteb {
        /// The MTEB results folder.
        path: PathBuf,
        /// The reader's error (names the file).
        source: pteb::PtebError,
    },
    /// A plot could not be drawn.
    #[error("drawing a plot: {0}")]
    Plot(String),
    /// A statistic was asked for with an invalid argument.
    #[error(transparent)]
    Core(#[from] sage_core::SageError),
}

impl<E: std::error::Error + Send + Sync> From<plotters::drawing::DrawingAreaErrorKind<E>>
    for ReportError
{
    fn from(e: plotters::drawing::DrawingAreaErrorKind<E>) -> Self {
        ReportError::Plot(e.to_string())
    }
}

/// This crate's results.
pub type Result<T, E = ReportError> = std::result::Result<T, E>;

/// What [`write_report`] wrote.
#[derive(Debug, serde::Serialize)]
pub struct Written {
    /// Result files read.
    pub result_files: usize,
    /// DIR/report.md.
    pub markdown: PathBuf,
    /// DIR/summary.csv.
    pub csv: PathBuf,
    /// DIR/report.html.
    pub html: PathBuf,
    /// The first screen's numbers: heatmap, ranking, significance.
    pub answer: Answer,
}

/// Reads every result file under `dir` (and MTEB's published scores from `mteb_results`, shown
/// beside PTEB's original scores) and writes report.md, summary.csv and report.html into `dir`.
pub fn write_report(dir: &Path, mteb_results: Option<&Path>) -> Result<Written> {
    let files = load::load(dir)?;
    if files.is_empty() {
        return Err(ReportError::Empty(dir.to_owned()));
    }
    let mut sink = tables::Sink::default();
    if let Some(path) = mteb_results {
        sink.published = pteb::mteb::read_results(path).map_err(|source| ReportError::Mteb {
            path: path.to_owned(),
            source,
        })?;
    }
    let answer = answer::answer(&files)?;
    let tables = tables::tables(&files, &answer, &mut sink);
    let provenance = load::provenance(&files);
    let palette = plots::Palette::new(&load::similarities(&files));
    let charts = plots::charts(&files, &palette)?;
    let page = render::Page {
        answer: &answer,
        tables: &tables,
        charts: &charts,
        provenance: &provenance,
        palette: &palette,
    };
    let write = |name: &str, content: &str| -> Result<PathBuf> {
        let path = dir.join(name);
        let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
        let io = |p: &Path| {
            let p = p.to_owned();
            move |source| ReportError::Io { path: p, source }
        };
        std::fs::write(&tmp, content).map_err(io(&tmp))?;
        std::fs::rename(&tmp, &path).map_err(io(&path))?;
        Ok(path)
    };
    let markdown = write("report.md", &render::markdown(&page))?;
    let csv = write("summary.csv", &tables::summary_csv(&sink, &answer))?;
    let html = write("report.html", &render::html(&page))?;
    Ok(Written {
        result_files: files.len(),
        markdown,
        csv,
        html,
        answer,
    })
}
