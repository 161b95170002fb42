//! The local GGUF backend on the real SmolLM2-135M-Instruct (fetched by
//! ../shared/tools/fetch-models.sh into $SAGE_MODELS_DIR; CI sets it).

use std::path::PathBuf;

use pteb::{ChatModel, GgufChat, ParaphraseSettings, Paraphraser, Sampling};

/// The model's folder, or `None` and a skip line naming `test` when it was not fetched.
fn smollm2_dir(test: &str) -> Option<PathBuf> {
    sage_test_env::model_dir_or_skip("SmolLM2-135M-Instruct-GGUF", test)
}

fn load(dir: &std::path::Path) -> GgufChat {
    GgufChat::load(dir.to_str().unwrap(), false).unwrap()
}

#[test]
fn smollm2_renders_its_chat_template_and_paraphrases_deterministically() {
    let Some(dir) =
        smollm2_dir("smollm2_renders_its_chat_template_and_paraphrases_deterministically")
    else {
        return;
    };
    let model = load(&dir);
    assert_eq!(model.architecture(), "llama");
    let prompt = model
        .render(&pteb::PromptStyle::English.messages("A man is playing a guitar."))
        .unwrap();
    // ChatML as the model's template writes it, ending with the generation prompt
    assert!(prompt.starts_with("<|im_start|>system\n"), "{prompt}");
    assert!(
        prompt.ends_with("<|im_end|>\n<|im_start|>assistant\n"),
        "{prompt}"
    );

    let sampling = Sampling {
        temperature: 0.8,
        top_p: 0.9,
        max_tokens: 40,
        seed: 1337,
        stop: vec![],
    };
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
    let (out, stats) = paraphraser
        .paraphrase_all(&texts, 1337, &|_, _| {})
        .unwrap();
    eprintln!("{:.1}s {stats:?}", start.elapsed().as_secs_f64());
    for (t, p) in texts.iter().zip(&out) {
        eprintln!("{t} => {p:?}");
    }
    assert_eq!(out.len(), 4);
    let changed = texts
        .iter()
        .zip(&out)
        .filter(|(t, p)| **t != p.text)
        .count();
    assert!(changed >= 3, "most texts must come back reworded: {out:?}");
}

/// Texts of different lengths, so that requests finish at different passes and waiting ones
/// take their places while others decode.
const VARIED_TEXTS: [&str; 6] = [
    "A man is playing a guitar.",
    "Stocks fell sharply on Monday after the central bank said it would keep rates high.",
    "Hi.",
    "The cat sat on the mat.",
    "Three children are running through a field of tall grass near a river at sunset.",
    "A woman is slicing an onion.",
];

fn paraphrase_prompts(texts: &[&str]) -> Vec<Vec<pteb::ChatMessage>> {
    texts
        .iter()
        .map(|t| pteb::PromptStyle::English.messages(t))
        .collect()
}

/// Each prompt with its sampling, as `complete_batch` takes them.
fn paired<'a>(
    messages: &'a [Vec<pteb::ChatMessage>],
    samplings: &'a [Sampling],
) -> Vec<(&'a [pteb::ChatMessage], &'a Sampling)> {
    messages
        .iter()
        .zip(samplings)
        .map(|(m, s)| (m.as_slice(), s))
        .collect()
}

#[test]
fn requests_decoded_together_answer_as_each_alone() {
    let Some(dir) = smollm2_dir("requests_decoded_together_answer_as_each_alone") else {
        return;
    };
    let messages = paraphrase_prompts(&VARIED_TEXTS);
    let samplings: Vec<Sampling> = (0..messages.len() as u64)
        .map(|i| Sampling {
            temperature: 0.8,
            top_p: 0.9,
            max_tokens: if i == 1 { 5 } else { 24 + 4 * i as usize },
            seed: 1337 + i % 2,
            stop: if i % 3 == 0 {
                vec!["\n\n".into()]
            } else {
                vec![]
            },
        })
        .collect();
    let requests = paired(&messages, &samplings);
    let single = load(&dir).with_lanes(1);
    single.prepare([&messages[0], &messages[1]]).unwrap();
    let alone: Vec<pteb::Completion> = requests
        .iter()
        .map(|(m, s)| single.complete(m, s).unwrap())
        .collect();
    assert!(alone.iter().any(|c| c.truncated) && alone.iter().any(|c| !c.truncated));
    // one lane of three at a time; two lanes of two (each thread decoding its own requests,
    // taken from one queue, so which lane runs a request depends on timing)
    for (lanes, batch) in [(1, 3), (2, 2)] {
        let model = load(&dir).with_lanes(lanes).with_batch(batch);
        assert_eq!(model.lanes(), lanes);
        model.prepare([&messages[0], &messages[1]]).unwrap();
        let together = model.complete_batch(&requests).unwrap();
        // bit-for-bit the same logits on the CPU, so the same tokens
        assert_eq!(together, alone, "{lanes} lanes of {batch}");
    }
}

