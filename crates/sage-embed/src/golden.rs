//! Golden tests against the real weights in SAGE_MODELS_DIR and the Python references in
//! data/fixtures/embeddings.golden.json (written by tests/python-reference/golden_embeddings.py:
//! sentence-transformers 6.2.0, torch 2.15.0, transformers 5.23.0, model2vec 0.10.0).

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use ndarray::{Array2, ArrayView1};
use sage_core::{cosine, Embedder, EmbeddingSimilarity, Role, Similarity};
use serde_json::Value;

use super::*;

const GOLDEN: &str = include_str!("../../../data/fixtures/embeddings.golden.json");

fn golden() -> Value {
    serde_json::from_str(GOLDEN).unwrap()
}

fn sentences(g: &Value) -> Vec<String> {
    g["sentences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

fn rows(v: &Value) -> Vec<Vec<f32>> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r.as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap() as f32)
                .collect()
        })
        .collect()
}

/// The model folder, or None (and a message) when SAGE_MODELS_DIR lacks it.
fn model_dir(name: &str) -> Option<PathBuf> {
    let Some(root) = std::env::var_os("SAGE_MODELS_DIR") else {
        sage_test_env::skip(
            module_path!(),
            &format!("SAGE_MODELS_DIR unset: golden test of {name} not run"),
        );
        return None;
    };
    let dir = PathBuf::from(root).join(name);
    if dir.is_dir() {
        Some(dir)
    } else {
        sage_test_env::skip(module_path!(), &format!("{} missing: golden test of {name} not run (bash ../shared/tools/fetch-models.sh {name})", dir.display()));
        None
    }
}

fn local(dir: &Path) -> ResolvedModel {
    resolve_model(dir.to_str().unwrap(), &ResolveOptions::default()).unwrap()
}

/// The largest absolute difference between two vectors, element by element.
fn max_abs_difference<'a>(
    a: impl IntoIterator<Item = &'a f32>,
    b: impl IntoIterator<Item = &'a f32>,
) -> f32 {
    a.into_iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0f32, f32::max)
}

fn assert_matches(got: &Array2<f32>, want: &[Vec<f32>], what: &str, texts: &[String]) {
    assert_eq!(got.nrows(), want.len());
    for (i, w) in want.iter().enumerate() {
        if w.iter().all(|&x| x == 0.0) {
            // sentence-transformers' vector of a text without tokens: zeros, which have no angle
            let largest = got.row(i).iter().fold(0f32, |m, x| m.max(x.abs()));
            assert!(
                largest == 0.0,
                "{what}: sentence {i} ({:?}) should be zeros, has |x| up to {largest}",
                texts[i].chars().take(30).collect::<String>()
            );
            continue;
        }
        let c = cosine(got.row(i), ArrayView1::from(w));
        assert!(
            c >= 0.9999,
            "{what}: sentence {i} ({:?}) cosine {c}",
            texts[i].chars().take(30).collect::<String>()
        );
    }
}

fn check_transformer(name: &str) {
    let Some(dir) = model_dir(name) else { return };
    let g = golden();
    let texts = sentences(&g);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let model = SentenceTransformer::load(&local(&dir), TransformerOptions::default()).unwrap();
    let batch = model.embed(&refs).unwrap();
    assert_matches(&batch, &rows(&g[name]), name, &texts);
    // batch result == single-text result
    for (i, text) in refs.iter().enumerate() {
        let single = model.embed(&[text]).unwrap();
        let diff = max_abs_difference(single.row(0), batch.row(i));
        assert!(
            diff < 1e-5,
            "{name}: sentence {i} differs alone vs in a batch by {diff}"
        );
    }
}

/// Copies a model folder into `dst`, every file but the weights (linked), so its configuration
/// can be edited.
fn copy_folder(src: &Path, dst: &Path) {
    for entry in std::fs::read_dir(src).unwrap().flatten() {
        let from = entry.path();
        let to = dst.join(entry.file_name());
        if from.is_dir() {
            std::fs::create_dir_all(&to).unwrap();
            copy_folder(&from, &to);
        } else if entry.file_name() == "model.safetensors" {
            std::os::unix::fs::symlink(&from, &to).unwrap();
        } else {
            std::fs::copy(&from, &to).unwrap();
        }
    }
}

