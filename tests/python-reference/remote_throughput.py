"""Throughput of a remote embedder: sage against a plain client, same server, same batches,
same concurrency (issue 25's benchmark; a measurement, not a test).

The plain client is Python's standard library: a thread pool posting the batches, in order, to
`{base}/embeddings` and parsing the answers. sage is `sage embed --no-cache` with the same
`--request-batch` and `--concurrency`, timed as a whole process. Prints one JSON line.

    python3 tests/python-reference/remote_throughput.py --base http://127.0.0.1:7997/v1 \\
        --model all-MiniLM-L6-v2 --sage target/release/sage --texts 2000 --batch 32 --concurrency 4
"""
import argparse
import json
import os
import subprocess
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor


def texts(n):
    words = ("the quick brown fox jumps over a lazy dog while seven wizards "
             "box jovial quartz nymphs near a river bank").split()
    return [" ".join(words[(i * 7 + k) % len(words)] for k in range(8 + i % 24)) + f" #{i}"
            for i in range(n)]


def plain(base, model, batches, concurrency):
    def post(batch):
        body = json.dumps({"model": model, "input": batch, "encoding_format": "float"}).encode()
        req = urllib.request.Request(base + "/embeddings", data=body,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=300) as r:
            data = json.loads(r.read())["data"]
        assert len(data) == len(batch)
        return len(data)

    start = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        done = sum(pool.map(post, batches))
    return done, time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--sage", required=True)
    ap.add_argument("--texts", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    all_texts = texts(a.texts)
    batches = [all_texts[i:i + a.batch] for i in range(0, len(all_texts), a.batch)]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "texts.jsonl")
        with open(path, "w") as f:
            for t in all_texts:
                f.write(json.dumps({"text": t}) + "\n")
        plain_best = sage_best = float("inf")
        for _ in range(a.repeats):  # alternate, so drift hits both alike
            n, seconds = plain(a.base, a.model, batches, a.concurrency)
            plain_best = min(plain_best, seconds)
            start = time.perf_counter()
            subprocess.run([a.sage, "embed", "--no-cache", "--model", f"openai:{a.model}@{a.base}",
                            "--request-batch", str(a.batch), "--concurrency", str(a.concurrency),
                            "--input", path, "--output", os.path.join(tmp, "out.jsonl")],
                           check=True, stderr=subprocess.DEVNULL)
            sage_best = min(sage_best, time.perf_counter() - start)
    print(json.dumps({
        "texts": a.texts, "batch": a.batch, "concurrency": a.concurrency,
        "plain_texts_per_s": round(a.texts / plain_best, 1),
        "sage_texts_per_s": round(a.texts / sage_best, 1),
        "ratio": round(plain_best / sage_best, 3),
    }))


if __name__ == "__main__":
    main()
