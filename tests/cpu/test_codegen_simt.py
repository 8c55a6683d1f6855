"""The lowered kernels computed on the CPU: the unoptimized LLVM IR of each codegen case runs
in the SIMT evaluator (tests/cpu/simt.py) and its results are checked against numpy. This
checks the lowering's logic (layouts, shuffles, shared memory, masks, control flow) without a
GPU; the same cases run on the GPU in tests/gpu/test_codegen_gpu.py."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

from compiler.codegen.lowering import LoweringOptions, lower_module
from compiler.ir.parser import parse_module

from .codegen_cases import CASES, REFERENCE
from .simt import run_kernel

# smaller problems than on the GPU where a case takes a size (the evaluator runs every CTA)
SMALL = {"add": {"n": 2112}, "softmax": {"rows": 2}, "layernorm": {"rows": 2},
         "int_ops": {"n": 1104}, "scan": {"n": 2112}, "atomics": {"n": 2112}}


@pytest.mark.parametrize("name", sorted(CASES))
def test_case_on_the_simt_evaluator(name):
    case = CASES[name]
    if name in ("add", "softmax", "layernorm") and not REFERENCE.is_dir():
        pytest.skip("../shared/reference is not present")
    kwargs = {k: v for k, v in SMALL.get(name, {}).items()
              if k in inspect.signature(case).parameters}
    text, grid, args, check = case(np.random.default_rng(1234), **kwargs)
    kernel = lower_module(parse_module(text), LoweringOptions(optimize=False))
    memory = run_kernel(kernel, grid, args)
    arrays = {i: a for i, a in enumerate(args) if isinstance(a, np.ndarray)}
    buffer_index = {i: k for k, i in enumerate(sorted(arrays))}

    def read(i):
        return memory.read(buffer_index[i], arrays[i])
    check(read)


UNARY_REFERENCE = {
    "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "sin": np.sin, "cos": np.cos, "absf": np.abs,
    "floor": np.floor, "ceil": np.ceil, "tanh": np.tanh, "log1p": np.log1p, "expm1": np.expm1,
    "tan": np.tan, "round": lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5), "trunc": np.trunc,
}


def _erf(x):
    import math
    return np.vectorize(math.erf)(x)


@pytest.mark.parametrize("name", sorted(set(UNARY_REFERENCE) | {"erf"}))
def test_math_lowerings_compute_the_function(name):
    from compiler.codegen.lower_elementwise import MATH_UNARY
    assert name in MATH_UNARY
    layout = "#ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>"
    text = f"""#blocked = {layout}
module attributes {{"ttg.num-warps" = 1 : i32, "ttg.threads-per-warp" = 32 : i32}} {{
  tt.func public @one(%p: !tt.ptr<f32>, %q: !tt.ptr<f32>) {{
    %offs = tt.make_range {{end = 32 : i32, start = 0 : i32}} : tensor<32xi32, #blocked>
    %ps = tt.splat %p : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>, #blocked>
    %pp = tt.addptr %ps, %offs : tensor<32x!tt.ptr<f32>, #blocked>, tensor<32xi32, #blocked>
    %x = tt.load %pp : tensor<32x!tt.ptr<f32>, #blocked>
    %y = math.{name} %x : tensor<32xf32, #blocked>
    %qs = tt.splat %q : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>, #blocked>
    %qq = tt.addptr %qs, %offs : tensor<32x!tt.ptr<f32>, #blocked>, tensor<32xi32, #blocked>
    tt.store %qq, %y : tensor<32x!tt.ptr<f32>, #blocked>
    tt.return
  }}
}}
"""
    x = np.linspace(0.05, 1.45, 32).astype(np.float32)
    if name in ("sin", "cos", "tan", "erf", "tanh", "absf", "floor", "ceil", "round", "trunc"):
        x = np.linspace(-1.45, 1.45, 32).astype(np.float32)
    kernel = lower_module(parse_module(text), LoweringOptions(optimize=False))
    memory = run_kernel(kernel, (1,), [x, np.zeros(32, np.float32)])
    ref = _erf(x.astype(np.float64)) if name == "erf" else UNARY_REFERENCE[name](x.astype(np.float64))
    np.testing.assert_allclose(memory.read(1, x), ref, rtol=2e-5, atol=2e-6)
