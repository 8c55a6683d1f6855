"""optimize-thread-locality's loop rewrite through the GPU path on the CPU: a loop folding
`sum/max/min(x, axis=1)` of each loaded tile into a loop-carried accumulator is compiled for
sm_90 (two `tt.reduce` in the ttgir: the thread-local one in the loop, the cross-thread one after
it), lowered and run on the SIMT evaluator against numpy, and accepted by ptxas."""
from __future__ import annotations

import numpy as np
import pytest

import compiler as triton
import compiler.language as tl

from .mma_cases import compile_jit, run_on_simt

SM90 = {"arch": 90}


@triton.jit
def row_reduce_loop(x_ptr, y_ptr, n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    OP: tl.constexpr, INIT: tl.constexpr):
    """y[m, p] = OP over the column blocks p, p + P, ... of x[m, block] (program (0, p)), folded
    into a loop-carried accumulator starting at INIT; OP 0: sum, 1: max, 2: min."""
    p = tl.program_id(1)
    programs = tl.num_programs(1)
    rows = tl.arange(0, BLOCK_M)
    acc = tl.full([BLOCK_M], INIT, dtype=tl.float32)
    for start in range(p, tl.cdiv(n, BLOCK_N), programs):
        cols = start * BLOCK_N + tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + rows[:, None] * n + cols[None, :])
        if OP == 0:
            acc = acc + tl.sum(x, axis=1)
        elif OP == 1:
            acc = tl.maximum(acc, tl.max(x, axis=1))
        else:
            acc = tl.minimum(acc, tl.min(x, axis=1))
    tl.store(y_ptr + rows * programs + p, acc)


#: op -> (OP, INIT, numpy's reduction)
KERNELS = {"sum": (0, 0.0, np.sum), "max": (1, float("-inf"), np.max),
           "min": (2, float("inf"), np.min)}
M, N, PROGRAMS = 32, 512, 2


def _compile(op: str, block_n: int, x, y, stop_after: str = "ttgir", **options):
    code, init, _ = KERNELS[op]
    return compile_jit(row_reduce_loop, [x, y, N], {"BLOCK_M": M, "BLOCK_N": block_n,
                                                     "OP": code, "INIT": init},
                       options, None, stop_after=stop_after, target=SM90)


@pytest.mark.parametrize("op", list(KERNELS))
@pytest.mark.parametrize("block_n,num_warps", [(32, 4), (128, 4), (256, 1)])
def test_loop_reduction_carries_thread_local_partials(op, block_n, num_warps):
    x = np.random.default_rng(0).standard_normal((M, N)).astype(np.float32)
    y = np.zeros((M, PROGRAMS), dtype=np.float32)
    compiled, args = _compile(op, block_n, x, y, num_warps=num_warps)
    ttgir = compiled.asm["ttgir"]
    assert ttgir.count('"tt.reduce"') == 2
    # one warp's 32 lanes cover 128 of the 256 columns: each thread holds two runs of them,
    # gathered by reshape -> trans -> reshape
    assert "tt.reshape" in ttgir and ("tt.trans" in ttgir) == (num_warps == 1)
    (out,) = run_on_simt(compiled, (1, PROGRAMS), args, [y])
    reference = KERNELS[op][2]
    np.testing.assert_allclose(reference(out, axis=1), reference(x, axis=1), rtol=1e-5,
                               atol=1e-5)


def test_loop_reduction_ptx_is_accepted_by_ptxas():
    from compiler.codegen.toolchain import find_tool
    if find_tool("ptxas") is None:
        pytest.skip("no ptxas")
    x = np.zeros((M, N), dtype=np.float32)
    y = np.zeros((M, PROGRAMS), dtype=np.float32)
    compiled, _ = _compile("sum", 64, x, y, stop_after=None)
    assert compiled.asm["ttgir"].count('"tt.reduce"') == 2
    assert compiled.asm["cubin"]
