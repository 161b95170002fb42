"""sage's throughput suite against sentence-transformers' ``encode``, side by side, in one sitting.

For each model folder: ``sage run throughput`` (the binary given, a whole process; the suite
times the model's embed calls, not the start-up), then the same suite from Python on the same
model loaded by sentence-transformers (``sage_rs.run("throughput", encoder)``): the same texts,
drawn by the same seed from the same data, the same repeats, the same threads, and the same
batches (the batches sage plans: longest first, ``--batch-tokens`` padded tokens and at most
``--max-batch`` texts each). Then the physical bound of this CPU: the model's multiply-adds per
text against the cores' measured float32 peak (a large matrix product in PyTorch on the same
threads, best of 5: what the best BLAS reaches here, not the datasheet's).

Prints a markdown table and writes every figure to ``--out`` as JSON.

    python tests/python-reference/embedding_throughput.py --sage target/release/sage \\
        --data-dir ../shared/data MODEL_DIR...
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def plan_batches(lengths, batch_tokens, max_batch):
    """sage-embed's plan_batches (transformer.rs), line for line."""
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    batches = []
    for i in order:
        if batches:
            batch = batches[-1]
            if len(batch) < max_batch and max(lengths[batch[0]], 1) * (len(batch) + 1) <= batch_tokens:
                batch.append(i)
                continue
        batches.append([i])
    return batches


class SageBatches:
    """A SentenceTransformer's encode, called once per batch sage would make of the same texts."""

    def __init__(self, model, batch_tokens, max_batch):
        import numpy as np

        self.np = np
        self.model = model
        self.batch_tokens = batch_tokens
        self.max_batch = max_batch
        self.max_seq_length = model.max_seq_length

    def encode(self, texts, **_):
        ids = self.model.tokenizer(
            list(texts), truncation=True, max_length=self.max_seq_length
        )["input_ids"]
        out = [None] * len(texts)
        for batch in plan_batches([len(i) for i in ids], self.batch_tokens, self.max_batch):
            vectors = self.model.encode(
                [texts[i] for i in batch], batch_size=len(batch), convert_to_numpy=True
            )
            for i, v in zip(batch, vectors):
                out[i] = v
        return self.np.stack(out)


def fma_peak_gflops(threads):
    """float32 multiply-adds per second of a 2048² matrix product, best of 5, in GFLOP/s."""
    import torch

    torch.set_num_threads(threads)
    n = 2048
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)
    best = min(_timed(lambda: torch.mm(a, b)) for _ in range(5))
    return 2 * n**3 / best / 1e9


def _timed(f):
    start = time.perf_counter()
    f()
    return time.perf_counter() - start


def flops_per_text(config, tokens):
    """Multiply-adds ×2 of a BERT-shaped encoder on one text of ``tokens`` tokens: the four
    attention projections, the feed-forward pair and the two attention products per layer
    (embeddings, norms, softmax and pooling are a few percent and left out)."""
    h, i, layers = config["hidden_size"], config["intermediate_size"], config["num_hidden_layers"]
    per_layer = 2 * tokens * (4 * h * h + 2 * h * i) + 2 * 2 * tokens * tokens * h
    return layers * per_layer


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("models", nargs="+", help="sentence-transformers model folders")
    p.add_argument("--sage", required=True, help="the sage binary (a release build)")
    p.add_argument("--data-dir", default=os.environ.get("SAGE_DATA_DIR"))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--texts-per-length", type=int, default=128)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--batch-tokens", type=int, default=8192)
    p.add_argument("--max-batch", type=int, default=128)
    p.add_argument("--out", default="results/embedding-throughput.json")
    args = p.parse_args()

    import sentence_transformers
    import torch

    import sage_rs

    torch.set_num_threads(args.threads)
    peak = fma_peak_gflops(args.threads)
    options = {"texts_per_length": args.texts_per_length, "repeats": args.repeats}
    env = dict(os.environ, RAYON_NUM_THREADS=str(args.threads))
    rows, record = [], {
        "threads": args.threads,
        "fma_peak_gflops": peak,
        "torch": torch.__version__,
        "sentence_transformers": sentence_transformers.__version__,
        "models": {},
    }
    for folder in args.models:
        name = Path(folder).name
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "sage.json"
            subprocess.run(
                [args.sage, "run", "throughput", "--similarity", folder, "--data-dir", args.data_dir,
                 "--options", json.dumps(options), "--output", str(out)],
                check=True, env=env, stdout=subprocess.DEVNULL,
            )
            sage = json.loads(out.read_text())["report"]
        model = sentence_transformers.SentenceTransformer(folder, device="cpu")
        encoder = sage_rs.Encoder(
            SageBatches(model, args.batch_tokens, args.max_batch),
            name=name,
            # sentence-transformers 5 renamed get_sentence_embedding_dimension
            dimension=(getattr(model, "get_embedding_dimension", None)
                       or model.get_sentence_embedding_dimension)(),
            max_length=model.max_seq_length,
        )
        st = sage_rs.run("throughput", encoder, data_dir=args.data_dir, cache=False, **options)
        config = json.loads((Path(folder) / "config.json").read_text())
        record["models"][name] = {"sage": sage, "sentence_transformers": st}
        for s, t in zip(sage["lengths"], st["lengths"]):
            assert s["length"] == t["length"] and s["texts"] == t["texts"], (s, t)
            tokens_per_text = s["model_tokens"] / s["texts"]
            bound = peak * 1e9 / flops_per_text(config, tokens_per_text)
            rows.append((name, s, t, tokens_per_text, bound))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(record, indent=2))

    print(f"threads {args.threads}; float32 peak {peak:.0f} GFLOP/s (torch.mm 2048², best of 5); "
          f"torch {torch.__version__}, sentence-transformers {sentence_transformers.__version__}")
    print("| model | length | texts | model tokens/text | sage texts/s best (median, spread) "
          "| sentence-transformers texts/s best (median, spread) | sage ÷ ST (best, median) "
          "| bound texts/s | sage of bound |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, s, t, tokens, bound in rows:
        fig = lambda r: (f"{r['per_second']['best']:.1f} ({r['per_second']['median']:.1f}, "
                         f"{100 * r['seconds']['spread']:.0f}%)")
        ratio_best = s["per_second"]["best"] / t["per_second"]["best"]
        ratio_median = s["per_second"]["median"] / t["per_second"]["median"]
        print(f"| {name} | {s['length']} | {s['texts']} | {tokens:.0f} | {fig(s)} | {fig(t)} "
              f"| {ratio_best:.2f}× ({ratio_median:.2f}×) | {bound:.0f} "
              f"| {100 * s['per_second']['best'] / bound:.0f}% |")
    print()
    print("| model | mixed call texts | sage mixed s (parts s) | sentence-transformers mixed s (parts s) |")
    print("|---|---:|---:|---:|")
    for name, both in record["models"].items():
        cells = []
        for side in ("sage", "sentence_transformers"):
            m = both[side].get("mixed")
            cells.append("—" if m is None else
                         f"{m['seconds']['median']:.2f} ({m['parts_median']:.2f})")
        texts = (both["sage"].get("mixed") or {}).get("texts", "—")
        print(f"| {name} | {texts} | {cells[0]} | {cells[1]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
