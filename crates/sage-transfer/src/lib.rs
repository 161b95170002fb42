//! # sage-transfer
//!
//! Downstream transfer as SentEval measures it: a logistic regression is trained on a model's
//! sentence vectors for each of ten classification tasks and its accuracy is the model's score.
//! EvalRank (Wang et al. 2022) sets these accuracies against each intrinsic score to ask which
//! intrinsic evaluation predicts downstream performance; ALIGN-SIM reports seven of them beside
//! its criteria. The protocol is SentEval's as EvalRank's repository runs it
//! (`src/s_evaluation.py`, `src/senteval/`):
//!
//! - **tasks**: SciCite, MR, CR, MPQA, SUBJ, SST-2, SST-5, TREC, MRPC and SICK-E
//!   ([`DEFAULT_TASKS`]), or any labelled texts or labelled pairs of the user's;
//! - **features**: the sentence vector; for a pair `(u, v)`, `[|u − v|, u ∗ v]` (SentEval's
//!   `np.c_[np.abs(A - B), A * B]` in `mrpc.py` and `sick.py`);
//! - **split scheme**, read from the splits a dataset has, so that a user's file is run the way
//!   the shipped task of its shape is: one split (MR, CR, MPQA, SUBJ) is an inner k-fold; a test
//!   split with a train split (TREC, MRPC) is a k-fold over train to choose the regularisation,
//!   then test; a test split with train and dev (SST, SICK-E, SciCite) chooses on dev
//!   ([`Scheme`]; the `protocol` module);
//! - **classifier**: L2-regularised logistic regression, binary for two classes and
//!   multinomial for more, over SentEval's scikit-learn grid of `C`: `2^-2 … 2^3` for the inner
//!   k-fold and dev choices, `2^-1 … 2^5` for the k-fold on train. EvalRank ran SentEval's
//!   PyTorch path (an MLP trained by Adam with early stopping on shuffled batches), whose
//!   numbers move with the framework's random streams; the scikit-learn path is a convex
//!   problem whose solution does not depend on the solver or the thread count, so a result can
//!   be rebuilt exactly and checked against scikit-learn itself
//!   (`tests/python-reference/transfer_reference.py`);
//! - **solver**: L-BFGS on that objective, written here (the `solver` module). The
//!   design card names linfa, and linfa-logistic minimises the same objective (with `α = 1/C`,
//!   see the `classifier` module); a test holds the two to the same weights. It was
//!   the first solver here and is not the one used because of its cost, not its answer: it
//!   evaluates the loss and the gradient in separate passes over the rows and takes `Xᵀ r`
//!   column by column over row-major features, so MR's inner k-fold (610 fits on ~9,600 rows of
//!   384 values) had not finished after 4 minutes on the 2-core development CPU, where the
//!   one-pass solver here takes the whole ten-task suite in the time the crate's measurements
//!   give (docs/src/transfer.md);
//! - **folds**: stratified and seeded ([`folds`]); `k` is an option (10 by default, SentEval's
//!   default; EvalRank used 5).
//!
//! Per task: accuracy (F1 of the positive class too for a binary pair task, as SentEval gives
//! for MRPC) with a 95% percentile-bootstrap interval, over the test items where there is a test
//! split and over the outer folds' accuracies where there is not. The suite's score is the mean
//! accuracy over tasks, with a bootstrap whose every resample draws each task's units once: the
//! report pairs two models' resamples to say whether a difference is real.
//!
//! A classical metric has no vectors to train on: its run says transfer is not applicable and
//! has no score.
//!
//! ## Cost
//! Each task's texts are embedded once (a second run reads them from the embedding cache).
//! Fitting dominates the rest: an inner k-fold fits `k · (k · |grid| + 1)` models (610 at
//! `k = 10`), each on the outer fold's training rows; the folds run in parallel, each walking
//! the grid with warm starts. Memory is the task's vectors (as 8-byte features) plus the copies
//! of the fold being fitted on each thread.
#![deny(missing_docs)]

mod classifier;
mod export;
pub mod folds;
mod protocol;
mod solver;

use std::collections::{BTreeMap, BTreeSet};

use ndarray::Array2;
use sage_core::{Embedder, Role, RunSeed, SuiteReport, Timings};
use sage_data::{ClassedPair, DataRoot, DatasetKind, LabeledText, RowSelection};
use sage_measures::{bootstrap_replicates, BootstrapInterval, BootstrapReplicates};
use serde::{Deserialize, Serialize};

