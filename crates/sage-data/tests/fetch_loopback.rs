//! `sage data fetch`'s downloads against a loopback server (sage-loopback's) that plays the
//! sources (GitHub raw files, an npm tarball) in their own formats, and misbehaves on purpose:
//! damaged, truncated, oversized, redirected and stalled answers. Nothing leaves 127.0.0.1; the
//! server stops when the test drops it.
#![cfg(feature = "fetch")]

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sage_data::pins::{ArtifactPin, DatasetPin, FilePin, Pins};
use sage_data::rebuild::download::DownloadSettings;
use sage_data::rebuild::{rebuild, Quiet, RebuildOptions, Rebuilt};
use sage_loopback::{Reply, Request, Server};
use sha2::{Digest, Sha256};

/// How the sources answer one path.
#[derive(Clone)]
enum Answer {
    /// The bytes, honouring `Range: bytes=N-`.
    Serve(Vec<u8>),
    /// The first `n` bytes under a Content-Length of all of them, then the connection closes.
    Truncate(Vec<u8>, usize),
    /// A Content-Length larger than any pin.
    Oversize,
    /// A redirect.
    Redirect(String),
    /// Nothing, for longer than the client waits.
    Stall,
}

/// The loopback server playing the sources: `BASE/HOST/PATH` for `https://HOST/PATH`.
struct Sources {
    /// Kept for its lifetime: dropping it stops the server.
    _server: Server,
    base: String,
    answers: Arc<Mutex<BTreeMap<String, Answer>>>,
    ranges: Arc<Mutex<Vec<String>>>,
}

impl Sources {
    fn start() -> Sources {
        let answers: Arc<Mutex<BTreeMap<String, Answer>>> = Default::default();
        let ranges: Arc<Mutex<Vec<String>>> = Default::default();
        let (a, r) = (answers.clone(), ranges.clone());
        let server = Server::start(move |request: &Request| {
            let from: usize = request
                .header("range")
                .and_then(|v| v.strip_prefix("bytes="))
                .and_then(|v| v.trim_end_matches('-').parse().ok())
                .unwrap_or(0);
            if from > 0 {
                r.lock().unwrap().push(format!("{} {from}", request.path));
            }
            let respond =
                |status: u16, headers: Vec<(String, String)>, body: Vec<u8>| Reply::Respond {
                    status,
                    headers,
                    body,
                };
            match a.lock().unwrap().get(&request.path).cloned() {
                None => respond(404, vec![], vec![]),
                Some(Answer::Serve(bytes)) if from > 0 && from < bytes.len() => {
                    let range = format!("bytes {from}-{}/{}", bytes.len() - 1, bytes.len());
                    respond(
                        206,
                        vec![("Content-Range".into(), range)],
                        bytes[from..].to_vec(),
                    )
                }
                Some(Answer::Serve(bytes)) => respond(200, vec![], bytes),
                Some(Answer::Truncate(body, keep)) => Reply::Truncate { body, keep },
                Some(Answer::Oversize) => Reply::Announce {
                    length: 999_999_999,
                    sent: b"xx".to_vec(),
                },
                Some(Answer::Redirect(to)) => respond(302, vec![("Location".into(), to)], vec![]),
                Some(Answer::Stall) => Reply::Stall(Duration::from_secs(6)),
            }
        });
        let base = server.url();
        Sources {
            _server: server,
            base,
            answers,
            ranges,
        }
    }

    fn set(&self, url: &str, answer: Answer) {
        let path = format!("/{}", url.strip_prefix("https://").unwrap());
        self.answers.lock().unwrap().insert(path, answer);
    }
}

