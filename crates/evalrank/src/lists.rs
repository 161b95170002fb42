//! The pair and background lists, constructed from the raw datasets or as the toolkit ships them.

use std::collections::HashSet;

use sage_core::RunSeed;
use sage_data::{DataRoot, DatasetKind, Line, StsPair, TextPair, WordPair, REGISTRY};
use serde::{Deserialize, Serialize};

use crate::{EvalRankError, Result};

/// Directed positive pairs and the background they are ranked against.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lists {
    /// Where the lists come from (`constructed` or `shipped`).
    pub source: String,
    /// Directed pairs (x, y): both directions of every positive pair.
    #[serde(skip)]
    pub pairs: Vec<(String, String)>,
    /// The background, de-duplicated, in construction order.
    #[serde(skip)]
    pub background: Vec<String>,
    /// Number of directed pairs.
    pub pair_count: usize,
    /// Number of background items.
    pub background_count: usize,
    /// Where the lists are a seeded sample of larger ones ([`Lists::sampled`]): what they were
    /// drawn from; absent for whole lists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample: Option<ListSample>,
}

/// How far [`Lists::sampled`] cut the lists, and with which seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListSample {
    /// The run seed the pairs and the background were drawn with.
    pub seed: u64,
    /// Directed pairs of the whole lists.
    pub pairs_of: usize,
    /// Background items of the whole lists.
    pub background_of: usize,
}

/// How much of the lists a run ranks ([`Lists::sampled`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListCut {
    /// Directed pairs kept (seeded sample); all when `None`.
    pub max_pairs: Option<usize>,
    /// Background items kept in all, the kept pairs' texts first (they always stay, so there
    /// may be more), the rest a seeded sample; all when `None`.
    pub max_background: Option<usize>,
    /// The run seed both samples are drawn with.
    pub seed: RunSeed,
}

impl ListCut {
    /// The whole lists: the paper's setting.
    pub const WHOLE: ListCut = ListCut {
        max_pairs: None,
        max_background: None,
        seed: RunSeed(0),
    };
}

impl Lists {
    /// At most `cut.max_pairs` directed pairs and `cut.max_background` background items, drawn
    /// with `cut.seed`. The kept pairs' texts always stay in the background, since a pair is
    /// ranked among it, so the background may exceed `max_background` by them; the rest of it
    /// is a seeded sample of the other items. Order is kept. With neither cut biting the lists
    /// come back whole, unmarked.
    ///
    /// A smaller background ranks each pair among fewer items, so the scores of a sample are
    /// higher than the whole lists' and comparable only with runs of the same sample: for
    /// quick runs, not for the paper's numbers.
    pub fn sampled(self, cut: ListCut) -> Lists {
        let ListCut {
            max_pairs,
            max_background,
            seed,
        } = cut;
        let pairs_bite = max_pairs.is_some_and(|m| m < self.pairs.len());
        let background_bite = max_background.is_some_and(|m| m < self.background.len());
        if !pairs_bite && !background_bite {
            return self;
        }
        let record = ListSample {
            seed: seed.0,
            pairs_of: self.pairs.len(),
            background_of: self.background.len(),
        };
        let pairs: Vec<(String, String)> =
            sage_data::sample::select(self.pairs.len(), max_pairs, seed, "evalrank/pairs")
                .into_iter()
                .map(|i| self.pairs[i].clone())
                .collect();
        let needed: HashSet<&str> = pairs
            .iter()
            .flat_map(|(a, b)| [a.as_str(), b.as_str()])
            .collect();
        let (must, others): (Vec<usize>, Vec<usize>) =
            (0..self.background.len()).partition(|&i| needed.contains(self.background[i].as_str()));
        let room = max_background.map(|m| m.saturating_sub(must.len()));
        let drawn = sage_data::sample::select(others.len(), room, seed, "evalrank/background");
        let mut keep = vec![false; self.background.len()];
        for i in must.into_iter().chain(drawn.into_iter().map(|d| others[d])) {
            keep[i] = true;
        }
        let background: Vec<String> = self
            .background
            .into_iter()
            .zip(keep)
            .filter_map(|(text, kept)| kept.then_some(text))
            .collect();
        Lists {
            source: self.source,
            pair_count: pairs.len(),
            background_count: background.len(),
            pairs,
            background,
            sample: Some(record),
        }
    }
}

