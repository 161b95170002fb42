//! Remote embedders against loopback stand-ins that follow each provider's documented request,
//! response and error bodies, then against faults.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use super::loopback::{Reply, Request, Server};
use super::*;
use crate::CachedEmbedder;

const KEY: &str = "sk-test-0123456789";

/// The stand-in's vector of `text` in `role_field`: 6 values from a hash, so any mix-up of
/// texts, order or role shows.
fn vector_of(text: &str, role_field: Option<&str>) -> Vec<f32> {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in text.bytes().chain(role_field.unwrap_or("").bytes()) {
        h = (h ^ u64::from(b)).wrapping_mul(0x100000001b3);
    }
    (0..6)
        .map(|i| ((h >> (i * 8)) & 0xff) as f32 / 255.0 - 0.5)
        .collect()
}

/// Texts and the role field of a request body, per protocol.
fn read_body(protocol: Protocol, body: &Value) -> (Vec<String>, Option<String>) {
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap().to_owned())
            .collect()
    };
    match protocol {
        Protocol::OpenAi => (strings(&body["input"]), None),
        Protocol::Voyage => (
            strings(&body["input"]),
            body.get("input_type")
                .and_then(Value::as_str)
                .map(String::from),
        ),
        Protocol::Cohere => (
            strings(&body["texts"]),
            body["input_type"].as_str().map(String::from),
        ),
        Protocol::Gemini => {
            let requests = body["requests"].as_array().unwrap();
            let texts = requests
                .iter()
                .map(|r| {
                    r["content"]["parts"][0]["text"]
                        .as_str()
                        .unwrap()
                        .to_owned()
                })
                .collect();
            (texts, requests[0]["taskType"].as_str().map(String::from))
        }
    }
}

/// A provider stand-in: checks the path and key header as documented, answers with
/// [`vector_of`] in the provider's response shape (OpenAI-style lists in reverse index order,
/// to prove placement by `index`), and with the provider's error body on a wrong key.
fn provider(protocol: Protocol, model: &'static str) -> impl Fn(&Request) -> Reply + Send + Sync {
    move |req: &Request| {
        let expected_path = match protocol {
            Protocol::OpenAi | Protocol::Voyage => "/v1/embeddings".to_owned(),
            Protocol::Cohere => "/v2/embed".to_owned(),
            Protocol::Gemini => format!("/v1beta/models/{model}:batchEmbedContents"),
        };
        assert_eq!(req.method, "POST");
        assert_eq!(req.path, expected_path);
        let key_ok = match protocol {
            Protocol::Gemini => req.header("x-goog-api-key") == Some(KEY),
            _ => req.header("authorization") == Some(&format!("Bearer {KEY}")),
        };
        if !key_ok {
            let body = match protocol {
                Protocol::OpenAi => {
                    json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}})
                }
                Protocol::Voyage => json!({"detail": "Provided API key is invalid."}),
                Protocol::Cohere => json!({"message": "invalid api token"}),
                Protocol::Gemini => {
                    json!({"error": {"code": 400, "message": "API key not valid.", "status": "INVALID_ARGUMENT"}})
                }
            };
            return Reply::json(
                if protocol == Protocol::Gemini {
                    400
                } else {
                    401
                },
                &body,
            );
        }
        let body = req.json();
        let (texts, role) = read_body(protocol, &body);
        let vectors: Vec<Vec<f32>> = texts
            .iter()
            .map(|t| vector_of(t, role.as_deref()))
            .collect();
        let answer = match protocol {
            Protocol::OpenAi | Protocol::Voyage => {
                let data: Vec<Value> = vectors
                    .iter()
                    .enumerate()
                    .rev()
                    .map(|(i, v)| json!({"object": "embedding", "index": i, "embedding": v}))
                    .collect();
                json!({"object": "list", "data": data, "model": model,
                       "usage": {"prompt_tokens": texts.len() * 3, "total_tokens": texts.len() * 3}})
            }
            Protocol::Cohere => {
                json!({"id": "abc", "embeddings": {"float": vectors}, "texts": texts,
                                        "meta": {"billed_units": {"input_tokens": texts.len() * 3}}})
            }
            Protocol::Gemini => {
                json!({"embeddings": vectors.iter().map(|v| json!({"values": v})).collect::<Vec<_>>()})
            }
        };
        Reply::json(200, &answer)
    }
}

