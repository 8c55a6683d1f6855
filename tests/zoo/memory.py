"""Memory and shape patterns: 2-D masked strided access, transposes and permutes that need layout
conversions, expand_dims/broadcast, reshape/ravel, 64-bit offsets. Each kernel comes with a
maker of fresh random inputs of awkward sizes and numpy's expected outputs; `ENTRIES` lists this
family's catalogue entries.
"""
from __future__ import annotations

import numpy as np

import compiler as triton
import compiler.language as tl
from tests.zoo.case import Case, ZooKernel, FMA, REORDERED_SUM
from tests.zoo.reference import awkward, normal


@triton.jit
def strided_copy_kernel(x_ptr, out_ptr, M, N, stride_xm, stride_xn, stride_om,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :] * stride_xn, mask=mask)
    tl.store(out_ptr + rows[:, None] * stride_om + cols[None, :], x * 2.0 + 1.0, mask=mask)


def _make_strided(rng):
    m, n = awkward(rng, 10, 70, 16), awkward(rng, 10, 90, 32)
    base = normal(rng, (m + 3, 2 * n + 1))
    view = base[:m, : 2 * n : 2]                        # rows of stride 2n+1, columns stride 2
    out = np.zeros((m, n + 5), np.float32)              # output rows padded to n+5
    expected = out.copy()
    expected[:, :n] = view * np.float32(2) + np.float32(1)
    return Case([base, out, m, n, 2 * n + 1, 2, n + 5],
                (triton.cdiv(m, 16), triton.cdiv(n, 32)), {1: expected},
                {"BLOCK_M": 16, "BLOCK_N": 32}, {"num_warps": 4})


@triton.jit
def transpose_kernel(x_ptr, out_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :],
                mask=(rows[:, None] < M) & (cols[None, :] < N), other=0.0)
    xt = tl.trans(x)                                    # (BLOCK_N, BLOCK_M)
    out_ptrs = out_ptr + cols[:, None] * M + rows[None, :]
    tl.store(out_ptrs, xt, mask=(cols[:, None] < N) & (rows[None, :] < M))


def _make_transpose(rng):
    m, n = awkward(rng, 10, 90, 32), awkward(rng, 10, 90, 32)
    x = normal(rng, (m, n))
    return Case([x, np.zeros((n, m), np.float32), m, n], (triton.cdiv(m, 32), triton.cdiv(n, 32)),
                {1: np.ascontiguousarray(x.T)}, {"BLOCK_M": 32, "BLOCK_N": 32}, {"num_warps": 4})


