//! bench-all's `[remote] max_cost_usd`: a remote job whose planned cost would cross the ceiling is
//! not started (and nothing is sent); under a ceiling it runs and its result records its cost.
//! The remote model is a loopback stand-in that speaks OpenAI's embeddings protocol.

use std::path::Path;

use sage_loopback::{Reply, Request, Server};
use serde_json::{json, Value};

use crate::common;
use common::{bench_all_quick, sensitivity_only_config};

/// OpenAI's answer shape with 8 values per text from a hash of it.
fn stand_in(req: &Request) -> Reply {
    let body = req.json();
    let data: Vec<Value> = body["input"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mut h: u64 = 0xcbf29ce484222325;
            for b in t.as_str().unwrap().bytes() {
                h = (h ^ u64::from(b)).wrapping_mul(0x100000001b3);
            }
            let v: Vec<f64> = (0..8)
                .map(|k| ((h >> (k * 8)) & 0xff) as f64 / 255.0 - 0.5)
                .collect();
            json!({"object": "embedding", "index": i, "embedding": v})
        })
        .collect();
    Reply::json(
        200,
        &json!({"object": "list", "data": data, "usage": {"total_tokens": 1}}),
    )
}

fn bench(config: &str, scratch: &Path, out: &Path) -> std::process::Output {
    let path = scratch.join("bench.toml");
    std::fs::write(&path, config).unwrap();
    bench_all_quick(&path, out, &scratch.join("cache"), &[])
}

#[test]
fn a_job_over_the_cost_ceiling_is_not_started() {
    let server = Server::start(stand_in);
    let spec = format!("openai:stand-in@{}/v1", server.url());
    let config = |ceiling: f64| {
        sensitivity_only_config(&spec)
            .replace("# max_cost_usd = 5.0", &format!("max_cost_usd = {ceiling}"))
            .replace(
                "# \"openai:text-embedding-3-small\" = 0.02",
                "\"openai:stand-in\" = 1000.0",
            )
    };
    let scratch = tempfile::tempdir().unwrap();
    let results = scratch.path().join("results");
    let result = results.join("openai:stand-in/sage/sensitivity.json");

    // the plan of the whole config: every remote job priced, nothing sent, nothing written
    let plan_config = scratch.path().join("plan.toml");
    std::fs::write(&plan_config, config(0.0001)).unwrap();
    let planned = bench_all_quick(
        &plan_config,
        &results,
        &scratch.path().join("cache"),
        &["--plan"],
    );
    let said = String::from_utf8_lossy(&planned.stdout);
    assert!(
        planned.status.success(),
        "{}",
        String::from_utf8_lossy(&planned.stderr)
    );
    assert!(
        said.contains("openai:stand-in sage/sensitivity:") && said.contains("tokens to send"),
        "{said}"
    );
    assert!(said.contains("total: about $"), "{said}");
    assert_eq!(server.requests(), 0);
    assert!(!results.exists());

    let over = bench(&config(0.0001), scratch.path(), &results);
    let log = String::from_utf8_lossy(&over.stderr);
    assert!(
        over.status.success(),
        "stopping at the ceiling is clean: {log}"
    );
    assert!(
        log.contains("not started") && log.contains("max_cost_usd"),
        "{log}"
    );
    assert!(!result.exists(), "no result for a job not started");
    assert_eq!(server.requests(), 0, "planning sends nothing");

    let under = bench(&config(1e6), scratch.path(), &results);
    let log = String::from_utf8_lossy(&under.stderr);
    assert!(under.status.success(), "{log}");
    assert!(server.requests() > 0);
    let written: Value = serde_json::from_slice(&std::fs::read(&result).unwrap()).unwrap();
    let usage = &written["report"]["remote_usage"][0];
    assert_eq!(usage["model"], "stand-in");
    let tokens = usage["tokens"].as_f64().unwrap();
    assert_eq!(usage["cost_usd"].as_f64().unwrap(), tokens * 1000.0 / 1e6);
    assert_eq!(written["similarity"]["spec"], spec);
}