use crate::protocol::{FitFailure, Labelled, Outcome};

/// Errors of this crate: the error every task over data shares.
pub type TransferError = sage_task::TaskError;

/// Result alias of this crate.
pub type Result<T, E = TransferError> = std::result::Result<T, E>;

/// EvalRank's ten SentEval tasks (`s_evaluation.py`'s `transfer_tasks`), each with the split
/// that is scored.
pub const DEFAULT_TASKS: [(&str, &str); 10] = [
    ("scicite", "test"),
    ("mr", "all"),
    ("cr", "all"),
    ("mpqa", "all"),
    ("subj", "all"),
    ("sst2", "test"),
    ("sst5", "test"),
    ("trec", "test"),
    ("mrpc", "test"),
    ("sick-e", "test"),
];

/// The seven of them ALIGN-SIM's Table 1 reports.
pub const ALIGN_SIM_TASKS: [&str; 7] = ["mr", "cr", "subj", "mpqa", "sst2", "trec", "mrpc"];

/// The kinds of dataset the suite reads: labelled texts and labelled pairs.
pub const KINDS: [DatasetKind; 5] = [
    DatasetKind::Classification,
    DatasetKind::Clustering,
    DatasetKind::PairClassification,
    DatasetKind::ParaphrasePairs,
    DatasetKind::PairClasses,
];

/// SentEval's scikit-learn grid of `C` for the inner k-fold and the dev choice
/// (`[2**t for t in range(-2, 4, 1)]`).
pub const GRID: [f64; 6] = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0];

/// SentEval's scikit-learn grid of `C` for the k-fold on train (`[2**t for t in range(-1, 6, 1)]`).
pub const K_FOLD_GRID: [f64; 7] = [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0];

sage_core::suite_options! {
    /// Run options: the one declaration the flags, `--options`, bench.toml and Python keywords
    /// all read.
    #[derive(Clone, Debug, PartialEq)]
    pub struct Options {
        /// Folds of every k-fold (outer and inner alike, as SentEval's `kfold`).
        pub k: usize = 10, sage_core::OptionSpec::whole(2, 100);
        /// The values of `C` (scikit-learn's inverse regularisation) tried; empty: SentEval's
        /// grid for each scheme.
        pub grid: Vec<f64> = Vec::new(), sage_core::OptionSpec::any();
        /// Rows sampled (seeded) of each split; all when unset.
        pub max_rows: Option<usize> = None, sage_core::OptionSpec::any();
        /// A folder to write each task's features, labels and folds to (NumPy `.npy` files and
        /// a JSON plan), so that an outside implementation can be run on exactly the same
        /// split (`tests/python-reference/transfer_reference.py` reads it); none when unset.
        pub export: Option<String> = None, sage_core::OptionSpec::any();
        /// Run seed (the request's, never an option).
        pub seed: RunSeed = RunSeed::default(), sage_core::OptionSpec::run_seed();
    }
    also_check = grid_is_positive;
}

fn grid_is_positive(options: &Options) -> sage_core::Result<()> {
    if let Some(c) = options.grid.iter().find(|c| !(c.is_finite() && **c > 0.0)) {
        return Err(sage_core::SageError::InvalidArgument(format!(
            "grid: every C is a positive number, got {c}"
        )));
    }
    Ok(())
}

/// How a task chooses its regularisation and what it scores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scheme {
    /// One split: outer k-fold, `C` by an inner k-fold (SentEval's `InnerKFoldClassifier`).
    InnerKFold,
    /// Train and test: `C` by a k-fold over train, scored on test (`KFoldClassifier`).
    KFoldThenTest,
    /// Train, dev and test: `C` by dev accuracy, scored on test (`SplitClassifier`).
    TrainDevTest,
}

/// What a task's items are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Input {
    /// One text an item; the feature is its vector.
    Texts,
    /// Two texts an item; the features are `[|u − v|, u ∗ v]`.
    Pairs,
}

