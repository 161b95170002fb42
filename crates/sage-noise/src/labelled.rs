//! Classification and clustering under noise: the texts themselves are noised.
//!
//! Both are scored through the similarity alone, so an embedding model and a classical metric
//! are measured the same way:
//! - **classification**: each (noisy) text of the named split takes the majority label of its
//!   [`NEIGHBOURS`] most similar texts of the clean `train` split (ties to the label of the
//!   nearer neighbour), the setting of a classifier trained on clean data that meets noisy
//!   input; score: accuracy, resampled over the texts;
//! - **clustering**: the (noisy) texts are clustered as SAGE's clustering task clusters them
//!   (complete linkage on `1 − similarity`, cut at the number of classes:
//!   [`sage_cluster::cluster_texts`]) on one seeded subset drawn as that task draws it; score:
//!   V-measure, resampled over the texts with their cluster assignments fixed.

use std::collections::{BTreeSet, HashMap};

use sage_core::{Role, Timings};
use sage_data::{DataRoot, LabeledText, RowSelection, Sampled};
use sage_measures as measures;
use sage_retrieval::{Doc, TopK};

use crate::conditions::Tally;
use crate::rank::{nearest, Distinct};
use crate::{
    Condition, DatasetReport, Measured, NoiseError, Options, Result, Scorer, Statistic, Task,
};

/// Neighbours whose labels vote on a text's class.
pub const NEIGHBOURS: usize = 5;

/// Texts clustered when `max_rows` is unset: complete linkage keeps every pair's distance.
pub const CLUSTERING_TEXTS: usize = 1000;

/// Classes a clustering subset draws from, at most (SAGE's clustering default).
const CLUSTERING_CLASSES: usize = 50;

/// Every condition's noisy texts, keyed by file position so that a row is noised the same way
/// whatever the sample.
fn noised(
    conditions: &[Condition],
    stream: &str,
    clean: &[&str],
    positions: &[usize],
    options: &Options,
) -> Result<Vec<crate::conditions::Noisy>> {
    let keys: Vec<u64> = positions.iter().map(|&p| p as u64).collect();
    conditions
        .iter()
        .map(|c| c.apply_keyed(stream, clean, &keys, options.seed))
        .collect()
}

/// The label most of `top`'s documents carry (their ids are positions in `reference`); a tie
/// goes to the label of the nearer one.
pub fn vote<'r>(top: &TopK, reference: &'r [LabeledText]) -> &'r str {
    let labels: Vec<&str> = top
        .ranked()
        .iter()
        .map(|doc| {
            let i: usize = doc.id.parse().expect("reference ids are positions");
            reference[i].label.as_str()
        })
        .collect();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for label in &labels {
        *counts.entry(label).or_default() += 1;
    }
    let most = counts.values().copied().max().unwrap_or(0);
    // `labels` is nearest first
    labels
        .into_iter()
        .find(|label| counts[label] == most)
        .unwrap_or("")
}

/// The texts a classification over `name/split` classifies (`max_rows` of them, seeded) and the
/// `train` texts they are classified against (`max_reference`, seeded), as `Doc`s whose ids are
/// positions in the reference; an error for the `train` split itself or fewer than two classes.
pub fn classification_rows(
    root: &DataRoot,
    (name, split): (&str, &str),
    (max_rows, max_reference): (Option<usize>, Option<usize>),
    seed: sage_core::RunSeed,
    timings: &mut Timings,
) -> Result<ClassificationRows> {
    if split == "train" {
        return Err(NoiseError::Insufficient(format!(
            "{name}/train: the noise suite classifies a held-out split by its nearest neighbours \
             in the train split; name another split of {name} (say {name}/test)"
        )));
    }
    let dataset = format!("{name}/{split}");
    let test = timings.time(format!("load/{dataset}"), || {
        root.rows::<LabeledText>(name, split)?
            .sample(max_rows, seed)
    })?;
    let (reference, reference_selection) = timings.time(format!("load/{name}/train"), || {
        Ok::<_, NoiseError>(
            root.rows::<LabeledText>(name, "train")?
                .sample(max_reference, seed)?
                .into_parts(),
        )
    })?;
    let texts = test.rows.len();
    let classes = reference.iter().map(|r| &r.label).collect::<BTreeSet<_>>();
    if texts == 0 || classes.len() < 2 {
        return Err(NoiseError::Insufficient(format!(
            "{dataset}: {texts} texts to classify against {} train texts of {} classes; \
             classification needs texts and at least two classes",
            reference.len(),
            classes.len()
        )));
    }
    let docs: Vec<Doc> = reference
        .iter()
        .enumerate()
        .map(|(i, r)| Doc {
            position: i,
            id: i.to_string(),
            text: r.text.clone(),
        })
        .collect();
    Ok(ClassificationRows {
        texts: test,
        reference,
        reference_selection,
        docs,
    })
}