/// sentence-transformers prompts through the query/document/plain roles, with the prompt pooled
/// and with `include_prompt: false`, against data/fixtures/prompts.golden.json (written by
/// tests/python-reference/golden_prompts.py: sentence-transformers 3.4.1, torch 2.15.0).
#[test]
fn prompts_reach_the_model_through_roles_as_sentence_transformers_applies_them() {
    let Some(src) = model_dir("all-MiniLM-L6-v2") else {
        return;
    };
    let g: Value =
        serde_json::from_str(include_str!("../../../data/fixtures/prompts.golden.json")).unwrap();
    let texts = sentences(&g);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    for (key, include_prompt) in [("include_prompt", true), ("exclude_prompt", false)] {
        let tmp = tempfile::tempdir().unwrap();
        copy_folder(&src, tmp.path());
        let st_path = tmp.path().join("config_sentence_transformers.json");
        let mut st: Value = serde_json::from_slice(&std::fs::read(&st_path).unwrap()).unwrap();
        for (k, v) in g["config"].as_object().unwrap() {
            st[k] = v.clone();
        }
        std::fs::write(&st_path, st.to_string()).unwrap();
        let pooling_path = tmp.path().join("1_Pooling/config.json");
        let mut pooling: Value =
            serde_json::from_slice(&std::fs::read(&pooling_path).unwrap()).unwrap();
        pooling["include_prompt"] = Value::Bool(include_prompt);
        std::fs::write(&pooling_path, pooling.to_string()).unwrap();

        let model =
            SentenceTransformer::load(&local(tmp.path()), TransformerOptions::default()).unwrap();
        for (name, role) in [
            ("query", Role::Query),
            ("document", Role::Document),
            ("plain", Role::Plain),
        ] {
            let got = model.embed_as(&refs, role).unwrap();
            assert_matches(&got, &rows(&g[key][name]), &format!("{key} {name}"), &texts);
        }
        assert_eq!(
            model.role_variant(Role::Query).as_deref(),
            Some("prompt=query: ")
        );
        assert_eq!(
            model.role_variant(Role::Document).as_deref(),
            Some("prompt=passage: ")
        );
        assert_eq!(model.role_variant(Role::Plain), None);
        // the roles change the vectors
        let q = model.embed_as(&refs[..1], Role::Query).unwrap();
        let p = model.embed(&refs[..1]).unwrap();
        assert!(max_abs_difference(q.row(0), p.row(0)) > 1e-3);
    }
}