#[test]
fn retries_join_the_running_batches_and_answer_as_each_asked_alone() {
    let Some(dir) = smollm2_dir("retries_join_the_running_batches_and_answer_as_each_asked_alone")
    else {
        return;
    };
    let messages = paraphrase_prompts(&VARIED_TEXTS[..5]);
    let sampling = |i: usize, k: u32| Sampling {
        temperature: 0.8,
        top_p: 0.9,
        max_tokens: 10 + 3 * i,
        seed: 1337 + 10 * i as u64 + u64::from(k),
        stop: vec![],
    };
    // an arbitrary rule that rejects about two answers in three, at most three attempts
    let retry = |i: usize, k: u32, c: &pteb::Completion| {
        (!c.text.chars().count().is_multiple_of(3) && k < 2).then(|| sampling(i, k + 1))
    };
    let single = load(&dir).with_lanes(1);
    single.prepare([&messages[0], &messages[1]]).unwrap();
    let alone: Vec<(u32, pteb::Completion)> = (0..messages.len())
        .map(|i| {
            let mut k = 0;
            loop {
                let c = single.complete(&messages[i], &sampling(i, k)).unwrap();
                match retry(i, k, &c) {
                    Some(_) => k += 1,
                    None => return (k, c),
                }
            }
        })
        .collect();
    assert!(
        alone.iter().any(|(k, _)| *k > 0),
        "no retry to test: {alone:?}"
    );
    let first: Vec<Sampling> = (0..messages.len()).map(|i| sampling(i, 0)).collect();
    let requests = paired(&messages, &first);
    for (lanes, batch) in [(1, 2), (2, 2)] {
        let model = load(&dir).with_lanes(lanes).with_batch(batch);
        model.prepare([&messages[0], &messages[1]]).unwrap();
        let streamed = model.complete_retrying(&requests, &retry).unwrap();
        assert_eq!(streamed, alone, "{lanes} lanes of {batch}");
    }
}

#[test]
fn pooled_attention_decodes_what_per_request_attention_decodes() {
    let Some(dir) = smollm2_dir("pooled_attention_decodes_what_per_request_attention_decodes")
    else {
        return;
    };
    // Greedy answers: the pooled pass rounds differently in its last bits, which sampling at
    // a temperature would amplify, but the argmax of these prompts holds.
    let messages = paraphrase_prompts(&VARIED_TEXTS[..5]);
    let samplings: Vec<Sampling> = (0..messages.len())
        .map(|i| Sampling {
            temperature: 0.0,
            top_p: 1.0,
            max_tokens: 12 + 6 * i,
            seed: 1337,
            stop: vec![],
        })
        .collect();
    let requests = paired(&messages, &samplings);
    let answers = |pooled: bool| {
        // two slots for five requests (pooled: one lane; per request: two lanes of two): slots
        // are reused, and each starts from the prefix
        let model = load(&dir)
            .with_batch(2)
            .with_lanes(2)
            .with_pooled_attention(pooled);
        model.prepare([&messages[0], &messages[1]]).unwrap();
        model.complete_batch(&requests).unwrap()
    };
    let pooled = answers(true);
    assert_eq!(pooled, answers(false));
    assert!(
        pooled.iter().all(|c| !c.text.trim().is_empty()),
        "{pooled:?}"
    );
}

