"""Python kernels through the front end and the interpreter (`interpret=True`), checked against
numpy on sizes that are not multiples of the block size; errors point at the Python source."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import compiler as triton
import compiler.language as tl
from compiler.runtime.interpreter import InterpreterError, KernelAssertionError

RNG = np.random.default_rng(5)


@triton.jit
def histogram_kernel(x_ptr, bins_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.atomic_add(bins_ptr + x, 1, mask=mask)


def test_histogram_with_atomics():
    n = 1000
    x = RNG.integers(0, 7, n).astype(np.int32)
    bins = np.zeros(7, np.int32)
    histogram_kernel[(triton.cdiv(n, 256),)](x, bins, n, BLOCK=256, interpret=True)
    np.testing.assert_array_equal(bins, np.bincount(x, minlength=7))


@triton.jit
def reductions_kernel(x_ptr, amax_ptr, amin_ptr, sum_ptr, csum_ptr, M: tl.constexpr,
                      N: tl.constexpr, AXIS: tl.constexpr):
    rows = tl.arange(0, M)[:, None]
    cols = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rows * N + cols)
    out = tl.arange(0, N if AXIS == 0 else M)
    tl.store(amax_ptr + out, tl.argmax(x, axis=AXIS))
    tl.store(amin_ptr + out, tl.argmin(x, axis=AXIS))
    tl.store(sum_ptr + out, tl.sum(x, axis=AXIS))
    tl.store(csum_ptr + rows * N + cols, tl.cumsum(x, axis=AXIS))


@pytest.mark.parametrize("axis", [0, 1])
def test_argmax_argmin_sum_cumsum(axis):
    m, n = 8, 32
    x = RNG.integers(-3, 3, (m, n)).astype(np.int32)        # many ties
    size = n if axis == 0 else m
    amax, amin, total = (np.zeros(size, np.int32) for _ in range(3))
    csum = np.zeros((m, n), np.int32)
    reductions_kernel[(1,)](x, amax, amin, total, csum, M=m, N=n, AXIS=axis, interpret=True)
    np.testing.assert_array_equal(amax, np.argmax(x, axis=axis))
    np.testing.assert_array_equal(amin, np.argmin(x, axis=axis))
    np.testing.assert_array_equal(total, x.sum(axis=axis))
    np.testing.assert_array_equal(csum, np.cumsum(x, axis=axis))


@triton.jit
def integer_kernel(a_ptr, b_ptr, q_ptr, r_ptr, p_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=1)
    b = tl.load(b_ptr + offs, mask=mask, other=1)
    tl.store(q_ptr + offs, a // b, mask=mask)
    tl.store(r_ptr + offs, a % b, mask=mask)
    tl.store(p_ptr + offs, a * b, mask=mask)


def test_integer_division_is_c_like_and_products_wrap():
    n = 100
    a = RNG.integers(-2 ** 31, 2 ** 31 - 1, n).astype(np.int32)
    b = RNG.integers(-1000, 1000, n).astype(np.int32)
    b[b == 0] = 3
    q, r, p = (np.zeros(n, np.int32) for _ in range(3))
    integer_kernel[(1,)](a, b, q, r, p, n, BLOCK=128, interpret=True)
    quot = [abs(int(x)) // abs(int(y)) * (1 if (x < 0) == (y < 0) else -1) for x, y in zip(a, b)]
    assert q.tolist() == quot
    assert r.tolist() == [int(x) - int(y) * d for x, y, d in zip(a, b, quot)]
    assert p.tolist() == [((int(x) * int(y) + 2 ** 31) % 2 ** 32) - 2 ** 31 for x, y in zip(a, b)]


@triton.jit
def half_kernel(x_ptr, y_ptr, out_ptr, bf_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, (x + y) - y, mask=mask)
    b = x.to(tl.float32).to(tl.bfloat16)
    tl.store(bf_ptr + offs, (b * b).to(tl.float32), mask=mask)


def test_fp16_and_bf16_keep_their_precision():
    n = 300
    x = RNG.standard_normal(n).astype(np.float16)
    y = np.full(n, 2048, np.float16)
    out = np.zeros(n, np.float16)
    bf = np.zeros(n, np.float32)
    half_kernel[(triton.cdiv(n, 128),)](x, y, out, bf, n, BLOCK=128, interpret=True)
    np.testing.assert_array_equal(out, (x + y) - y)          # numpy float16 rounds each op
    assert not np.array_equal(out, x)

    def to_bf16(v):
        bits = np.asarray(v, np.float32).view(np.uint32).astype(np.uint64)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
        return bits.astype(np.uint32).view(np.float32)

    b = to_bf16(x.astype(np.float32))
    np.testing.assert_array_equal(bf, to_bf16(b.astype(np.float64) * b))


@triton.jit
def loops_kernel(out_ptr, start, steps_ptr, n):
    i = 0
    v = start
    while v != 1:
        v = tl.where(v % 2 == 1, 3 * v + 1, v // 2)
        i += 1
    tl.store(out_ptr, i)
    total = 0
    for k in range(0, n):
        total += tl.load(steps_ptr + k)
    tl.store(out_ptr + 1, total)


def test_while_and_for_loops():
    out = np.zeros(2, np.int32)
    steps = RNG.integers(-50, 50, 37).astype(np.int32)
    loops_kernel[(1,)](out, 27, steps, 37, interpret=True)
    assert out.tolist() == [111, int(steps.sum())]


@triton.jit
def print_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.device_print(" x: ", tl.load(x_ptr + offs) + tl.program_id(0))


def test_device_print(capsys):
    print_kernel[(2,)](np.arange(4, dtype=np.int32), BLOCK=4, interpret=True)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "pid (0, 0, 0) idx (0) x: 0"
    assert lines[7] == "pid (1, 0, 0) idx (3) x: 4"


@triton.jit
def out_of_bounds_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, v + 1)
    tl.device_assert(v < 100, "values stay below 100")


def _line_of(fn, text: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def test_out_of_bounds_store_points_at_the_python_line():
    x = np.zeros(10, np.float32)
    with pytest.raises(InterpreterError) as info:
        out_of_bounds_kernel[(1,)](x, 10, BLOCK=16, interpret=True)
    line = _line_of(out_of_bounds_kernel.fn if hasattr(out_of_bounds_kernel, "fn")
                    else out_of_bounds_kernel, "tl.store(x_ptr")
    message = str(info.value)
    assert message.startswith(f"{__file__}:{line}:")
    assert "tt.store" in message and "element 10 of 'x_ptr'" in message
    assert "    tl.store(x_ptr + offs, v + 1)\n" in message and message.rstrip().endswith("^")
    assert (x == 0).all()


def test_device_assert_fails_with_its_message():
    x = np.full(16, 200, np.float32)
    with pytest.raises(KernelAssertionError, match="values stay below 100"):
        out_of_bounds_kernel[(1,)](x, 16, BLOCK=16, interpret=True)
