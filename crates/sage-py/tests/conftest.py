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


@pytest.fixture(scope="session")
def minilm():
    """The all-MiniLM-L6-v2 folder under $SAGE_MODELS_DIR (what ../shared/tools/fetch-models.sh
    fills)."""
    models = os.environ.get("SAGE_MODELS_DIR", os.path.expanduser("~/.cache/sage-models"))
    folder = Path(models) / "all-MiniLM-L6-v2"
    if not (folder / "model.safetensors").exists():
        pytest.skip(f"no {folder}: run `bash ../shared/tools/fetch-models.sh` to fetch it")
    return folder
