"""A flash-attention forward in the style of Triton's tutorial (q.k^T with tl.dot, an online
softmax with tl.max / tl.sum over the mma accumulator, p.v with tl.dot) compiles to PTX that
ptxas accepts and computes attention on the SIMT evaluator (tests/cpu/simt.py), causal and not,
at sequence lengths that are not a multiple of the block. The reductions over the accumulator
and the broadcasts of their results back onto it are lowered from the linear layouts."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import compiler as triton
import compiler.language as tl
from tests.cpu.mma_cases import compile_jit, run_on_simt

needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not on the PATH")


@triton.jit
def attention_fwd(q_ptr, k_ptr, v_ptr, o_ptr, N_CTX, sm_scale, HEAD_DIM: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    """O = softmax(Q K^T * sm_scale) V for one block of queries (rows of [N_CTX, HEAD_DIM])."""
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + offs_m[:, None] * HEAD_DIM + offs_d[None, :],
                mask=offs_m[:, None] < N_CTX, other=0.0)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    for start_n in range(0, N_CTX, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(k_ptr + cols[None, :] * HEAD_DIM + offs_d[:, None],
                    mask=cols[None, :] < N_CTX, other=0.0)
        qk = tl.dot(q, k)
        valid = cols[None, :] < N_CTX
        if CAUSAL:
            valid = valid & (offs_m[:, None] >= cols[None, :])
        qk = tl.where(valid, qk * qk_scale, -1.0e6)
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = tl.load(v_ptr + cols[:, None] * HEAD_DIM + offs_d[None, :],
                    mask=cols[:, None] < N_CTX, other=0.0)
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(o_ptr + offs_m[:, None] * HEAD_DIM + offs_d[None, :], acc.to(tl.float16),
             mask=offs_m[:, None] < N_CTX)


def _reference(q, k, v, scale, causal):
    s = (q.astype(np.float32) @ k.astype(np.float32).T) * scale
    if causal:
        s = np.where(np.tril(np.ones(s.shape, bool)), s, -np.inf)
    p = np.exp(s - s.max(1, keepdims=True))
    return (p / p.sum(1, keepdims=True)) @ v.astype(np.float32)


@needs_ptxas
@pytest.mark.parametrize("n_ctx,head_dim,causal,block_m", [(40, 64, False, 32),
                                                           (40, 64, True, 32),
                                                           (72, 128, True, 64)])
def test_attention_forward_on_the_simt_evaluator(n_ctx, head_dim, causal, block_m):
    rng = np.random.default_rng(n_ctx + head_dim)
    q, k, v = (rng.standard_normal((n_ctx, head_dim)).astype(np.float16) for _ in range(3))
    o = np.zeros_like(q)
    scale = float(1.0 / np.sqrt(head_dim))
    compiled, runtime = compile_jit(
        attention_fwd, [q, k, v, o, n_ctx, scale],
        {"HEAD_DIM": head_dim, "BLOCK_M": block_m, "BLOCK_N": 32, "CAUSAL": causal},
        {"num_warps": 4}, None, stop_after=None)
    ptx = compiled.asm["ptx"]
    assert "mma.sync.aligned.m16n8k16" in ptx and "shfl.sync.bfly" in ptx
    assert compiled.trace.cubin_info["spill_stores"] == 0
    out, = run_on_simt(compiled, (-(-n_ctx // block_m),), runtime, [o])
    np.testing.assert_allclose(out.astype(np.float32), _reference(q, k, v, scale, causal),
                               atol=3e-3, rtol=1e-2)
