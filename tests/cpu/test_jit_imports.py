"""`import compiler` stays light and exposes Triton's top-level names."""
from __future__ import annotations

import subprocess
import sys

import compiler


def test_import_does_not_load_heavy_modules():
    code = ("import sys, compiler\n"
            "heavy = {'textual', 'cuda', 'llvmlite', 'torch', 'compiler.compiler', 'explorer'}\n"
            "print(sorted(m for m in sys.modules if m in heavy or m.split('.')[0] in heavy))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "[]"


def test_top_level_names():
    for name in ("jit", "autotune", "Config", "heuristics", "cdiv", "next_power_of_2",
                 "constexpr", "language", "testing", "compile", "CompilationError"):
        assert getattr(compiler, name) is not None, name
    from compiler import compile as compile_fn
    from compiler.compiler import compile as driver_compile
    assert compile_fn is driver_compile
    assert compiler.testing.do_bench is not None
    assert [compiler.cdiv(x, 8) for x in (0, 1, 8, 9)] == [0, 1, 1, 2]
    assert [compiler.next_power_of_2(x) for x in (0, 1, 2, 3, 64, 65)] == [1, 1, 2, 4, 64, 128]


def test_unknown_attribute():
    import pytest

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        compiler.nope
