"""sage's throughput suite against sentence-transformers' ``encode``, side by side, in one sitting.

For each model folder: ``sage run throughput`` (the binary given, a whole process; the suite
times the model's embed calls, not the start-up), then the same suite from Python on the same
model loaded by sentence-transformers (``sage_rs.run("throughput", encoder)``): the same texts,
drawn by the same seed from the same data, the same repeats, the same threads, and the same
batches (the batches sage plans: longest first, ``--batch-tokens`` padded tokens and at most
``--max-batch`` texts each). Then the physical bound of this CPU: the model's multiply-adds per
text against the cores' measured float32 peak (a large matrix product in PyTorch on the same
threads, best of 5: what the best BLAS reaches here, not the datasheet's).

The two sides are timed in ``--rounds`` rounds, each round both suites (``--repeats`` timed runs
per length each), the side that goes first alternating. Each round gives a ratio per length
(sage's median run against sentence-transformers' in the same round); the table gives the
median of those ratios and their range, beside each side's best and median over every run. On
a shared machine whose speed moves by a third between minutes, only figures timed minutes apart
can be set against each other: one sitting that ran sentence-transformers twenty minutes after
sage measured its speed then, not its speed against sage's.

Prints a markdown table and writes every figure to ``--out`` as JSON.

    python tests/python-reference/embedding_throughput.py --sage target/release/sage \\
        --data-dir ../shared/data MODEL_DIR...
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cpu_features import HIDE, describe, run_as


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
    p.add_argument("--rounds", type=int, default=3, help="rounds of both sides, alternating")
    p.add_argument("--repeats", type=int, default=2, help="timed runs per length, per side and round")
    p.add_argument("--batch-tokens", type=int, default=4096)
    p.add_argument("--max-batch", type=int, default=128)
    p.add_argument("--out", default="results/embedding-throughput.json")
    p.add_argument("--cpu", choices=list(HIDE), default="native",
                   help="run both sides as on a CPU without AVX-512 (see cpu_features.py)")
    args = p.parse_args()
    if args.rounds < 1 or args.repeats < 1:
        p.error("--rounds and --repeats must be at least 1")
    run_as(args.cpu)

    import sentence_transformers
    import torch

    import sage_rs

    torch.set_num_threads(args.threads)
    peak = fma_peak_gflops(args.threads)
    options = {"texts_per_length": args.texts_per_length, "repeats": args.repeats}
    env = dict(os.environ, RAYON_NUM_THREADS=str(args.threads))
    record = {
        "cpu": describe(args.cpu),
        "threads": args.threads,
        "rounds": args.rounds,
        "repeats_per_round": args.repeats,
        "fma_peak_gflops": peak,
        "torch": torch.__version__,
        "sentence_transformers": sentence_transformers.__version__,
        "models": {},
    }
    for folder in args.models:
        name = Path(folder).name
        model = sentence_transformers.SentenceTransformer(folder, device="cpu")
        encoder = sage_rs.Encoder(
            SageBatches(model, args.batch_tokens, args.max_batch),
            name=name,
            # sentence-transformers 5 renamed get_sentence_embedding_dimension
            dimension=(getattr(model, "get_embedding_dimension", None)
                       or model.get_sentence_embedding_dimension)(),
            max_length=model.max_seq_length,
        )

        def run_sage():
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp) / "sage.json"
                subprocess.run(
                    [args.sage, "run", "throughput", "--similarity", folder, "--data-dir",
                     args.data_dir, "--options", json.dumps(options), "--output", str(out)],
                    check=True, env=env, stdout=subprocess.DEVNULL,
                )
                return json.loads(out.read_text())["report"]

        def run_st():
            return sage_rs.run("throughput", encoder, data_dir=args.data_dir, cache=False, **options)

        rounds = []
        for r in range(args.rounds):
            if r % 2 == 0:
                sage = run_sage()
                st = run_st()
            else:
                st = run_st()
                sage = run_sage()
            rounds.append({"sage": sage, "sentence_transformers": st})
            print(f"{name}: round {r + 1} of {args.rounds} done", file=sys.stderr, flush=True)
        config = json.loads((Path(folder) / "config.json").read_text())
        record["models"][name] = {"rounds": rounds, "config": config}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(record, indent=2))
    print_tables(record)
    return 0


def pooled(rounds, side, pick):
    """Every run of one side over all rounds: (best, median, spread) of what ``pick`` selects
    from a report (a length's or the mixed call's timing), as seconds."""
    runs = sorted(t for r in rounds for t in pick(r[side])["seconds"]["runs"])
    median = statistics.median(runs)
    return runs[0], median, (runs[-1] - runs[0]) / median


def print_tables(record):
    peak = record["fma_peak_gflops"]
    print(f"threads {record['threads']}; {record['rounds']} rounds × {record['repeats_per_round']} "
          f"timed runs per length and side; float32 peak {peak:.0f} GFLOP/s (torch.mm 2048², "
          f"best of 5); torch {record['torch']}, sentence-transformers "
          f"{record['sentence_transformers']}")
    print("| model | length | texts | model tokens/text | sage texts/s best (median, spread) "
          "| sentence-transformers texts/s best (median, spread) | sage ÷ ST per round: median "
          "(range) | bound texts/s | sage of bound |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, model in record["models"].items():
        rounds = model["rounds"]
        first = rounds[0]
        for i, s in enumerate(first["sage"]["lengths"]):
            t = first["sentence_transformers"]["lengths"][i]
            assert s["length"] == t["length"] and s["texts"] == t["texts"], (s, t)
            texts = s["texts"]
            pick = lambda report, i=i: report["lengths"][i]
            sides = [pooled(rounds, side, pick) for side in ("sage", "sentence_transformers")]
            cells = [f"{texts / best:.1f} ({texts / median:.1f}, {100 * spread:.0f}%)"
                     for best, median, spread in sides]
            ratios = sorted(
                r["sentence_transformers"]["lengths"][i]["seconds"]["median"]
                / r["sage"]["lengths"][i]["seconds"]["median"]
                for r in rounds
            )
            tokens = s["model_tokens"] / texts
            bound = peak * 1e9 / flops_per_text(model["config"], tokens)
            sage_best = texts / sides[0][0]
            print(f"| {name} | {s['length']} | {texts} | {tokens:.0f} | {cells[0]} | {cells[1]} "
                  f"| {statistics.median(ratios):.2f}× ({ratios[0]:.2f}–{ratios[-1]:.2f}) "
                  f"| {bound:.0f} | {100 * sage_best / bound:.0f}% |")
    print()
    print("| model | mixed call texts | side | mixed ÷ parts per round: median (range) "
          "| mixed s median (parts s) |")
    print("|---|---:|---|---:|---:|")
    for name, model in record["models"].items():
        rounds = model["rounds"]
        for side in ("sage", "sentence_transformers"):
            mixed = [r[side].get("mixed") for r in rounds]
            if any(m is None for m in mixed):
                continue
            ratios = sorted(x for m in mixed for x in m.get("over_parts", []))
            parts = statistics.median(m["parts_median"] for m in mixed)
            median_s = pooled(rounds, side, lambda report: report["mixed"])[1]
            print(f"| {name} | {mixed[0]['texts']} | {side} | {statistics.median(ratios):.2f} "
                  f"({ratios[0]:.2f}–{ratios[-1]:.2f}) | {median_s:.2f} ({parts:.2f}) |")


if __name__ == "__main__":
    sys.exit(main())
