//! The embedding cache in front of a remote model: every answer stored as it arrives, so a
//! killed run sends only what was not answered; a plan counts what would be sent and sends
//! nothing. Against the provider stand-ins of sage-loopback's server.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use sage_core::{Embedder, Role};
use sage_embed::CachedEmbedder;
use sage_loopback::{
    provider, request_texts, stand_in_options, stand_in_texts, stand_in_vector, Reply, Request,
    Server,
};
use sage_remote::{Protocol, RemoteEmbedder, RemoteOptions, RemoteSpec};
use serde_json::json;

#[test]
fn every_answer_is_cached_at_once_and_a_rerun_sends_only_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("embeddings.redb");
    let texts = stand_in_texts(50);
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
            .extend(request_texts(Protocol::Cohere, &req.json()).0);
        good(req)
    });
    let open = || {
        let spec = RemoteSpec::parse(&format!("cohere:embed-v4.0@{}", server.url())).unwrap();
        let options = stand_in_options(RemoteOptions {
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
        assert_eq!(
            got.row(i).to_vec(),
            stand_in_vector(t, Some("search_query"))
        );
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
    let texts = stand_in_texts(12);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    {
        let real = CachedEmbedder::open(
            RemoteEmbedder::new(spec(), stand_in_options(Default::default())).unwrap(),
            &path,
        )
        .unwrap();
        real.embed(&refs[..4]).unwrap();
    }
    let sent = server.requests();
    let remote = RemoteEmbedder::new(spec(), stand_in_options(Default::default())).unwrap();
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