fn finish(
    source: &'static str,
    pairs: Vec<(String, String)>,
    background_in_order: impl IntoIterator<Item = String>,
) -> Lists {
    let mut seen = HashSet::new();
    let background: Vec<String> = background_in_order
        .into_iter()
        .filter(|t| seen.insert(t.clone()))
        .collect();
    Lists {
        source: source.to_owned(),
        pair_count: pairs.len(),
        background_count: background.len(),
        pairs,
        background,
        sample: None,
    }
}

/// What an STS set adds to constructed lists: its top quarter by score as positives, every
/// sentence to the background.
fn sts_lists(rows: &[StsPair], positives: &mut Vec<(String, String)>, sentences: &mut Vec<String>) {
    sentences.extend(
        rows.iter()
            .flat_map(|p| [p.sentence1.clone(), p.sentence2.clone()]),
    );
    positives.extend(
        top_quarter(rows, |p| p.score)
            .into_iter()
            .map(|p| (p.sentence1, p.sentence2)),
    );
}

/// Top quarter of `rows` by score: `⌊n/4⌋` rows after a stable sort by score, descending.
fn top_quarter<T: Clone>(rows: &[T], score: impl Fn(&T) -> f64) -> Vec<T> {
    let mut sorted = rows.to_vec();
    sorted.sort_by(|a, b| score(b).total_cmp(&score(a)));
    sorted.truncate(rows.len() / 4);
    sorted
}

/// Both directions of every pair, identical texts dropped, first occurrence kept.
fn directed(pairs: impl IntoIterator<Item = (String, String)>) -> Vec<(String, String)> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (a, b) in pairs {
        if a == b {
            continue;
        }
        for pair in [(a.clone(), b.clone()), (b, a)] {
            if seen.insert(pair.clone()) {
                out.push(pair);
            }
        }
    }
    out
}

/// The 13 word-similarity sets of the registry, in file-name order.
pub fn word_sets() -> Vec<&'static str> {
    let mut sets: Vec<_> = REGISTRY
        .iter()
        .filter(|e| e.kind == DatasetKind::WordSimilarity)
        .collect();
    sets.sort_by_key(|e| e.local);
    sets.into_iter().map(|e| e.name).collect()
}

/// Word level, constructed: for each word-similarity set the top quarter of its pairs by gold
/// score, lower-cased, identical words dropped, both directions; background = the words of those
/// pairs, then every word of the sets, then the 20k Wikipedia vocabulary, de-duplicated in that
/// order.
pub fn words_constructed(root: &DataRoot) -> Result<Lists> {
    let mut positives = Vec::new();
    let mut set_words = Vec::new();
    for name in word_sets() {
        let rows: Vec<WordPair> = root
            .load::<WordPair>(name, "all")?
            .rows
            .into_iter()
            .map(|p| WordPair {
                word1: p.word1.to_lowercase(),
                word2: p.word2.to_lowercase(),
                score: p.score,
            })
            .collect();
        set_words.extend(rows.iter().flat_map(|p| [p.word1.clone(), p.word2.clone()]));
        positives.extend(
            top_quarter(&rows, |p| p.score)
                .into_iter()
                .map(|p| (p.word1, p.word2)),
        );
    }
    let pairs = directed(positives);
    let pair_words: Vec<String> = pairs
        .iter()
        .flat_map(|(a, b)| [a.clone(), b.clone()])
        .collect();
    let wiki = root
        .load::<Line>("wiki-20k", "all")?
        .rows
        .into_iter()
        .map(|l| l.text.to_lowercase());
    Ok(finish(
        "constructed",
        pairs,
        pair_words.into_iter().chain(set_words).chain(wiki),
    ))
}

/// Word level, the toolkit's shipped lists: pos_pair_5514.txt; background = their words, the
/// basic vocabulary, the wiki vocabulary.
pub fn words_shipped(root: &DataRoot) -> Result<Lists> {
    let pairs: Vec<(String, String)> = root
        .load::<TextPair>("evalrank-word-pairs", "all")?
        .rows
        .into_iter()
        .map(|p| (p.a, p.b))
        .collect();
    let pair_words: Vec<String> = pairs
        .iter()
        .flat_map(|(a, b)| [a.clone(), b.clone()])
        .collect();
    let basic = root
        .load::<Line>("evalrank-word-basic-vocab", "all")?
        .rows
        .into_iter()
        .map(|l| l.text);
    let wiki = root
        .load::<Line>("evalrank-word-wiki-vocab", "all")?
        .rows
        .into_iter()
        .map(|l| l.text);
    Ok(finish(
        "shipped",
        pairs,
        pair_words.into_iter().chain(basic).chain(wiki),
    ))
}