/// Small random-initialised checkpoints of the families sage-embed loads, built and encoded by
/// tests/python-reference/tiny_models.py with sentence-transformers: XLM-RoBERTa (mean, two Dense, a
/// query prompt), RoBERTa (mean, a short window), ModernBERT (CLS, local and global layers), Qwen3 (last token, an instruction), Qwen2
/// (biases, a left-padding tokenizer; and with a tokenizer that adds no special tokens, so "" has
/// no token and pools to zeros), Mistral (weighted mean), LLaMA (mean), bidirectional
/// Gemma 3 (sliding layers, two Dense), NomicBERT as nomic-embed-text-v1.5 (query and document
/// prompts) and NomicBERT's other options (partial interleaved rotary, GeGLU, dynamic NTK
/// scaling). Cosine ≥ 0.9999 on empty, Unicode and over-length texts; batch == single.
#[test]
fn small_random_checkpoints_of_each_family_match_sentence_transformers() {
    let what = "tiny random checkpoints against sentence-transformers";
    let Some(tokenizer) = model_dir("all-MiniLM-L6-v2") else {
        return;
    };
    let Some(python) = sage_test_env::reference_python_or_skip(what) else {
        return;
    };
    let out = tempfile::tempdir().unwrap();
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/python-reference/tiny_models.py");
    let built = std::process::Command::new(&python)
        .arg(&script)
        .arg(out.path())
        .arg(&tokenizer)
        .env("HF_HUB_OFFLINE", "1")
        .env("TRANSFORMERS_OFFLINE", "1")
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let g: Value =
        serde_json::from_slice(&std::fs::read(out.path().join("golden.json")).unwrap()).unwrap();
    let texts: Vec<String> = g["texts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_owned())
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let families = g["families"].as_object().unwrap();
    assert_eq!(families.len(), 11);
    for (family, vectors) in families {
        let model = SentenceTransformer::load(
            &local(&out.path().join(family)),
            TransformerOptions::default(),
        )
        .unwrap();
        for (role_name, role) in [
            ("plain", Role::Plain),
            ("query", Role::Query),
            ("document", Role::Document),
        ] {
            let Some(want) = vectors.get(role_name) else {
                continue;
            };
            let got = model.embed_as(&refs, role).unwrap();
            assert_matches(&got, &rows(want), &format!("{family} {role_name}"), &texts);
            let lowest = rows(want)
                .iter()
                .enumerate()
                .filter(|(_, w)| w.iter().any(|&x| x != 0.0))
                .map(|(i, w)| cosine(got.row(i), ArrayView1::from(w)))
                .fold(f32::INFINITY, f32::min);
            eprintln!("{family} {role_name}: lowest cosine vs sentence-transformers {lowest:.7}");
            for (i, text) in refs.iter().enumerate() {
                let single = model.embed_as(&[text], role).unwrap();
                let diff = max_abs_difference(single.row(0), got.row(i));
                assert!(
                    diff < 1e-5,
                    "{family}: text {i} alone vs in a batch: {diff}"
                );
            }
        }
    }
}

/// Texts that differ only past the model's window (256 tokens here) are one forward pass, and
/// get the vector the first of them gets alone.
#[test]
fn texts_alike_within_the_window_are_encoded_once() {
    let Some(dir) = model_dir("all-MiniLM-L6-v2") else {
        return;
    };
    let model = SentenceTransformer::load(&local(&dir), TransformerOptions::default()).unwrap();
    let long = "the committee met again on tuesday to discuss the budget ".repeat(40);
    let texts = [
        long.clone(),
        format!("{long} and then it rained."),
        "A short sentence of its own.".to_owned(),
        format!("{long} Lorem ipsum dolor sit amet."),
    ];
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let vectors = model.embed(&refs).unwrap();
    assert_eq!(model.texts_encoded(), 2);
    for i in [1, 3] {
        assert_eq!(vectors.row(i), vectors.row(0), "text {i}");
    }
    assert_ne!(vectors.row(2), vectors.row(0));
    let alone = model.embed(&[&texts[1]]).unwrap();
    let diff = max_abs_difference(alone.row(0), vectors.row(1));
    assert!(diff < 1e-5, "alone vs merged: {diff}");
}

#[test]
fn all_minilm_l6_v2_matches_sentence_transformers() {
    check_transformer("all-MiniLM-L6-v2");
}

#[test]
fn paraphrase_minilm_l3_v2_matches_sentence_transformers() {
    check_transformer("paraphrase-MiniLM-L3-v2");
}

#[test]
fn all_mpnet_base_v2_matches_sentence_transformers() {
    check_transformer("all-mpnet-base-v2");
}

#[test]
fn first_last_avg_matches_transformers_hidden_states() {
    let Some(dir) = model_dir("all-MiniLM-L6-v2") else {
        return;
    };
    let g = golden();
    let texts = sentences(&g);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let options = TransformerOptions {
        pooling: Some(Pooling::FirstLastAvg),
        normalize: Some(false),
        ..TransformerOptions::default()
    };
    let model = SentenceTransformer::load(&local(&dir), options).unwrap();
    assert_eq!(model.identity().pooling, "first-last-avg");
    assert_matches(
        &model.embed(&refs).unwrap(),
        &rows(&g["all-MiniLM-L6-v2/first-last-avg"]),
        "first-last-avg",
        &texts,
    );
}

#[test]
fn encoder_equals_candle_transformers_bert() {
    let Some(dir) = model_dir("all-MiniLM-L6-v2") else {
        return;
    };
    let config_text = std::fs::read_to_string(dir.join("config.json")).unwrap();
    let reference_config: candle_transformers::models::bert::Config =
        serde_json::from_str(&config_text).unwrap();
    let our_config: TransformerConfig = serde_json::from_str(&config_text).unwrap();
    let weights = dir.join("model.safetensors");
    let vb = unsafe {
        VarBuilder::from_mmaped_safetensors(&[&weights], DType::F32, &Device::Cpu).unwrap()
    };
    let reference =
        candle_transformers::models::bert::BertModel::load(vb.clone(), &reference_config).unwrap();
    let ours = encoder::Encoder::load(
        vb,
        &our_config,
        encoder::EncoderFlavor::Bert,
        sage_kernels::Precision::F32,
    )
    .unwrap();
    let ids = vec![
        vec![101u32, 7592, 2088, 999, 102],
        vec![101, 2129, 102, 0, 0],
    ];
    let mask = vec![vec![1u32; 5], vec![1, 1, 1, 0, 0]];
    let ours = ours.forward(&ids, &mask, false).unwrap().last;
    let input = Tensor::new(ids.clone(), &Device::Cpu).unwrap();
    let attention = Tensor::new(mask.clone(), &Device::Cpu).unwrap();
    let theirs = reference
        .forward(&input, &input.zeros_like().unwrap(), Some(&attention))
        .unwrap();
    // compare the non-padding positions
    for (b, row) in mask.iter().enumerate() {
        for (t, &m) in row.iter().enumerate() {
            if m == 1 {
                let a: Vec<f32> = ours.get(b).unwrap().get(t).unwrap().to_vec1().unwrap();
                let c: Vec<f32> = theirs.get(b).unwrap().get(t).unwrap().to_vec1().unwrap();
                let diff = max_abs_difference(&a, &c);
                assert!(diff < 1e-4, "position ({b}, {t}) differs by {diff}");
            }
        }
    }
}

#[test]
fn static_model_matches_model2vec() {
    let Some(dir) = model_dir("static-10k-64d-int8") else {
        return;
    };
    let g = golden();
    let texts = sentences(&g);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let model = load_embedder(
        dir.to_str().unwrap(),
        &ResolveOptions::default(),
        TransformerOptions::default(),
    )
    .unwrap();
    let got = model.embed(&refs).unwrap();
    let want = rows(&g["static-10k-64d-int8"]);
    for (i, w) in want.iter().enumerate() {
        if w.iter().all(|x| *x == 0.0) {
            assert!(
                got.row(i).iter().all(|x| *x == 0.0),
                "sentence {i}: model2vec gives zeros"
            );
        } else {
            let c = cosine(got.row(i), ArrayView1::from(w));
            assert!(c >= 0.9999, "static sentence {i}: cosine {c}");
        }
    }
}

#[test]
fn glove_matches_numpy() {
    let Some(dir) = model_dir("glove.6B.50d") else {
        return;
    };
    let g = golden();
    let glove = WordVectors::load(&local(&dir)).unwrap();
    assert_eq!(glove.vocabulary(), 400_000);
    let cos = cosine(glove.word("king").unwrap(), glove.word("queen").unwrap());
    assert!(
        (f64::from(cos) - g["glove"]["cos_king_queen"].as_f64().unwrap()).abs() < 1e-6,
        "{cos}"
    );
    for text in ["the cat sat on the mat.", "Dogs bark zzyzxq loudly!"] {
        let got = glove.embed(&[text]).unwrap();
        let want: Vec<f32> = g["glove"][text]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() as f32)
            .collect();
        for (a, b) in got.row(0).iter().zip(&want) {
            assert!((a - b).abs() < 1e-5, "{text}: {a} vs {b}");
        }
    }
    assert!(glove.embed(&[""]).unwrap().iter().all(|x| *x == 0.0));
}

