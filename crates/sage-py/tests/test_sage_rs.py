"""The sage_rs package against the references and against the `sage` command."""

import json
import math
import os
import shutil
import subprocess
import warnings

import numpy as np
import pytest

import sage_rs
from sage_rs import measures

from conftest import FIXTURES, MIRROR, REPO


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def without(report, *keys):
    return {k: v for k, v in report.items() if k not in keys}


def assert_close(a, b, tolerance, where="report"):
    """Equal structure; numbers within `tolerance` (absolute)."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), where
        for k in a:
            assert_close(a[k], b[k], tolerance, f"{where}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_close(x, y, tolerance, f"{where}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert math.isclose(a, b, rel_tol=0, abs_tol=tolerance), f"{where}: {a} vs {b}"
    else:
        assert a == b, f"{where}: {a!r} vs {b!r}"


# --- metrics -----------------------------------------------------------------------------------


def test_metrics_equal_the_python_references():
    # golden values: tests/python-reference/golden_metrics.py (python-Levenshtein, rouge_score,
    # rank_bm25, tiktoken), the file the Rust parity tests read
    pairs = [(r["text1"], r["text2"]) for r in read_jsonl(FIXTURES / "metric_pairs.jsonl")]
    golden = read_jsonl(FIXTURES / "metric_pairs.golden.jsonl")
    assert sorted(sage_rs.metrics()) == ["bm25", "jaccard", "levenshtein", "rouge"]
    for metric in sage_rs.metrics():
        scores = sage_rs.score_pairs(metric, pairs)
        assert scores.dtype == np.float32 and scores.shape == (len(pairs),)
        np.testing.assert_allclose(scores, [g[metric] for g in golden], atol=1e-6, err_msg=metric)
    raw = sage_rs.score_pairs("bm25", pairs, raw=True)
    np.testing.assert_allclose(raw, [g["bm25_raw"] for g in golden], rtol=1e-6)
    a, b = pairs[0]
    assert sage_rs.score("rouge", a, b) == pytest.approx(golden[0]["rouge"], abs=1e-6)


def test_metric_errors_are_clear():
    with pytest.raises(sage_rs.SageError, match=r"raw scores only apply to bm25 \(rouge"):
        sage_rs.score_pairs("rouge", [("a", "b")], raw=True)
    with pytest.raises(sage_rs.SageError, match="no-such-model"):
        sage_rs.score_pairs("no-such-model", [("a", "b")])


# --- perturbations -----------------------------------------------------------------------------

TEXTS = [
    "The committee approved the budget on Monday, but three members did not vote.",
    "Researchers found 12 new species in 2019; none of them were insects.",
    "It is not raining in London today.",
]


def test_perturbations_are_the_clis_bytes(sage_cli, tmp_path):
    source = tmp_path / "texts.jsonl"
    source.write_text("".join(json.dumps({"text": t}) + "\n" for t in TEXTS))
    cases = [
        ("random-capitalisation", {}),
        ("character-deletion", {}),
        ("numerisation", {}),
        ("negation-toggle", {}),
        ("sentence-shuffle", {}),
        ("word-shuffle", {}),
        ("needle-insertion", {"p": 0.5, "pos": 0.25}),
        ("token-removal", {"size": 0.3, "pos": 0.2}),
        ("antonym-replacement", {}),
        ("synonym-replacement", {}),
        ("jumbling", {"n": 2}),
    ]
    wordnet = MIRROR / "wordnet" / "dict"
    for kind, params in cases:
        args = ["perturb", "--kind", kind, "--seed", 7, "--input", source, "--wordnet", wordnet]
        for k, v in params.items():
            args += ["--param", f"{k}={v}"]
        cli = [json.loads(line) for line in sage_cli(*args).splitlines()]
        ours = sage_rs.perturb(kind, TEXTS, seed=7, wordnet=wordnet, **params)
        assert ours == cli, kind


def test_perturbations_are_seeded():
    first = sage_rs.perturb("word-shuffle", TEXTS, seed=3)
    assert first == sage_rs.perturb("word-shuffle", TEXTS, seed=3)
    assert first != sage_rs.perturb("word-shuffle", TEXTS, seed=4)
    assert all(r["perturbation"] == "word-shuffle" and r["seed"] == 3 for r in first)
    kinds = {k["name"]: k for k in sage_rs.perturbation_kinds()}
    assert kinds["needle-insertion"]["parameters"][0]["name"] == "p"
    assert kinds["synonym-replacement"]["needs_wordnet"]
    with pytest.raises(sage_rs.SageError, match="unknown perturbation"):
        sage_rs.perturb("no-such-kind", TEXTS)
    with pytest.raises(TypeError, match="not one string"):
        sage_rs.perturb("word-shuffle", "one text")


# --- measures ----------------------------------------------------------------------------------


def test_measures():
    rng = np.random.default_rng(5)
    x = rng.normal(size=50)
    y = x + rng.normal(size=50)
    assert measures.pearson(x, y) == pytest.approx(np.corrcoef(x, y)[0, 1], abs=1e-12)
    ranks = lambda v: np.argsort(np.argsort(v))  # no ties in continuous draws
    assert measures.spearman(x, y) == pytest.approx(
        np.corrcoef(ranks(x), ranks(y))[0, 1], abs=1e-12
    )
    ms = measures.mean_std(x, ddof=1)
    assert ms["mean"] == pytest.approx(x.mean()) and ms["std"] == pytest.approx(x.std(ddof=1))
    assert measures.harmonic_mean([1, 2, 4]) == pytest.approx(3 / (1 + 0.5 + 0.25))
    # statsmodels multipletests([0.01, 0.04, 0.03], method="holm")
    holm = measures.holm([0.01, 0.04, 0.03])
    assert holm["adjusted"] == pytest.approx([0.03, 0.06, 0.06])
    assert measures.v_measure(["a", "a", "b"], [1, 1, 2])["v_measure"] == pytest.approx(1.0)
    c = measures.binary_classification([True, False, True, True], [True, True, False, True])
    assert c["accuracy"] == pytest.approx(0.5) and c["precision"] == pytest.approx(2 / 3)
    run = [("d1", 3.0), ("d2", 2.0), ("d3", 1.0)]
    qrels = {"d2": 1, "d3": 1}
    assert measures.reciprocal_rank(run, qrels) == pytest.approx(0.5)
    assert measures.average_precision(run, qrels) == pytest.approx((1 / 2 + 2 / 3) / 2)
    ideal = 1 + 1 / math.log2(3)
    assert measures.ndcg_at_k(run, qrels, 10) == pytest.approx(
        (1 / math.log2(3) + 1 / math.log2(4)) / ideal
    )
    hl = measures.hodges_lehmann(y, x, seed=1)
    assert hl == measures.hodges_lehmann(y, x, seed=1)
    w = measures.wilcoxon(y, x)
    assert 0 <= w["p_value"] <= 1
    with pytest.raises(sage_rs.SageError, match="pearson"):
        measures.pearson([1, 1, 1], [1, 2, 3])


# --- suites ------------------------------------------------------------------------------------


def test_every_registered_suite_is_listed():
    names = [s["name"] for s in sage_rs.suites()]
    assert names[:5] == ["human-pref", "robustness", "sensitivity", "clustering", "retrieval"]
    assert {"align-sim", "evalrank"} <= set(names)


def test_a_suite_run_equals_the_clis_report(sage_cli):
    for suite, cli_options, options in [
        ("sensitivity", ["--max-rows", 3, "--truncate-tokens", 256], {"max_rows": 3, "truncate_tokens": 256}),
        ("robustness", ["--max-rows", 3], {"max_rows": 3}),
    ]:
        cli = json.loads(
            sage_cli(
                "run", suite, "--similarity", "rouge", "--dataset", "cnn-dailymail/sample",
                "--seed", 11, "--data-dir", MIRROR, *cli_options,
            )
        )
        ours = sage_rs.run(
            suite, "rouge", datasets=["cnn-dailymail/sample"], seed=11, data_dir=MIRROR, **options
        )
        assert without(ours, "timings") == without(cli, "timings"), suite


def test_noise_from_python_equals_the_cli_and_takes_a_python_encoder(sage_cli):
    options = {"channels": ["keyboard-typos", "word-drop"], "rates": [0, 0.2], "lengths": [64]}
    cli = json.loads(
        sage_cli(
            "run", "noise", "--similarity", "bm25", "--seed", 11, "--data-dir", MIRROR,
            "--options", json.dumps(options),
        )
    )
    ours = sage_rs.run("noise", "bm25", seed=11, data_dir=MIRROR, **options)
    assert without(ours, "timings") == without(cli, "timings")
    assert [d["dataset"] for d in ours["datasets"]] == ["scifact/test", "stsb/test"]
    # a Python encoder ranks the corpus through its own vectors, in their roles
    model = LetterCounts()
    report = sage_rs.run("noise", model, data_dir=MIRROR, datasets=["scifact/test"], **options)
    typos = report["datasets"][0]["channels"][0]
    assert typos["channel"] == "keyboard-typos"
    assert typos["points"][0]["level"] == 0 and typos["points"][0]["retention"] == 1.0
    assert {"query", "document"} <= {name for name, _ in model.calls}


def test_suite_errors_name_what_is_wrong():
    with pytest.raises(sage_rs.SageError, match="unknown field `max_row`"):
        sage_rs.run("sensitivity", "rouge", data_dir=MIRROR, max_row=3)
    with pytest.raises(sage_rs.SageError, match='unknown suite "sensitivty"'):
        sage_rs.run("sensitivty", "rouge", data_dir=MIRROR)
    with pytest.raises(sage_rs.SageError, match="not a metric"):
        sage_rs.run("evalrank", "rouge", data_dir=MIRROR, level="word")
    with pytest.raises(sage_rs.SageError, match="name a split, as cnn-dailymail/SPLIT"):
        sage_rs.run("sensitivity", "rouge", data_dir=MIRROR, datasets=["cnn-dailymail"])


TICKETS = [
    {"body": "Card declined, twice", "queue": "payments"},
    {"body": "Password reset link expired", "queue": "account"},
    {"body": "Refund not received after ten days", "queue": "payments"},
    {"body": "Cannot log in after the update", "queue": "account"},
    {"body": "Charged twice for one order", "queue": "payments"},
    {"body": "Two-factor code never arrives", "queue": "account"},
]


def test_your_own_data_in_memory_equals_the_same_rows_in_a_file(tmp_path):
    csv = tmp_path / "tickets.csv"
    csv.write_text("body,queue\n" + "".join(f'"{r["body"]}",{r["queue"]}\n' for r in TICKETS))
    columns = {"text": "body", "label": "queue"}
    from_file = sage_rs.run("clustering", "jaccard", datasets=[csv], columns=columns, subsets=2)
    from_list = sage_rs.run(
        "clustering", "jaccard", datasets=[("tickets", TICKETS)], columns=columns, subsets=2
    )
    assert without(from_list, "timings") == without(from_file, "timings")
    assert [d["dataset"] for d in from_file["datasets"]] == ["tickets/test"]
    try:
        import pandas
    except ImportError:
        print("skipped: the DataFrame case: pandas is not installed")
    else:
        frame = pandas.DataFrame(TICKETS)
        from_frame = sage_rs.run(
            "clustering", "jaccard", datasets=[("tickets", frame)], columns=columns, subsets=2
        )
        assert without(from_frame, "timings") == without(from_file, "timings")
        # the same rows as Parquet (the wheel reads it through polars): the same checksum and scores
        try:
            frame.to_parquet(tmp_path / "tickets.parquet")
        except ImportError:
            print("skipped: the Parquet case: neither pyarrow nor fastparquet is installed")
        else:
            from_parquet = sage_rs.run(
                "clustering", "jaccard", datasets=[tmp_path / "tickets.parquet"],
                columns=columns, subsets=2,
            )
            assert without(from_parquet, "timings") == without(from_file, "timings")
    # retrieval from a BEIR dict: the same as the fixture mirror's copy of the same files
    corpus = {r["_id"]: {"title": r.get("title", ""), "text": r["text"]}
              for r in read_jsonl(MIRROR / "retrieval" / "scifact" / "corpus.jsonl")}
    queries = {r["_id"]: r["text"]
               for r in read_jsonl(MIRROR / "retrieval" / "scifact" / "queries.jsonl")}
    qrels = {}
    for line in (MIRROR / "retrieval" / "scifact" / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        query, doc, score = line.split("\t")
        qrels.setdefault(query, {})[doc] = int(score)
    mine = sage_rs.run(
        "retrieval", "bm25",
        datasets=[("scifact-copy", {"corpus": corpus, "queries": queries, "qrels": qrels})],
    )
    # the same folder on disk under the same name: the same report
    shutil.copytree(MIRROR / "retrieval" / "scifact", tmp_path / "scifact-copy")
    on_disk = sage_rs.run("retrieval", "bm25", datasets=[tmp_path / "scifact-copy"])
    assert without(mine, "timings") == without(on_disk, "timings")
    # and the registry's copy: the same report, dataset name aside (random draws are keyed by
    # the rows, not the name)
    shipped = sage_rs.run("retrieval", "bm25", datasets=["scifact/test"], data_dir=MIRROR)
    mine["datasets"][0]["dataset"] = "scifact/test"
    # the registry's files are checked against their pins (the fixtures are not the pinned
    # bytes); a user's own files have nothing to check against: that record alone differs
    checks = shipped["datasets"][0].pop("files")
    assert [c["verified"] for c in checks] == ["differs-from-pin"] * 3, checks
    assert without(mine, "timings") == without(shipped, "timings")
    with pytest.raises(sage_rs.SageError, match="takes beir; dataset tickets holds clustering"):
        sage_rs.run("retrieval", "bm25", datasets=[("tickets", TICKETS)], columns=columns)


def test_an_error_in_data_given_in_memory_names_the_data_not_a_scratch_file():
    # it once named `/tmp/sage-rs-data-…/tickets.jsonl:1`, a file the user never made
    with pytest.raises(sage_rs.SageError) as caught:
        sage_rs.run("clustering", "jaccard", datasets=[("tickets", TICKETS)],
                    columns={"text": "nope"})
    message = str(caught.value)
    assert "sage-rs-data-" not in message, message
    assert "dataset 'tickets' (a list in memory), row 1 (index 0): no column \"nope\"" in message, message


def test_missing_default_datasets_are_warnings():
    with pytest.warns(sage_rs.SkippedWarning) as caught:
        report = sage_rs.run("clustering", "jaccard", data_dir=MIRROR, subsets=1, max_texts=30)
    skipped = sorted(str(w.message).split(" is not")[0] for w in caught)
    assert skipped == [
        "clustering: skipped: dataset reddit",
        "clustering: skipped: dataset stackexchange",
    ]
    assert [d["dataset"] for d in report["datasets"]] == ["twentynewsgroups/test"]


# --- Python encoders ---------------------------------------------------------------------------


class LetterCounts:
    """A deterministic toy model with SentenceTransformer's prompt interface; records what each
    call was asked."""

    prompts = {"query": "query: ", "document": "passage: "}

    def __init__(self):
        self.calls = []

    def encode(self, sentences, prompt_name=None, batch_size=32):
        self.calls.append((prompt_name, len(sentences)))
        prefix = self.prompts.get(prompt_name, "")
        return np.array(
            [[(prefix + s).lower().count(c) for c in "etaoinshrdlu"] for s in sentences],
            dtype=np.float64,
        )


def test_a_python_encoder_runs_a_suite_with_its_roles():
    model = LetterCounts()
    encoder = sage_rs.Encoder(model, name="letter-counts")
    assert encoder.dimension == 12
    assert encoder.role_variants == {
        "plain": None,
        "query": "prompt_name=query",
        "document": "prompt_name=document",
    }
    report = sage_rs.run(
        "retrieval", encoder, data_dir=MIRROR, datasets=["scifact/test"], max_queries=5,
        max_docs=40,
    )
    assert report["similarity"].startswith("letter-counts")
    roles = {name for name, _ in model.calls}
    assert {"query", "document"} <= roles, model.calls
    # a bare model works too, named after its class
    plain = sage_rs.run("clustering", LetterCounts(), data_dir=MIRROR,
                        datasets=["twentynewsgroups/test"], subsets=1, max_texts=30)
    assert 0 <= plain["score"] <= 1


def test_transfer_trains_on_a_python_encoders_vectors():
    # SentEval's inner k-fold on the fixture mirror's MR excerpt (150 reviews): letter counts
    # carry little sentiment, so the accuracy is near chance, but it is a number with its
    # interval, chosen C per fold, and the same on a second run
    options = dict(data_dir=MIRROR, datasets=["mr/all"], k=3, seed=5)
    report = sage_rs.run("transfer", LetterCounts(), **options)
    task = report["tasks"][0]
    assert task["scheme"] == "inner-k-fold" and task["scored"] == 150
    assert 0.3 <= task["accuracy"] <= 0.8
    assert task["ci95"]["low"] <= task["accuracy"] <= task["ci95"]["high"]
    assert len(task["chosen_c"]) == 3
    again = sage_rs.run("transfer", LetterCounts(), **options)
    assert again["tasks"][0]["accuracy"] == task["accuracy"]
    # a classical metric has no vectors: not applicable, no score
    metric = sage_rs.run("transfer", "jaccard", **options)
    assert metric["applicable"] is False and metric["score"] is None


def test_throughput_times_a_python_encoder_through_its_own_encode_call():
    model = LetterCounts()
    # your own texts, in memory: sentences and a few essays, enough for every length
    texts = [{"id": f"s{i}", "text": f"Sentence {i} tells a short story about thing {i}."}
             for i in range(120)]
    texts += [{"id": f"e{i}", "text": f"Essay {i}. " + "How to grow a startup fast. " * 200}
              for i in range(3)]
    report = sage_rs.run(
        "throughput", model, datasets=[texts], kind="documents", data_dir=MIRROR,
        texts_per_length=5, repeats=2, latency_calls=3,
    )
    assert [l["length"] for l in report["lengths"]] == ["short", "medium", "window"]
    # each length's 5 texts, then all three lengths' 15 in one call: once unmeasured, then two
    # timed rounds, the mixed call first in the second; then 3 single-text calls (after
    # whatever call told the encoder's width)
    sizes = [n for _, n in model.calls]
    assert sizes[-15:] == [5, 5, 5, 15] * 2 + [15, 5, 5, 5] + [1] * 3, sizes
    mixed = report["mixed"]
    assert mixed["texts"] == 15 and len(mixed["seconds"]["runs"]) == 2
    # each round's mixed call against that round's lengths
    for r, ratio in enumerate(mixed["over_parts"]):
        parts = sum(l["seconds"]["runs"][r] for l in report["lengths"])
        assert abs(ratio - mixed["seconds"]["runs"][r] / parts) < 1e-9
    assert all(l["per_second"]["best"] > 0 for l in report["lengths"])
    # a Python encoder cannot count its tokens: no rate per token is made up for it
    assert all(l["tokens_per_second"] is None for l in report["lengths"])
    assert report["latency"]["calls"] == 3 and report["host"]["cores"] >= 1


def test_a_failing_encoder_is_reported_with_its_error():
    class Broken:
        def encode(self, sentences):
            if len(sentences) > 1:
                raise ValueError("the GPU is on fire")
            return np.zeros((1, 3), dtype=np.float32)

    with pytest.raises(sage_rs.SageError, match="the GPU is on fire") as e:
        sage_rs.score_pairs(Broken(), [("a", "b"), ("c", "d")])
    assert "Python encoder Broken" in str(e.value)

    class Short:
        def encode(self, sentences):
            return np.zeros((1, 3), dtype=np.float32)

    with pytest.raises(sage_rs.SageError, match=r"returned a 1x3 matrix for 4 texts"):
        sage_rs.score_pairs(Short(), [("a", "b"), ("c", "d")])
    with pytest.raises(TypeError, match="no encode method"):
        sage_rs.Encoder(42)


# --- real models -------------------------------------------------------------------------------


def test_sage_model_vectors(minilm):
    model = sage_rs.Model(str(minilm), cache=False)
    texts = ["A man is playing a guitar.", "Ein Mann spielt Gitarre.", "The stock market fell."]
    batch = model.embed(texts)
    assert batch.dtype == np.float32 and batch.shape == (3, model.dimension) == (3, 384)
    for i, text in enumerate(texts):
        np.testing.assert_allclose(model.embed([text])[0], batch[i], atol=1e-5)
    assert json.loads(model.identity_json)["pooling"] == "mean"


def test_sensitivity_over_minilm_equals_the_cli(sage_cli, minilm):
    common = ["--dataset", "cnn-dailymail/sample", "--max-rows", 3, "--truncate-tokens", 200,
              "--data-dir", MIRROR]
    cli = json.loads(sage_cli("run", "sensitivity", "--model", minilm, "--no-cache", *common))
    options = dict(datasets=["cnn-dailymail/sample"], max_rows=3, truncate_tokens=200,
                   data_dir=MIRROR)
    # the same engine (sage's candle model): the same vectors, the same numbers
    ours = sage_rs.run("sensitivity", sage_rs.Model(str(minilm), cache=False), **options)
    assert_close(without(ours, "timings"), without(cli, "timings"), 1e-6)

    # sentence-transformers (PyTorch) on the same weights: another engine, so the vectors agree
    # to float32 rounding (cosine > 0.9999, as the embedding golden tests) and the scores to 1e-4
    st = pytest.importorskip("sentence_transformers")
    model = st.SentenceTransformer(str(minilm), device="cpu")
    torch_report = sage_rs.run("sensitivity", model, name="all-MiniLM-L6-v2", **options)
    assert_close(
        without(torch_report, "timings", "similarity"), without(cli, "timings", "similarity"), 1e-4
    )


def test_a_role_keyword_overrides_the_same_keyword_given_for_every_call():
    seen = []

    class TaskModel:
        def encode(self, sentences, task=None):
            seen.append(task)
            return np.ones((len(sentences), 2), dtype=np.float32)

    encoder = sage_rs.Encoder(TaskModel(), name="task-model", task="text-matching")
    assert encoder.encode(["a"], "query").shape == (1, 2)
    encoder.encode(["a"], "plain")
    assert seen[-2:] == ["query", "text-matching"]


def test_report_writes_what_sage_report_writes(xtask_cli, tmp_path):
    sage, xtask = xtask_cli
    # the metrics on the fixtures: every SAGE category, no model, no paraphraser
    config = (REPO / "bench.toml").read_text()
    config = config.replace('models = ["auto"]', "models = []")
    (tmp_path / "bench.toml").write_text(config)
    out = tmp_path / "cli"
    done = subprocess.run(
        [xtask, "bench-all", "--quick", "--sage", sage, "--config", tmp_path / "bench.toml",
         "--out", out],
        capture_output=True, text=True, cwd=REPO,
        env={
            **{k: v for k, v in os.environ.items() if k != "SAGE_DATA_DIR"},
            "SAGE_CACHE_DIR": str(tmp_path / "cache"),
        },
    )
    assert done.returncode == 0, done.stderr
    mine = tmp_path / "python"
    shutil.copytree(out, mine, ignore=shutil.ignore_patterns("report.*", "summary.csv"))
    written = sage_rs.report(mine)
    for name in ("report.md", "summary.csv", "report.html"):
        assert (mine / name).read_bytes() == (out / name).read_bytes(), name
    assert written["html"] == str(mine / "report.html")
    answer = written["answer"]
    ranked = [r["similarity"] for r in answer["ranking"]["ranked"]]
    assert sorted(ranked) == ["bm25", "jaccard", "levenshtein", "rouge"]
    overall = [r["overall"]["score"] for r in answer["ranking"]["ranked"]]
    assert overall == sorted(overall, reverse=True)
    for c in answer["ranking"]["comparisons"]:
        assert c["p_holm"] >= c["difference"]["p_value"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(sage_rs.SageError, match="empty: no result files"):
        sage_rs.report(tmp_path / "empty")


def test_pteb_over_a_python_encoder_equals_the_cli(sage_cli, minilm, smollm2, tmp_path):
    common = ["--dataset", "stsb/test", "--max-rows", 6, "--runs", 1, "--data-dir", MIRROR,
              "--quality-encoder", minilm, "--paraphrase-cache", tmp_path / "cli.redb"]
    cli = json.loads(sage_cli("run", "pteb", "--model", minilm, "--no-cache",
                              "--paraphraser", smollm2, *common))
    model = sage_rs.Model(str(minilm), cache=False)

    class Wrapped:
        """A Python encoder around sage's vectors: the same numbers through the callback."""

        def encode(self, texts, **_):
            return model.embed(texts)

    ours = sage_rs.run(
        "pteb", Wrapped(), name="wrapped-minilm", datasets=["stsb/test"], max_rows=6, runs=1,
        data_dir=MIRROR, paraphraser=str(smollm2), quality_encoder=str(minilm),
        paraphrase_cache=str(tmp_path / "python.redb"),
    )
    assert [d["dataset"] for d in ours["datasets"]] == ["stsb"]
    for mine, theirs in zip(ours["datasets"], cli["datasets"]):
        for key in ("original", "delta", "paraphrased", "quality"):
            assert_close(mine[key], theirs[key], 1e-6)
    with pytest.raises(sage_rs.SageError, match="name the paraphrasing LLM"):
        sage_rs.run("pteb", Wrapped(), datasets=["stsb/test"], data_dir=MIRROR)
    with pytest.raises(sage_rs.SageError, match="pteb"):
        sage_rs.run("pteb", "jaccard", paraphraser=str(smollm2), data_dir=MIRROR)


