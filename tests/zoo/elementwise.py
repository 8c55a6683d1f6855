"""Elementwise float kernels: arithmetic, select, math functions, rounding, float64. Each kernel
comes with a maker of fresh random inputs of awkward sizes and numpy's expected outputs;
`ENTRIES` lists this family's catalogue entries.
"""
from __future__ import annotations

import math

import numpy as np

import compiler as triton
import compiler.language as tl
from tests.zoo.case import Case, Tolerance, ZooKernel, APPROX, FMA, LIBM
from tests.zoo.reference import awkward, normal


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def _make_add(rng):
    n = awkward(rng, 300, 2000, 128)
    x, y = normal(rng, n), normal(rng, n)
    return Case([x, y, np.zeros(n, np.float32), n], (triton.cdiv(n, 128),), {2: x + y},
                {"BLOCK": 128}, {"num_warps": 2})


def _make_add_f16(rng):
    n = awkward(rng, 300, 3000, 256)
    x, y = normal(rng, n, np.float16), normal(rng, n, np.float16)
    return Case([x, y, np.zeros(n, np.float16), n], (triton.cdiv(n, 256),), {2: x + y},
                {"BLOCK": 256}, {"num_warps": 1})


@triton.jit
def fma_kernel(x_ptr, y_ptr, z_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    z = tl.load(z_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.fma(x, y, z), mask=mask)


def _make_fma(rng):
    n = awkward(rng, 200, 1500, 64)
    x, y, z = normal(rng, n), normal(rng, n), normal(rng, n)
    expected = (x.astype(np.float64) * y + z).astype(np.float32)
    return Case([x, y, z, np.zeros(n, np.float32), n], (triton.cdiv(n, 64),), {3: expected},
                {"BLOCK": 64}, {"num_warps": 1})


@triton.jit
def where_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    out = tl.where(x > y, x, y * 2.0)
    out = tl.maximum(out, -1.0)
    tl.store(out_ptr + offs, out, mask=mask)


def _make_where(rng):
    n = awkward(rng, 200, 1500, 128)
    x, y = normal(rng, n), normal(rng, n)
    expected = np.maximum(np.where(x > y, x, y * np.float32(2)), np.float32(-1))
    return Case([x, y, np.zeros(n, np.float32), n], (triton.cdiv(n, 128),), {2: expected},
                {"BLOCK": 128}, {"num_warps": 4})


@triton.jit
def unary_math_kernel(x_ptr, exp_ptr, log_ptr, sqrt_ptr, rsqrt_ptr, sin_ptr, cos_ptr,
                      sigmoid_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0)
    tl.store(exp_ptr + offs, tl.exp(x), mask=mask)
    tl.store(log_ptr + offs, tl.log(x), mask=mask)
    tl.store(sqrt_ptr + offs, tl.sqrt(x), mask=mask)
    tl.store(rsqrt_ptr + offs, tl.rsqrt(x), mask=mask)
    tl.store(sin_ptr + offs, tl.sin(x), mask=mask)
    tl.store(cos_ptr + offs, tl.cos(x), mask=mask)
    tl.store(sigmoid_ptr + offs, tl.sigmoid(x - 1.5), mask=mask)


def _make_unary(rng):
    n = awkward(rng, 200, 1500, 128)
    x = rng.uniform(0.05, 3.0, n).astype(np.float32)      # positive (log, sqrt), |x| < pi
    x64 = x.astype(np.float64)
    refs = [np.exp(x64), np.log(x64), np.sqrt(x64), 1 / np.sqrt(x64), np.sin(x64), np.cos(x64),
            1 / (1 + np.exp(-(x64 - 1.5)))]
    outs = [np.zeros(n, np.float32) for _ in refs]
    return Case([x, *outs, n], (triton.cdiv(n, 128),),
                {i + 1: r.astype(np.float32) for i, r in enumerate(refs)},
                {"BLOCK": 128}, {"num_warps": 2})


@triton.jit
def f64_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0)
    y = tl.load(y_ptr + offs, mask=mask, other=1.0)
    z = tl.sqrt(x * x + y * y) / (tl.abs(y) + 1.0) - tl.minimum(x, y)
    tl.store(out_ptr + offs, z, mask=mask)


