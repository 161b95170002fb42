"""ONNX Runtime's f32 and dynamic int8 (`quantize_dynamic`, QInt8 weights) on all-MiniLM-L6-v2:
the comparison for sage's `--precision int8` (docs/src/performance.md).

Exports the folder's BertModel to ONNX with torch (the TorchScript exporter, opset 17), quantizes
it with onnxruntime.quantization.quantize_dynamic, and embeds texts shaped as sage's ignored
`precision_throughput_of_all_minilm_l6_v2` test's (1000 short, 200 of ~124 tokens, 100 of 256
tokens, drawn from the same words; mean pooling, normalised), batched as sage batches (longest
first, 8192 padded tokens, 128 texts), on 2 intra-op threads. Prints texts/s and the lowest
cosine of int8 against ORT's f32.

Needs torch, transformers, tokenizers, onnx and onnxruntime.
Run: python3 tests/python-reference/ort_int8_throughput.py ~/.cache/sage-models/all-MiniLM-L6-v2
"""
import os
import sys
import random
import tempfile
import time

import numpy as np
import onnxruntime as ort

import torch
from onnxruntime.quantization import QuantType, quantize_dynamic
from tokenizers import Tokenizer
from transformers import AutoModel

d = sys.argv[1]
work = tempfile.mkdtemp()
os.chdir(work)
m = AutoModel.from_pretrained(d).eval()
ids = torch.ones(2, 16, dtype=torch.long)
torch.onnx.export(
    m, (ids, torch.ones_like(ids), torch.zeros_like(ids)), "minilm.onnx",
    input_names=["input_ids", "attention_mask", "token_type_ids"],
    output_names=["last_hidden_state"],
    dynamic_axes={k: {0: "b", 1: "t"} for k in
                  ["input_ids", "attention_mask", "token_type_ids", "last_hidden_state"]},
    opset_version=17, dynamo=False)
quantize_dynamic("minilm.onnx", "minilm.int8.onnx", weight_type=QuantType.QInt8)
tok = Tokenizer.from_file(d + "/tokenizer.json")
tok.enable_truncation(256); tok.no_padding()
short = ["A man is playing a guitar.","The cat sat on the mat.","Stocks fell sharply on Tuesday after the central bank raised rates.","How do I reset my password?","A woman is slicing an onion in the kitchen.","Two dogs run across a snowy field.","The committee postponed its decision until next spring.","Is it safe to drink tap water in Lisbon?","Der Zug nach Berlin hat zwanzig Minuten Verspätung.","Photosynthesis converts light energy into chemical energy.","Ok.","The quick brown fox jumps over the lazy dog!","A child is riding a horse on the beach at sunset.","Researchers found no link between the vaccine and the disorder.","Where can I buy fresh bread near the station?","Mix the flour, sugar and eggs, then bake for 25 minutes at 180°C.","The new phone's battery lasts two full days.","He scored twice in the second half, sealing the win.","Symptoms include fever, cough and shortness of breath.","The treaty was signed in 1648, ending the Thirty Years' War.","emoji test 🙂 with ünïcödé and numbers 3.14159","Please reply by Friday with your availability.","A plane is taking off.","The server returned error 503: service unavailable.","Water boils at 100 degrees Celsius at sea level."]
vocab = [w for s in short for w in s.split()]
rng = random.Random(5)
def texts(words, n): return [f"{i} " + " ".join(rng.choice(vocab) for _ in range(words)) for i in range(n)]
so = ort.SessionOptions(); so.intra_op_num_threads = 2; so.inter_op_num_threads = 1
sess = {p: ort.InferenceSession(f, so, providers=["CPUExecutionProvider"]) for p, f in [("f32","minilm.onnx"),("int8","minilm.int8.onnx")]}
def embed(s, ts, batch_tokens=8192, max_batch=128):
    enc = [e.ids for e in tok.encode_batch(ts)]
    order = sorted(range(len(enc)), key=lambda i: -len(enc[i]))
    out = [None]*len(enc); i = 0
    while i < len(order):
        L = len(enc[order[i]]); n = max(1, min(max_batch, batch_tokens // L)); idx = order[i:i+n]; i += n
        ids = np.zeros((len(idx), L), np.int64); mask = np.zeros_like(ids)
        for r, j in enumerate(idx): ids[r,:len(enc[j])] = enc[j]; mask[r,:len(enc[j])] = 1
        h = s.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
        v = (h * mask[...,None]).sum(1) / mask.sum(1, keepdims=True)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        for r, j in enumerate(idx): out[j] = v[r]
    return np.stack(out)
for name, ts in [("short", texts(11, 1000)), ("128-token", texts(95, 200)), ("256-token", texts(230, 100))]:
    ntok = sum(len(e.ids) for e in tok.encode_batch(ts)) / len(ts)
    ref = None
    for p in ["f32", "int8"]:
        embed(sess[p], ts[:64]); best = 1e9
        for _ in range(2):
            t = time.time(); v = embed(sess[p], ts); best = min(best, time.time() - t)
        if ref is None: ref = v
        cos = (v * ref).sum(1).min()
        print(f"ORT {name:>9} ({len(ts)} texts, {ntok:.0f} tokens): {p:5} {len(ts)/best:8.1f} texts/s, lowest cosine vs ORT f32 {cos:.5f}", flush=True)
