//! A whole EvalRank run: lists, ranking scores, and the classic similarity-task score.

use std::collections::{BTreeMap, HashMap};

use sage_core::{
    cosine, Embedder, EmbedderIdentity, EmbeddingSimilarity, Similarity, Timings, VectorSimilarity,
};
use sage_data::{DataRoot, StsPair};
use sage_measures as measures;
use serde::{Deserialize, Serialize};

use crate::lists::{self, ListCut, Lists};
use crate::{evaluate, EvalRankScores, PostProcess, Result};

/// Word or sentence level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Word pairs from the word-similarity sets.
    Word,
    /// Sentence pairs from STS-B and STR-2022.
    Sentence,
}

impl Level {
    /// The level as options, flags and result files name it (`word`, `sentence`).
    pub fn name(self) -> &'static str {
        match self {
            Level::Word => "word",
            Level::Sentence => "sentence",
        }
    }
}

/// Which lists to rank.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ListSource {
    /// The toolkit's shipped lists.
    #[default]
    Shipped,
    /// Built from the raw datasets.
    Constructed,
}

/// The classic similarity-task score the paper compares EvalRank with: Spearman ×100 between
/// cosine similarity and the gold score.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClassicScores {
    /// Per dataset.
    pub spearman: BTreeMap<String, f64>,
    /// Mean over the datasets.
    pub mean: f64,
}

/// Everything one run reports.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EvalRankReport {
    /// Word or sentence.
    pub level: Level,
    /// The model.
    pub model: EmbedderIdentity,
    /// The lists ranked.
    pub lists: Lists,
    /// EvalRank's scores.
    pub scores: EvalRankScores,
    /// The classic similarity-task score; absent for lists from datasets without an STS set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classic: Option<ClassicScores>,
    /// Wall-clock time per phase (the only field that differs between two identical runs).
    pub timings: Timings,
}

impl sage_core::SuiteReport for EvalRankReport {
    /// None: MRR and Hits@k are reported side by side, none ranked as the one score.
    fn score(&self) -> Option<f64> {
        None
    }
    /// None recorded: the lists are whole files, named in `lists`.
    fn rows_used(&self) -> Vec<sage_core::RowsUsed> {
        Vec::new()
    }
}

/// The lists of `level` from `source`.
pub fn load_lists(root: &DataRoot, level: Level, source: ListSource) -> Result<Lists> {
    match (level, source) {
        (Level::Word, ListSource::Constructed) => lists::words_constructed(root),
        (Level::Word, ListSource::Shipped) => lists::words_shipped(root),
        (Level::Sentence, ListSource::Constructed) => lists::sentences_constructed(root),
        (Level::Sentence, ListSource::Shipped) => lists::sentences_shipped(root),
    }
}

/// Two texts and their gold similarity.
type GoldPair = (String, String, f64);

/// Spearman ×100 of cosine vs gold: every word-similarity set (word level) or STS-B test
/// (sentence level).
pub fn classic_scores(
    root: &DataRoot,
    embedder: &dyn Embedder,
    level: Level,
    post: PostProcess,
) -> Result<ClassicScores> {
    let sets: Vec<(String, Vec<GoldPair>)> = match level {
        Level::Word => lists::word_similarity_sets(root)?
            .into_iter()
            .map(|(name, rows)| {
                (
                    name.to_owned(),
                    rows.into_iter()
                        .map(|p| (p.word1.to_lowercase(), p.word2.to_lowercase(), p.score))
                        .collect(),
                )
            })
            .collect(),
        Level::Sentence => vec![(
            "stsb-test".to_owned(),
            root.load::<StsPair>("stsb", "test")?
                .rows
                .into_iter()
                .map(|p| (p.sentence1, p.sentence2, p.score))
                .collect(),
        )],
    };
    classic_on(embedder, sets, post)
}

