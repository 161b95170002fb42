//! Every metric against the reference Python stack on data/fixtures/metric_pairs.jsonl.
//! Golden file: data/fixtures/metric_pairs.golden.jsonl, written by
//! tests/python-reference/golden_metrics.py (python-Levenshtein 0.27.5, rouge_score 0.1.2,
//! rank_bm25 0.2.2, tiktoken 0.14.0).

use proptest::prelude::*;
use sage_core::Similarity;
use serde_json::Value;

use crate::{cl100k, Bm25Plus, Jaccard, LevenshteinRatio, Metric, Rouge};

const PAIRS: &str = include_str!("../../../data/fixtures/metric_pairs.jsonl");
const GOLDEN: &str = include_str!("../../../data/fixtures/metric_pairs.golden.jsonl");

fn fixture() -> (Vec<(String, String)>, Vec<Value>) {
    let pairs = PAIRS
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["text1"].as_str().unwrap().to_owned(),
                v["text2"].as_str().unwrap().to_owned(),
            )
        })
        .collect::<Vec<_>>();
    let golden = GOLDEN
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect::<Vec<Value>>();
    assert_eq!(pairs.len(), golden.len());
    (pairs, golden)
}

fn check(similarity: &dyn Similarity, key: &str) {
    check_scores(key, |pairs| {
        similarity
            .score_pairs(pairs)
            .unwrap()
            .into_iter()
            .map(f64::from)
            .collect()
    });
}

fn check_scores(key: &str, score: impl Fn(&[(&str, &str)]) -> Vec<f64>) {
    let (pairs, golden) = fixture();
    let refs: Vec<(&str, &str)> = pairs
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let batch = score(&refs);
    for (i, ((a, b), want)) in pairs.iter().zip(&golden).enumerate() {
        let want = want[key].as_f64().unwrap();
        let got = batch[i];
        let short = |t: &str| t.chars().take(40).collect::<String>();
        assert!(
            (got - want).abs() <= 1e-6,
            "{key} pair {i} ({:?} / {:?}): got {got}, want {want}",
            short(a),
            short(b)
        );
    }
}

#[test]
fn cl100k_ids_match_tiktoken() {
    let (pairs, golden) = fixture();
    for ((a, _), g) in pairs.iter().zip(&golden) {
        let want: Vec<u32> = g["cl100k_text1"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as u32)
            .collect();
        let got = cl100k(a);
        assert_eq!(&got[..got.len().min(12)], &want[..], "{a:?}");
    }
}

#[test]
fn levenshtein_matches_python_levenshtein() {
    check(&LevenshteinRatio, "levenshtein");
}

#[test]
fn rouge_matches_rouge_score() {
    check(&Rouge, "rouge");
}

#[test]
fn jaccard_matches_reference() {
    check(&Jaccard, "jaccard");
}

#[test]
fn bm25_raw_matches_rank_bm25() {
    // raw scores are unbounded: compare the f64 scores, not the f32 similarities
    check_scores("bm25_raw", |pairs| {
        Bm25Plus::raw().raw_scores(pairs).unwrap()
    });
}

#[test]
fn bm25_min_max_over_the_batch_matches_reference() {
    check(&Bm25Plus::default(), "bm25");
}

#[test]
fn batch_equals_single_for_pairwise_metrics() {
    let (pairs, _) = fixture();
    let refs: Vec<(&str, &str)> = pairs
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    for metric in [Metric::LEVENSHTEIN, Metric::ROUGE, Metric::JACCARD] {
        let s = metric.similarity();
        let batch = s.score_pairs(&refs).unwrap();
        for (i, (a, b)) in refs.iter().enumerate() {
            assert_eq!(batch[i], s.score(a, b).unwrap(), "{metric} pair {i}");
        }
    }
}

#[test]
fn constant_bm25_batch_is_one_half_not_nan() {
    let s = Bm25Plus::default();
    assert_eq!(s.score("a b c", "a b").unwrap(), 0.5);
    assert_eq!(
        s.score_pairs(&[("x", "x"), ("y", "y")]).unwrap(),
        vec![0.5, 0.5]
    );
    assert_eq!(s.score_pairs(&[]).unwrap(), Vec::<f32>::new());
}

#[test]
fn names_round_trip() {
    for m in Metric::BUILT_IN {
        assert_eq!(Metric::named(m.name(), &Metric::BUILT_IN).unwrap(), m);
        assert_eq!(
            Metric::named(&m.name().to_uppercase(), &Metric::BUILT_IN).unwrap(),
            m
        );
        assert_eq!(m.similarity().name(), m.name());
    }
    let unknown = Metric::named("cosine", &Metric::BUILT_IN).unwrap_err();
    assert_eq!(
        unknown.to_string(),
        "unknown metric \"cosine\"; known metrics: bm25, jaccard, levenshtein, rouge"
    );
    assert!(Metric::BM25.raw_similarity().is_ok());
    assert!(Metric::ROUGE.raw_similarity().is_err());
}

fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "\\PC{0,80}",
        "[a-z \u{301}\u{300}🙂👩‍👩‍👧é日本]{0,120}",
        "(<\\|endoftext\\|>| |a|\u{200d}){0,20}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, rng_seed: proptest::test_runner::RngSeed::Fixed(42), ..ProptestConfig::default() })]

    #[test]
    fn metrics_are_bounded_symmetric_and_total(a in any_text(), b in any_text()) {
        for metric in [Metric::LEVENSHTEIN, Metric::ROUGE, Metric::JACCARD] {
            let s = metric.similarity();
            let ab = s.score(&a, &b).unwrap();
            let ba = s.score(&b, &a).unwrap();
            prop_assert!((0.0..=1.0).contains(&ab), "{} gave {}", metric, ab);
            prop_assert!((ab - ba).abs() <= 1e-6, "{} asymmetric: {} vs {}", metric, ab, ba);
        }
        let bm25 = Bm25Plus::default().score_pairs(&[(a.as_str(), b.as_str()), (b.as_str(), a.as_str()), (a.as_str(), a.as_str())]).unwrap();
        prop_assert!(bm25.iter().all(|s| (0.0..=1.0).contains(s)), "bm25 gave {:?}", bm25);
        prop_assert!(Bm25Plus::raw().raw_scores(&[(a.as_str(), b.as_str())]).unwrap()[0] >= 0.0);
    }

    #[test]
    fn identical_texts_score_one(a in any_text()) {
        prop_assert_eq!(LevenshteinRatio.score(&a, &a).unwrap(), 1.0);
        prop_assert_eq!(Jaccard.score(&a, &a).unwrap(), 1.0);
    }
}

#[test]
fn long_unicode_strings_do_not_panic() {
    let big_a: String = "naïve 🙂 façade e\u{301} 日本語 ".repeat(4_000); // ~100 KB
    let big_b: String = big_a.chars().rev().collect();
    for metric in Metric::BUILT_IN {
        let s = metric.similarity();
        let v = s
            .score_pairs(&[
                (big_a.as_str(), big_b.as_str()),
                (big_a.as_str(), big_a.as_str()),
            ])
            .unwrap();
        assert!(v.iter().all(|x| (0.0..=1.0).contains(x)), "{metric}: {v:?}");
    }
}

/// Real text from SAGE_DATA_DIR (300 STS-B test pairs, 60 CNN/DailyMail document/summary pairs)
/// against data/fixtures/real_pairs.golden.jsonl, written by tests/python-reference/golden_metrics.py.
/// Without SAGE_DATA_DIR (CI sets it) there is nothing to compare and the test says so.
#[test]
fn real_data_matches_reference() {
    let Some(root) = std::env::var_os("SAGE_DATA_DIR") else {
        sage_test_env::skip(
            module_path!(),
            "SAGE_DATA_DIR unset: real-data golden comparison not run",
        );
        return;
    };
    let root = std::path::PathBuf::from(root);
    let golden: Vec<Value> = include_str!("../../../data/fixtures/real_pairs.golden.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut files: Vec<&str> = golden.iter().map(|g| g["file"].as_str().unwrap()).collect();
    files.dedup();
    assert_eq!(files.len(), 2);
    for file in files {
        let rows: Vec<&Value> = golden.iter().filter(|g| g["file"] == file).collect();
        let path = root.join(file);
        let lines: Vec<Value> = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .lines()
            .take(rows.len())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let texts: Vec<(String, String)> = rows
            .iter()
            .zip(&lines)
            .map(|(g, row)| {
                let key = |k: &str| row[g[k].as_str().unwrap()].as_str().unwrap().to_owned();
                (key("reference_key"), key("candidate_key"))
            })
            .collect();
        let refs: Vec<(&str, &str)> = texts
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let raw_bm25 = Bm25Plus::raw().raw_scores(&refs).unwrap();
        for (key, scores) in [
            ("levenshtein", LevenshteinRatio.score_pairs(&refs).unwrap()),
            ("rouge", Rouge.score_pairs(&refs).unwrap()),
            ("jaccard", Jaccard.score_pairs(&refs).unwrap()),
            ("bm25", Bm25Plus::default().score_pairs(&refs).unwrap()),
        ] {
            for (i, (got, g)) in scores.iter().zip(&rows).enumerate() {
                let want = g[key].as_f64().unwrap();
                assert!(
                    (f64::from(*got) - want).abs() <= 1e-6,
                    "{file}:{} {key}: got {got}, want {want}",
                    i + 1
                );
            }
        }
        for (i, (got, g)) in raw_bm25.iter().zip(&rows).enumerate() {
            let want = g["bm25_raw"].as_f64().unwrap();
            assert!(
                (got - want).abs() <= 1e-9 * want.max(1.0),
                "{file}:{} bm25_raw: got {got}, want {want}",
                i + 1
            );
        }
    }
}