fn base(protocol: Protocol, server: &Server) -> String {
    match protocol {
        Protocol::OpenAi | Protocol::Voyage => format!("{}/v1", server.url()),
        Protocol::Cohere => server.url(),
        Protocol::Gemini => format!("{}/v1beta", server.url()),
    }
}

fn quick(options: RemoteOptions) -> RemoteOptions {
    RemoteOptions {
        api_key: Some(KEY.into()),
        timeout: Duration::from_millis(1500),
        initial_backoff: Duration::from_millis(5),
        max_backoff: Duration::from_millis(40),
        ..options
    }
}

fn texts(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("text number {i} ünï")).collect()
}

#[test]
fn specs_parse_and_never_show_a_password() {
    let s = RemoteSpec::parse("openai:all-MiniLM-L6-v2@http://u:pw@127.0.0.1:7997/v1/").unwrap();
    assert_eq!(s.protocol, Protocol::OpenAi);
    assert_eq!(s.model, "all-MiniLM-L6-v2");
    assert_eq!(s.base_url, "http://u:pw@127.0.0.1:7997/v1");
    assert!(s.custom_base);
    assert_eq!(
        s.display(),
        "openai:all-MiniLM-L6-v2@http://u:***@127.0.0.1:7997/v1"
    );
    let c = RemoteSpec::parse("cohere:embed-v4.0").unwrap();
    assert_eq!(c.base_url, "https://api.cohere.com");
    assert!(!c.custom_base);
    assert_eq!(default_price(&c), Some(0.12));
    for bad in ["openai:", "bogus:model", "openai:m@ftp://x", "nocolon"] {
        assert!(RemoteSpec::parse(bad).is_err(), "{bad}");
    }
    assert!(RemoteSpec::looks_remote("gemini:gemini-embedding-001"));
    assert!(!RemoteSpec::looks_remote(
        "sentence-transformers/all-MiniLM-L6-v2"
    ));
    assert!(!RemoteSpec::looks_remote("http://host/x"));
}

#[test]
fn a_provider_endpoint_without_a_key_fails_before_sending() {
    let spec = RemoteSpec::parse("voyage:voyage-3-large").unwrap();
    let options = RemoteOptions {
        key_variable: Some("SAGE_TEST_SURELY_UNSET_KEY".into()),
        ..RemoteOptions::default()
    };
    let e = RemoteEmbedder::new(spec, options).unwrap_err().to_string();
    assert!(e.contains("SAGE_TEST_SURELY_UNSET_KEY"), "{e}");
}