/// One task's result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskReport {
    /// The dataset's name.
    pub task: String,
    /// `name/split`: the split scored.
    pub dataset: String,
    /// The scheme, read from the dataset's splits.
    pub scheme: Scheme,
    /// The splits read, in the scheme's order (train, dev, test; or the one split).
    pub splits: Vec<String>,
    /// Texts or pairs.
    pub input: Input,
    /// The classes, in the order of their indices.
    pub classes: Vec<String>,
    /// Features per item.
    pub features: usize,
    /// The grid of `C` tried, ascending.
    pub grid: Vec<f64>,
    /// The `C` chosen: one per outer fold for the inner k-fold, else one.
    pub chosen_c: Vec<f64>,
    /// Validation accuracy per grid point: per outer fold for the inner k-fold, else one row.
    pub validation: Vec<Vec<f64>>,
    /// Accuracy: on the test split, or the mean over the outer folds.
    pub accuracy: f64,
    /// Its 95% percentile-bootstrap interval.
    pub ci95: Option<BootstrapInterval>,
    /// What the interval resamples: `test items` or `outer folds`.
    pub interval_over: String,
    /// The outer folds' accuracies (inner k-fold only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fold_accuracies: Vec<f64>,
    /// F1 of class `1` where the task is a binary pair task labelled 0/1 (MRPC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub f1: Option<f64>,
    /// Its 95% percentile-bootstrap interval over the test items.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub f1_ci95: Option<BootstrapInterval>,
    /// Items scored.
    pub scored: usize,
    /// The rows read, per split.
    pub rows: Vec<RowSelection>,
}

/// A whole run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TransferReport {
    /// The similarity's name.
    pub similarity: String,
    /// Run seed.
    pub seed: u64,
    /// The options.
    pub options: Options,
    /// Whether the similarity has vectors to train on (false for a classical metric).
    pub applicable: bool,
    /// The model's width.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dimension: Option<usize>,
    /// Where and in what precision the model computed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub computed: Option<String>,
    /// What a reader should know first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Per task, in the order asked.
    pub tasks: Vec<TaskReport>,
    /// Mean accuracy over tasks (NaN, written `null`, when not applicable).
    #[serde(deserialize_with = "sage_measures::null_as_nan")]
    pub score: f64,
    /// Its percentile-bootstrap 95% interval.
    pub ci95: Option<BootstrapInterval>,
    /// Every resample's mean accuracy behind `ci95`, for the report's paired differences.
    pub bootstrap: Option<BootstrapReplicates>,
    /// Wall-clock phases.
    pub timings: Timings,
}

impl SuiteReport for TransferReport {
    fn score(&self) -> Option<f64> {
        self.applicable.then_some(self.score)
    }
    fn rows_used(&self) -> Vec<sage_core::RowsUsed> {
        self.tasks
            .iter()
            .flat_map(|t| t.rows.iter().cloned().map(Into::into))
            .collect()
    }
}

/// The run of a similarity with no vectors (a classical metric): not applicable, no score.
pub fn not_applicable(similarity: &str, options: Options) -> TransferReport {
    TransferReport {
        similarity: similarity.to_owned(),
        seed: options.seed.0,
        options,
        applicable: false,
        dimension: None,
        computed: None,
        notes: vec![
            "a classical metric has no sentence vectors to train a classifier on, so transfer \
             is not applicable"
                .to_owned(),
        ],
        tasks: Vec::new(),
        score: f64::NAN,
        ci95: None,
        bootstrap: None,
        timings: Timings::default(),
    }
}

/// The scheme `split` of `name` is scored by, and the splits it reads in the scheme's order.
pub fn scheme_of(root: &DataRoot, name: &str, split: &str) -> Result<(Scheme, Vec<String>)> {
    let splits = root.splits(name)?;
    if !splits.iter().any(|s| s == split) {
        return Err(sage_data::DataError::UnknownSplit {
            dataset: name.to_owned(),
            split: split.to_owned(),
            available: splits,
        }
        .into());
    }
    let train = splits.iter().find(|s| *s == "train" && *s != split);
    let dev = splits
        .iter()
        .find(|s| matches!(s.as_str(), "dev" | "validation") && *s != split);
    Ok(match (train, dev) {
        (Some(t), Some(d)) => (
            Scheme::TrainDevTest,
            vec![t.clone(), d.clone(), split.into()],
        ),
        (Some(t), None) => (Scheme::KFoldThenTest, vec![t.clone(), split.into()]),
        (None, Some(d)) => {
            return Err(insufficient(format!(
                "{name}/{split}: {name} has a {d} split but no train split; transfer trains on \
                 `train` and chooses C on {d}: name the split to train on `train`, or score \
                 {name}/{d} alone (an inner k-fold)"
            )))
        }
        (None, _) => (Scheme::InnerKFold, vec![split.into()]),
    })
}

