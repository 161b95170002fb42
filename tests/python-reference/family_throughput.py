"""CPU throughput of sage against sentence-transformers (f32, same texts, same machine, same
sitting) for model families at MiniLM-like size (6 layers, width 384, 12 heads), random weights:
Qwen3 (last token), ModernBERT (CLS) and NomicBERT (mean; sentence-transformers runs
nomic_bert.py, our reading of Nomic's modelling file, with the same SDPA attention), plus BERT (all-MiniLM-L6-v2's shape) as the yardstick.
Issue 26's benchmark; a measurement, not a test. Prints one JSON line per family.

sage's time is `sage embed --no-cache` on all texts minus the same on one text (process start and
model load), best of --repeats; sentence-transformers' is `encode` alone, best of --repeats.

    SAGE_MODELS_DIR=... python tests/python-reference/family_throughput.py --sage target/release/sage
"""
import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time

import torch
import transformers
from sentence_transformers import SentenceTransformer, models

import nomic_bert  # registers NomicBERT with transformers' Auto classes

TOKENIZER_FILES = ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"]


def texts(n):
    words = ("the quick brown fox jumps over a lazy dog while seven wizards box jovial quartz "
             "nymphs near a river bank under grey skies").split()
    return [" ".join(words[(i * 7 + k) % len(words)] for k in range(6 + i % 30)) for i in range(n)]


def build(out, tokenizer_dir, name, model, pooling, input_names=None):
    torch.manual_seed(0)
    hf = os.path.join(out, name + ".hf")
    model.save_pretrained(hf, safe_serialization=True)
    for f in TOKENIZER_FILES:
        shutil.copy(os.path.join(tokenizer_dir, f), hf)
    if input_names:
        path = os.path.join(hf, "tokenizer_config.json")
        tc = json.load(open(path))
        tc["model_input_names"] = input_names
        json.dump(tc, open(path, "w"))
    st = SentenceTransformer(modules=[models.Transformer(hf, max_seq_length=128),
                                      models.Pooling(384, pooling_mode=pooling),
                                      models.Normalize()], device="cpu")
    folder = os.path.join(out, name)
    st.save(folder, safe_serialization=True)
    return folder


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sage", required=True)
    ap.add_argument("--texts", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    torch.set_num_threads(os.cpu_count())
    tokenizer = os.path.join(os.environ["SAGE_MODELS_DIR"], "all-MiniLM-L6-v2")
    size = dict(vocab_size=30522, hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
                pad_token_id=0)
    all_texts = texts(a.texts)
    with tempfile.TemporaryDirectory() as tmp:
        families = {
            "bert (all-MiniLM-L6-v2)": tokenizer,
            "qwen3": build(tmp, tokenizer, "qwen3", transformers.Qwen3Model(transformers.Qwen3Config(
                intermediate_size=1536, num_key_value_heads=4, head_dim=32,
                max_position_embeddings=512, **size)), "lasttoken"),
            "modernbert": build(tmp, tokenizer, "modernbert", transformers.ModernBertModel(
                transformers.ModernBertConfig(intermediate_size=1152, max_position_embeddings=512,
                                              global_attn_every_n_layers=3, local_attention=128,
                                              attn_implementation="sdpa", **size)), "cls",
                ["input_ids", "attention_mask"]),
            "nomic-bert": build(tmp, tokenizer, "nomic-bert", nomic_bert.NomicBertModel(
                nomic_bert.NomicBertConfig(
                    vocab_size=30522, n_embd=384, n_layer=6, n_head=12, n_inner=1536,
                    n_positions=512, rotary_emb_fraction=1.0, rotary_emb_base=1000,
                    qkv_proj_bias=False, mlp_fc1_bias=False, mlp_fc2_bias=False,
                    activation_function="swiglu", pad_token_id=0)), "mean"),
        }
        path = os.path.join(tmp, "texts.jsonl")
        one = os.path.join(tmp, "one.jsonl")
        with open(path, "w") as f:
            for t in all_texts:
                f.write(json.dumps({"text": t}) + "\n")
        with open(one, "w") as f:
            f.write(json.dumps({"text": all_texts[0]}) + "\n")
        for name, folder in families.items():
            st = SentenceTransformer(folder, device="cpu")
            st.encode(all_texts[:64], batch_size=32)  # warm-up
            st_best = sage_best = float("inf")
            for _ in range(a.repeats):  # alternate, so drift hits both alike
                start = time.perf_counter()
                st.encode(all_texts, batch_size=32)
                st_best = min(st_best, time.perf_counter() - start)
                runs = []
                for inp in (path, one):
                    start = time.perf_counter()
                    subprocess.run([a.sage, "embed", "--no-cache", "--model", folder, "--input", inp,
                                    "--output", os.path.join(tmp, "out.jsonl")], check=True,
                                   stderr=subprocess.DEVNULL)
                    runs.append(time.perf_counter() - start)
                sage_best = min(sage_best, runs[0] - runs[1])
            print(json.dumps({"family": name, "texts": a.texts,
                              "sentence_transformers_texts_per_s": round(a.texts / st_best, 1),
                              "sage_texts_per_s": round(a.texts / sage_best, 1),
                              "ratio": round(st_best / sage_best, 3),
                              "torch": torch.__version__, "threads": torch.get_num_threads()}),
                  flush=True)


if __name__ == "__main__":
    main()
