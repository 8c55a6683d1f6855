"""The flash-attention forward of sample_kernels/attention.py (Triton tutorial 06's style: q.k^T
with tl.dot, an online softmax with tl.max / tl.sum over the mma accumulator, p.v with tl.dot)
compiles to PTX that ptxas accepts and computes attention on the SIMT evaluator
(tests/cpu/simt.py), causal and not, at sequence lengths that are not a multiple of the block.
The reductions over the accumulator and the broadcasts of their results back onto it are
lowered from the linear layouts."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

from sample_kernels.attention import _strides, attention_kernel, reference
from tests.cpu.mma_cases import compile_jit, run_on_simt

needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not on the PATH")


@needs_ptxas
@pytest.mark.parametrize("n_ctx,head_dim,causal,block_m", [(40, 64, False, 32),
                                                           (40, 64, True, 32),
                                                           (72, 128, True, 64)])
def test_attention_forward_on_the_simt_evaluator(n_ctx, head_dim, causal, block_m):
    rng = np.random.default_rng(n_ctx + head_dim)
    shape = (1, 1, n_ctx, head_dim)
    q, k, v = (rng.standard_normal(shape).astype(np.float16) for _ in range(3))
    o = np.zeros_like(q)
    scale = float(1.0 / np.sqrt(head_dim))
    strides = list(_strides(shape)) * 4
    compiled, runtime = compile_jit(
        attention_kernel, [q, k, v, o, scale, *strides, 1, n_ctx],
        {"HEAD_DIM": head_dim, "BLOCK_M": block_m, "BLOCK_N": 32, "CAUSAL": causal},
        {"num_warps": 4}, None, stop_after=None)
    ptx = compiled.asm["ptx"]
    assert "mma.sync.aligned.m16n8k16" in ptx and "shfl.sync.bfly" in ptx
    assert compiled.trace.cubin_info["spill_stores"] == 0
    out, = run_on_simt(compiled, (-(-n_ctx // block_m), 1), runtime, [o])
    np.testing.assert_allclose(out.astype(np.float32), reference(q, k, v, causal, scale),
                               atol=3e-3, rtol=1e-2)
