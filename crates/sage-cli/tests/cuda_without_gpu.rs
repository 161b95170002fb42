//! The CUDA build of `sage` on a machine without a GPU: every way the GPU can be missing ends
//! in one line that says which, never a panic, and the CPU work still runs.
//!
//! CI builds `sage` with `--features cuda` against the CUDA toolkit from NVIDIA's wheels
//! (.ci/cuda/install.sh) and points these tests at it:
//!   SAGE_CUDA_SAGE   the CUDA-built `sage`
//!   SAGE_CUDA_ROOT   the toolkit folder: `lib/` holds the CUDA libraries the build links,
//!                    `lib/stubs/` the stand-in driver `libcuda.so.1` (.ci/cuda/fake_libcuda.py),
//!                    whose answers come from FAKE_CUDA_* variables
//! Without them (a user's machine, the README's test command) the tests say they skipped.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

struct CudaBuild {
    sage: PathBuf,
    root: PathBuf,
}

fn cuda_build_or_skip(what: &str) -> Option<CudaBuild> {
    let sage = sage_test_env::env_dir("SAGE_CUDA_SAGE");
    let root = sage_test_env::env_dir("SAGE_CUDA_ROOT");
    match (sage, root) {
        (Some(sage), Some(root)) => Some(CudaBuild { sage, root }),
        _ => {
            sage_test_env::skip(
                what,
                "SAGE_CUDA_SAGE and SAGE_CUDA_ROOT unset: the CUDA build's GPU-less runs are CI's \
                 (.ci/run builds it)",
            );
            None
        }
    }
}

/// How the machine looks to the CUDA build.
enum Driver<'a> {
    /// No NVIDIA driver: no `libcuda.so.1` anywhere on the library path.
    Absent,
    /// The stand-in driver, answering with these FAKE_CUDA_* values.
    Fake(&'a [(&'a str, &'a str)]),
}

impl CudaBuild {
    fn run(&self, program: &Path, driver: Driver, args: &[&str]) -> Output {
        let lib = self.root.join("lib");
        let library_path = match driver {
            Driver::Absent => lib.display().to_string(),
            Driver::Fake(_) => format!("{}:{}", lib.join("stubs").display(), lib.display()),
        };
        let mut command = Command::new(program);
        command
            .args(args)
            .env("LD_LIBRARY_PATH", library_path)
            .env_remove("CUDA_VISIBLE_DEVICES");
        if let Driver::Fake(answers) = driver {
            command.envs(answers.iter().copied());
        }
        command.output().expect("sage starts")
    }

    /// Runs the CUDA build and returns its one line of refusal.
    fn refused(&self, driver: Driver, args: &[&str]) -> String {
        refusal(&self.run(&self.sage, driver, args), args)
    }
}

fn refusal(out: &Output, args: &[&str]) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{args:?} ran: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    stderr.trim_end().to_owned()
}

/// Whether the system loader finds a real NVIDIA driver here (a GPU box), so that "no driver"
/// cannot be made by the library path alone.
fn system_driver() -> bool {
    [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/lib/x86_64-linux-gnu",
    ]
    .iter()
    .any(|dir| Path::new(dir).join("libcuda.so.1").exists())
}

const NO_GPU: &[(&str, &str)] = &[("FAKE_CUDA_INIT", "100")];
const OLD_DRIVER: &[(&str, &str)] = &[
    ("FAKE_CUDA_INIT", "0"),
    ("FAKE_CUDA_DRIVER_VERSION", "12040"),
    ("FAKE_CUDA_DEVICES", "1"),
];

#[test]
fn the_cuda_build_without_a_gpu_says_why_in_one_line() {
    let Some(cuda) = cuda_build_or_skip("the_cuda_build_without_a_gpu_says_why_in_one_line") else {
        return;
    };
    // a driver that sees no GPU (a GPU box's driver in a container given no GPU)
    let line = cuda.refused(Driver::Fake(NO_GPU), &["gpu"]);
    assert!(
        line.starts_with("sage: error: no CUDA GPU: the NVIDIA driver (CUDA 13.0) sees no device (CUDA_ERROR_NO_DEVICE)"),
        "{line}"
    );
    // a driver older than the libraries: named before anything else is tried
    let line = cuda.refused(Driver::Fake(OLD_DRIVER), &["gpu"]);
    assert!(
        line.contains(
            "the NVIDIA driver supports CUDA 12.4, older than this sage's CUDA 13.0 libraries"
        ),
        "{line}"
    );
    // no driver at all: the dynamic loader refuses the binary before it runs, in its one line
    if system_driver() {
        sage_test_env::skip(
            "the_cuda_build_without_a_gpu_says_why_in_one_line",
            "this machine has an NVIDIA driver: the driver-less start not run",
        );
    } else {
        let line = cuda.refused(Driver::Absent, &["gpu"]);
        assert!(line.contains("libcuda.so.1"), "{line}");
    }

    // the CPU work of the CUDA build runs where the driver is, GPU or not
    let dir = tempfile::tempdir().unwrap();
    let pairs = dir.path().join("pairs.jsonl");
    std::fs::write(&pairs, "{\"text1\":\"a cat\",\"text2\":\"a cat sat\"}\n").unwrap();
    let out = cuda.run(
        &cuda.sage,
        Driver::Fake(NO_GPU),
        &[
            "score",
            "--metric",
            "levenshtein",
            "--input",
            pairs.to_str().unwrap(),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"score\""));
}