fn sha(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

const TSV_URL: &str = "https://raw.githubusercontent.com/owner/sts/0123456789abcdef0123456789abcdef01234567/data/sts-test.csv";
const TGZ_URL: &str = "https://registry.npmjs.org/wndb-like/-/wndb-like-1.0.0.tgz";
const TGZ_MIRROR: &str =
    "https://snapshot.debian.org/file/0123456789abcdef0123456789abcdef01234567";

/// A STS Benchmark-style TSV and an npm-style tarball, the pins of both and of what they make.
fn fixture() -> (Pins, Vec<u8>, Vec<u8>) {
    let tsv = b"main-captions\tMSRvid\t2012test\t0001\t5.000\tA girl is styling her hair.\tA girl is brushing her hair.\n\
main-news\theadlines\t2015\t0002\t0.666667\tOne\tTwo\n"
        .to_vec();
    let jsonl = "{\"sentence1\": \"A girl is styling her hair.\", \"sentence2\": \"A girl is brushing her hair.\", \"score\": 5.0}\n\
{\"sentence1\": \"One\", \"sentence2\": \"Two\", \"score\": 0.666667}\n";
    let license = b"WordNet Release 3.0 licence\n".to_vec();
    let tgz = {
        let mut tar = Vec::new();
        let mut header = [0u8; 512];
        let name = b"package/LICENSE";
        header[..name.len()].copy_from_slice(name);
        header[100..107].copy_from_slice(b"0000644");
        header[124..135].copy_from_slice(format!("{:011o}", license.len()).as_bytes());
        header[156] = b'0';
        header[257..263].copy_from_slice(b"ustar\0");
        tar.extend_from_slice(&header);
        tar.extend_from_slice(&license);
        tar.resize(tar.len().div_ceil(512) * 512 + 1024, 0);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&tar).unwrap();
        gz.finish().unwrap()
    };
    let file = |path: &str, convert: &str, from: &str, bytes: &[u8], options: &str| FilePin {
        path: path.into(),
        bytes: bytes.len() as u64,
        sha256: sha(bytes),
        convert: convert.into(),
        from: vec![from.into()],
        options: toml::from_str(options).unwrap(),
    };
    let pins = Pins {
        artifacts: [
            (
                TSV_URL.to_owned(),
                ArtifactPin {
                    bytes: tsv.len() as u64,
                    sha256: Some(sha(&tsv)),
                    mirrors: Vec::new(),
                },
            ),
            (
                TGZ_URL.to_owned(),
                ArtifactPin {
                    bytes: tgz.len() as u64,
                    sha256: Some(sha(&tgz)),
                    mirrors: vec![TGZ_MIRROR.to_owned()],
                },
            ),
        ]
        .into_iter()
        .collect(),
        locked: Vec::new(),
        datasets: vec![
            DatasetPin {
                name: "stsb-like".into(),
                licence: "CC BY-SA 4.0".into(),
                unavailable: None,
                hub_only: None,
                files: vec![file(
                    "sts/stsb_like/test.jsonl",
                    "tab-rows",
                    TSV_URL,
                    jsonl.as_bytes(),
                    r#"fields = [["sentence1", 5, "str"], ["sentence2", 6, "str"], ["score", 4, "float"]]"#,
                )],
            },
            DatasetPin {
                name: "wordnet-like".into(),
                licence: "WordNet 3.0".into(),
                unavailable: None,
                hub_only: None,
                files: vec![file(
                    "wordnet_like/LICENSE",
                    "copy",
                    &format!("{TGZ_URL}#package/LICENSE"),
                    &license,
                    "",
                )],
            },
        ],
    };
    (pins, tsv, tgz)
}

fn options(root: &Path, server: &Sources) -> RebuildOptions {
    RebuildOptions {
        root: root.to_owned(),
        jobs: 2,
        overwrite: false,
        keep_sources: false,
        download: DownloadSettings {
            base: Some(server.base.clone()),
            stall: Duration::from_secs(2),
            min_rate: 1 << 20,
        },
    }
}

fn names() -> Vec<String> {
    vec!["stsb-like".into(), "wordnet-like".into()]
}

fn by_name(outcomes: &[Rebuilt], name: &str) -> Rebuilt {
    outcomes
        .iter()
        .find(|o| o.dataset == name)
        .cloned()
        .unwrap()
}

/// Every file under `root` but the `.sources` folder's partial downloads.
fn files_under(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path().strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn fetch_rebuilds_the_pinned_bytes_and_keeps_what_is_present() {
    let (pins, tsv, tgz) = fixture();
    let server = Sources::start();
    server.set(TSV_URL, Answer::Serve(tsv));
    // the npm registry answers a tarball request with a redirect to its own host's file
    let moved = "https://registry.npmjs.org/wndb-like/-/moved.tgz";
    server.set(
        TGZ_URL,
        Answer::Redirect(format!(
            "{}/{}",
            server.base,
            moved.strip_prefix("https://").unwrap()
        )),
    );
    server.set(moved, Answer::Serve(tgz));
    let root = tempfile::tempdir().unwrap();
    let outcomes = rebuild(&pins, &names(), &options(root.path(), &server), &Quiet).unwrap();
    for o in &outcomes {
        assert_eq!(o.status, "fetched", "{o:?}");
    }
    assert_eq!(
        files_under(root.path()),
        [
            "PROVENANCE.json",
            "sts/stsb_like/test.jsonl",
            "wordnet_like/LICENSE"
        ]
    );
    let provenance: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.path().join("PROVENANCE.json")).unwrap())
            .unwrap();
    assert_eq!(provenance["wordnet-like"]["licence"], "WordNet 3.0");
    assert_eq!(
        provenance["wordnet-like"]["origins"][0],
        "npm wndb-like@1.0.0"
    );
    let again = rebuild(&pins, &names(), &options(root.path(), &server), &Quiet).unwrap();
    assert!(
        again
            .iter()
            .all(|o| o.status == "present" && o.downloaded_bytes == 0),
        "{again:?}"
    );
}

