"""The layout test matrix (tests/cpu/layout_matrix.py) on the GPU: every case is compiled,
launched on one CTA and checked bit for bit against the interpreter running the same ttgir.
Cases the CPU tier knows fail to compile are xfail(strict=True) with their error; a fix shows
up as XPASS."""
from __future__ import annotations

import pytest

from tests.cpu import layout_matrix
from tests.cpu.layout_matrix_failures import KNOWN
from tests.cpu.test_layout_matrix import (check_against, error_text, interpreted,
                                          matrix_params, mismatch)

pytestmark = pytest.mark.gpu

#: on the GPU only the failures before any run carry over (they happen in the compiler)
COMPILE_FAILURES = {name: error for name, error in KNOWN.items()
                    if error.startswith(("parse:", "compile:"))}


def gpu_failure(name: str) -> str | None:
    """None when the case's GPU result equals the interpreter's, else the error (formatted as
    the CPU tier's `failure`)."""
    from compiler.ir.parser import parse_module
    from tests.cpu.codegen_kernels import compile_ttgir
    from tests.gpu.test_codegen_gpu import launch_compiled

    case = layout_matrix.case(name)
    stage = "parse"
    try:
        module = parse_module(case.text)
        stage = "interpret"
        want = interpreted(case, module)
        stage = "compile"
        compiled = compile_ttgir(case.text)
        stage = "gpu"
        x, out = case.arrays()
        got = launch_compiled(compiled, (1,), [x, out])[1].to_numpy()
    except Exception as error:       # the matrix reports every failure, whatever raised it
        return error_text(stage, error)
    return mismatch("gpu", got, want)


@pytest.mark.parametrize("name", matrix_params(COMPILE_FAILURES))
def test_layout_matrix_case_on_the_gpu(name):
    check_against(COMPILE_FAILURES, name, gpu_failure(name))