/// Sentence level, the toolkit's shipped lists (the default): pos_pair.txt and
/// background_sent.txt (lower-cased and tokenised as the toolkit ships them).
pub fn sentences_shipped(root: &DataRoot) -> Result<Lists> {
    let pairs: Vec<(String, String)> = root
        .load::<TextPair>("evalrank-sent-pairs", "all")?
        .rows
        .into_iter()
        .map(|p| (p.a, p.b))
        .collect();
    let pair_texts: Vec<String> = pairs
        .iter()
        .flat_map(|(a, b)| [a.clone(), b.clone()])
        .collect();
    let background = root
        .load::<Line>("evalrank-sent-background", "all")?
        .rows
        .into_iter()
        .map(|l| l.text);
    // the shipped pairs are part of the shipped background; chaining keeps that true regardless
    Ok(finish("shipped", pairs, background.chain(pair_texts)))
}

/// Sentence level, constructed: the top quarter by score of STS-B (train, validation and test
/// together) and of STR-2022, both directions; background = every sentence of both. The
/// toolkit's own STS-B selection is not exactly reproducible, so these differ slightly from the
/// shipped lists.
pub fn sentences_constructed(root: &DataRoot) -> Result<Lists> {
    let mut positives = Vec::new();
    let mut sentences = Vec::new();
    for (name, splits) in [
        ("stsb", &["train", "validation", "test"][..]),
        ("str2022", &["all"][..]),
    ] {
        let mut rows: Vec<StsPair> = Vec::new();
        for split in splits {
            rows.extend(root.load::<StsPair>(name, split)?.rows);
        }
        sts_lists(&rows, &mut positives, &mut sentences);
    }
    if positives.is_empty() {
        return Err(EvalRankError::Invalid("no sentence pairs".into()));
    }
    Ok(finish("constructed", directed(positives), sentences))
}

/// Lists from datasets a user names (`datasets`, any mix): a text-pairs set gives its pairs as
/// positives (both directions); an STS set gives its top quarter by score, as the constructed
/// sentence lists do, and every sentence to the background; a vocabulary gives background lines.
/// Every positive text is in the background. Returns the lists and the STS sets, whose classic
/// Spearman the report gives.
pub fn from_datasets(root: &DataRoot, datasets: &[(&str, &str)]) -> Result<(Lists, Vec<String>)> {
    let mut positives = Vec::new();
    let mut background = Vec::new();
    let mut sts = Vec::new();
    for &(name, split) in datasets {
        match root.kind(name)? {
            DatasetKind::TextPairs => {
                for p in root.load::<TextPair>(name, split)?.rows {
                    background.extend([p.a.clone(), p.b.clone()]);
                    positives.push((p.a, p.b));
                }
            }
            DatasetKind::StsPairs => {
                let rows = root.load::<StsPair>(name, split)?.rows;
                sts_lists(&rows, &mut positives, &mut background);
                sts.push(format!("{name}/{split}"));
            }
            DatasetKind::Vocabulary => background.extend(
                root.load::<Line>(name, split)?
                    .rows
                    .into_iter()
                    .map(|l| l.text),
            ),
            other => {
                return Err(EvalRankError::Invalid(format!(
                    "{name}: EvalRank reads text-pairs, sts-pairs and vocabulary datasets, not {}",
                    other.name()
                )))
            }
        }
    }
    if positives.is_empty() {
        return Err(EvalRankError::Invalid(
            "no positive pairs: name a text-pairs or an sts-pairs dataset".into(),
        ));
    }
    Ok((finish("datasets", directed(positives), background), sts))
}

