"""`tl.random`: Triton's counter-based random numbers (Philox 4x32-10 and 4x64-10), bit for bit.

Written in the DSL as Triton writes its own `random` module, so a kernel calling `tl.rand`
compiles these functions like its own @jit helpers. A stream is named by a `seed` (an integer
scalar) and each element by its `offset`: the same (seed, offset) pair gives the same number in
every launch, on the GPU and in the interpreter. `randint4x` (and so `rand*`, `randn*`) runs
Philox with 32-bit words on the counter (offset's low 32 bits, its high 32 bits, 0, 0), the
seed's two halves being the key, whatever the offset's width, as Triton does; `philox` itself
also takes 64-bit counters (64-bit words, the seed the first key word). Entry points: `randint`, `randint4x`, `rand`, `rand4x`, `randn`, `randn4x`,
`philox`, `philox_impl`, `uint_to_uniform_float`, `pair_uniform_to_normal`.
"""
from __future__ import annotations

from . import core as tl
from . import math, standard
from .core import library_function
from .iterators import static_range

N_ROUNDS_DEFAULT = 10

# Philox multipliers and Weyl-sequence key increments (Salmon et al., SC'11), per word width.
PHILOX_MUL_A_32: tl.constexpr = 0xD2511F53
PHILOX_MUL_B_32: tl.constexpr = 0xCD9E8D57
PHILOX_STEP_A_32: tl.constexpr = 0x9E3779B9
PHILOX_STEP_B_32: tl.constexpr = 0xBB67AE85
PHILOX_MUL_A_64: tl.constexpr = 0xD2E7470EE14C6C93
PHILOX_MUL_B_64: tl.constexpr = 0xCA5A826395121157
PHILOX_STEP_A_64: tl.constexpr = 0x9E3779B97F4A7C15
PHILOX_STEP_B_64: tl.constexpr = 0xBB67AE8584CAA73B


@library_function
def philox_impl(c0, c1, c2, c3, k0, k1, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """`n_rounds` Philox rounds on the counter (c0, c1, c2, c3) with key (k0, k1); all of
    one unsigned dtype, uint32 or uint64."""
    if c0.dtype == tl.uint32:
        mul_a: tl.constexpr = PHILOX_MUL_A_32
        mul_b: tl.constexpr = PHILOX_MUL_B_32
        step_a: tl.constexpr = PHILOX_STEP_A_32
        step_b: tl.constexpr = PHILOX_STEP_B_32
    else:
        standard.static_assert(c0.dtype == tl.uint64, "philox needs uint32 or uint64 words")
        mul_a: tl.constexpr = PHILOX_MUL_A_64
        mul_b: tl.constexpr = PHILOX_MUL_B_64
        step_a: tl.constexpr = PHILOX_STEP_A_64
        step_b: tl.constexpr = PHILOX_STEP_B_64
    for _ in static_range(n_rounds):
        old0 = c0
        old2 = c2
        c0 = math.umulhi(mul_b, old2) ^ c1 ^ k0
        c2 = math.umulhi(mul_a, old0) ^ c3 ^ k1
        c1 = mul_b * old2
        c3 = mul_a * old0
        k0 = k0 + step_a
        k1 = k1 + step_b
    return c0, c1, c2, c3


@library_function
def philox(seed, c0, c1, c2, c3, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """Philox of the counter (c0..c3), words as wide as c0 (32 or 64 bits), keyed by `seed`."""
    seed = standard.to_tensor(seed)
    c0 = standard.to_tensor(c0)
    standard.static_assert(seed.dtype.is_int(), "the seed of tl.rand* must be an integer")
    seed = seed.to(tl.uint64)
    if c0.dtype.primitive_bitwidth == 32:
        word: tl.constexpr = tl.uint32
        key_lo = (seed & 0xFFFFFFFF).to(tl.uint32)
        key_hi = ((seed >> 32) & 0xFFFFFFFF).to(tl.uint32)
    else:
        standard.static_assert(c0.dtype.primitive_bitwidth == 64,
                               "philox counters must be 32- or 64-bit integers")
        word: tl.constexpr = tl.uint64
        key_lo = seed
        key_hi = seed * 0
    return philox_impl(c0.to(word, bitcast=True), standard.to_tensor(c1).to(word, bitcast=True),
                       standard.to_tensor(c2).to(word, bitcast=True),
                       standard.to_tensor(c3).to(word, bitcast=True), key_lo, key_hi, n_rounds)


@library_function
def randint4x(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """Four blocks of random uint32 for each offset: Philox 4x32 of the counter (the offset's
    low 32 bits, its high 32 bits, 0, 0), so a 64-bit offset gives 32-bit numbers too (as in
    Triton 3.6; call `philox` with 64-bit counters for 64-bit words)."""
    low = offset.to(tl.uint32)
    zero = low * 0
    if offset.dtype.primitive_bitwidth > 32:
        high = (offset.to(tl.uint64) >> 32).to(tl.uint32)
    else:
        high = zero
    return philox(seed, low, high, zero, zero, n_rounds)


@library_function
def randint(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """A block of random integers (the first of `randint4x`'s four)."""
    first, _, _, _ = randint4x(seed, offset, n_rounds)
    return first


@library_function
def uint_to_uniform_float(x):
    """Random 32- or 64-bit integers to fp32 uniform in [0, 1): the bits read as signed, folded
    onto [0, MAX] (x < 0 -> -x - 1) and scaled by the largest factor keeping MAX below 1."""
    if x.dtype == tl.uint32 or x.dtype == tl.int32:
        x = x.to(tl.int32, bitcast=True)
        scale: tl.constexpr = 4.6566127342e-10
    else:
        standard.static_assert(x.dtype == tl.uint64 or x.dtype == tl.int64,
                               "uint_to_uniform_float needs 32- or 64-bit integers")
        x = x.to(tl.int64, bitcast=True)
        scale: tl.constexpr = 1.0842020432385337e-19
    x = standard.where(x < 0, -x - 1, x)
    return x * scale


@library_function
def rand(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """A block of fp32 uniform in [0, 1) for each offset."""
    return uint_to_uniform_float(randint(seed, offset, n_rounds))


@library_function
def rand4x(seed, offsets, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """Four blocks of fp32 uniform in [0, 1)."""
    i1, i2, i3, i4 = randint4x(seed, offsets, n_rounds)
    return (uint_to_uniform_float(i1), uint_to_uniform_float(i2), uint_to_uniform_float(i3),
            uint_to_uniform_float(i4))


@library_function
def pair_uniform_to_normal(u1, u2):
    """Box-Muller: two uniform blocks to two standard normal ones (u1 kept >= 1e-7)."""
    u1 = standard.maximum(1.0e-7, u1)
    theta = 6.283185307179586 * u2
    radius = standard.sqrt(-2.0 * standard.log(u1))
    return radius * standard.cos(theta), radius * standard.sin(theta)


@library_function
def randn(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """A block of fp32 standard normal numbers for each offset."""
    i1, i2, _, _ = randint4x(seed, offset, n_rounds)
    n1, _ = pair_uniform_to_normal(uint_to_uniform_float(i1), uint_to_uniform_float(i2))
    return n1


@library_function
def randn4x(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """Four blocks of fp32 standard normal numbers."""
    u1, u2, u3, u4 = rand4x(seed, offset, n_rounds)
    n1, n2 = pair_uniform_to_normal(u1, u2)
    n3, n4 = pair_uniform_to_normal(u3, u4)
    return n1, n2, n3, n4
