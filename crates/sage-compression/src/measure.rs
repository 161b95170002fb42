//! Each dataset kind's texts embedded once, stored at every point of the grid, and scored.

use std::collections::HashMap;

use ndarray::{Array2, Axis};
use rayon::prelude::*;
use sage_core::{Embedder, Role, Similarity, Timings};
use sage_data::{DataRoot, DatasetKind, LabeledPair, RowSelection, StsPair};
use sage_measures::ndcg_at_k;
use sage_noise::{Statistic, Task};
use sage_retrieval::TopK;

use crate::codec::{asked, cut, pair_score, stored, Format, Int8Ranges};
use crate::{CompressionError, DatasetReport, Measured, Options, Result};

/// Stored vectors scored against every asked one at a time: a block's scores stay a few
/// hundred MB for thousands of queries.
const BLOCK: usize = 4096;

/// The documents retrieval scores per query, as trec_eval's NDCG@10.
const RETRIEVAL_K: usize = 10;

/// The (format, width) points a run scores, the reference (float32 at the full width) first.
pub(crate) struct Grid {
    pub(crate) points: Vec<(Format, usize)>,
}

impl Grid {
    /// `formats` at every one of `widths` (widest first, the full width first of all).
    pub(crate) fn new(formats: &[Format], widths: &[usize]) -> Grid {
        let full = widths[0];
        let mut points = vec![(Format::Float32, full)];
        let mut formats = formats.to_vec();
        formats.sort_unstable();
        formats.dedup();
        for format in formats {
            for &width in widths {
                if (format, width) != (Format::Float32, full) {
                    points.push((format, width));
                }
            }
        }
        Grid { points }
    }

    /// The reference point's index.
    pub(crate) fn reference(&self) -> usize {
        0
    }

    /// The reference point alone: what a full-precision twin is measured at.
    fn reference_only(&self) -> Grid {
        Grid {
            points: vec![self.points[self.reference()]],
        }
    }

    /// The widths, widest first.
    fn widths(&self) -> Vec<usize> {
        let mut widths: Vec<usize> = self.points.iter().map(|p| p.1).collect();
        widths.sort_unstable_by(|a, b| b.cmp(a));
        widths.dedup();
        widths
    }
}

/// What a dataset is measured with: the model, and where it computes at a lower precision, the
/// same model at float32, whose float32 vectors at full width are the reference.
#[derive(Clone, Copy)]
pub(crate) struct Models<'a> {
    pub(crate) model: &'a dyn Embedder,
    pub(crate) twin: Option<&'a dyn Embedder>,
}

/// Per grid point the model's values, and the reference values: the twin's at the reference
/// point where there is a twin, else the model's own. `measure(embedder, grid, tag, timings)`
/// embeds and scores; `tag` marks the twin's timings.
fn with_reference(
    models: Models,
    grid: &Grid,
    timings: &mut Timings,
    mut measure: impl FnMut(&dyn Embedder, &Grid, &str, &mut Timings) -> Result<Vec<Vec<f64>>>,
) -> Result<(Vec<Vec<f64>>, Vec<f64>)> {
    let values = measure(models.model, grid, "", timings)?;
    let reference = match models.twin {
        Some(twin) => {
            measure(twin, &grid.reference_only(), " (float32 twin)", timings)?.swap_remove(0)
        }
        None => values[grid.reference()].clone(),
    };
    Ok((values, reference))
}

/// One dataset of any kind the suite reads, measured at every point of `grid`.
pub(crate) fn dataset(
    models: Models,
    similarity: &dyn Similarity,
    root: &DataRoot,
    (name, split): (&str, &str),
    grid: &Grid,
    options: &Options,
    timings: &mut Timings,
) -> Result<Measured> {
    match root.kind(name)? {
        DatasetKind::Beir => retrieval(models, root, (name, split), grid, options, timings),
        DatasetKind::StsPairs => {
            let (rows, selection) = sage_noise::sampled::<StsPair>(
                root,
                (name, split),
                (options.max_rows, options.seed),
                timings,
            )?;
            let gold = rows.iter().map(|r| r.score).collect();
            let pairs = rows
                .into_iter()
                .map(|r| (r.sentence1, r.sentence2))
                .collect();
            pairs_task(
                models,
                (Task::Sts, Statistic::Spearman(gold)),
                pairs,
                selection,
                grid,
                options,
                timings,
            )
        }
        DatasetKind::PairClassification | DatasetKind::ParaphrasePairs => {
            let (rows, selection) = sage_noise::sampled::<LabeledPair>(
                root,
                (name, split),
                (options.max_rows, options.seed),
                timings,
            )?;
            let truth = rows.iter().map(|r| r.label).collect();
            let pairs = rows
                .into_iter()
                .map(|r| (r.sentence1, r.sentence2))
                .collect();
            pairs_task(
                models,
                (Task::PairClassification, Statistic::AveragePrecision(truth)),
                pairs,
                selection,
                grid,
                options,
                timings,
            )
        }
        DatasetKind::Classification => {
            classification(models, root, (name, split), grid, options, timings)
        }
        DatasetKind::Clustering => clustering(
            models,
            similarity,
            root,
            (name, split),
            grid,
            options,
            timings,
        ),
        other => Err(CompressionError::Insufficient(format!(
            "{name}: the compression suite reads retrieval (BEIR), STS, pair-classification, \
             classification and clustering datasets; this one holds {}",
            other.name()
        ))),
    }
}

