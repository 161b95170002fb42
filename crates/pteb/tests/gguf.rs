//! The local GGUF backend on the real SmolLM2-135M-Instruct (fetched by
//! ../shared/tools/fetch-models.sh into $SAGE_MODELS_DIR; CI sets it).

use std::path::PathBuf;

use pteb::{ChatModel, GgufChat, ParaphraseSettings, Paraphraser, Sampling};

fn smollm2() -> GgufChat {
    let dir = std::env::var_os("SAGE_MODELS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/sage-models"))
        .join("SmolLM2-135M-Instruct-GGUF");
    assert!(
        dir.is_dir(),
        "{} missing: run `bash ../shared/tools/fetch-models.sh` (CI does)",
        dir.display()
    );
    GgufChat::load(dir.to_str().unwrap(), false).unwrap()
}

#[test]
fn smollm2_renders_its_chat_template_and_paraphrases_deterministically() {
    let model = smollm2();
    assert_eq!(model.architecture(), "llama");
    let prompt = model
        .render(&pteb::PromptStyle::English.messages("A man is playing a guitar."))
        .unwrap();
    // ChatML as the model's template writes it, ending with the generation prompt
    assert!(prompt.starts_with("<|im_start|>system\n"), "{prompt}");
    assert!(prompt.ends_with("<|im_end|>\n<|im_start|>assistant\n"), "{prompt}");

    let sampling = Sampling { temperature: 0.8, top_p: 0.9, max_tokens: 40, seed: 1337 };
    let messages = pteb::PromptStyle::English.messages("A man is playing a guitar.");
    let a = model.complete(&messages, &sampling).unwrap();
    let b = model.complete(&messages, &sampling).unwrap();
    assert_eq!(a, b, "same seed, same answer");
    assert!(!a.text.trim().is_empty());

    // the prefilled shared prefix gives the same answer as a full prefill
    let other = pteb::PromptStyle::English.messages("Three dogs run on the beach.");
    model.prepare([&messages, &other]).unwrap();
    let c = model.complete(&messages, &sampling).unwrap();
    assert_eq!(a, c);

    let paraphraser = Paraphraser::new(Box::new(model), ParaphraseSettings::default(), None);
    let texts = [
        "A man is playing a guitar.",
        "A woman is slicing an onion.",
        "The cat sat on the mat.",
        "Stocks fell sharply on Monday after the report.",
    ];
    let start = std::time::Instant::now();
    let (out, stats) = paraphraser.paraphrase_all(&texts, 1337, &|_, _| {}).unwrap();
    eprintln!("{:.1}s {stats:?}", start.elapsed().as_secs_f64());
    for (t, p) in texts.iter().zip(&out) {
        eprintln!("{t} => {p:?}");
    }
    assert_eq!(out.len(), 4);
    let changed = texts.iter().zip(&out).filter(|(t, p)| **t != p.text).count();
    assert!(changed >= 3, "most texts must come back reworded: {out:?}");
}
