"""The ttgir pipeline changes layouts, never results: each kernel computes exactly the same
numbers in the interpreter before (ttir) and after (final ttgir) the ttgir passes."""
from __future__ import annotations

import numpy as np
import pytest

from compiler.ir import parse_module
from compiler.passes.manager import DEFAULT_PIPELINES
from tests.conftest import REFERENCE
from tests.cpu.pass_helpers import run_pipeline
from tests.cpu.ttgir_kernels import KERNELS

interpreter = pytest.importorskip("compiler.runtime.interpreter")


def pipeline(num_warps: int) -> str:
    return DEFAULT_PIPELINES["ttgir"].replace(
        "convert-triton-to-tritongpu", f"convert-triton-to-tritongpu{{num-warps={num_warps}}}")


def _f32(rng, n):
    return rng.standard_normal(n).astype(np.float32)


def launch_of(name: str, rng):
    """(grid, argument list) for each kernel; arrays are written in place."""
    if name in ("reduce_axis0", "reduce_axis1"):
        return (1,), [_f32(rng, 32 * 64), np.zeros(64 if name == "reduce_axis0" else 32,
                                                   np.float32), 64]
    if name == "row_softmax":
        return (1,), [_f32(rng, 16 * 128), np.zeros(16 * 128, np.float32), 128]
    if name == "masked_2d":
        return (1,), [_f32(rng, 64 * 64), np.zeros(64 * 64, np.float32), 64, 50, 48]
    if name == "transpose":
        return (1,), [_f32(rng, 64 * 32), np.zeros(32 * 64, np.float32), 32, 64]
    if name == "int_ops":
        return (2,), [rng.integers(-1000, 1000, 512).astype(np.int32),
                      np.zeros(512, np.int32)]
    if name == "half":
        return (2,), [rng.standard_normal(2048).astype(np.float16),
                      np.zeros(2048, np.uint16), 1500]
    if name == "scan":
        return (1,), [_f32(rng, 512), np.zeros(512, np.float32)]
    if name == "argmax":
        return (1,), [_f32(rng, 16 * 64), np.zeros(16, np.int32), 64]
    if name == "loop":
        return (1,), [_f32(rng, 32 * 96), np.zeros(32 * 96, np.float32), 96, 3]
    if name == "if_else":
        return (1,), [_f32(rng, 512), np.zeros(512, np.float32), -1]
    if name == "add":
        return (3,), [_f32(rng, 3000), _f32(rng, 3000), np.zeros(3000, np.float32), 2900]
    if name == "softmax":
        return (2,), [np.zeros(2 * 4096, np.float32), _f32(rng, 2 * 4096), 4096, 4096, 3000]
    if name == "layernorm":
        x = rng.standard_normal(8192).astype(np.float16)
        w = rng.standard_normal(8192).astype(np.float16)
        b = rng.standard_normal(8192).astype(np.float16)
        return (1,), [x, np.zeros(8192, np.float16), w, b, 8192, 7000, np.float32(1e-5)]
    if name == "matmul":
        m, n, k = 128, 256, 128
        a = rng.standard_normal(m * k).astype(np.float16)
        b = rng.standard_normal(k * n).astype(np.float16)
        return (1,), [a, b, np.zeros(m * n, np.float16), m, n, k, k, n, n]
    raise KeyError(name)


REFERENCE_WARPS = {"add": 4, "softmax": 16, "layernorm": 8, "matmul": 8}


def _source(name: str) -> str:
    if name in KERNELS:
        return KERNELS[name]
    path = REFERENCE / f"{name}.ttir"
    if not path.is_file():
        pytest.skip("../shared/reference is not present")
    return path.read_text()


def _outputs(module_text: str, name: str) -> list:
    grid, args = launch_of(name, np.random.default_rng(11))
    interpreter.interpret(parse_module(module_text), grid, args)
    return [a for a in args if isinstance(a, np.ndarray)]


@pytest.mark.parametrize("name", sorted(KERNELS) + sorted(REFERENCE_WARPS))
def test_ttgir_computes_what_ttir_computes(name):
    ttir = _source(name)
    ttgir, _ = run_pipeline(ttir, pipeline(REFERENCE_WARPS.get(name, 4)), stage="ttgir")
    before, after = _outputs(ttir, name), _outputs(ttgir, name)
    for x, y in zip(before, after):
        np.testing.assert_array_equal(x, y)
    assert any(np.any(x != 0) for x in before)       # the kernel did write something
