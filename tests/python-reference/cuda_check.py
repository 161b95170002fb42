"""sage-embed on CUDA against sentence-transformers on the same GPU.

For each model folder: embeds a fixed mix of short (STS-B test) and long (SciFact abstracts)
texts with `sage embed --cuda` and with sentence-transformers (PyTorch CUDA, the model's weights
in float16 like ours), and reports
- per-text cosine between the two (golden: every cosine > 0.999 — both run in f16, so the bound
  is looser than the CPU goldens' 0.9999);
- batch == single on the GPU: the same texts through `--batch-tokens 1` (every text alone in its
  forward pass) against the default batches;
- texts/s of each, timed over the whole set after a warm-up pass (ours: the `sage embed`
  process minus a run on one text, i.e. without model loading and CUDA start; at each
  --batch-tokens given; sentence-transformers: best of 3 at batch size 64).

Run on a CUDA machine with a `sage` built with `--features cuda`:
  python3 tests/python-reference/cuda_check.py --sage target/release/sage \
      --data $SAGE_DATA_DIR --out cuda-check.json -- MODEL_DIR [MODEL_DIR...]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
from sentence_transformers import SentenceTransformer

parser = argparse.ArgumentParser()
parser.add_argument("--sage", required=True)
parser.add_argument("--data", required=True)
parser.add_argument("--out", required=True)
parser.add_argument("--short", type=int, default=2000, help="STS-B test sentences")
parser.add_argument("--long", type=int, default=2000, help="SciFact abstracts")
parser.add_argument("--batch-tokens", type=int, nargs="+", default=[8192],
                    help="ours at each of these --batch-tokens (the golden check uses the first)")
parser.add_argument("--cpu", action="store_true", help="dry run of this script on the CPU (f32)")
parser.add_argument("models", nargs="+")
args = parser.parse_args()


def read_jsonl(path, limit):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for _, line in zip(range(limit), f)]


stsb = read_jsonl(os.path.join(args.data, "sts/stsb/test.jsonl"), args.short)
texts = [s for row in stsb for s in (row["sentence1"], row["sentence2"])][: args.short]
corpus = read_jsonl(os.path.join(args.data, "retrieval/scifact/corpus.jsonl"), args.long)
texts += [(doc.get("title", "") + " " + doc["text"]).strip() for doc in corpus]

work = tempfile.mkdtemp(prefix="cuda-check-")
inputs = os.path.join(work, "texts.jsonl")
with open(inputs, "w", encoding="utf-8") as f:
    for t in texts:
        f.write(json.dumps({"text": t}) + "\n")
one = os.path.join(work, "one.jsonl")
with open(one, "w", encoding="utf-8") as f:
    f.write(json.dumps({"text": texts[0]}) + "\n")


def sage_embed(model, source, extra=()):
    out = os.path.join(work, "out.npy")
    start = time.perf_counter()
    subprocess.run(
        [args.sage, "embed", "--model", model, "--no-cache", "--input", source, "--output", out,
         *([] if args.cpu else ["--cuda"]), *extra],
        check=True,
    )
    return np.load(out), time.perf_counter() - start


def sync():
    if not args.cpu:
        torch.cuda.synchronize()


def unit(m):
    return m / np.linalg.norm(m, axis=1, keepdims=True)


report = {
    "device": "cpu" if args.cpu else torch.cuda.get_device_name(0),
    "torch": torch.__version__,
    "texts": {"short": args.short, "long": len(corpus), "total": len(texts)},
    "models": {},
}
for model in args.models:
    name = os.path.basename(model.rstrip("/"))
    sage_embed(model, inputs)  # warm-up: page cache, CUDA's first-use costs
    _, startup_s = sage_embed(model, one)
    runs = {tokens: sage_embed(model, inputs, ["--batch-tokens", str(tokens)])
            for tokens in args.batch_tokens}
    ours, ours_s = runs[args.batch_tokens[0]]
    single, _ = sage_embed(model, inputs, ["--batch-tokens", "1"])

    st = SentenceTransformer(model, device="cpu" if args.cpu else "cuda",
                             model_kwargs={"torch_dtype": torch.float32 if args.cpu else torch.float16})
    st.encode(texts[:256], batch_size=64)
    best = float("inf")
    for _ in range(3):
        sync()
        start = time.perf_counter()
        theirs = st.encode(texts, batch_size=64, convert_to_numpy=True)
        sync()
        best = min(best, time.perf_counter() - start)
    theirs = np.asarray(theirs, dtype=np.float32)

    cos_ref = np.sum(unit(ours) * unit(theirs), axis=1)
    cos_single = np.sum(unit(ours) * unit(single), axis=1)
    entry = {
        "dim": int(ours.shape[1]),
        "cos_vs_sentence_transformers": {"min": float(cos_ref.min()), "mean": float(cos_ref.mean()),
                                          "argmin": int(cos_ref.argmin())},
        "cos_batch_vs_single": {"min": float(cos_single.min()), "mean": float(cos_single.mean())},
        "ours_texts_per_s_by_batch_tokens": {
            str(k): len(texts) / max(seconds - startup_s, 1e-9) for k, (_, seconds) in runs.items()},
        "ours_wall_s": ours_s,
        "ours_startup_s": startup_s,
        "sentence_transformers_texts_per_s": len(texts) / best,
    }
    report["models"][name] = entry
    print(name, json.dumps(entry), flush=True)
    del st
    if not args.cpu:
        torch.cuda.empty_cache()

with open(args.out, "w", encoding="utf-8") as f:
    json.dump(report, f, indent=2)
failed = [n for n, e in report["models"].items()
          if e["cos_vs_sentence_transformers"]["min"] <= 0.999 or e["cos_batch_vs_single"]["min"] <= 0.999]
print("FAILED: " + ", ".join(failed) if failed else "all cosines > 0.999")
sys.exit(1 if failed else 0)
