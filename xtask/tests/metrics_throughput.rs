//! `cargo xtask metrics-throughput` end to end, once each side (timings are not asserted: they
//! are what the command reports): the table, the result file, and, when the Python references
//! are installed, their scores equal to sage's on the same pairs.

use std::process::Command;

use serde_json::Value;

use crate::common;
use common::{sage, workspace};

#[test]
fn times_every_metric_and_compares_scores_with_the_python_references() {
    let out = tempfile::tempdir().unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .current_dir(workspace())
        .args(["metrics-throughput", "--repeat", "1", "--sage"])
        .arg(sage())
        .arg("--out")
        .arg(out.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    let report: Value =
        serde_json::from_slice(&std::fs::read(out.path().join("throughput/metrics.json")).unwrap())
            .unwrap();
    let results = report["results"].as_array().unwrap();
    let metrics: Vec<&str> = results
        .iter()
        .map(|r| r["metric"].as_str().unwrap())
        .collect();
    assert_eq!(metrics, ["levenshtein", "rouge", "jaccard", "bm25"]);
    for row in results {
        assert!(
            row["sage_pairs_per_second"].as_f64().unwrap() > 0.0,
            "{row}"
        );
        assert!(stderr.contains(&format!("| {} |", row["metric"].as_str().unwrap())));
    }
    if std::env::var_os("SAGE_DATA_DIR").is_some() {
        // the CNN/DailyMail pairs: three per article of the sample
        assert!(results[0]["pairs"].as_u64().unwrap() >= 300, "{report}");
    }
    if stderr.contains("Python references skipped") {
        sage_test_env::skip(
            module_path!(),
            "no Python with the metric references (SAGE_METRICS_PYTHON; .ci/run installs one): \
             sage timed alone",
        );
        return;
    }
    for row in results {
        assert!(
            row["python_pairs_per_second"].as_f64().unwrap() > 0.0,
            "{row}"
        );
        // sage writes f32 scores
        let difference = row["max_abs_score_difference"].as_f64().unwrap();
        assert!(difference < 1e-6, "{}: {difference}", row["metric"]);
    }
}
