"""Test configuration: GPU tests (marked `gpu`) run only where a CUDA GPU is usable."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SHARED = PROJECT_ROOT.parent / "shared"
REFERENCE = Path(os.environ.get("TILE_REFERENCE_DIR",
                                SHARED / "reference" / "triton-3.6-h200"))
if not REFERENCE.is_dir():  # on the GPU machine the reference travels in ./carry
    REFERENCE = PROJECT_ROOT / "carry" / "reference"


# Tests never read or fill the user's kernel cache.
os.environ.setdefault("TILE_CACHE_DIR", tempfile.mkdtemp(prefix="tile-explore-test-cache-"))


def _gpu_available() -> bool:
    try:
        from compiler.runtime.driver import gpu_available
    except ImportError:
        return False
    return gpu_available()


def pytest_collection_modifyitems(config, items):
    """Skip `gpu` tests without a GPU; with a GPU and TILE_REQUIRE_GPU=1, skipping is an error."""
    if _gpu_available():
        return
    if os.environ.get("TILE_REQUIRE_GPU") == "1":
        raise pytest.UsageError("TILE_REQUIRE_GPU=1 but no usable CUDA GPU was found")
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU (none usable here)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def reference_dir() -> Path:
    """Triton 3.6's reference outputs in ../shared (skips when the folder is absent)."""
    if not REFERENCE.is_dir():
        pytest.skip("../shared/reference is not present")
    return REFERENCE