#[test]
fn every_protocol_speaks_its_documented_wire_format() {
    for (protocol, model) in [
        (Protocol::OpenAi, "text-embedding-3-small"),
        (Protocol::Voyage, "voyage-3-large"),
        (Protocol::Cohere, "embed-v4.0"),
        (Protocol::Gemini, "gemini-embedding-001"),
    ] {
        let server = Server::start(provider(protocol, model));
        let spec = RemoteSpec::parse(&format!(
            "{}:{model}@{}",
            protocol.name(),
            base(protocol, &server)
        ))
        .unwrap();
        // batches of 7: several requests, several in flight
        let embedder = RemoteEmbedder::new(
            spec,
            quick(RemoteOptions {
                batch_size: Some(7),
                ..Default::default()
            }),
        )
        .unwrap();
        let texts = texts(30);
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        for role in [Role::Plain, Role::Query, Role::Document] {
            let got = embedder.embed_as(&refs, role).unwrap();
            let field = protocol.role_field(role);
            for (i, t) in refs.iter().enumerate() {
                assert_eq!(
                    got.row(i).to_vec(),
                    vector_of(t, field),
                    "{protocol:?} {role:?} {i}"
                );
            }
        }
        assert_eq!(
            server.requests(),
            3 * 5,
            "{protocol:?}: 30 texts in batches of 7, 3 roles"
        );
        let usage = embedder.remote_usage().unwrap();
        assert_eq!(usage.texts, 90);
        assert_eq!(usage.dimensions, 6);
        assert_eq!(usage.requests, 15);
        assert_eq!(usage.retries, 0);
        if protocol != Protocol::Gemini {
            assert_eq!(
                usage.tokens, 270,
                "{protocol:?}: the server's own token count"
            );
        }
        assert_eq!(
            embedder.role_variant(Role::Plain).is_some(),
            protocol.role_field(Role::Plain).is_some()
        );

        // a wrong key: the provider's reason and status, never the key
        let spec = RemoteSpec::parse(&format!(
            "{}:{model}@{}",
            protocol.name(),
            base(protocol, &server)
        ))
        .unwrap();
        let wrong = RemoteEmbedder::new(
            spec,
            RemoteOptions {
                api_key: Some("sk-wrong-987654321".into()),
                ..quick(Default::default())
            },
        )
        .unwrap();
        let e = wrong.embed(&["x"]).unwrap_err().to_string();
        assert!(e.contains("HTTP 40"), "{e}");
        assert!(!e.contains("sk-wrong"), "{e}");
        assert!(e.contains(protocol.name()), "{e}");
    }
}

/// A stand-in whose answers fail in every documented and undocumented way, by request number.
fn faulty(
    good: impl Fn(&Request) -> Reply + Send + Sync,
    plan: &'static [&'static str],
) -> impl Fn(&Request) -> Reply + Send + Sync {
    let n = AtomicUsize::new(0);
    move |req: &Request| {
        let i = n.fetch_add(1, Ordering::SeqCst);
        match plan.get(i).copied().unwrap_or("ok") {
            "429" => Reply::Respond {
                status: 429,
                headers: vec![("Retry-After".into(), "0".into())],
                body: br#"{"error":{"message":"Rate limit reached"}}"#.to_vec(),
            },
            "500" => Reply::json(500, &json!({"error": {"message": "internal"}})),
            "drop" => Reply::Drop,
            "stall" => Reply::Stall(Duration::from_secs(3)),
            "truncate" => match good(req) {
                Reply::Respond { body, .. } => Reply::Truncate {
                    keep: body.len() / 2,
                    body,
                },
                other => other,
            },
            "count" => match good(req) {
                Reply::Respond { body, .. } => {
                    let mut v: Value = serde_json::from_slice(&body).unwrap();
                    v["data"].as_array_mut().unwrap().pop();
                    Reply::json(200, &v)
                }
                other => other,
            },
            _ => good(req),
        }
    }
}

#[test]
fn faults_are_retried_and_the_result_is_the_clean_one() {
    let texts = texts(40);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let clean_server = Server::start(provider(Protocol::OpenAi, "m"));
    let options = || {
        quick(RemoteOptions {
            batch_size: Some(8),
            concurrency: 2,
            ..Default::default()
        })
    };
    let clean = RemoteEmbedder::new(
        RemoteSpec::parse(&format!("openai:m@{}/v1", clean_server.url())).unwrap(),
        options(),
    )
    .unwrap()
    .embed(&refs)
    .unwrap();

    const PLAN: &[&str] = &[
        "429", "500", "drop", "stall", "truncate", "count", "ok", "500",
    ];
    let server = Server::start(faulty(provider(Protocol::OpenAi, "m"), PLAN));
    let embedder = RemoteEmbedder::new(
        RemoteSpec::parse(&format!("openai:m@{}/v1", server.url())).unwrap(),
        options(),
    )
    .unwrap();
    let got = embedder.embed(&refs).unwrap();
    assert_eq!(got, clean, "same vectors as the clean run");
    let faults = PLAN.iter().filter(|p| **p != "ok").count();
    assert_eq!(
        server.requests(),
        5 + faults,
        "each batch once, plus one retry per fault"
    );
    let usage = embedder.remote_usage().unwrap();
    assert_eq!(usage.retries as usize, faults);
    assert_eq!(usage.texts, 40);
}

