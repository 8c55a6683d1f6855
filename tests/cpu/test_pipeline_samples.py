"""The sample kernels' front-end ttir, optimized by ttir pipelines (the default one, reordered
and random ones), computes the same numbers in the interpreter as before the passes; and every
pass of the compile leaves a record that chains and parses back."""
from __future__ import annotations

import random

import numpy as np
import pytest

from compiler.compiler import CompileOptions, compile as compile_source
from compiler.ir import parse_module
from compiler.passes.manager import DEFAULT_PIPELINES
from compiler.runtime.jit import JITFunction

interpreter = pytest.importorskip("compiler.runtime.interpreter")

TTIR_PASSES = DEFAULT_PIPELINES["ttir"].split(",")
_rng = random.Random(7)
PIPELINES = {
    "default": DEFAULT_PIPELINES["ttir"],
    "reversed": ",".join(reversed(TTIR_PASSES)),
    "shuffled": ",".join(_rng.sample(TTIR_PASSES, len(TTIR_PASSES))),
    "random-repeats": ",".join(_rng.choices(TTIR_PASSES + ["loop-unroll{max-trip-count=4}"],
                                            k=10)),
}


def _vector_add():
    from sample_kernels.vector_add import add_kernel
    rng = np.random.default_rng(1)
    n = 300
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    return add_kernel, [x, y, np.zeros(n, np.float32), n], {"BLOCK_SIZE": 128}, (3,), [2]


def _softmax():
    from sample_kernels.softmax import softmax_kernel
    rows, cols = 3, 50
    x = np.random.default_rng(2).standard_normal((rows, cols)).astype(np.float32).ravel()
    return (softmax_kernel, [np.zeros(rows * cols, np.float32), x, cols, cols, cols],
            {"BLOCK_SIZE": 64}, (rows,), [0])


def _layernorm():
    from sample_kernels.layernorm import layernorm_kernel
    rows, cols = 2, 40
    rng = np.random.default_rng(3)
    x = rng.standard_normal(rows * cols).astype(np.float16)
    w, b = rng.standard_normal(cols).astype(np.float16), rng.standard_normal(cols).astype(
        np.float16)
    return (layernorm_kernel, [x, np.zeros(rows * cols, np.float16), w, b, cols, cols, 1e-5],
            {"BLOCK_SIZE": 64}, (rows,), [1])


def _matmul():
    from sample_kernels.matmul import matmul_kernel
    m, n, k = 20, 18, 40
    rng = np.random.default_rng(4)
    a = rng.standard_normal(m * k).astype(np.float16)
    b = rng.standard_normal(k * n).astype(np.float16)
    blocks = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 16, "BLOCK_SIZE_K": 16, "GROUP_SIZE_M": 2}
    return (matmul_kernel, [a, b, np.zeros(m * n, np.float16), m, n, k, k, 1, n, 1, n, 1],
            blocks, (4,), [2])


def _attention():
    from sample_kernels.attention import _strides, attention_kernel
    shape = (1, 2, 40, 64)                       # 40 rows: not a multiple of the 32-row block
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal(shape).astype(np.float16).ravel() for _ in range(3))
    strides = list(_strides(shape)) * 4
    blocks = {"HEAD_DIM": 64, "BLOCK_M": 32, "BLOCK_N": 32, "CAUSAL": True}
    return (attention_kernel, [q, k, v, np.zeros(q.size, np.float16), 0.125, *strides, 2, 40],
            blocks, (2, 2), [3])


SAMPLES = {"vector_add": _vector_add, "softmax": _softmax, "layernorm": _layernorm,
           "matmul": _matmul, "attention": _attention}


def compile_to_ttir(kernel, args, constexprs, pipeline):
    """Compile one specialization to optimized ttir; returns (compiled, runtime arguments)."""
    fn = JITFunction(kernel.fn)
    bound, key = fn.bind(*args, **constexprs)[:2]
    spec = fn._specialization(key, bound)
    options = {k: v for k, v in fn.compile_options(key).items()
               if k in CompileOptions.__dataclass_fields__}
    compiled = compile_source(fn.source_for(spec), options=options,
                              pipelines={"ttir": pipeline}, stop_after="ttir")
    return compiled, [bound[i] for i in spec.runtime_params]


def run(module, grid, args, outputs):
    """Interpret `module` on copies of `args`; returns the output arrays."""
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    interpreter.interpret(module, grid, args)
    return [args[i] for i in outputs]


@pytest.mark.parametrize("pipeline", sorted(PIPELINES))
@pytest.mark.parametrize("sample", sorted(SAMPLES))
def test_pipeline_keeps_the_numbers(sample, pipeline):
    kernel, args, constexprs, grid, outputs = SAMPLES[sample]()
    compiled, runtime_args = compile_to_ttir(kernel, args, constexprs, PIPELINES[pipeline])
    trace = compiled.trace
    before = parse_module(trace.stage_inputs["ttir"])
    want = run(before, grid, runtime_args, outputs)
    got = run(compiled.ttir_module, grid, runtime_args, outputs)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g.astype(np.float32), w.astype(np.float32),
                                   rtol=2e-3, atol=2e-3)
    records = trace.passes_of("ttir")
    assert [r.name for r in records] == [p.split("{")[0] for p in PIPELINES[pipeline].split(",")]
    previous = trace.stage_inputs["ttir"]
    for record in records:
        assert trace.ir_before(record) == previous and record.error is None
        parse_module(record.ir_after)
        previous = record.ir_after
    assert previous == trace.stages["ttir"]


@pytest.mark.parametrize("sample", ["layernorm", "matmul"])
def test_default_pipeline_has_work_on_the_samples(sample):
    """The numbers test above means something: the passes do change these kernels."""
    kernel, args, constexprs, _, _ = SAMPLES[sample]()
    compiled, _ = compile_to_ttir(kernel, args, constexprs, PIPELINES["default"])
    changed = {r.name for r in compiled.trace.passes_of("ttir") if r.changed}
    assert "cse" in changed
    assert compiled.trace.stages["ttir"] != compiled.trace.stage_inputs["ttir"]
