"""The sample kernels end to end on the CPU: front end -> ttir -> our ttgir passes -> lowering,
run on the SIMT evaluator with the sizes the pipeline tests use (not multiples of the block),
and compared with the interpreter running the same kernel's ttir."""
from __future__ import annotations

import numpy as np
import pytest

from compiler.codegen.lowering import LoweringOptions, lower_module

from .simt import run_kernel

samples = pytest.importorskip("tests.cpu.test_pipeline_samples")


def _compile(kernel, args, constexprs):
    from compiler.compiler import CompileOptions, compile as compile_source
    from compiler.runtime.jit import JITFunction
    fn = JITFunction(kernel.fn)
    bound, key = fn.bind(*args, **constexprs)[:2]
    spec = fn._specialization(key, bound)
    options = {k: v for k, v in fn.compile_options(key).items()
               if k in CompileOptions.__dataclass_fields__}
    compiled = compile_source(fn.source_for(spec), options=options, stop_after="ttgir")
    return compiled, [bound[i] for i in spec.runtime_params]


@pytest.mark.parametrize("name", ["vector_add", "softmax", "layernorm", "matmul",
                                  "attention"])
def test_sample_kernel_on_the_simt_evaluator(name):
    from compiler.runtime import interpreter
    kernel, args, constexprs, grid, outputs = samples.SAMPLES[name]()
    compiled, runtime_args = _compile(kernel, args, constexprs)
    expected = [a.copy() if isinstance(a, np.ndarray) else a for a in runtime_args]
    interpreter.interpret(compiled.ttir_module, grid, expected)
    lowered = lower_module(compiled.ttgir_module, LoweringOptions(optimize=False))
    memory = run_kernel(lowered, grid, runtime_args)
    arrays = [i for i, a in enumerate(runtime_args) if isinstance(a, np.ndarray)]
    for out in outputs:
        assert np.count_nonzero(expected[out]) > expected[out].size // 2   # a real result
        got = memory.read(arrays.index(out), runtime_args[out])
        np.testing.assert_allclose(got.astype(np.float64), expected[out].astype(np.float64),
                                   rtol=2e-3, atol=2e-3)