#[test]
fn the_last_failure_names_provider_status_and_reason_and_no_secret() {
    let server = Server::start(|_: &Request| {
        Reply::json(
            503,
            &json!({"error": {"message": "overloaded; you sent Bearer sk-test-0123456789"}}),
        )
    });
    let url = server.url().replace("http://", "http://alice:hunter22@");
    let embedder = RemoteEmbedder::new(
        RemoteSpec::parse(&format!("openai:m@{url}/v1")).unwrap(),
        quick(RemoteOptions {
            max_retries: 2,
            ..Default::default()
        }),
    )
    .unwrap();
    let e = embedder.embed(&["a"]).unwrap_err().to_string();
    assert!(e.contains("openai at 127.0.0.1:"), "{e}");
    assert!(e.contains("HTTP 503") && e.contains("overloaded"), "{e}");
    assert!(e.contains("after 3 attempts"), "{e}");
    for secret in [KEY, "hunter22"] {
        assert!(!e.contains(secret), "{e}");
    }
    assert!(!format!("{embedder:?}").contains(KEY));
    assert_eq!(server.requests(), 3);
    // a client error is not retried
    let bad =
        Server::start(|_: &Request| Reply::json(400, &json!({"error": {"message": "bad input"}})));
    let embedder = RemoteEmbedder::new(
        RemoteSpec::parse(&format!("openai:m@{}/v1", bad.url())).unwrap(),
        quick(RemoteOptions::default()),
    )
    .unwrap();
    assert!(embedder
        .embed(&["a"])
        .unwrap_err()
        .to_string()
        .contains("bad input"));
    assert_eq!(bad.requests(), 1);
}

#[test]
fn every_answer_is_cached_at_once_and_a_rerun_sends_only_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("embeddings.redb");
    let texts = texts(50);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = seen.clone();
    let good = provider(Protocol::Cohere, "embed-v4.0");
    // the server's host is part of the identity, so the re-run talks to the same server: in
    // its first life the fourth request fails for good, after three batches of 10 were answered
    let failing = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let (fail, n) = (failing.clone(), AtomicUsize::new(0));
    let server = Server::start(move |req: &Request| {
        if fail.load(Ordering::SeqCst) && n.fetch_add(1, Ordering::SeqCst) >= 3 {
            return Reply::json(400, &json!({"message": "quota exceeded"}));
        }
        log.lock()
            .unwrap()
            .extend(read_body(Protocol::Cohere, &req.json()).0);
        good(req)
    });
    let open = || {
        let spec = RemoteSpec::parse(&format!("cohere:embed-v4.0@{}", server.url())).unwrap();
        let options = quick(RemoteOptions {
            batch_size: Some(10),
            concurrency: 1,
            ..Default::default()
        });
        CachedEmbedder::open(RemoteEmbedder::new(spec, options).unwrap(), &path).unwrap()
    };
    {
        let cached = open();
        let e = cached.embed_as(&refs, Role::Query).unwrap_err().to_string();
        assert!(e.contains("quota exceeded"), "{e}");
        assert_eq!(
            cached.stats().misses,
            30,
            "three answers stored before the failure"
        );
    }
    assert_eq!(*seen.lock().unwrap(), texts[..30].to_vec());
    seen.lock().unwrap().clear();
    failing.store(false, Ordering::SeqCst);
    let cached = open();
    let got = cached.embed_as(&refs, Role::Query).unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        texts[30..].to_vec(),
        "only the missing texts"
    );
    for (i, t) in refs.iter().enumerate() {
        assert_eq!(got.row(i).to_vec(), vector_of(t, Some("search_query")));
    }
    // a finished run, re-run, sends nothing; another role is another key
    let before = server.requests();
    cached.embed_as(&refs, Role::Query).unwrap();
    assert_eq!(server.requests(), before);
    cached.embed_as(&refs[..3], Role::Document).unwrap();
    assert_eq!(server.requests(), before + 1);
}