/// `texts` embedded once, as `role`.
fn embed(
    embedder: &dyn Embedder,
    texts: &[&str],
    role: Role,
    label: String,
    timings: &mut Timings,
) -> Result<Array2<f32>> {
    Ok(timings.time(label, || embedder.embed_as(texts, role))?)
}

/// The rows of `n` stored vectors int8 is calibrated on: a seeded sample of `calibration`
/// (all when fewer), drawn under a stream of the dataset's own so that the bootstrap's draws are
/// untouched by it.
fn calibration_rows(n: usize, options: &Options, stream: &str) -> Vec<usize> {
    let mut rng = options
        .seed
        .rng(&format!("compression/calibration/{stream}"));
    let mut rows = rand::seq::index::sample(&mut rng, n, options.calibration.min(n)).into_vec();
    rows.sort_unstable();
    rows
}

/// Every point's stored vectors of `vectors` (and what the store is asked with, for ranking):
/// `visit(point, format, stored, cut)` per applicable point, with the cut float vectors of the
/// point's width.
fn each_point(
    grid: &Grid,
    vectors: &Array2<f32>,
    calibration: &[usize],
    mut visit: impl FnMut(usize, Format, &Array2<f32>, &Array2<f32>) -> Result<()>,
) -> Result<()> {
    for width in grid.widths() {
        let cut = cut(vectors, width);
        let ranges = Int8Ranges::calibrate(cut.select(Axis(0), calibration).view());
        for (p, &(format, w)) in grid.points.iter().enumerate() {
            if w == width {
                visit(p, format, &stored(format, &cut, &ranges), &cut)?;
            }
        }
    }
    Ok(())
}

/// The `k` best stored rows (by their `ids`) of each asked row, by the store's dot product;
/// with `rescore` (the float asked rows and a factor), the `factor · k` best re-ranked by the
/// float rows' dot product with the stored ones.
fn nearest(
    asked: &Array2<f32>,
    stored: &Array2<f32>,
    ids: &[String],
    k: usize,
    rescore: Option<(&Array2<f32>, usize)>,
) -> Vec<TopK> {
    let first = rescore.map_or(k, |(_, factor)| k * factor);
    let mut tops = vec![TopK::new(first); asked.nrows()];
    for (b, block) in stored.axis_chunks_iter(Axis(0), BLOCK).enumerate() {
        let scores = asked.dot(&block.t());
        let ids = &ids[b * BLOCK..];
        tops.par_iter_mut().enumerate().for_each(|(i, top)| {
            for (id, &s) in ids.iter().zip(scores.row(i)) {
                top.offer(f64::from(s), id);
            }
        });
    }
    let Some((float, _)) = rescore else {
        return tops;
    };
    let row_of: HashMap<&str, usize> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), i))
        .collect();
    tops.par_iter()
        .enumerate()
        .map(|(i, top)| {
            let mut best = TopK::new(k);
            for doc in top.ranked() {
                let row = stored.row(row_of[doc.id]);
                best.offer(f64::from(float.row(i).dot(&row)), doc.id);
            }
            best
        })
        .collect()
}

/// A ranking task's values at every point: the stored rows ranked for each asked row, and each
/// asked row's value of its ranking (`value(i, top)`).
fn ranked_values(
    grid: &Grid,
    asked_vectors: &Array2<f32>,
    stored_vectors: &Array2<f32>,
    calibration: &[usize],
    (ids, k): (&[String], usize),
    options: &Options,
    value: impl Fn(usize, &TopK) -> Result<f64> + Sync,
) -> Result<Vec<Vec<f64>>> {
    let mut values = vec![Vec::new(); grid.points.len()];
    // the asked rows cut per width, as the stored ones
    let mut asked_cut: HashMap<usize, Array2<f32>> = HashMap::new();
    each_point(grid, stored_vectors, calibration, |p, format, stored, _| {
        let width = grid.points[p].1;
        let float = asked_cut
            .entry(width)
            .or_insert_with(|| cut(asked_vectors, width));
        let query = asked(format, float);
        let rescore =
            (format == Format::BinaryRescored).then_some((&*float, options.rescore_factor));
        let tops = nearest(&query, stored, ids, k, rescore);
        values[p] = tops
            .par_iter()
            .enumerate()
            .map(|(i, top)| value(i, top))
            .collect::<Result<Vec<f64>>>()?;
        Ok(())
    })?;
    Ok(values)
}

