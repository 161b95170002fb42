"""Small random-initialised checkpoints of model families sage-embed loads, with golden vectors.

Real weights of most families cannot be fetched where sage-rs is tested, so each family is built
here from its transformers class with a shrunk config (2 layers, width 32) and a fixed torch
seed, wrapped in the sentence-transformers module chain it is used with, saved as a folder, and
encoded by sentence-transformers. The tokenizer is all-MiniLM-L6-v2's (BERT WordPiece; the
architecture, not the vocabulary, is under test). NomicBERT, whose modelling code lives only on
the hub, is nomic_bert.py beside this file. Writes OUT/<family>/ and OUT/golden.json.

    python tests/python-reference/tiny_models.py OUT $SAGE_MODELS_DIR/all-MiniLM-L6-v2 [FAMILY...]

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

import nomic_bert  # registers NomicBERT with transformers' Auto classes

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
        hidden_act="gelu", initializer_range=0.2, **extra)


def decoder(config_class, **extra):
    base = dict(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, intermediate_size=64, max_position_embeddings=256,
                pad_token_id=0, rms_norm_eps=1e-6)
    base.update(extra)
    return config_class(**base)


def nomic_config(**extra):
    return nomic_bert.NomicBertConfig(
        vocab_size=30522, n_embd=32, n_head=4, n_layer=2, n_inner=64, n_positions=256,
        layer_norm_epsilon=1e-12, initializer_range=0.2, pad_token_id=0, **extra)


def build(out, tokenizer_dir, name, model_class, config, pooling, dense, max_seq_length, prompts,
          padding_side="right", model_input_names=None, batch_size=2, bare_tokenizer=False):
    torch.manual_seed(0)
    hf_dir = os.path.join(out, name + ".hf")
    model_class(config).save_pretrained(hf_dir, safe_serialization=True)
    for f in TOKENIZER_FILES:
        shutil.copy(os.path.join(tokenizer_dir, f), hf_dir)
    path = os.path.join(hf_dir, "tokenizer_config.json")
    with open(path) as f:
        tc = json.load(f)
    tc["padding_side"] = padding_side
    if model_input_names:
        tc["model_input_names"] = model_input_names
    if bare_tokenizer:
        # a tokenizer that adds no special tokens (as decoder tokenizers without an end-of-text
        # post-processor do), so "" has no token at all
        tc["tokenizer_class"] = "PreTrainedTokenizerFast"
        tokenizer_json = os.path.join(hf_dir, "tokenizer.json")
        with open(tokenizer_json) as f:
            tj = json.load(f)
        tj["post_processor"] = None
        with open(tokenizer_json, "w") as f:
            json.dump(tj, f)
    with open(path, "w") as f:
        json.dump(tc, f)
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
    if bare_tokenizer:
        assert st.tokenize([""])["input_ids"].shape[1] == 0, "the bare tokenizer added tokens"
    vectors = {"plain": st.encode(TEXTS, batch_size=batch_size).tolist()}
    # a test is only as sharp as the vectors differ: no family may map texts alike
    lowest = min(float(torch.nn.functional.cosine_similarity(
        torch.tensor(a), torch.tensor(b), dim=0))
        for i, a in enumerate(vectors["plain"]) for b in vectors["plain"][i + 1:])
    assert lowest < 0.99, f"{name}: texts get near-identical vectors (lowest cosine {lowest})"
    for role in ("query", "document"):
        if prompts and role in prompts:
            vectors[role] = st.encode(TEXTS, batch_size=batch_size, prompt_name=role).tolist()
    return vectors


def main():
    out, tokenizer_dir = sys.argv[1], sys.argv[2]
    only = sys.argv[3:]  # family names: build these alone (every family when none is named)
    os.makedirs(out, exist_ok=True)
    golden = {
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "sentence-transformers": sentence_transformers.__version__},
        "texts": TEXTS,
        "families": {
            # XLM-RoBERTa (paraphrase-multilingual-*, multilingual-e5-*): mean, two Dense, a prompt
            "xlm-roberta": lambda: build(out, tokenizer_dir, "xlm-roberta", transformers.XLMRobertaModel,
                                 small(transformers.XLMRobertaConfig, type_vocab_size=1), "mean",
                                 [(16, True, torch.nn.Tanh()), (8, False, torch.nn.Identity())],
                                 64, {"query": "query: "}),
            # RoBERTa (SimCSE-RoBERTa): mean pooling, a window shorter than the long text
            "roberta": lambda: build(out, tokenizer_dir, "roberta", transformers.RobertaModel,
                             small(transformers.RobertaConfig, type_vocab_size=1), "mean",
                             [], 40, None),
            # ModernBERT (gte-modernbert): CLS, global and local layers (window 8) alternating
            "modernbert": lambda: build(out, tokenizer_dir, "modernbert", transformers.ModernBertModel,
                                transformers.ModernBertConfig(
                                    vocab_size=30522, hidden_size=32, intermediate_size=48,
                                    num_hidden_layers=3, num_attention_heads=4,
                                    max_position_embeddings=256, pad_token_id=0, bos_token_id=101,
                                    eos_token_id=102, cls_token_id=101, sep_token_id=102,
                                    global_attn_every_n_layers=2, local_attention=8,
                                    global_rope_theta=160000.0, local_rope_theta=10000.0,
                                    initializer_range=0.2, attn_implementation="sdpa"),
                                "cls", [], 64, None,
                                model_input_names=["input_ids", "attention_mask"]),
            # Qwen3 (qwen3-embedding): last token, an instruction on queries, head_dim != width/heads
            "qwen3": lambda: build(out, tokenizer_dir, "qwen3", transformers.Qwen3Model,
                           decoder(transformers.Qwen3Config, head_dim=16, rope_theta=1e6),
                           "lasttoken", [], 64,
                           {"query": "Instruct: Given a query, find passages\nQuery: "}),
            # Qwen2 (gte-Qwen2): biased q/k/v, last token, a left-padding tokenizer
            "qwen2": lambda: build(out, tokenizer_dir, "qwen2", transformers.Qwen2Model,
                           decoder(transformers.Qwen2Config), "lasttoken", [], 64, None,
                           padding_side="left"),
            # Qwen2 with a tokenizer that adds no special tokens: "" has no token, and
            # sentence-transformers pools it to zeros (its last-token gather is masked). One
            # batch: alone, "" is a tensor of no tokens, which transformers' attention refuses.
            "qwen2-bare": lambda: build(out, tokenizer_dir, "qwen2-bare", transformers.Qwen2Model,
                                decoder(transformers.Qwen2Config), "lasttoken", [], 64, None,
                                bare_tokenizer=True, batch_size=len(TEXTS)),
            # Mistral (e5-mistral, SGPT-style): weighted mean
            "mistral": lambda: build(out, tokenizer_dir, "mistral", transformers.MistralModel,
                             decoder(transformers.MistralConfig, sliding_window=None),
                             "weightedmean", [], 64, None),
            # LLaMA (ALIGN-SIM's LLaMA-2 encoder): mean pooling
            "llama": lambda: build(out, tokenizer_dir, "llama", transformers.LlamaModel,
                           decoder(transformers.LlamaConfig), "mean", [], 64, None),
            # Gemma 3 bidirectional (embeddinggemma): mean, two Dense, sliding layers of width 4
            "gemma3": lambda: build(out, tokenizer_dir, "gemma3", transformers.Gemma3TextModel,
                            decoder(transformers.Gemma3TextConfig, head_dim=16,
                                    query_pre_attn_scalar=16, sliding_window=4,
                                    layer_types=["sliding_attention", "full_attention"],
                                    rope_theta=1e6, rope_local_base_freq=1e4,
                                    hidden_activation="gelu_pytorch_tanh",
                                    use_bidirectional_attention=True),
                            "mean", [(48, False, torch.nn.Identity()), (32, False, torch.nn.Identity())],
                            64, {"query": "task: search result | query: "}),
            # NomicBERT as nomic-embed-text-v1.5 shapes it (rotary base 1000, SwiGLU, no biases):
            # mean pooling, its task prefixes as query and document prompts
            "nomic-bert": lambda: build(out, tokenizer_dir, "nomic-bert", nomic_bert.NomicBertModel,
                                nomic_config(rotary_emb_fraction=1.0, rotary_emb_base=1000,
                                             qkv_proj_bias=False, mlp_fc1_bias=False,
                                             mlp_fc2_bias=False, activation_function="swiglu"),
                                "mean", [], 64,
                                {"query": "search_query: ", "document": "search_document: "}),
            # the rest of what the modelling file reads: half the head rotary, interleaved, GeGLU
            # with biases, and dynamic NTK scaling past 16 trained positions (one text per call:
            # the modelling file scales by the padded length of the call)
            "nomic-bert-variants": lambda: build(out, tokenizer_dir, "nomic-bert-variants",
                                         nomic_bert.NomicBertModel,
                                         nomic_config(rotary_emb_fraction=0.5,
                                                      rotary_emb_interleaved=True,
                                                      activation_function="geglu",
                                                      rotary_scaling_factor=2.0,
                                                      max_trained_positions=16),
                                         "cls", [], 64, None, batch_size=1),
        },
    }
    golden["families"] = {name: make() for name, make in golden["families"].items()
                          if not only or name in only}
    missing = set(only) - set(golden["families"])
    assert not missing, f"no family {sorted(missing)}"
    with open(os.path.join(out, "golden.json"), "w") as f:
        json.dump(golden, f)


if __name__ == "__main__":
    main()
