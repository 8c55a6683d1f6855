"""Casts: float32 <-> float16 / bfloat16, int <-> float, bitcasts, bfloat16 arithmetic. Each kernel
comes with a maker of fresh random inputs of awkward sizes and numpy's expected outputs;
`ENTRIES` lists this family's catalogue entries.
"""
from __future__ import annotations

import numpy as np

import compiler as triton
import compiler.language as tl
from tests.zoo.case import Case, ZooKernel
from tests.zoo.reference import awkward, bf16_bits, normal, to_bf16


@triton.jit
def cast_kernel(x_ptr, i_ptr, h_ptr, f_from_h_ptr, bf_ptr, i2f_ptr, f2i_ptr, u8_ptr, n,
                BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)      # float32
    i = tl.load(i_ptr + offs, mask=mask, other=0)        # int32
    h = x.to(tl.float16)
    tl.store(h_ptr + offs, h, mask=mask)
    tl.store(f_from_h_ptr + offs, h.to(tl.float32) * 3.0, mask=mask)
    tl.store(bf_ptr + offs, x.to(tl.bfloat16).to(tl.float32), mask=mask)
    tl.store(i2f_ptr + offs, i.to(tl.float32), mask=mask)
    tl.store(f2i_ptr + offs, (x * 1000.0).to(tl.int32), mask=mask)
    tl.store(u8_ptr + offs, (i & 255).to(tl.uint8).to(tl.float32), mask=mask)


def _make_cast(rng):
    n = awkward(rng, 100, 1500, 128)
    x = (rng.standard_normal(n) * 50).astype(np.float32)
    i = rng.integers(-2**24, 2**24, n).astype(np.int32)     # exact in float32
    h = x.astype(np.float16)
    expected = {2: h, 3: h.astype(np.float32) * np.float32(3), 4: to_bf16(x),
                5: i.astype(np.float32), 6: np.trunc(x * np.float32(1000)).astype(np.int32),
                7: (i & 255).astype(np.float32)}
    outs = [np.zeros(n, np.float16), *(np.zeros(n, np.float32) for _ in range(3)),
            np.zeros(n, np.int32), np.zeros(n, np.float32)]
    return Case([x, i, *outs, n], (triton.cdiv(n, 128),), expected, {"BLOCK": 128},
                {"num_warps": 2})


@triton.jit
def bf16_kernel(a_ptr, b_ptr, sum_ptr, bits_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0).to(tl.bfloat16, bitcast=True)
    b = tl.load(b_ptr + offs, mask=mask, other=0).to(tl.bfloat16, bitcast=True)
    c = a + b                                           # bfloat16 arithmetic
    tl.store(sum_ptr + offs, c.to(tl.float32), mask=mask)
    tl.store(bits_ptr + offs, (c * 2.0).to(tl.int16, bitcast=True), mask=mask)


def _make_bf16(rng):
    n = awkward(rng, 100, 1500, 128)
    a, b = to_bf16(normal(rng, n)), to_bf16(normal(rng, n))   # exact bf16 values
    total = to_bf16(a + b)                    # |exponent gap| is small: fp32 sum is exact
    return Case([bf16_bits(a), bf16_bits(b), np.zeros(n, np.float32), np.zeros(n, np.int16),
                 n], (triton.cdiv(n, 128),), {2: total, 3: bf16_bits(total * 2)},
                {"BLOCK": 128}, {"num_warps": 2})


#: This family's catalogue entries.
ENTRIES = [
    ZooKernel("casts", cast_kernel, _make_cast),
    ZooKernel("bf16_math", bf16_kernel, _make_bf16),
]
