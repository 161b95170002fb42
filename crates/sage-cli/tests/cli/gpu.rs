//! `--cuda` where this binary cannot use a GPU: one line, exit status 1, nothing written. The
//! CUDA build's own cases (no GPU, an old driver, no driver) are in tests/cuda_without_gpu.rs,
//! run by CI against that build.

use crate::{models_dir, sage, write};

/// The one line of a refused run, with no panic and no trace after it.
fn one_line_refusal(args: &[&str]) -> String {
    let out = sage(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "sage {args:?}: {stderr}");
    assert_eq!(
        stderr.trim_end().lines().count(),
        1,
        "sage {args:?}: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

#[test]
#[cfg(not(feature = "cuda"))]
fn a_cuda_less_build_says_so_in_one_line_wherever_a_gpu_is_asked_for() {
    let line = one_line_refusal(&["gpu"]);
    assert!(
        line.starts_with("sage: error: this sage was built without CUDA")
            && line.contains("--features cuda"),
        "{line}"
    );

    // bench-all asks its sage before anything runs: no download, no job, no results folder
    let dir = tempfile::tempdir().unwrap();
    let mirror = crate::fixtures().join("mirror");
    let config = write(
        &dir,
        "gpu.toml",
        &format!(
            "device = \"cuda\"\ndata_dir = {:?}\n",
            mirror.to_str().unwrap()
        ),
    );
    let out = dir.path().join("results");
    let line = one_line_refusal(&[
        "bench-all",
        "--config",
        &config,
        "--quick",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        line.contains("device = \"cuda\": this sage was built without CUDA"),
        "{line}"
    );
    assert!(!out.exists(), "bench-all wrote {}", out.display());

    let Some(model) = models_dir() else {
        sage_test_env::skip(
            module_path!(),
            "SAGE_MODELS_DIR/all-MiniLM-L6-v2 missing: sage embed --cuda not run",
        );
        return;
    };
    let input = write(&dir, "t.jsonl", "{\"text\":\"A man plays the guitar.\"}\n");
    let embed = |extra: &[&str]| {
        let mut args = vec![
            "embed",
            "--model",
            model.to_str().unwrap(),
            "--input",
            &input,
            "--no-cache",
            "--cuda",
        ];
        args.extend(extra);
        one_line_refusal(&args)
    };
    let line = embed(&[]);
    assert!(line.contains("this sage was built without CUDA"), "{line}");
    // a lower precision is refused for what it is, before any GPU is looked for
    let line = embed(&["--precision", "int8"]);
    assert!(
        line.contains("--precision int8 is for the CPU; on a GPU the model runs in f16"),
        "{line}"
    );
}
