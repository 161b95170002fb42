//! Remote embedders against loopback stand-ins that follow each provider's documented request,
//! response and error bodies, then against faults.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{json, Value};

use sage_core::{Embedder, Role};
use sage_loopback::{
    provider, stand_in_options, stand_in_texts, stand_in_vector, Reply, Request, Server,
    STAND_IN_KEY,
};
use sage_remote::*;

fn base(protocol: Protocol, server: &Server) -> String {
    match protocol {
        Protocol::OpenAi | Protocol::Voyage => format!("{}/v1", server.url()),
        Protocol::Cohere => server.url(),
        Protocol::Gemini => format!("{}/v1beta", server.url()),
    }
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
            stand_in_options(RemoteOptions {
                batch_size: Some(7),
                ..Default::default()
            }),
        )
        .unwrap();
        let texts = stand_in_texts(30);
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        for role in [Role::Plain, Role::Query, Role::Document] {
            let got = embedder.embed_as(&refs, role).unwrap();
            let field = protocol.role_field(role);
            for (i, t) in refs.iter().enumerate() {
                assert_eq!(
                    got.row(i).to_vec(),
                    stand_in_vector(t, field),
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
                ..stand_in_options(Default::default())
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
    let texts = stand_in_texts(40);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let clean_server = Server::start(provider(Protocol::OpenAi, "m"));
    let options = || {
        stand_in_options(RemoteOptions {
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
        stand_in_options(RemoteOptions {
            max_retries: 2,
            ..Default::default()
        }),
    )
    .unwrap();
    let e = embedder.embed(&["a"]).unwrap_err().to_string();
    assert!(e.contains("openai at 127.0.0.1:"), "{e}");
    assert!(e.contains("HTTP 503") && e.contains("overloaded"), "{e}");
    assert!(e.contains("after 3 attempts"), "{e}");
    for secret in [STAND_IN_KEY, "hunter22"] {
        assert!(!e.contains(secret), "{e}");
    }
    assert!(!format!("{embedder:?}").contains(STAND_IN_KEY));
    assert_eq!(server.requests(), 3);
    // a client error is not retried
    let bad =
        Server::start(|_: &Request| Reply::json(400, &json!({"error": {"message": "bad input"}})));
    let embedder = RemoteEmbedder::new(
        RemoteSpec::parse(&format!("openai:m@{}/v1", bad.url())).unwrap(),
        stand_in_options(RemoteOptions::default()),
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
fn openai_inputs_over_the_limit_are_cut_and_counted() {
    let server = Server::start(provider(Protocol::OpenAi, "m"));
    let embedder = RemoteEmbedder::new(
        RemoteSpec::parse(&format!("openai:m@{}/v1", server.url())).unwrap(),
        stand_in_options(Default::default()),
    )
    .unwrap();
    let long = "word ".repeat(9000);
    let got = embedder.embed(&[&long, "short"]).unwrap();
    let cut = sage_tokens::truncate(&long, 8192);
    assert_eq!(got.row(0).to_vec(), stand_in_vector(&cut, None));
    assert_eq!(embedder.remote_usage().unwrap().truncated, 1);
}
