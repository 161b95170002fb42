"""Reference embeddings for sage-embed's golden tests.

Computes, with the Python reference libraries on this machine, the embeddings that
crates/sage-embed/src/golden.rs compares against (cosine >= 0.9999):
- sentence-transformers (PyTorch, CPU) for all-MiniLM-L6-v2, paraphrase-MiniLM-L3-v2,
  all-mpnet-base-v2 (pooling and normalisation as each folder declares);
- transformers with output_hidden_states for EvalRank's first-last-avg on all-MiniLM-L6-v2;
- model2vec's StaticModel for static-10k-64d-int8;
- numpy on glove.6B.50d.txt for cos(king, queen) and two bag-of-words sentences.

Run: SAGE_MODELS_DIR=~/.cache/sage-models python3 tests/python-reference/golden_embeddings.py
Writes data/fixtures/embeddings.golden.json.
"""
import json
import os
import sys
from importlib.metadata import version

import numpy as np

MODELS = os.environ.get("SAGE_MODELS_DIR", os.path.expanduser("~/.cache/sage-models"))
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "data", "fixtures", "embeddings.golden.json")

SENTENCES = [
    "A man is playing a guitar.",
    "The quick brown fox jumps over the lazy dog.",
    "",
    "Ünïcödé façade, naïve café — emoji 🙂 and 日本語のテキスト.",
    "Stocks fell sharply on Monday as investors worried about inflation and rising interest rates.",
    "IS THIS SHOUTING? is this whispering...",
    "x",
    # longer than 128 and 256 word pieces: exercises each model's own truncation
    " ".join(["The committee reviewed the proposed budget for the coming fiscal year and raised concerns about maintenance costs."] * 20),
]


def r(v):
    return [float(f"{x:.7g}") for x in np.asarray(v, dtype=np.float64)]


def main():
    out = {"sentences": SENTENCES, "versions": {}}
    from sentence_transformers import SentenceTransformer
    import torch
    import transformers

    torch.manual_seed(0)
    out["versions"] = {p: version(p) for p in ("sentence-transformers", "torch", "transformers", "model2vec")}
    for name in ("all-MiniLM-L6-v2", "paraphrase-MiniLM-L3-v2", "all-mpnet-base-v2"):
        path = os.path.join(MODELS, name)
        if not os.path.isdir(path):
            print(f"skipping {name}: {path} missing", file=sys.stderr)
            continue
        model = SentenceTransformer(path, device="cpu")
        out[name] = r_rows(model.encode(SENTENCES, batch_size=4, convert_to_numpy=True))

    # EvalRank / SimCSE first-last-avg: (hidden_states[1] + hidden_states[-1]) / 2, masked mean
    path = os.path.join(MODELS, "all-MiniLM-L6-v2")
    tok = transformers.AutoTokenizer.from_pretrained(path)
    bert = transformers.AutoModel.from_pretrained(path).eval()
    batch = tok(SENTENCES, padding=True, truncation=True, max_length=256, return_tensors="pt")
    with torch.no_grad():
        hs = bert(**batch, output_hidden_states=True).hidden_states
    avg = (hs[1] + hs[-1]) / 2
    mask = batch["attention_mask"].unsqueeze(-1).float()
    out["all-MiniLM-L6-v2/first-last-avg"] = r_rows(((avg * mask).sum(1) / mask.sum(1).clamp(min=1e-9)).numpy())

    from model2vec import StaticModel
    static = StaticModel.from_pretrained(os.path.join(MODELS, "static-10k-64d-int8"))
    out["static-10k-64d-int8"] = r_rows(static.encode(SENTENCES))

    vectors = {}
    wanted = {"king", "queen", "the", "cat", "sat", "on", "mat", ".", "dogs", "bark", "loudly", "!"}
    all_sum, count = None, 0
    with open(os.path.join(MODELS, "glove.6B.50d", "glove.6B.50d.txt"), encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split(" ")
            v = np.array(parts[1:], dtype=np.float32)
            all_sum = v.astype(np.float64) if all_sum is None else all_sum + v
            count += 1
            if parts[0] in wanted and parts[0] not in vectors:
                vectors[parts[0]] = v
    mean = (all_sum / count).astype(np.float32)
    cos = lambda a, b: float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))
    out["glove"] = {
        "cos_king_queen": cos(vectors["king"], vectors["queen"]),
        # bag of words, OOV ("zzyzxq") -> mean of all vectors
        "the cat sat on the mat.": r(np.mean([vectors[w] for w in ["the", "cat", "sat", "on", "the", "mat", "."]], axis=0)),
        "Dogs bark zzyzxq loudly!": r(np.mean([vectors["dogs"], vectors["bark"], mean, vectors["loudly"], vectors["!"]], axis=0)),
    }
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False)
    print("wrote", OUT, out["versions"], file=sys.stderr)


def r_rows(m):
    return [r(row) for row in np.asarray(m)]


if __name__ == "__main__":
    main()
