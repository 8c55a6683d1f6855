"""The flash-attention forward of sample_kernels/attention.py (Triton tutorial 06's style: q.k^T
with tl.dot, an online softmax with tl.max / tl.sum over the mma accumulator, p.v with tl.dot)
compiles to PTX that ptxas accepts and computes attention on the SIMT evaluator
(tests/cpu/simt.py), causal and not, at sequence lengths that are not a multiple of the block.
The reductions over the accumulator and the broadcasts of their results back onto it are
lowered from the linear layouts. At N_CTX = 80 (a multiple of 16, not of the block) the column
mask is computed once per 16 columns (axis-info constancy) and still masks the last block."""
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
                                                           (72, 128, True, 64),
                                                           (80, 64, True, 32)])
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


@needs_ptxas
def test_attention_on_sm90_keeps_the_softmax_in_the_wgmma_layout():
    """On sm_90 (wgmma) the online softmax runs in the #mma accumulator layout (the only
    conversion left in the loop is p's, into the register-A operand, which moves nothing), q is
    stored to shared memory once before the loop, nothing spills, and D=128 with 128x128 blocks
    and 3 stages fits the H200's 227 KB (it needed 258 KB while p's conversion had scratch)."""
    import re
    shape = (4, 32, 4096, 128)
    q = np.zeros(shape, np.float16)
    strides = list(_strides(shape)) * 4
    compiled, _ = compile_jit(attention_kernel, [q, q, q, q, 0.125, *strides, 32, 4096],
                              {"HEAD_DIM": 128, "BLOCK_M": 128, "BLOCK_N": 128, "CAUSAL": False},
                              {"num_warps": 8, "num_stages": 3}, None, stop_after=None,
                              target={"arch": 90})
    ttgir = compiled.asm["ttgir"]
    loop = ttgir[ttgir.index("scf.for"):ttgir.index("scf.yield")]
    converts = re.findall(r"ttg\.convert_layout .*-> (tensor<[^>]*>)", loop)
    assert len(converts) == 1 and "#dot_op" in converts[0], converts
    assert "ttg.local_alloc %q" in ttgir[:ttgir.index("scf.for")]
    assert "warp_group_dot_wait" in loop
    shared = int(re.search(r"ttg\.shared = (\d+)", ttgir).group(1))
    assert shared <= 232448, shared
    assert compiled.trace.cubin_info["spill_stores"] == 0, compiled.trace.cubin_info["report"]