/// Word-similarity sets with their rows, for the classic Spearman score.
pub fn word_similarity_sets(root: &DataRoot) -> Result<Vec<(&'static str, Vec<WordPair>)>> {
    word_sets()
        .into_iter()
        .map(|name| Ok((name, root.load::<WordPair>(name, "all")?.rows)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cut keeps the pairs it draws, their texts and a seeded sample of the rest of the
    /// background, in order; the same seed draws the same lists; a cut that does not bite
    /// leaves the lists whole and unmarked.
    #[test]
    fn a_cut_keeps_its_pairs_texts_in_a_seeded_background() {
        let words: Vec<String> = (0..200).map(|i| format!("w{i}")).collect();
        let pairs = directed((0..40).map(|i| (words[2 * i].clone(), words[2 * i + 1].clone())));
        let lists = finish("constructed", pairs, words.clone());
        let cut = |pairs, background, seed| ListCut {
            max_pairs: pairs,
            max_background: background,
            seed: RunSeed(seed),
        };
        let small = lists.clone().sampled(cut(Some(10), Some(50), 7));
        assert_eq!((small.pair_count, small.pairs.len()), (10, 10));
        assert!(small.pairs.iter().all(|p| lists.pairs.contains(p)));
        for (a, b) in &small.pairs {
            assert!(small.background.contains(a) && small.background.contains(b));
        }
        // the pairs' texts come on top of the 50 only where the 50 could not hold them
        assert_eq!(small.background_count, 50);
        let order = |t: &String| words.iter().position(|w| w == t).unwrap();
        assert!(small
            .background
            .windows(2)
            .all(|w| order(&w[0]) < order(&w[1])));
        assert_eq!(
            small.sample,
            Some(ListSample {
                seed: 7,
                pairs_of: 80,
                background_of: 200
            })
        );
        assert_eq!(lists.clone().sampled(cut(Some(10), Some(50), 7)), small);
        assert_ne!(lists.clone().sampled(cut(Some(10), Some(50), 8)), small);
        // more pairs' texts than the background cut: every one stays
        let crowded = lists.clone().sampled(cut(Some(80), Some(5), 7));
        assert_eq!((crowded.pair_count, crowded.background_count), (80, 80));
        let whole = lists.clone().sampled(cut(Some(80), Some(200), 7));
        assert_eq!(whole, lists);
        assert_eq!(lists.clone().sampled(ListCut::WHOLE), lists);
    }

    #[test]
    fn top_quarter_is_a_stable_floor() {
        let rows = [
            (1, 5.0),
            (2, 9.0),
            (3, 9.0),
            (4, 1.0),
            (5, 7.0),
            (6, 2.0),
            (7, 3.0),
        ];
        assert_eq!(top_quarter(&rows, |r| r.1), vec![(2, 9.0)]);
        assert_eq!(top_quarter(&rows[..3], |r| r.1), Vec::<(i32, f64)>::new());
        let eight = [
            (1, 1.0),
            (2, 2.0),
            (3, 2.0),
            (4, 0.0),
            (5, 0.5),
            (6, 0.1),
            (7, 0.2),
            (8, 0.3),
        ];
        assert_eq!(
            top_quarter(&eight, |r| r.1),
            vec![(2, 2.0), (3, 2.0)],
            "ties keep file order"
        );
    }

    #[test]
    fn directed_pairs_drop_identities_and_duplicates() {
        let got = directed([
            ("a".into(), "b".into()),
            ("b".into(), "a".into()),
            ("c".into(), "c".into()),
        ]);
        assert_eq!(
            got,
            vec![
                ("a".to_owned(), "b".to_owned()),
                ("b".to_owned(), "a".to_owned())
            ]
        );
    }

    #[test]
    fn constructed_word_lists_equal_the_toolkits() {
        let Ok(root) = DataRoot::from_env() else {
            sage_test_env::skip(
                module_path!(),
                "SAGE_DATA_DIR unset: EvalRank list construction not checked",
            );
            return;
        };
        let built = words_constructed(&root).unwrap();
        let shipped = words_shipped(&root).unwrap();
        assert_eq!((built.pair_count, built.background_count), (5_514, 22_207));
        let mut a = built.pairs.clone();
        a.sort();
        assert_eq!(a, shipped.pairs, "the shipped file is sorted");
        let (ba, bb): (HashSet<_>, HashSet<_>) = (
            built.background.iter().collect(),
            shipped.background.iter().collect(),
        );
        assert_eq!(ba, bb);
        let sentences = sentences_shipped(&root).unwrap();
        assert_eq!(sentences.pair_count, 6_989);
        let constructed = sentences_constructed(&root).unwrap();
        eprintln!(
            "sentence lists: shipped {} pairs / {} background, constructed {} / {}",
            sentences.pair_count,
            sentences.background_count,
            constructed.pair_count,
            constructed.background_count
        );
    }
}
