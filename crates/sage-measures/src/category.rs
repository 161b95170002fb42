//! The report every SAGE category over datasets writes (robustness, sensitivity, clustering,
//! retrieval): one shape, so that a field means the same in each and the report reads them alike.

use serde::{Deserialize, Serialize};

use sage_core::{DatasetRows, Result, RowsUsed, RunSeed, SageError, SuiteReport, Timings};

use crate::{bootstrap_replicates, ci95, BootstrapInterval, BootstrapReplicates};

/// What the shared driver ([`CategoryReport::over_datasets`]) needs of one dataset's report: its
/// score, and how to score a bootstrap resample of its units (documents, subsets, queries).
pub trait DatasetScore {
    /// The dataset's score; the category's is the mean over datasets.
    fn score(&self) -> f64;
    /// How many units the bootstrap resamples within this dataset (0: no interval).
    fn units(&self) -> usize;
    /// The dataset's score on a resample of its units: `drawn` indexes them, with repeats.
    fn resampled_score(&self, drawn: &[usize]) -> f64;
}

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
    /// Category score: the mean of the dataset scores. A category may have none to give (the
    /// noise suite, where no dataset's clean score is clearly above zero): it is then NaN,
    /// written as `null` and read back as NaN.
    #[serde(deserialize_with = "null_as_nan")]
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

/// Reads a score written `null` (NaN has no JSON) back as NaN: the `deserialize_with` of every
/// report whose score may be missing.
pub fn null_as_nan<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
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

impl<O: Serialize, D: DatasetRows + Serialize> SuiteReport for CategoryReport<O, D> {
    fn score(&self) -> Option<f64> {
        Some(self.score)
    }
    fn rows_used(&self) -> Vec<RowsUsed> {
        self.datasets.iter().flat_map(D::rows_used).collect()
    }
}

impl<O, D: DatasetScore + Sync> CategoryReport<O, D> {
    /// The run every SAGE category over datasets makes: `one` reports each of `datasets`
    /// (registry name, split) in turn, sharing the run's timings; the category score is the mean
    /// of the dataset scores, and its interval resamples each dataset's units under the stream
    /// `<category>/bootstrap`, the mean over datasets of their resampled scores being one replicate.
    pub fn over_datasets<E: From<SageError>>(
        category: &str,
        similarity: &str,
        seed: RunSeed,
        options: O,
        datasets: &[(&str, &str)],
        mut one: impl FnMut(&str, &str, &O, &mut Timings) -> std::result::Result<D, E>,
    ) -> std::result::Result<Self, E> {
        if datasets.is_empty() {
            return Err(SageError::InvalidArgument(format!("{category}: no dataset named")).into());
        }
        let mut timings = Timings::default();
        let mut reports = Vec::with_capacity(datasets.len());
        for &(name, split) in datasets {
            reports.push(one(name, split, &options, &mut timings)?);
        }
        let score = reports.iter().map(DatasetScore::score).sum::<f64>() / reports.len() as f64;
        let sizes: Vec<usize> = reports.iter().map(DatasetScore::units).collect();
        let bootstrap = bootstrap_replicates(
            &sizes,
            |drawn| {
                drawn
                    .iter()
                    .zip(&reports)
                    .map(|(indices, report)| report.resampled_score(indices))
                    .sum::<f64>()
                    / reports.len() as f64
            },
            crate::BOOTSTRAP_RESAMPLES,
            seed,
            &format!("{category}/bootstrap"),
        )?;
        Ok(Self::new(
            similarity, seed, options, reports, score, bootstrap, timings,
        )?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{bootstrap_mean_of_means, mean_at};

    #[derive(Debug, PartialEq)]
    struct Units(Vec<f64>);

    impl DatasetScore for Units {
        fn score(&self) -> f64 {
            self.0.iter().sum::<f64>() / self.0.len() as f64
        }
        fn units(&self) -> usize {
            self.0.len()
        }
        fn resampled_score(&self, drawn: &[usize]) -> f64 {
            mean_at(&self.0, drawn)
        }
    }

    /// The driver's interval is the mean-of-means bootstrap the categories drew before it
    /// existed, replicate for replicate (the pinned quick-run results rest on that), its score
    /// the mean of the dataset scores, and each dataset is handed the run's options in order.
    #[test]
    fn the_shared_driver_scores_and_resamples_as_the_categories_did() {
        let groups = [vec![0.25, 1.0, 0.5], vec![0.0, 0.75]];
        let mut seen = Vec::new();
        let report = CategoryReport::over_datasets(
            "toy",
            "probe",
            RunSeed(5),
            7u8,
            &[("a", "test"), ("b", "test")],
            |name, split, options, timings| {
                seen.push(format!("{name}/{split}/{options}"));
                timings.time(format!("score/{name}"), || ());
                Ok::<_, SageError>(Units(groups[seen.len() - 1].clone()))
            },
        )
        .unwrap();
        assert_eq!(seen, ["a/test/7", "b/test/7"]);
        assert_eq!(report.score, (1.75 / 3.0 + 0.375) / 2.0);
        assert_eq!((report.similarity.as_str(), report.seed), ("probe", 5));
        let slices: Vec<&[f64]> = groups.iter().map(Vec::as_slice).collect();
        let before = bootstrap_mean_of_means(&slices, RunSeed(5), "toy/bootstrap").unwrap();
        assert_eq!(report.bootstrap, before);
        assert_eq!(report.ci95, ci95(before.as_ref()).unwrap());
        assert_eq!(report.timings.phases.len(), 2);
    }

    #[test]
    fn no_dataset_is_an_error_naming_the_category() {
        let e = CategoryReport::<(), Units>::over_datasets(
            "toy",
            "probe",
            RunSeed(1),
            (),
            &[],
            |_, _, _, _| -> Result<Units> { unreachable!("no dataset to run") },
        )
        .unwrap_err();
        assert!(e.to_string().contains("toy: no dataset named"), "{e}");
    }
}
