//! The texts a throughput run times: a pool from the datasets, cut into three length buckets.
//!
//! Lengths are told by one model-independent yardstick, cl100k tokens ([`sage_tokens::count`]),
//! so every model and metric of a comparison times the same texts: a model's own tokenizer
//! would put a text in a different bucket for each model. What each model actually reads of
//! them is counted by the model ([`sage_core::Embedder::count_tokens`]) for its tokens per
//! second.

use rand::seq::SliceRandom;
use sage_core::RunSeed;
use sage_data::{DataRoot, DatasetKind, Document, LabeledPair, LabeledText, Row, RowSelection};
use sage_data::{KindOf, StsPair, TextPair};
use serde::{Deserialize, Serialize};

use crate::{Result, ThroughputError};

/// A short text: a query, a sentence (at most this many yardstick tokens).
pub const SHORT_MAX_TOKENS: usize = 32;

/// A medium text is at least this many yardstick tokens (a paragraph, about 128).
pub const MEDIUM_MIN_TOKENS: usize = 112;

/// A medium text is built of parts of at most this many tokens, so it stays near 128.
const MEDIUM_PART_MAX_TOKENS: usize = 64;

/// The window of a metric, which has none: the length of a long passage.
pub const METRIC_WINDOW_TOKENS: usize = 512;

/// The kinds of dataset whose texts a run can time.
pub const KINDS: [DatasetKind; 7] = [
    DatasetKind::StsPairs,
    DatasetKind::ParaphrasePairs,
    DatasetKind::PairClassification,
    DatasetKind::Documents,
    DatasetKind::Classification,
    DatasetKind::Clustering,
    DatasetKind::TextPairs,
];

/// An input length.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Length {
    /// At most [`SHORT_MAX_TOKENS`] yardstick tokens.
    Short,
    /// About 128 yardstick tokens (at least [`MEDIUM_MIN_TOKENS`]).
    Medium,
    /// At least the model's window: every text fills what the model reads.
    Window,
}

impl Length {
    /// As reports and notes say it.
    pub fn name(self) -> &'static str {
        match self {
            Length::Short => "short",
            Length::Medium => "medium",
            Length::Window => "window-length",
        }
    }
}

/// The texts of one length.
#[derive(Clone, Debug, PartialEq)]
pub struct Bucket {
    /// Which length.
    pub length: Length,
    /// The texts, distinct.
    pub texts: Vec<String>,
    /// Yardstick tokens of each text.
    pub yardstick_tokens: Vec<usize>,
}

/// Every distinct text of `datasets` (rows sampled with `seed`, at most `max_rows` per dataset),
/// and which rows they are.
pub fn load_pool(
    root: &DataRoot,
    datasets: &[(&str, &str)],
    max_rows: usize,
    seed: RunSeed,
) -> Result<(Vec<String>, Vec<RowSelection>)> {
    fn texts_of<T: Row + KindOf + Clone + 'static>(
        root: &DataRoot,
        name: &str,
        split: &str,
        max_rows: usize,
        seed: RunSeed,
    ) -> Result<(Vec<String>, RowSelection)> {
        let (rows, selection) =
            sage_data::sample(&root.load::<T>(name, split)?, Some(max_rows), seed);
        let texts = rows
            .iter()
            .flat_map(|r| r.texts().into_iter().map(str::to_owned))
            .collect();
        Ok((texts, selection))
    }
    let mut pool = Vec::new();
    let mut selections = Vec::new();
    for &(name, split) in datasets {
        let (texts, selection) = match root.kind(name)? {
            DatasetKind::StsPairs => texts_of::<StsPair>(root, name, split, max_rows, seed)?,
            DatasetKind::ParaphrasePairs | DatasetKind::PairClassification => {
                texts_of::<LabeledPair>(root, name, split, max_rows, seed)?
            }
            DatasetKind::Documents => texts_of::<Document>(root, name, split, max_rows, seed)?,
            DatasetKind::Classification | DatasetKind::Clustering => {
                texts_of::<LabeledText>(root, name, split, max_rows, seed)?
            }
            DatasetKind::TextPairs => texts_of::<TextPair>(root, name, split, max_rows, seed)?,
            kind => {
                return Err(ThroughputError::Kind {
                    dataset: format!("{name}/{split}"),
                    kind: kind.name(),
                })
            }
        };
        pool.extend(texts);
        selections.push(selection);
    }
    let mut seen = std::collections::HashSet::new();
    pool.retain(|t| !t.trim().is_empty() && seen.insert(t.clone()));
    Ok((pool, selections))
}

