//! Stratified, seeded k-fold splits.
//!
//! SentEval splits with scikit-learn's `StratifiedKFold(shuffle=True, random_state=…)`, whose
//! draw follows NumPy's generator: no other implementation can give the same folds. What is
//! kept is what the protocol rests on: each class's items are shuffled with the run's seed and
//! dealt round the folds, so every fold holds each class in the proportion of the whole (to
//! within one item) and fold sizes differ by at most one per class. The Python reference is
//! handed these folds rather than drawing its own, so both sides split alike.

use std::collections::BTreeMap;

use rand::seq::SliceRandom;
use sage_core::RunSeed;

/// One split of a set of items: the positions trained on and those held out, both ascending.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fold {
    /// Positions trained on.
    pub train: Vec<usize>,
    /// Positions held out.
    pub test: Vec<usize>,
}

/// `k` stratified folds of items whose classes are `labels` (indices into `names`, the classes'
/// names for messages), drawn with `seed` under `label` (a different `label` gives independent
/// folds from the same seed).
///
/// Errors name the class that has fewer items than folds: such a class would be missing from
/// some fold's held-out part, so that fold's accuracy would not test it. (scikit-learn's
/// splitter warns and goes on; a score resting on such a fold is not one to report.)
pub fn stratified(
    labels: &[usize],
    names: &[String],
    k: usize,
    seed: RunSeed,
    label: &str,
) -> Result<Vec<Fold>, String> {
    if k < 2 {
        return Err(format!("k-fold needs k ≥ 2, got {k}"));
    }
    if labels.len() < k {
        return Err(format!(
            "{} items cannot be split into {k} folds",
            labels.len()
        ));
    }
    let mut by_class: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (i, &c) in labels.iter().enumerate() {
        by_class.entry(c).or_default().push(i);
    }
    if let Some((&class, members)) = by_class.iter().find(|(_, m)| m.len() < k) {
        let name = names
            .get(class)
            .map_or_else(|| class.to_string(), |n| format!("{n:?}"));
        return Err(format!(
            "class {name} has {} item(s), fewer than the {k} folds: some fold would hold none \
             of it",
            members.len()
        ));
    }
    let mut rng = seed.rng(label);
    let mut fold_of = vec![0usize; labels.len()];
    // the deal continues where the previous class stopped, so the folds' sizes stay within one
    let mut next = 0usize;
    for members in by_class.values_mut() {
        members.shuffle(&mut rng);
        for &i in members.iter() {
            fold_of[i] = next % k;
            next += 1;
        }
    }
    Ok((0..k)
        .map(|f| {
            let (test, train): (Vec<usize>, Vec<usize>) =
                (0..labels.len()).partition(|&i| fold_of[i] == f);
            Fold { train, test }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every item is held out exactly once; each fold keeps the class proportions.
    #[test]
    fn folds_partition_and_stratify() {
        let labels: Vec<usize> = (0..103).map(|i| usize::from(i % 3 == 0)).collect();
        let folds = stratified(&labels, &[], 10, RunSeed(7), "t").unwrap();
        let mut held = vec![0; labels.len()];
        for f in &folds {
            assert_eq!(f.train.len() + f.test.len(), labels.len());
            for &i in &f.test {
                held[i] += 1;
                assert!(f.train.binary_search(&i).is_err());
            }
            let ones = f.test.iter().filter(|&&i| labels[i] == 1).count();
            // 35 of 103 are class 1: 3 or 4 per fold of 10 or 11
            assert!((3..=4).contains(&ones), "{ones}");
            assert!((10..=11).contains(&f.test.len()));
        }
        assert!(held.iter().all(|&h| h == 1));
    }

    /// Same seed, same folds; another seed or label, other folds.
    #[test]
    fn folds_follow_the_seed() {
        let labels: Vec<usize> = (0..50).map(|i| i % 2).collect();
        let a = stratified(&labels, &[], 5, RunSeed(1), "x").unwrap();
        assert_eq!(a, stratified(&labels, &[], 5, RunSeed(1), "x").unwrap());
        assert_ne!(a, stratified(&labels, &[], 5, RunSeed(2), "x").unwrap());
        assert_ne!(a, stratified(&labels, &[], 5, RunSeed(1), "y").unwrap());
    }

    /// A class rarer than the folds is refused, naming it.
    #[test]
    fn a_rare_class_is_refused() {
        let labels = [0, 0, 0, 0, 1, 1, 1, 2];
        let names: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        let e = stratified(&labels, &names, 3, RunSeed(1), "x").unwrap_err();
        assert!(e.contains("class \"c\" has 1 item"), "{e}");
        assert!(stratified(&labels, &names, 1, RunSeed(1), "x").is_err());
    }
}
