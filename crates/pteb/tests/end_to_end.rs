//! PTEB end to end on real data and real models: 30 STS-B test pairs, 2 runs, SmolLM2-135M as
//! the paraphraser and all-MiniLM-L6-v2 as the encoder; then a re-run answered by the
//! paraphrase cache. Needs $SAGE_DATA_DIR and $SAGE_MODELS_DIR (CI sets both).

use std::path::PathBuf;
use std::sync::Arc;

use pteb::{
    GgufChat, Options, ParaphraseCache, ParaphraseSettings, Paraphraser, Paraphrasing, Silent,
};
use sage_embed::{load_embedder, ResolveOptions, TransformerOptions};

fn env_dir(key: &str) -> Option<PathBuf> {
    std::env::var_os(key)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

#[test]
fn sts_slice_with_smollm2_and_minilm_then_cached_rerun() {
    let (Some(data), Some(models)) = (env_dir("SAGE_DATA_DIR"), env_dir("SAGE_MODELS_DIR")) else {
        sage_test_env::skip(
            module_path!(),
            "SAGE_DATA_DIR or SAGE_MODELS_DIR unset: PTEB end to end not run",
        );
        return;
    };
    let llm = models.join("SmolLM2-135M-Instruct-GGUF");
    let encoder_dir = models.join("all-MiniLM-L6-v2");
    assert!(
        llm.is_dir() && encoder_dir.is_dir(),
        "run ../shared/tools/fetch-models.sh"
    );
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = Arc::new(ParaphraseCache::open(cache_dir.path().join("paraphrases.redb")).unwrap());
    let encoder = load_embedder(
        encoder_dir.to_str().unwrap(),
        &ResolveOptions::from_env(),
        TransformerOptions::default(),
    )
    .unwrap();
    let root = sage_data::DataRoot::new(&data);
    let options = Options {
        runs: 2,
        max_rows: Some(30),
        ..Options::default()
    };
    let make = || {
        Paraphraser::new(
            Box::new(GgufChat::load(llm.to_str().unwrap(), false).unwrap()),
            ParaphraseSettings::default(),
            Some(cache.clone()),
        )
    };
    let paraphraser = make();
    // the reference encoder of the quality record is the default one, all-MiniLM-L6-v2 too
    let paraphrasing = |paraphraser| Paraphrasing {
        paraphraser,
        judge: None,
        reference: encoder.as_ref(),
    };
    let report = pteb::evaluate(
        encoder.as_ref(),
        paraphrasing(&paraphraser),
        &root,
        &[("stsb", "test")],
        &options,
        &Silent,
    )
    .unwrap();
    let d = &report.datasets[0];
    eprintln!("{}", serde_json::to_string_pretty(d).unwrap());
    assert_eq!(report.seeds, [1337, 1338]);
    assert_eq!(d.rows.used_rows, 30);
    assert_eq!(d.runs.len(), 2);
    // MiniLM on STS-B is around 0.8 Spearman; 30 pairs leave room either way
    assert!(d.original > 0.5 && d.original <= 1.0, "{}", d.original);
    for run in &d.runs {
        assert!(
            run.texts >= 55,
            "30 pairs have about 60 distinct sentences: {run:?}"
        );
        assert_eq!(run.cache_hits, 0);
        assert!(run.fallbacks <= run.texts);
        assert!(run.score.is_finite());
        // real rewrites: on average a sizeable share of the words changes
        assert!(run.quality.edit_distance > 0.1, "{run:?}");
        assert!(
            (-1.0..=1.0).contains(&run.quality.reference_cosine)
                && (0.0..=1.0).contains(&run.quality.share_below),
            "{run:?}"
        );
    }
    // the verdict is the gate applied to the figures, and decides what is pooled
    let q = &d.quality;
    assert_eq!(q.reference_encoder, "all-MiniLM-L6-v2");
    assert_eq!(
        q.verdict,
        options.gate.verdict(&q.figures, None, None, &[]),
        "{q:?}"
    );
    assert_eq!(report.unqualified.is_empty(), q.verdict.qualified);
    assert_eq!(report.pooled.is_some(), q.verdict.qualified);
    // most paraphrases differ from their original (fallbacks and copies are the exception)
    let texts: Vec<&str> = report.datasets[0]
        .examples
        .iter()
        .map(|(o, _)| o.as_str())
        .collect();
    assert_eq!(texts.len(), 3);
    let (all, _) = paraphraser
        .paraphrase_all(
            &root
                .load::<sage_data::StsPair>("stsb", "test")
                .map(|l| sage_data::sample(&l, Some(30), sage_core::RunSeed(1337)).0)
                .unwrap()
                .iter()
                .flat_map(|p| [p.sentence1.as_str(), p.sentence2.as_str()])
                .collect::<Vec<_>>(),
            1337,
            &|_, _| {},
        )
        .unwrap();
    let changed = all.iter().filter(|p| !p.fallback).count();
    assert!(
        changed * 10 >= all.len() * 7,
        "{changed} of {} paraphrased",
        all.len()
    );
    assert_eq!(
        report.fallbacks,
        d.runs.iter().map(|r| r.fallbacks).sum::<u64>()
    );

    // a re-run with a fresh paraphraser object: every text from the cache, the same numbers;
    // asked to pool whatever the verdict, it pools both runs
    let pool_all = Options {
        pool_unqualified: true,
        ..options.clone()
    };
    let again = pteb::evaluate(
        encoder.as_ref(),
        paraphrasing(&make()),
        &root,
        &[("stsb", "test")],
        &pool_all,
        &Silent,
    )
    .unwrap();
    let pooled = again.pooled.as_ref().expect("2 dataset-runs are pooled");
    assert_eq!(pooled.n, 2);
    assert_eq!(pooled.includes_unqualified, !q.verdict.qualified);
    let d2 = &again.datasets[0];
    for (a, b) in d.runs.iter().zip(&d2.runs) {
        assert_eq!(
            b.cache_hits, b.texts,
            "re-run must hit the paraphrase cache"
        );
        assert_eq!(a.score, b.score);
        assert_eq!(a.quality, b.quality);
    }
    assert_eq!(d.original, d2.original);
}
