"""Bad kernels: each must raise CompilationError at the right file:line:col with the source
line, a caret under the column and a sentence saying what is wrong.

Each kernel marks its offending line with `# ERR`; the test names the text the caret must sit
under on that line and a fragment of the expected message."""
from __future__ import annotations

import inspect
import traceback

import numpy as np
import pytest

import compiler.language as tl
from compiler.frontend import CompilationError, generate_ttir


class _Jit:
    def __init__(self, fn):
        self.fn = fn


def jit(fn):
    return _Jit(fn)


def plain_helper(x):
    return x + 1


GLOBAL_ARRAY = np.zeros(4)


# ---- bad kernels ------------------------------------------------------------------------------
@jit
def k_lambda(X, n):
    f = lambda v: v + 1  # ERR  # noqa: E731
    tl.store(X, f(n))


@jit
def k_listcomp(X, n):
    xs = [i for i in range(3)]  # ERR
    tl.store(X, n)


@jit
def k_try(X, n):
    try:  # ERR
        tl.store(X, n)
    except Exception:
        pass


@jit
def k_with(X, n):
    with open("f"):  # ERR
        tl.store(X, n)


@jit
def k_class(X, n):
    class A:  # ERR
        pass
    tl.store(X, n)


@jit
def k_global(X, n):
    global GLOBAL_ARRAY  # ERR
    tl.store(X, n)


@jit
def k_yield(X, n):
    yield n  # ERR


@jit
def k_starargs(X, n):
    args = (X, n)
    tl.store(*args)  # ERR


@jit
def k_arange_runtime(X, n):
    offs = tl.arange(0, n)  # ERR
    tl.store(X + offs, offs)


@jit
def k_arange_pow2(X, n):
    offs = tl.arange(0, 100)  # ERR
    tl.store(X + offs, offs)


@jit
def k_shape_mismatch(X, n):
    a = tl.arange(0, 16)
    b = tl.arange(0, 32)
    c = a + b  # ERR
    tl.store(X + a, c)


@jit
def k_float_bitand(X, n):
    x = tl.load(X)
    y = x & 1  # ERR
    tl.store(X, y)


@jit
def k_unknown_tl(X, n):
    y = tl.frobnicate(n)  # ERR
    tl.store(X, y)


@jit
def k_if_type_change(X, n):
    if n > 0:  # ERR
        v = 1.0
    else:
        v = 1
    tl.store(X, v)


@jit
def k_loop_type_change(X, n):
    acc = 0
    x = tl.load(X)
    for i in range(n):  # ERR
        acc += x
    tl.store(X, acc)


@jit
def k_plain_call(X, n):
    y = plain_helper(n)  # ERR
    tl.store(X, y)


@jit
def k_recursive(X, n):
    k_recursive(X, n)  # ERR


@jit
def k_undefined(X, n):
    tl.store(X, undefined_name)  # ERR  # noqa: F821


@jit
def k_break(X, n):
    for i in range(n):
        break  # ERR


@jit
def k_return_in_if(X, n):
    for i in range(n):   # an early return in an `if` is supported; inside a loop it is not
        if i > 2:
            return  # ERR
    tl.store(X, n)


@jit
def k_block_if(X, n):
    offs = tl.arange(0, 16)
    if offs < n:  # ERR
        tl.store(X + offs, offs)


@jit
def k_static_assert(X, n, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK >= 128, "BLOCK too small")  # ERR
    tl.store(X, n)


@jit
def k_global_array(X, n):
    tl.store(X, GLOBAL_ARRAY)  # ERR


@jit
def k_dot_dtypes(A, B):
    r = tl.arange(0, 16)
    a = tl.load(A + r[:, None] * 16 + r[None, :])
    b = tl.load(B + r[:, None] * 16 + r[None, :])
    c = tl.dot(a, b)  # ERR
    tl.store(A + r[:, None] * 16 + r[None, :], c)


@jit
def k_load_args(X, n):
    x = tl.load()  # ERR
    tl.store(X, x)


@jit
def k_int_div_signedness(X, n):
    u = n.to(tl.uint32)
    y = u // n  # ERR
    tl.store(X, y)


@jit
def k_store_rank(X, n):
    rows = tl.arange(0, 16)
    ptrs = X + rows[:, None] * 16 + rows[None, :]
    tl.store(ptrs, rows[None, :][None, :])  # ERR


@jit
def k_mask_rank(X, n):
    rows = tl.arange(0, 16)
    ptrs = X + rows[:, None] * 16 + rows[None, :]
    v = tl.load(ptrs, mask=rows < n)  # ERR
    tl.store(ptrs, v)


