"""The NVPTX target machine of llvmlite's LLVM (initialized once)."""
from __future__ import annotations

from functools import lru_cache

import llvmlite.binding as llvm

TRIPLE = "nvptx64-nvidia-cuda"


@lru_cache(maxsize=None)
def _initialized() -> bool:
    """Initialize LLVM's targets once. The NVPTX backend is told to use 32-bit pointers for
    shared, const and local memory (`--nvptx-short-ptr`, as Triton sets it): the lowering's
    data layout (`lowering.DATA_LAYOUT`, p3:32:32) already declares them 32-bit, and without the
    option the target machine's own layout keeps them 64-bit, so every shared address was
    computed in 64 bits and truncated (`cvt.u32.u64`) before each cp.async / ldmatrix.

    It is also told to fuse a widening multiply into the add that consumes it
    (`--nvptx-mad-wide-opt`, as Triton sets it): llvmlite's LLVM emits each address of an
    `i32`-offset GEP as `mul.wide.s32 t, i, size; add.s64 p, base, t` unless asked, where
    Triton's emits one `mad.wide.s32 p, i, size, base`. On the H200 the pair cost the sample
    attention kernel 5% at D128 (bench/attention_ab.py, `ours-ptx-mad-wide` rows, 397 -> 417
    TFLOP/s; Triton's own PTX split into pairs fell 431 -> 401)."""
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    llvm.set_option("tile-explore", "--nvptx-short-ptr")
    llvm.set_option("tile-explore", "--nvptx-mad-wide-opt")
    return True


@lru_cache(maxsize=None)
def target_machine(arch: str = "sm_90", features: str = "+ptx80"):
    """An NVPTX target machine for `arch` (e.g. "sm_90") at O3."""
    _initialized()
    target = llvm.Target.from_triple(TRIPLE)
    return target.create_target_machine(cpu=arch, features=features, opt=3)