/// Spearman ×100 of cosine (after `post`, fitted on each set) vs gold on each named set.
fn classic_on(
    embedder: &dyn Embedder,
    sets: Vec<(String, Vec<GoldPair>)>,
    post: PostProcess,
) -> Result<ClassicScores> {
    let mut spearman = BTreeMap::new();
    for (name, rows) in sets {
        let predicted: Vec<f64> = if post == PostProcess::None {
            let pairs: Vec<(&str, &str)> = rows
                .iter()
                .map(|(a, b, _)| (a.as_str(), b.as_str()))
                .collect();
            EmbeddingSimilarity::cosine(embedder)
                .score_pairs(&pairs)?
                .into_iter()
                .map(f64::from)
                .collect()
        } else {
            // post-processing is fitted on the embedded set, so the set is embedded as a whole
            let mut index: HashMap<&str, usize> = HashMap::new();
            let mut distinct: Vec<&str> = Vec::new();
            for (a, b, _) in &rows {
                for t in [a.as_str(), b.as_str()] {
                    index.entry(t).or_insert_with(|| {
                        distinct.push(t);
                        distinct.len() - 1
                    });
                }
            }
            let vectors = post.apply(embedder.embed(&distinct)?);
            rows.iter()
                .map(|(a, b, _)| {
                    f64::from(cosine(
                        vectors.row(index[a.as_str()]),
                        vectors.row(index[b.as_str()]),
                    ))
                })
                .collect()
        };
        let gold: Vec<f64> = rows.iter().map(|r| r.2).collect();
        spearman.insert(name, 100.0 * measures::spearman(&predicted, &gold)?);
    }
    let values: Vec<f64> = spearman.values().copied().collect();
    Ok(ClassicScores {
        mean: measures::mean(&values)?,
        spearman,
    })
}

/// Runs EvalRank at `level` on `source` lists (as much of them as `cut` keeps) with
/// `similarity` after `post`, plus the classic score with the same post-processing (fitted on
/// each embedded set).
pub fn run(
    root: &DataRoot,
    embedder: &dyn Embedder,
    level: Level,
    source: ListSource,
    cut: ListCut,
    similarity: VectorSimilarity,
    post: PostProcess,
) -> Result<EvalRankReport> {
    let lists = load_lists(root, level, source)?.sampled(cut);
    ranked(embedder, level, lists, similarity, post, || {
        classic_scores(root, embedder, level, post).map(Some)
    })
}

/// EvalRank on lists made from the user's `datasets` ([`lists::from_datasets`], as much of
/// them as `cut` keeps), with the classic Spearman on the STS sets among them (none: no classic
/// score).
pub fn run_on_datasets(
    root: &DataRoot,
    embedder: &dyn Embedder,
    level: Level,
    datasets: &[(&str, &str)],
    cut: ListCut,
    similarity: VectorSimilarity,
    post: PostProcess,
) -> Result<EvalRankReport> {
    let (lists, sts) = lists::from_datasets(root, datasets)?;
    let lists = lists.sampled(cut);
    ranked(embedder, level, lists, similarity, post, || {
        if sts.is_empty() {
            return Ok(None);
        }
        let sets = sts
            .iter()
            .map(|set| {
                let (name, split) = set.split_once('/').expect("written name/split above");
                let rows = root
                    .load::<StsPair>(name, split)?
                    .rows
                    .into_iter()
                    .map(|p| (p.sentence1, p.sentence2, p.score))
                    .collect();
                Ok((set.clone(), rows))
            })
            .collect::<Result<Vec<_>>>()?;
        classic_on(embedder, sets, post).map(Some)
    })
}

