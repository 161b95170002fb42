//! `sage-with-toys`: the `sage` command line with one suite and one metric that sage-rs does not
//! ship, each added by one registration, as a user's crate adds its own. The workspace test
//! `one_registration` runs them through `sage run` and bench-all's job list; nothing else in the
//! workspace names them.

use std::process::ExitCode;

use sage_core::{RunSeed, Similarity};
use sage_data::{RowSelection, StsPair};
use sage_metrics::Metric;
use sage_suites::{Outcome, Registry, Request, Subject, Suite, SuiteError};
use serde::{Deserialize, Serialize};

fn main() -> ExitCode {
    sage_cli::main(
        Registry::standard()
            .with_suite(StsSpearman)
            .with_metric(Metric::new("shared-letters", || Box::new(SharedLetters))),
    )
}

/// Jaccard overlap of the sets of letters of two texts, case folded: 1 for two texts of the same
/// letters, 0 for texts with none in common (or none at all on one side).
struct SharedLetters;

impl Similarity for SharedLetters {
    fn name(&self) -> &str {
        "shared-letters"
    }

    fn score(&self, reference: &str, candidate: &str) -> sage_core::Result<f32> {
        let letters = |text: &str| -> std::collections::BTreeSet<char> {
            text.chars()
                .filter(|c| c.is_alphabetic())
                .flat_map(char::to_lowercase)
                .collect()
        };
        let (a, b) = (letters(reference), letters(candidate));
        let union = a.union(&b).count();
        Ok(if union == 0 {
            0.0
        } else {
            a.intersection(&b).count() as f32 / union as f32
        })
    }
}

/// Spearman's correlation of the subject's similarity with the gold scores of STS pairs, a seeded
/// sample per dataset; the score is the mean over datasets.
struct StsSpearman;

/// The suite's options: an unknown one is an error naming it.
#[derive(Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Options {
    /// Pairs sampled per dataset.
    max_rows: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options { max_rows: 20 }
    }
}

#[derive(Serialize)]
struct Report {
    similarity: String,
    seed: u64,
    max_rows: usize,
    datasets: Vec<DatasetScore>,
    score: f64,
}

/// What a result file needs of the report: its score and the rows it used.
impl sage_core::SuiteReport for Report {
    fn score(&self) -> Option<f64> {
        Some(self.score)
    }
    fn rows_used(&self) -> Vec<sage_core::RowsUsed> {
        self.datasets
            .iter()
            .map(|d| d.rows.clone().into())
            .collect()
    }
}

#[derive(Serialize)]
struct DatasetScore {
    dataset: String,
    rows: RowSelection,
    spearman: f64,
}

impl Suite for StsSpearman {
    fn name(&self) -> &'static str {
        "sts-spearman"
    }

    fn summary(&self) -> &'static str {
        "Spearman correlation of the similarity with STS gold scores (a test suite)"
    }

    fn default_datasets(&self) -> Vec<String> {
        vec!["stsb/test".to_owned()]
    }

    fn run(&self, subject: &Subject, request: &Request) -> sage_suites::Result<Outcome> {
        let suite = self.name();
        let options: Options = serde_json::from_value(serde_json::Value::Object(
            request.options.clone(),
        ))
        .map_err(|e| SuiteError::Options {
            suite,
            message: e.to_string(),
        })?;
        let failed =
            |e: Box<dyn std::error::Error + Send + Sync>| SuiteError::Run { suite, source: e };
        let datasets = if request.datasets.is_empty() {
            vec![("stsb".to_owned(), "test".to_owned())]
        } else {
            request.datasets.clone()
        };
        let similarity = subject.similarity();
        let mut scores = Vec::new();
        for (name, split) in &datasets {
            let loaded = request
                .root
                .load::<StsPair>(name, split)
                .map_err(|e| failed(e.into()))?;
            let (pairs, rows) =
                sage_data::sample(&loaded, Some(options.max_rows), RunSeed(request.seed.0));
            let texts: Vec<(&str, &str)> = pairs
                .iter()
                .map(|p| (p.sentence1.as_str(), p.sentence2.as_str()))
                .collect();
            let predicted: Vec<f64> = similarity
                .score_pairs(&texts)
                .map_err(|e| failed(e.into()))?
                .into_iter()
                .map(f64::from)
                .collect();
            let gold: Vec<f64> = pairs.iter().map(|p| p.score).collect();
            let spearman =
                sage_measures::spearman(&predicted, &gold).map_err(|e| failed(e.into()))?;
            scores.push(DatasetScore {
                dataset: format!("{name}/{split}"),
                rows,
                spearman,
            });
        }
        let score = scores.iter().map(|d| d.spearman).sum::<f64>() / scores.len() as f64;
        let report = Report {
            similarity: similarity.name().to_owned(),
            seed: request.seed.0,
            max_rows: options.max_rows,
            datasets: scores,
            score,
        };
        Outcome::of(suite, &report, Vec::new())
    }
}
