//! The report every SAGE category over datasets writes (robustness, sensitivity, clustering,
//! retrieval): one shape, so that a field means the same in each and the report reads them alike.

use serde::{Deserialize, Serialize};

use crate::measures::{ci95, BootstrapInterval, BootstrapReplicates};
use crate::{Result, RunSeed, Timings};

/// A whole run of one SAGE category: its options, one report per dataset, the category score
/// with its bootstrap interval and resamples, and the timings. Field order is the JSON order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CategoryReport<O, D> {
    /// The similarity's name.
    pub similarity: String,
    /// Run seed.
    pub seed: u64,
    /// The category's options.
    pub options: O,
    /// Per dataset.
    pub datasets: Vec<D>,
    /// Category score: the mean of the dataset scores.
    pub score: f64,
    /// Percentile-bootstrap 95% interval of `score`, the category's units (documents, subsets,
    /// queries) resampled within each dataset.
    pub ci95: Option<BootstrapInterval>,
    /// Every resample's score behind `ci95`: the report pairs two similarities' resamples (same
    /// seed, same units) into a paired bootstrap of their difference.
    pub bootstrap: Option<BootstrapReplicates>,
    /// Wall-clock phases (the only part that differs between two runs with one seed).
    pub timings: Timings,
}

impl<O, D> CategoryReport<O, D> {
    /// The report of a finished run; `ci95` comes from `bootstrap`.
    pub fn new(
        similarity: &str,
        seed: RunSeed,
        options: O,
        datasets: Vec<D>,
        score: f64,
        bootstrap: Option<BootstrapReplicates>,
        timings: Timings,
    ) -> Result<Self> {
        Ok(CategoryReport {
            similarity: similarity.to_owned(),
            seed: seed.0,
            options,
            datasets,
            score,
            ci95: ci95(bootstrap.as_ref())?,
            bootstrap,
            timings,
        })
    }
}
