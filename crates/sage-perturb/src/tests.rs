//! Properties every perturbation must have, and proportions on real documents.

use std::sync::Arc;

use proptest::prelude::*;
use sage_core::RunSeed;

use super::*;

fn all_without_wordnet() -> Vec<Box<dyn Perturbation>> {
    let mut all = retrieval_set();
    all.extend(sensitivity_set());
    for n in 1..=3 {
        all.push(Box::new(Jumbling { swaps: n }));
    }
    all
}

#[test]
fn task_sets_have_the_papers_sizes() {
    assert_eq!(robustness_set().len(), 6);
    assert_eq!(sensitivity_set().len(), 18);
    let retrieval = retrieval_set();
    assert_eq!(retrieval.len(), 18);
    let mut ids: Vec<String> = retrieval.iter().map(|p| p.id()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 18, "ids are distinct");
}

#[test]
fn specs_parse_and_reject() {
    let spec = |kind: &str, params: &[(&str, &str)]| PerturbationSpec {
        kind: kind.into(),
        params: params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    };
    let no_wordnet =
        || -> Result<Arc<WordNet>> { Err(PerturbError::Spec("no wordnet in this test".into())) };
    assert_eq!(
        spec("needle-insertion", &[("p", "0.5"), ("pos", "1")])
            .build(no_wordnet)
            .unwrap()
            .id(),
        "needle-insertion(p=0.5,pos=1)"
    );
    assert_eq!(
        spec("jumbling", &[("n", "2")])
            .build(no_wordnet)
            .unwrap()
            .id(),
        "jumbling(n=2)"
    );
    assert!(spec("jumbling", &[("n", "1.5")]).build(no_wordnet).is_err());
    assert!(spec("numerisation", &[("p", "1")])
        .build(no_wordnet)
        .err()
        .unwrap()
        .to_string()
        .contains("takes no parameter"));
    assert!(spec("shout", &[])
        .build(no_wordnet)
        .err()
        .unwrap()
        .to_string()
        .contains("unknown perturbation"));
    assert!(spec("antonym-replacement", &[]).build(no_wordnet).is_err());
    for kind in PerturbationSpec::KINDS {
        if !kind.needs_wordnet {
            spec(kind.name, &[]).build(no_wordnet).unwrap();
        }
    }
}

fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "\\PC{0,120}",
        "([A-Z][a-z]{0,8}( (is|can|not|won't|isn't|cannot)?)? ?[a-zé🙂\u{301}]{0,6}[.!?]? ?\n?){0,12}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, rng_seed: proptest::test_runner::RngSeed::Fixed(11), ..ProptestConfig::default() })]

    #[test]
    fn total_and_deterministic_on_arbitrary_unicode(text in any_text(), seed in 0u64..1000) {
        for p in all_without_wordnet() {
            let a = p.apply(&text, &mut RunSeed(seed).rng_for_item(&p.id(), 3)).unwrap();
            let b = p.apply(&text, &mut RunSeed(seed).rng_for_item(&p.id(), 3)).unwrap();
            prop_assert_eq!(&a, &b);
            prop_assert!(!a.text.contains('\u{FFFD}') || text.contains('\u{FFFD}'), "{} introduced U+FFFD", p.id());
        }
    }
}

#[test]
fn wordnet_perturbations_are_total_and_deterministic() {
    let Some(wn) = wordnet::tests::real() else {
        return;
    };
    let wn = Arc::new(wn);
    let perturbations: Vec<Box<dyn Perturbation>> = vec![
        Box::new(SynonymReplacement {
            wordnet: wn.clone(),
            words: 3,
        }),
        Box::new(AntonymReplacement { wordnet: wn }),
    ];
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 48,
        rng_seed: proptest::test_runner::RngSeed::Fixed(5),
        ..ProptestConfig::default()
    });
    runner
        .run(&any_text(), |text| {
            for p in &perturbations {
                let a = p.apply(&text, &mut RunSeed(1).rng("wn")).unwrap();
                let b = p.apply(&text, &mut RunSeed(1).rng("wn")).unwrap();
                prop_assert_eq!(a, b);
            }
            Ok(())
        })
        .unwrap();
}

/// Real documents from SAGE_DATA_DIR: CNN/DailyMail articles and Paul Graham essays.
fn real_documents() -> Option<Vec<String>> {
    let root = std::path::PathBuf::from(std::env::var_os("SAGE_DATA_DIR").or_else(|| {
        sage_test_env::skip(
            module_path!(),
            "SAGE_DATA_DIR unset: proportions on real documents not checked",
        );
        None
    })?);
    let mut docs = Vec::new();
    for (file, take) in [
        ("summarization/cnn_dailymail/sample.jsonl", 25),
        ("documents/paul_graham_essays/sample.jsonl", 8),
    ] {
        let path = root.join(file);
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for line in text.lines().take(take) {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            docs.push(v["text"].as_str().unwrap().to_owned());
        }
    }
    Some(docs)
}

/// The removed span and the inserted needle are within one token of their targets. The needle is
/// measured on its own: inserted at a code-point position (as the reference does) it usually
/// lands inside a word, and splitting that word costs up to two more tokens in the whole text,
/// which the second bound allows for.
#[test]
fn needle_and_removal_proportions_hold_on_real_documents() {
    let Some(docs) = real_documents() else { return };
    let mut rng = RunSeed(0).rng("proportions");
    let mut worst_total = 0i64;
    for doc in &docs {
        let n = sage_tokens::count(doc);
        for p in sensitivity_set() {
            let out = p.apply(doc, &mut rng).unwrap();
            let got = sage_tokens::count(&out.text) as i64;
            match out.provenance {
                Provenance::NeedleInsertion {
                    document_tokens,
                    needle_tokens,
                    proportion,
                    char_index,
                    ..
                } => {
                    assert_eq!(document_tokens, n);
                    assert_eq!(needle_tokens, ((proportion * n as f64) as usize).max(1));
                    let needle: String = out
                        .text
                        .chars()
                        .skip(char_index)
                        .take(out.text.chars().count() - doc.chars().count())
                        .collect();
                    assert_eq!(needle, filler(needle_tokens).unwrap());
                    let measured = sage_tokens::count(&needle) as i64;
                    assert!(
                        (measured - needle_tokens as i64).abs() <= 1,
                        "{}: needle of {measured} tokens, want {needle_tokens} ± 1",
                        p.id()
                    );
                    let total = got - (n + needle_tokens) as i64;
                    worst_total = worst_total.max(total.abs());
                    assert!(
                        total.abs() <= 3,
                        "{}: {got} tokens in all, want {} (+ ≤ 3 for a split word)",
                        p.id(),
                        n + needle_tokens
                    );
                }
                Provenance::TokenRemoval {
                    document_tokens,
                    removed_tokens,
                    size,
                    ..
                } => {
                    assert_eq!(document_tokens, n);
                    assert_eq!(removed_tokens, (n as f64 * size) as usize);
                    let want = (n - removed_tokens) as i64;
                    assert!(
                        (got - want).abs() <= 1,
                        "{}: {got} tokens, want {want} ± 1 (document of {n})",
                        p.id()
                    );
                }
                other => panic!("{other:?}"),
            }
        }
    }
    eprintln!("largest whole-text deviation after needle insertion: {worst_total} tokens");
}
