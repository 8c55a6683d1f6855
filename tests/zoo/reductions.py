"""Reductions: sum/max/min/argmax/argmin along each axis of 2-D and 3-D blocks, integer and tied
inputs, whole blocks over many warps, tl.softmax. Each kernel comes with a maker of fresh random
inputs of awkward sizes and numpy's expected outputs; `ENTRIES` lists this family's catalogue
entries.
"""
from __future__ import annotations

import numpy as np

import compiler as triton
import compiler.language as tl
from tests.zoo.case import Case, ZooKernel, APPROX, LIBM, REORDERED_SUM
from tests.zoo.reference import awkward, normal


@triton.jit
def reduce_kernel(x_ptr, sum_ptr, max_ptr, min_ptr, argmax_ptr, argmin_ptr, M, N, stride_m,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, AXIS: tl.constexpr):
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * stride_m + cols[None, :], mask=mask, other=0.0)
    low = tl.where(mask, x, -float("inf"))
    high = tl.where(mask, x, float("inf"))
    if AXIS == 0:
        idx = cols
        keep = cols < N
    else:
        idx = rows
        keep = rows < M
    tl.store(sum_ptr + idx, tl.sum(x, axis=AXIS), mask=keep)
    tl.store(max_ptr + idx, tl.max(low, axis=AXIS), mask=keep)
    tl.store(min_ptr + idx, tl.min(high, axis=AXIS), mask=keep)
    tl.store(argmax_ptr + idx, tl.argmax(low, axis=AXIS), mask=keep)
    tl.store(argmin_ptr + idx, tl.argmin(high, axis=AXIS), mask=keep)


def _reduce_case(rng, axis):
    m, n = awkward(rng, 5, 32, 32), awkward(rng, 5, 64, 64)
    # distinct values (no ties for argmax/argmin), not integers (sums round)
    x = (rng.permutation(m * n) - m * n / 2 + rng.uniform(0.1, 0.9, m * n)).astype(np.float32)
    x = x.reshape(m, n) / 1024                           # magnitudes about 1
    length = n if axis == 0 else m
    expected = {1: x.sum(axis=axis, dtype=np.float64).astype(np.float32),
                2: x.max(axis=axis), 3: x.min(axis=axis),
                4: x.argmax(axis=axis).astype(np.int32), 5: x.argmin(axis=axis).astype(np.int32)}
    outs = [np.zeros(length, np.float32) for _ in range(3)] + \
        [np.zeros(length, np.int32) for _ in range(2)]
    return Case([x, *outs, m, n, n], (1,), expected,
                {"BLOCK_M": 32, "BLOCK_N": 64, "AXIS": axis}, {"num_warps": 4})


@triton.jit
def int_reduce_kernel(a_ptr, u_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0)       # int16
    u = tl.load(u_ptr + offs, mask=mask, other=0)       # uint32
    tl.store(out_ptr + 0, tl.max(a, axis=0).to(tl.int64))
    tl.store(out_ptr + 1, tl.min(a, axis=0).to(tl.int64))
    tl.store(out_ptr + 2, tl.sum(a.to(tl.int64), axis=0))
    tl.store(out_ptr + 3, tl.max(u, axis=0).to(tl.int64))
    tl.store(out_ptr + 4, tl.argmax(u, axis=0).to(tl.int64))


def _make_int_reduce(rng):
    n = awkward(rng, 30, 512, 512)
    a = rng.integers(-30000, 30000, n).astype(np.int16)
    a[0], a[1] = -abs(int(a[0])) - 1, abs(int(a[1])) + 1    # padding zeros are neither extreme
    u = rng.choice(2**32, n, replace=False).astype(np.uint32)    # distinct: one argmax
    return Case([a, u, np.zeros(5, np.int64), n], (1,),
                {2: np.array([a.max(), a.min(), a.astype(np.int64).sum(), u.max(), u.argmax()],
                             np.int64)}, {"BLOCK": 512}, {"num_warps": 4})


@triton.jit
def argmax_ties_kernel(x_ptr, argmax_ptr, argmin_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * N + offs, mask=offs < N, other=-1)
    tl.store(argmax_ptr + row, tl.argmax(x, axis=0))
    tl.store(argmin_ptr + row, tl.argmin(tl.where(offs < N, x, 100), axis=0))


def _make_argmax_ties(rng):
    rows, n = int(rng.integers(2, 9)), awkward(rng, 100, 512, 512)
    x = rng.integers(0, 4, (rows, n)).astype(np.int32)      # many ties: the first index wins
    return Case([x, np.zeros(rows, np.int32), np.zeros(rows, np.int32), n], (rows,),
                {1: x.argmax(axis=1).astype(np.int32), 2: x.argmin(axis=1).astype(np.int32)},
                {"BLOCK": 512}, {"num_warps": 8})


@triton.jit
def block_sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr, tl.sum(x, axis=0))
    tl.store(out_ptr + 1, tl.max(x.to(tl.float16), axis=0).to(tl.float32))


def _make_block_sum(rng):
    n = awkward(rng, 1000, 4096, 4096)
    x = np.abs(normal(rng, n))
    expected = np.array([x.astype(np.float64).sum(), x.astype(np.float16).max()], np.float32)
    return Case([x, np.zeros(2, np.float32), n], (1,), {1: expected}, {"BLOCK": 4096},
                {"num_warps": 8})


@triton.jit
def reduce_3d_kernel(x_ptr, out_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    a = tl.arange(0, A)
    b = tl.arange(0, B)
    c = tl.arange(0, C)
    x = tl.load(x_ptr + a[:, None, None] * B * C + b[None, :, None] * C + c[None, None, :])
    tl.store(out_ptr + a[:, None] * C + c[None, :], tl.sum(x, axis=1))      # middle axis


def _make_reduce_3d(rng):
    x = rng.integers(-1000, 1000, (4, 8, 16)).astype(np.int32)
    return Case([x, np.zeros((4, 16), np.int32)], (1,), {1: x.sum(axis=1).astype(np.int32)},
                {"A": 4, "B": 8, "C": 16}, {"num_warps": 2})


@triton.jit
def softmax_builtin_kernel(x_ptr, out_ptr, N: tl.constexpr):
    row = tl.program_id(0)
    x = tl.load(x_ptr + row * N + tl.arange(0, N))
    tl.store(out_ptr + row * N + tl.arange(0, N), tl.softmax(x))


def _make_softmax_builtin(rng):
    x = normal(rng, (int(rng.integers(2, 9)), 64))
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return Case([x, np.zeros_like(x)], (x.shape[0],),
                {1: (e / e.sum(axis=1, keepdims=True)).astype(np.float32)}, {"N": 64},
                {"num_warps": 1})


#: This family's catalogue entries.
ENTRIES = [
    ZooKernel("reduce_axis0", reduce_kernel, lambda rng: _reduce_case(rng, 0),
              REORDERED_SUM, REORDERED_SUM),
    ZooKernel("reduce_axis1", reduce_kernel, lambda rng: _reduce_case(rng, 1),
              REORDERED_SUM, REORDERED_SUM),
    ZooKernel("int_reductions", int_reduce_kernel, _make_int_reduce),
    ZooKernel("argmax_ties", argmax_ties_kernel, _make_argmax_ties),
    ZooKernel("block_sum_8_warps", block_sum_kernel, _make_block_sum, REORDERED_SUM,
              REORDERED_SUM),
    ZooKernel("softmax_builtin", softmax_builtin_kernel, _make_softmax_builtin, LIBM,
              APPROX),
    ZooKernel("reduce_3d", reduce_3d_kernel, _make_reduce_3d),
]
