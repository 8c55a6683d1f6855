"""tl.dot (float16, float32 ieee and tf32, bfloat16, int8, transposed operands) and the sample
kernels softmax, layernorm and matmul on awkward sizes. Each kernel comes with a maker of fresh
random inputs of awkward sizes and numpy's expected outputs; `ENTRIES` lists this family's
catalogue entries.
"""
from __future__ import annotations

import numpy as np

import compiler as triton
import compiler.language as tl
from sample_kernels.layernorm import layernorm_kernel
from sample_kernels.layernorm import reference as layernorm_reference
from sample_kernels.matmul import matmul_kernel
from sample_kernels.softmax import reference as softmax_reference
from sample_kernels.softmax import softmax_kernel
from tests.zoo.case import (Case, Tolerance, ZooKernel, APPROX, FP16_OUT, LONG_DOT, REORDERED_SUM,
    TF32)
from tests.zoo.reference import awkward, normal, to_bf16


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
               BLOCK_K: tl.constexpr, PRECISION: tl.constexpr):
    rm = tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :],
                mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :],
                mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
    c = tl.dot(a, b, input_precision=PRECISION)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c, mask=(rm[:, None] < M) & (rn[None, :] < N))


def _dot_case(rng, dtype, precision="ieee"):
    m, n, k = (awkward(rng, 9, 16, 16) for _ in range(3))
    a, b = normal(rng, (m, k), dtype), normal(rng, (k, n), dtype)
    expected = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    return Case([a, b, np.zeros((m, n), np.float32), m, n, k], (1,), {2: expected},
                {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "PRECISION": precision},
                {"num_warps": 1})


@triton.jit
def dot_trans_b_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :],
                mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
    b = tl.load(b_ptr + rn[:, None] * K + rk[None, :],            # B stored (N, K)
                mask=(rn[:, None] < N) & (rk[None, :] < K), other=0.0)
    c = tl.dot(a, tl.trans(b))
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c, mask=(rm[:, None] < M) & (rn[None, :] < N))


def _make_dot_trans_b(rng):
    m, n, k = awkward(rng, 5, 16, 16), awkward(rng, 9, 32, 32), awkward(rng, 9, 32, 32)
    a, b = normal(rng, (m, k), np.float16), normal(rng, (n, k), np.float16)
    expected = (a.astype(np.float64) @ b.T.astype(np.float64)).astype(np.float32)
    return Case([a, b, np.zeros((m, n), np.float32), m, n, k], (1,), {2: expected},
                {"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 32}, {"num_warps": 4})


@triton.jit
def dot_i8_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :],
                mask=(rm[:, None] < M) & (rk[None, :] < K), other=0)
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :],
                mask=(rk[:, None] < K) & (rn[None, :] < N), other=0)
    c = tl.dot(a, b)                                       # int8 x int8 -> int32
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c, mask=(rm[:, None] < M) & (rn[None, :] < N))


def _make_dot_i8(rng):
    m, n, k = awkward(rng, 5, 16, 16), awkward(rng, 5, 16, 16), awkward(rng, 9, 32, 32)
    a = rng.integers(-128, 128, (m, k)).astype(np.int8)
    b = rng.integers(-128, 128, (k, n)).astype(np.int8)
    return Case([a, b, np.zeros((m, n), np.int32), m, n, k], (1,),
                {2: a.astype(np.int32) @ b.astype(np.int32)},
                {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 32}, {"num_warps": 1})


@triton.jit
def matmul_f32_bf16_kernel(a_ptr, b_ptr, c_ptr, d_ptr, M, N, K,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    exact = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    halved = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in tl.range(0, K, BLOCK_K):
        kk = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * K + kk[None, :],
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * N + rn[None, :],
                    mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        exact = tl.dot(a, b, exact, input_precision="ieee")
        halved += tl.dot(a.to(tl.bfloat16), b.to(tl.bfloat16))
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], exact, mask=mask)
    tl.store(d_ptr + rm[:, None] * N + rn[None, :], halved, mask=mask)


