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
