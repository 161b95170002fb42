#!/usr/bin/env python3
"""Builds a stand-in for the NVIDIA driver's libcuda.so.1, for a machine without one.

Two uses:
- linking: the CUDA toolkit's PyPI wheels carry no driver, and cudarc (as candle enables it)
  links libcuda; the stand-in has every driver function cudarc declares, under the driver's
  SONAME, so the binary asks for the real `libcuda.so.1` wherever it runs.
- GPU-less runs of the CUDA build (crates/sage-cli/tests/cuda_without_gpu.rs): on the library
  path, it answers as a driver that sees no GPU, or as one too old for the toolkit, so the
  one-line errors of those cases are tested where no GPU is.

Its answers come from the environment at run time:
  FAKE_CUDA_INIT            what cuInit returns (default 100, CUDA_ERROR_NO_DEVICE)
  FAKE_CUDA_DRIVER_VERSION  what cuDriverGetVersion reports (default 13000, CUDA 13.0)
  FAKE_CUDA_DEVICES         what cuDeviceGetCount reports after a successful cuInit (default 0)
Every other function returns CUDA_ERROR_NOT_INITIALIZED without touching its arguments.

The function names are read from cudarc's driver bindings (the version Cargo.lock pins, found
with `cargo metadata`), so a cudarc upgrade needs nothing here.

usage: fake_libcuda.py --out DIR [--cudarc-src DIR] [--cc CC]
"""

import argparse
import json
import os
import pathlib
import re
import subprocess
import sys

ERRORS = {
    0: ("CUDA_SUCCESS", "no error"),
    3: ("CUDA_ERROR_NOT_INITIALIZED", "initialization error"),
    35: (
        "CUDA_ERROR_INSUFFICIENT_DRIVER",
        "CUDA driver version is insufficient for CUDA runtime version",
    ),
    100: ("CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"),
    999: ("CUDA_ERROR_UNKNOWN", "unknown error"),
}

# the functions whose answers the tests choose; the rest are generated
SPECIAL = {"cuInit", "cuDriverGetVersion", "cuDeviceGetCount", "cuGetErrorName", "cuGetErrorString"}

HAND_WRITTEN = r"""
static int env_int(const char *name, int fallback) {
    const char *v = getenv(name);
    return (v && *v) ? atoi(v) : fallback;
}
static int initialised = 0;
int cuInit(unsigned int flags) {
    (void)flags;
    int r = env_int("FAKE_CUDA_INIT", 100);
    initialised = (r == 0);
    return r;
}
int cuDriverGetVersion(int *version) {
    if (!version) return 1;
    *version = env_int("FAKE_CUDA_DRIVER_VERSION", 13000);
    return 0;
}
int cuDeviceGetCount(int *count) {
    if (!initialised) return 3;
    if (!count) return 1;
    *count = env_int("FAKE_CUDA_DEVICES", 0);
    return 0;
}
static const char *lookup(int code, int which) {
    switch (code) {
%(cases)s
    default: return 0;
    }
}
int cuGetErrorName(int code, const char **out) {
    const char *s = lookup(code, 0);
    if (!out) return 1;
    *out = s;
    return s ? 0 : 1;
}
int cuGetErrorString(int code, const char **out) {
    const char *s = lookup(code, 1);
    if (!out) return 1;
    *out = s;
    return s ? 0 : 1;
}
"""


def cudarc_source() -> pathlib.Path:
    meta = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--locked", "--features", "sage-cli/cuda"],
        check=True,
        capture_output=True,
        text=True,
    )
    for package in json.loads(meta.stdout)["packages"]:
        if package["name"] == "cudarc":
            return pathlib.Path(package["manifest_path"]).parent / "src"
    sys.exit("fake_libcuda.py: cargo metadata lists no cudarc for sage-cli's cuda feature")


def driver_functions(src: pathlib.Path) -> list[str]:
    bindings = src / "driver" / "sys" / "mod.rs"
    names = sorted(set(re.findall(r"^pub unsafe fn (cu\w+)\(", bindings.read_text(), re.M)))
    if len(names) < 100:
        sys.exit(f"fake_libcuda.py: {bindings}: only {len(names)} driver functions found")
    return [n for n in names if n not in SPECIAL]


def main() -> None:
    args = argparse.ArgumentParser()
    args.add_argument("--out", required=True, type=pathlib.Path)
    args.add_argument("--cudarc-src", type=pathlib.Path)
    args.add_argument("--cc", default=os.environ.get("CC", "cc"))
    a = args.parse_args()
    src = a.cudarc_src or cudarc_source()
    cases = "\n".join(
        f'    case {code}: return which ? "{text}" : "{name}";'
        for code, (name, text) in ERRORS.items()
    )
    c = ["#include <stdlib.h>", HAND_WRITTEN % {"cases": cases}]
    c += [f"int {name}(void) {{ return 3; }}" for name in driver_functions(src)]
    a.out.mkdir(parents=True, exist_ok=True)
    source = a.out / "fake_libcuda.c"
    source.write_text("\n".join(c) + "\n")
    library = a.out / "libcuda.so.1"
    subprocess.run(
        [a.cc, "-shared", "-fPIC", "-O1", "-Wl,-soname,libcuda.so.1", "-o", str(library), str(source)],
        check=True,
    )
    link = a.out / "libcuda.so"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to("libcuda.so.1")
    print(f"fake_libcuda.py: {library} ({len(c) - 2 + len(SPECIAL)} functions)")


if __name__ == "__main__":
    main()
