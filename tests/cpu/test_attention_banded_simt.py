"""Flash attention in the shape of Triton's tutorial 06 on Hopper (our kernel, written for these
tests): q/k/v/o through 2-D tensor descriptors, K read as `desc_k.load(...).T`, one carried row
offset shared by the K and V loads, and the causal case as two loops over the same helper (the
blocks below the diagonal unmasked, then the diagonal block masked; the first loop runs zero
times for the first row block). The pipeliner's look-ahead of that shared offset used to move
K's reads a block ahead; on the SIMT evaluator (sm_80, mma.sync) each pipelined config now
matches numpy. tests/gpu/test_attention_tutorial_gpu.py runs the same kernel on the H200."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import compiler as triton
import compiler.language as tl
from compiler.tools.tensor_descriptor import TensorDescriptor
from tests.cpu.mma_cases import compile_jit, run_on_simt

needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not on the PATH")


@triton.jit
def _band(acc, l_i, m_i, q, desc_k, desc_v, base, lo, hi, qk_scale, offs_m,
          BLOCK_N: tl.constexpr, DIAGONAL: tl.constexpr):
    """Online softmax over key blocks [lo, hi) of one (batch, head); rows base + n."""
    row = base + lo
    offs_n = tl.arange(0, BLOCK_N)
    for start_n in range(lo, hi, BLOCK_N):
        s = tl.dot(q, desc_k.load([row, 0]).T) * qk_scale
        if DIAGONAL:
            s = tl.where(offs_m[:, None] >= start_n + offs_n[None, :], s, -1.0e6)
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = tl.dot(p.to(tl.float16), desc_v.load([row, 0]), acc * alpha[:, None])
        m_i = m_new
        row += BLOCK_N
    return acc, l_i, m_i


@triton.jit
def banded_attention_kernel(sm_scale, desc_q, desc_k, desc_v, desc_o, N_CTX,
                            HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                            BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    """o = softmax(q k^T * sm_scale) v for rows [bh * N_CTX, (bh + 1) * N_CTX) of 2-D
    (batch * heads * N_CTX, HEAD_DIM) descriptors; N_CTX a multiple of BLOCK_M."""
    start_m = tl.program_id(0)
    base = tl.program_id(1) * N_CTX
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    q = desc_q.load([base + start_m * BLOCK_M, 0])
    if CAUSAL:
        acc, l_i, m_i = _band(acc, l_i, m_i, q, desc_k, desc_v, base, 0, start_m * BLOCK_M,
                              qk_scale, offs_m, BLOCK_N, False)
        acc, l_i, m_i = _band(acc, l_i, m_i, q, desc_k, desc_v, base, start_m * BLOCK_M,
                              (start_m + 1) * BLOCK_M, qk_scale, offs_m, BLOCK_N, True)
    else:
        acc, l_i, m_i = _band(acc, l_i, m_i, q, desc_k, desc_v, base, 0, N_CTX, qk_scale,
                              offs_m, BLOCK_N, False)
    desc_o.store([base + start_m * BLOCK_M, 0], (acc / l_i[:, None]).to(tl.float16))


def reference(q, k, v, causal: bool, scale: float) -> np.ndarray:
    """softmax(q k^T * scale) v per leading index (numpy, fp32; p rounded to fp16 as the
    kernel's second dot reads it)."""
    s = np.einsum("...md,...nd->...mn", q.astype(np.float32), k.astype(np.float32)) * scale
    if causal:
        n = s.shape[-1]
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p = (p / p.sum(-1, keepdims=True)).astype(np.float16).astype(np.float32)
    return np.einsum("...mn,...nd->...md", p, v.astype(np.float32))


def descriptors(flat: list, block_m: int, block_n: int) -> list:
    """The kernel's four descriptors over q, k, v, o as (batch * heads * N_CTX, HEAD_DIM)."""
    d = flat[0].shape[-1]
    return [TensorDescriptor.from_tensor(t, [b, d])
            for t, b in zip(flat, (block_m, block_n, block_n, block_m))]


@needs_ptxas
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("block_m,block_n,stages", [(64, 32, 3), (32, 16, 2)])
def test_banded_attention_on_the_simt_evaluator(causal, block_m, block_n, stages):
    heads, n_ctx, d = 2, 128, 32
    rng = np.random.default_rng(block_m + stages)
    q, k, v = (rng.standard_normal((heads, n_ctx, d)).astype(np.float16) for _ in range(3))
    flat = [t.reshape(-1, d) for t in (q, k, v, np.zeros_like(q))]
    scale = 0.5
    compiled, runtime = compile_jit(
        banded_attention_kernel, [scale, *descriptors(flat, block_m, block_n), n_ctx],
        {"HEAD_DIM": d, "BLOCK_M": block_m, "BLOCK_N": block_n, "CAUSAL": causal},
        {"num_warps": 4, "num_stages": stages}, None, stop_after=None)
    assert "cp.async" in compiled.asm["ptx"]
    out, = run_on_simt(compiled, (n_ctx // block_m, heads), runtime, [flat[3]])
    np.testing.assert_allclose(out.astype(np.float32).reshape(q.shape),
                               reference(q, k, v, causal, scale), atol=3e-3, rtol=1e-2)
