"""Control flow: scf.for with loop-carried values and run-time bounds, if/else on scalars, while
loops, nested control, 3-D grids. Each kernel comes with a maker of fresh random inputs of
awkward sizes and numpy's expected outputs; `ENTRIES` lists this family's catalogue entries.
"""
from __future__ import annotations

import numpy as np

import compiler as triton
import compiler.language as tl
from tests.zoo.case import Case, ZooKernel, REORDERED_SUM
from tests.zoo.reference import awkward, normal, trunc_div


@triton.jit
def row_sum_loop_kernel(x_ptr, sum_ptr, count_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    count = 0
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
        count += 1
    tl.store(sum_ptr + row, tl.sum(acc, axis=0))
    tl.store(count_ptr + row, count)


def _make_row_sum_loop(rng):
    m, n = int(rng.integers(2, 9)), awkward(rng, 40, 600, 64)
    x = normal(rng, (m, n))
    expected = {1: x.sum(axis=1, dtype=np.float64).astype(np.float32),
                2: np.full(m, triton.cdiv(n, 64), np.int32)}
    return Case([x, np.zeros(m, np.float32), np.zeros(m, np.int32), n], (m,), expected,
                {"BLOCK": 64}, {"num_warps": 2})


@triton.jit
def branch_kernel(x_ptr, out_ptr, n, threshold, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    if pid % 2 == 0:
        y = x * 2.0
    else:
        y = x - 1.0
    if pid < threshold:
        y = y + 100.0
    tl.store(out_ptr + offs, y, mask=mask)


def _make_branch(rng):
    n = awkward(rng, 300, 1000, 64)
    x = normal(rng, n)
    threshold = int(rng.integers(1, triton.cdiv(n, 64)))
    pid = np.arange(n) // 64
    y = np.where(pid % 2 == 0, x * np.float32(2), x - np.float32(1)).astype(np.float32)
    y = np.where(pid < threshold, y + np.float32(100), y).astype(np.float32)
    return Case([x, np.zeros(n, np.float32), n, threshold], (triton.cdiv(n, 64),), {1: y},
                {"BLOCK": 64}, {"num_warps": 2})


@triton.jit
def grid_stride_while_kernel(x_ptr, out_ptr, trips_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    step = tl.num_programs(0) * BLOCK
    start = pid * BLOCK
    acc = tl.zeros((BLOCK,), dtype=tl.int32)
    trips = 0
    while start < n:
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0)
        start += step
        trips += 1
    tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), acc)
    tl.store(trips_ptr + pid, trips)


def _make_while(rng):
    programs, block = 3, 32
    n = awkward(rng, 200, 900, block)
    x = rng.integers(-100, 100, n).astype(np.int32)
    padded = np.zeros(triton.cdiv(n, programs * block) * programs * block, np.int32)
    padded[:n] = x
    tiles = padded.reshape(-1, programs, block)
    trips = np.array([len(range(p * block, n, programs * block)) for p in range(programs)],
                     np.int32)
    return Case([x, np.zeros(programs * block, np.int32), np.zeros(programs, np.int32), n],
                (programs,), {1: tiles.sum(axis=0).ravel().astype(np.int32), 2: trips},
                {"BLOCK": block}, {"num_warps": 1})


@triton.jit
def grid3d_kernel(out_ptr, BLOCK: tl.constexpr):
    px = tl.program_id(0)
    py = tl.program_id(1)
    pz = tl.program_id(2)
    flat = (pz * tl.num_programs(1) + py) * tl.num_programs(0) + px
    lanes = tl.arange(0, BLOCK)
    value = px * 1000000 + py * 1000 + pz + lanes * 0
    tl.store(out_ptr + flat * BLOCK + lanes, value)


def _make_grid3d(rng):
    gx, gy, gz = (int(v) for v in rng.integers(1, 5, 3))
    px, py, pz = np.meshgrid(np.arange(gx), np.arange(gy), np.arange(gz), indexing="ij")
    flat = (pz * gy + py) * gx + px
    value = (px * 1000000 + py * 1000 + pz).astype(np.int32)
    out = np.zeros((gx * gy * gz, 32), np.int32)
    out[flat.ravel()] = value.ravel()[:, None]
    return Case([np.zeros((gx * gy * gz, 32), np.int32)], (gx, gy, gz), {0: out},
                {"BLOCK": 32}, {"num_warps": 1})