def test_results_written_from_python_make_a_report(tmp_path):
    out = tmp_path / "results"
    sage = ("human-pref", "robustness", "sensitivity", "clustering", "retrieval")
    reports = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sage_rs.SkippedWarning)
        for metric in ("jaccard", "rouge"):
            for suite in sage:
                reports[metric, suite] = sage_rs.run(
                    suite, metric, data_dir=MIRROR, results_dir=out
                )

        def bag_of_letters(texts):
            return np.array(
                [[t.lower().count(c) + 1.0 for c in "etaoinshrdlu"] for t in texts],
                dtype=np.float32,
            )

        sage_rs.run("sensitivity", bag_of_letters, name="letters/v1", data_dir=MIRROR,
                    results_dir=out)
    envelope = json.loads((out / "jaccard" / "sage" / "robustness.json").read_text())
    assert envelope["schema"] == "sage-rs/result/1"
    assert envelope["similarity"] == {"kind": "metric", "name": "jaccard", "spec": "jaccard"}
    assert envelope["report"] == reports["jaccard", "robustness"]
    assert envelope["datasets"] and all("checksum" in d for d in envelope["datasets"])
    # a Python encoder's name becomes a folder name, as bench-all's labels
    letters = json.loads((out / "letters--v1" / "sage" / "sensitivity.json").read_text())
    # and its result says what the encoder embedded, in its own encode calls
    [work] = letters["run"]["embedding"]
    assert work["model"] == "letters/v1" and work["cached"] == 0, work
    assert work["embedded"] > 0 and work["seconds"] > 0, work
    assert "embedding" not in envelope["run"], "a metric embeds nothing"

    written = sage_rs.report(out)
    ranking = written["answer"]["ranking"]
    assert sorted(r["similarity"] for r in ranking["ranked"]) == ["jaccard", "rouge"]
    assert len(ranking["comparisons"]) == 1, ranking
    heatmap = written["answer"]["heatmap"]
    assert "letters--v1" in [row["similarity"] for row in heatmap["rows"]]
    assert "letters--v1: not ranked" in " ".join(ranking["not_compared"])
