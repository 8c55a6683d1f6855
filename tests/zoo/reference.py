"""Numpy helpers the zoo's input makers and references share: awkward sizes, random
normals, bfloat16 rounding, C-style signed division."""
from __future__ import annotations

import numpy as np


def awkward(rng: np.random.Generator, low: int, high: int, block: int) -> int:
    """A size in [low, high) that is not a multiple of `block`."""
    while True:
        n = int(rng.integers(low, high))
        if n % block:
            return n


def normal(rng, shape, dtype=np.float32) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


def to_bf16(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 (round to nearest even) -> float32, in numpy's bit arithmetic."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounding = ((bits >> 16) & 1) + 0x7FFF
    rounded = ((bits + rounding) >> 16) << 16
    return rounded.astype(np.uint32).view(np.float32)


def trunc_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C's signed integer division (rounds toward zero), as arith.divsi computes it (no abs(),
    which overflows on the most negative value)."""
    q = a // b                                           # floors
    inexact = (a % b) != 0
    return np.where(inexact & ((a < 0) != (b < 0)), q + 1, q).astype(a.dtype)


def trunc_rem(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C's signed remainder (sign of the dividend), as arith.remsi computes it."""
    return (a - b * trunc_div(a, b)).astype(a.dtype)


def nonzero_ints(rng, n, low, high, dtype) -> np.ndarray:
    v = rng.integers(low, high, n).astype(dtype)
    v[v == 0] = 1
    return v


def bf16_bits(x: np.ndarray) -> np.ndarray:
    """The int16 bit patterns of float32 values already representable in bfloat16."""
    return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16).view(np.int16)