def _make_matmul_f32_bf16(rng):
    m, n, k = awkward(rng, 33, 100, 32), awkward(rng, 5, 32, 32), awkward(rng, 33, 100, 32)
    a, b = normal(rng, (m, k)), normal(rng, (k, n))
    bf = to_bf16(a).astype(np.float64) @ to_bf16(b).astype(np.float64)
    return Case([a, b, np.zeros((m, n), np.float32), np.zeros((m, n), np.float32), m, n, k],
                (triton.cdiv(m, 32),),
                {2: (a.astype(np.float64) @ b).astype(np.float32), 3: bf.astype(np.float32)},
                {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32}, {"num_warps": 4})


def _make_softmax(rng):
    rows, cols = int(rng.integers(2, 12)), awkward(rng, 20, 250, 8)
    x = normal(rng, (rows, cols))
    block = triton.next_power_of_2(cols)
    return Case([np.zeros((rows, cols), np.float32), x, cols, cols, cols], (rows,),
                {0: softmax_reference(x).astype(np.float32)}, {"BLOCK_SIZE": block},
                {"num_warps": 2})


def _make_layernorm(rng):
    rows, cols = int(rng.integers(2, 10)), awkward(rng, 20, 300, 8)
    x = normal(rng, (rows, cols), np.float16)
    w, b = rng.random(cols).astype(np.float16), rng.random(cols).astype(np.float16)
    block = triton.next_power_of_2(cols)
    return Case([x, np.zeros((rows, cols), np.float16), w, b, cols, cols, 1e-5], (rows,),
                {1: layernorm_reference(x, w, b)}, {"BLOCK_SIZE": block}, {"num_warps": 2})


def _matmul_case(rng, block):
    m, n, k = (awkward(rng, 20, 80, block) for _ in range(3))
    a, b = normal(rng, (m, k), np.float16), normal(rng, (k, n), np.float16)
    expected = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    grid = (triton.cdiv(m, block) * triton.cdiv(n, block),)
    return Case([a, b, np.zeros((m, n), np.float16), m, n, k, k, 1, n, 1, n, 1], grid,
                {2: expected}, {"BLOCK_SIZE_M": block, "BLOCK_SIZE_N": block,
                                "BLOCK_SIZE_K": block, "GROUP_SIZE_M": 2},
                {"num_warps": 2 if block == 16 else 4})


#: This family's catalogue entries.
ENTRIES = [
    ZooKernel("dot_f16", dot_kernel, lambda rng: _dot_case(rng, np.float16), REORDERED_SUM,
              REORDERED_SUM),
    ZooKernel("dot_f32", dot_kernel, lambda rng: _dot_case(rng, np.float32), REORDERED_SUM,
              REORDERED_SUM),
    ZooKernel("dot_f32_tf32", dot_kernel, lambda rng: _dot_case(rng, np.float32, "tf32"),
              REORDERED_SUM, TF32),
    ZooKernel("dot_trans_b", dot_trans_b_kernel, _make_dot_trans_b, REORDERED_SUM,
              REORDERED_SUM),
    ZooKernel("dot_i8", dot_i8_kernel, _make_dot_i8),
    ZooKernel("matmul_f32_bf16", matmul_f32_bf16_kernel, _make_matmul_f32_bf16,
              LONG_DOT, LONG_DOT),
    ZooKernel("softmax", softmax_kernel, _make_softmax,
              Tolerance(1e-5, 1e-6, "float32 exp and sums"), APPROX),
    ZooKernel("layernorm", layernorm_kernel, _make_layernorm, FP16_OUT, FP16_OUT),
    ZooKernel("matmul_block16", matmul_kernel, lambda rng: _matmul_case(rng, 16),
              FP16_OUT, FP16_OUT),
    ZooKernel("matmul_block32", matmul_kernel, lambda rng: _matmul_case(rng, 32),
              FP16_OUT, FP16_OUT),
]