#[test]
fn damaged_oversized_and_foreign_answers_leave_nothing_under_a_name() {
    let (pins, tsv, _) = fixture();
    let server = Sources::start();
    let mut damaged = tsv.clone();
    damaged[10] ^= 1;
    server.set(TSV_URL, Answer::Serve(damaged));
    server.set(TGZ_URL, Answer::Oversize);
    let root = tempfile::tempdir().unwrap();
    let outcomes = rebuild(&pins, &names(), &options(root.path(), &server), &Quiet).unwrap();
    let sts = by_name(&outcomes, "stsb-like");
    assert_eq!(sts.status, "failed");
    let why = sts.error.unwrap();
    assert!(
        why.contains(TSV_URL) && why.contains("sha256") && why.contains("place it by hand"),
        "{why}"
    );
    let wn = by_name(&outcomes, "wordnet-like").error.unwrap();
    assert!(wn.contains("the server offers 999999999 bytes"), "{wn}");
    assert_eq!(files_under(root.path()), Vec::<String>::new());
    // nor the folders made for them
    assert!(!root.path().join(".sources").exists());

    server.set(
        TGZ_URL,
        Answer::Redirect("https://evil.example/wndb.tgz".into()),
    );
    let outcomes = rebuild(&pins, &names(), &options(root.path(), &server), &Quiet).unwrap();
    let wn = by_name(&outcomes, "wordnet-like").error.unwrap();
    assert!(wn.contains("outside the documented hosts"), "{wn}");
    assert_eq!(files_under(root.path()), Vec::<String>::new());
}

#[test]
fn a_truncated_download_resumes_and_a_stalled_one_is_cut() {
    let (pins, tsv, tgz) = fixture();
    let server = Sources::start();
    server.set(TSV_URL, Answer::Truncate(tsv.clone(), 40));
    server.set(TGZ_URL, Answer::Stall);
    let root = tempfile::tempdir().unwrap();
    let outcomes = rebuild(&pins, &names(), &options(root.path(), &server), &Quiet).unwrap();
    assert!(
        outcomes.iter().all(|o| o.status == "failed"),
        "{outcomes:?}"
    );
    let kept = sage_data::rebuild::source_path(root.path(), TSV_URL);
    let partial = sage_data::rebuild::download::partial_path(&kept);
    assert_eq!(
        std::fs::metadata(&partial).unwrap().len(),
        40,
        "the first 40 bytes are kept"
    );
    assert!(!root.path().join("sts/stsb_like/test.jsonl").exists());

    server.set(TSV_URL, Answer::Serve(tsv));
    server.set(TGZ_URL, Answer::Serve(tgz));
    let outcomes = rebuild(&pins, &names(), &options(root.path(), &server), &Quiet).unwrap();
    assert!(
        outcomes.iter().all(|o| o.status == "fetched"),
        "{outcomes:?}"
    );
    let ranges = server.ranges.lock().unwrap().clone();
    assert!(
        ranges.iter().any(|r| r.ends_with(" 40")),
        "the rerun asked for the rest: {ranges:?}"
    );
    assert_eq!(
        files_under(root.path()),
        [
            "PROVENANCE.json",
            "sts/stsb_like/test.jsonl",
            "wordnet_like/LICENSE"
        ]
    );
}

#[test]
fn a_source_gone_from_its_url_is_taken_from_its_mirror() {
    let (pins, tsv, tgz) = fixture();
    let server = Sources::start();
    server.set(TSV_URL, Answer::Serve(tsv));
    // the pinned URL answers 404 (nothing set); the mirror has the same bytes
    server.set(TGZ_MIRROR, Answer::Serve(tgz));
    let root = tempfile::tempdir().unwrap();
    let outcomes = rebuild(&pins, &names(), &options(root.path(), &server), &Quiet).unwrap();
    assert!(
        outcomes.iter().all(|o| o.status == "fetched"),
        "{outcomes:?}"
    );
    // both gone: one line with both answers
    let root = tempfile::tempdir().unwrap();
    server.set(TGZ_MIRROR, Answer::Oversize);
    let outcomes = rebuild(&pins, &names(), &options(root.path(), &server), &Quiet).unwrap();
    let why = by_name(&outcomes, "wordnet-like").error.unwrap();
    assert!(
        why.contains("HTTP 404") && why.contains(&format!("its mirror {TGZ_MIRROR}")),
        "{why}"
    );
}

