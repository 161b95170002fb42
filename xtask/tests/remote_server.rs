//! Remote embedders against a real OpenAI-compatible embedding server: Infinity (PyPI
//! `infinity-emb`) serving all-MiniLM-L6-v2 from $SAGE_MODELS_DIR on loopback, started here and
//! stopped by PID. `.ci/run` installs it into a virtual environment; elsewhere set
//! SAGE_INFINITY to an `infinity_emb` executable, or the test prints a skip line.
//!
//! Through the server: vectors equal the local candle model's (cos ≥ 0.999); SAGE sensitivity
//! and robustness give the local model's category scores (±0.005); bench-all runs the spec from
//! a config; a fault proxy (429 + Retry-After, 500, dropped connection, stall, cut body, wrong
//! count) changes nothing in the result and costs one retry per fault; a `sage embed` killed
//! with SIGKILL, re-run, sends only what was not stored.

use std::collections::HashSet;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sage_loopback::{forward, Reply, Request, Server};
use serde_json::Value;

use crate::common;
use common::{bench_all_quick, run_sage, sage, sensitivity_only_config, workspace};

/// A running Infinity server, killed by PID when dropped (also when a check panics).
struct Infinity {
    child: Child,
    port: u16,
}

impl Drop for Infinity {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn infinity_binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SAGE_INFINITY").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let home = std::env::var_os("HOME")?;
    let p = PathBuf::from(home).join(".cache/sage-rs/infinity-venv/bin/infinity_emb");
    p.exists().then_some(p)
}

/// Starts Infinity on a free port. A port is free when asked for and bound by the server later;
/// a client connection can take it in between, and then the server exits at once: that start is
/// retried on another port instead of waiting out the deadline.
fn start_infinity(binary: &Path, model: &Path, log: &Path) -> Infinity {
    for _ in 0..3 {
        if let Some(server) = try_start_infinity(binary, model, log) {
            return server;
        }
    }
    panic!(
        "infinity exited at start three times: {}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
}

/// The server once it answers `/health`, or `None` when it exited before that.
fn try_start_infinity(binary: &Path, model: &Path, log: &Path) -> Option<Infinity> {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let log_file = std::fs::File::create(log).unwrap();
    let child = Command::new(binary)
        .args(["v2", "--model-id"])
        .arg(model)
        .args([
            "--served-model-name",
            "all-MiniLM-L6-v2",
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--device",
            "cpu",
            "--url-prefix",
            "/v1",
            "--no-model-warmup",
        ])
        .env("HF_HUB_OFFLINE", "1")
        .env("TRANSFORMERS_OFFLINE", "1")
        .env("DO_NOT_TRACK", "1")
        .env("INFINITY_ANONYMOUS_USAGE_STATS", "0")
        .stdout(log_file.try_clone().unwrap())
        .stderr(log_file)
        .spawn()
        .expect("start infinity_emb");
    let mut server = Infinity { child, port };
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        if healthy(port) {
            return Some(server);
        }
        if server.child.try_wait().unwrap().is_some() {
            return None;
        }
        assert!(
            Instant::now() < deadline,
            "infinity did not come up in 180 s: {}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Whether `GET /health` answers 200.
fn healthy(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let asked =
        stream.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    let mut answer = String::new();
    asked.is_ok()
        && stream.read_to_string(&mut answer).is_ok()
        && answer.starts_with("HTTP/1.1 200")
}

/// 200 texts: the fixture pairs, Unicode, an empty one, and some over the model's 256 tokens.
fn texts() -> Vec<String> {
    let pairs =
        std::fs::read_to_string(workspace().join("data/fixtures/metric_pairs.jsonl")).unwrap();
    let mut base: Vec<String> = Vec::new();
    for line in pairs.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        for key in ["text1", "text2"] {
            base.push(v[key].as_str().unwrap().to_owned());
        }
    }
    base.extend([
        String::new(),
        "Ünïcödé façade — 東京 🚀 naïve café".into(),
        "word ".repeat(400),
    ]);
    (0..200)
        .map(|i| {
            let t = &base[i % base.len()];
            if i < base.len() {
                t.clone()
            } else {
                format!("{t} (variant {i})")
            }
        })
        .collect()
}

fn write_texts(path: &Path, texts: &[String]) {
    let lines: Vec<String> = texts
        .iter()
        .map(|t| serde_json::json!({ "text": t }).to_string())
        .collect();
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

fn read_vectors(path: &Path) -> Vec<Vec<f64>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["embedding"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect()
        })
        .collect()
}

fn cosine(a: &[f64], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f64 = a.iter().map(|x| x * x).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| x * x).sum::<f64>().sqrt();
    if na == 0.0 || nb == 0.0 {
        return f64::from(u8::from(na == nb));
    }
    dot / (na * nb)
}

