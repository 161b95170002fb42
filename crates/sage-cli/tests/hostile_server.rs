//! The `sage` binary against an OpenAI-compatible embedding server that answers badly on
//! purpose (`tests/hostile_server.py`, standard-library Python, started here on loopback and
//! stopped by PID): oversized and endless answers, a gzip bomb, a redirect to another host, a
//! `Retry-After` of days, a model whose width changes between runs, an error body that carries
//! terminal escapes, fake sage lines and near-copies of the key. Each once failed (issue 44):
//! 5 GB resident and aborts, an answer taken from a GET to another host, hours of silent sleep, a
//! cache broken for good, escapes and a near-key printed as sent.
//!
//! Peak memory is the child's own `ru_maxrss` (wait4), so parallel tests do not blur it.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

const SAGE: &str = env!("CARGO_BIN_EXE_sage");
const KEY: &str = "sk-test-0123456789abcdefXYZ";

/// Peak resident memory a run of `sage embed` may reach whatever the server sends (an unbounded
/// parse of the answers below took 5 GB).
const PEAK_LIMIT_KB: i64 = 300 * 1024;

/// A hostile server process; killed by PID when dropped.
struct Hostile {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Hostile {
    /// `hostile_server.py MODE ARG`, or `None` with a skip line when python3 is missing.
    fn start(dir: &Path, mode: &str, arg: &str) -> Option<Hostile> {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hostile_server.py");
        let log = dir.join(format!("requests-{mode}-{}.log", arg.len()));
        let spawned = Command::new("python3")
            .arg(&script)
            .args([mode, arg])
            .env("HOSTILE_LOG", &log)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn();
        let Ok(mut child) = spawned else {
            // a line CI counts, past libtest's capture
            sage_test_env::skip(
                &format!("hostile-server test ({mode})"),
                "python3 not found",
            );
            return None;
        };
        let mut first = String::new();
        BufReader::new(child.stdout.take().expect("piped"))
            .read_line(&mut first)
            .expect("the server prints its port");
        let port = first.trim().parse().unwrap_or_else(|_| {
            let _ = child.kill();
            panic!("hostile server ({mode}) printed {first:?}, not a port")
        });
        Some(Hostile { child, port, log })
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    fn spec(&self) -> String {
        format!("openai:m@{}", self.url())
    }

    /// Requests the server received ("METHOD PATH" each).
    fn requests(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(String::from)
            .collect()
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What a `sage` run did: exit code, stdout, stderr, peak resident KB.
struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
    peak_kb: i64,
}

// the child is reaped by wait4 (wait_with_peak), which std's `Child::wait` cannot replace: it
// gives no resource usage
#[allow(clippy::zombie_processes)]
fn sage(args: &[&str]) -> Ran {
    let mut child = Command::new(SAGE)
        .args(args)
        .env("OPENAI_API_KEY", KEY)
        .env(
            "SAGE_CACHE_DIR",
            std::env::temp_dir().join("sage-hostile-unused"),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run sage");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("piped")));
    let err = drain(Box::new(child.stderr.take().expect("piped")));
    let (code, peak_kb) = wait_with_peak(child.id());
    Ran {
        code,
        stdout: out.join().expect("stdout"),
        stderr: err.join().expect("stderr"),
        peak_kb,
    }
}

/// Reaps `pid`: its exit code (128 + signal when killed) and its own peak resident set.
fn wait_with_peak(pid: u32) -> (i32, i64) {
    let mut status = 0;
    // SAFETY: rusage is plain data, filled in by wait4 for the child reaped here.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let reaped = unsafe { libc::wait4(pid as i32, &mut status, 0, &mut usage) };
    assert_eq!(reaped, pid as i32, "wait4");
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    };
    (code, usage.ru_maxrss)
}

/// 50 texts as `sage embed` reads them.
fn texts(dir: &Path, name: &str, n: usize) -> PathBuf {
    let path = dir.join(name);
    let lines: String = (0..n)
        .map(|i| format!("{{\"text\": \"{name} text number {i}\"}}\n"))
        .collect();
    std::fs::write(&path, lines).unwrap();
    path
}

fn embed(server: &Hostile, input: &Path, extra: &[&str]) -> Ran {
    embed_retrying(server, input, "2", extra)
}

fn embed_retrying(server: &Hostile, input: &Path, retries: &str, extra: &[&str]) -> Ran {
    let spec = server.spec();
    let mut args = vec![
        "embed",
        "--model",
        spec.as_str(),
        "--input",
        input.to_str().unwrap(),
        "--max-retries",
        retries,
    ];
    args.extend_from_slice(extra);
    sage(&args)
}

#[test]
fn oversized_endless_and_compressed_answers_are_refused_early_with_memory_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let input = texts(dir.path(), "in.jsonl", 50);
    for (mode, megabytes, says) in [
        // announced: refused from its Content-Length, unread
        ("huge", "300", "announces an answer of"),
        // not announced: refused at the first vector past the widest accepted
        ("huge-unannounced", "300", "more than 16384 values"),
        // 200 MB decoded from a few hundred KB sent
        ("gzip", "200", "more than 16384 values"),
    ] {
        let Some(server) = Hostile::start(dir.path(), mode, megabytes) else {
            return;
        };
        let ran = embed(&server, &input, &["--no-cache"]);
        assert_eq!(ran.code, 1, "{mode}: {}", ran.stderr);
        assert!(ran.stderr.contains(says), "{mode}: {}", ran.stderr);
        assert!(
            ran.peak_kb < PEAK_LIMIT_KB,
            "{mode}: peak {} KB resident",
            ran.peak_kb
        );
        // too big once is too big again: not retried
        assert_eq!(
            server.requests().len(),
            1,
            "{mode}: {:?}",
            server.requests()
        );
        println!(
            "hostile {mode} {megabytes} MB: exit 1, peak {:.1} MB",
            ran.peak_kb as f64 / 1024.0
        );
    }
}

#[test]
fn a_redirect_is_an_error_naming_both_places_and_the_other_host_gets_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let input = texts(dir.path(), "in.jsonl", 50);
    let Some(elsewhere) = Hostile::start(dir.path(), "ok", "8") else {
        return;
    };
    let target = format!("{}/embeddings", elsewhere.url());
    let Some(server) = Hostile::start(dir.path(), "redirect", &target) else {
        return;
    };
    let cache = dir.path().join("cache.redb");
    let ran = embed(&server, &input, &["--cache", cache.to_str().unwrap()]);
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    assert!(ran.stderr.contains("HTTP 302"), "{}", ran.stderr);
    assert!(
        ran.stderr.contains(&format!("127.0.0.1:{}", server.port))
            && ran
                .stderr
                .contains(&format!("127.0.0.1:{}", elsewhere.port)),
        "both places named: {}",
        ran.stderr
    );
    assert!(
        elsewhere.requests().is_empty(),
        "{:?}",
        elsewhere.requests()
    );
    assert_eq!(server.requests().len(), 1, "a redirect is not retried");
    let verified = sage(&["cache", "verify", "--cache", cache.to_str().unwrap()]);
    assert!(
        verified.stdout.contains("\"entries\":0"),
        "{}",
        verified.stdout
    );
}

#[test]
fn a_retry_after_past_the_runs_longest_wait_fails_at_once_and_a_long_wait_is_announced() {
    let dir = tempfile::tempdir().unwrap();
    let input = texts(dir.path(), "in.jsonl", 5);
    let Some(server) = Hostile::start(dir.path(), "retry-after", "999999") else {
        return;
    };
    let ran = embed(&server, &input, &["--no-cache"]);
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("asks to wait 999999 s") && ran.stderr.contains("120 s"),
        "{}",
        ran.stderr
    );
    assert_eq!(
        server.requests().len(),
        1,
        "no retry: {:?}",
        server.requests()
    );
    // a wait the run accepts is said, with what for and until when
    let Some(server) = Hostile::start(dir.path(), "retry-after", "6") else {
        return;
    };
    let ran = embed_retrying(&server, &input, "1", &["--no-cache"]);
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    assert!(
        ran.stderr
            .contains("HTTP 429: slow down; waiting 6 s (until ")
            && ran.stderr.contains("UTC) before attempt 2 of 2"),
        "{}",
        ran.stderr
    );
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn a_server_whose_width_changed_stores_nothing_and_the_cache_stays_usable() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache.redb");
    let cache_arg = cache.to_str().unwrap();
    let first = texts(dir.path(), "first.jsonl", 20);
    let second = texts(dir.path(), "second.jsonl", 30);
    let width = dir.path().join("width");
    std::fs::write(&width, "4").unwrap();
    let Some(server) = Hostile::start(dir.path(), "ok", width.to_str().unwrap()) else {
        return;
    };
    let ran = embed(&server, &first, &["--cache", cache_arg]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    // the same address now serves another model
    std::fs::write(&width, "6").unwrap();
    for _ in 0..2 {
        let ran = embed(&server, &second, &["--cache", cache_arg]);
        assert_eq!(ran.code, 1, "{}", ran.stderr);
        assert!(
            ran.stderr
                .contains("now gives 6-wide vectors where this cache holds 4-wide"),
            "{}",
            ran.stderr
        );
    }
    // nothing of the 6-wide answers was stored
    let before = std::fs::read(&cache).unwrap();
    let verified = sage(&["cache", "verify", "--cache", cache_arg]);
    assert_eq!(verified.code, 0, "{}", verified.stderr);
    assert!(
        verified.stdout.contains("\"entries\":20") && verified.stdout.contains("\"corrupt\":0"),
        "{}",
        verified.stdout
    );
    assert!(
        std::fs::read(&cache).unwrap() == before,
        "verify wrote to the cache"
    );
    // the old model back: the cache serves the first texts and takes the new ones
    std::fs::write(&width, "4").unwrap();
    let sent = server.requests().len();
    let ran = embed(&server, &first, &["--cache", cache_arg]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert_eq!(server.requests().len(), sent, "all 20 from the cache");
    let ran = embed(&server, &second, &["--cache", cache_arg]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
}

#[test]
fn a_servers_words_are_shown_escaped_and_without_the_key_or_its_near_copies() {
    let dir = tempfile::tempdir().unwrap();
    let input = texts(dir.path(), "in.jsonl", 3);
    let Some(server) = Hostile::start(dir.path(), "echo-error", KEY) else {
        return;
    };
    let ran = embed(&server, &input, &["--no-cache"]);
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    assert!(
        !ran.stderr.contains('\u{1b}') && !ran.stderr.contains('\r'),
        "{:?}",
        ran.stderr
    );
    assert!(
        !ran.stderr.lines().any(|l| l.starts_with("sage: note:")),
        "a server wrote a line of its own: {:?}",
        ran.stderr
    );
    for near in [KEY, &KEY[..KEY.len() - 1], &KEY.to_uppercase(), &KEY[3..]] {
        assert!(!ran.stderr.contains(near), "{near} shown: {}", ran.stderr);
    }
    assert!(
        ran.stderr.contains("\\u{1b}[2J"),
        "escaped, still visible: {}",
        ran.stderr
    );
    // one error, said once (it once printed `error: X: X`)
    assert_eq!(ran.stderr.matches("HTTP 400").count(), 1, "{}", ran.stderr);
}

#[test]
fn an_output_that_cannot_be_written_is_found_before_anything_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let input = texts(dir.path(), "in.jsonl", 5);
    let Some(server) = Hostile::start(dir.path(), "ok", "4") else {
        return;
    };
    // a missing folder is created; a folder that is a file cannot be
    let blocker = dir.path().join("a-file-not-a-folder");
    std::fs::write(&blocker, b"").unwrap();
    let output = blocker.join("out.jsonl");
    let ran = embed(
        &server,
        &input,
        &["--no-cache", "--output", output.to_str().unwrap()],
    );
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    assert!(ran.stderr.contains("a-file-not-a-folder"), "{}", ran.stderr);
    assert!(server.requests().is_empty(), "{:?}", server.requests());
}

#[test]
fn a_failed_merge_leaves_no_new_file() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("not-a-cache.redb");
    std::fs::write(&source, b"these bytes are not a redb file").unwrap();
    let target = dir.path().join("merged.redb");
    let ran = sage(&[
        "cache",
        "merge",
        "--cache",
        target.to_str().unwrap(),
        source.to_str().unwrap(),
    ]);
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    assert!(ran.stderr.contains("not-a-cache.redb"), "{}", ran.stderr);
    assert!(!target.exists(), "a failed merge left {}", target.display());
}
