#!/usr/bin/env bash
# Issue 82's GPU checks in one call, for the 15 minutes a lent GPU machine gives a session:
#   1. `sage gpu`: the GPU the CUDA build sees;
#   2. cuda_check.py on the three real models: lowest cosine against sentence-transformers in
#      f16 (golden ≥ 0.999), batch == single, texts/s of both on short and long texts (MPNet's
#      long-text attention against sentence-transformers; all-MiniLM-L6-v2 on short texts);
#   3. the default bench-all on the GPU, PTEB included, timed.
# Each step writes under OUT and is cut at its own time limit, so one slow step still leaves the
# others' numbers.
#   usage: tests/gpu/lent_machine.sh SAGE DATA_DIR MODELS_DIR OUT
# SAGE: `sage` built with `--features cuda` in release (cargo build --release -p sage-cli
# --features cuda); the CUDA libraries it links on LD_LIBRARY_PATH; Python with torch (CUDA)
# and sentence-transformers for step 2.
set -uo pipefail
sage=$1 data=$2 models=$3 out=$4
here="$(cd "$(dirname "$0")/../.." && pwd)"
mkdir -p "$out"
nvidia-smi >"$out/nvidia-smi.txt" 2>&1
"$sage" gpu | tee "$out/gpu.json" || { echo "lent_machine: sage gpu failed: nothing else can run" >&2; exit 1; }

# 2: ~3 minutes on an H100 for the three models (2,000 short + 2,000 long texts each)
timeout 300 python3 "$here/tests/python-reference/cuda_check.py" --sage "$sage" --data "$data" \
  --out "$out/cuda-check.json" --batch-tokens 131072 8192 -- \
  "$models/all-MiniLM-L6-v2" "$models/paraphrase-MiniLM-L3-v2" "$models/all-mpnet-base-v2" \
  >"$out/cuda-check.log" 2>&1
echo "lent_machine: cuda_check exit $? (log: $out/cuda-check.log)"

# 3: the default run (every suite, PTEB with its GPU options) on the three models
cat >"$out/bench.toml" <<TOML
device = "cuda"
data_dir = "$data"
[similarities]
models = ["$models/all-MiniLM-L6-v2", "$models/paraphrase-MiniLM-L3-v2", "$models/all-mpnet-base-v2"]
TOML
start=$SECONDS
SAGE_MODELS_DIR="$models" timeout 480 "$sage" bench-all --config "$out/bench.toml" \
  --out "$out/results" >"$out/bench-all.log" 2>&1
echo "lent_machine: bench-all exit $? in $((SECONDS - start)) s (log: $out/bench-all.log)" | tee -a "$out/bench-all.log"