/// Texts of every request a proxy forwarded, in arrival order.
type Log = Arc<Mutex<Vec<Vec<String>>>>;

fn request_texts(req: &Request) -> Vec<String> {
    req.json()["input"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|t| t.as_str().unwrap_or("").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_real_openai_compatible_server() {
    let what = "remote embedders against a real Infinity server";
    let Some(model) = sage_test_env::model_dir_or_skip("all-MiniLM-L6-v2", what) else {
        return;
    };
    let Some(binary) = infinity_binary() else {
        sage_test_env::skip(
            what,
            "infinity_emb not installed (.ci/run installs it; or set SAGE_INFINITY)",
        );
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let s = scratch.path();
    let server = start_infinity(&binary, &model, &s.join("infinity.log"));
    let base = format!("http://127.0.0.1:{}/v1", server.port);
    let spec = format!("openai:all-MiniLM-L6-v2@{base}");
    let model_arg = model.to_str().unwrap();

    // 1. parity with the local candle model
    let input = s.join("texts.jsonl");
    let texts = texts();
    write_texts(&input, &texts);
    let input_arg = input.to_str().unwrap();
    let (remote_out, local_out) = (s.join("remote.jsonl"), s.join("local.jsonl"));
    let cache = s.join("cache");
    for (m, out) in [(spec.as_str(), &remote_out), (model_arg, &local_out)] {
        run_sage(
            &[
                "embed",
                "--no-cache",
                "--model",
                m,
                "--input",
                input_arg,
                "--output",
                out.to_str().unwrap(),
            ],
            &cache,
        );
    }
    let (remote, local) = (read_vectors(&remote_out), read_vectors(&local_out));
    assert_eq!(remote.len(), texts.len());
    let lowest = remote
        .iter()
        .zip(&local)
        .map(|(a, b)| cosine(a, b))
        .fold(f64::INFINITY, f64::min);
    eprintln!(
        "remote_server: lowest cosine server vs local over {} texts: {lowest:.7}",
        texts.len()
    );
    assert!(lowest >= 0.999, "lowest cosine {lowest}");

    // 2. SAGE categories through the server equal the local model's
    let data = workspace().join("data/fixtures/mirror");
    let data_dir = std::env::var("SAGE_DATA_DIR").unwrap_or_else(|_| data.display().to_string());
    for task in ["sensitivity", "robustness"] {
        let mut scores = Vec::new();
        for m in [spec.as_str(), model_arg] {
            let out = s.join(format!("{task}.json"));
            run_sage(
                &[
                    "run",
                    task,
                    "--similarity",
                    m,
                    "--max-rows",
                    "3",
                    "--data-dir",
                    &data_dir,
                    "--output",
                    out.to_str().unwrap(),
                ],
                &cache,
            );
            let file: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
            // the result file: the report inside the envelope, its spec as given (redacted)
            assert_eq!(file["similarity"]["spec"], sage_redact::redact_url(m));
            let report = &file["report"];
            if m == spec {
                let usage = &report["remote_usage"][0];
                assert_eq!(usage["protocol"], "openai");
                assert_eq!(usage["host"], format!("127.0.0.1:{}", server.port));
                assert_eq!(usage["dimensions"], 384);
                assert!(usage["requests"].as_u64().unwrap() > 0);
            } else {
                assert!(report.get("remote_usage").is_none());
            }
            scores.push(report["score"].as_f64().unwrap());
        }
        eprintln!(
            "remote_server: {task}: server {:.6}, local {:.6}",
            scores[0], scores[1]
        );
        assert!((scores[0] - scores[1]).abs() <= 0.005, "{task}: {scores:?}");
    }

    // 3. the plan of a finished run sends nothing and costs nothing more
    let planned = run_sage(
        &[
            "run",
            "sensitivity",
            "--similarity",
            &spec,
            "--max-rows",
            "3",
            "--data-dir",
            &data_dir,
            "--plan",
        ],
        &cache,
    );
    let plan: Value = serde_json::from_slice(&planned.stdout).unwrap();
    assert_eq!(plan["plan"][0]["texts_to_send"], 0, "{plan}");
    assert!(plan["plan"][0]["cached_texts"].as_u64().unwrap() > 0);

    // 3b. the throughput suite times the model behind the cache, so it sends every text of its
    // sample, cached or not: its plan says so, and the real run sends exactly that
    let throughput = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "throughput",
            "--similarity",
            &spec,
            "--data-dir",
            &data_dir,
            "--option",
            "remote_texts_per_length=4",
            "--option",
            "latency_calls=3",
        ];
        args.extend_from_slice(extra);
        let out = run_sage(&args, &cache);
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let plan = throughput(&["--plan"]);
    let planned_texts = plan["plan"][0]["texts_to_send"].as_u64().unwrap();
    let report = throughput(&[]);
    let lengths = report["lengths"].as_array().unwrap();
    let sample: u64 = lengths.iter().map(|l| l["texts"].as_u64().unwrap()).sum();
    // each length's texts once, then the single-text latency calls
    assert_eq!(planned_texts, sample + 3, "{plan}");
    assert_eq!(
        report["remote_usage"][0]["texts"], planned_texts,
        "{report}"
    );
    assert!(
        report["remote"]["requests"].as_u64().unwrap() > 0,
        "{report}"
    );

    // 4. the same spec in a bench-all config
    let config = sensitivity_only_config(&spec);
    let config_path = s.join("bench.toml");
    std::fs::write(&config_path, config).unwrap();
    let results = s.join("results");
    let bench = bench_all_quick(&config_path, &results, &cache, &[]);
    let log = String::from_utf8_lossy(&bench.stderr);
    assert!(bench.status.success(), "{log}");
    let result: Value = serde_json::from_slice(
        &std::fs::read(results.join("openai:all-MiniLM-L6-v2/sage/sensitivity.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(result["similarity"]["spec"], spec);
    assert!(result["report"]["remote_usage"].is_array());

    // 5. faults between sage and the server: same vectors, one retry per fault
    let clean_out = s.join("clean.jsonl");
    let flags = [
        "--request-batch",
        "16",
        "--concurrency",
        "1",
        "--request-timeout",
        "4",
    ];
    let embed = |m: &str, out: &Path, cache: &Path, extra: &[&str]| {
        let mut args = vec![
            "embed",
            "--model",
            m,
            "--input",
            input_arg,
            "--output",
            out.to_str().unwrap(),
        ];
        args.extend(flags);
        args.extend(extra);
        run_sage(&args, cache)
    };
    embed(&spec, &clean_out, &cache, &["--no-cache"]);
    let upstream = format!("http://127.0.0.1:{}", server.port);
    const FAULTS: [&str; 6] = ["429", "500", "drop", "stall", "truncate", "count"];
    let n = Arc::new(AtomicUsize::new(0));
    let (counter, up) = (n.clone(), upstream.clone());
    let proxy = Server::start(move |req: &Request| {
        // every other request fails, one way after another
        let i = counter.fetch_add(1, Ordering::SeqCst);
        let fault = if i % 2 == 1 { FAULTS.get(i / 2) } else { None };
        match fault.copied() {
            Some("429") => Reply::Respond {
                status: 429,
                headers: vec![("Retry-After".into(), "1".into())],
                body: br#"{"error":{"message":"rate limited"}}"#.to_vec(),
            },
            Some("500") => Reply::json(500, &serde_json::json!({"error": {"message": "boom"}})),
            Some("drop") => Reply::Drop,
            Some("stall") => Reply::Stall(Duration::from_secs(6)),
            Some("truncate") => match forward(&up, req) {
                Reply::Respond { body, .. } => Reply::Truncate {
                    keep: body.len() / 3,
                    body,
                },
                other => other,
            },
            Some("count") => match forward(&up, req) {
                Reply::Respond { body, .. } => {
                    let mut v: Value = serde_json::from_slice(&body).unwrap();
                    v["data"].as_array_mut().unwrap().pop();
                    Reply::json(200, &v)
                }
                other => other,
            },
            _ => forward(&up, req),
        }
    });
    let faulty_out = s.join("faulty.jsonl");
    let through_proxy = format!("openai:all-MiniLM-L6-v2@{}/v1", proxy.url());
    let run = embed(&through_proxy, &faulty_out, &cache, &["--no-cache"]);
    let batches = texts.len().div_ceil(16);
    assert_eq!(
        proxy.requests(),
        batches + FAULTS.len(),
        "each batch once plus one retry per fault"
    );
    let (clean, faulty) = (read_vectors(&clean_out), read_vectors(&faulty_out));
    let worst = clean
        .iter()
        .zip(&faulty)
        .flat_map(|(a, b)| a.iter().zip(b).map(|(x, y)| (x - y).abs()))
        .fold(0.0, f64::max);
    assert_eq!(worst, 0.0, "the faults changed a vector by {worst}");
    let said = String::from_utf8_lossy(&run.stderr);
    assert!(
        said.contains(&format!("({} retried)", FAULTS.len())),
        "{said}"
    );

    // 6. kill -9 mid-run, re-run: only the texts not stored are requested
    let log: Log = Arc::default();
    let slow = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let (record, delay, up) = (log.clone(), slow.clone(), upstream.clone());
    let slow_proxy = Server::start(move |req: &Request| {
        if delay.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(300));
        }
        let reply = forward(&up, req);
        record.lock().unwrap().push(request_texts(req));
        reply
    });
    let spec_slow = format!("openai:all-MiniLM-L6-v2@{}/v1", slow_proxy.url());
    let kill_cache = s.join("kill-cache");
    let killed_out = s.join("killed.jsonl");
    let mut child: Child = Command::new(sage())
        .args([
            "embed", "--model", &spec_slow, "--input", input_arg, "--output",
        ])
        .arg(&killed_out)
        .args(["--request-batch", "8", "--concurrency", "1"])
        .env("SAGE_CACHE_DIR", &kill_cache)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while log.lock().unwrap().len() < 6 {
        assert!(Instant::now() < deadline, "the slow run made no progress");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // a request the proxy was still holding (300 ms) when the client died is logged when it
    // ends: let it end before the log is read, or its texts would count for the re-run
    std::thread::sleep(Duration::from_millis(1500));
    assert!(!killed_out.exists(), "a killed run leaves no output file");
    let first: Vec<Vec<String>> = log.lock().unwrap().drain(..).collect();
    assert!(
        first.len() < texts.len().div_ceil(8),
        "killed before the end"
    );
    slow.store(false, Ordering::SeqCst);
    let resumed_out = s.join("resumed.jsonl");
    run_sage(
        &[
            "embed",
            "--model",
            &spec_slow,
            "--input",
            input_arg,
            "--output",
            resumed_out.to_str().unwrap(),
            "--request-batch",
            "8",
            "--concurrency",
            "1",
        ],
        &kill_cache,
    );
    let second: Vec<String> = log.lock().unwrap().iter().flatten().cloned().collect();
    let answered_before: HashSet<&String> = first.iter().flatten().collect();
    let distinct: HashSet<&String> = texts.iter().collect();
    let resent: Vec<&String> = second
        .iter()
        .filter(|t| answered_before.contains(t))
        .collect();
    // at most the batch answered in the instant of the kill was not stored yet
    assert!(
        resent.len() <= 8,
        "re-sent {} texts answered before the kill",
        resent.len()
    );
    assert_eq!(
        answered_before.len() + second.len() - resent.len(),
        distinct.len(),
        "every distinct text sent, and the re-run sent each once"
    );
    let resumed = read_vectors(&resumed_out);
    let lowest = resumed
        .iter()
        .zip(&local)
        .map(|(a, b)| cosine(a, b))
        .fold(f64::INFINITY, f64::min);
    assert!(lowest >= 0.999, "resumed vectors: lowest cosine {lowest}");
    eprintln!(
        "remote_server: killed after {} requests ({} texts); the re-run sent {} texts ({} again)",
        first.len(),
        answered_before.len(),
        second.len(),
        resent.len()
    );
    drop(server);
}