#[test]
fn hub_cache_path_loads_the_same_model() {
    let Some(dir) = model_dir("all-MiniLM-L6-v2") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let hub = tmp.path().join("hub");
    let files: Vec<(&str, PathBuf)> = [
        "config.json",
        "tokenizer.json",
        "model.safetensors",
        "modules.json",
        "sentence_bert_config.json",
        "1_Pooling/config.json",
    ]
    .iter()
    .map(|f| (*f, dir.join(f)))
    .collect();
    let refs: Vec<(&str, &Path)> = files.iter().map(|(n, p)| (*n, p.as_path())).collect();
    let commit =
        resolve::tests::hub_cache_fixture(&hub, "sentence-transformers/all-MiniLM-L6-v2", &refs);
    let options = ResolveOptions {
        models_dir: None,
        hub: sage_hub::HubSettings {
            cache: hub,
            offline: true,
            endpoint: None,
            token: None,
        },
    };
    let from_hub = load_embedder(
        "sentence-transformers/all-MiniLM-L6-v2",
        &options,
        TransformerOptions::default(),
    )
    .unwrap();
    assert_eq!(
        from_hub.identity().model_id,
        "sentence-transformers/all-MiniLM-L6-v2"
    );
    assert_eq!(
        from_hub.identity().revision.as_deref(),
        Some(commit.as_str())
    );
    let from_folder = load_embedder(
        dir.to_str().unwrap(),
        &ResolveOptions::default(),
        TransformerOptions::default(),
    )
    .unwrap();
    let texts = ["A hub-cached model.", "The same weights."];
    assert_eq!(
        from_hub.embed(&texts).unwrap(),
        from_folder.embed(&texts).unwrap()
    );
}