fn retrieval(
    models: Models,
    root: &DataRoot,
    (name, split): (&str, &str),
    grid: &Grid,
    options: &Options,
    timings: &mut Timings,
) -> Result<Measured> {
    let sampling = sage_retrieval::Sampling {
        max_docs: options.max_docs,
        max_queries: options.max_queries,
        seed: options.seed,
    };
    let set = sage_retrieval::load_ranking_set(root, name, split, sampling, timings)?;
    let dataset = set.dataset.clone();
    if set.queries.is_empty() {
        return Err(CompressionError::Insufficient(format!(
            "{dataset}: no query to rank"
        )));
    }
    let queries: Vec<&str> = set.queries.iter().map(|q| q.text.as_str()).collect();
    let documents: Vec<&str> = set.documents.iter().map(|d| d.text.as_str()).collect();
    let ids: Vec<String> = set.documents.iter().map(|d| d.id.clone()).collect();
    let calibration = calibration_rows(documents.len(), options, &set.stream_key);
    let (values, reference) =
        with_reference(models, grid, timings, |embedder, grid, tag, timings| {
            let asked_vectors = embed(
                embedder,
                &queries,
                Role::Query,
                format!("embed/{dataset}/queries{tag}"),
                timings,
            )?;
            let stored_vectors = embed(
                embedder,
                &documents,
                Role::Document,
                format!("embed/{dataset}/documents{tag}"),
                timings,
            )?;
            timings.time(format!("score/{dataset}{tag}"), || {
                ranked_values(
                    grid,
                    &asked_vectors,
                    &stored_vectors,
                    &calibration,
                    (&ids, RETRIEVAL_K),
                    options,
                    |i, top| {
                        Ok(ndcg_at_k(
                            &top.ranked(),
                            &set.queries[i].qrels,
                            RETRIEVAL_K,
                        )?)
                    },
                )
            })
        })?;
    Ok(Measured {
        report: DatasetReport {
            corpus_total: Some(set.corpus_total),
            corpus_used: Some(set.documents.len()),
            corpus_checksum: Some(set.corpus_checksum.clone()),
            corpus_files: set.files.clone(),
            ..empty(
                dataset,
                Task::Retrieval,
                "documents",
                queries.len(),
                calibration.len(),
            )
        },
        statistic: Statistic::Mean,
        values,
        reference,
    })
}

fn classification(
    models: Models,
    root: &DataRoot,
    (name, split): (&str, &str),
    grid: &Grid,
    options: &Options,
    timings: &mut Timings,
) -> Result<Measured> {
    let dataset = format!("{name}/{split}");
    let sage_noise::ClassificationRows {
        texts: test,
        reference,
        reference_selection,
        docs,
    } = sage_noise::classification_rows(
        root,
        (name, split),
        (options.max_rows, options.max_reference),
        options.seed,
        timings,
    )?;
    let texts: Vec<&str> = test.rows.iter().map(|r| r.text.as_str()).collect();
    let stored_texts: Vec<&str> = docs.iter().map(|d| d.text.as_str()).collect();
    let ids: Vec<String> = docs.iter().map(|d| d.id.clone()).collect();
    let calibration = calibration_rows(
        stored_texts.len(),
        options,
        &reference_selection.split_checksum,
    );
    let (values, reference_values) =
        with_reference(models, grid, timings, |embedder, grid, tag, timings| {
            let asked_vectors = embed(
                embedder,
                &texts,
                Role::Plain,
                format!("embed/{dataset}{tag}"),
                timings,
            )?;
            let stored_vectors = embed(
                embedder,
                &stored_texts,
                Role::Plain,
                format!("embed/{name}/train{tag}"),
                timings,
            )?;
            timings.time(format!("score/{dataset}{tag}"), || {
                ranked_values(
                    grid,
                    &asked_vectors,
                    &stored_vectors,
                    &calibration,
                    (&ids, sage_noise::NEIGHBOURS),
                    options,
                    |i, top| {
                        let predicted = sage_noise::vote(top, &reference);
                        Ok(f64::from(u8::from(predicted == test.rows[i].label)))
                    },
                )
            })
        })?;
    Ok(Measured {
        report: DatasetReport {
            rows: Some(test.selection),
            reference: Some(reference_selection),
            ..empty(
                dataset,
                Task::Classification,
                "train texts",
                texts.len(),
                calibration.len(),
            )
        },
        statistic: Statistic::Mean,
        values,
        reference: reference_values,
    })
}