/// `text` cut to at most `chars` characters (on a character boundary).
fn cut(text: &str, chars: usize) -> &str {
    match text.char_indices().nth(chars) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

/// Up to `per_length` texts of each length from `pool`, drawn in a seeded order: short texts as
/// they are; medium and window-length ones as they are where the pool has them, else joined
/// from consecutive shorter ones. `window` is the model's (in its tokens; the yardstick's are
/// close enough to fill it, and a text over it is cut by the model as in any run). A length the
/// pool cannot give is left out.
pub fn buckets(pool: &[String], window: usize, per_length: usize, seed: RunSeed) -> Vec<Bucket> {
    let mut order: Vec<usize> = (0..pool.len()).collect();
    order.shuffle(&mut seed.rng("throughput/pool"));
    // a 100,000-character document costs its tokenizer time however little of it the model
    // reads; texts are cut well beyond any window in cl100k's ~4 characters a token
    let longest = window.max(MEDIUM_MIN_TOKENS) * 8;
    let texts: Vec<&str> = order.iter().map(|&i| cut(&pool[i], longest)).collect();
    let tokens: Vec<usize> = texts.iter().map(|t| sage_tokens::count(t)).collect();

    let short: Vec<usize> = (0..texts.len())
        .filter(|&i| (1..=SHORT_MAX_TOKENS).contains(&tokens[i]))
        .take(per_length)
        .collect();
    let bucket = |length, chosen: Vec<String>| {
        let yardstick_tokens = chosen.iter().map(|t| sage_tokens::count(t)).collect();
        Bucket {
            length,
            texts: chosen,
            yardstick_tokens,
        }
    };
    let mut out = Vec::new();
    if !short.is_empty() {
        out.push(bucket(
            Length::Short,
            short.iter().map(|&i| texts[i].to_owned()).collect(),
        ));
    }
    let medium = gather(
        &texts,
        &tokens,
        MEDIUM_MIN_TOKENS,
        MEDIUM_PART_MAX_TOKENS,
        per_length,
    );
    if !medium.is_empty() {
        out.push(bucket(Length::Medium, medium));
    }
    let long = gather(&texts, &tokens, window.max(1), usize::MAX, per_length);
    if !long.is_empty() {
        out.push(bucket(Length::Window, long));
    }
    out
}

/// Up to `count` distinct texts of at least `min_tokens`: the pool's own where they are no
/// longer than `part_max` tokens would make one part (`min_tokens ..= min_tokens + part_max`),
/// then texts joined from consecutive parts of at most `part_max` tokens.
fn gather(
    texts: &[&str],
    tokens: &[usize],
    min_tokens: usize,
    part_max: usize,
    count: usize,
) -> Vec<String> {
    let ceiling = min_tokens.saturating_add(part_max);
    let mut out: Vec<String> = (0..texts.len())
        .filter(|&i| (min_tokens..=ceiling).contains(&tokens[i]))
        .take(count)
        .map(|i| texts[i].to_owned())
        .collect();
    let mut joined = String::new();
    let mut joined_tokens = 0;
    for i in (0..texts.len()).filter(|&i| tokens[i] < min_tokens && tokens[i] <= part_max) {
        if out.len() >= count {
            break;
        }
        if !joined.is_empty() {
            joined.push(' ');
        }
        joined.push_str(texts[i]);
        joined_tokens += tokens[i];
        if joined_tokens >= min_tokens {
            out.push(std::mem::take(&mut joined));
            joined_tokens = 0;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool() -> Vec<String> {
        let mut pool: Vec<String> = (0..300)
            .map(|i| format!("Sentence number {i} says a short thing about item {i}."))
            .collect();
        pool.extend(
            (0..5).map(|i| format!("essay {i} ") + &"a long passage of prose ".repeat(400)),
        );
        pool
    }

    #[test]
    fn each_length_holds_texts_of_that_length() {
        let buckets = buckets(&pool(), 256, 20, RunSeed(7));
        let lengths: Vec<Length> = buckets.iter().map(|b| b.length).collect();
        assert_eq!(lengths, [Length::Short, Length::Medium, Length::Window]);
        for b in &buckets {
            assert_eq!(b.texts.len(), b.yardstick_tokens.len());
            let distinct: std::collections::HashSet<_> = b.texts.iter().collect();
            assert_eq!(distinct.len(), b.texts.len(), "{:?}", b.length);
            for &n in &b.yardstick_tokens {
                match b.length {
                    Length::Short => assert!((1..=SHORT_MAX_TOKENS).contains(&n)),
                    Length::Medium => assert!(
                        (MEDIUM_MIN_TOKENS..=MEDIUM_MIN_TOKENS + 64).contains(&n),
                        "{n}"
                    ),
                    Length::Window => assert!(n >= 256, "{n}"),
                }
            }
        }
        assert_eq!(buckets[0].texts.len(), 20);
        assert_eq!(buckets[1].texts.len(), 20);
        // 5 essays, then joined sentences
        assert_eq!(buckets[2].texts.len(), 20);
    }

    #[test]
    fn the_same_seed_gives_the_same_texts_and_another_seed_others() {
        let a = buckets(&pool(), 128, 10, RunSeed(1));
        assert_eq!(a, buckets(&pool(), 128, 10, RunSeed(1)));
        assert_ne!(a, buckets(&pool(), 128, 10, RunSeed(2)));
    }

    #[test]
    fn a_length_the_pool_cannot_give_is_left_out() {
        let tiny = vec!["one".to_owned(), "two".to_owned()];
        let b = buckets(&tiny, 512, 10, RunSeed(1));
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].length, Length::Short);
    }

    #[test]
    fn cutting_keeps_whole_characters() {
        assert_eq!(cut("héllo", 2), "hé");
        assert_eq!(cut("ab", 5), "ab");
    }
}
