"""The zoo kernels whose conversions remove-layout-conversions and coalesce now remove (stores
from slice and wider layouts, reshape/trans taking any layout, one coalesced layout for loads
that meet) still compute the right numbers once lowered: their final ttgir goes through the
LLVM lowering and runs in the SIMT evaluator (tests/cpu/simt.py), checked against numpy."""
from __future__ import annotations

import numpy as np
import pytest

from compiler.codegen.lowering import LoweringOptions, lower_module
from compiler.compiler import CompileOptions, compile as compile_source
from compiler.ir import parse_module
from tests.kernels_zoo import BY_NAME, check_outputs, make_case

from .simt import run_kernel

# kernels that kept conversions before (bench/convert_counts_baseline.json) and keep none now,
# and the transposing kernels, whose one data movement is now one conversion after the
# reshape/trans chain (which keeps every element in its thread, as Triton's)
CHANGED = ["int8_int16_ops", "layernorm", "permute_3d", "reduce_3d", "reduce_axis0",
           "reduce_axis1", "reshape_rows", "shape_builtins", "transpose"]
CONVERSIONS_LEFT = {"permute_3d": 1, "transpose": 1}


def final_ttgir(entry, case) -> tuple[str, list]:
    """The kernel's final ttgir for `case` and its runtime arguments (constexprs and
    specialized-away arguments dropped)."""
    fn = entry.kernel
    args = case.fresh_args()
    bound, key = fn.bind(*args, **case.constexprs, **case.options)[:2]
    spec = fn._specialization(key, bound)
    known = CompileOptions.__dataclass_fields__
    options = {k: v for k, v in fn.compile_options(key).items() if k in known}
    kernel = compile_source(fn.source_for(spec), options=options, stop_after="ttgir")
    return kernel.asm["ttgir"], args, [bound[i] for i in spec.runtime_params]


@pytest.mark.parametrize("name", CHANGED)
def test_kernel_without_conversions_computes_the_same_on_the_simt_evaluator(name):
    entry = BY_NAME[name]
    case = make_case(entry, 4321)
    text, args, runtime = final_ttgir(entry, case)
    assert text.count("ttg.convert_layout ") == CONVERSIONS_LEFT.get(name, 0)
    kernel = lower_module(parse_module(text), LoweringOptions(optimize=False))
    memory = run_kernel(kernel, case.grid, runtime)
    buffers = [i for i, a in enumerate(runtime) if isinstance(a, np.ndarray)]
    got = {}
    for index in case.expected:
        array = args[index]
        position = next(k for k, i in enumerate(buffers) if runtime[i] is array)
        got[index] = memory.read(position, array).reshape(case.args[index].shape)
    if entry.canonical:
        got = entry.canonical(got)
    check_outputs(got, case.expected, entry.gpu, f"{name} on the SIMT evaluator")