def _make_f64(rng):
    n = awkward(rng, 100, 1000, 64)
    x, y = normal(rng, n, np.float64), normal(rng, n, np.float64)
    z = np.sqrt(x * x + y * y) / (np.abs(y) + 1.0) - np.minimum(x, y)
    return Case([x, y, np.zeros(n, np.float64), n], (triton.cdiv(n, 64),), {2: z},
                {"BLOCK": 64}, {"num_warps": 2})


@triton.jit
def rounding_kernel(x_ptr, i_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0)
    i = tl.load(i_ptr + offs, mask=mask, other=1)
    row = out_ptr + offs * 6
    tl.store(row + 0, tl.floor(x), mask=mask)
    tl.store(row + 1, tl.ceil(x), mask=mask)
    tl.store(row + 2, tl.clamp(x, -0.5, 0.75), mask=mask)
    tl.store(row + 3, tl.div_rn(x, 3.0), mask=mask)
    tl.store(row + 4, i + x, mask=mask)                     # int32 + float32 -> float32
    tl.store(row + 5, tl.abs(i).to(tl.float32) + tl.where(i > 0, 0.5, -0.5), mask=mask)


def _make_rounding(rng):
    n = awkward(rng, 100, 900, 64)
    x = normal(rng, n) * np.float32(4)
    i = rng.integers(-1000, 1000, n).astype(np.int32)
    columns = [np.floor(x), np.ceil(x), np.clip(x, np.float32(-0.5), np.float32(0.75)),
               (x.astype(np.float64) / 3).astype(np.float32), i + x,
               np.abs(i) + np.where(i > 0, np.float32(0.5), np.float32(-0.5))]
    out = np.stack(columns, axis=1).astype(np.float32)
    return Case([x, i, np.zeros((n, 6), np.float32), n], (triton.cdiv(n, 64),), {2: out},
                {"BLOCK": 64}, {"num_warps": 2})


@triton.jit
def hinted_math_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    offs = tl.max_contiguous(tl.multiple_of(offs, BLOCK), BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.static_assert(BLOCK % 32 == 0)
    tl.device_assert(offs >= 0, "negative offset")
    y = tl.erf(x) + tl.exp2(x) + tl.log2(tl.abs(x) + 1.0)
    tl.store(out_ptr + offs, y, mask=mask)


def _make_hinted_math(rng):
    n = awkward(rng, 200, 1500, 128)
    x = normal(rng, n)
    x64 = x.astype(np.float64)
    erf = np.array([math.erf(v) for v in x64])
    expected = (erf + np.exp2(x64) + np.log2(np.abs(x64) + 1)).astype(np.float32)
    return Case([x, np.zeros(n, np.float32), n], (triton.cdiv(n, 128),), {1: expected},
                {"BLOCK": 128}, {"num_warps": 4})


#: This family's catalogue entries.
ENTRIES = [
    ZooKernel("add_f32", add_kernel, _make_add),
    ZooKernel("add_f16", add_kernel, _make_add_f16),
    ZooKernel("fma_f32", fma_kernel, _make_fma, FMA, FMA),
    ZooKernel("where_max_f32", where_kernel, _make_where),
    ZooKernel("unary_math", unary_math_kernel, _make_unary,
              Tolerance(1e-6, 1e-7, "numpy float32 math vs float64 reference"), APPROX),
    ZooKernel("f64_math", f64_kernel, _make_f64,
              Tolerance(1e-15, 1e-15, "float64 division and sqrt are exact IEEE ops"),
              Tolerance(1e-15, 1e-15, "float64 division and sqrt are exact IEEE ops")),
    ZooKernel("rounding_promotion", rounding_kernel, _make_rounding),
    ZooKernel("hinted_math", hinted_math_kernel, _make_hinted_math, LIBM, APPROX),
]
