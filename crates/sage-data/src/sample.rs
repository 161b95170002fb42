//! Seeded, documented row sampling, and the record of which rows a result used.
//!
//! Rule: with `max_rows` at or above the row count (or absent) every row is used, in file order.
//! Otherwise `max_rows` distinct row indices are drawn with `rand::seq::index::sample` from the
//! generator `RunSeed(seed).rng("sample/<split checksum>")` (ChaCha20, see sage-core) and
//! used in file order. The same seed gives the same rows on every machine; Cargo.lock pins the
//! `rand` version this depends on.
//!
//! Every seeded stream over a split — this sample and the tasks' perturbations — is keyed by the
//! split's content (the checksum of all its rows, [`RowSelection::split_checksum`]), never by its
//! name: the same rows give the same results whether they are a registry dataset, a user's file
//! under any name, path, format or column names, or a renamed copy.
//!
//! Grouped rule ([`sample_grouped`]), for tasks whose unit is a group of rows (every rated
//! summary of one document): the groups are shuffled with the generator
//! `RunSeed(seed).rng("sample-groups/<split checksum>")` and taken in that order while their
//! rows fit in `max_rows` (the first group always, so a sample is never empty); the rows of the
//! groups taken are used in file order. A row-level sample would leave few rows of any one
//! document, and so few within-document pairs.
//!
//! Every result records a [`RowSelection`]: the counts and a checksum — the first 16 hex digits
//! of the SHA-256 of the used rows' texts (fields joined by U+001F, rows by U+001E) — so two
//! results can be checked to have used the same rows.

use rand::seq::index;
use sage_core::RunSeed;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::rows::{Loaded, Row};

/// Which rows of a dataset split a result used.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct RowSelection {
    /// Registry name.
    pub dataset: String,
    /// Split.
    pub split: String,
    /// Rows available after the empty-text policy.
    pub total_rows: usize,
    /// Rows used.
    pub used_rows: usize,
    /// The cap asked for.
    pub max_rows: Option<usize>,
    /// The seed the rows were drawn with.
    pub seed: u64,
    /// Rows with an empty text in the file (kept or dropped per the policy).
    pub empty_text_rows: usize,
    /// Checksum of the used rows (see the module docs).
    pub checksum: String,
    /// Checksum of every row of the split (after the empty-text policy): the key of the run's
    /// random streams over it (see the module docs). Absent in results written before it was
    /// recorded.
    #[serde(default)]
    pub split_checksum: String,
}

/// Indices of the rows to use (ascending).
pub fn select(total: usize, max_rows: Option<usize>, seed: RunSeed, label: &str) -> Vec<usize> {
    match max_rows {
        Some(max) if max < total => {
            let mut picked = index::sample(&mut seed.rng(label), total, max).into_vec();
            picked.sort_unstable();
            picked
        }
        _ => (0..total).collect(),
    }
}

/// Checksum of rows (see the module docs).
pub fn checksum<'a, T: Row + 'a>(rows: impl IntoIterator<Item = &'a T>) -> String {
    let mut h = Sha256::new();
    for row in rows {
        for (i, text) in row.texts().iter().enumerate() {
            if i > 0 {
                h.update("\u{1f}".as_bytes());
            }
            h.update(text.as_bytes());
        }
        h.update("\u{1e}".as_bytes());
    }
    h.finalize()
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The rows to use from `loaded` and the record of the choice.
pub fn sample<T: Row + Clone>(
    loaded: &Loaded<T>,
    max_rows: Option<usize>,
    seed: RunSeed,
) -> (Vec<T>, RowSelection) {
    let (indices, selection) = sample_indices(loaded, max_rows, seed);
    let rows = indices
        .into_iter()
        .map(|i| loaded.rows[i].clone())
        .collect();
    (rows, selection)
}

/// Like [`sample`], but whole groups of rows (rows with equal `group_of`), see the module docs.
pub fn sample_grouped<T: Row + Clone, K: Ord>(
    loaded: &Loaded<T>,
    max_rows: Option<usize>,
    seed: RunSeed,
    group_of: impl Fn(&T) -> K,
) -> (Vec<T>, RowSelection) {
    let split_checksum = checksum(&loaded.rows);
    let indices = match max_rows {
        Some(max) if max < loaded.rows.len() => {
            let mut groups: std::collections::BTreeMap<K, Vec<usize>> = Default::default();
            for (i, row) in loaded.rows.iter().enumerate() {
                groups.entry(group_of(row)).or_default().push(i);
            }
            let groups: Vec<Vec<usize>> = groups.into_values().collect();
            let label = format!("sample-groups/{split_checksum}");
            let order = index::sample(&mut seed.rng(&label), groups.len(), groups.len());
            let mut picked = Vec::new();
            for g in order.into_iter() {
                if !picked.is_empty() && picked.len() + groups[g].len() > max {
                    continue;
                }
                picked.extend_from_slice(&groups[g]);
            }
            picked.sort_unstable();
            picked
        }
        _ => (0..loaded.rows.len()).collect(),
    };
    let selection = selection_of(loaded, &indices, max_rows, seed, split_checksum);
    let rows = indices.iter().map(|&i| loaded.rows[i].clone()).collect();
    (rows, selection)
}

fn selection_of<T: Row>(
    loaded: &Loaded<T>,
    indices: &[usize],
    max_rows: Option<usize>,
    seed: RunSeed,
    split_checksum: String,
) -> RowSelection {
    RowSelection {
        dataset: loaded.dataset.clone(),
        split: loaded.split.clone(),
        total_rows: loaded.rows.len(),
        used_rows: indices.len(),
        max_rows,
        seed: seed.0,
        empty_text_rows: loaded.empty_text_lines.len(),
        checksum: checksum(indices.iter().map(|&i| &loaded.rows[i])),
        split_checksum,
    }
}

/// Like [`sample`], but the file positions (indices into `loaded.rows`, ascending) of the rows
/// to use: tasks that derive per-row random streams key them by file position, so a row is
/// perturbed the same way whatever the sample size.
pub fn sample_indices<T: Row>(
    loaded: &Loaded<T>,
    max_rows: Option<usize>,
    seed: RunSeed,
) -> (Vec<usize>, RowSelection) {
    let split_checksum = checksum(&loaded.rows);
    let label = format!("sample/{split_checksum}");
    let indices = select(loaded.rows.len(), max_rows, seed, &label);
    let selection = selection_of(loaded, &indices, max_rows, seed, split_checksum);
    (indices, selection)
}
