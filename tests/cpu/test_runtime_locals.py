"""Triton's semantics of locals and returns: a Python number assigned to a name is a runtime
scalar (`a = False; if a:` is a runtime `if`), `x: tl.constexpr = ...` keeps a compile-time
value, `tl.full([], v, dtype)` is a scalar, and a device function that returns a value on one
path of a runtime `if` returns `ub.poison` (LLVM's poison) on the path that falls off its end,
while a compile-time `if` that skips its `return` leaves the function returning nothing."""
from __future__ import annotations

import numpy as np
import pytest

import compiler as triton
import compiler.language as tl
from compiler.frontend import generate_ttir
from compiler.frontend.errors import CompilationError


@triton.jit
def _maybe(x):
    a = False
    if a:
        return x


@triton.jit
def _stores_maybe(Out):
    tl.store(Out, _maybe(0))


@triton.jit
def _first_program_only(x, pid):
    if pid == 0:
        return x + 1


@triton.jit
def _stores_first(X):
    pid = tl.program_id(0)
    value = _first_program_only(tl.load(X + pid), pid)
    if pid == 0:
        tl.store(X + pid, value)


@triton.jit
def _skipped(x):
    a: tl.constexpr = False
    if a:
        return x


@triton.jit
def _stores_skipped(Out):
    tl.store(Out, _skipped(0))


@triton.jit
def _locals(X, n):
    flag = True
    count = 3
    count += n
    fixed: tl.constexpr = 4
    tl.store(X + tl.arange(0, fixed), count + flag + tl.full([], 1, tl.int32))


def _text(kernel, signature):
    return str(generate_ttir(kernel, signature, {}))


def test_numbers_assigned_to_names_are_runtime_scalars():
    text = _text(_locals, {"X": "*i32", "n": "i32"})
    assert "%true = arith.constant true : i1" in text and "arith.extui %true" in text
    assert "%count = arith.addi %c3_i32, %n : i32" in text    # 3 + n at run time
    assert "tt.make_range {end = 4 : i32" in text     # the constexpr local stays a shape
    assert "tensor<i32>" not in text                  # tl.full([], ...) is a scalar


def test_a_runtime_if_on_a_local_false_returns_poison_when_it_falls_through():
    text = _text(_stores_maybe, {"Out": "*i32"})
    assert "scf.if %false -> (i32)" in text and "ub.poison : i32" in text
    compiled = _stores_maybe.warmup("*i32", grid=(1,))
    assert "ub.poison" in compiled.asm["ttir"]
    assert "i32 poison" in compiled.asm["llir"]


def test_the_returning_path_still_returns_its_value():
    x = np.array([10, 20, 30], np.int32)
    _stores_first[(3,)](x, interpret=True)
    np.testing.assert_array_equal(x, [11, 20, 30])


def test_a_compile_time_if_skipping_the_return_returns_nothing():
    with pytest.raises(CompilationError, match="None cannot be used as a value"):
        _text(_stores_skipped, {"Out": "*i32"})


def test_poison_runs_in_the_interpreter():
    out = np.full(1, 7, np.int32)
    _stores_maybe[(1,)](out, interpret=True)           # any value is a valid poison
    assert out.shape == (1,)
