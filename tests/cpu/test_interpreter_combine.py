"""The reduction and scan algorithms keep operand order: checked with an associative but
non-commutative combine (composing affine maps x -> a*x + b) on odd and even sizes."""
from __future__ import annotations

import numpy as np
import pytest

from compiler.runtime.interp.combine import elementwise, inclusive_scan, tree_reduce

RNG = np.random.default_rng(11)


def compose(lhs, rhs):
    """Apply lhs's map, then rhs's: (a1, b1) then (a2, b2) is (a1*a2, a2*b1 + b2)."""
    (a1, b1), (a2, b2) = lhs, rhs
    return [a1 * a2, a2 * b1 + b2]


def fold(pairs):
    acc = list(pairs[0])
    for p in pairs[1:]:
        acc = compose(acc, p)
    return acc


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 13])
@pytest.mark.parametrize("axis", [0, 1])
def test_tree_reduce_matches_a_sequential_fold(n, axis):
    shape = (n, 3) if axis == 0 else (3, n)
    a = RNG.integers(-3, 4, shape).astype(np.int64)
    b = RNG.integers(-3, 4, shape).astype(np.int64)
    got_a, got_b = tree_reduce([a, b], axis, compose)
    for j in range(3):
        take = (lambda x: x[:, j]) if axis == 0 else (lambda x: x[j, :])
        expected = fold(list(zip(take(a), take(b))))
        assert [got_a[j], got_b[j]] == expected


@pytest.mark.parametrize("n", [1, 2, 3, 6, 7, 16])
@pytest.mark.parametrize("reverse", [False, True])
def test_inclusive_scan_matches_a_sequential_fold(n, reverse):
    a = RNG.integers(-3, 4, (2, n)).astype(np.int64)
    b = RNG.integers(-3, 4, (2, n)).astype(np.int64)
    got_a, got_b = inclusive_scan([a, b], 1, reverse, compose)
    for row in range(2):
        pairs = list(zip(a[row], b[row]))
        for i in range(n):
            part = pairs[i:][::-1] if reverse else pairs[:i + 1]
            assert [got_a[row, i], got_b[row, i]] == fold(part)


def test_elementwise_fallback_combines_each_element():
    def scalar_max(lhs, rhs):
        assert np.ndim(lhs[0]) == 0
        return [max(lhs[0], rhs[0])]

    x = RNG.integers(-100, 100, (5, 4)).astype(np.int32)
    (got,) = tree_reduce([x], 0, elementwise(scalar_max))
    np.testing.assert_array_equal(got, x.max(axis=0))
