"""Pairs/s of the Python reference metrics on the inputs of crates/sage-metrics/benches/metrics.rs.

Single thread, one call per pair, tokenizing inside each call as SAGE does. Run like
golden_metrics.py (needs TIKTOKEN_RS_ASSETS); SAGE_DATA_DIR selects STS-B for the sentence shape.
"""
import json
import os
import time

import golden_metrics as g  # sets up tiktoken from the tiktoken-rs assets

here = os.path.dirname(os.path.abspath(__file__))
fixture = [json.loads(l) for l in open(os.path.join(here, "..", "..", "data", "fixtures", "metric_pairs.jsonl"), encoding="utf-8")]
documents = [(p["text1"], p["text2"]) for p in fixture if len(p["text1"]) > 1000 and len(p["text2"]) > 1000 and p["text1"] != p["text2"]]
if os.environ.get("SAGE_DATA_DIR"):
    rows = [json.loads(l) for l in open(os.path.join(os.environ["SAGE_DATA_DIR"], "sts/stsb/test.jsonl"), encoding="utf-8")]
    sentences = [(r["sentence1"], r["sentence2"]) for r in rows]
else:
    sentences = [(p["text1"], p["text2"]) for p in fixture if len(p["text1"]) < 200 and len(p["text2"]) < 200]


def bm25(pairs):
    import numpy as np
    raw = np.array([g.bm25_raw(a, b) for a, b in pairs])
    return (raw - raw.min()) / (raw.max() - raw.min())


metrics = {
    "levenshtein": lambda pairs: [g.Levenshtein.ratio(a, b) for a, b in pairs],
    "rouge": lambda pairs: [g.rouge(a, b) for a, b in pairs],
    "jaccard": lambda pairs: [g.jaccard(a, b) for a, b in pairs],
    "bm25": bm25,
}
for shape, pairs in (("document", documents), ("sentences", sentences)):
    for name, fn in metrics.items():
        reps, start = 0, time.perf_counter()
        while time.perf_counter() - start < 2.0:
            fn(pairs)
            reps += 1
        rate = reps * len(pairs) / (time.perf_counter() - start)
        print(f"{shape:10s} {name:12s} {rate:12.0f} pairs/s")
