//! Against scikit-learn: three seeded tasks, one per scheme, in the export layout with their
//! folds, and scikit-learn's accuracies and chosen `C`
//! (`tests/python-reference/transfer_reference.py fixture`, scikit-learn 1.7.2, in
//! `tests/golden/golden.json`). Ours must choose the same `C` and agree to 0.1 points.

use std::path::{Path, PathBuf};

use ndarray::Array2;
use serde_json::Value;

use crate::folds::Fold;
use crate::protocol::{self, Labelled, Plan};

fn folder() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// A NumPy `.npy` of little-endian `f8`, two dimensions, C order (what the script writes).
fn read_npy(path: &Path) -> Array2<f64> {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(&bytes[..6], b"\x93NUMPY");
    let len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let header = std::str::from_utf8(&bytes[10..10 + len]).unwrap();
    assert!(
        header.contains("'<f8'") && header.contains("'fortran_order': False"),
        "{header}"
    );
    let shape = header.split("'shape': (").nth(1).unwrap();
    let dims: Vec<usize> = shape
        .split(')')
        .next()
        .unwrap()
        .split(',')
        .filter_map(|d| d.trim().parse().ok())
        .collect();
    let values: Vec<f64> = bytes[10 + len..]
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    Array2::from_shape_vec((dims[0], dims[1]), values).unwrap()
}

fn folds(held: &Value, n: usize) -> Vec<Fold> {
    held.as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let test: Vec<usize> = f
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i.as_u64().unwrap() as usize)
                .collect();
            let train = (0..n).filter(|i| !test.contains(i)).collect();
            Fold { train, test }
        })
        .collect()
}

#[test]
fn every_scheme_agrees_with_scikit_learn() {
    let golden: Value =
        serde_json::from_slice(&std::fs::read(folder().join("golden.json")).unwrap()).unwrap();
    for (dataset, expected) in golden.as_object().unwrap() {
        let stem = dataset.replace('/', "_");
        let plan: Value =
            serde_json::from_slice(&std::fs::read(folder().join(format!("{stem}.json"))).unwrap())
                .unwrap();
        let splits: Vec<&str> = plan["splits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap())
            .collect();
        // the features as sage fits them: single precision
        let x: Vec<Array2<f32>> = splits
            .iter()
            .map(|s| {
                read_npy(&folder().join(plan["features"][s].as_str().unwrap())).mapv(|v| v as f32)
            })
            .collect();
        let y: Vec<Vec<usize>> = splits
            .iter()
            .map(|s| {
                plan["labels"][s]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_u64().unwrap() as usize)
                    .collect()
            })
            .collect();
        let classes = plan["classes"].as_array().unwrap().len();
        let grid: Vec<f64> = plan["grid"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        let view = |i: usize| Labelled {
            x: x[i].view(),
            y: &y[i],
        };
        let outer = folds(&plan["folds"], y[0].len());
        let outcome = match plan["scheme"].as_str().unwrap() {
            "inner-k-fold" => {
                let inner = plan["inner_folds"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .zip(&outer)
                    .map(|(f, o)| folds(f, o.train.len()))
                    .collect();
                protocol::inner_k_fold(view(0), classes, &Plan { outer, inner }, &grid)
            }
            "k-fold-then-test" => {
                protocol::k_fold_then_test(view(0), view(1), classes, &outer, &grid)
            }
            _ => protocol::train_dev_test(view(0), view(1), view(2), classes, &grid),
        }
        .unwrap();
        let accuracy = if outcome.fold_accuracies.is_empty() {
            crate::classifier::accuracy(&outcome.predicted, &outcome.truth)
        } else {
            outcome.fold_accuracies.iter().sum::<f64>() / outcome.fold_accuracies.len() as f64
        };
        let want = expected["accuracy"].as_f64().unwrap();
        assert!(
            (100.0 * (accuracy - want)).abs() <= 0.1,
            "{dataset}: ours {accuracy}, scikit-learn {want}"
        );
        let chosen: Vec<f64> = expected["chosen_c"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        assert_eq!(outcome.chosen, chosen, "{dataset}: the C chosen");
    }
}
