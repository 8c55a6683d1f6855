"""The pipeliner runs a pipelined load's carried address values num_stages-1 iterations ahead;
when the rest of the loop reads the same carried value (tutorial 06's `offsetkv_y`, shared by
K's load, which stays synchronous, and V's, which is pipelined), those readers must keep the
current iteration's value: the pass then carries shadow copies for the look-ahead. Checked on
the SIMT evaluator against numpy (before the fix, K was read one block ahead)."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import compiler as triton
import compiler.language as tl
from tests.cpu.mma_cases import compile_jit, run_on_simt

needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not on the PATH")


@triton.jit
def shared_offset_kernel(q_ptr, k_ptr, v_ptr, o_ptr, N, M: tl.constexpr, D: tl.constexpr,
                         BN: tl.constexpr):
    rm, rn, rd = tl.arange(0, M), tl.arange(0, BN), tl.arange(0, D)
    q = tl.load(q_ptr + rm[:, None] * D + rd[None, :])
    acc = tl.zeros([M, D], dtype=tl.float32)
    row = 0
    for start in range(0, N, BN):
        k = tl.load(k_ptr + (row + rn)[:, None] * D + rd[None, :])
        s = tl.dot(q, tl.trans(k))
        v = tl.load(v_ptr + (row + rn)[:, None] * D + rd[None, :])
        acc = tl.dot(s.to(tl.float16), v, acc)
        row += BN
    tl.store(o_ptr + rm[:, None] * D + rd[None, :], acc)


def _case(stages: int):
    rng = np.random.default_rng(stages)
    m, d, bn, n = 16, 32, 16, 64
    q = rng.integers(-2, 3, (m, d)).astype(np.float16)
    k = rng.integers(-2, 3, (n, d)).astype(np.float16)
    v = rng.integers(-2, 3, (n, d)).astype(np.float16) / np.float16(8)
    o = np.zeros((m, d), np.float32)
    compiled, runtime = compile_jit(shared_offset_kernel, [q, k, v, o, n],
                                    {"M": m, "D": d, "BN": bn},
                                    {"num_warps": 4, "num_stages": stages}, None,
                                    stop_after=None)
    s = q.astype(np.float32) @ k.astype(np.float32).T
    expected = s.astype(np.float16).astype(np.float32) @ v.astype(np.float32)
    return compiled, runtime, o, expected


@needs_ptxas
@pytest.mark.parametrize("stages", [2, 3])
def test_a_carried_offset_read_outside_the_pipelined_slice_keeps_its_iteration(stages):
    compiled, runtime, o, expected = _case(stages)
    ttgir = compiled.asm["ttgir"]
    assert "ttg.async_copy_global_to_local" in ttgir          # v's load is pipelined
    loop_header = next(line for line in ttgir.splitlines() if "scf.for" in line)
    assert loop_header.count("= %") >= 5, loop_header      # acc, row, row's shadow, 2 slots
    out, = run_on_simt(compiled, (1, 1), runtime, [o])
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-3)
