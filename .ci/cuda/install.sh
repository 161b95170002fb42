#!/usr/bin/env bash
# Makes a CUDA toolkit folder from NVIDIA's PyPI wheels (the versions in toolkit.txt), as a
# machine without a system toolkit builds the `cuda` feature: nvcc, headers and the libraries
# cudarc links (cuBLAS, cuRAND, NVRTC, cudart), with the unversioned `lib*.so` names the linker
# asks for, and a link-time `libcuda.so` stub (fake_libcuda.py: the wheels carry no driver).
# Idempotent: a folder made from the same toolkit.txt is kept.
#   usage: install.sh DEST PYTHON
set -euo pipefail
dest=$1
python=${2:-python3}
here="$(cd "$(dirname "$0")" && pwd)"
pins="$(grep -v '^#' "$here/toolkit.txt" | tr '\n' ' ')"
if [ "$(cat "$dest/.complete" 2>/dev/null)" = "$pins" ]; then
  exit 0
fi
rm -rf "$dest"
mkdir -p "$dest.download"
# shellcheck disable=SC2086 # the pins are split into requirements on purpose
"$python" -m pip download -q --no-deps -d "$dest.download" $pins
mkdir -p "$dest.unpack"
for wheel in "$dest.download"/*.whl; do
  "$python" -m zipfile -e "$wheel" "$dest.unpack"
done
mv "$dest.unpack/nvidia/cu13" "$dest"
rm -rf "$dest.unpack" "$dest.download"
chmod +x "$dest"/bin/* "$dest"/nvvm/bin/* 2>/dev/null || true
(
  cd "$dest/lib"
  for lib in lib*.so.*; do
    ln -sf "$lib" "${lib%%.so.*}.so"
  done
)
# nvcc looks for its libdevice and cicc under nvvm/; the wheel's folder is already laid out so.
"$python" "$here/fake_libcuda.py" --out "$dest/lib/stubs"
echo "$pins" >"$dest/.complete"
