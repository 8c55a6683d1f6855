"""Integer kernels: division, remainder, bitwise ops and shifts, signed and unsigned, 8 to 64 bits.
Each kernel comes with a maker of fresh random inputs of awkward sizes and numpy's expected
outputs; `ENTRIES` lists this family's catalogue entries.
"""
from __future__ import annotations

import numpy as np

import compiler as triton
import compiler.language as tl
from tests.zoo.case import Case, ZooKernel
from tests.zoo.reference import awkward, nonzero_ints, trunc_div, trunc_rem


@triton.jit
def int_ops_kernel(a_ptr, b_ptr, s_ptr, div_ptr, rem_ptr, and_ptr, or_ptr, xor_ptr, shl_ptr,
                   shr_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=1)
    b = tl.load(b_ptr + offs, mask=mask, other=1)
    s = tl.load(s_ptr + offs, mask=mask, other=0)
    tl.store(div_ptr + offs, a // b, mask=mask)
    tl.store(rem_ptr + offs, a % b, mask=mask)
    tl.store(and_ptr + offs, a & b, mask=mask)
    tl.store(or_ptr + offs, a | b, mask=mask)
    tl.store(xor_ptr + offs, a ^ b, mask=mask)
    tl.store(shl_ptr + offs, a << s, mask=mask)
    tl.store(shr_ptr + offs, a >> s, mask=mask)


def _int_ops_case(rng, dtype, bits, signed, block):
    """Inputs and numpy results of int_ops_kernel for one integer dtype."""
    n = awkward(rng, 100, 1200, block)
    info = np.iinfo(dtype)
    a = rng.integers(info.min + 1, info.max, n, endpoint=True, dtype=dtype)  # no MIN / -1
    if signed:
        b = nonzero_ints(rng, n, -1000, 1000, dtype)
    else:
        b = nonzero_ints(rng, n, 1, 1000, dtype)
    s = rng.integers(0, bits, n).astype(dtype)
    with np.errstate(over="ignore"):
        if signed:
            div, rem = trunc_div(a, b), trunc_rem(a, b)
        else:
            div, rem = a // b, a % b
        shl = (a.astype(np.uint64) << s.astype(np.uint64)).astype(dtype) if not signed else \
            (a.astype(np.int64) << s.astype(np.int64)).astype(dtype)
    shr = a >> s                                     # arithmetic for signed, logical for unsigned
    outs = [np.zeros(n, dtype) for _ in range(7)]
    expected = dict(zip(range(3, 10), [div, rem, a & b, a | b, a ^ b, shl, shr]))
    return Case([a, b, s, *outs, n], (triton.cdiv(n, block),), expected, {"BLOCK": block},
                {"num_warps": 2})


def _make_int32(rng):
    return _int_ops_case(rng, np.int32, 32, True, 128)


def _make_uint32(rng):
    return _int_ops_case(rng, np.uint32, 32, False, 128)


def _make_int64(rng):
    return _int_ops_case(rng, np.int64, 64, True, 64)


@triton.jit
def small_int_kernel(a_ptr, b_ptr, c_ptr, d_ptr, sum8_ptr, mul8_ptr, mix16_ptr, wide_ptr, n,
                     BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0)        # int8
    b = tl.load(b_ptr + offs, mask=mask, other=0)        # int8
    c = tl.load(c_ptr + offs, mask=mask, other=0)        # int16
    d = tl.load(d_ptr + offs, mask=mask, other=1)        # int16, nonzero
    tl.store(sum8_ptr + offs, a + b, mask=mask)          # wraps in int8
    tl.store(mul8_ptr + offs, (a * b) ^ (a >> 2), mask=mask)
    tl.store(mix16_ptr + offs, (c // d) + (c % d) - (c & 0x0F0F), mask=mask)
    wide = a.to(tl.int64) * c.to(tl.int64) * 4099
    tl.store(wide_ptr + offs, wide, mask=mask)


def _make_small_int(rng):
    n = awkward(rng, 100, 1500, 128)
    a = rng.integers(-128, 128, n).astype(np.int8)
    b = rng.integers(-128, 128, n).astype(np.int8)
    c = rng.integers(-32767, 32768, n).astype(np.int16)      # no MIN / -1
    d = nonzero_ints(rng, n, -300, 300, np.int16)
    with np.errstate(over="ignore"):
        sum8 = (a + b).astype(np.int8)
        mul8 = ((a * b).astype(np.int8) ^ (a >> 2)).astype(np.int8)
        mix16 = (trunc_div(c, d) + trunc_rem(c, d) - (c & np.int16(0x0F0F))).astype(np.int16)
    wide = a.astype(np.int64) * c.astype(np.int64) * 4099
    outs = [np.zeros(n, np.int8), np.zeros(n, np.int8), np.zeros(n, np.int16),
            np.zeros(n, np.int64)]
    return Case([a, b, c, d, *outs, n], (triton.cdiv(n, 128),),
                {4: sum8, 5: mul8, 6: mix16, 7: wide}, {"BLOCK": 128}, {"num_warps": 1})


#: This family's catalogue entries.
ENTRIES = [
    ZooKernel("int32_ops", int_ops_kernel, _make_int32),
    ZooKernel("uint32_ops", int_ops_kernel, _make_uint32),
    ZooKernel("int64_ops", int_ops_kernel, _make_int64),
    ZooKernel("int8_int16_ops", small_int_kernel, _make_small_int),
]
