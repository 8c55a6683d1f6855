"""Reductions and scans driven by a combine function, vectorized over whole arrays.

`combine(lhs, rhs)` takes two lists of arrays (one per reduced operand) and returns one list; it
is the tt.reduce / tt.scan combine region run once on whole arrays. Both algorithms call it
O(log n) times and always pass the operand covering earlier positions as `lhs`, so any
associative combine (commutative or not) gives the sequential result, and argmax/argmin combine
regions that break ties toward the left pick the lowest index.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

Combine = Callable[[list, list], list]


def _shaped(value, shape: tuple) -> np.ndarray:
    """`value` as an array of `shape` (a combine may return a scalar, e.g. a constant)."""
    if isinstance(value, np.ndarray) and value.shape == shape:
        return value
    return np.broadcast_to(value, shape)


def tree_reduce(operands: list[np.ndarray], axis: int, combine: Combine) -> list:
    """Reduce each operand along `axis` by pairwise combining adjacent ranges (a tree)."""
    parts = [np.moveaxis(np.asarray(x), axis, 0) for x in operands]
    while parts[0].shape[0] > 1:
        n = parts[0].shape[0]
        even = n - n % 2
        merged = combine([p[0:even:2] for p in parts], [p[1:even:2] for p in parts])
        merged = [_shaped(m, (even // 2,) + p.shape[1:]) for m, p in zip(merged, parts)]
        if n % 2:
            merged = [np.concatenate([m, p[n - 1:]]) for m, p in zip(merged, parts)]
        parts = merged
    return [p[0] for p in parts]


def inclusive_scan(operands: list[np.ndarray], axis: int, reverse: bool,
                   combine: Combine) -> list:
    """Inclusive scan along `axis` (Hillis-Steele doubling); `reverse` scans from the end."""
    parts = [np.moveaxis(np.asarray(x), axis, 0) for x in operands]
    if reverse:
        parts = [p[::-1] for p in parts]
    n = parts[0].shape[0]
    step = 1
    while step < n:
        merged = combine([p[:n - step] for p in parts], [p[step:] for p in parts])
        parts = [np.concatenate([p[:step], _shaped(m, p[step:].shape)])
                 for m, p in zip(merged, parts)]
        step *= 2
    if reverse:
        parts = [p[::-1] for p in parts]
    return [np.moveaxis(p, 0, axis) for p in parts]


def elementwise(combine_scalars: Callable[[list, list], list]) -> Combine:
    """A whole-array combine from one that only takes scalars (the per-element fallback)."""
    def combine(lhs: list, rhs: list) -> list:
        shape = np.broadcast(*lhs, *rhs).shape
        lhs = [np.broadcast_to(x, shape) for x in lhs]
        rhs = [np.broadcast_to(x, shape) for x in rhs]
        out = None
        for index in np.ndindex(*shape):
            values = combine_scalars([x[index] for x in lhs], [x[index] for x in rhs])
            if out is None:
                out = [np.empty(shape, dtype=np.asarray(v).dtype) for v in values]
            for o, v in zip(out, values):
                o[index] = v
        return out if out is not None else [np.empty(shape, x.dtype) for x in lhs]
    return combine
