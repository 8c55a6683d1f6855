"""The NVPTX target machine of llvmlite's LLVM (initialized once)."""
from __future__ import annotations

from functools import lru_cache

import llvmlite.binding as llvm

TRIPLE = "nvptx64-nvidia-cuda"


@lru_cache(maxsize=None)
def _initialized() -> bool:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    return True


@lru_cache(maxsize=None)
def target_machine(arch: str = "sm_90", features: str = "+ptx80"):
    """An NVPTX target machine for `arch` (e.g. "sm_90") at O3."""
    _initialized()
    target = llvm.Target.from_triple(TRIPLE)
    return target.create_target_machine(cpu=arch, features=features, opt=3)