/// What a classification over a held-out split reads ([`classification_rows`]).
pub struct ClassificationRows {
    /// The texts classified, with their positions and selection.
    pub texts: Sampled<LabeledText>,
    /// The `train` texts they are classified against.
    pub reference: Vec<LabeledText>,
    /// Which `train` rows those are.
    pub reference_selection: RowSelection,
    /// The same texts as documents whose ids are positions in `reference`.
    pub docs: Vec<Doc>,
}

/// The classification dataset `name/split`, each text classified by its neighbours in `train`.
pub(crate) fn classification(
    scorer: Scorer,
    root: &DataRoot,
    (name, split): (&str, &str),
    conditions: &[Condition],
    options: &Options,
    timings: &mut Timings,
) -> Result<Measured> {
    let dataset = format!("{name}/{split}");
    let ClassificationRows {
        texts:
            Sampled {
                rows: test,
                positions,
                selection,
            },
        reference,
        reference_selection,
        docs,
    } = classification_rows(
        root,
        (name, split),
        (options.max_rows, options.max_reference),
        options.seed,
        timings,
    )?;
    let clean: Vec<&str> = test.iter().map(|r| r.text.as_str()).collect();
    let stream = format!("noise/{}", selection.split_checksum);
    let noisy = noised(conditions, &stream, &clean, &positions, options)?;
    // one pass: the clean texts and every changed noisy text, each once
    let (distinct, ids) = Distinct::of(&clean, &noisy);
    let tops = timings.time(format!("neighbours/{dataset}/all conditions"), || {
        nearest(
            scorer,
            &distinct.texts,
            &docs,
            NEIGHBOURS,
            (Role::Plain, Role::Plain),
            options.pair_budget,
        )
    })?;
    let predicted: Vec<&str> = tops.iter().map(|top| vote(top, &reference)).collect();
    let correct = |ids: &[usize]| -> Vec<f64> {
        ids.iter()
            .zip(&test)
            .map(|(&i, row)| f64::from(u8::from(predicted[i] == row.label)))
            .collect()
    };
    let values = ids.iter().map(|ids| correct(ids)).collect();
    Ok(Measured {
        report: DatasetReport {
            reference: Some(reference_selection),
            ..DatasetReport::empty(dataset, Task::Classification, "texts", test.len())
        }
        .with_rows(selection),
        statistic: Statistic::Mean,
        values,
        tallies: noisy.into_iter().map(|n| n.tally).collect(),
    })
}

/// The texts of `name/split` a clustering scores: one subset drawn as SAGE's clustering task
/// draws it (`max_rows` texts, [`CLUSTERING_TEXTS`] when unset, seeded), with their labels and
/// the number of classes; an error when the drawn labels cannot be clustered.
/// Before anything is scored, a subset whose pairwise distances would not fit in memory is
/// refused ([`sage_cluster::check_memory`], for `similarity`).
pub fn clustering_subset(
    similarity: &dyn sage_core::Similarity,
    root: &DataRoot,
    (name, split): (&str, &str),
    max_rows: Option<usize>,
    seed: sage_core::RunSeed,
    timings: &mut Timings,
) -> Result<(Sampled<LabeledText>, Vec<String>, usize)> {
    let dataset = format!("{name}/{split}");
    let drawing = sage_cluster::Options {
        subsets: 1,
        max_texts: max_rows.unwrap_or(CLUSTERING_TEXTS),
        max_classes: CLUSTERING_CLASSES,
        seed,
    };
    // the labels first, then only the rows drawn (a user's file is streamed)
    let (_, mut drawn) = timings.time(format!("load/{dataset}"), || {
        root.rows::<LabeledText>(name, split)?.pick(
            |r| r.label.clone(),
            |labels, split_checksum| {
                sage_cluster::subset_plans(labels, split_checksum, &drawing)
                    .into_iter()
                    .next()
                    .unwrap_or_default()
            },
        )
    })?;
    drawn.selection.max_rows = Some(drawing.max_texts);
    drawn.selection.seed = seed.0;
    let labels: Vec<String> = drawn.rows.iter().map(|r| r.label.clone()).collect();
    let classes = labels.iter().collect::<BTreeSet<_>>().len();
    if let Some(why) = measures::unclusterable(&labels) {
        return Err(NoiseError::Insufficient(format!(
            "{dataset}: of the texts drawn, {why}"
        )));
    }
    sage_cluster::check_memory(similarity, &dataset, drawn.rows.len()).map_err(cluster_error)?;
    Ok((drawn, labels, classes))
}