/// One split's items: texts (one or two) and labels.
struct Items {
    texts: Vec<Vec<String>>,
    labels: Vec<String>,
    /// The split's row (0-based, in file order) of each item.
    positions: Vec<usize>,
    selection: RowSelection,
}

fn read_split(
    root: &DataRoot,
    name: &str,
    split: &str,
    input: Input,
    options: &Options,
) -> Result<Items> {
    Ok(match input {
        Input::Texts => {
            let sampled = root
                .rows::<LabeledText>(name, split)?
                .sample(options.max_rows, options.seed)?;
            let (texts, labels) = sampled
                .rows
                .into_iter()
                .map(|r| (vec![r.text], r.label))
                .unzip();
            Items {
                texts,
                labels,
                positions: sampled.positions,
                selection: sampled.selection,
            }
        }
        Input::Pairs => {
            let sampled = root
                .rows::<ClassedPair>(name, split)?
                .sample(options.max_rows, options.seed)?;
            let (texts, labels) = sampled
                .rows
                .into_iter()
                .map(|r| (vec![r.sentence1, r.sentence2], r.label))
                .unzip();
            Items {
                texts,
                labels,
                positions: sampled.positions,
                selection: sampled.selection,
            }
        }
    })
}

fn insufficient(why: String) -> TransferError {
    TransferError::Insufficient(why)
}

/// The transfer suite on each of `tasks` (`name`, `split` scored) for `embedder`.
pub fn evaluate(
    embedder: &dyn Embedder,
    similarity: &str,
    root: &DataRoot,
    tasks: &[(&str, &str)],
    options: Options,
) -> Result<TransferReport> {
    grid_is_positive(&options)?;
    if tasks.is_empty() {
        return Err(insufficient("no task named".into()));
    }
    let mut timings = Timings::default();
    let mut reports = Vec::new();
    let mut units = Vec::new();
    for &(name, split) in tasks {
        let (report, values) = task(embedder, root, (name, split), &options, &mut timings)?;
        reports.push(report);
        units.push(values);
    }
    let score = reports.iter().map(|r| r.accuracy).sum::<f64>() / reports.len() as f64;
    let bootstrap = timings.time("bootstrap", || {
        resampled_mean(&units, options.seed, BOOTSTRAP_LABEL)
    })?;
    Ok(TransferReport {
        similarity: similarity.to_owned(),
        seed: options.seed.0,
        options,
        applicable: true,
        dimension: Some(embedder.dimension()),
        computed: embedder.compute(),
        notes: Vec::new(),
        tasks: reports,
        score,
        ci95: sage_measures::ci95(bootstrap.as_ref())?,
        bootstrap,
        timings,
    })
}

/// The label of the suite's bootstrap stream.
const BOOTSTRAP_LABEL: &str = "transfer/bootstrap";

/// The mean over groups of each group's mean, resampled: resample `b` draws every group's
/// units once. A task's units are its test items' correctness (0 or 1) or its outer folds'
/// accuracies, whose mean is its accuracy either way.
fn resampled_mean(
    groups: &[Vec<f64>],
    seed: RunSeed,
    label: &str,
) -> Result<Option<BootstrapReplicates>> {
    let sizes: Vec<usize> = groups.iter().map(Vec::len).collect();
    Ok(bootstrap_replicates(
        &sizes,
        |drawn| {
            drawn
                .iter()
                .zip(groups)
                .map(|(d, v)| d.iter().map(|&i| v[i]).sum::<f64>() / d.len() as f64)
                .sum::<f64>()
                / groups.len() as f64
        },
        sage_measures::BOOTSTRAP_RESAMPLES,
        seed,
        label,
    )?)
}

