"""The evaluation measures of sage-rs (those ``sage measure`` computes), checked against scipy,
scikit-learn, statsmodels and trec_eval in the Rust tests."""

from __future__ import annotations

import json
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from . import _native

__all__ = [
    "pearson",
    "spearman",
    "wilcoxon",
    "hodges_lehmann",
    "v_measure",
    "binary_classification",
    "holm",
    "mean_std",
    "harmonic_mean",
    "ndcg_at_k",
    "reciprocal_rank",
    "average_precision",
]


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
    """Pearson's r (as scipy.stats.pearsonr)."""
    return _native.pearson(list(map(float, x)), list(map(float, y)))


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rho, ties averaged (as scipy.stats.spearmanr)."""
    return _native.spearman(list(map(float, x)), list(map(float, y)))


def wilcoxon(x: Sequence[float], y: Sequence[float]) -> dict:
    """Two-sided Wilcoxon signed-rank test of x - y (as scipy.stats.wilcoxon)."""
    return json.loads(_native.wilcoxon(list(map(float, x)), list(map(float, y))))


def hodges_lehmann(
    x: Sequence[float],
    y: Sequence[float],
    *,
    confidence: float = 0.95,
    resamples: int = 1000,
    seed: Optional[int] = None,
) -> dict:
    """Hodges-Lehmann estimate of x - y with a seeded percentile-bootstrap interval."""
    seed = _native.default_seed() if seed is None else seed
    return json.loads(
        _native.hodges_lehmann(
            list(map(float, x)), list(map(float, y)), confidence, resamples, seed
        )
    )


def v_measure(truth: Sequence, predicted: Sequence) -> dict:
    """Homogeneity, completeness and V-measure (as scikit-learn); labels of any type."""
    return json.loads(_native.v_measure(list(map(str, truth)), list(map(str, predicted))))


def binary_classification(truth: Sequence[bool], predicted: Sequence[bool]) -> dict:
    """Accuracy, precision, recall and F1 of binary labels (true = positive)."""
    return json.loads(
        _native.binary_classification(list(map(bool, truth)), list(map(bool, predicted)))
    )


def holm(p_values: Sequence[float], *, alpha: float = 0.05) -> dict:
    """Holm-adjusted p-values (as statsmodels' multipletests with "holm")."""
    return json.loads(_native.holm(list(map(float, p_values)), alpha))


def mean_std(values: Sequence[float], *, ddof: int = 0) -> dict:
    """Mean and standard deviation with ``ddof`` degrees of freedom removed."""
    return json.loads(_native.mean_std(list(map(float, values)), ddof))


def harmonic_mean(values: Sequence[float]) -> float:
    """Harmonic mean (as scipy.stats.hmean)."""
    return _native.harmonic_mean(list(map(float, values)))


Ranking = Sequence[Tuple[str, float]]


def _run(run: Ranking) -> List[Tuple[str, float]]:
    return [(str(doc), float(score)) for doc, score in run]


def ndcg_at_k(run: Ranking, qrels: Mapping[str, int], k: int) -> float:
    """NDCG@k of one query: ``run`` is (document id, score) pairs, ``qrels`` the judged
    relevance of each document (trec_eval ndcg_cut.k)."""
    return _native.ndcg_at_k(_run(run), dict(qrels), k)


def reciprocal_rank(run: Ranking, qrels: Mapping[str, int], k: Optional[int] = None) -> float:
    """Reciprocal rank of the first relevant document, cut at ``k`` when given
    (trec_eval recip_rank)."""
    return _native.reciprocal_rank(_run(run), dict(qrels), k)


def average_precision(run: Ranking, qrels: Mapping[str, int]) -> float:
    """Average precision of one query (trec_eval map)."""
    return _native.average_precision(_run(run), dict(qrels))
