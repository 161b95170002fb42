"""Sentences/s of sentence-transformers (PyTorch, CPU) on the sentences of
crates/sage-embed/benches/embed.rs: all-MiniLM-L6-v2, 1,000 STS-B test sentences.

Run: SAGE_MODELS_DIR=... SAGE_DATA_DIR=... python3 tests/python-reference/embed_throughput.py
"""
import json
import os
import time

import torch
from sentence_transformers import SentenceTransformer

rows = [json.loads(l) for l in open(os.path.join(os.environ["SAGE_DATA_DIR"], "sts/stsb/test.jsonl"), encoding="utf-8")][:500]
sentences = [s for r in rows for s in (r["sentence1"], r["sentence2"])]
model = SentenceTransformer(os.path.join(os.environ["SAGE_MODELS_DIR"], "all-MiniLM-L6-v2"), device="cpu")
print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {len(sentences)} sentences")
model.encode(sentences[:64])
for batch_size in (32, 64, 128):
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        model.encode(sentences, batch_size=batch_size)
        best = min(best, time.perf_counter() - start)
    print(f"batch_size {batch_size:4d}: {len(sentences) / best:8.1f} sentences/s")