SIG = {"X": "*i32", "n": "i32"}
CASES = [
    # (kernel, signature, constexprs, caret text on the # ERR line, message fragment)
    (k_lambda, SIG, {}, "lambda", "lambda expressions are not supported"),
    (k_listcomp, SIG, {}, "[i for", "list comprehensions are not supported"),
    (k_try, SIG, {}, "try:", "try/except is not supported"),
    (k_with, SIG, {}, "with", "`with` blocks are not supported"),
    (k_class, SIG, {}, "class", "class definitions are not supported"),
    (k_global, SIG, {}, "global", "`global` is not supported"),
    (k_yield, SIG, {}, "yield", "`yield` is not supported"),
    (k_starargs, SIG, {}, "*args", "star-arguments (*args) are not supported"),
    (k_arange_runtime, SIG, {}, "tl.arange", "arange's end must be a compile-time constant"),
    (k_arange_pow2, SIG, {}, "tl.arange", "arange's range must be a power of 2"),
    (k_shape_mismatch, SIG, {}, "a + b", "shapes [16] and [32] are incompatible"),
    (k_float_bitand, {"X": "*fp32", "n": "i32"}, {}, "x & 1",
     "invalid operands of type fp32 and int32: `&` needs integer (or boolean) operands"),
    (k_unknown_tl, SIG, {}, "tl.frobnicate", "unknown name tl.frobnicate"),
    (k_if_type_change, SIG, {}, "if n", "variable 'v' is an fp32 scalar in the then-branch but an "
                                        "int32 scalar in the else-branch"),
    (k_loop_type_change, {"X": "*fp32", "n": "i32"}, {}, "for i",
     "variable 'acc' is an int32 scalar before the loop but an fp32 scalar after an iteration"),
    (k_plain_call, SIG, {}, "plain_helper", "cannot call the plain Python function "
                                            "'plain_helper'"),
    (k_recursive, SIG, {}, "k_recursive(X", "recursion: k_recursive calls itself"),
    (k_undefined, SIG, {}, "undefined_name", "name 'undefined_name' is not defined"),
    (k_break, SIG, {}, "break", "`break` is not supported"),
    (k_return_in_if, SIG, {}, "return", "`return` inside an if or loop with a runtime condition"),
    (k_block_if, SIG, {}, "offs < n", "an `if` condition must be a scalar"),
    (k_static_assert, SIG, {"BLOCK": 64}, "tl.static_assert", "static_assert failed: BLOCK too "
                                                              "small"),
    (k_global_array, SIG, {}, "GLOBAL_ARRAY", "global 'GLOBAL_ARRAY' of type ndarray cannot be "
                                              "used in a kernel"),
    (k_dot_dtypes, {"A": "*fp16", "B": "*fp32"}, {}, "tl.dot",
     "tl.dot's operands must have the same dtype, got fp16 and fp32"),
    (k_load_args, SIG, {}, "tl.load", "wrong arguments for tl.load"),
    (k_store_rank, SIG, {}, "tl.store", "cannot broadcast the value of shape [1, 1, 16] to the "
                                        "pointer's shape [16, 16]: the ranks differ"),
    (k_mask_rank, SIG, {}, "tl.load", "cannot broadcast the mask of shape [16] to the pointer's "
                                      "shape [16, 16]: the ranks differ"),
    (k_int_div_signedness, SIG, {}, "u // n",
     "Cannot use /, // or % with uint32 and int32 because they have different signedness"),
]


def _expected_position(fn, caret_text: str):
    lines, start = inspect.getsourcelines(fn.fn)
    for index, line in enumerate(lines):
        if "# ERR" in line:
            return start + index, line.index(caret_text), line.rstrip("\n")
    raise AssertionError("kernel has no # ERR line")


@pytest.mark.parametrize("case", CASES, ids=[c[0].fn.__name__ for c in CASES])
def test_bad_kernel_reports_position_and_message(case):
    kernel, signature, constexprs, caret_text, message = case
    with pytest.raises(CompilationError) as info:
        generate_ttir(kernel, signature, constexprs, options={"debug": False})
    err = info.value
    line, col, source = _expected_position(kernel, caret_text)
    assert (err.line, err.col) == (line, col), str(err)
    assert message in err.message, err.message
    text = str(err)
    header, shown_source, caret = text.splitlines()[:3]
    assert header == f"{inspect.getsourcefile(kernel.fn)}:{line}:{col}: error: {err.message}"
    assert shown_source == source
    assert caret == " " * col + "^"


def test_enough_bad_kernels():
    assert len(CASES) >= 15


def test_no_internal_traceback_unless_debugging():
    with pytest.raises(CompilationError) as info:
        generate_ttir(k_shape_mismatch, SIG, {}, options={"debug": False})
    files = [frame.filename for frame in traceback.extract_tb(info.value.__traceback__)]
    assert not any(f.endswith(("codegen.py", "semantic.py")) for f in files), files
    with pytest.raises(CompilationError) as info:
        generate_ttir(k_shape_mismatch, SIG, {}, options={"debug": True})
    files = [frame.filename for frame in traceback.extract_tb(info.value.__traceback__)]
    assert any(f.endswith("codegen.py") for f in files), files


def test_tile_debug_env_is_read_at_the_edge_not_by_the_front_end(monkeypatch):
    """TILE_DEBUG=1 becomes the `debug` option where the environment is read (the jit's
    RuntimeEnv, CompileOptions.from_env); the front end only reads its options."""
    from compiler.compiler import CompileOptions
    from compiler.runtime.jit import RuntimeEnv
    monkeypatch.setenv("TILE_DEBUG", "1")
    assert RuntimeEnv.from_environ({"TILE_DEBUG": "1"}).debug
    assert CompileOptions.from_env({}).debug
    with pytest.raises(CompilationError) as info:
        generate_ttir(k_shape_mismatch, SIG, {})
    files = [frame.filename for frame in traceback.extract_tb(info.value.__traceback__)]
    assert not any(f.endswith("codegen.py") for f in files)


def test_missing_parameter_in_signature():
    with pytest.raises(CompilationError) as info:
        generate_ttir(k_lambda, {"X": "*i32"}, {})
    assert "parameter 'n' has neither a signature type nor a constexpr value" in info.value.message


def test_builtins_refuse_to_run_outside_kernels():
    with pytest.raises(tl.NotInKernelError, match="tl.load can only be called inside a @jit"):
        tl.load(None)
    assert tl.cdiv(10, 4) == 3


def test_constexpr_parameter_without_value():
    with pytest.raises(CompilationError) as info:
        generate_ttir(k_static_assert, {"X": "*i32", "n": "i32", "BLOCK": "i32"}, {})
    assert "parameter 'BLOCK' is a tl.constexpr and needs a compile-time value" in \
        info.value.message
    assert info.value.source_line.strip().startswith("def k_static_assert")
