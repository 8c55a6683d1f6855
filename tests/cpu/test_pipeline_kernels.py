"""The wide CPU tier: every kernel of tests/kernels_zoo.py (a) runs in the interpreter and
matches numpy on fresh random inputs of awkward sizes, (b) compiles through the whole pipeline
(ttir -> ttgir -> LLVM IR -> PTX -> cubin) with `warmup`, its final ttgir parses back and
verifies, every tensor in it carries a layout, its optimized ttir still matches numpy in the
interpreter, and ptxas accepts its PTX for sm_90 without spills; and (c) golden checks pin
layouts, vector widths, fast-math forms and layout conversions, against Triton's reference
outputs in ../shared where it has them.

Inputs are fresh each run; a failure message names the seed, and TILE_ZOO_SEED=<seed> replays it.
"""
from __future__ import annotations

import re
from collections import Counter

import pytest

from compiler.codegen.toolchain import find_tool
from compiler.ir import parse_module
from compiler.ir.types import TensorType
from compiler.ir.verifier import verify_module
from tests.kernels_zoo import BY_NAME, ZOO, check_outputs, make_case, run_compiled_ttir, \
    run_interpreter, warmup, zoo_seed
from tests.zoo.elementwise import add_kernel
from tests.zoo.memory import transpose_kernel

NAMES = [entry.name for entry in ZOO]
needs_ptxas = pytest.mark.skipif(find_tool("ptxas") is None, reason="ptxas is not installed")


def _case(name: str):
    """A fresh case of the named kernel and the seed that made it."""
    seed = zoo_seed(name)
    return make_case(BY_NAME[name], seed), seed


# ---- (a) the interpreter against numpy ----------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_interpreter_matches_numpy(name):
    entry = BY_NAME[name]
    case, seed = _case(name)
    got = run_interpreter(entry, case)
    check_outputs(got, case.expected, entry.interp, f"{name} in the interpreter (seed {seed})")


# ---- (b) the whole pipeline ---------------------------------------------------------------------


def _tensor_types(module):
    """Every tensor type of an op result or block argument in `module`."""
    for op in module.walk():
        for value in op.results:
            if isinstance(value.type, TensorType):
                yield op, value.type
        for region in op.regions:
            for block in region.blocks:
                for arg in block.args:
                    if isinstance(arg.type, TensorType):
                        yield op, arg.type


@pytest.mark.parametrize("name", NAMES)
def test_pipeline_compiles(name):
    case, seed = _case(name)
    compiled = warmup(BY_NAME[name], case)
    for stage in ("ttir", "ttgir", "llir", "ptx"):
        assert compiled.asm.get(stage), f"{name} (seed {seed}): no {stage} stage"

    ttgir = parse_module(compiled.asm["ttgir"], f"{name}.ttgir")
    verify_module(ttgir)
    missing = [op.name for op, ty in _tensor_types(ttgir) if ty.encoding is None]
    assert not missing, f"{name}: tensors without a layout in the final ttgir, made by {missing}"

    ptx = compiled.asm["ptx"]
    assert re.search(r"^\.target sm_90a?\b", ptx, re.M), f"{name}: PTX does not target sm_90"
    assert re.search(r"^\.target .*debug", ptx, re.M) is None, f"{name}: .target keeps `debug`"
    assert re.search(rf"\.entry {re.escape(compiled.name)}\b", ptx), f"{name}: no .entry"


@pytest.mark.parametrize("name", NAMES)
def test_optimized_ttir_matches_numpy(name):
    """The ttir after every ttir pass (what the ttgir stage starts from) still computes the
    same numbers in the interpreter."""
    entry = BY_NAME[name]
    case, seed = _case(name)
    compiled = warmup(entry, case)
    got = run_compiled_ttir(entry, case, compiled)
    check_outputs(got, case.expected, entry.interp, f"{name}, optimized ttir (seed {seed})")


@needs_ptxas
@pytest.mark.parametrize("name", NAMES)
def test_ptxas_accepts(name):
    case, seed = _case(name)
    compiled = warmup(BY_NAME[name], case)
    cubin = compiled.asm.get("cubin")
    assert isinstance(cubin, bytes) and cubin[:4] == b"\x7fELF", f"{name}: no cubin from ptxas"
    info = compiled.trace.cubin_info
    assert info["registers"] > 0, f"{name}: ptxas -v reported no registers: {info}"
    assert info["spill_stores"] == 0, f"{name}: ptxas reports spills: {info}"


# ---- (c) golden layouts, vector widths, conversions ---------------------------------------------


def _memory_op_counts(ptx: str) -> Counter:
    """How many of each global load/store instruction form a PTX text has."""
    return Counter(re.findall(r"\b((?:ld|st)\.global(?:\.\w+)*)", ptx))


def _memory_ops(ptx: str) -> set:
    """The distinct global load/store instruction forms in a PTX text."""
    return set(_memory_op_counts(ptx))


def _float_function_counts(ptx: str) -> Counter:
    """How many of each f32 special-function/division instruction form a PTX text has."""
    return Counter(re.findall(r"\b((?:ex2|lg2|sqrt|rsqrt|div|sin|cos)\.[a-z.]*f32)\b", ptx))


def _size_per_thread(ttgir: str) -> list:
    return re.findall(r"sizePerThread = \[([\d, ]+)\]", ttgir)


