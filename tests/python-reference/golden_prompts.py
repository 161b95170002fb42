"""Golden vectors of sentence-transformers prompts through sage's query/document/plain roles.

all-MiniLM-L6-v2 from $SAGE_MODELS_DIR is copied and given the prompts below (in
config_sentence_transformers.json), once with the prompt pooled and once with
`include_prompt: false` in 1_Pooling/config.json; each copy encodes the sentences with
prompt_name="query", prompt_name="passage" and no prompt. sage's test builds the same two
folders from the `config` recorded here and compares (crates/sage-embed/src/golden.rs).

    $HOME/.cache/sage-rs/infinity-venv/bin/python tests/python-reference/golden_prompts.py
"""
import json
import os
import shutil
import tempfile

import sentence_transformers
import torch
from sentence_transformers import SentenceTransformer

SENTENCES = [
    "A man is playing a guitar.",
    "The quick brown fox jumps over the lazy dog.",
    "Ünïcödé façade — 東京 🚀 naïve café",
    "",
    "word " * 300,
]
CONFIG = {
    "prompts": {"query": "query: ", "passage": "passage: "},
    "default_prompt_name": None,
}


def build(src, dst, include_prompt):
    shutil.copytree(src, dst)
    with open(os.path.join(dst, "config_sentence_transformers.json")) as f:
        st = json.load(f)
    st.update(CONFIG)
    with open(os.path.join(dst, "config_sentence_transformers.json"), "w") as f:
        json.dump(st, f)
    pooling_path = os.path.join(dst, "1_Pooling", "config.json")
    with open(pooling_path) as f:
        pooling = json.load(f)
    pooling["include_prompt"] = include_prompt
    with open(pooling_path, "w") as f:
        json.dump(pooling, f)


def main():
    src = os.path.join(os.environ["SAGE_MODELS_DIR"], "all-MiniLM-L6-v2")
    out = {
        "versions": {
            "sentence-transformers": sentence_transformers.__version__,
            "torch": torch.__version__,
        },
        "config": CONFIG,
        "sentences": SENTENCES,
    }
    with tempfile.TemporaryDirectory() as tmp:
        for include_prompt in (True, False):
            dst = os.path.join(tmp, f"include-{include_prompt}")
            build(src, dst, include_prompt)
            model = SentenceTransformer(dst, device="cpu")
            key = "include_prompt" if include_prompt else "exclude_prompt"
            out[key] = {
                name: [[round(float(x), 7) for x in row] for row in
                       model.encode(SENTENCES, prompt_name=prompt, convert_to_numpy=True)]
                for name, prompt in (("query", "query"), ("document", "passage"), ("plain", None))
            }
    path = os.path.join(os.path.dirname(__file__), "../../data/fixtures/prompts.golden.json")
    with open(path, "w") as f:
        json.dump(out, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
