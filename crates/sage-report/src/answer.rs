//! The first screen: which similarity is best per SAGE category and overall, and which
//! differences in the overall ranking are real.

use sage_core::RowsUsed;
use sage_measures::{
    holm, paired_bootstrap, percentile_interval, BootstrapReplicates, PairedDifference,
};
use serde::Serialize;
use serde_json::Value;

use crate::cost::{view, CostView};
use crate::load::{find, similarities, ResultFile};
use crate::ranking::{Cell, Comparison, Ranked, Ranking, ALPHA};
use crate::Result;

/// SAGE's categories, in Table 1's order: (task, column title).
pub(crate) const SAGE_COLUMNS: [(&str, &str); 5] = [
    ("clustering", "Clustering"),
    ("human-pref", "Human Pref."),
    ("robustness", "Robustness"),
    ("sensitivity", "Sensitivity"),
    ("retrieval", "Retrieval"),
];

/// Columns after Overall, each a suite's own category score beside SAGE's (not part of
/// Overall): (suite folder, task, column title).
pub(crate) const EXTRA_COLUMNS: [(&str, &str, &str); 1] = [("noise", "noise", "Noise (area)")];

/// One similarity's row of the heatmap.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HeatmapRow {
    /// The similarity.
    pub similarity: String,
    /// One cell per column of [`Heatmap::columns`]; `None` where the category was not run.
    pub cells: Vec<Option<Cell>>,
}

/// Similarity × SAGE category (then Overall, then the other suites' category scores that were
/// run), every score with its interval.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Heatmap {
    /// Category titles, then "Overall", then the extra columns' titles.
    pub columns: Vec<String>,
    /// Each column's task (`clustering`, ..., `overall`, `noise`): what summary.csv names it.
    pub tasks: Vec<String>,
    /// One row per similarity with at least one SAGE category.
    pub rows: Vec<HeatmapRow>,
    /// Per column, the rows with the highest score: every one of them when several tie (empty
    /// for a column no row has).
    pub best: Vec<Vec<usize>>,
}

/// The first screen's numbers.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Answer {
    /// Similarity × category.
    pub heatmap: Heatmap,
    /// Ranking with significance.
    pub ranking: Ranking,
    /// Quality against what it costs.
    pub cost: CostView,
    /// What each model keeps when its vectors are stored small.
    pub storage: crate::storage::StorageView,
    /// Which intrinsic score predicts downstream (transfer) accuracy.
    pub prediction: crate::prediction::PredictionView,
}

/// A similarity's five SAGE categories: the result files and their bootstrap resamples.
struct Categories<'a> {
    files: Vec<&'a ResultFile>,
    replicates: Option<Vec<BootstrapReplicates>>,
}

impl Categories<'_> {
    /// Resample b of the overall score: the mean of the categories' resample b.
    fn overall_replicates(&self) -> Option<Vec<Option<f64>>> {
        let reps = self.replicates.as_ref()?;
        let n = reps.first()?.values.len();
        if reps.iter().any(|r| r.values.len() != n) {
            return None;
        }
        Some(
            (0..n)
                .map(|b| {
                    reps.iter()
                        .map(|r| r.values[b])
                        .sum::<Option<f64>>()
                        .map(|s| s / reps.len() as f64)
                })
                .collect(),
        )
    }

    fn overall(&self) -> f64 {
        self.files
            .iter()
            .filter_map(|f| f.typed.category().map(|c| c.score))
            .sum::<f64>()
            / SAGE_COLUMNS.len() as f64
    }

    /// Why the units of `self` and `other` are not the same draws, if they are not.
    fn unpaired_with(&self, other: &Categories<'_>) -> Option<String> {
        let (Some(a), Some(b)) = (&self.replicates, &other.replicates) else {
            return Some("no bootstrap resamples in a result file".into());
        };
        for (((fa, fb), ra), rb) in self.files.iter().zip(&other.files).zip(a).zip(b) {
            if !ra.drawn_like(rb) || units_of(fa) != units_of(fb) {
                return Some(format!("{}: not the same rows, seed or resamples", fa.task));
            }
        }
        None
    }
}

/// Which units a result was scored on: its seed and what each row selection it used says of
/// the rows it drew, without the scores.
fn units_of(file: &ResultFile) -> (u64, Vec<Drawn<'_>>) {
    let envelope = &file.envelope;
    (
        envelope.seed,
        envelope.datasets.iter().map(Drawn::of).collect(),
    )
}

/// What of a row selection says which units it drew: the dataset, the rows' checksum and
/// counts, the seed they were drawn with. The same fields whatever the record's shape, so that a
/// record of another version pairs with one of this version that drew alike. The file's size,
/// the cap asked for and the split's checksum are left out: the used rows' checksum already says
/// which rows were scored, and older files lack the split's checksum.
#[derive(Debug, Default, PartialEq)]
struct Drawn<'a> {
    dataset: Option<&'a str>,
    split: Option<&'a str>,
    checksum: Option<&'a str>,
    corpus_checksum: Option<&'a str>,
    used_rows: Option<u64>,
    corpus_used: Option<u64>,
    queries: Option<u64>,
    texts: Option<u64>,
    classes: Option<u64>,
    seed: Option<u64>,
}

