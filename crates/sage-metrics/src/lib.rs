//! # sage-metrics
//!
//! The classical text-similarity metrics of SAGE, each a [`sage_core::Similarity`], matching the
//! Python stack the SAGE authors used to 1e-6 on the same inputs:
//!
//! | metric | reference | tokens |
//! |---|---|---|
//! | [`LevenshteinRatio`] | python-Levenshtein `ratio` | Unicode code points |
//! | [`Rouge`] | `rouge_score` 0.1.2, mean of ROUGE-1 F and ROUGE-2 F | cl100k_base ids |
//! | [`Jaccard`] | set overlap | cl100k_base ids |
//! | [`Bm25Plus`] | `rank_bm25.BM25Plus`, one-document corpus, min–max over the batch | cl100k_base ids |
//!
//! Design: the token metrics share one batch path — each distinct text of a batch is tokenized
//! once (sage-tokens: tiktoken's ids, ranks embedded, nothing downloaded) and reduced to sorted token or bigram
//! arrays, then pairs are compared by merging sorted arrays, in parallel with rayon. No hash maps
//! in the hot loop. The Levenshtein ratio uses a bit-parallel LCS with thread-local buffers.
//!
//! BM25's tokenization is not stated by the SAGE paper; cl100k ids are used so that all three
//! token metrics see the same tokens.
#![deny(missing_docs)]

mod bit_parallel;
mod bm25;
mod distinct;
mod jaccard;
mod lcs_lanes;
mod levenshtein;
mod rouge;
mod tokens;

use std::fmt;

pub use bm25::{min_max, Bm25Normalisation, Bm25Plus};
pub use jaccard::Jaccard;
pub use levenshtein::{levenshtein_ratio, levenshtein_work, LevenshteinRatio};
pub use rouge::Rouge;
use sage_core::Similarity;
pub use tokens::cl100k;

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MetricsError {
    /// A metric name that is not among the registered metrics.
    #[error("unknown metric {name:?}; known metrics: {known}")]
    UnknownMetric {
        /// The name given.
        name: String,
        /// The known names, comma-separated.
        known: String,
    },
    /// Raw scores asked of a metric that has no batch normalisation to leave out.
    #[error("raw scores only apply to bm25 ({metric} has no batch normalisation)")]
    NoRawScores {
        /// The metric asked.
        metric: Metric,
    },
    /// An error from sage-core.
    #[error(transparent)]
    Core(#[from] sage_core::SageError),
}

/// A classical metric as a registry holds it: a name and how to build its [`Similarity`].
///
/// A handle, not a closed enum, so that a metric defined elsewhere (a user's crate, a test) is
/// registered the same way as the four of SAGE: one `Similarity` impl and one
/// `Metric::new("name", build)` given to the suite registry (`sage_suites::Registry::with_metric`).
/// Two handles are the same metric when their names are.
#[derive(Clone, Copy)]
pub struct Metric {
    name: &'static str,
    build: fn() -> Box<dyn Similarity>,
    raw: Option<fn() -> Box<dyn Similarity>>,
}

/// `Box<dyn Similarity>` of a metric's default value: the builder of every built-in metric.
fn boxed<S: Similarity + Default + 'static>() -> Box<dyn Similarity> {
    Box::<S>::default()
}

impl Metric {
    /// [`LevenshteinRatio`].
    pub const LEVENSHTEIN: Metric = Metric::new("levenshtein", boxed::<LevenshteinRatio>);
    /// [`Rouge`].
    pub const ROUGE: Metric = Metric::new("rouge", boxed::<Rouge>);
    /// [`Jaccard`].
    pub const JACCARD: Metric = Metric::new("jaccard", boxed::<Jaccard>);
    /// [`Bm25Plus`], batch-normalised; [`Metric::raw_similarity`] gives the raw scores.
    pub const BM25: Metric =
        Metric::new("bm25", boxed::<Bm25Plus>).with_raw_scores(|| Box::new(Bm25Plus::raw()));

    /// The four metrics of SAGE, in the order of its tables.
    pub const BUILT_IN: [Metric; 4] = [
        Metric::BM25,
        Metric::JACCARD,
        Metric::LEVENSHTEIN,
        Metric::ROUGE,
    ];

    /// A metric called `name` (on the command line, in reports and result paths) whose
    /// similarity `build` makes.
    pub const fn new(name: &'static str, build: fn() -> Box<dyn Similarity>) -> Metric {
        Metric {
            name,
            build,
            raw: None,
        }
    }

    /// The same metric, with `raw` giving its scores without batch normalisation.
    pub const fn with_raw_scores(self, raw: fn() -> Box<dyn Similarity>) -> Metric {
        Metric {
            raw: Some(raw),
            ..self
        }
    }

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        self.name
    }

    /// The metric as a boxed [`Similarity`].
    pub fn similarity(self) -> Box<dyn Similarity> {
        (self.build)()
    }

    /// The metric without batch normalisation: raw BM25Plus scores. Only a metric that
    /// normalises over its batch has them, so any other is an error rather than a silent no-op.
    pub fn raw_similarity(self) -> Result<Box<dyn Similarity>, MetricsError> {
        match self.raw {
            Some(raw) => Ok(raw()),
            None => Err(MetricsError::NoRawScores { metric: self }),
        }
    }

    /// The metric of `among` called `name` (ASCII case ignored); the error lists `among`.
    pub fn named(name: &str, among: &[Metric]) -> Result<Metric, MetricsError> {
        among
            .iter()
            .copied()
            .find(|m| m.name.eq_ignore_ascii_case(name))
            .ok_or_else(|| MetricsError::UnknownMetric {
                name: name.to_owned(),
                known: among.iter().map(|m| m.name).collect::<Vec<_>>().join(", "),
            })
    }
}

impl PartialEq for Metric {
    fn eq(&self, other: &Metric) -> bool {
        self.name == other.name
    }
}

impl Eq for Metric {}

impl std::hash::Hash for Metric {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl fmt::Debug for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Metric({})", self.name)
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

#[cfg(test)]
mod golden;