#[test]
fn a_plan_counts_what_would_be_sent_and_sends_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("embeddings.redb");
    let server = Server::start(provider(Protocol::OpenAi, "text-embedding-3-small"));
    let spec = || {
        RemoteSpec::parse(&format!(
            "openai:text-embedding-3-small@{}/v1",
            server.url()
        ))
        .unwrap()
    };
    let texts = texts(12);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    {
        let real = CachedEmbedder::open(
            RemoteEmbedder::new(spec(), quick(Default::default())).unwrap(),
            &path,
        )
        .unwrap();
        real.embed(&refs[..4]).unwrap();
    }
    let sent = server.requests();
    let remote = RemoteEmbedder::new(spec(), quick(Default::default())).unwrap();
    let planner = CachedEmbedder::planning(
        remote,
        &path,
        Box::new(|t: &str| sage_tokens::count(t) as u64),
    )
    .unwrap();
    let v = planner.embed(&refs).unwrap();
    planner.embed(&refs).unwrap();
    assert_eq!(v.nrows(), 12);
    assert_eq!(server.requests(), sent, "planning sends nothing");
    let plan = planner.plan().unwrap();
    assert_eq!(plan.cached_texts, 4);
    assert_eq!(plan.texts_to_send, 8);
    let tokens: u64 = refs[4..].iter().map(|t| sage_tokens::count(t) as u64).sum();
    assert_eq!(plan.tokens_to_send, tokens);
    // a caller that bypasses the cache (the throughput suite) would send every text it gives,
    // cached and repeated ones too: each counts, and still nothing is sent
    let bypass = planner.uncached().expect("a planning cache's bypass");
    assert!(
        bypass.remote_usage().is_some(),
        "it is told the model is remote"
    );
    let stand_ins = bypass.embed(&[refs[0], refs[0], refs[5]]).unwrap();
    assert_eq!(stand_ins.dim(), (3, v.ncols()));
    assert_eq!(stand_ins.row(0), stand_ins.row(1));
    assert_ne!(stand_ins.row(0), stand_ins.row(2));
    assert_eq!(server.requests(), sent, "planning sends nothing");
    let plan = planner.plan().unwrap();
    assert_eq!((plan.cached_texts, plan.texts_to_send), (4, 8 + 3));
    let bypassed: u64 = [refs[0], refs[0], refs[5]]
        .iter()
        .map(|t| sage_tokens::count(t) as u64)
        .sum();
    assert_eq!(plan.tokens_to_send, tokens + bypassed);
}

#[test]
fn openai_inputs_over_the_limit_are_cut_and_counted() {
    let server = Server::start(provider(Protocol::OpenAi, "m"));
    let embedder = RemoteEmbedder::new(
        RemoteSpec::parse(&format!("openai:m@{}/v1", server.url())).unwrap(),
        quick(Default::default()),
    )
    .unwrap();
    let long = "word ".repeat(9000);
    let got = embedder.embed(&[&long, "short"]).unwrap();
    let cut = sage_tokens::truncate(&long, 8192);
    assert_eq!(got.row(0).to_vec(), vector_of(&cut, None));
    assert_eq!(embedder.remote_usage().unwrap().truncated, 1);
}
