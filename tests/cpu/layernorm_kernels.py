"""A layer norm forward and backward with the control flow of Triton's tutorial 05 (written here,
not copied): loop-carried row statistics that end in reductions to scalars, a backward whose
dw/db partial sums are added under a spin lock inside an `if` that yields tensors, scalar
atomics whose results nobody reads, and a column reduction of the partial sums. The CPU tier
checks their compiled form and their values through the interpreter; tests/gpu checks the values
on the GPU against torch.
"""
from __future__ import annotations

import numpy as np

import compiler as triton
import compiler.language as tl


@triton.jit
def ln_forward(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK: tl.constexpr):
    """y = (x - mean) * rstd * w + b for one row, the row walked in BLOCK-wide steps."""
    row = tl.program_id(0)
    total = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        total += tl.load(X + row * stride + offs, mask=offs < N, other=0.).to(tl.float32)
    mu = tl.sum(total, axis=0) / N
    squares = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(X + row * stride + offs, mask=offs < N, other=0.).to(tl.float32)
        centered = tl.where(offs < N, x - mu, 0.)
        squares += centered * centered
    rstd = 1 / tl.sqrt(tl.sum(squares, axis=0) / N + eps)
    tl.store(Mean + row, mu)
    tl.store(Rstd + row, rstd)
    for start in range(0, N, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        inside = offs < N
        x = tl.load(X + row * stride + offs, mask=inside, other=0.).to(tl.float32)
        w = tl.load(W + offs, mask=inside)
        b = tl.load(B + offs, mask=inside)
        tl.store(Y + row * stride + offs, (x - mu) * rstd * w + b, mask=inside)


@triton.jit
def ln_backward_rows(DX, DY, X, W, Mean, Rstd, PartialW, PartialB, Locks, stride, N,
                     GROUPS: tl.constexpr, BLOCK: tl.constexpr):
    """dx of one row; its dw/db terms are added into partial row `row % GROUPS` while holding
    that group's lock (Locks[g]); Locks[GROUPS + g] says whether the partial row holds data."""
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    inside = offs < N
    x = tl.load(X + row * stride + offs, mask=inside, other=0).to(tl.float32)
    grad = tl.load(DY + row * stride + offs, mask=inside, other=0).to(tl.float32)
    w = tl.load(W + offs, mask=inside).to(tl.float32)
    mu = tl.load(Mean + row)
    rstd = tl.load(Rstd + row)
    normed = tl.where(inside, (x - mu) * rstd, 0.)
    scaled = tl.where(inside, w * grad, 0.)
    mean_product = tl.sum(normed * scaled, axis=0) / N
    mean_scaled = tl.sum(scaled, axis=0) / N
    dx = (scaled - (normed * mean_product + mean_scaled)) * rstd
    tl.store(DX + row * stride + offs, dx, mask=inside)
    group = row % GROUPS
    dw = (grad * normed).to(w.dtype)
    db = grad.to(w.dtype)
    partial = group * N + offs
    while tl.atomic_cas(Locks + group, 0, 1) == 1:
        pass
    if tl.load(Locks + GROUPS + group) == 0:
        tl.atomic_xchg(Locks + GROUPS + group, 1)
    else:
        dw += tl.load(PartialW + partial, mask=inside)
        db += tl.load(PartialB + partial, mask=inside)
    tl.store(PartialW + partial, dw, mask=inside)
    tl.store(PartialB + partial, db, mask=inside)
    tl.debug_barrier()
    tl.atomic_xchg(Locks + group, 0)


@triton.jit
def ln_backward_columns(PartialW, PartialB, DW, DB, ROWS, N, BLOCK_R: tl.constexpr,
                        BLOCK_C: tl.constexpr):
    """dw, db: the partial rows summed, BLOCK_C columns per program."""
    cols = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    sum_w = tl.zeros((BLOCK_R, BLOCK_C), dtype=tl.float32)
    sum_b = tl.zeros((BLOCK_R, BLOCK_C), dtype=tl.float32)
    for start in range(0, ROWS, BLOCK_R):
        rows = start + tl.arange(0, BLOCK_R)
        inside = (rows[:, None] < ROWS) & (cols[None, :] < N)
        at = rows[:, None] * N + cols[None, :]
        sum_w += tl.load(PartialW + at, mask=inside, other=0.)
        sum_b += tl.load(PartialB + at, mask=inside, other=0.)
    tl.store(DW + cols, tl.sum(sum_w, axis=0), mask=cols < N)
    tl.store(DB + cols, tl.sum(sum_b, axis=0), mask=cols < N)


def launch_shapes(n: int) -> dict:
    """The tutorial's launch heuristics for rows of `n` fp16 elements: the block (the next power
    of two), the warps and the number of partial-sum groups."""
    block = triton.next_power_of_2(n)
    return {"block": block, "warps": min(max(block // 256, 1), 8),
            "groups": 64 if n > 8192 else 96 if n > 4096 else 128 if n > 1024 else 256}


def backward(x, w, dy, mean, rstd, zeros, empty, launch_options: dict | None = None):
    """(dx, dw, db) of layer norm for the (M, N) fp16 `x`: both backward kernels launched as
    the tutorial does. `zeros(shape, dtype)` / `empty(shape, dtype)` (numpy dtypes) allocate
    arrays where the kernels can reach them (numpy for the interpreter, torch on the GPU);
    `launch_options` go to every launch (interpret=True, say)."""
    rows, n = x.shape
    shape = launch_shapes(n)
    options = dict(launch_options or {})
    groups = shape["groups"]
    locks = zeros((2 * groups,), np.int32)
    partial_w, partial_b = zeros((groups, n), np.float16), zeros((groups, n), np.float16)
    dx, dw, db = empty((rows, n), np.float16), empty((n,), np.float16), empty((n,), np.float16)
    ln_backward_rows[(rows,)](dx, dy, x, w, mean, rstd, partial_w, partial_b, locks, n, n,
                              GROUPS=groups, BLOCK=shape["block"], num_warps=shape["warps"],
                              **options)
    ln_backward_columns[(triton.cdiv(n, 128),)](partial_w, partial_b, dw, db,
                                                min(groups, rows), n, BLOCK_R=32, BLOCK_C=128,
                                                **options)
    return dx, dw, db


def reference_backward(x, w, dy, eps: float = 1e-5):
    """(dx, dw, db, mean, rstd) in float64 numpy, from float arrays."""
    x, w, dy = (np.asarray(a, np.float64) for a in (x, w, dy))
    mean = x.mean(axis=1, keepdims=True)
    rstd = 1 / np.sqrt(((x - mean) ** 2).mean(axis=1, keepdims=True) + eps)
    normed = (x - mean) * rstd
    scaled = w * dy
    dx = (scaled - normed * (normed * scaled).mean(axis=1, keepdims=True)
          - scaled.mean(axis=1, keepdims=True)) * rstd
    return dx, (dy * normed).sum(axis=0), dy.sum(axis=0), mean[:, 0], rstd[:, 0]
