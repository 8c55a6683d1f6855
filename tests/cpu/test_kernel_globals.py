"""Which globals (and closure values) a kernel may read, by Triton 3.6's rule: compile-time
values (`tl.constexpr(...)`, globals annotated `: tl.constexpr`, None, dtypes), modules,
@jit functions and the language's own objects. A plain number, string or tuple is refused
with Triton's sentence ("Cannot access global variable ..."), our file:line:col and caret,
unless the compile allows it (TILE_ / TRITON_ALLOW_NON_CONSTEXPR_GLOBALS, the
`allow_non_constexpr_globals` option, `triton.knobs.compilation.allow_non_constexpr_globals`)."""
from __future__ import annotations

import collections
import inspect
import os

import pytest

import compiler as triton
import compiler.language as tl
from compiler.frontend import generate_ttir
from compiler.frontend.errors import CompilationError
from compiler.runtime.jit import RuntimeEnv
from compiler.stage_state import CompileOptions

PLAIN = 42
WRAPPED = tl.constexpr(42)
ANNOTATED: tl.constexpr = 42
DTYPE = tl.float16
NOTHING = None
PAIR = (1, 2)
Point = collections.namedtuple("Point", "x y")


@triton.jit
def _reads_plain(X):
    tl.store(X, PLAIN)  # READ


@triton.jit
def _reads_pair(X):
    tl.store(X, PAIR[0])


@triton.jit
def _reads_compile_time_globals(X):
    value = WRAPPED + ANNOTATED
    if NOTHING is None:
        value += 1
    tl.store(X, value.to(DTYPE).to(tl.int32))


def _closure_kernel():
    captured = 7

    @triton.jit
    def reads_captured(X):
        tl.store(X, captured)  # CAPTURED
    return reads_captured


def _ttir(kernel, **options):
    return generate_ttir(kernel, {"X": "*i32"}, {}, None, options)


def test_a_plain_number_global_is_refused_with_tritons_sentence_at_its_use():
    with pytest.raises(CompilationError) as info:
        _ttir(_reads_plain)
    err = info.value
    lines, first = inspect.getsourcelines(_reads_plain.fn)
    line = first + next(i for i, text in enumerate(lines) if "# READ" in text)
    assert err.message.startswith("Cannot access global variable PLAIN from within a @jit")
    assert "global variable" in str(err) and "PLAIN = tl.constexpr" in err.message
    assert (err.line, err.col) == (line, lines[line - first].index("PLAIN"))
    assert str(err).splitlines()[2] == " " * err.col + "^"
    assert isinstance(err.__cause__, NameError)            # Triton's cause


def test_a_tuple_global_is_refused_too():
    with pytest.raises(CompilationError, match="Cannot access global variable PAIR"):
        _ttir(_reads_pair)


def test_a_closure_value_follows_the_same_rule():
    with pytest.raises(CompilationError, match="Cannot access global variable captured"):
        _ttir(_closure_kernel())


def test_compile_time_globals_modules_dtypes_and_none_are_readable():
    text = str(_ttir(_reads_compile_time_globals))
    assert "arith.constant 84 : i32" in text and "to f16" in text     # 42 + 42 (+ 1), via DTYPE


def test_namedtuple_classes_and_language_objects_are_readable():
    from compiler.frontend.source import readable_global
    assert readable_global(Point) and readable_global(tl.arange) and readable_global(tl.tensor)
    assert readable_global(tl.rand) and readable_global(_reads_plain) and readable_global(tl)
    assert not readable_global(3) and not readable_global("text") and not readable_global(PAIR)


def test_the_option_allows_any_global():
    assert "arith.constant 42" in str(_ttir(_reads_plain, allow_non_constexpr_globals=True))
    assert "arith.constant 7" in str(_ttir(_closure_kernel(), allow_non_constexpr_globals=True))


@pytest.mark.parametrize("var", ["TILE_ALLOW_NON_CONSTEXPR_GLOBALS",
                                 "TRITON_ALLOW_NON_CONSTEXPR_GLOBALS"])
def test_the_environment_sets_the_option_at_the_edge(var):
    assert CompileOptions.from_env({}, environ={var: "1"}).allow_non_constexpr_globals
    assert CompileOptions.from_env({}, environ={}).allow_non_constexpr_globals is False
    assert CompileOptions.from_env({}, environ={var: "1"}).frontend_options()[
        "allow_non_constexpr_globals"]
    assert RuntimeEnv.from_environ({var: "1"}).allow_non_constexpr_globals
    assert not RuntimeEnv.from_environ({}).allow_non_constexpr_globals


def test_the_knob_writes_the_variable(monkeypatch):
    monkeypatch.delenv("TILE_ALLOW_NON_CONSTEXPR_GLOBALS", raising=False)
    knobs = triton.knobs.compilation
    try:
        knobs.allow_non_constexpr_globals = True
        assert os.environ["TILE_ALLOW_NON_CONSTEXPR_GLOBALS"] == "1"
        assert CompileOptions.from_env({}).allow_non_constexpr_globals
    finally:
        knobs.allow_non_constexpr_globals = None
        knobs.reset()
    assert "TILE_ALLOW_NON_CONSTEXPR_GLOBALS" not in os.environ


def test_the_library_reads_only_compile_time_globals():
    """tl.rand's Philox constants are annotated `: tl.constexpr`, so the library compiles
    under the rule it enforces."""
    @triton.jit
    def uses_rand(X):
        tl.store(X + tl.arange(0, 4), (tl.rand(0, tl.arange(0, 4)) * 0).to(tl.int32))
    generate_ttir(uses_rand, {"X": "*i32"}, {})