/// A pair task: both sentences stored, each pair scored by the store's dot product.
fn pairs_task(
    models: Models,
    (task, statistic): (Task, Statistic),
    pairs: Vec<(String, String)>,
    selection: RowSelection,
    grid: &Grid,
    options: &Options,
    timings: &mut Timings,
) -> Result<Measured> {
    let dataset = format!("{}/{}", selection.dataset, selection.split);
    if pairs.len() < 2 {
        return Err(CompressionError::Insufficient(format!(
            "{dataset}: {} pairs; a correlation or a ranking needs at least 2",
            pairs.len()
        )));
    }
    // both sides in one call: one batch plan, one pass through the cache
    let texts: Vec<&str> = pairs
        .iter()
        .map(|(a, _)| a.as_str())
        .chain(pairs.iter().map(|(_, b)| b.as_str()))
        .collect();
    let n = pairs.len();
    let calibration = calibration_rows(2 * n, options, &selection.split_checksum);
    let (values, reference) =
        with_reference(models, grid, timings, |embedder, grid, tag, timings| {
            let vectors = embed(
                embedder,
                &texts,
                Role::Plain,
                format!("embed/{dataset}{tag}"),
                timings,
            )?;
            let mut values = vec![Vec::new(); grid.points.len()];
            timings.time(format!("score/{dataset}{tag}"), || {
                each_point(grid, &vectors, &calibration, |p, format, stored, _| {
                    values[p] = (0..n)
                        .map(|i| pair_score(format, stored.row(i), stored.row(n + i)))
                        .collect();
                    Ok(())
                })
            })?;
            Ok(values)
        })?;
    let mut report = empty(dataset, task, "both sentences", n, calibration.len());
    report.rows = Some(selection);
    report.notes = rescoring_note(grid);
    Ok(Measured {
        report,
        statistic,
        values,
        reference,
    })
}

/// The note of a task that ranks nothing, where binary-rescored was asked for.
fn rescoring_note(grid: &Grid) -> Vec<String> {
    grid.points
        .iter()
        .any(|p| p.0 == Format::BinaryRescored)
        .then(|| {
            "binary-rescored re-ranks a ranking's candidates; this task ranks nothing, so \
             rescoring changes nothing and its points are binary's"
                .to_owned()
        })
        .into_iter()
        .collect()
}

fn clustering(
    models: Models,
    similarity: &dyn Similarity,
    root: &DataRoot,
    (name, split): (&str, &str),
    grid: &Grid,
    options: &Options,
    timings: &mut Timings,
) -> Result<Measured> {
    let dataset = format!("{name}/{split}");
    let (drawn, labels, classes) = sage_noise::clustering_subset(
        similarity,
        root,
        (name, split),
        options.max_rows,
        options.seed,
        timings,
    )?;
    let n = drawn.rows.len();
    let texts: Vec<&str> = drawn.rows.iter().map(|r| r.text.as_str()).collect();
    let calibration = calibration_rows(n, options, &drawn.selection.split_checksum);
    let (values, reference) =
        with_reference(models, grid, timings, |embedder, grid, tag, timings| {
            let vectors = embed(
                embedder,
                &texts,
                Role::Plain,
                format!("embed/{dataset}{tag}"),
                timings,
            )?;
            let mut values = vec![Vec::new(); grid.points.len()];
            timings.time(format!("cluster/{dataset}{tag}"), || {
                each_point(grid, &vectors, &calibration, |p, format, stored, _| {
                    let mut distances = Vec::with_capacity(n * n.saturating_sub(1) / 2);
                    for i in 0..n {
                        for j in i + 1..n {
                            let score = pair_score(format, stored.row(i), stored.row(j));
                            distances.push((1.0 - score).clamp(0.0, 2.0));
                        }
                    }
                    let merges = sage_cluster::complete_linkage(&mut distances, n);
                    values[p] = sage_cluster::cut(&merges, n, classes)
                        .into_iter()
                        .map(|c| c as f64)
                        .collect();
                    Ok(())
                })
            })?;
            Ok(values)
        })?;
    let mut report = empty(dataset, Task::Clustering, "texts", n, calibration.len());
    report.rows = Some(drawn.selection);
    report.notes = rescoring_note(grid);
    Ok(Measured {
        report,
        statistic: Statistic::VMeasure(labels),
        values,
        reference,
    })
}

/// A dataset's report before its scores are filled in.
fn empty(
    dataset: String,
    task: Task,
    stored: &str,
    units: usize,
    calibrated_on: usize,
) -> DatasetReport {
    DatasetReport {
        dataset,
        task,
        measure: task.measure().to_owned(),
        stored: stored.to_owned(),
        units,
        calibrated_on,
        rows: None,
        reference: None,
        corpus_total: None,
        corpus_used: None,
        corpus_checksum: None,
        corpus_files: Vec::new(),
        reference_score: 0.0,
        reference_ci95: None,
        formats: Vec::new(),
        score: None,
        notes: Vec::new(),
    }
}