/// A clustering error as the error of the tasks over data: its data and similarity errors
/// as they are, the rest (too large, not a number) as too little to score.
pub fn cluster_error(e: sage_cluster::ClusterError) -> NoiseError {
    match e {
        sage_cluster::ClusterError::Data(e) => NoiseError::Data(e),
        sage_cluster::ClusterError::Core(e) => NoiseError::Core(e),
        other => NoiseError::Insufficient(other.to_string()),
    }
}

/// The clustering dataset `name/split`: one subset drawn as SAGE's clustering task draws it,
/// clustered clean and under every condition.
pub(crate) fn clustering(
    scorer: Scorer,
    root: &DataRoot,
    (name, split): (&str, &str),
    conditions: &[Condition],
    options: &Options,
    timings: &mut Timings,
) -> Result<Measured> {
    let dataset = format!("{name}/{split}");
    let (
        Sampled {
            rows,
            positions,
            selection,
        },
        labels,
        classes,
    ) = clustering_subset(
        scorer.similarity,
        root,
        (name, split),
        options.max_rows,
        options.seed,
        timings,
    )?;
    let clean: Vec<&str> = rows.iter().map(|r| r.text.as_str()).collect();
    let stream = format!("noise/{}", selection.split_checksum);
    let noisy = noised(conditions, &stream, &clean, &positions, options)?;
    let cluster = |texts: &[&str]| -> Result<Vec<f64>> {
        Ok(
            sage_cluster::cluster_texts(scorer.similarity, &dataset, texts, classes)
                .map_err(cluster_error)?
                .into_iter()
                .map(|c| c as f64)
                .collect(),
        )
    };
    let mut values = vec![timings.time(format!("cluster/{dataset}/clean"), || cluster(&clean))?];
    for (condition, n) in conditions.iter().zip(&noisy) {
        let texts: Vec<&str> = n.texts.iter().map(String::as_str).collect();
        values.push(if texts == clean {
            values[0].clone()
        } else {
            timings.time(format!("cluster/{dataset}/{}", condition.id()), || {
                cluster(&texts)
            })?
        });
    }
    let tallies: Vec<Tally> = noisy.into_iter().map(|n| n.tally).collect();
    Ok(Measured {
        report: DatasetReport::empty(dataset, Task::Clustering, "texts", rows.len())
            .with_rows(selection),
        statistic: Statistic::VMeasure(labels),
        values,
        tallies,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_majority_votes_and_a_tie_goes_to_the_nearer_neighbour() {
        let reference: Vec<LabeledText> = ["a", "b", "b", "a", "c"]
            .iter()
            .map(|l| LabeledText {
                text: String::new(),
                label: (*l).to_owned(),
                ..LabeledText::default()
            })
            .collect();
        let top = |order: [usize; 5]| {
            let mut top = TopK::new(NEIGHBOURS);
            for (rank, i) in order.into_iter().enumerate() {
                top.offer(1.0 - rank as f64 / 10.0, &i.to_string());
            }
            top
        };
        // a, b, b, a, c: two each for a and b, a's nearer
        assert_eq!(vote(&top([0, 1, 2, 3, 4]), &reference), "a");
        // b, a, b, a, c: b's nearer
        assert_eq!(vote(&top([1, 0, 2, 3, 4]), &reference), "b");
        // c, b, a, b, a: b and a tie at two, b nearer
        assert_eq!(vote(&top([4, 1, 0, 2, 3]), &reference), "b");
    }
}
