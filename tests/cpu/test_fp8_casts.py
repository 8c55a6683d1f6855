"""Casts to and from the 8-bit floats lower to PTX's fp8 conversions (an fp8 value is a byte in
LLVM, so fpext/fptrunc on it is LLVM IR that LLVM rejects), ptxas takes them for sm_90, an
older target is a located error, and an fp8 dot whose maxNumImpreciseAcc equals its K adds its
partial accumulator once per dot, as Triton does on Hopper."""
from __future__ import annotations

import re

import pytest

import compiler as triton
import compiler.language as tl
from compiler.codegen.lowering import LoweringError
from compiler.codegen.toolchain import find_tool
from compiler.compiler import compile as compile_source
from compiler.runtime.specialization import ASTSource

needs_ptxas = pytest.mark.skipif(find_tool("ptxas") is None, reason="ptxas is not installed")


@triton.jit
def cast_kernel(x_ptr, z_ptr, SIZE: tl.constexpr):
    offs = tl.arange(0, SIZE)
    tl.store(z_ptr + offs, tl.load(x_ptr + offs).to(z_ptr.dtype.element_ty))


def _cast(src: str, dst: str, size: int = 128, arch: int = 90):
    source = ASTSource(cast_kernel, {"x_ptr": f"*{src}", "z_ptr": f"*{dst}"}, {"SIZE": size},
                       {"divisibility_16": ["x_ptr", "z_ptr"]})
    return compile_source(source, options={"num_warps": 1, "arch": arch})


@needs_ptxas
@pytest.mark.parametrize("src,dst,instruction", [
    ("fp8e5", "fp16", r"cvt\.rn\.f16x2\.e5m2x2"),
    ("fp8e4nv", "fp32", r"cvt\.rn\.f16x2\.e4m3x2"),
    ("fp8e5", "bf16", r"cvt\.rn\.f16x2\.e5m2x2"),
    ("fp32", "fp8e4nv", r"cvt\.rn\.satfinite\.e4m3x2\.f32"),
    ("bf16", "fp8e5", r"cvt\.rn\.satfinite\.e5m2x2\.f32"),
    ("fp16", "fp8e4nv", r"cvt\.rn\.satfinite\.e4m3x2\.f16x2"),
    ("fp64", "fp8e5", r"cvt\.rn\.satfinite\.e5m2x2\.f32"),
    ("fp8e4nv", "fp8e5", r"cvt\.rn\.satfinite\.e5m2x2\.f32"),
    ("int32", "fp8e4nv", r"cvt\.rn\.satfinite\.e4m3x2\.f32"),
    ("fp8e5", "int16", r"cvt\.rn\.f16x2\.e5m2x2"),
])
def test_fp8_casts_use_the_ptx_conversions(src, dst, instruction):
    kernel = _cast(src, dst, size=32 if src == "fp64" else 128)
    ptx = kernel.asm["ptx"]
    assert re.search(instruction, ptx), instruction
    assert kernel.asm.get("cubin")
    # two values per conversion: 128 elements on 32 threads are 4 per thread, 2 conversions
    assert len(re.findall(r"\bcvt\.rn\.(?:satfinite\.)?(?:e4m3x2|e5m2x2|f16x2)", ptx)) >= 1


def test_fp8_casts_before_sm89_are_a_located_error():
    with pytest.raises(LoweringError) as info:
        _cast("fp32", "fp8e5", arch=80)
    message = str(info.value)
    assert "needs sm_89 or newer" in message and "test_fp8_casts.py" in message
    assert "internal error" not in message


@triton.jit
def fp8_dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                   ACC: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    c = tl.dot(a, b, max_num_imprecise_acc=ACC)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


@needs_ptxas
@pytest.mark.parametrize("acc,adds_per_register", [(64, 1), (32, 2)])
def test_fp8_dot_adds_its_partial_accumulator_every_max_num_imprecise_acc(acc,
                                                                         adds_per_register):
    source = ASTSource(fp8_dot_kernel, {"a_ptr": "*fp8e5", "b_ptr": "*fp8e5", "c_ptr": "*fp32"},
                       {"M": 64, "N": 64, "K": 64, "ACC": acc},
                       {"divisibility_16": ["a_ptr", "b_ptr", "c_ptr"]})
    ptx = compile_source(source, options={"num_warps": 4, "arch": 90}).asm["ptx"]
    assert "wgmma.mma_async.sync.aligned" in ptx
    registers = 64 * 64 // (32 * 4)
    assert ptx.count("add.f32") == registers * adds_per_register


@needs_ptxas
@pytest.mark.parametrize("kind", ["fp8e4nv", "fp8e5"])
@pytest.mark.parametrize("shape,warps", [((64, 32, 32), 2), ((32, 64, 32), 2)])
def test_fp8_dot_on_fma_widens_through_the_ptx_conversions(kind, shape, warps):
    """An fp8 dot too small for wgmma (2 warps: Triton's matmul tutorial configs 64x32x32 and
    32x64x32) runs on FMA; its operands were widened with `fpext i8`, LLVM IR that LLVM
    rejects (an internal error on the H200 bench's config sweep)."""
    m, n, k = shape
    source = ASTSource(fp8_dot_kernel,
                       {"a_ptr": f"*{kind}", "b_ptr": f"*{kind}", "c_ptr": "*fp32"},
                       {"M": m, "N": n, "K": k, "ACC": None},
                       {"divisibility_16": ["a_ptr", "b_ptr", "c_ptr"]})
    kernel = compile_source(source, options={"num_warps": warps, "arch": 90})
    ptx = kernel.asm["ptx"]
    assert re.search(r"cvt\.rn\.f16x2\.e[45]m[32]x2", ptx)
    assert "fma.rn.f32" in ptx and kernel.asm.get("cubin")