impl Drawn<'_> {
    fn of(record: &RowsUsed) -> Drawn<'_> {
        let count = |n: usize| Some(n as u64);
        match record {
            RowsUsed::Rows(r) => Drawn {
                dataset: Some(&r.dataset),
                split: Some(&r.split),
                checksum: Some(&r.checksum),
                used_rows: count(r.used_rows),
                seed: Some(r.seed),
                ..Drawn::default()
            },
            RowsUsed::Corpus(c) => Drawn {
                dataset: Some(&c.dataset),
                corpus_checksum: Some(&c.corpus_checksum),
                corpus_used: count(c.corpus_used),
                queries: count(c.queries),
                ..Drawn::default()
            },
            RowsUsed::Subset(s) => Drawn {
                dataset: Some(&s.dataset),
                checksum: Some(&s.checksum),
                texts: count(s.texts),
                classes: count(s.classes),
                ..Drawn::default()
            },
            RowsUsed::Other(map) => {
                let text = |k: &str| map.get(k).and_then(Value::as_str);
                let number = |k: &str| map.get(k).and_then(Value::as_u64);
                Drawn {
                    dataset: text("dataset"),
                    split: text("split"),
                    checksum: text("checksum"),
                    corpus_checksum: text("corpus_checksum"),
                    used_rows: number("used_rows"),
                    corpus_used: number("corpus_used"),
                    queries: number("queries"),
                    texts: number("texts"),
                    classes: number("classes"),
                    seed: number("seed"),
                }
            }
        }
    }
}