#[test]
fn embedding_similarity_ranks_paraphrases_above_unrelated() {
    let Some(dir) = model_dir("all-MiniLM-L6-v2") else {
        return;
    };
    let model = SentenceTransformer::load(&local(&dir), TransformerOptions::default()).unwrap();
    let sim = EmbeddingSimilarity::cosine(model);
    let s = sim
        .score_pairs(&[
            ("A man is playing a guitar.", "A man plays the guitar."),
            ("A man is playing a guitar.", "Stocks fell on Monday."),
        ])
        .unwrap();
    assert!(s[0] > 0.8 && s[1] < 0.3, "{s:?}");
}

/// About fifty texts: short sentences and ~200-word passages built from them (seeded), for the
/// precision tests.
fn varied_texts() -> Vec<String> {
    use rand::{Rng, SeedableRng};
    let short = [
        "A man is playing a guitar.",
        "The cat sat on the mat.",
        "Stocks fell sharply on Tuesday after the central bank raised rates.",
        "How do I reset my password?",
        "A woman is slicing an onion in the kitchen.",
        "Two dogs run across a snowy field.",
        "The committee postponed its decision until next spring.",
        "Is it safe to drink tap water in Lisbon?",
        "Der Zug nach Berlin hat zwanzig Minuten Verspätung.",
        "Photosynthesis converts light energy into chemical energy.",
        "Ok.",
        "The quick brown fox jumps over the lazy dog!",
        "A child is riding a horse on the beach at sunset.",
        "Researchers found no link between the vaccine and the disorder.",
        "Where can I buy fresh bread near the station?",
        "Mix the flour, sugar and eggs, then bake for 25 minutes at 180°C.",
        "The new phone's battery lasts two full days.",
        "He scored twice in the second half, sealing the win.",
        "Symptoms include fever, cough and shortness of breath.",
        "The treaty was signed in 1648, ending the Thirty Years' War.",
        "emoji test 🙂 with ünïcödé and numbers 3.14159",
        "Please reply by Friday with your availability.",
        "A plane is taking off.",
        "The server returned error 503: service unavailable.",
        "Water boils at 100 degrees Celsius at sea level.",
    ];
    let mut rng = sage_core::ExperimentRng::seed_from_u64(41);
    let mut texts: Vec<String> = short.iter().map(|s| (*s).to_owned()).collect();
    for _ in 0..25 {
        let mut passage = String::new();
        while passage.split_whitespace().count() < 200 {
            passage.push_str(short[rng.gen_range(0..short.len())]);
            passage.push(' ');
        }
        texts.push(passage.trim_end().to_owned());
    }
    texts
}

/// all-MiniLM-L6-v2 at bf16 and int8 against f32 on short and long texts: cosine ≥ 0.99 on
/// every text, a different identity (cache key) per precision and f32's unchanged, and
/// `compute()` naming the precision and its kernel.
#[test]
fn lower_precisions_of_all_minilm_l6_v2_stay_within_cosine_0_99_of_f32() {
    check_precisions("all-MiniLM-L6-v2", &varied_texts());
}

/// The same of MPNet (a relative position bias, 768 wide): the short texts and five long ones,
/// the model being five times MiniLM's size.
#[test]
fn lower_precisions_of_all_mpnet_base_v2_stay_within_cosine_0_99_of_f32() {
    check_precisions("all-mpnet-base-v2", &varied_texts()[..30]);
}