/// A copy of the sources in a folder laid out `HOST/PATH` (a shared disk at a closed site), as
/// a path or as `file://`: read with a download's checks, a file of the wrong size refused.
#[test]
fn a_folder_of_the_sources_serves_them_as_the_hosts_would() {
    let (pins, tsv, tgz) = fixture();
    let copy = tempfile::tempdir().unwrap();
    for (url, bytes) in [(TSV_URL, &tsv), (TGZ_URL, &tgz)] {
        let path = copy.path().join(url.strip_prefix("https://").unwrap());
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
    for base in [
        copy.path().display().to_string(),
        format!("file://{}", copy.path().display()),
    ] {
        let root = tempfile::tempdir().unwrap();
        let mut opts = RebuildOptions {
            root: root.path().to_owned(),
            jobs: 2,
            overwrite: false,
            keep_sources: false,
            download: DownloadSettings::default(),
        };
        opts.download.base = Some(base.clone());
        let outcomes = rebuild(&pins, &names(), &opts, &Quiet).unwrap();
        for o in &outcomes {
            assert_eq!(o.status, "fetched", "{base}: {o:?}");
        }
        assert_eq!(
            by_name(&outcomes, "stsb-like").downloaded_bytes,
            tsv.len() as u64
        );
    }
    // a file of another size in the copy is refused, naming it and both sizes
    let path = copy.path().join(TSV_URL.strip_prefix("https://").unwrap());
    std::fs::write(&path, b"short").unwrap();
    let root = tempfile::tempdir().unwrap();
    let mut opts = RebuildOptions {
        root: root.path().to_owned(),
        jobs: 1,
        overwrite: false,
        keep_sources: false,
        download: DownloadSettings::default(),
    };
    opts.download.base = Some(copy.path().display().to_string());
    let why = by_name(
        &rebuild(&pins, &names(), &opts, &Quiet).unwrap(),
        "stsb-like",
    )
    .error
    .unwrap();
    assert!(
        why.contains("holds 5 bytes") && why.contains(&format!("{} bytes", tsv.len())),
        "{why}"
    );
    assert!(!root.path().join("sts/stsb_like/test.jsonl").exists());
}

/// `downloaded_bytes` is what arrived: the part of a cut transfer, then only the rest.
#[test]
fn downloaded_bytes_count_what_arrived() {
    let (pins, tsv, tgz) = fixture();
    let server = Sources::start();
    server.set(TSV_URL, Answer::Truncate(tsv.clone(), 40));
    server.set(TGZ_URL, Answer::Serve(tgz.clone()));
    let root = tempfile::tempdir().unwrap();
    let outcomes = rebuild(&pins, &names(), &options(root.path(), &server), &Quiet).unwrap();
    let sts = by_name(&outcomes, "stsb-like");
    assert_eq!((sts.status, sts.downloaded_bytes), ("failed", 40));
    assert_eq!(
        by_name(&outcomes, "wordnet-like").downloaded_bytes,
        tgz.len() as u64
    );
    server.set(TSV_URL, Answer::Serve(tsv.clone()));
    let outcomes = rebuild(&pins, &names(), &options(root.path(), &server), &Quiet).unwrap();
    let sts = by_name(&outcomes, "stsb-like");
    assert_eq!(
        (sts.status, sts.downloaded_bytes),
        ("fetched", tsv.len() as u64 - 40)
    );
}

/// A file placed by hand that is not the pinned one is named as such, with its size and sha256
/// against the pin's, not met with "put the file at" the path where it already is.
#[test]
fn a_wrong_file_placed_by_hand_is_said_to_be_wrong() {
    let (pins, _, tgz) = fixture();
    let server = Sources::start();
    server.set(TGZ_URL, Answer::Serve(tgz));
    let root = tempfile::tempdir().unwrap();
    let placed = sage_data::rebuild::source_path(root.path(), TSV_URL);
    std::fs::create_dir_all(placed.parent().unwrap()).unwrap();
    std::fs::write(&placed, b"not the file").unwrap();
    let outcomes = rebuild(&pins, &names(), &options(root.path(), &server), &Quiet).unwrap();
    let why = by_name(&outcomes, "stsb-like").error.unwrap();
    assert!(
        why.contains(&format!(
            "The file at {} is not the pinned one: 12 bytes",
            placed.display()
        )) && why.contains(&sha(b"not the file"))
            && !why.contains("put the\u{20}file at"),
        "{why}"
    );
}

/// A source pinned by its size only (a tarball GitHub makes on request) whose file fails its
/// checksum is removed, so the rerun downloads it afresh rather than reusing the bad one; and
/// `--overwrite` fetches such a source again even when one is kept.
#[test]
fn a_bad_unhashed_source_does_not_block_the_rerun() {
    let (mut pins, _, _) = fixture();
    const MADE: &str =
        "https://codeload.github.com/owner/repo/tar.gz/0123456789abcdef0123456789abcdef01234567";
    let good = b"the tarball's bytes".to_vec();
    pins.artifacts.insert(
        MADE.to_owned(),
        ArtifactPin {
            bytes: 64,
            sha256: None,
            mirrors: Vec::new(),
        },
    );
    pins.datasets.push(DatasetPin {
        name: "made-on-request".into(),
        licence: "test".into(),
        unavailable: None,
        hub_only: None,
        files: vec![FilePin {
            path: "made/copy.bin".into(),
            bytes: good.len() as u64,
            sha256: sha(&good),
            convert: "copy".into(),
            from: vec![MADE.into()],
            options: toml::Table::new(),
        }],
    });
    let server = Sources::start();
    server.set(MADE, Answer::Serve(b"a changed tarball".to_vec()));
    let root = tempfile::tempdir().unwrap();
    let name = vec!["made-on-request".to_owned()];
    let first = rebuild(&pins, &name, &options(root.path(), &server), &Quiet).unwrap();
    let why = first[0].error.clone().unwrap();
    assert!(why.contains("removed") && why.contains(MADE), "{why}");
    assert!(!sage_data::rebuild::source_path(root.path(), MADE).exists());
    server.set(MADE, Answer::Serve(good.clone()));
    let second = rebuild(&pins, &name, &options(root.path(), &server), &Quiet).unwrap();
    assert_eq!(second[0].status, "fetched", "{second:?}");
    assert_eq!(
        std::fs::read(root.path().join("made/copy.bin")).unwrap(),
        good
    );

    // a bad copy kept from before (within its size bound, so its bytes cannot be told from
    // the good ones): --overwrite asks the source again instead of reusing it
    std::fs::remove_file(root.path().join("made/copy.bin")).unwrap();
    let kept = sage_data::rebuild::source_path(root.path(), MADE);
    std::fs::create_dir_all(kept.parent().unwrap()).unwrap();
    std::fs::write(&kept, b"a changed tarball").unwrap();
    let mut again = options(root.path(), &server);
    again.overwrite = true;
    let third = rebuild(&pins, &name, &again, &Quiet).unwrap();
    assert_eq!(third[0].status, "fetched", "{third:?}");
    assert_eq!(third[0].downloaded_bytes, good.len() as u64);
}

/// Two fetches of one data folder at once (two terminals, two Slurm jobs): the second waits for
/// the first and finds its files in place; every file is the pinned one and the provenance
/// names both datasets.
#[test]
fn two_fetches_of_one_folder_at_once_leave_it_whole() {
    let (pins, tsv, tgz) = fixture();
    let server = Sources::start();
    server.set(TSV_URL, Answer::Serve(tsv));
    server.set(TGZ_URL, Answer::Serve(tgz));
    let root = tempfile::tempdir().unwrap();
    let outcomes: Vec<Vec<Rebuilt>> = std::thread::scope(|scope| {
        let runs: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| rebuild(&pins, &names(), &options(root.path(), &server), &Quiet))
            })
            .collect();
        runs.into_iter()
            .map(|r| r.join().unwrap().unwrap())
            .collect()
    });
    for o in outcomes.iter().flatten() {
        assert!(matches!(o.status, "fetched" | "present"), "{o:?}");
    }
    // each dataset was made once
    for name in names() {
        let fetched = outcomes
            .iter()
            .flatten()
            .filter(|o| o.dataset == name && o.status == "fetched")
            .count();
        assert_eq!(fetched, 1, "{name}: {outcomes:?}");
    }
    let again = rebuild(&pins, &names(), &options(root.path(), &server), &Quiet).unwrap();
    assert!(again.iter().all(|o| o.status == "present"), "{again:?}");
    let provenance: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.path().join("PROVENANCE.json")).unwrap())
            .unwrap();
    assert!(provenance.get("stsb-like").is_some() && provenance.get("wordnet-like").is_some());
}
