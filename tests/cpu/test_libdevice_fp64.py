"""Double-precision math links CUDA's libdevice: the lowering calls `__nv_exp`, `__nv_erf`, ...
and the llir stage links libdevice.10.bc in, so the optimized LLVM IR defines no `__nv_`
function any more (inlined, or internal); the PTX computes in f64 (no f32 approximation) and
calls nothing external. The values themselves are checked on the H200 (tests/gpu)."""
from __future__ import annotations

import llvmlite.binding as llvm
import pytest

import compiler as triton
import compiler.language as tl
from compiler.codegen.libdevice import find_libdevice, link_libdevice, needed_functions
from compiler.codegen.ptx import llvm_to_ptx
from compiler.compiler import compile as compile_kernel
from compiler.runtime.specialization import ASTSource

NO_BINARIES = {"build_cubin": False, "build_sass": False}
needs_libdevice = pytest.mark.skipif(find_libdevice() is None, reason="no libdevice.10.bc")


@triton.jit
def erf_exp_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.math.erf(x) + tl.exp(x) + tl.log2(x) + tl.cos(x))


def _compile(dtype: str, **options):
    src = ASTSource(erf_exp_kernel, {"x_ptr": f"*{dtype}", "out_ptr": f"*{dtype}"},
                    {"BLOCK": 128})
    return compile_kernel(src, options={**NO_BINARIES, **options})


@needs_libdevice
def test_fp64_math_links_libdevice_and_inlines_it():
    kernel = _compile("fp64")
    llir = kernel.asm["llir"]
    assert "@__nv_" not in llir                # linked, inlined, the rest dropped
    ptx = kernel.asm["ptx"]
    assert ".extern" not in ptx          # calls left (cos's slow path) are to defined .funcs
    assert ".f64" in ptx and "ex2.approx.f32" not in ptx


def test_fp32_math_does_not_link_libdevice():
    kernel = _compile("fp32")
    assert "@__nv_" not in kernel.asm["llir"] and "ex2.approx" in kernel.asm["ptx"]


@needs_libdevice
def test_ptx_stage_links_when_the_llir_pipeline_does_not_optimize():
    kernel = _compile("fp64", pipelines={"llir": "convert-tritongpu-to-llvm"})
    assert "@\"__nv_erf\"(double" in kernel.asm["llir"]     # llvmlite quotes the name
    assert ".extern" not in kernel.asm["ptx"]                 # defined, not left to ptxas


@needs_libdevice
def test_link_libdevice_only_when_declared():
    plain = llvm.parse_assembly('target triple = "nvptx64-nvidia-cuda"\n'
                                'define void @k() {\n  ret void\n}\n')
    assert not link_libdevice(plain) and len(list(plain.functions)) == 1
    calls = llvm.parse_assembly(
        'target triple = "nvptx64-nvidia-cuda"\n'
        'declare double @__nv_sin(double)\n'
        'define double @k(double %x) {\n  %y = call double @__nv_sin(double %x)\n'
        '  ret double %y\n}\n')
    assert needed_functions(calls) == ["__nv_sin"]
    assert link_libdevice(calls)
    linked = {f.name: f for f in calls.functions}
    assert not linked["__nv_sin"].is_declaration and linked["__nv_sin"].linkage.name == "internal"
    assert ".extern" not in llvm_to_ptx(str(calls))
