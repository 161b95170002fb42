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
use sha2::{Digest, Sha256};

use crate::rows::{Loaded, Row};

/// Which rows of a dataset split a result used: defined in sage-core, where result files and
/// every suite's report name it.
pub use sage_core::RowSelection;

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

/// The checksum of rows fed one at a time (see the module docs): what [`checksum`] computes,
/// without holding the rows.
#[derive(Default)]
pub(crate) struct Checksum(Sha256);

impl Checksum {
    pub(crate) fn add<T: Row>(&mut self, row: &T) {
        for (i, text) in row.texts().iter().enumerate() {
            if i > 0 {
                self.0.update("\u{1f}".as_bytes());
            }
            self.0.update(text.as_bytes());
        }
        self.0.update("\u{1e}".as_bytes());
    }

    pub(crate) fn finish(self) -> String {
        short_hex(&self.0.finalize())
    }
}

/// How a digest is written in results: its first 8 bytes as 16 hex digits.
pub(crate) fn short_hex(digest: &[u8]) -> String {
    hex(&digest[..digest.len().min(8)])
}

/// Lower-case hex of `bytes` (a sha256 as the pins and MANIFEST.tsv write it).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Checksum of rows (see the module docs).
pub fn checksum<'a, T: Row + 'a>(rows: impl IntoIterator<Item = &'a T>) -> String {
    let mut sum = Checksum::default();
    for row in rows {
        sum.add(row);
    }
    sum.finish()
}

/// Rows drawn from a split: the rows, their positions among the split's rows (0-based, in file
/// order, after the empty-text policy; tasks key per-row random streams by them) and the record.
#[derive(Clone, Debug)]
pub struct Sampled<T> {
    /// The rows used, in file order.
    pub rows: Vec<T>,
    /// `rows[i]` is row `positions[i]` of the split.
    pub positions: Vec<usize>,
    /// Which rows these are.
    pub selection: RowSelection,
}

impl<T> Sampled<T> {
    /// The rows and the record.
    pub fn into_parts(self) -> (Vec<T>, RowSelection) {
        (self.rows, self.selection)
    }
}

/// Calls its argument with every row of a split in file order (after the empty-text policy) and
/// returns how many rows had an empty text. Called at most twice by [`draw`]: the rows need not
/// be in memory.
pub(crate) type Visit<'a, T> =
    dyn Fn(&mut dyn FnMut(T) -> crate::Result<()>) -> crate::Result<usize> + 'a;

/// Where a split's rows come from, for the messages of [`draw`].
pub(crate) struct SplitName<'a> {
    pub dataset: &'a str,
    pub split: &'a str,
    pub path: &'a std::path::Path,
    pub files: &'a [sage_core::FileCheck],
}

/// The one sampling of the crate (see the module docs), over rows streamed by `visit`: a first
/// pass counts the rows and checksums them (keeping at most `max_rows` of them, and the group of
/// each when grouped), the draw picks positions, and only when the first pass could not keep
/// them does a second pass keep the rows picked. Memory follows the sample, not the split.
pub(crate) fn draw<T: Row>(
    name: SplitName<'_>,
    visit: &Visit<'_, T>,
    max_rows: Option<usize>,
    seed: RunSeed,
    group_of: Option<&dyn Fn(&T) -> String>,
) -> crate::Result<Sampled<T>> {
    let cap = max_rows.unwrap_or(usize::MAX);
    let mut sum = Checksum::default();
    let mut total = 0usize;
    let mut first = Vec::new();
    let mut groups = Vec::new();
    let empty_text_rows = visit(&mut |row| {
        sum.add(&row);
        if let Some(group_of) = group_of {
            groups.push(group_of(&row));
        }
        if total < cap {
            first.push(row);
        }
        total += 1;
        Ok(())
    })?;
    let split_checksum = sum.finish();
    let positions = match group_of {
        None => select(total, max_rows, seed, &format!("sample/{split_checksum}")),
        Some(_) => select_groups(&groups, max_rows, seed, &split_checksum),
    };
    drop(groups);
    let rows = if first.len() == total && positions.len() == total {
        // the whole split, all kept by the first pass
        first
    } else {
        drop(first);
        keep_positions(&name, visit, &positions, total)?
    };
    let selection = RowSelection {
        dataset: name.dataset.to_owned(),
        split: name.split.to_owned(),
        total_rows: total,
        used_rows: rows.len(),
        max_rows,
        seed: seed.0,
        empty_text_rows,
        checksum: checksum(&rows),
        split_checksum,
        files: name.files.to_vec(),
    };
    Ok(Sampled {
        rows,
        positions,
        selection,
    })
}

/// The rows at `positions` (ascending), in a second pass over a split of `total` rows.
pub(crate) fn keep_positions<T>(
    name: &SplitName<'_>,
    visit: &Visit<'_, T>,
    positions: &[usize],
    total: usize,
) -> crate::Result<Vec<T>> {
    let mut rows = Vec::with_capacity(positions.len());
    let mut wanted = positions.iter().copied().peekable();
    let mut at = 0usize;
    visit(&mut |row| {
        if wanted.peek() == Some(&at) {
            rows.push(row);
            wanted.next();
        }
        at += 1;
        Ok(())
    })?;
    if at != total || wanted.peek().is_some() {
        return Err(crate::DataError::Io {
            path: name.path.to_owned(),
            message: format!("changed while being read: {total} rows, then {at}"),
        });
    }
    Ok(rows)
}