/// The heatmap and the ranking of the SAGE results in `files`.
pub(crate) fn answer(files: &[ResultFile]) -> Result<Answer> {
    let mut rows = Vec::new();
    let mut complete: Vec<(String, Categories<'_>, Cell)> = Vec::new();
    let mut not_compared = Vec::new();
    for s in similarities(files) {
        let found: Vec<Option<&ResultFile>> = SAGE_COLUMNS
            .iter()
            .map(|(task, _)| find(files, &s, "sage", task))
            .collect();
        let extra: Vec<Option<Cell>> = EXTRA_COLUMNS
            .iter()
            .map(|(suite, task, _)| {
                let category = find(files, &s, suite, task)?.typed.category()?;
                // a suite with no score to give (noise, where no clean score is clearly above
                // zero) shows a dash, not NaN
                category.score.is_finite().then_some(Cell {
                    score: category.score,
                    ci95: category.ci95,
                })
            })
            .collect();
        if found.iter().all(Option::is_none) && extra.iter().all(Option::is_none) {
            continue;
        }
        let mut cells: Vec<Option<Cell>> = found
            .iter()
            .map(|f| {
                let category = (*f)?.typed.category()?;
                Some(Cell {
                    score: category.score,
                    ci95: category.ci95,
                })
            })
            .collect();
        let overall = if found.iter().all(Option::is_some) && cells.iter().all(Option::is_some) {
            let files: Vec<&ResultFile> = found.into_iter().flatten().collect();
            let replicates = files
                .iter()
                .map(|f| f.typed.category()?.bootstrap.cloned())
                .collect::<Option<Vec<BootstrapReplicates>>>();
            let categories = Categories { files, replicates };
            let ci95 = match categories.overall_replicates() {
                Some(values) => percentile_interval(&values, 0.95)?.map(|i| (i.low, i.high)),
                None => None,
            };
            let cell = Cell {
                score: categories.overall(),
                ci95,
            };
            complete.push((s.clone(), categories, cell));
            Some(cell)
        } else {
            if found.iter().any(Option::is_some) {
                not_compared.push(format!("{s}: not ranked (a SAGE category has no result)"));
            }
            None
        };
        cells.push(overall);
        cells.extend(extra);
        rows.push(HeatmapRow {
            similarity: s,
            cells,
        });
    }
    let mut columns: Vec<String> = SAGE_COLUMNS.iter().map(|c| c.1.to_owned()).collect();
    let mut tasks: Vec<String> = SAGE_COLUMNS.iter().map(|c| c.0.to_owned()).collect();
    columns.push("Overall".into());
    tasks.push("overall".into());
    // an extra column shows only when some similarity has its result
    let mut keep: Vec<bool> = vec![true; columns.len()];
    for (k, (_, task, title)) in EXTRA_COLUMNS.iter().enumerate() {
        let used = rows
            .iter()
            .any(|r| r.cells[SAGE_COLUMNS.len() + 1 + k].is_some());
        columns.push((*title).to_owned());
        tasks.push((*task).to_owned());
        keep.push(used);
    }
    let drop = |v: &mut Vec<String>| {
        let mut k = keep.iter();
        v.retain(|_| *k.next().unwrap_or(&true));
    };
    drop(&mut columns);
    drop(&mut tasks);
    for row in &mut rows {
        let mut k = keep.iter();
        row.cells.retain(|_| *k.next().unwrap_or(&true));
    }
    let best = (0..columns.len())
        .map(|c| {
            let scores: Vec<(usize, f64)> = rows
                .iter()
                .enumerate()
                .filter_map(|(i, r)| Some((i, r.cells[c]?.score)))
                .collect();
            let top = scores.iter().map(|s| s.1).max_by(f64::total_cmp);
            // a tie marks every tied row: marking one of them would rank equals
            scores
                .iter()
                .filter(|s| Some(s.1) == top)
                .map(|s| s.0)
                .collect()
        })
        .collect();

    complete.sort_by(|a, b| b.2.score.total_cmp(&a.2.score));
    let ranked: Vec<Ranked> = complete
        .iter()
        .enumerate()
        .map(|(i, (s, _, overall))| Ranked {
            rank: i + 1,
            similarity: s.clone(),
            overall: *overall,
        })
        .collect();
    let mut pairs: Vec<(usize, usize, PairedDifference)> = Vec::new();
    for i in 0..complete.len() {
        for j in i + 1..complete.len() {
            let (a, b) = (&complete[i], &complete[j]);
            if let Some(why) = a.1.unpaired_with(&b.1) {
                not_compared.push(format!("{} vs {}: {why}", a.0, b.0));
                continue;
            }
            let (Some(ra), Some(rb)) = (a.1.overall_replicates(), b.1.overall_replicates()) else {
                continue;
            };
            match paired_bootstrap(a.2.score, b.2.score, &ra, &rb, 0.95)? {
                Some(d) => pairs.push((i, j, d)),
                None => not_compared.push(format!(
                    "{} vs {}: too few defined bootstrap resamples",
                    a.0, b.0
                )),
            }
        }
    }
    let adjusted = holm(
        &pairs.iter().map(|p| p.2.p_value).collect::<Vec<_>>(),
        ALPHA,
    )?;
    let comparisons = pairs
        .into_iter()
        .enumerate()
        .map(|(k, (i, j, difference))| Comparison {
            higher: complete[i].0.clone(),
            lower: complete[j].0.clone(),
            difference,
            p_holm: adjusted.adjusted[k],
            significant: adjusted.reject[k],
        })
        .collect();
    let mut answer = Answer {
        heatmap: Heatmap {
            columns,
            tasks,
            rows,
            best,
        },
        cost: Default::default(),
        storage: crate::storage::view(files),
        prediction: Default::default(),
        ranking: Ranking {
            units: complete
                .first()
                .and_then(|(_, c, _)| c.replicates.as_ref())
                .map(|reps| {
                    SAGE_COLUMNS
                        .iter()
                        .zip(reps)
                        .map(|((_, title), r)| (title.to_string(), r.group_sizes.iter().sum()))
                        .collect()
                })
                .unwrap_or_default(),
            ranked,
            comparisons,
            alpha: ALPHA,
            not_compared,
        },
    };
    answer.cost = view(files, &answer.ranking);
    let categories = crate::prediction::Categories {
        columns: &answer.heatmap.columns,
        rows: answer
            .heatmap
            .rows
            .iter()
            .map(|r| {
                (
                    r.similarity.as_str(),
                    r.cells
                        .iter()
                        .map(|c| c.as_ref().map(|c| c.score))
                        .collect(),
                )
            })
            .collect(),
    };
    answer.prediction = crate::prediction::view(files, &categories);
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use sage_core::{RowSelection, RowsUsed};

    use super::Drawn;

    /// A record of another version pairs with this version's when it drew the same rows, and
    /// a cap or a file size that differ do not unpair them; another checksum does.
    #[test]
    fn records_pair_on_the_rows_they_drew() {
        let rows = RowSelection {
            dataset: "stsb".into(),
            split: "test".into(),
            total_rows: 10,
            used_rows: 3,
            max_rows: Some(3),
            seed: 1337,
            empty_text_rows: 0,
            checksum: "ab".into(),
            split_checksum: "ff".into(),
            files: Vec::new(),
        };
        let typed = RowsUsed::Rows(rows.clone());
        let older: RowsUsed = serde_json::from_value(serde_json::json!({
            "checksum": "ab", "dataset": "stsb", "seed": 1337, "split": "test", "used_rows": 3
        }))
        .unwrap();
        assert!(matches!(older, RowsUsed::Other(_)));
        assert_eq!(Drawn::of(&typed), Drawn::of(&older));
        let capped = RowsUsed::Rows(RowSelection {
            total_rows: 20,
            max_rows: None,
            ..rows.clone()
        });
        assert_eq!(Drawn::of(&typed), Drawn::of(&capped));
        let other = RowsUsed::Rows(RowSelection {
            checksum: "cd".into(),
            ..rows
        });
        assert_ne!(Drawn::of(&typed), Drawn::of(&other));
    }
}
