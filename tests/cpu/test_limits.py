"""Limits (issue 14, item 5): blocks above Triton's 2**20 elements are refused at the source
line, grid entries must be non-negative integers (located at the launch, naming the entry), and
None for a pointer argument is a clear, located error (never an internal one)."""
from __future__ import annotations

import time

import numpy as np
import pytest

import compiler as triton
import compiler.language as tl
from compiler.frontend.errors import CompilationError
from compiler.runtime.grid import GridError, grid_dims
from compiler.runtime.launcher import ArgumentError, check_grid


@triton.jit
def arange_kernel(x_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(x_ptr + offs, offs)


@triton.jit
def zeros_kernel(x_ptr, N: tl.constexpr):
    block = tl.zeros((N, N), tl.float32)
    tl.store(x_ptr + tl.arange(0, N), tl.sum(block, axis=0))


def test_arange_above_two_to_the_twenty_is_refused_at_once():
    start = time.perf_counter()
    with pytest.raises(CompilationError, match=r"numel \(2097152\) exceeds triton maximum "
                                               r"tensor numel \(1048576\)") as info:
        arange_kernel[(1,)](np.zeros(4, np.int32), N=2 ** 21, interpret=True)
    assert time.perf_counter() - start < 5
    assert info.value.source_line.strip() == "offs = tl.arange(0, N)"
    assert info.value.format().splitlines()[2].strip() == "^"


def test_a_two_dimensional_block_above_the_limit_is_refused_where_it_is_made():
    with pytest.raises(CompilationError, match=r"numel \(4194304\) exceeds") as info:
        zeros_kernel[(1,)](np.zeros(4, np.float32), N=2048, interpret=True)
    assert "tl.zeros((N, N), tl.float32)" in info.value.source_line


@pytest.mark.parametrize("grid,entry,words", [
    ((1.5,), 0, "is 1.5, a float; grid entries must be integers"),
    ((2, 0.5), 1, "is 0.5, a float"),
    ((-1,), 0, "is -1; grid entries must be >= 0"),
    (("2",), 0, "is '2', a str"),
    ((1, 1, 2 ** 31), 2, "is 2147483648, above the limit"),
])
def test_bad_grid_entries_are_located_at_the_launch(grid, entry, words):
    x = np.zeros(8, np.int32)
    with pytest.raises(GridError) as info:
        arange_kernel[grid](x, N=8, interpret=True)     # <- the launch line
    message = str(info.value)
    assert info.value.entry == entry and f"grid entry {entry} {words}" in message
    first, source, caret = message.splitlines()
    assert first.startswith(f"{__file__}:") and ": error: grid entry" in first
    assert "arange_kernel[grid](x, N=8, interpret=True)" in source and caret.strip() == "^"
    assert not x.any()                                  # nothing ran


def test_an_empty_grid_runs_nothing_as_in_triton():
    x = np.full(8, 7, np.int32)
    arange_kernel[(0,)](x, N=8, interpret=True)
    assert (x == 7).all()
    assert grid_dims((np.int64(3), 2)) == (3, 2, 1)
    with pytest.raises(ArgumentError, match="grid entry 0 is 1.5"):
        check_grid((1.5,))


def test_none_for_a_pointer_is_a_clear_located_error():
    with pytest.raises(CompilationError, match="None cannot be used as a value: an argument "
                                               "passed as None is a constexpr None") as info:
        arange_kernel[(1,)](None, N=8, interpret=True)
    assert "internal compiler error" not in str(info.value)
    assert info.value.source_line.strip() == "tl.store(x_ptr + offs, offs)"


@triton.jit
def optional_bias_kernel(x_ptr, b_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    value = offs
    if b_ptr is not None:
        value = value + tl.load(b_ptr + offs)
    tl.store(x_ptr + offs, value)


def test_a_none_pointer_guarded_by_is_not_none_compiles_as_in_triton():
    x = np.zeros(8, np.int32)
    optional_bias_kernel[(1,)](x, None, N=8, interpret=True)
    assert list(x) == list(range(8))
    optional_bias_kernel[(1,)](x, np.ones(8, np.int32), N=8, interpret=True)
    assert list(x) == list(range(1, 9))
