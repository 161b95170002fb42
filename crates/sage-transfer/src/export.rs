//! A task's features, labels and folds written for an outside check
//! ([`crate::Options::export`]): one `.npy` of 8-byte floats per split, and a JSON plan naming
//! them with the labels, the scheme, the grid and every fold's held-out positions.

use std::io::Write;
use std::path::Path;

use ndarray::Array2;
use serde_json::json;

use crate::protocol::Plan;
use crate::solver::Feature;
use crate::{Input, Result, Scheme, TransferError};

/// What is written of one task.
pub(crate) struct Task<'a> {
    pub(crate) dataset: &'a str,
    pub(crate) scheme: Scheme,
    pub(crate) input: Input,
    pub(crate) splits: &'a [String],
    pub(crate) classes: &'a [String],
    pub(crate) grid: &'a [f64],
    pub(crate) features: &'a [Array2<Feature>],
    pub(crate) labels: &'a [Vec<usize>],
    pub(crate) plan: &'a Plan,
}

fn io_error(path: &Path, e: std::io::Error) -> TransferError {
    TransferError::Insufficient(format!("export: {}: {e}", path.display()))
}

/// `task` written under `folder` as `<dataset>.json` and `<dataset>.<split>.npy` (the `/` of
/// the dataset's name as `_`). Each file is written beside its final name and renamed, so a
/// reader never sees half of one.
pub(crate) fn write(folder: &Path, task: &Task<'_>) -> Result<()> {
    std::fs::create_dir_all(folder).map_err(|e| io_error(folder, e))?;
    let stem = task.dataset.replace('/', "_");
    let mut features = serde_json::Map::new();
    for (split, x) in task.splits.iter().zip(task.features) {
        let name = format!("{stem}.{split}.npy");
        atomic(&folder.join(&name), &npy(x))?;
        features.insert(split.clone(), json!(name));
    }
    let plan = json!({
        "dataset": task.dataset,
        "scheme": task.scheme,
        "input": task.input,
        "splits": task.splits,
        "classes": task.classes,
        "grid": task.grid,
        "features": features,
        "labels": task.splits.iter().zip(task.labels).map(|(s, y)| (s.clone(), json!(y))).collect::<serde_json::Map<_, _>>(),
        "folds": task.plan.outer.iter().map(|f| &f.test).collect::<Vec<_>>(),
        "inner_folds": task.plan.inner.iter().map(|folds| folds.iter().map(|f| &f.test).collect::<Vec<_>>()).collect::<Vec<_>>(),
    });
    let text = serde_json::to_vec_pretty(&plan).expect("a JSON value serialises");
    atomic(&folder.join(format!("{stem}.json")), &text)
}

fn atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let partial = path.with_extension("partial");
    let mut file = std::fs::File::create(&partial).map_err(|e| io_error(&partial, e))?;
    file.write_all(bytes).map_err(|e| io_error(&partial, e))?;
    drop(file);
    std::fs::rename(&partial, path).map_err(|e| io_error(path, e))
}

/// `x` as a NumPy `.npy` file (format 1.0, little-endian `f8`, C order): each value exactly as
/// fitted on, widened.
fn npy(x: &Array2<Feature>) -> Vec<u8> {
    let mut header = format!(
        "{{'descr': '<f8', 'fortran_order': False, 'shape': ({}, {}), }}",
        x.nrows(),
        x.ncols()
    );
    // magic (6) + version (2) + length (2) + header + newline, a multiple of 64
    let unpadded = 10 + header.len() + 1;
    header.push_str(&" ".repeat((64 - unpadded % 64) % 64));
    header.push('\n');
    let mut out = Vec::with_capacity(10 + header.len() + 8 * x.len());
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    for &v in x.iter() {
        out.extend_from_slice(&f64::from(v).to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The header is NumPy's: magic, version 1.0, a dict padded so the data starts at a
    /// multiple of 64 bytes.
    #[test]
    fn npy_layout() {
        let x = Array2::from_shape_vec((2, 3), vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
        let bytes = npy(&x);
        assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
        let len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        assert_eq!((10 + len) % 64, 0);
        let header = std::str::from_utf8(&bytes[10..10 + len]).unwrap();
        assert!(header.contains("'shape': (2, 3)"), "{header}");
        assert!(header.ends_with('\n'));
        let data = &bytes[10 + len..];
        assert_eq!(data.len(), 48);
        assert_eq!(f64::from_le_bytes(data[40..48].try_into().unwrap()), 6.0);
    }
}
