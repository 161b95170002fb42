"""Small random-initialised checkpoints of model families sage-embed loads, with golden vectors.

Real weights of most families cannot be fetched where sage-rs is tested, so each family is built
here from its transformers class with a shrunk config (2 layers, width 32) and a fixed torch
seed, wrapped in the sentence-transformers module chain it is used with, saved as a folder, and
encoded by sentence-transformers. The tokenizer is all-MiniLM-L6-v2's (BERT WordPiece; the
architecture, not the vocabulary, is under test). Writes OUT/<family>/ and OUT/golden.json.

    python tests/reference/tiny_models.py OUT $SAGE_MODELS_DIR/all-MiniLM-L6-v2

Run by crates/sage-embed/src/golden.rs (the Python of $SAGE_PYTHON, else .ci/run's Infinity
virtual environment, which has torch, transformers and sentence-transformers).
"""
import json
import os
import shutil
import sys

import sentence_transformers
import torch
import transformers
from sentence_transformers import SentenceTransformer, models

TEXTS = [
    "A man is playing a guitar.",
    "",
    "Ünïcödé façade — 東京 🚀 naïve café",
    "The quick brown fox jumps over the lazy dog " * 20,
    "short",
]
TOKENIZER_FILES = ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"]


def small(config_class, **extra):
    return config_class(
        vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=130, pad_token_id=0,
        hidden_act="gelu", **extra)


def build(out, tokenizer_dir, name, model_class, config, pooling, dense, max_seq_length, prompts):
    torch.manual_seed(0)
    hf_dir = os.path.join(out, name + ".hf")
    model_class(config).save_pretrained(hf_dir, safe_serialization=True)
    for f in TOKENIZER_FILES:
        shutil.copy(os.path.join(tokenizer_dir, f), hf_dir)
    modules = [models.Transformer(hf_dir, max_seq_length=max_seq_length),
               models.Pooling(config.hidden_size, pooling_mode=pooling)]
    width = config.hidden_size
    for out_features, bias, activation in dense:
        modules.append(models.Dense(width, out_features, bias=bias, activation_function=activation))
        width = out_features
    modules.append(models.Normalize())
    st = SentenceTransformer(modules=modules, prompts=prompts, device="cpu")
    folder = os.path.join(out, name)
    st.save(folder, safe_serialization=True)
    shutil.rmtree(hf_dir)
    st = SentenceTransformer(folder, device="cpu")
    vectors = {"plain": st.encode(TEXTS, batch_size=2).tolist()}
    if prompts:
        vectors["query"] = st.encode(TEXTS, batch_size=2, prompt_name="query").tolist()
    return vectors


def main():
    out, tokenizer_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    golden = {
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "sentence-transformers": sentence_transformers.__version__},
        "texts": TEXTS,
        "families": {
            # XLM-RoBERTa (paraphrase-multilingual-*, multilingual-e5-*): CLS, two Dense, a prompt
            "xlm-roberta": build(out, tokenizer_dir, "xlm-roberta", transformers.XLMRobertaModel,
                                 small(transformers.XLMRobertaConfig, type_vocab_size=1), "cls",
                                 [(16, True, torch.nn.Tanh()), (8, False, torch.nn.Identity())],
                                 64, {"query": "query: "}),
            # RoBERTa (SimCSE-RoBERTa): mean pooling, a window shorter than the long text
            "roberta": build(out, tokenizer_dir, "roberta", transformers.RobertaModel,
                             small(transformers.RobertaConfig, type_vocab_size=1), "mean",
                             [], 40, None),
        },
    }
    with open(os.path.join(out, "golden.json"), "w") as f:
        json.dump(golden, f)


if __name__ == "__main__":
    main()