/// `name` at bf16 and int8 against f32 on `texts` (see the tests above).
fn check_precisions(name: &str, texts: &[String]) {
    let Some(dir) = model_dir(name) else {
        return;
    };
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let load = |precision| {
        let options = TransformerOptions {
            precision,
            ..TransformerOptions::default()
        };
        SentenceTransformer::load(&local(&dir), options).unwrap()
    };
    let f32_model = load(Precision::F32);
    assert_eq!(
        f32_model.identity().pooling,
        "mean",
        "f32's identity is unchanged"
    );
    let want = f32_model.embed(&refs).unwrap();
    assert!(
        f32_model.full_precision().unwrap().is_none(),
        "f32 is its own reference"
    );
    let mut keys = vec![f32_model.identity().cache_key()];
    for precision in [Precision::Bf16, Precision::Int8] {
        let model = load(precision);
        let compute = model.compute().unwrap();
        assert!(
            compute.starts_with(&format!("cpu {precision} ")),
            "{precision}: compute() says {compute:?}"
        );
        assert_eq!(model.identity().precision(), Some(precision.name()));
        assert!(model
            .identity()
            .pooling
            .starts_with(&format!("mean:precision={precision}")));
        keys.push(model.identity().cache_key());
        // its float32 twin (the compression suite's reference) is the f32 model, vector for
        // vector
        let twin = model
            .full_precision()
            .unwrap()
            .expect("a twin at a lower precision");
        assert_eq!(twin.identity(), f32_model.identity());
        assert_eq!(
            twin.embed(&refs[..3]).unwrap(),
            want.slice(ndarray::s![..3, ..])
        );
        let got = model.embed(&refs).unwrap();
        let (lowest, at) = (0..refs.len())
            .map(|i| (cosine(got.row(i), want.row(i)), i))
            .fold((f32::INFINITY, 0), |a, b| if b.0 < a.0 { b } else { a });
        eprintln!("{name} {compute}: lowest cosine vs f32 {lowest:.6} (text {at})");
        assert!(
            lowest >= 0.99,
            "{name} {precision}: text {at} ({:?}) cosine {lowest}",
            texts[at].chars().take(40).collect::<String>()
        );
    }
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 3, "one cache key per precision");
}

/// A model whose weights defeat int8 is refused at `--precision int8`, naming the lowest
/// cosine it measured; `--precision auto` takes f32 for it and says why. The defeat: in each
/// layer two feed-forward units made twins (the same weights and bias, so the same activation)
/// and every output row given +1000 and −1000 for them. Float32 cancels the pair and keeps the
/// model as it was; int8 spends each row's whole range on the pair, leaving the row's other
/// weights a level or two.
#[test]
fn int8_refuses_a_model_whose_vectors_it_cannot_keep() {
    let Some(dir) = model_dir("all-MiniLM-L6-v2") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let broken = tmp.path().join("all-MiniLM-L6-v2-outliers");
    std::fs::create_dir_all(&broken).unwrap();
    copy_folder(&dir, &broken);
    let weights = broken.join("model.safetensors");
    let mut tensors = candle_core::safetensors::load(&weights, &Device::Cpu).unwrap();
    let edit = |t: &Tensor, f: &dyn Fn(&mut [f32], usize)| {
        let k = t.dims().last().copied().unwrap();
        let mut values = t.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        f(&mut values, k);
        Tensor::from_vec(values, t.shape(), &Device::Cpu).unwrap()
    };
    let mut edited = 0;
    for (name, tensor) in tensors.iter_mut() {
        *tensor = if name.ends_with("intermediate.dense.weight") {
            // unit 1 a twin of unit 0
            edit(tensor, &|v, k| v.copy_within(0..k, k))
        } else if name.ends_with("intermediate.dense.bias") {
            edit(tensor, &|v, _| v[1] = v[0])
        } else if name.ends_with("output.dense.weight") && !name.contains("attention") {
            edited += 1;
            edit(tensor, &|v, k| {
                for row in v.chunks_exact_mut(k) {
                    (row[0], row[1]) = (1000.0, -1000.0);
                }
            })
        } else {
            continue;
        };
    }
    assert_eq!(edited, 6, "MiniLM-L6 has six feed-forward output layers");
    std::fs::remove_file(&weights).unwrap();
    candle_core::safetensors::save(&tensors, &weights).unwrap();
    let options = TransformerOptions {
        precision: Precision::Int8,
        ..TransformerOptions::default()
    };
    let Err(e) = SentenceTransformer::load(&local(&broken), options) else {
        panic!("int8 took a model whose vectors it cannot keep");
    };
    let message = e.to_string();
    let crate::EmbedError::Int8Inaccurate { lowest, texts, .. } = e else {
        panic!("another error: {message}");
    };
    assert!(
        lowest < 0.99 && texts == crate::calibration_texts().len(),
        "{lowest}"
    );
    assert!(
        message.contains(&format!("lowest cosine of {lowest:.4}"))
            && message.contains("--precision f32"),
        "{message}"
    );
    let verdict = crate::choose_precision(
        broken.to_str().unwrap(),
        &ResolveOptions::default(),
        &TransformerOptions::default(),
        None,
    )
    .unwrap();
    assert_eq!(verdict.chosen, Precision::F32);
    assert_eq!(verdict.int8_lowest_cosine, Some(lowest));
    assert!(
        verdict.reason.contains("below the 0.99"),
        "{}",
        verdict.reason
    );
}

