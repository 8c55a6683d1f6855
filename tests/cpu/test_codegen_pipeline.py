"""The whole compiler on Triton's reference ttir: our ttgir passes pick the layouts, the codegen
lowers them, and the kernels compute the right numbers on the SIMT evaluator (and reach ptxas
without spills)."""
from __future__ import annotations

import numpy as np
import pytest

from compiler.codegen.lowering import LoweringOptions, lower_module

from . import codegen_cases
from .codegen_cases import REFERENCE
from .simt import run_kernel


def _ttgir_text(name: str, arch: int | None = None) -> str:
    from compiler.compiler import compile
    from compiler.ir.printer import print_module
    options = {} if arch is None else {"arch": arch}
    kernel = compile(REFERENCE / f"{name}.ttir", options, stop_after="ttgir")
    return print_module(kernel.ttgir_module)


def _run_case(case, ttgir_text, **kwargs):
    _, grid, args, check = case(np.random.default_rng(7), **kwargs)
    from compiler.ir.parser import parse_module
    kernel = lower_module(parse_module(ttgir_text), LoweringOptions(optimize=False))
    memory = run_kernel(kernel, grid, args)
    arrays = {i: a for i, a in enumerate(args) if isinstance(a, np.ndarray)}
    order = {i: k for k, i in enumerate(sorted(arrays))}
    check(lambda i: memory.read(order[i], arrays[i]))


@pytest.mark.parametrize("name,kwargs", [("add", {"n": 2112}), ("softmax", {"rows": 2}),
                                         ("layernorm", {"rows": 2})])
def test_reference_ttir_through_our_pipeline(reference_dir, name, kwargs):
    _run_case(getattr(codegen_cases, name), _ttgir_text(name), **kwargs)


def test_matmul_through_our_pipeline(reference_dir):
    m, n, k = 112, 208, 64          # one 128x256 tile, one k step; sizes divisible by 16
    rng = np.random.default_rng(3)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)

    def case(_rng):
        def check(read):
            np.testing.assert_allclose(read(2).astype(np.float64), a.astype(np.float64) @ b,
                                       rtol=1e-2, atol=5e-2)
        return None, (1,), [a, b, np.zeros((m, n), np.float16), m, n, k, k, n, n], check
    # sm_80's mma.sync path: the SIMT evaluator does not model wgmma (sm_90's path is checked
    # by tests/cpu/test_wgmma.py through ptxas and by the GPU tier)
    _run_case(case, _ttgir_text("matmul", arch=80))


@pytest.mark.parametrize("name", ["add", "softmax", "layernorm", "matmul"])
def test_reference_ttir_reaches_ptxas(reference_dir, name):
    from compiler.codegen.toolchain import find_tool
    if find_tool("ptxas") is None:
        pytest.skip("ptxas is not installed")
    from .codegen_kernels import compile_ttgir
    result = compile_ttgir(_ttgir_text(name))
    assert result.asm.get("cubin")
    if name != "matmul":          # the FMA dot of a 128x256 tile spills (not yet fast)
        assert result.trace.cubin_info["spill_stores"] == 0