@triton.jit
def nested_control_kernel(x_ptr, out_ptr, n, rounds, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    total = tl.zeros((BLOCK,), dtype=tl.int32)
    for r in range(rounds):
        if r % 3 == 0:
            total += x * r
        else:
            for j in tl.static_range(2):
                total -= x + j
        biggest = tl.max(total, axis=0)
        if biggest > 300:
            total = total // 2
    tl.store(out_ptr + offs, total, mask=mask)


def _make_nested(rng):
    n, rounds = awkward(rng, 100, 600, 64), int(rng.integers(3, 9))
    x = rng.integers(-50, 50, n).astype(np.int32)
    blocks = []
    for start in range(0, n, 64):
        xb = x[start:start + 64]
        padded = np.zeros(64, np.int32)
        padded[:len(xb)] = xb
        total = np.zeros(64, np.int64)
        for r in range(rounds):
            if r % 3 == 0:
                total += padded * r
            else:
                for j in range(2):
                    total -= padded + j
            if total.max() > 300:
                total = trunc_div(total, np.int64(2))
        blocks.append(total[:len(xb)])
    return Case([x, np.zeros(n, np.int32), n, rounds], (triton.cdiv(n, 64),),
                {1: np.concatenate(blocks).astype(np.int32)}, {"BLOCK": 64}, {"num_warps": 2})


@triton.jit
def strided_loop_kernel(x_ptr, out_ptr, start, end, step, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for k in range(start, end, step):                      # bounds and step known at run time
        acc += tl.load(x_ptr + k * BLOCK + tl.arange(0, BLOCK))
    tl.store(out_ptr + tl.arange(0, BLOCK), acc)


def _make_strided_loop(rng):
    rows = int(rng.integers(10, 40))
    start, end, step = int(rng.integers(0, 4)), int(rng.integers(5, rows + 1)), \
        int(rng.integers(2, 5))
    x = normal(rng, (rows, 32))
    expected = x[start:end:step].astype(np.float64).sum(axis=0).astype(np.float32)
    return Case([x, np.zeros(32, np.float32), start, end, step], (1,), {1: expected},
                {"BLOCK": 32}, {"num_warps": 1})


@triton.jit
def collatz_kernel(x_ptr, out_ptr, steps_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    steps = 0
    while tl.max(x, axis=0) > 1:                        # condition from a reduction
        x = tl.where(x > 1, tl.where(x % 2 == 0, x // 2, 3 * x + 1), x)
        steps += 1
    tl.store(out_ptr + tl.arange(0, N), x)
    tl.store(steps_ptr, steps)


def _make_collatz(rng):
    x = rng.integers(1, 200, 32).astype(np.int32)
    y, steps = x.copy(), 0
    while y.max() > 1:
        y = np.where(y > 1, np.where(y % 2 == 0, y // 2, 3 * y + 1), y)
        steps += 1
    return Case([x, np.zeros(32, np.int32), np.zeros(1, np.int32)], (1,),
                {1: y.astype(np.int32), 2: np.array([steps], np.int32)}, {"N": 32},
                {"num_warps": 1})


#: This family's catalogue entries.
ENTRIES = [
    ZooKernel("for_loop_carried", row_sum_loop_kernel, _make_row_sum_loop,
              REORDERED_SUM, REORDERED_SUM),
    ZooKernel("if_else_scalar", branch_kernel, _make_branch),
    ZooKernel("while_grid_stride", grid_stride_while_kernel, _make_while),
    ZooKernel("grid_3d", grid3d_kernel, _make_grid3d),
    ZooKernel("nested_control", nested_control_kernel, _make_nested),
    ZooKernel("runtime_step_loop", strided_loop_kernel, _make_strided_loop, REORDERED_SUM,
              REORDERED_SUM),
    ZooKernel("while_reduction_cond", collatz_kernel, _make_collatz),
]
