"""Property tests: any order, subset or repetition of the ttir passes leaves valid IR (and, once
the interpreter exists, the same numbers)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.ir import parse_module, print_module
from compiler.ir.verifier import verify_module
from compiler.passes.instrumentation import TraceInstrumentation
from compiler.passes.manager import PassManager
from compiler.trace import CompileTrace
from tests.conftest import REFERENCE
from tests.cpu.ttir_samples import DOT, LOOPS, loops_expected

TTIR_PASSES = ["inline", "canonicalize", "cse", "dce", "licm", "combine", "reorder-broadcast",
               "loop-unroll", "loop-unroll{max-trip-count=4}", "licm{hoist-loads=false}"]
REFERENCE_KERNELS = ["add", "softmax", "layernorm", "matmul"]


def _inputs() -> dict[str, str]:
    texts = {"loops": LOOPS, "dot": DOT}
    if REFERENCE.is_dir():
        for name in REFERENCE_KERNELS:
            texts[name] = (REFERENCE / f"{name}.ttir").read_text()
    return texts


INPUTS = _inputs()


def run(text: str, pipeline: list[str]):
    trace = CompileTrace("prop")
    module = PassManager("ttir", pipeline, [TraceInstrumentation(trace)]).run(parse_module(text))
    return module, trace


PROPERTY = settings(max_examples=30, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(name=st.sampled_from(sorted(INPUTS)),
       pipeline=st.lists(st.sampled_from(TTIR_PASSES), min_size=1, max_size=8))
def test_any_pass_sequence_verifies(name, pipeline):
    module, trace = run(INPUTS[name], pipeline)       # verify_each raises on invalid IR
    text = print_module(module)
    verify_module(parse_module(text))
    assert len(trace.passes) == len(pipeline)
    assert trace.passes[-1].ir_after == text


@PROPERTY
@given(order=st.permutations(TTIR_PASSES[:8]))
def test_any_permutation_on_hand_written_kernel_verifies(order):
    module, _ = run(LOOPS, order)
    verify_module(parse_module(print_module(module)))


def _interpret():
    interpreter = pytest.importorskip("compiler.runtime.interpreter",
                                      reason="interpreter not available yet")
    return interpreter.interpret


def _require_baseline(interpret, check) -> None:
    """Skip when the interpreter gets the unoptimized kernel wrong: then a mismatch would say
    nothing about the passes."""
    try:
        check(parse_module(LOOPS))
    except Exception as err:  # noqa: BLE001 - any interpreter failure means no baseline
        pytest.skip(f"the interpreter cannot run the unoptimized kernel yet: {err}"[:300])


def _check_loops(interpret, module, n: int) -> None:
    x = np.arange(8, dtype=np.float32) - 2.5
    out = np.zeros(8, np.float32)
    grid = np.zeros(64, np.float32)
    interpret(module, (1,), [x, out, grid, n])
    want_out, want_grid = loops_expected(x, n)
    np.testing.assert_allclose(out, want_out, rtol=1e-6)
    np.testing.assert_allclose(grid.reshape(8, 8), want_grid, rtol=1e-6)


@PROPERTY
@given(pipeline=st.lists(st.sampled_from(TTIR_PASSES), min_size=1, max_size=6),
       n=st.integers(min_value=0, max_value=5))
def test_any_pass_sequence_keeps_the_numbers(pipeline, n):
    interpret = _interpret()
    _require_baseline(interpret, lambda m: _check_loops(interpret, m, 3))
    _check_loops(interpret, run(LOOPS, pipeline)[0], n)


@PROPERTY
@given(pipeline=st.lists(st.sampled_from(TTIR_PASSES), min_size=1, max_size=6))
def test_any_pass_sequence_keeps_the_numbers_of_add_and_dot(pipeline):
    interpret = _interpret()
    rng = np.random.default_rng(0)
    if "add" in INPUTS:
        module, _ = run(INPUTS["add"], pipeline)
        x, y = rng.standard_normal(1500).astype(np.float32), rng.standard_normal(1500).astype(
            np.float32)
        out = np.zeros(1500, np.float32)
        interpret(module, (2,), [x, y, out, 1500])
        np.testing.assert_allclose(out, x + y, rtol=1e-6)
    module, _ = run(DOT, pipeline)
    a, b = (rng.standard_normal((16, 16)).astype(np.float32) for _ in range(2))
    c = np.ones(256, np.float32)
    interpret(module, (1,), [a.ravel(), b.ravel(), c])
    want = (np.ones((16, 16)) + a @ b) + a @ b
    np.testing.assert_allclose(c.reshape(16, 16), want, rtol=1e-4, atol=1e-4)