/// Rows a task picks itself from every row's key: a first pass collects `key_of` of each row
/// and the split checksum, `choose` returns the positions wanted (ascending, each below the row
/// count), and a second pass keeps those rows. Memory follows the keys and the rows picked.
pub(crate) fn pick<T: Row>(
    name: SplitName<'_>,
    visit: &Visit<'_, T>,
    key_of: &dyn Fn(&T) -> String,
    choose: &mut dyn FnMut(&[String], &str) -> Vec<usize>,
) -> crate::Result<(Vec<String>, Sampled<T>)> {
    let mut sum = Checksum::default();
    let mut keys = Vec::new();
    let empty_text_rows = visit(&mut |row| {
        sum.add(&row);
        keys.push(key_of(&row));
        Ok(())
    })?;
    let split_checksum = sum.finish();
    let positions = choose(&keys, &split_checksum);
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]) && positions.last() < Some(&keys.len()),
        "choose returns ascending positions of rows"
    );
    let rows = keep_positions(&name, visit, &positions, keys.len())?;
    let selection = RowSelection {
        dataset: name.dataset.to_owned(),
        split: name.split.to_owned(),
        total_rows: keys.len(),
        used_rows: rows.len(),
        max_rows: None,
        seed: 0,
        empty_text_rows,
        checksum: checksum(&rows),
        split_checksum,
        files: name.files.to_vec(),
    };
    Ok((
        keys,
        Sampled {
            rows,
            positions,
            selection,
        },
    ))
}

/// The grouped rule (see the module docs): positions of whole groups, ascending.
fn select_groups(
    groups: &[String],
    max_rows: Option<usize>,
    seed: RunSeed,
    split_checksum: &str,
) -> Vec<usize> {
    match max_rows {
        Some(max) if max < groups.len() => {
            let mut members: std::collections::BTreeMap<&str, Vec<usize>> = Default::default();
            for (i, group) in groups.iter().enumerate() {
                members.entry(group).or_default().push(i);
            }
            let members: Vec<Vec<usize>> = members.into_values().collect();
            let label = format!("sample-groups/{split_checksum}");
            let order = index::sample(&mut seed.rng(&label), members.len(), members.len());
            let mut picked = Vec::new();
            for g in order.into_iter() {
                if !picked.is_empty() && picked.len() + members[g].len() > max {
                    continue;
                }
                picked.extend_from_slice(&members[g]);
            }
            picked.sort_unstable();
            picked
        }
        _ => (0..groups.len()).collect(),
    }
}

/// [`draw`] over rows already in memory.
fn draw_loaded<T: Row + Clone>(
    loaded: &Loaded<T>,
    max_rows: Option<usize>,
    seed: RunSeed,
    group_of: Option<&dyn Fn(&T) -> String>,
) -> Sampled<T> {
    let visit = |each: &mut dyn FnMut(T) -> crate::Result<()>| {
        for row in &loaded.rows {
            each(row.clone())?;
        }
        Ok(loaded.empty_text_lines.len())
    };
    let name = SplitName {
        dataset: &loaded.dataset,
        split: &loaded.split,
        path: &loaded.path,
        files: &loaded.files,
    };
    draw(name, &visit, max_rows, seed, group_of)
        .expect("rows in memory are read without error and do not change")
}

/// The rows to use from `loaded` and the record of the choice.
pub fn sample<T: Row + Clone>(
    loaded: &Loaded<T>,
    max_rows: Option<usize>,
    seed: RunSeed,
) -> (Vec<T>, RowSelection) {
    let sampled = draw_loaded(loaded, max_rows, seed, None);
    (sampled.rows, sampled.selection)
}

/// Like [`sample`], but whole groups of rows (rows with equal `group_of`), see the module docs.
pub fn sample_grouped<T: Row + Clone>(
    loaded: &Loaded<T>,
    max_rows: Option<usize>,
    seed: RunSeed,
    group_of: impl Fn(&T) -> String,
) -> (Vec<T>, RowSelection) {
    let sampled = draw_loaded(loaded, max_rows, seed, Some(&group_of));
    (sampled.rows, sampled.selection)
}

/// Like [`sample`], but the file positions (indices into `loaded.rows`, ascending) of the rows
/// to use: tasks that derive per-row random streams key them by file position, so a row is
/// perturbed the same way whatever the sample size.
pub fn sample_indices<T: Row + Clone>(
    loaded: &Loaded<T>,
    max_rows: Option<usize>,
    seed: RunSeed,
) -> (Vec<usize>, RowSelection) {
    let sampled = draw_loaded(loaded, max_rows, seed, None);
    (sampled.positions, sampled.selection)
}
