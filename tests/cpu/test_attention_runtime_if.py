"""Flash attention whose K loop branches at run time (our kernel, in the shape of Triton's
tutorial 06 `_attn_fwd_inner`: `if start_n >= causal_start:` masks and rescales one way, else
the other). remove-layout-conversions carries the branches' tensor-core layouts through the
scf.if (its results and yields), so the loop body has no conversion of a BLOCK_M x BLOCK_N
tile: on sm_90 the only one left is p's into the register-A operand of the second wgmma, on
sm_80 p's into mma.sync's A operand. The values are checked on the SIMT evaluator (sm_80) and
the interpreter against numpy, causal (the if takes both ways) and not."""
from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

import compiler as triton
import compiler.language as tl
from tests.cpu.mma_cases import compile_jit, run_on_simt

needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not on the PATH")


@triton.jit
def attention_if_kernel(q_ptr, k_ptr, v_ptr, o_ptr, qk_scale, n_ctx,
                        HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                        CAUSAL: tl.constexpr, FP8: tl.constexpr):
    """One head, contiguous (n_ctx, HEAD_DIM) q/k/v/o; n_ctx a multiple of both blocks. With
    FP8, every dot operand is cast to fp8e5 (as tutorial 06's fp8 benchmark feeds them)."""
    start_m = tl.program_id(0)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + offs_m[:, None] * HEAD_DIM + offs_d[None, :])
    if FP8:
        q = q.to(tl.float8e5)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    if CAUSAL:
        causal_start = start_m * BLOCK_M
        hi = (start_m + 1) * BLOCK_M
    else:
        causal_start = n_ctx
        hi = n_ctx
    for start_n in range(0, hi, BLOCK_N):
        k = tl.load(k_ptr + (start_n + offs_n)[None, :] * HEAD_DIM + offs_d[:, None])
        if FP8:
            k = k.to(tl.float8e5)
        qk = tl.dot(q, k)
        if start_n >= causal_start:
            mask = offs_m[:, None] >= (start_n + offs_n[None, :])
            qk = qk * qk_scale + tl.where(mask, 0, -1.0e6)
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            qk -= m_ij[:, None]
        else:
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = tl.load(v_ptr + (start_n + offs_n)[:, None] * HEAD_DIM + offs_d[None, :])
        if FP8:
            acc = tl.dot(p.to(tl.float8e5), v.to(tl.float8e5), acc)
        else:
            acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(o_ptr + offs_m[:, None] * HEAD_DIM + offs_d[None, :], acc.to(tl.float16))


def reference(q, k, v, causal: bool, scale: float) -> np.ndarray:
    """softmax(q k^T * scale) v in float64 (the kernel's `l_i = 1` start is scaled by
    exp2(-inf) = 0 at the first block, so it adds nothing)."""
    s = q.astype(np.float64) @ k.astype(np.float64).T * scale
    if causal:
        s = np.where(np.tril(np.ones(s.shape, bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p @ v.astype(np.float64)) / p.sum(axis=1, keepdims=True)


def _inputs(n_ctx: int, head_dim: int, seed: int):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n_ctx, head_dim)).astype(np.float16) for _ in range(3)]


def _compile(q, k, v, o, scale, block_m, block_n, causal, target=None, fp8=False, warps=4):
    n_ctx, head_dim = q.shape
    return compile_jit(attention_if_kernel, [q, k, v, o, scale * 1.44269504, n_ctx],
                       {"HEAD_DIM": head_dim, "BLOCK_M": block_m, "BLOCK_N": block_n,
                        "CAUSAL": causal, "FP8": fp8},
                       {"num_warps": warps, "num_stages": 3}, None, stop_after=None,
                       target=target)


def _loop_tile_converts(ttgir: str, block_m: int, block_n: int) -> list:
    """The conversions of BLOCK_M x BLOCK_N tiles inside the K loop, as (from, to) types."""
    loop = ttgir[ttgir.index("scf.for"):]
    loop = loop[:loop.index("\n    }")]
    return re.findall(rf"ttg\.convert_layout .*?: (tensor<{block_m}x{block_n}x[^>]*>) -> "
                      rf"(tensor<[^>]*>)", loop)


#: the small problem both value checks run: (n_ctx, head_dim, BLOCK_M, BLOCK_N)
SMALL = (64, 32, 32, 16)


def _small_case(seed: int):
    """q, k, v, a zeroed o and the softmax scale of the SMALL problem."""
    n_ctx, head_dim = SMALL[:2]
    q, k, v = _inputs(n_ctx, head_dim, seed)
    return q, k, v, np.zeros_like(q), float(1.0 / np.sqrt(head_dim))


def _check(o, q, k, v, causal: bool, scale: float) -> None:
    np.testing.assert_allclose(o.astype(np.float32), reference(q, k, v, causal, scale),
                               atol=3e-3, rtol=1e-2)


@needs_ptxas
@pytest.mark.parametrize("causal", [False, True])
def test_runtime_if_keeps_the_mma_layout_and_computes_attention_on_simt(causal):
    n_ctx, _, block_m, block_n = SMALL
    q, k, v, o, scale = _small_case(7 + causal)
    compiled, runtime = _compile(q, k, v, o, scale, block_m, block_n, causal)
    ttgir = compiled.asm["ttgir"]
    if_line = next(line for line in ttgir.splitlines() if "scf.if" in line)
    assert "#mma" in if_line, if_line       # the if's results are in the accumulator layout
    converts = _loop_tile_converts(ttgir, block_m, block_n)
    assert all("#dot_op" in to for _, to in converts), converts
    out, = run_on_simt(compiled, (n_ctx // block_m,), runtime, [o])
    _check(out, q, k, v, causal, scale)


@pytest.mark.parametrize("causal", [False, True])
def test_runtime_if_attention_on_the_interpreter(causal):
    n_ctx, head_dim, block_m, block_n = SMALL
    q, k, v, o, scale = _small_case(11 + causal)
    attention_if_kernel[(n_ctx // block_m,)](q, k, v, o, scale * 1.44269504, n_ctx,
                                             HEAD_DIM=head_dim, BLOCK_M=block_m,
                                             BLOCK_N=block_n, CAUSAL=causal, FP8=False,
                                             interpret=True)
    _check(o, q, k, v, causal, scale)


@needs_ptxas
@pytest.mark.parametrize("fp8", [False, True])
def test_runtime_if_on_sm90_leaves_only_the_operand_conversion_in_the_loop(fp8):
    n_ctx, head_dim, block_m, block_n = 1024, 64, 64, 64
    q = np.zeros((n_ctx, head_dim), np.float16)
    compiled, _ = _compile(q, q, q, q, 0.125, block_m, block_n, False, target={"arch": 90},
                           fp8=fp8)
    ttgir = compiled.asm["ttgir"]
    if_line = next(line for line in ttgir.splitlines() if "scf.if" in line)
    assert "#mma" in if_line, if_line
    converts = _loop_tile_converts(ttgir, block_m, block_n)
    # p's conversion into the second wgmma's register operand, nothing else
    assert len(converts) == 1 and "#dot_op" in converts[0][1], converts
    assert "wgmma.mma_async" in compiled.asm["ptx"]
    assert compiled.trace.cubin_info["spill_stores"] == 0
