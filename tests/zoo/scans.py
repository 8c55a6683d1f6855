"""Scans: cumsum along either axis, reversed, integer and float. Each kernel comes with a maker of
fresh random inputs of awkward sizes and numpy's expected outputs; `ENTRIES` lists this family's
catalogue entries.
"""
from __future__ import annotations

import numpy as np

import compiler as triton
import compiler.language as tl
from tests.zoo.case import Case, ZooKernel, REORDERED_SUM
from tests.zoo.reference import awkward, normal


@triton.jit
def cumsum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.store(out_ptr + offs, tl.cumsum(x, axis=0), mask=mask)


def _make_cumsum(rng):
    n = awkward(rng, 100, 1000, 128)
    x = rng.integers(-1000, 1000, n).astype(np.int32)
    expected = np.concatenate([np.cumsum(x[i:i + 128], dtype=np.int32)
                               for i in range(0, n, 128)])
    return Case([x, np.zeros(n, np.int32), n], (triton.cdiv(n, 128),), {1: expected},
                {"BLOCK": 128}, {"num_warps": 2})


@triton.jit
def cumsum_rows_kernel(x_ptr, out_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0.0)
    tl.store(out_ptr + rows[:, None] * N + cols[None, :], tl.cumsum(x, axis=1), mask=mask)


def _make_cumsum_rows(rng):
    m, n = awkward(rng, 2, 8, 8), awkward(rng, 5, 64, 64)
    x = normal(rng, (m, n))
    return Case([x, np.zeros((m, n), np.float32), m, n], (1,),
                {1: np.cumsum(x.astype(np.float64), axis=1).astype(np.float32)},
                {"BLOCK_M": 8, "BLOCK_N": 64}, {"num_warps": 1})


@triton.jit
def scan_2d_kernel(x_ptr, down_ptr, back_ptr, total_ptr, M, N,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    offs = rows[:, None] * N + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.store(down_ptr + offs, tl.cumsum(x, axis=0), mask=mask)
    tl.store(back_ptr + offs, tl.cumsum(x, axis=1, reverse=True), mask=mask)
    tl.store(total_ptr, tl.sum(x))                      # both axes at once


def _make_scan_2d(rng):
    m, n = awkward(rng, 5, 32, 32), awkward(rng, 3, 16, 16)
    x = rng.integers(-100, 100, (m, n)).astype(np.int32)
    back = np.cumsum(x[:, ::-1], axis=1)[:, ::-1].astype(np.int32)
    return Case([x, np.zeros_like(x), np.zeros_like(x), np.zeros(1, np.int32), m, n], (1,),
                {1: np.cumsum(x, axis=0).astype(np.int32), 2: np.ascontiguousarray(back),
                 3: np.array([x.sum()], np.int32)},
                {"BLOCK_M": 32, "BLOCK_N": 16}, {"num_warps": 4})


#: This family's catalogue entries.
ENTRIES = [
    ZooKernel("cumsum_i32", cumsum_kernel, _make_cumsum),
    ZooKernel("cumsum_rows_f32", cumsum_rows_kernel, _make_cumsum_rows,
              REORDERED_SUM, REORDERED_SUM),
    ZooKernel("scan_2d_axis0_reverse", scan_2d_kernel, _make_scan_2d),
]
