"""Finding the CUDA tools (ptxas, nvdisasm, cuobjdump): TILE_PTXAS_PATH (for ptxas), the PATH,
the nvidia-cuda-nvcc wheel, /usr/local/cuda/bin."""
from __future__ import annotations

import os
import shutil
from functools import lru_cache
from pathlib import Path


def _wheel_dirs() -> list:
    dirs = []
    try:
        import nvidia  # type: ignore
        for root in getattr(nvidia, "__path__", []):
            for sub in ("cuda_nvcc/bin", "cu13/bin", "cuda_nvdisasm/bin"):
                dirs.append(Path(root) / sub)
    except ImportError:
        pass
    return dirs


@lru_cache(maxsize=None)
def find_tool(name: str) -> str | None:
    """The path of a CUDA tool, or None when it is nowhere to be found."""
    if name == "ptxas":
        override = os.environ.get("TILE_PTXAS_PATH")
        if override and Path(override).is_file():
            return override
    found = shutil.which(name)
    if found:
        return found
    for d in _wheel_dirs() + [Path("/usr/local/cuda/bin")]:
        candidate = d / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None
