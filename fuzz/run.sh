#!/usr/bin/env bash
# Runs every fuzz target (or the ones named) for SECONDS each on its committed seed corpus
# (fuzz/seeds/TARGET), and prints one line per target: executions, corpus growth, and the crash
# input if one was found. Exits 1 when any target crashed. Targets run side by side, one per core
# (SAGE_FUZZ_JOBS sets how many at once).
#
#   bash fuzz/run.sh 20              # CI: 20 s a target
#   bash fuzz/run.sh 600 cache       # a longer session on one target
#
# New corpus entries go to a scratch folder, never into the clone; crash inputs are kept in
# $SAGE_FUZZ_ARTIFACTS (default ~/.cache/sage-rs/fuzz-artifacts). Reproduce one with
# `cargo fuzz run TARGET FILE`, print it with `cargo fuzz fmt TARGET FILE`, and turn it into a
# regression test in the crate it came from.
#
# cargo fuzz needs nightly's -Z flags; RUSTC_BOOTSTRAP=1 lets the stable toolchain take them, so
# no second toolchain is needed.
set -euo pipefail
cd "$(dirname "$0")"

seconds="${1:?usage: run.sh SECONDS [TARGET...]}"
shift
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.toml | grep -v '^sage-fuzz$')
fi
export RUSTC_BOOTSTRAP=1
export CARGO_TARGET_DIR="${SAGE_FUZZ_TARGET_DIR:-$HOME/.cache/sage-rs/fuzz-target}"
artifacts="${SAGE_FUZZ_ARTIFACTS:-$HOME/.cache/sage-rs/fuzz-artifacts}"
mkdir -p "$artifacts"

# one build for every target: their dependencies compile once
cargo fuzz build -O >/dev/null 2>&1 || { cargo fuzz build -O; exit 1; }

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# Each libFuzzer process uses one core: targets run side by side, as many at once as there are
# cores (SAGE_FUZZ_JOBS), so CI's 20 s a target costs 20 s per core rather than 20 s per target.
# Each writes its verdict to a file of its own; the verdicts are printed in the targets' order.
fuzz_one() { # TARGET
  local target=$1
  mkdir -p "$scratch/$target" "$artifacts/$target" "seeds/$target"
  local seeds
  seeds=$(find "seeds/$target" -type f | wc -l)
  local log="$scratch/$target.log" verdict="$scratch/$target.verdict"
  # redb sizes a read from a damaged page's header before it finds the damage: a calloc of up to
  # 8 GB that is never touched (55 MB resident on the input that found it). The malloc limit is
  # raised for that target only; the resident-memory limit still holds.
  local extra=()
  [ "$target" = cache ] && extra=(-malloc_limit_mb=16384)
  local status=0
  "$CARGO_TARGET_DIR/x86_64-unknown-linux-gnu/release/$target" \
    "$scratch/$target" "seeds/$target" \
    -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 "${extra[@]}" -print_final_stats=1 \
    -artifact_prefix="$artifacts/$target/" >"$log" 2>&1 || status=$?
  local runs found
  runs=$(sed -n 's/^Done \([0-9]*\) runs in \([0-9]*\) second.*/\1 runs in \2 s/p' "$log" | tail -1)
  found=$(find "$scratch/$target" -type f | wc -l)
  if [ "$status" -ne 0 ]; then
    local crash
    crash=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
    {
      echo "fuzz: $target: FAILED (exit $status) after ${runs:-an unknown number of runs}; input: ${crash:-none written}"
      grep -E "panicked at|ERROR: AddressSanitizer|ERROR: libFuzzer" -A3 "$log" | head -20 | sed 's/^/fuzz:   /'
    } >"$verdict"
    return 1
  fi
  echo "fuzz: $target: ok, $runs, $seeds seeds, $found new corpus entries" >"$verdict"
}

jobs_at_once="${SAGE_FUZZ_JOBS:-$(nproc)}"
running=0
failed=0
for target in "${targets[@]}"; do
  if [ "$running" -ge "$jobs_at_once" ]; then
    wait -n || failed=1
    running=$((running - 1))
  fi
  fuzz_one "$target" &
  running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
  wait -n || failed=1
  running=$((running - 1))
done
for target in "${targets[@]}"; do
  cat "$scratch/$target.verdict" 2>/dev/null || { echo "fuzz: $target: no verdict (the runner died)"; failed=1; }
done
exit "$failed"
