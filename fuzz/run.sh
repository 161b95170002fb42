#!/usr/bin/env bash
# Runs every fuzz target (or the ones named) for SECONDS each on its committed seed corpus
# (fuzz/seeds/TARGET), and prints one line per target: executions, corpus growth, and the crash
# input if one was found. Exits 1 when any target crashed.
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
failed=0
for target in "${targets[@]}"; do
  mkdir -p "$scratch/$target" "$artifacts/$target" "seeds/$target"
  seeds=$(find "seeds/$target" -type f | wc -l)
  log="$scratch/$target.log"
  # redb sizes a read from a damaged page's header before it finds the damage: a calloc of up to
  # 8 GB that is never touched (55 MB resident on the input that found it). The malloc limit is
  # raised for that target only; the resident-memory limit still holds.
  extra=()
  [ "$target" = cache ] && extra=(-malloc_limit_mb=16384)
  status=0
  "$CARGO_TARGET_DIR/x86_64-unknown-linux-gnu/release/$target" \
    "$scratch/$target" "seeds/$target" \
    -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 "${extra[@]}" -print_final_stats=1 \
    -artifact_prefix="$artifacts/$target/" >"$log" 2>&1 || status=$?
  runs=$(sed -n 's/^Done \([0-9]*\) runs in \([0-9]*\) second.*/\1 runs in \2 s/p' "$log" | tail -1)
  found=$(find "$scratch/$target" -type f | wc -l)
  if [ "$status" -ne 0 ]; then
    failed=1
    crash=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
    echo "fuzz: $target: FAILED (exit $status) after ${runs:-an unknown number of runs}; input: ${crash:-none written}"
    grep -E "panicked at|ERROR: AddressSanitizer|ERROR: libFuzzer" -A3 "$log" | head -20 | sed 's/^/fuzz:   /'
  else
    echo "fuzz: $target: ok, $runs, $seeds seeds, $found new corpus entries"
  fi
done
exit "$failed"