@triton.jit
def broadcast_kernel(a_ptr, b_ptr, c_ptr, out_ptr, M, N,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    a = tl.load(a_ptr + rows, mask=rows < M, other=0.0)
    b = tl.load(b_ptr + cols, mask=cols < N, other=0.0)
    c = tl.load(c_ptr + cols, mask=cols < N, other=0.0)
    col_a = tl.expand_dims(a, 1)                        # (BLOCK_M, 1)
    row_b = tl.expand_dims(b, 0)                        # (1, BLOCK_N)
    outer = tl.broadcast_to(col_a, (BLOCK_M, BLOCK_N)) * row_b + c[None, :]
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(out_ptr + rows[:, None] * N + cols[None, :], outer, mask=mask)


def _make_broadcast(rng):
    m, n = awkward(rng, 5, 100, 16), awkward(rng, 5, 64, 64)
    a, b, c = normal(rng, m), normal(rng, n), normal(rng, n)
    expected = a[:, None] * b[None, :] + c[None, :]
    return Case([a, b, c, np.zeros((m, n), np.float32), m, n], (triton.cdiv(m, 16),),
                {3: expected}, {"BLOCK_M": 16, "BLOCK_N": 64}, {"num_warps": 2})


@triton.jit
def reshape_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, ROWS: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tiles = tl.reshape(x, (ROWS, BLOCK // ROWS))
    row_sums = tl.sum(tiles, axis=1)
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    tl.store(out_ptr + rows, row_sums, mask=rows * (BLOCK // ROWS) < n)


def _make_reshape(rng):
    n = awkward(rng, 100, 1000, 256)
    x = normal(rng, n)
    padded = np.zeros(triton.cdiv(n, 256) * 256, np.float32)
    padded[:n] = x
    sums = padded.reshape(-1, 16).astype(np.float64).sum(axis=1).astype(np.float32)
    rows = triton.cdiv(n, 16)
    return Case([x, np.zeros(rows, np.float32), n], (triton.cdiv(n, 256),), {1: sums[:rows]},
                {"BLOCK": 256, "ROWS": 16}, {"num_warps": 2})


@triton.jit
def int64_offsets_kernel(x_ptr, out_ptr, stride, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * stride + tl.arange(0, BLOCK)
    tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), tl.load(x_ptr + offs) * 3)


def _make_int64_offsets(rng):
    rows, stride = int(rng.integers(2, 9)), awkward(rng, 17, 100, 16)
    x = rng.integers(-10**12, 10**12, rows * stride).astype(np.int64)
    expected = (x.reshape(rows, stride)[:, :16] * 3).ravel()
    return Case([x, np.zeros(rows * 16, np.int64), stride], (rows,), {1: expected},
                {"BLOCK": 16}, {"num_warps": 1})


@triton.jit
def permute_3d_kernel(x_ptr, out_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    a = tl.arange(0, A)
    b = tl.arange(0, B)
    c = tl.arange(0, C)
    x = tl.load(x_ptr + a[:, None, None] * B * C + b[None, :, None] * C + c[None, None, :])
    y = tl.permute(x, (2, 0, 1))                           # (C, A, B)
    tl.store(out_ptr + c[:, None, None] * A * B + a[None, :, None] * B + b[None, None, :], y)


def _make_permute_3d(rng):
    x = normal(rng, (4, 8, 16))
    return Case([x, np.zeros((16, 4, 8), np.float32)], (1,),
                {1: np.ascontiguousarray(x.transpose(2, 0, 1))}, {"A": 4, "B": 8, "C": 16},
                {"num_warps": 2})


@triton.jit
def shape_builtins_kernel(x_ptr, out_ptr, prod_ptr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)
    cols = tl.arange(0, N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :])
    regrouped = tl.reshape(tl.ravel(x), (2, N // 2, M))
    z = tl.sum(tl.max(regrouped, axis=2), axis=1)                       # (2,)
    tl.store(out_ptr + tl.arange(0, 2), z + tl.full((2,), 1.5, tl.float32) + tl.zeros_like(z))
    tl.store(prod_ptr + rows[:, None] * N + cols[None, :], tl.cumprod(x, axis=1))


def _make_shape_builtins(rng):
    m, n = 8, 16
    x = rng.uniform(0.5, 1.5, (m, n)).astype(np.float32)
    z = x.reshape(2, n // 2, m).max(axis=2).astype(np.float64).sum(axis=1) + 1.5
    prod = np.cumprod(x.astype(np.float64), axis=1).astype(np.float32)
    return Case([x, np.zeros(2, np.float32), np.zeros((m, n), np.float32)], (1,),
                {1: z.astype(np.float32), 2: prod}, {"M": m, "N": n}, {"num_warps": 2})


#: This family's catalogue entries.
ENTRIES = [
    ZooKernel("strided_2d", strided_copy_kernel, _make_strided),
    ZooKernel("transpose", transpose_kernel, _make_transpose),
    ZooKernel("broadcast_outer", broadcast_kernel, _make_broadcast, FMA, FMA),
    ZooKernel("reshape_rows", reshape_kernel, _make_reshape, REORDERED_SUM, REORDERED_SUM),
    ZooKernel("int64_offsets", int64_offsets_kernel, _make_int64_offsets),
    ZooKernel("permute_3d", permute_3d_kernel, _make_permute_3d),
    ZooKernel("shape_builtins", shape_builtins_kernel, _make_shape_builtins, REORDERED_SUM,
              REORDERED_SUM),
]
