"""sage-rs for Python: evaluate text-embedding models and text-similarity metrics.

The classical metrics (``score``, ``score_pairs``), every perturbation (``perturb``: seeded, the
same bytes as ``sage perturb``), the measures (``sage_rs.measures``), and every suite of the
registry (``run``: SAGE's five tasks, ALIGN-SIM, EvalRank) over a classical metric, one of sage's
own models (``Model``, or a model spec string), or any Python embedding model (anything with
``encode(list[str]) -> array``, wrapped by ``Encoder``). Reports are the dicts the ``sage``
command writes as JSON. Rust does the work with the GIL released.
"""

from __future__ import annotations

import json
import os
import warnings
from typing import Any, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _native, measures
from ._native import Model, SageError
from .encoder import Encoder

__all__ = [
    "DEFAULT_SEED",
    "Encoder",
    "Model",
    "SageError",
    "SkippedWarning",
    "measures",
    "metrics",
    "perturb",
    "perturbation_kinds",
    "report",
    "run",
    "score",
    "score_pairs",
    "suites",
]

DEFAULT_SEED: int = _native.default_seed()
"""The seed every sage command uses when none is given."""

Subject = Union[str, Model, Encoder, Any]


class SkippedWarning(UserWarning):
    """A run left something out (a default dataset missing from the data mirror) and says why."""


def _subject(similarity: Subject, name: Optional[str] = None) -> Any:
    if isinstance(similarity, (str, Model, Encoder)):
        return similarity
    return Encoder(similarity, name=name)


def metrics() -> List[str]:
    """The classical metrics: levenshtein, rouge, jaccard, bm25."""
    return list(_native.metrics())


def score_pairs(
    similarity: Subject,
    pairs: Iterable[Tuple[str, str]],
    *,
    raw: bool = False,
    cache: bool = True,
) -> np.ndarray:
    """One float32 score per ``(reference, candidate)`` pair, as ``sage score`` gives them.

    ``similarity`` is a metric name, a model spec (folder, name under ``$SAGE_MODELS_DIR``, hub
    id), a ``Model``, or any Python embedding model (compared by cosine). BM25 is min-max
    normalised over the whole batch unless ``raw``.
    """
    pairs = list(pairs)
    text1 = [a for a, _ in pairs]
    text2 = [b for _, b in pairs]
    return _native.score_pairs(_subject(similarity), text1, text2, raw, cache)


def score(similarity: Subject, reference: str, candidate: str, *, raw: bool = False) -> float:
    """The score of one pair (BM25 on one pair is raw BM25Plus: min-max of one value is
    meaningless, so ask for ``raw=True``)."""
    return float(score_pairs(similarity, [(reference, candidate)], raw=raw)[0])


def perturbation_kinds() -> List[dict]:
    """Every perturbation kind with its parameters (default, range) and whether it reads
    WordNet."""
    return json.loads(_native.perturbation_kinds())


def perturb(
    kind: str,
    texts: Sequence[str],
    *,
    seed: int = DEFAULT_SEED,
    wordnet: Optional[Union[str, os.PathLike]] = None,
    **params: Any,
) -> List[dict]:
    """Perturbs each text as ``sage perturb --kind KIND --seed SEED --param k=v`` does, text
    ``i`` with the generator of (seed, perturbation id, i). Each record has ``text``,
    ``perturbation`` (its id with parameters), ``seed`` and the provenance fields. WordNet kinds
    read ``wordnet`` (the WordNet 3.0 dict folder), else ``$SAGE_DATA_DIR/wordnet/dict``."""
    if isinstance(texts, str):
        raise TypeError("texts must be a list of strings, not one string")
    return json.loads(
        _native.perturb(
            kind,
            list(texts),
            seed,
            [(k, str(v)) for k, v in params.items()],
            None if wordnet is None else os.fspath(wordnet),
        )
    )


def suites() -> List[dict]:
    """The suite registry: name, summary, default datasets, whether a metric can run it."""
    return json.loads(_native.suites())


def report(
    results_dir: Union[str, os.PathLike],
    *,
    mteb_results: Optional[Union[str, os.PathLike]] = None,
) -> dict:
    """Writes the report of a results folder (``<similarity>/<suite>/<task>.json`` files, as
    ``cargo xtask bench-all`` writes them) into that folder, as ``sage report`` does:
    ``report.html`` (the answer first: heatmap, ranking with paired-bootstrap significance,
    then every table and plot), ``report.md`` and ``summary.csv``. ``mteb_results``: an MTEB
    results folder whose published scores go beside PTEB's original scores.

    Returns the paths written (``markdown``, ``csv``, ``html``), ``result_files``, and
    ``answer``: the heatmap (``columns``, ``rows`` with ``cells`` of ``score`` and ``ci95``,
    ``best``: per column the indices of the best rows, every one of them on a tie) and the ranking (``ranked``, ``comparisons`` with the difference, its interval,
    ``p_value``, ``p_holm`` and ``significant``).
    """
    return json.loads(
        _native.report(
            os.fspath(results_dir),
            None if mteb_results is None else os.fspath(mteb_results),
        )
    )


def run(
    suite: str,
    similarity: Subject,
    *,
    datasets: Sequence[str] = (),
    seed: int = DEFAULT_SEED,
    data_dir: Optional[Union[str, os.PathLike]] = None,
    cache: bool = True,
    name: Optional[str] = None,
    results_dir: Optional[Union[str, os.PathLike]] = None,
    **options: Any,
) -> dict:
    """Runs a suite of the registry (see ``suites()``) and returns its report, the dict
    ``sage run SUITE`` writes.

    ``similarity``: a metric name, a model spec, a ``Model``, an ``Encoder``, or any model with
    ``encode`` (``name`` names it in the report). ``datasets`` as ``"name/split"`` (default: the
    suite's paper datasets in the local mirror; each one missing is a ``SkippedWarning``).
    ``data_dir``: the data mirror (default ``$SAGE_DATA_DIR``). ``options``: the suite's own,
    e.g. ``max_rows=50`` or ``truncate_tokens=None``; an unknown one is an error naming it.
    ``results_dir``: also write the result file there, as ``cargo xtask bench-all`` does
    (``<name>/<suite>/<task>.json``), so that ``report(results_dir)`` ranks it with the others.
    """
    if isinstance(datasets, str):
        datasets = [datasets]
    report, notes, _written = _native.run_suite(
        suite,
        _subject(similarity, name),
        None if data_dir is None else os.fspath(data_dir),
        list(datasets),
        seed,
        json.dumps(options),
        cache,
        None if results_dir is None else os.fspath(results_dir),
    )
    for note in notes:
        warnings.warn(f"{suite}: {note}", SkippedWarning, stacklevel=2)
    return json.loads(report)
