"""One Python reference metric over a JSON-lines file of {"text1", "text2"} pairs, the way SAGE
scores them: one call per pair, tokenizing inside each call, on one thread.

    python tests/python-reference/metrics_throughput.py METRIC INPUT OUTPUT

Writes one {"score": s} line per pair to OUTPUT. `cargo xtask metrics-throughput` times this whole
process (start, imports, reading, scoring, writing) against `sage score` on the same file, and
compares the scores. Each metric imports only its own stack (reference_metrics.py), so that no
metric is charged another's imports: python-Levenshtein; rouge_score and tiktoken; tiktoken;
rank_bm25 and tiktoken (TIKTOKEN_RS_ASSETS locates the cl100k file).
"""
import json
import sys


def main():
    metric, source, target = sys.argv[1:4]
    with open(source, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    pairs = [(r["text1"], r["text2"]) for r in rows]
    if metric == "levenshtein":
        import Levenshtein
        scores = [Levenshtein.ratio(a, b) for a, b in pairs]
    else:
        import reference_metrics as g
        if metric == "rouge":
            scores = [g.rouge(a, b) for a, b in pairs]
        elif metric == "jaccard":
            scores = [g.jaccard(a, b) for a, b in pairs]
        elif metric == "bm25":
            raw = [g.bm25_raw(a, b) for a, b in pairs]
            low, high = min(raw), max(raw)
            scores = [(r - low) / (high - low) if high > low else 0.5 for r in raw]
        else:
            sys.exit(f"unknown metric {metric!r}")
    with open(target, "w", encoding="utf-8") as out:
        for s in scores:
            out.write(json.dumps({"score": s}) + "\n")


if __name__ == "__main__":
    main()
