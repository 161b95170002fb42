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
import re
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


def _plain(value: Any) -> Any:
    """A cell of in-memory data as JSON: numpy scalars and arrays as their Python values."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"a cell of type {type(value).__name__} is not text, a number or a list")


def _write_rows(path: str, rows: Iterable[dict]) -> None:
    with open(path, "w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(dict(row), ensure_ascii=False, default=_plain, allow_nan=False))
            out.write("\n")


def _records(data: Any) -> Optional[Iterable[dict]]:
    """The rows of a pandas DataFrame, an HF ``datasets.Dataset`` or a list of dicts."""
    if hasattr(data, "to_dict") and hasattr(data, "columns"):  # pandas.DataFrame
        return data.to_dict(orient="records")
    if hasattr(data, "column_names") and hasattr(data, "features"):  # datasets.Dataset
        return iter(data)
    if isinstance(data, (list, tuple)) and data and all(isinstance(r, dict) for r in data):
        return data
    return None


def _dataset_args(datasets: Any, scratch: str, written: dict) -> List[str]:
    """``datasets=`` as the arguments sage reads: names and paths as given; in-memory data (a
    DataFrame, an HF Dataset, a list of dicts, or ``{"corpus", "queries", "qrels"}`` for
    retrieval), alone or as a ``(name, data)`` pair, written into ``scratch`` as JSON lines (a
    BEIR folder for retrieval) under its name, so it is read, checked and checksummed exactly
    as the same rows in a file. ``written`` gets each file written, as the user would name it
    (errors then name the user's data, not a scratch file they never made)."""
    if isinstance(datasets, (str, os.PathLike)) or _records(datasets) is not None or (
        isinstance(datasets, dict) and "corpus" in datasets
    ):
        datasets = [datasets]
    args = []
    for i, item in enumerate(datasets):
        if isinstance(item, (str, os.PathLike)):
            args.append(os.fspath(item))
            continue
        named = isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)
        name, data = item if named else (f"data{i + 1}", item)
        if isinstance(data, dict) and {"corpus", "queries", "qrels"} <= set(data):
            folder = os.path.join(scratch, name)
            os.makedirs(os.path.join(folder, "qrels"))
            _write_rows(os.path.join(folder, "corpus.jsonl"), _beir_rows(data["corpus"]))
            _write_rows(os.path.join(folder, "queries.jsonl"), _beir_rows(data["queries"]))
            # line n of corpus and queries is their entry n; qrels are written after a header
            for part, file, header in [("corpus", "corpus.jsonl", 0),
                                       ("queries", "queries.jsonl", 0),
                                       ("qrels", os.path.join("qrels", "test.tsv"), 1)]:
                written[os.path.join(folder, file)] = (
                    f"dataset {name!r} (in memory), its {part!r}", ("entry", header))
            written[folder] = (f"dataset {name!r} (in memory)", None)
            with open(os.path.join(folder, "qrels", "test.tsv"), "w", encoding="utf-8") as out:
                out.write("query-id\tcorpus-id\tscore\n")
                for query, judged in data["qrels"].items():
                    for doc, relevance in judged.items():
                        out.write(f"{query}\t{doc}\t{int(relevance)}\n")
            args.append(folder)
            continue
        rows = _records(data)
        if rows is None:
            raise SageError(
                f"datasets[{i}]: expected a name, a path, a DataFrame, a datasets.Dataset, a list "
                f"of dicts or a {{'corpus', 'queries', 'qrels'}} dict, got {type(data).__name__}"
            )
        path = os.path.join(scratch, f"{name}.jsonl")
        _write_rows(path, rows)
        written[path] = (f"dataset {name!r} (a {type(data).__name__} in memory)", ("row", 0))
        args.append(path)
    return args


def _as_given(message: str, written: dict) -> str:
    """``message`` with each scratch file it names said as the user's data: ``/tmp/…/t.jsonl:3:``
    becomes ``dataset 't' (a DataFrame in memory), row 3 (index 2):`` (line n of the file written
    is row n of the data, at position n - 1)."""
    for path in sorted(written, key=len, reverse=True):
        label, unit = written[path]
        if unit is not None:
            word, header = unit

            def said(m, label=label, word=word, header=header):
                n = int(m[1]) - header
                return f"{label}, {word} {n} (index {n - 1}):" if n >= 1 else f"{label}, its header:"

            message = re.sub(re.escape(path) + r":(\d+):", said, message)
        message = message.replace(path, label)
    return message


def _beir_rows(part: Any) -> Iterable[dict]:
    """BEIR's corpus or queries given as ``{id: text}`` or ``{id: {"title", "text"}}`` (the
    ``beir`` package's form), or as rows with ``_id``."""
    if isinstance(part, dict):
        for key, value in part.items():
            row = dict(value) if isinstance(value, dict) else {"text": value}
            row["_id"] = str(key)
            yield row
    else:
        yield from (_records(part) or [])


def run(
    suite: str,
    similarity: Subject,
    *,
    datasets: Any = (),
    seed: int = DEFAULT_SEED,
    data_dir: Optional[Union[str, os.PathLike]] = None,
    cache: bool = True,
    name: Optional[str] = None,
    results_dir: Optional[Union[str, os.PathLike]] = None,
    kind: Optional[str] = None,
    columns: Optional[dict] = None,
    dataset_tables: Sequence[Union[str, os.PathLike]] = (),
    **options: Any,
) -> dict:
    """Runs a suite of the registry (see ``suites()``) and returns its report, the dict
    ``sage run SUITE`` writes.

    ``similarity``: a metric name, a model spec, a ``Model``, an ``Encoder``, or any model with
    ``encode`` (``name`` names it in the report). ``datasets``: ``"name/split"``, a path of your
    own (a file: JSON lines, CSV, TSV, Parquet; a folder: BEIR or one file per split;
    ``"PATH#SPLIT"``), or in-memory data — a pandas DataFrame, an HF ``datasets.Dataset``, a list
    of dicts, for retrieval ``{"corpus", "queries", "qrels"}`` — alone or as ``(name, data)``;
    default: the suite's paper datasets in the local mirror (each one missing is a
    ``SkippedWarning``). ``kind`` and ``columns`` (``{"text": "body"}``: ours to yours) describe
    your data when its columns do not say; ``dataset_tables``: TOML files of
    ``[datasets.NAME]`` tables. ``data_dir``: the data mirror (default ``$SAGE_DATA_DIR``).
    ``options``: the suite's own, e.g. ``max_rows=50`` or ``truncate_tokens=None``; an unknown
    one is an error naming it. ``results_dir``: also write the result file there, as ``cargo
    xtask bench-all`` does (``<name>/<suite>/<task>.json``), so that ``report(results_dir)``
    ranks it with the others.
    """
    import tempfile

    written: dict = {}
    with tempfile.TemporaryDirectory(prefix="sage-rs-data-") as scratch:
        arguments = _dataset_args(datasets, scratch, written)
        try:
            report, notes, _written = _native.run_suite(
                suite,
                _subject(similarity, name),
                None if data_dir is None else os.fspath(data_dir),
                arguments,
                seed,
                json.dumps(options),
                cache,
                None if results_dir is None else os.fspath(results_dir),
                kind,
                None if columns is None else {str(k): str(v) for k, v in columns.items()},
                [os.fspath(t) for t in dataset_tables],
            )
        except SageError as e:
            if not written:
                raise
            raise SageError(_as_given(str(e), written)) from None
    for note in notes:
        warnings.warn(f"{suite}: {_as_given(note, written)}", SkippedWarning, stacklevel=2)
    return json.loads(report)
