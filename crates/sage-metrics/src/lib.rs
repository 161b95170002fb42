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

mod bm25;
mod jaccard;
mod levenshtein;
mod rouge;
mod tokens;

use std::fmt;
use std::str::FromStr;

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
    /// A metric name that is not one of [`Metric::ALL`].
    #[error("unknown metric {name:?}; known metrics: levenshtein, rouge, jaccard, bm25")]
    UnknownMetric {
        /// The name given.
        name: String,
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

/// The four classical metrics of SAGE, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Metric {
    /// [`LevenshteinRatio`].
    Levenshtein,
    /// [`Rouge`].
    Rouge,
    /// [`Jaccard`].
    Jaccard,
    /// [`Bm25Plus`], batch-normalised.
    Bm25,
}

impl Metric {
    /// Every metric, in the order of SAGE's tables.
    pub const ALL: [Metric; 4] = [
        Metric::Bm25,
        Metric::Jaccard,
        Metric::Levenshtein,
        Metric::Rouge,
    ];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Levenshtein => "levenshtein",
            Metric::Rouge => "rouge",
            Metric::Jaccard => "jaccard",
            Metric::Bm25 => "bm25",
        }
    }

    /// The metric as a boxed [`Similarity`].
    pub fn similarity(self) -> Box<dyn Similarity> {
        match self {
            Metric::Levenshtein => Box::new(LevenshteinRatio),
            Metric::Rouge => Box::new(Rouge),
            Metric::Jaccard => Box::new(Jaccard),
            Metric::Bm25 => Box::new(Bm25Plus::default()),
        }
    }

    /// The metric without batch normalisation: raw BM25Plus scores. Only BM25 normalises over
    /// its batch, so any other metric is an error rather than a silent no-op.
    pub fn raw_similarity(self) -> Result<Box<dyn Similarity>, MetricsError> {
        match self {
            Metric::Bm25 => Ok(Box::new(Bm25Plus::raw())),
            metric => Err(MetricsError::NoRawScores { metric }),
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Metric {
    type Err = MetricsError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Metric::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| MetricsError::UnknownMetric { name: s.to_owned() })
    }
}

#[cfg(test)]
mod golden;
