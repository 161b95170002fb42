"""Golden scores of the four SAGE metrics on data/fixtures/metric_pairs.jsonl.

Writes data/fixtures/metric_pairs.golden.jsonl, which sage-metrics' tests compare against (1e-6).
The reference stack is the one SAGE used: python-Levenshtein `ratio`, rouge_score 0.1.2 with the
tiktoken cl100k_base encoder as tokenizer, Jaccard over sets of cl100k ids, rank_bm25 BM25Plus with
the reference as a one-document corpus, min-max normalised over the batch.

tiktoken needs the cl100k_base file; tiktoken-rs ships the identical file. Run with
    TIKTOKEN_RS_ASSETS=~/.cargo/registry/src/*/tiktoken-rs-0.12.1/assets python3 tests/python-reference/golden_metrics.py
and this script places it in a tiktoken cache directory.
"""
import json
import os
import sys
from importlib.metadata import version

import Levenshtein
import numpy as np

from reference_metrics import bm25_raw, jaccard, rouge, tokens  # noqa: F401 (throughput.py uses them)


# Real data from SAGE_DATA_DIR: only the scores and line numbers are written, never the texts.
REAL_SETS = [("sts/stsb/test.jsonl", "sentence1", "sentence2", 300),
             ("summarization/cnn_dailymail/sample.jsonl", "text", "summary", 60)]


def real_data(fixtures):
    root = os.environ.get("SAGE_DATA_DIR")
    if not root:
        print("SAGE_DATA_DIR unset: real-data goldens not regenerated", file=sys.stderr)
        return
    with open(os.path.join(fixtures, "real_pairs.golden.jsonl"), "w", encoding="utf-8") as out:
        for rel, ka, kb, n in REAL_SETS:
            rows = [json.loads(l) for l in open(os.path.join(root, rel), encoding="utf-8")][:n]
            raw = np.array([bm25_raw(r[ka], r[kb]) for r in rows])
            norm = (raw - raw.min()) / (raw.max() - raw.min())
            for i, (r, braw, bn) in enumerate(zip(rows, raw, norm)):
                a, b = r[ka], r[kb]
                out.write(json.dumps({
                    "file": rel, "line": i + 1, "reference_key": ka, "candidate_key": kb,
                    "levenshtein": Levenshtein.ratio(a, b), "rouge": rouge(a, b), "jaccard": jaccard(a, b),
                    "bm25_raw": float(braw), "bm25": float(bn),
                }) + "\n")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    fixtures = os.path.join(here, "..", "..", "data", "fixtures")
    pairs = [json.loads(l) for l in open(os.path.join(fixtures, "metric_pairs.jsonl"), encoding="utf-8")]
    raw = np.array([bm25_raw(p["text1"], p["text2"]) for p in pairs])
    norm = (raw - raw.min()) / (raw.max() - raw.min())
    with open(os.path.join(fixtures, "metric_pairs.golden.jsonl"), "w", encoding="utf-8") as out:
        for p, r, n in zip(pairs, raw, norm):
            a, b = p["text1"], p["text2"]
            out.write(json.dumps({
                "levenshtein": Levenshtein.ratio(a, b),
                "rouge": rouge(a, b),
                "jaccard": jaccard(a, b),
                "bm25_raw": float(r),
                "bm25": float(n),
                "cl100k_text1": tokens(a)[:12],
            }) + "\n")
    real_data(fixtures)
    print("python-Levenshtein", version("python-Levenshtein"), "rouge_score", version("rouge_score"),
          "rank_bm25", version("rank_bm25"), "tiktoken", version("tiktoken"), file=sys.stderr)


if __name__ == "__main__":
    main()