def test_add_f32_vectorizes_to_v4():
    """fp32 add, 16-byte-divisible pointers and size: 4 elements per thread, 128-bit accesses."""
    compiled = add_kernel.warmup("*fp32:16", "*fp32:16", "*fp32:16", "i32:16", grid=(1,),
                                 BLOCK=1024, num_warps=4)
    assert _size_per_thread(compiled.asm["ttgir"]) == ["4"]
    assert _memory_ops(compiled.asm["ptx"]) == {"ld.global.v4.b32", "st.global.v4.b32"}
    assert compiled.asm["ptx"].count("ld.global.v4.b32") == 2 * 2   # x, y; 8 elements a thread


def test_add_f16_loads_eight_elements_as_v4_b32():
    """fp16: 8 elements per thread are one 16-byte access, `ld.global.v4.b32`."""
    compiled = add_kernel.warmup("*fp16:16", "*fp16:16", "*fp16:16", "i32:16", grid=(1,),
                                 BLOCK=256, num_warps=1)
    assert _size_per_thread(compiled.asm["ttgir"]) == ["8"]
    assert _memory_ops(compiled.asm["ptx"]) == {"ld.global.v4.b32", "st.global.v4.b32"}


def test_unaligned_size_keeps_layout_but_not_vector_width():
    """With a size not known divisible by 16 the mask stops vectorization (as in Triton): the
    layout keeps 4 elements a thread (from pointer alignment) but accesses are 32-bit."""
    compiled = add_kernel.warmup("*fp32:16", "*fp32:16", "*fp32:16", "i32", grid=(1,),
                                 BLOCK=512, num_warps=4)
    assert _size_per_thread(compiled.asm["ttgir"]) == ["4"]
    assert _memory_ops(compiled.asm["ptx"]) == {"ld.global.b32", "st.global.b32"}


#: Triton's reference runs (../shared/reference/triton-3.6-h200/kernels.py): the sample kernel,
#: the specialization Triton saw, constexprs and num_warps.
REFERENCE_RUNS = {
    "add": ("vector_add", ["*fp32:16"] * 3 + ["i32:16"], {"BLOCK_SIZE": 1024}, 4),
    "softmax": ("softmax", ["*fp32:16"] * 2 + ["i32:16"] * 3, {"BLOCK_SIZE": 4096}, 16),
    "layernorm": ("layernorm", ["*fp16:16"] * 4 + ["i32:16"] * 2 + ["fp32"],
                  {"BLOCK_SIZE": 8192}, 8),
}


def _first_layout(ttgir: str) -> str:
    return re.search(r"^#blocked = (.*)$", ttgir, re.M).group(1)


@pytest.mark.parametrize("reference", sorted(REFERENCE_RUNS))
def test_samples_match_tritons_layout_and_memory_ops(reference, reference_dir):
    """Compiled as Triton's reference run was, add/softmax/layernorm get Triton's blocked
    layout, exactly Triton's global load/store instructions and fast float functions
    (ex2.approx for tl.exp, div.full, sqrt.approx: forms and counts), and no more
    ttg.convert_layout than Triton's final ttgir (0)."""
    import importlib
    sample, signature, constexprs, num_warps = REFERENCE_RUNS[reference]
    module = importlib.import_module(f"sample_kernels.{sample}")
    kernel = next(getattr(module, n) for n in dir(module) if n.endswith("_kernel"))
    compiled = kernel.warmup(*signature, grid=(1,), num_warps=num_warps, **constexprs)
    triton_ttgir = (reference_dir / f"{reference}.ttgir").read_text()
    triton_ptx = (reference_dir / f"{reference}.ptx").read_text()

    assert _first_layout(compiled.asm["ttgir"]) == _first_layout(triton_ttgir)
    assert _memory_op_counts(compiled.asm["ptx"]) == _memory_op_counts(triton_ptx)
    assert _float_function_counts(compiled.asm["ptx"]) == _float_function_counts(triton_ptx)
    assert triton_ttgir.count("ttg.convert_layout") == 0
    assert compiled.asm["ttgir"].count("ttg.convert_layout") == 0


def test_transpose_needs_and_gets_a_conversion():
    """tl.trans of a loaded block changes which thread holds which element: the data moves
    through shared memory once, as in Triton: the tt.trans keeps every element in its thread
    (its result is the operand's layout permuted) and one ttg.convert_layout brings it into
    the store's layout; the PTX stores to and loads from shared memory with a barrier
    between."""
    compiled = transpose_kernel.warmup("*fp32:16", "*fp32:16", "i32", "i32", grid=(1, 1),
                                       BLOCK_M=32, BLOCK_N=32, num_warps=4)
    ttgir = compiled.asm["ttgir"]
    assert "tt.trans" in ttgir
    assert ttgir.count("ttg.convert_layout") == 1
    assert re.search(r"tt\.trans %\S+ \{order", ttgir)          # no shared memory of its own
    ptx = compiled.asm["ptx"]
    stores = [m.start() for m in re.finditer(r"\bst\.shared", ptx)]
    loads = [m.start() for m in re.finditer(r"\bld\.shared", ptx)]
    barriers = [m.start() for m in re.finditer(r"\bbar(?:rier)?\.sync", ptx)]
    assert stores and loads, "no shared-memory round trip in the transpose's PTX"
    assert any(stores[0] < b < loads[-1] for b in barriers), "no barrier between st and ld.shared"


def test_reduction_axis_layouts():
    """A reduction along axis 1 gives a #ttg.slice<{dim = 1 ...}> result; along axis 0 dim 0."""
    for axis in (0, 1):
        case, _ = _case(f"reduce_axis{axis}")
        ttgir = warmup(BY_NAME[f"reduce_axis{axis}"], case).asm["ttgir"]
        assert re.search(rf"#ttg\.slice<\{{dim = {axis}, parent = #blocked\d*\}}>", ttgir), ttgir
