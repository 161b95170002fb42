//! The paper's aggregation (its Tables 9 and 10): language subsets averaged into their dataset,
//! datasets into their task, English apart from the other languages.
//!
//! - A **dataset** is MTEB's task (STS17's official tracks and the pairs only MTEB's copy has
//!   are one dataset, as the paper counts them), named by its first registry set. Its original score is the mean of its subsets'
//!   original scores; each run's paraphrased score is the mean of its subsets' scores in that
//!   run; its change is the mean over runs of (paraphrased − original), with the standard
//!   deviation over runs (the paper's "−2.99 / ±0.42").
//! - A **task** (classification, STS, ...) averages its datasets' original and paraphrased
//!   scores, as the paper's "Orig." and "PTEB" columns do.
//! - **English** holds the subsets whose every text is English (and the datasets that state no
//!   language); **other languages** the rest, cross-lingual pairs with English included: the
//!   paper's Table 9 and Table 10.
//!
//! Every unit counts, qualified by the quality gate or not: the paper has no gate. The report
//! marks a dataset with a subset that missed it.

use serde::{Deserialize, Serialize};

use crate::tasks::TaskKind;

/// What the aggregation needs of one scored unit (a dataset, or one language subset of it).
#[derive(Clone, Debug)]
pub struct Unit<'a> {
    /// Registry name.
    pub dataset: &'a str,
    /// The language subset, if any.
    pub subset: Option<&'a str>,
    /// Its languages, one per side of a pair; empty: English.
    pub languages: &'a [String],
    /// The task.
    pub task: TaskKind,
    /// The score on the original texts.
    pub original: f64,
    /// The paraphrased score of each run.
    pub runs: Vec<f64>,
    /// Whether its paraphrases passed the quality gate.
    pub qualified: bool,
}

/// Which of the paper's two tables a subset belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LanguageGroup {
    /// Every text English (Table 9).
    English,
    /// Any text in another language (Table 10).
    OtherLanguages,
}

impl LanguageGroup {
    /// The group of a unit with these languages (one per side of a pair; none stated:
    /// English).
    pub fn of(languages: &[String]) -> LanguageGroup {
        if languages
            .iter()
            .all(|l| sage_data::languages::mteb_code(l) == Some(sage_data::languages::ENGLISH))
        {
            LanguageGroup::English
        } else {
            LanguageGroup::OtherLanguages
        }
    }
}

/// One dataset of one language group, its subsets averaged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DatasetAggregate {
    /// The registry name of its first unit (`sts17`: STS17's official tracks, with the pairs
    /// only MTEB's copy has, `sts17-extra`, among its subsets).
    pub dataset: String,
    /// The subsets averaged (empty: the dataset as one).
    pub subsets: Vec<String>,
    /// Mean original score of the subsets.
    pub original: f64,
    /// Per run, the mean paraphrased score of the subsets.
    pub paraphrased: Vec<f64>,
    /// Mean over runs of paraphrased − original.
    pub delta: f64,
    /// Standard deviation over runs of that change (sample, ddof 1); `None` with one run.
    pub delta_std: Option<f64>,
    /// Whether any of its subsets' paraphrases missed the quality gate.
    pub includes_unqualified: bool,
}

impl DatasetAggregate {
    /// The mean over runs of its paraphrased score (0 with no run).
    pub fn paraphrased_mean(&self) -> f64 {
        average(self.paraphrased.iter().copied())
    }
}

/// The arithmetic mean; 0 for no values (a dataset whose units share no run).
fn average(values: impl IntoIterator<Item = f64>) -> f64 {
    let (sum, n) = values
        .into_iter()
        .fold((0.0, 0usize), |(sum, n), v| (sum + v, n + 1));
    sum / n.max(1) as f64
}

/// One task of one language group: its datasets averaged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskAggregate {
    /// English or other languages.
    pub languages: LanguageGroup,
    /// The task.
    pub task: TaskKind,
    /// Mean original score of its datasets (the paper's "Orig.").
    pub original: f64,
    /// Mean paraphrased score of its datasets, each the mean over runs (the paper's "PTEB").
    pub paraphrased: f64,
    /// Its datasets.
    pub datasets: Vec<DatasetAggregate>,
}

/// A dataset of a language group and task: (group, task, MTEB's task name or registry name).
type GroupKey = (LanguageGroup, TaskKind, String);

