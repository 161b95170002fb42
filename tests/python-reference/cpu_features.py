"""``--cpu avx2`` for the throughput scripts: run this script, its ONNX Runtime or PyTorch and
every ``sage`` it starts as on a CPU without AVX-512 (``avx2``: AVX2 and FMA, as AMD before
Zen 4; ``avx-vnni``: AVX2 with 256-bit VNNI, as Intel's client chips since Alder Lake).

``SAGE_CPU`` caps sage's own kernels only; ONNX Runtime, PyTorch and gemm pick theirs from CPUID.
So the script compiles ``hide_cpu_features.c`` (a C compiler is needed) and starts itself again
with it preloaded, which makes CPUID itself report the lower CPU to every library of the process
and its children (Linux's CPUID faulting: needs the ``cpuid_fault`` flag in /proc/cpuinfo). The
cores stay the machine's: such a run measures the lower instruction set on this core, not
another CPU's core, and says so in its record.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

HIDE = {"native": None, "avx2": "avx512,avx-vnni", "avx-vnni": "avx512"}
SOURCE = Path(__file__).with_name("hide_cpu_features.c")


def run_as(cpu: str) -> None:
    """Returns at once for ``native`` or when already running as ``cpu``; otherwise starts this
    script again under the masked CPUID (never returns)."""
    hide = HIDE[cpu]
    if hide is None or os.environ.get("HIDE_CPU_FEATURES") == hide:
        if hide is not None:
            check(cpu)
        return
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    if " cpuid_fault" not in flags:
        sys.exit(f"--cpu {cpu}: this machine's kernel offers no CPUID faulting (no cpuid_fault "
                 "in /proc/cpuinfo), so the libraries' CPU detection cannot be masked")
    compiler = shutil.which(os.environ.get("CC", "cc"))
    if compiler is None:
        sys.exit(f"--cpu {cpu}: a C compiler (cc, or $CC) is needed to build {SOURCE.name}")
    # one build per version of the source, reused by later runs, in this user's own cache (a
    # shared /tmp would let another user plant the library this preloads)
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    folder = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sage-rs"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    library = folder / f"hide_cpu_features-{digest}.so"
    if not library.exists():
        partial = library.with_suffix(f".{os.getpid()}.tmp")
        subprocess.run([compiler, "-O2", "-shared", "-fPIC", "-o", str(partial), str(SOURCE)],
                       check=True)
        partial.replace(library)
    preload = " ".join(filter(None, [str(library), os.environ.get("LD_PRELOAD")]))
    env = dict(os.environ, HIDE_CPU_FEATURES=hide, LD_PRELOAD=preload)
    os.execve(sys.executable, [sys.executable, *sys.argv], env)


def check(cpu: str) -> None:
    """Stops if numpy (which reads CPUID at import) still sees AVX-512."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as seen
    except ImportError:  # numpy 1.x
        from numpy.core._multiarray_umath import __cpu_features__ as seen

    shown = [f for f in ("AVX512F", "AVX512VNNI") if seen.get(f)]
    if shown:
        sys.exit(f"--cpu {cpu}: {', '.join(shown)} still visible after masking CPUID")


def describe(cpu: str) -> str:
    """The record's words for the CPU a run saw."""
    if cpu == "native":
        return "native"
    return f"{cpu} (this machine's cores with {HIDE[cpu]} hidden from CPUID)"