/// bench-all with `device = "cuda"` asks `sage gpu` first: the CUDA build's own bench-all, and
/// a CPU `sage bench-all --sage CUDA-BUILD` (the binary it drives cannot even start without a
/// driver), end in one line naming the cause, before any job.
#[test]
fn bench_all_on_cuda_without_a_gpu_stops_before_any_job() {
    let Some(cuda) = cuda_build_or_skip("bench_all_on_cuda_without_a_gpu_stops_before_any_job")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("gpu.toml");
    let mirror = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/fixtures/mirror");
    std::fs::write(
        &config,
        format!(
            "device = \"cuda\"\ndata_dir = {:?}\n",
            mirror.to_str().unwrap()
        ),
    )
    .unwrap();
    let out = dir.path().join("results");
    let bench = |sage: &Path, driver: Driver, extra: &[&str]| {
        let mut args = vec![
            "bench-all",
            "--config",
            config.to_str().unwrap(),
            "--quick",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend(extra);
        refusal(&cuda.run(sage, driver, &args), &args)
    };
    let line = bench(&cuda.sage, Driver::Fake(NO_GPU), &[]);
    assert!(line.contains("device = \"cuda\": no CUDA GPU"), "{line}");
    let line = bench(&cuda.sage, Driver::Fake(OLD_DRIVER), &[]);
    assert!(
        line.contains("device = \"cuda\": the NVIDIA driver supports CUDA 12.4"),
        "{line}"
    );
    if !system_driver() {
        let cpu_sage = Path::new(env!("CARGO_BIN_EXE_sage"));
        let cuda_sage = cuda.sage.to_str().unwrap();
        let line = bench(cpu_sage, Driver::Absent, &["--sage", cuda_sage]);
        assert!(
            line.contains(
                "device = \"cuda\": the NVIDIA driver is not installed here (libcuda.so.1 not found)"
            ),
            "{line}"
        );
    }
    assert!(!out.exists(), "bench-all wrote {}", out.display());
}

/// What can only be refused on a GPU is refused for its reason there too, with a driver that
/// would have let the GPU open: a lower precision is the CPU's.
#[test]
fn the_cuda_build_refuses_a_lower_precision_on_the_gpu() {
    let Some(cuda) = cuda_build_or_skip("the_cuda_build_refuses_a_lower_precision_on_the_gpu")
    else {
        return;
    };
    let Some(model) = sage_test_env::model_dir_or_skip(
        "all-MiniLM-L6-v2",
        "the_cuda_build_refuses_a_lower_precision_on_the_gpu",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("t.jsonl");
    std::fs::write(&input, "{\"text\":\"A man plays the guitar.\"}\n").unwrap();
    let model = model.to_str().unwrap();
    let input = input.to_str().unwrap();
    let embed_args = |extra: &[&'static str]| {
        let mut args = vec!["embed", "--model", model, "--input", input, "--no-cache"];
        args.extend(extra);
        args
    };
    let embed = |driver: Driver, extra: &[&'static str]| {
        let mut args = embed_args(&["--cuda"]);
        args.extend(extra);
        cuda.refused(driver, &args)
    };
    let line = embed(Driver::Fake(NO_GPU), &["--precision", "int8"]);
    assert!(
        line.contains("--precision int8 is for the CPU; on a GPU the model runs in f16"),
        "{line}"
    );
    let line = embed(Driver::Fake(NO_GPU), &[]);
    assert!(line.contains("no CUDA GPU"), "{line}");
    // on the CPU the same binary embeds
    let out = cuda.run(&cuda.sage, Driver::Fake(NO_GPU), &embed_args(&[]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