/// A minimal OpenAI-compatible server on loopback that answers chat completions with the local
/// GGUF model, passing messages, temperature, top_p, max_tokens, seed and stop through.
fn serve(model: GgufChat) -> (String, std::thread::JoinHandle<usize>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        // candle computes on rayon; the client's rayon workers are blocked waiting for this
        // server, so the model gets a pool of its own
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let mut served = 0;
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            reader.read_line(&mut request_line).unwrap();
            let mut length = 0usize;
            loop {
                let mut header = String::new();
                reader.read_line(&mut header).unwrap();
                if header.trim().is_empty() {
                    break;
                }
                if let Some((k, v)) = header.split_once(':') {
                    if k.eq_ignore_ascii_case("content-length") {
                        length = v.trim().parse().unwrap();
                    }
                }
            }
            let mut body = vec![0u8; length];
            reader.read_exact(&mut body).unwrap();
            if request_line.starts_with("POST /shutdown") {
                stream
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                    .unwrap();
                return served;
            }
            if !request_line.starts_with("POST /v1/chat/completions ") {
                let body = r#"{"error":{"message":"not found"}}"#;
                write!(
                    stream,
                    "HTTP/1.1 404 Not Found\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                )
                .unwrap();
                continue;
            }
            let req: serde_json::Value = serde_json::from_slice(&body).unwrap();
            let messages: Vec<pteb::ChatMessage> =
                serde_json::from_value(req["messages"].clone()).unwrap();
            let sampling = Sampling {
                temperature: req["temperature"].as_f64().unwrap(),
                top_p: req["top_p"].as_f64().unwrap(),
                max_tokens: req["max_tokens"].as_u64().unwrap() as usize,
                seed: req["seed"].as_u64().unwrap(),
                stop: serde_json::from_value(req["stop"].clone()).unwrap_or_default(),
            };
            let answer = pool
                .install(|| model.complete(&messages, &sampling))
                .unwrap();
            let reply = serde_json::json!({
                "id": "chatcmpl-test",
                "object": "chat.completion",
                "model": req["model"],
                "choices": [{
                    "index": 0,
                    "message": {"role": "assistant", "content": answer.text},
                    "finish_reason": if answer.truncated { "length" } else { "stop" },
                }],
            })
            .to_string();
            write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
                reply.len()
            )
            .unwrap();
            served += 1;
        }
        served
    });
    (url, handle)
}

#[test]
fn http_backend_against_a_loopback_server_matches_the_local_model() {
    let Some(dir) = smollm2_dir("http_backend_against_a_loopback_server_matches_the_local_model")
    else {
        return;
    };
    let (url, server) = serve(load(&dir));
    let http = pteb::OpenAiChat::new(
        &url,
        "smollm2",
        Some("test-key".into()),
        std::time::Duration::from_secs(120),
    );
    let texts = ["A man is playing a guitar.", "The cat sat on the mat."];
    let (over_http, stats) = Paraphraser::new(Box::new(http), ParaphraseSettings::default(), None)
        .paraphrase_all(&texts, 1337, &|_, _| {})
        .unwrap();
    let (local, _) = Paraphraser::new(Box::new(load(&dir)), ParaphraseSettings::default(), None)
        .paraphrase_all(&texts, 1337, &|_, _| {})
        .unwrap();
    // the server passes every parameter through, so the answers are the local model's
    assert_eq!(over_http, local);
    assert_eq!(stats.generated, 2);

    // errors name the endpoint
    let bad = pteb::OpenAiChat::new(
        &format!("{url}/missing"),
        "m",
        None,
        std::time::Duration::from_secs(5),
    );
    let messages = pteb::PromptStyle::English.messages("x");
    let sampling = Sampling {
        temperature: 0.8,
        top_p: 0.9,
        max_tokens: 4,
        seed: 1,
        stop: vec![],
    };
    let error = ChatModel::complete(&bad, &messages, &sampling)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("/v1/missing/chat/completions") && error.contains("404"),
        "{error}"
    );

    let _ = ureq::post(&format!("{}/shutdown", url.trim_end_matches("/v1"))).send_empty();
    let served = server.join().unwrap();
    assert!(served >= 2, "{served}");
}