/// One task: its splits read, embedded once, the scheme run, the scores and intervals; also
/// the units its bootstrap resamples.
fn task(
    embedder: &dyn Embedder,
    root: &DataRoot,
    (name, split): (&str, &str),
    options: &Options,
    timings: &mut Timings,
) -> Result<(TaskReport, Vec<f64>)> {
    let dataset = format!("{name}/{split}");
    let input = match root.kind(name)? {
        DatasetKind::Classification | DatasetKind::Clustering => Input::Texts,
        DatasetKind::PairClassification
        | DatasetKind::ParaphrasePairs
        | DatasetKind::PairClasses => Input::Pairs,
        other => {
            return Err(insufficient(format!(
                "{dataset}: transfer trains on labelled texts or labelled pairs; this dataset \
                 holds {}",
                other.name()
            )))
        }
    };
    let (scheme, splits) = scheme_of(root, name, split)?;
    let items: Vec<Items> = timings.time(format!("load/{dataset}"), || {
        splits
            .iter()
            .map(|s| read_split(root, name, s, input, options))
            .collect::<Result<Vec<_>>>()
    })?;
    if let Some((s, _)) = splits.iter().zip(&items).find(|(_, i)| i.labels.is_empty()) {
        return Err(insufficient(format!(
            "{name}/{s}: no rows to {} (after the empty-text policy)",
            if s == &splits[0] { "train on" } else { "score" }
        )));
    }
    // the classes are those trained on; a class seen only in dev or test could never be
    // predicted, so it is named rather than scored as always wrong
    let classes: Vec<String> = items[0]
        .labels
        .iter()
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if classes.len() < 2 {
        return Err(insufficient(format!(
            "{name}/{}: {} labelled items of {} class(es); a classifier needs at least two \
             classes",
            splits[0],
            items[0].labels.len(),
            classes.len()
        )));
    }
    let index: BTreeMap<&str, usize> = classes
        .iter()
        .enumerate()
        .map(|(i, c)| (c.as_str(), i))
        .collect();
    let mut ys = Vec::new();
    for (s, part) in splits.iter().zip(&items) {
        let mut y = Vec::with_capacity(part.labels.len());
        for (row, label) in part.labels.iter().enumerate() {
            let Some(&c) = index.get(label.as_str()) else {
                return Err(insufficient(format!(
                    "{name}/{s}: row {} has class {label:?}, which {name}/{} never has, so no \
                     classifier can predict it",
                    part.selection_row(row),
                    splits[0]
                )));
            };
            y.push(c);
        }
        ys.push(y);
    }
    let features = timings.time(format!("embed/{dataset}"), || {
        featurise(embedder, &items, input, &dataset)
    })?;
    let width = features[0].ncols();
    let view = |i: usize| Labelled {
        x: features[i].view(),
        y: &ys[i],
    };
    let mut grid = if options.grid.is_empty() {
        match scheme {
            Scheme::KFoldThenTest => K_FOLD_GRID.to_vec(),
            _ => GRID.to_vec(),
        }
    } else {
        options.grid.clone()
    };
    // one order everywhere (export, protocol, report): ascending, so a tie takes the smallest C
    // as SentEval's grids (ascending) do
    grid.sort_by(f64::total_cmp);
    grid.dedup();
    let label = format!("transfer/{dataset}");
    let failed = |f: FitFailure| {
        insufficient(match f.fold {
            Some(fold) => format!("{dataset}: {fold}: {}", f.why),
            None => format!("{dataset}: {}", f.why),
        })
    };
    let plan = protocol::plan(scheme, &ys[0], &classes, options.k, options.seed, &label)
        .map_err(failed)?;
    if let Some(folder) = &options.export {
        timings.time(format!("export/{dataset}"), || {
            export::write(
                std::path::Path::new(folder),
                &export::Task {
                    dataset: &dataset,
                    scheme,
                    input,
                    splits: &splits,
                    classes: &classes,
                    grid: &grid,
                    features: &features,
                    labels: &ys,
                    plan: &plan,
                },
            )
        })?;
    }
    let outcome: Outcome = timings
        .time(format!("fit/{dataset}"), || match scheme {
            Scheme::InnerKFold => protocol::inner_k_fold(view(0), classes.len(), &plan, &grid),
            Scheme::KFoldThenTest => {
                protocol::k_fold_then_test(view(0), view(1), classes.len(), &plan.outer, &grid)
            }
            Scheme::TrainDevTest => {
                protocol::train_dev_test(view(0), view(1), view(2), classes.len(), &grid)
            }
        })
        .map_err(failed)?;
    let correct: Vec<f64> = outcome
        .predicted
        .iter()
        .zip(&outcome.truth)
        .map(|(p, t)| f64::from(u8::from(p == t)))
        .collect();
    let (accuracy, units, over) = match scheme {
        Scheme::InnerKFold => (
            outcome.fold_accuracies.iter().sum::<f64>() / outcome.fold_accuracies.len() as f64,
            outcome.fold_accuracies.clone(),
            "outer folds",
        ),
        _ => (
            classifier::accuracy(&outcome.predicted, &outcome.truth),
            correct,
            "test items",
        ),
    };
    let ci95 = resampled_mean(
        std::slice::from_ref(&units),
        options.seed,
        &format!("{label}/accuracy"),
    )?
    .map(|r| r.interval(0.95))
    .transpose()?
    .flatten();
    // SentEval gives F1 for MRPC's test split; an inner k-fold has no test split to give it on
    let binary_pairs =
        input == Input::Pairs && classes == ["0", "1"] && scheme != Scheme::InnerKFold;
    let (f1, f1_ci95) = if binary_pairs {
        let (predicted, truth) = (&outcome.predicted, &outcome.truth);
        let f1 = classifier::f1(predicted, truth);
        let replicates = bootstrap_replicates(
            &[truth.len()],
            |drawn| {
                let p: Vec<usize> = drawn[0].iter().map(|&i| predicted[i]).collect();
                let t: Vec<usize> = drawn[0].iter().map(|&i| truth[i]).collect();
                classifier::f1(&p, &t)
            },
            sage_measures::BOOTSTRAP_RESAMPLES,
            options.seed,
            &format!("{label}/f1"),
        )?;
        (Some(f1), sage_measures::ci95(replicates.as_ref())?)
    } else {
        (None, None)
    };
    let report = TaskReport {
        task: name.to_owned(),
        dataset,
        scheme,
        splits,
        input,
        classes,
        features: width,
        grid,
        chosen_c: outcome.chosen,
        validation: outcome.validation,
        accuracy,
        ci95,
        interval_over: over.to_owned(),
        fold_accuracies: outcome.fold_accuracies,
        f1,
        f1_ci95,
        scored: outcome.truth.len(),
        rows: items.into_iter().map(|i| i.selection).collect(),
    };
    Ok((report, units))
}

