"""PTEB's MTEB result files through MTEB's own loader (mteb from PyPI)."""

import json

import pytest

from conftest import MIRROR


def test_pteb_writes_results_mtebs_loader_reads(sage_cli, minilm, smollm2, tmp_path):
    mteb_cache = pytest.importorskip("mteb.cache")
    results = tmp_path / "mteb"
    report = json.loads(
        sage_cli(
            "run", "pteb", "--model", minilm, "--paraphraser", smollm2,
            "--dataset", "stsb/test", "--max-rows", 8, "--runs", 1,
            "--data-dir", MIRROR, "--no-paraphrase-cache", "--no-cache",
            "--mteb-output", results,
        )
    )
    original = report["datasets"][0]["original"]
    loaded = mteb_cache.ResultCache(results).load_results(include_remote=False)
    [model] = loaded.model_results
    assert model.model_name == report["encoder"]["model_id"]
    [task] = model.task_results
    assert task.task_name == "STSBenchmark"
    assert task.get_score() == pytest.approx(original, abs=1e-12)
    assert task.scores["test"][0]["hf_subset"] == "default"


def test_multilingual_results_carry_each_subset_and_its_languages(
    sage_cli, minilm, smollm2, tmp_path
):
    """STS17's six official tracks (the fixture's first pairs of each): one MTEB file, one
    entry per subset with MTEB's subset name and its languages, read back by MTEB's loader."""
    mteb_cache = pytest.importorskip("mteb.cache")
    results = tmp_path / "mteb"
    report = json.loads(
        sage_cli(
            "run", "pteb", "--model", minilm, "--paraphraser", smollm2,
            "--dataset", "sts17/test", "--max-rows", 3, "--runs", 1,
            "--data-dir", MIRROR, "--no-paraphrase-cache", "--no-cache",
            "--mteb-output", results,
        )
    )
    ours = {d["subset"]: (d["languages"], d["original"]) for d in report["datasets"]}
    assert sorted(ours) == ["ar-ar", "en-ar", "en-en", "en-tr", "es-en", "es-es"]
    written = json.loads(next(results.rglob("STS17.json")).read_text())
    entries = {e["hf_subset"]: e for e in written["scores"]["test"]}
    assert entries["en-ar"]["languages"] == ["eng-Latn", "ara-Arab"]
    assert entries["en-en"]["languages"] == ["eng-Latn"]
    assert entries["es-es"]["languages"] == ["spa-Latn"]
    for subset, (_, original) in ours.items():
        assert entries[subset]["main_score"] == pytest.approx(original, abs=1e-12)
    loaded = mteb_cache.ResultCache(results).load_results(include_remote=False)
    [model] = loaded.model_results
    [task] = model.task_results
    assert task.task_name == "STS17"
    loaded_subsets = {s["hf_subset"]: s for s in task.scores["test"]}
    assert set(loaded_subsets) == set(ours)
    assert loaded_subsets["en-tr"]["languages"] == ["eng-Latn", "tur-Latn"]
