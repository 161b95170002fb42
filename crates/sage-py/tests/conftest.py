"""Where the tests find the repository's fixtures, the `sage` binary and the optional models.

What a test needs and does not find (the `sage` binary for a CLI comparison, a model folder,
sentence-transformers) makes it skip with the reason; run pytest with ``-rs`` to list them.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "data" / "fixtures"
MIRROR = FIXTURES / "mirror"


def _sage_binary():
    for candidate in (
        os.environ.get("SAGE_BIN"),
        os.path.join(os.environ.get("CARGO_TARGET_DIR", ""), "debug", "sage")
        if os.environ.get("CARGO_TARGET_DIR")
        else None,
        str(REPO / "target" / "debug" / "sage"),
        shutil.which("sage"),
    ):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


@pytest.fixture(scope="session")
def sage_cli():
    """Runs the `sage` command (SAGE_BIN, else the workspace's debug build) and returns its
    standard output."""
    binary = _sage_binary()
    if binary is None:
        pytest.skip("no sage binary: set SAGE_BIN or run `cargo build -p sage-cli` first")

    def run(*args):
        done = subprocess.run(
            [binary, *map(str, args)], capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, f"sage {' '.join(map(str, args))}: {done.stderr}"
        return done.stdout

    return run


def model_folder(name, weights):
    models = os.environ.get("SAGE_MODELS_DIR", os.path.expanduser("~/.cache/sage-models"))
    folder = Path(models) / name
    if not any(folder.glob(weights)):
        pytest.skip(f"no {folder}: run `bash ../shared/tools/fetch-models.sh` to fetch it")
    return folder


@pytest.fixture(scope="session")
def smollm2():
    """The SmolLM2-135M GGUF paraphraser folder under $SAGE_MODELS_DIR."""
    return model_folder("SmolLM2-135M-Instruct-GGUF", "*.gguf")


@pytest.fixture(scope="session")
def minilm():
    """The all-MiniLM-L6-v2 folder under $SAGE_MODELS_DIR (what ../shared/tools/fetch-models.sh
    fills)."""
    return model_folder("all-MiniLM-L6-v2", "model.safetensors")


@pytest.fixture(scope="session")
def xtask_cli():
    """The workspace's `xtask` binary beside the `sage` one (cargo test --workspace builds both)."""
    binary = _sage_binary()
    xtask = Path(binary).with_name("xtask") if binary else None
    if xtask is None or not os.access(xtask, os.X_OK):
        pytest.skip("no xtask binary beside sage: run `cargo build -p xtask` first")
    return binary, xtask