/// The paper's aggregation of `results` (see the module docs), in language-group, task and
/// first-appearance order. Units whose runs differ in number from their dataset's others are
/// averaged over the runs they share.
pub fn by_task(results: &[Unit<'_>]) -> Vec<TaskAggregate> {
    // (group, task, dataset) -> its units, in first-appearance order
    let mut groups: Vec<(GroupKey, Vec<&Unit<'_>>)> = Vec::new();
    for d in results {
        let dataset = crate::protocol::mteb_task_name(d.dataset)
            .map_or_else(|| d.dataset.to_owned(), str::to_owned);
        let key = (LanguageGroup::of(d.languages), d.task, dataset);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, units)) => units.push(d),
            None => groups.push((key, vec![d])),
        }
    }
    let mut tasks: Vec<TaskAggregate> = Vec::new();
    for ((languages, task, _), units) in groups {
        let dataset = units[0].dataset.to_owned();
        let runs = units.iter().map(|u| u.runs.len()).min().unwrap_or(0);
        let original = average(units.iter().map(|u| u.original));
        let paraphrased: Vec<f64> = (0..runs)
            .map(|r| average(units.iter().map(|u| u.runs[r])))
            .collect();
        let deltas: Vec<f64> = paraphrased.iter().map(|p| p - original).collect();
        let delta = average(deltas.iter().copied());
        let delta_std = sage_measures::mean_std(&deltas, 1).ok().map(|m| m.std);
        let aggregate = DatasetAggregate {
            dataset,
            subsets: units
                .iter()
                .filter_map(|u| u.subset.map(str::to_owned))
                .collect(),
            original,
            paraphrased,
            delta,
            delta_std,
            includes_unqualified: units.iter().any(|u| !u.qualified),
        };
        match tasks
            .iter_mut()
            .find(|t| t.languages == languages && t.task == task)
        {
            Some(t) => t.datasets.push(aggregate),
            None => tasks.push(TaskAggregate {
                languages,
                task,
                original: 0.0,
                paraphrased: 0.0,
                datasets: vec![aggregate],
            }),
        }
    }
    for t in &mut tasks {
        t.original = average(t.datasets.iter().map(|d| d.original));
        t.paraphrased = average(t.datasets.iter().map(DatasetAggregate::paraphrased_mean));
    }
    tasks.sort_by_key(|t| t.languages);
    tasks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit<'a>(
        dataset: &'a str,
        subset: Option<&'a str>,
        languages: &'a [String],
        original: f64,
        runs: &[f64],
    ) -> Unit<'a> {
        Unit {
            dataset,
            subset,
            languages,
            task: TaskKind::Sts,
            original,
            runs: runs.to_vec(),
            qualified: true,
        }
    }

    /// STS17's subsets across its two registry sets are one dataset per language group; its
    /// change is the mean over runs of the subset-averaged change, with the std over runs; the
    /// task averages its datasets.
    #[test]
    fn subsets_average_into_their_dataset_and_datasets_into_their_task() {
        let en = vec!["eng-Latn".to_owned(); 2];
        let ar = vec!["ara-Arab".to_owned(); 2];
        let de_en = vec!["deu-Latn".to_owned(), "eng-Latn".to_owned()];
        let units = [
            unit("sts17", Some("en-en"), &en, 0.90, &[0.86, 0.88]),
            unit("sts17", Some("ar-ar"), &ar, 0.70, &[0.60, 0.66]),
            unit("sts17-extra", Some("en-de"), &de_en, 0.80, &[0.78, 0.80]),
            unit("stsb", None, &[], 0.80, &[0.70, 0.74]),
        ];
        let tasks = by_task(&units);
        assert_eq!(tasks.len(), 2);
        let english = &tasks[0];
        assert_eq!(english.languages, LanguageGroup::English);
        let names: Vec<&str> = english
            .datasets
            .iter()
            .map(|d| d.dataset.as_str())
            .collect();
        assert_eq!(names, ["sts17", "stsb"]);
        let other = &tasks[1];
        assert_eq!(other.languages, LanguageGroup::OtherLanguages);
        let sts17 = &other.datasets[0];
        assert_eq!(sts17.subsets, ["ar-ar", "en-de"]);
        assert!((sts17.original - 0.75).abs() < 1e-12);
        // runs: (0.60 + 0.78) / 2 = 0.69, (0.66 + 0.80) / 2 = 0.73; changes -0.06, -0.02
        assert!((sts17.paraphrased[0] - 0.69).abs() < 1e-12);
        assert!((sts17.delta + 0.04).abs() < 1e-12);
        let std = (2.0f64 * 0.02 * 0.02).sqrt();
        assert!((sts17.delta_std.unwrap() - std).abs() < 1e-12);
        // English: STS17 en-en 0.90 and STS-B 0.80 average to 0.85; paraphrased 0.87 and 0.72
        assert!((english.original - 0.85).abs() < 1e-12);
        assert!((english.paraphrased - 0.795).abs() < 1e-12);
        // one run: no spread to state
        let single = [unit("stsb", None, &[], 0.8, &[0.7])];
        assert_eq!(by_task(&single)[0].datasets[0].delta_std, None);
    }
}