/// The pairs of `lists` ranked against their background, then the classic score `classic`
/// gives, each phase timed.
fn ranked(
    embedder: &dyn Embedder,
    level: Level,
    lists: Lists,
    similarity: VectorSimilarity,
    post: PostProcess,
    classic: impl FnOnce() -> Result<Option<ClassicScores>>,
) -> Result<EvalRankReport> {
    let mut timings = Timings::default();
    let scores = evaluate(
        embedder,
        &lists.pairs,
        &lists.background,
        similarity,
        post,
        &mut timings,
    )?;
    let classic = timings.time("classic", classic)?;
    Ok(EvalRankReport {
        level,
        model: embedder.identity().clone(),
        lists,
        scores,
        classic,
        timings,
    })
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use sage_embed::{load_embedder, ResolveOptions, TransformerOptions};

    use super::*;

    fn setup(model: &str) -> Option<(DataRoot, Box<dyn Embedder>)> {
        let (Ok(root), Some(models)) = (DataRoot::from_env(), std::env::var_os("SAGE_MODELS_DIR"))
        else {
            sage_test_env::skip(
                module_path!(),
                &format!("SAGE_DATA_DIR or SAGE_MODELS_DIR unset: EvalRank with {model} not run"),
            );
            return None;
        };
        let dir = PathBuf::from(models).join(model);
        let embedder = load_embedder(
            dir.to_str()?,
            &ResolveOptions::default(),
            TransformerOptions::default(),
        )
        .ok()?;
        Some((root, embedder))
    }

    #[test]
    fn word_level_with_glove_50d() {
        let Some((root, glove)) = setup("glove.6B.50d") else {
            return;
        };
        let report = run(
            &root,
            glove.as_ref(),
            Level::Word,
            ListSource::Constructed,
            ListCut::WHOLE,
            VectorSimilarity::Cosine,
            PostProcess::None,
        )
        .unwrap();
        assert_eq!(
            (report.scores.pairs, report.scores.background),
            (5_514, 22_207)
        );
        // a real signal, far from chance (a random ranking of 22k items has MRR ≈ 0.05)
        assert!(
            report.scores.mrr > 5.0 && report.scores.hits_at_3 > report.scores.hits_at_1,
            "{:?}",
            report.scores
        );
        assert!(
            report.classic.as_ref().unwrap().spearman["en-ws-353-all"] > 40.0,
            "{:?}",
            report.classic
        );
        let l2 = run(
            &root,
            glove.as_ref(),
            Level::Word,
            ListSource::Shipped,
            ListCut::WHOLE,
            VectorSimilarity::L2,
            PostProcess::None,
        )
        .unwrap();
        assert!(l2.scores.mrr > 1.0, "{:?}", l2.scores);
        for post in [PostProcess::Whitening, PostProcess::Abtt { k: 2 }] {
            let r = run(
                &root,
                glove.as_ref(),
                Level::Word,
                ListSource::Shipped,
                ListCut::WHOLE,
                VectorSimilarity::Cosine,
                post,
            )
            .unwrap();
            assert_eq!(r.scores.post_processing, post.name());
            assert!(
                r.scores.mrr > 1.0 && r.classic.as_ref().unwrap().mean > 10.0,
                "{post:?}: {:?} {:?}",
                r.scores,
                r.classic
            );
        }
    }

    #[test]
    fn sentence_level_with_minilm_bounded() {
        let Some((root, model)) = setup("all-MiniLM-L6-v2") else {
            return;
        };
        // bounded for CI time: 400 directed pairs among 2,000 background sentences, their own
        // among them, the sample quick runs draw
        let whole = load_lists(&root, Level::Sentence, ListSource::Shipped).unwrap();
        let cut = ListCut {
            max_pairs: Some(400),
            max_background: Some(2_000),
            seed: sage_core::RunSeed::default(),
        };
        let lists = whole.clone().sampled(cut);
        let sample = lists.sample.unwrap();
        assert_eq!(
            (sample.pairs_of, sample.background_of),
            (whole.pair_count, whole.background_count)
        );
        assert_eq!(lists.pair_count, 400);
        assert!(lists.background_count >= 2_000 && lists.background_count < 2_800);
        let scores = evaluate(
            model.as_ref(),
            &lists.pairs,
            &lists.background,
            VectorSimilarity::Cosine,
            PostProcess::None,
            &mut Timings::default(),
        )
        .unwrap();
        assert!(scores.mrr > 40.0 && scores.hits_at_1 > 25.0, "{scores:?}");
    }
}
