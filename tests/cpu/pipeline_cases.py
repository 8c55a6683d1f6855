"""Shared pieces of the software-pipelining tests: the ttgir pipeline with `pipeline`, the
sample matmul compiled for chosen blocks/warps/stages, and its run on the SIMT evaluator."""
from __future__ import annotations

import numpy as np

from compiler.passes.manager import DEFAULT_PIPELINES
from sample_kernels.matmul import matmul_kernel

from .mma_cases import compile_jit, run_on_simt

_BASE = DEFAULT_PIPELINES["ttgir"].replace(",pipeline", "")
#: the default ttgir pipeline without `pipeline`, and with it just before shared-memory allocation
WITHOUT_PIPELINE = _BASE
WITH_PIPELINE = _BASE.replace("allocate-shared-memory", "pipeline,allocate-shared-memory")


def matmul_inputs(m: int, n: int, k: int, seed: int = 0):
    """Random fp16 A (m, k), B (k, n) and a zero C."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    return a, b, np.zeros((m, n), np.float16)


def compile_matmul(m, n, k, block: tuple, num_warps: int, num_stages: int = 3,
                   pipeline: str = WITH_PIPELINE, stop_after: str = "ttgir"):
    """The sample matmul for (m, n, k) row-major inputs; returns (compiled, args, (a, b, c))."""
    a, b, c = matmul_inputs(m, n, k)
    bm, bn, bk = block
    compiled, args = compile_jit(matmul_kernel, [a, b, c, m, n, k, k, 1, n, 1, n, 1],
                                 dict(BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk,
                                      GROUP_SIZE_M=8),
                                 {"num_warps": num_warps, "num_stages": num_stages}, pipeline,
                                 stop_after=stop_after)
    return compiled, args, (a, b, c)


def simulate_matmul(compiled, args, arrays, block: tuple, module=None) -> np.ndarray:
    """C as the kernel computes it on the SIMT evaluator (optionally for another ttgir module)."""
    a, b, c = arrays
    m, n = c.shape
    grid = (-(-m // block[0]) * -(-n // block[1]), 1, 1)
    if module is not None:
        compiled = _WithModule(module)
    return run_on_simt(compiled, grid, args, [c])[0]


class _WithModule:
    """A stand-in compiled kernel holding only a ttgir module (for hand-edited IR)."""

    def __init__(self, module):
        self.ttgir_module = module