impl Items {
    /// The split's row number (1-based, in file order) of item `i`, for messages.
    fn selection_row(&self, i: usize) -> usize {
        self.positions[i] + 1
    }
}

/// Each split's feature rows: the vectors of its texts, or `[|u − v|, u ∗ v]` of its pairs.
/// Every distinct text of the task is embedded once, in one call.
fn featurise(
    embedder: &dyn Embedder,
    items: &[Items],
    input: Input,
    dataset: &str,
) -> Result<Vec<Array2<solver::Feature>>> {
    let mut position: BTreeMap<&str, usize> = BTreeMap::new();
    let mut texts: Vec<&str> = Vec::new();
    for part in items {
        for t in part.texts.iter().flatten() {
            position.entry(t.as_str()).or_insert_with(|| {
                texts.push(t.as_str());
                texts.len() - 1
            });
        }
    }
    let vectors = embedder.embed_as(&texts, Role::Plain)?;
    if let Some((row, _)) = vectors
        .outer_iter()
        .enumerate()
        .find(|(_, v)| v.iter().any(|x| !x.is_finite()))
    {
        return Err(insufficient(format!(
            "{dataset}: the model's vector of {:?} holds a value that is not a finite number \
             (NaN or infinite); no classifier can be trained on it",
            texts[row].chars().take(80).collect::<String>()
        )));
    }
    let d = vectors.ncols();
    Ok(items
        .iter()
        .map(|part| {
            let width = match input {
                Input::Texts => d,
                Input::Pairs => 2 * d,
            };
            let mut x = Array2::<solver::Feature>::zeros((part.texts.len(), width));
            for (i, t) in part.texts.iter().enumerate() {
                let u = vectors.row(position[t[0].as_str()]);
                let mut row = x.row_mut(i);
                match input {
                    Input::Texts => row.assign(&u),
                    Input::Pairs => {
                        let v = vectors.row(position[t[1].as_str()]);
                        for j in 0..d {
                            row[j] = (u[j] - v[j]).abs();
                            row[d + j] = u[j] * v[j];
                        }
                    }
                }
            }
            x
        })
        .collect())
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod golden_tests;
