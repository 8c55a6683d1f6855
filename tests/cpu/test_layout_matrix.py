"""The layout test matrix (tests/cpu/layout_matrix.py) on the CPU: every case compiles to PTX
that ptxas accepts for sm_90 and, lowered to LLVM IR and run on the SIMT evaluator
(tests/cpu/simt.py), stores exactly what the interpreter stores for the same ttgir.

Cases that do not work yet are in `layout_matrix_failures.KNOWN` with their exact error and are
xfail(strict=True, raises=KnownFailure): a fix shows up as XPASS (then delete its line), a
different error as a FAIL. `python -m tests.cpu.test_layout_matrix` runs every case and prints
the failing ones with their errors (the list for `layout_matrix_failures.py`)."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

from tests.cpu import layout_matrix
from tests.cpu.layout_matrix_failures import KNOWN

needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not on the PATH")


class KnownFailure(AssertionError):
    """A case failed with exactly the error its `KNOWN` entry names."""


def matrix_params(known: dict) -> list:
    """Every case name, with the known failures marked xfail(strict=True) by their error."""
    return [pytest.param(name, marks=pytest.mark.xfail(strict=True, raises=KnownFailure,
                                                       reason=known[name]))
            if name in known else name for name in layout_matrix.case_names()]


def check_against(known: dict, name: str, error: str | None) -> None:
    """Pass when the case worked; KnownFailure when it failed as `known` says; else fail."""
    if error is not None and known.get(name) == error:
        raise KnownFailure(error)
    assert error is None, error


def interpreted(case: layout_matrix.Case, module) -> np.ndarray:
    """What the interpreter leaves in `out` for the case's inputs."""
    from compiler.runtime.interpreter import interpret
    x, out = case.arrays()
    interpret(module, (1,), [x, out])
    return out


def failure(name: str) -> str | None:
    """None when the case compiles through ptxas and the SIMT evaluator matches the
    interpreter; else the first error, as `stage: ExceptionType: message` (one line)."""
    from compiler.codegen.lowering import LoweringOptions, lower_module
    from compiler.ir.parser import parse_module
    from tests.cpu.codegen_kernels import compile_ttgir
    from tests.cpu.simt import run_kernel

    case = layout_matrix.case(name)
    stage = "parse"
    try:
        module = parse_module(case.text)
        stage = "compile"
        compile_ttgir(case.text, build_cubin=True)
        stage = "interpret"
        want = interpreted(case, module)
        if not np.count_nonzero(want):
            return "interpret: the interpreter stored only zeros (the case checks nothing)"
        stage = "simt"
        kernel = lower_module(parse_module(case.text), LoweringOptions(optimize=False))
        x, out = case.arrays()
        got = run_kernel(kernel, (1,), [x, out]).read(1, out)
    except Exception as error:       # the matrix reports every failure, whatever raised it
        return error_text(stage, error)
    return mismatch("simt", got, want)


def error_text(stage: str, error: Exception) -> str:
    """`stage: ExceptionType: first line of the message`."""
    first = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{stage}: {type(error).__name__}: {first}"


def mismatch(stage: str, got: np.ndarray, want: np.ndarray) -> str | None:
    """None when `got` is `want` exactly, else how many stored elements differ."""
    bad = int(np.count_nonzero(got != want))
    if bad:
        return f"{stage}: {bad} of {want.size} stored elements differ from the interpreter"
    return None


@needs_ptxas
@pytest.mark.parametrize("name", matrix_params(KNOWN))
def test_layout_matrix_case(name):
    check_against(KNOWN, name, failure(name))


def test_every_known_failure_is_a_case():
    """Stale entries (a renamed or removed case) are errors, not silent passes."""
    assert set(KNOWN) <= set(layout_matrix.case_names())


def test_a_known_failure_must_fail_with_its_error():
    known = {"cell": "compile: ValueError: no"}
    with pytest.raises(KnownFailure):
        check_against(known, "cell", "compile: ValueError: no")
    with pytest.raises(AssertionError) as other:
        check_against(known, "cell", "simt: 3 of 64 stored elements differ from the interpreter")
    assert not isinstance(other.value, KnownFailure)
    check_against(known, "cell", None)          # fixed: passes (strict xfail makes it XPASS)


def test_the_matrix_covers_every_kind_of_layout_and_op():
    names = layout_matrix.case_names()
    layouts = {n.split("-", 1)[0] for n in names}
    ops = {n.split("-", 1)[1].split("_to_")[0] for n in names}
    assert {"mma_v2", "mma_v3", "dot_a_v2", "dot_b_v2", "dot_a_v3", "dot_a_fma", "linear",
            "mma_v3_s1", "linear_s0"} <= layouts
    assert ops == {"elementwise", "reduce0", "reduce1", "scan", "broadcast", "expand_dims",
                   "trans", "reshape", "store", "atomic", "shared", "convert"}


if __name__ == "__main__":
    for case_name in layout_matrix.case_names():
        message = failure(case_name)
        if message:
            print(f"{case_name}\t{message}")