/// Distinct texts of about `words` words each, drawn (seeded) from the words of
/// [`varied_texts`]: every one is encoded (none coincides with another).
fn texts_of(words: usize, count: usize, seed: u64) -> Vec<String> {
    use rand::{Rng, SeedableRng};
    let vocabulary: Vec<String> = varied_texts()[..25]
        .iter()
        .flat_map(|t| t.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .collect();
    let mut rng = sage_core::ExperimentRng::seed_from_u64(seed);
    (0..count)
        .map(|i| {
            let mut text = format!("{i}");
            for _ in 0..words {
                text.push(' ');
                text.push_str(&vocabulary[rng.gen_range(0..vocabulary.len())]);
            }
            text
        })
        .collect()
}

/// Texts per second of all-MiniLM-L6-v2 at each precision on short (STS-B-like), ~128-token
/// and 256-token texts, and the lowest cosine against f32: a measurement, not a test (run
/// with `--ignored --nocapture`; no timing is asserted).
#[test]
#[ignore = "a measurement: minutes, and only numbers to read"]
fn precision_throughput_of_all_minilm_l6_v2() {
    let Some(dir) = model_dir("all-MiniLM-L6-v2") else {
        return;
    };
    let sets = [
        ("short", texts_of(11, 1000, 51)),
        ("128-token", texts_of(95, 200, 52)),
        ("256-token", texts_of(230, 100, 53)),
    ];
    let models: Vec<(Precision, SentenceTransformer)> = Precision::ALL
        .iter()
        .map(|&precision| {
            let options = TransformerOptions {
                precision,
                ..TransformerOptions::default()
            };
            (
                precision,
                SentenceTransformer::load(&local(&dir), options).unwrap(),
            )
        })
        .collect();
    for (name, texts) in &sets {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let tokens: usize = models[0].1.count_tokens(&refs).unwrap().iter().sum();
        let mut reference: Option<Array2<f32>> = None;
        for (precision, model) in &models {
            // one warm-up pass over a slice, then the best of two timed passes
            model.embed(&refs[..refs.len().min(64)]).unwrap();
            let mut best = f64::INFINITY;
            let mut vectors = None;
            for _ in 0..2 {
                let start = std::time::Instant::now();
                vectors = Some(model.embed(&refs).unwrap());
                best = best.min(start.elapsed().as_secs_f64());
            }
            let vectors = vectors.unwrap();
            let lowest = match &reference {
                None => 1.0,
                Some(want) => (0..refs.len())
                    .map(|i| cosine(vectors.row(i), want.row(i)))
                    .fold(f32::INFINITY, f32::min),
            };
            if *precision == Precision::F32 {
                reference = Some(vectors);
            }
            eprintln!(
                "{name:>9} ({} texts, {:.0} tokens each): {:<28} {:>8.1} texts/s, lowest cosine \
                 vs f32 {lowest:.5}",
                refs.len(),
                tokens as f64 / refs.len() as f64,
                model.compute().unwrap(),
                refs.len() as f64 / best,
            );
        }
    }
}
