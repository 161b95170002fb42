//! `sage embed`, `sage models` and `sage cache`: vectors, the cache, missing models.

use super::*;

/// `sage cache verify` / `repair` on what a user may have: a missing file, a file redb cannot
/// read (an error and exit 1, never a panic; repair moves it aside), a sound cache.
#[test]
fn cache_verify_and_repair() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none.redb");
    fails_with(
        &["cache", "verify", "--cache", missing.to_str().unwrap()],
        "none.redb: no such cache file",
    );
    let garbage = write(&dir, "garbage.redb", &"not a redb file at all ".repeat(400));
    fails_with(&["cache", "verify", "--cache", &garbage], "garbage.redb");
    let repaired = ok_json(&["cache", "repair", "--cache", &garbage]);
    let aside = repaired["moved_to"].as_str().expect("moved aside");
    assert!(Path::new(aside).exists() && !Path::new(&garbage).exists());
    let Some(model) = models_dir() else {
        sage_test_env::skip(
            "cache_verify_and_repair",
            "SAGE_MODELS_DIR lacks all-MiniLM-L6-v2: the sound-cache part not run",
        );
        return;
    };
    let cache = dir.path().join("sound.redb");
    let texts = write(&dir, "t.jsonl", "{\"text\":\"one\"}\n{\"text\":\"two\"}\n");
    let out = sage(&[
        "embed",
        "--model",
        model.to_str().unwrap(),
        "--cache",
        cache.to_str().unwrap(),
        "--input",
        &texts,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sound = ok_json(&["cache", "verify", "--cache", cache.to_str().unwrap()]);
    assert_eq!(sound["entries"], 2);
    assert_eq!(sound["corrupt"], 0);

    // `sage cache merge` folds it into another cache, once
    let merged = dir.path().join("merged.redb");
    let merge = |source: &str| {
        ok_json(&[
            "cache",
            "merge",
            "--cache",
            merged.to_str().unwrap(),
            source,
        ])
    };
    let first = merge(cache.to_str().unwrap());
    assert_eq!(
        (first["copied"].as_u64(), first["sources"].as_u64()),
        (Some(2), Some(1))
    );
    let again = merge(cache.to_str().unwrap());
    assert_eq!(
        (again["copied"].as_u64(), again["already_present"].as_u64()),
        (Some(0), Some(2))
    );
    fails_with(
        &["cache", "merge", "--cache", merged.to_str().unwrap(), aside],
        aside,
    );
    let merged_check = ok_json(&["cache", "verify", "--cache", merged.to_str().unwrap()]);
    assert_eq!(merged_check["entries"], 2);
}

#[test]
fn embed_writes_npy_and_jsonl_and_reuses_the_cache() {
    let Some(model) = models_dir() else {
        sage_test_env::skip(
            module_path!(),
            "SAGE_MODELS_DIR/all-MiniLM-L6-v2 missing: sage embed not run",
        );
        return;
    };
    let model = model.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let input = write(&dir, "t.jsonl", "{\"text\":\"A man is playing a guitar.\"}\n{\"text\":\"A man plays the guitar.\"}\n{\"text\":\"Stocks fell.\"}\n");
    let cache = dir.path().join("cache.redb");
    let npy = dir.path().join("out.npy");
    let first = sage(&[
        "embed",
        "--model",
        model,
        "--input",
        &input,
        "--output",
        npy.to_str().unwrap(),
        "--cache",
        cache.to_str().unwrap(),
    ]);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert!(String::from_utf8_lossy(&first.stderr).contains("0 hits, 3 embedded"));
    let bytes = std::fs::read(&npy).unwrap();
    assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
    let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let header = std::str::from_utf8(&bytes[10..10 + header_len]).unwrap();
    assert!(
        header.contains("'shape': (3, 384)") && (10 + header_len).is_multiple_of(64),
        "{header}"
    );
    assert_eq!(bytes.len(), 10 + header_len + 3 * 384 * 4);

    let second = sage(&[
        "embed",
        "--model",
        model,
        "--input",
        &input,
        "--cache",
        cache.to_str().unwrap(),
    ]);
    assert!(String::from_utf8_lossy(&second.stderr).contains("3 hits, 0 embedded"));
    let lines: Vec<Value> = String::from_utf8(second.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let first_row: Vec<f32> = bytes[10 + header_len..10 + header_len + 384 * 4]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let cached_row: Vec<f32> = lines[0]["embedding"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect();
    assert_eq!(first_row, cached_row, "the cache returns the same vectors");

    let pairs = write(&dir, "p.jsonl", "{\"text1\":\"A man is playing a guitar.\",\"text2\":\"A man plays the guitar.\"}\n{\"text1\":\"A man is playing a guitar.\",\"text2\":\"Stocks fell.\"}\n");
    let scores = ok_lines(&["score", "--model", model, "--no-cache", "--input", &pairs]);
    assert!(
        scores[0]["score"].as_f64().unwrap() > 0.9 && scores[1]["score"].as_f64().unwrap() < 0.3,
        "{scores:?}"
    );
    fails_with(
        &[
            "embed",
            "--model",
            model,
            "--input",
            &input,
            "--output",
            "x.csv",
            "--no-cache",
        ],
        "--output must end in .npy or .jsonl",
    );
}

#[test]
fn missing_models_say_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(&dir, "t.jsonl", "{\"text\":\"a\"}\n");
    let out = Command::new(env!("CARGO_BIN_EXE_sage"))
        .args([
            "embed",
            "--model",
            "acme/not-a-model",
            "--no-cache",
            "--input",
            &input,
        ])
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_HOME", dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr.contains("HF_HUB_OFFLINE")
            && stderr.contains("huggingface-cli download acme/not-a-model"),
        "{stderr}"
    );
}

/// A hub-only dataset the hub cannot give (offline) is named once in its error line, which says
/// what to do.
#[test]
fn an_offline_hub_fetch_names_the_dataset_once() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_sage"))
        .args(["data", "fetch", "sts22", "--data-dir"])
        .arg(dir.path().join("data"))
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_HOME", dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0));
    let line = stderr
        .lines()
        .find(|l| l.starts_with("sage: sts22"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(!line.contains("sts22: sts22"), "{line}");
    assert!(line.contains("HF_HUB_OFFLINE"), "{line}");
}

/// `sage models fetch` builds a model folder from a hub cache (offline, as on a machine that was
/// given a copied cache) that embeds exactly like the folder the cache was made from; a second
/// fetch keeps it; a model the hub lacks in sage's layout is refused with where to get it.
#[test]
fn models_fetch_builds_a_working_folder_from_the_hub_cache() {
    let Some(source) = sage_test_env::model_dir_or_skip(
        "paraphrase-MiniLM-L3-v2",
        "models_fetch_builds_a_working_folder_from_the_hub_cache",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let repo = dir
        .path()
        .join("hub/models--sentence-transformers--paraphrase-MiniLM-L3-v2");
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs/main"), "0123abc\n").unwrap();
    let listed = sage(&["models", "fetch", "--list"]);
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.contains("\"glove.6B.50d\""), "{listed}");
    // the snapshot holds every file the folder takes, copied from the local model
    for name in [
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "vocab.txt",
        "modules.json",
        "1_Pooling/config.json",
        "sentence_bert_config.json",
    ] {
        let to = repo.join("snapshots/0123abc").join(name);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(source.join(name), to).unwrap();
    }
    let models = dir.path().join("models");
    let fetch = || {
        let out = Command::new(env!("CARGO_BIN_EXE_sage"))
            .args(["models", "fetch", "paraphrase-MiniLM-L3-v2", "--dest"])
            .arg(&models)
            .env("HF_HUB_CACHE", dir.path().join("hub"))
            .env("HF_HUB_OFFLINE", "1")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    assert_eq!(fetch()["status"], "fetched");
    assert_eq!(fetch()["status"], "present");

    let input = write(
        &dir,
        "texts.jsonl",
        "{\"text\": \"A cat sat on the mat.\"}\n{\"text\": \"Stocks fell sharply.\"}\n",
    );
    let embed = |model: &Path| {
        let out = sage(&[
            "embed",
            "--model",
            model.to_str().unwrap(),
            "--input",
            &input,
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    assert_eq!(
        embed(&models.join("paraphrase-MiniLM-L3-v2")),
        embed(&source)
    );
    fails_with(&["models", "fetch", "glove.6B.50d"], "glove.6B.zip");
    fails_with(&["models", "fetch", "minilm"], "all-MiniLM-L6-v2");
}

/// Issue 80, point 6: the first hub fetch of a dataset records its files' sha256, `sage data
/// lock` prints them as a lock file, and with `SAGE_DATA_PINS` naming it a teammate's copy is
/// checked file by file (`sage data check` says `lock`) and refused once a file changed.
#[test]
fn a_lock_of_hub_made_files_is_shared_and_enforced() {
    let dir = tempfile::tempdir().unwrap();
    let commit = "c22ab2a51041ffd869aaddef7af8d8215647e41a";
    let repo = dir.path().join("hub/datasets--mteb--arguana");
    let snapshot = repo.join("snapshots").join(commit);
    std::fs::create_dir_all(snapshot.join("qrels")).unwrap();
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs").join(commit), commit).unwrap();
    std::fs::write(
        snapshot.join("corpus.jsonl"),
        "{\"_id\": \"d1\", \"title\": \"\", \"text\": \"tax cuts help growth\"}\n\
         {\"_id\": \"d2\", \"title\": \"\", \"text\": \"tax cuts widen deficits\"}\n",
    )
    .unwrap();
    std::fs::write(
        snapshot.join("queries.jsonl"),
        "{\"_id\": \"q1\", \"text\": \"do tax cuts help growth\"}\n",
    )
    .unwrap();
    std::fs::write(
        snapshot.join("qrels/test.jsonl"),
        "{\"query-id\": \"q1\", \"corpus-id\": \"d1\", \"score\": 1}\n",
    )
    .unwrap();
    let data = dir.path().join("data");
    let run = |args: &[&str], pins: Option<&std::path::Path>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_sage"));
        command
            .args(args)
            .arg("--data-dir")
            .arg(&data)
            .env("HF_HUB_OFFLINE", "1")
            .env("HF_HOME", dir.path())
            .env_remove("SAGE_DATA_PINS");
        if let Some(pins) = pins {
            command.env("SAGE_DATA_PINS", pins);
        }
        command.output().unwrap()
    };
    let fetched = run(&["data", "fetch", "arguana"], None);
    assert!(
        fetched.status.success(),
        "{}",
        String::from_utf8_lossy(&fetched.stderr)
    );
    let lock = run(&["data", "lock"], None);
    let lock_text = String::from_utf8(lock.stdout).unwrap();
    assert!(
        lock.status.success(),
        "{}",
        String::from_utf8_lossy(&lock.stderr)
    );
    assert_eq!(lock_text.matches("[[locked]]").count(), 3, "{lock_text}");
    for file in ["corpus.jsonl", "queries.jsonl", "qrels/test.tsv"] {
        assert!(
            lock_text.contains(&format!("path = \"retrieval/arguana/{file}\"")),
            "{lock_text}"
        );
    }
    assert!(lock_text.contains(&format!("source = \"hf:mteb/arguana@{commit}\"")));
    let lock_file = dir.path().join("sha256s.toml");
    std::fs::write(&lock_file, &lock_text).unwrap();

    // a teammate's copy: the files, no record of its own, the shared lock
    std::fs::remove_file(data.join("PROVENANCE.json")).unwrap();
    let checked = run(&["data", "check", "arguana"], Some(&lock_file));
    let line = String::from_utf8_lossy(&checked.stdout);
    assert!(
        checked.status.success(),
        "{}",
        String::from_utf8_lossy(&checked.stderr)
    );
    assert_eq!(line.matches("\"verified\":\"lock\"").count(), 3, "{line}");
    let unlocked = run(&["data", "check", "arguana"], None);
    assert!(String::from_utf8_lossy(&unlocked.stdout).contains("\"verified\":\"unverified\""));

    let queries = data.join("retrieval/arguana/queries.jsonl");
    std::fs::write(
        &queries,
        "{\"_id\": \"q1\", \"text\": \"do tax cuts hurt growth\"}\n",
    )
    .unwrap();
    let refused = run(&["data", "check", "arguana"], Some(&lock_file));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(
        stderr.contains("queries.jsonl: changed since its sha256 was recorded")
            && stderr.contains("sha256s.toml"),
        "{stderr}"
    );
}

/// `--precision auto` measures both precisions at load and says which it took and why; the
/// vectors it writes are that precision's (the cache keeps them apart).
#[test]
fn precision_auto_says_which_and_why() {
    let Some(model) = models_dir() else {
        sage_test_env::skip(
            module_path!(),
            "SAGE_MODELS_DIR/all-MiniLM-L6-v2 missing: --precision auto not run",
        );
        return;
    };
    let model = model.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let input = write(&dir, "t.jsonl", "{\"text\":\"A man plays the guitar.\"}\n");
    let out = sage(&[
        "embed",
        "--model",
        model,
        "--input",
        &input,
        "--no-cache",
        "--precision",
        "auto",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let line = stderr
        .lines()
        .find(|l| l.starts_with("sage: --precision auto for "))
        .unwrap_or_else(|| panic!("no verdict line: {stderr}"));
    assert!(
        (line.contains(": f32 (") || line.contains(": int8 ("))
            && line.contains("40 calibration texts"),
        "{line}"
    );
    let bad = sage(&[
        "embed",
        "--model",
        model,
        "--input",
        &input,
        "--precision",
        "fp8",
    ]);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("f32, bf16, int8, auto"));
}
