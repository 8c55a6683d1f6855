"""The front end on the four Triton reference kernels (../shared/reference/triton-3.6-h200/
kernels.py): each gives verified ttir whose ops follow Triton's ttir in order, and which prints,
parses and prints back identically."""
from __future__ import annotations

import importlib.util
import sys
import types

import pytest

import compiler.language as tl
from compiler.frontend import generate_ttir
from compiler.ir import parse_module, print_module
from compiler.ir.verifier import verify_module
from tests.conftest import REFERENCE
from tests.cpu.filecheck import filecheck


class _Jit:
    """A stand-in for `triton.jit` that only keeps the function (the front end reads `.fn`)."""

    def __init__(self, fn):
        self.fn = fn


@pytest.fixture(scope="module")
def ref():
    """The reference kernels module, imported with `triton`/`torch` stand-ins (restored after)."""
    path = REFERENCE / "kernels.py"
    if not path.is_file():
        pytest.skip("../shared/reference is not present")
    triton = types.ModuleType("triton")
    triton.jit, triton.language, triton.cdiv = _Jit, tl, tl.cdiv
    fakes = {"triton": triton, "triton.language": tl, "torch": types.ModuleType("torch")}
    saved = {k: sys.modules.get(k) for k in fakes}
    sys.modules.update(fakes)
    try:
        spec = importlib.util.spec_from_file_location("ref_kernels_for_frontend", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    return module


def compile_add(ref):
    return generate_ttir(ref.add_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32",
                                          "n": "i32"}, {"BLOCK": 1024},
                         {"divisibility_16": ["x_ptr", "y_ptr", "out_ptr", "n"]})


def compile_softmax(ref):
    return generate_ttir(ref.softmax_kernel, {"out_ptr": "*fp32", "in_ptr": "*fp32",
                                              "in_stride": "i32", "out_stride": "i32",
                                              "n_cols": "i32"}, {"BLOCK": 4096})


def compile_layernorm(ref):
    return generate_ttir(ref.layernorm_kernel, dict(X="*fp16", Y="*fp16", W="*fp16", B="*fp16",
                                                    stride="i32", N="i32", eps="fp32"),
                         {"BLOCK": 8192})


def compile_matmul(ref):
    sig = dict(a_ptr="*fp16", b_ptr="*fp16", c_ptr="*fp16", M="i32", N="i32", K="i32", sam="i32",
               sbk="i32", scm="i32")
    return generate_ttir(ref.matmul_kernel, sig, dict(sak=1, sbn=1, scn=1, BM=128, BN=256, BK=64,
                                                      GROUP_M=8))


COMPILERS = {"add": compile_add, "softmax": compile_softmax, "layernorm": compile_layernorm,
             "matmul": compile_matmul}


@pytest.mark.parametrize("name", sorted(COMPILERS))
def test_reference_kernel_verifies_and_round_trips(ref, name):
    module = COMPILERS[name](ref)
    verify_module(module)
    text = print_module(module)
    again = parse_module(text)
    verify_module(again)
    assert print_module(again) == text


def test_add_matches_triton_order(ref):
    text = print_module(compile_add(ref))
    filecheck(text, """
        CHECK: tt.func public @add_kernel(%x_ptr: !tt.ptr<f32> {tt.divisibility = 16 : i32} loc(
        CHECK-SAME: %n: i32 {tt.divisibility = 16 : i32}
        CHECK-SAME: attributes {noinline = false}
        CHECK: %pid = tt.get_program_id x : i32
        CHECK: arith.muli %pid, {{%[a-z_0-9]+}} : i32
        CHECK-NEXT: [[R:%offs_[0-9]+]] = tt.make_range {end = 1024 : i32, start = 0 : i32}
        CHECK-NEXT: [[S:%offs_[0-9]+]] = tt.splat
        CHECK-NEXT: [[OFFS:%offs_[0-9]+]] = arith.addi [[S]], [[R]] : tensor<1024xi32>
        CHECK-NEXT: tt.splat %n : i32 -> tensor<1024xi32>
        CHECK-NEXT: [[MASK:%mask_[0-9]+]] = arith.cmpi slt, [[OFFS]]
        CHECK-NEXT: %x = tt.splat %x_ptr : !tt.ptr<f32> -> tensor<1024x!tt.ptr<f32>>
        CHECK-NEXT: tt.addptr %x, [[OFFS]] : tensor<1024x!tt.ptr<f32>>, tensor<1024xi32>
        CHECK-NEXT: tt.load {{%x_[0-9]+}}, [[MASK]] : tensor<1024x!tt.ptr<f32>>
        CHECK: tt.splat %out_ptr
        CHECK-NEXT: tt.addptr
        CHECK-NEXT: arith.addf
        CHECK-NEXT: tt.store {{.*}}, [[MASK]] : tensor<1024x!tt.ptr<f32>>
        CHECK-NEXT: tt.return
        CHECK: #loc = loc("{{.*}}kernels.py":5:0)
    """)


def test_softmax_matches_triton_order(ref):
    text = print_module(compile_softmax(ref))
    filecheck(text, """
        CHECK: %row = tt.get_program_id x
        CHECK: %offs = tt.make_range {end = 4096 : i32, start = 0 : i32}
        CHECK: arith.muli %row, %in_stride : i32
        CHECK-NEXT: tt.addptr %in_ptr, {{.*}} : !tt.ptr<f32>, i32
        CHECK-NEXT: tt.splat {{.*}} : !tt.ptr<f32> -> tensor<4096x!tt.ptr<f32>>
        CHECK-NEXT: tt.addptr
        CHECK: arith.cmpi slt, %offs
        CHECK-NEXT: arith.constant dense<0xFF800000> : tensor<4096xf32>
        CHECK-NEXT: tt.load
        CHECK-NEXT: "tt.reduce"({{.*}}) <{axis = 0 : i32}> ({
        CHECK-NEXT: ^bb0({{.*}}: f32 loc({{.*}}), {{.*}}: f32 loc(
        CHECK-NEXT: arith.maxnumf
        CHECK-NEXT: tt.reduce.return
        CHECK-NEXT: }) : (tensor<4096xf32>) -> f32
        CHECK-NEXT: tt.splat {{.*}} : f32 -> tensor<4096xf32>
        CHECK-NEXT: arith.subf
        CHECK-NEXT: %num = math.exp
        CHECK-NEXT: %y = "tt.reduce"(%num)
        CHECK: arith.addf
        CHECK: tt.splat %y : f32 -> tensor<4096xf32>
        CHECK-NEXT: arith.divf %num
        CHECK: tt.store
    """)


def test_layernorm_matches_triton_order(ref):
    text = print_module(compile_layernorm(ref))
    filecheck(text, """
        CHECK: %eps: f32
        CHECK: arith.constant dense<0.000000e+00> : tensor<8192xf16>
        CHECK-NEXT: tt.load
        CHECK-NEXT: arith.extf {{.*}} : tensor<8192xf16> to tensor<8192xf32>
        CHECK-NEXT: %mean = "tt.reduce"
        CHECK: arith.sitofp %N : i32 to f32
        CHECK-NEXT: arith.divf
        CHECK: arith.select %mask_0, {{.*}} : tensor<8192xi1>, tensor<8192xf32>
        CHECK: arith.addf {{.*}}, %eps : f32
        CHECK-NEXT: math.sqrt
        CHECK-NEXT: arith.constant 1.000000e+00 : f32
        CHECK-NEXT: arith.divf
        CHECK: arith.truncf {{.*}} : tensor<8192xf32> to tensor<8192xf16>
        CHECK-NEXT: tt.store
    """)


def test_matmul_matches_triton_order(ref):
    text = print_module(compile_matmul(ref))
    filecheck(text, """
        CHECK: tt.func public @matmul_kernel(%a_ptr: !tt.ptr<f16>
        CHECK-NOT: %sak
        CHECK: arith.divsi
        CHECK: arith.minsi
        CHECK: arith.remsi %pid
        CHECK: tt.expand_dims {{.*}} {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
        CHECK-NEXT: tt.splat %sam : i32 -> tensor<128x1xi32>
        CHECK-NEXT: arith.muli
        CHECK-NEXT: tt.splat %a_ptr : !tt.ptr<f16> -> tensor<128x1x!tt.ptr<f16>>
        CHECK-NEXT: tt.addptr
        CHECK: tt.broadcast {{.*}} : tensor<128x1x!tt.ptr<f16>> -> tensor<128x64x!tt.ptr<f16>>
        CHECK: %acc = arith.constant dense<0.000000e+00> : tensor<128x256xf32>
        CHECK: scf.for %k = {{.*}} iter_args(%a_ptrs_{{[0-9]+}} = {{.*}}, %b_ptrs_{{[0-9]+}} = {{.*}}, %acc_{{[0-9]+}} = %acc) -> (tensor<128x64x!tt.ptr<f16>>, tensor<64x256x!tt.ptr<f16>>, tensor<128x256xf32>) : i32 {
        CHECK: tt.load {{.*}} : tensor<128x64x!tt.ptr<f16>>
        CHECK: tt.load {{.*}} : tensor<64x256x!tt.ptr<f16>>
        CHECK-NEXT: tt.dot {{.*}}, inputPrecision = tf32 : tensor<128x64xf16> * tensor<64x256xf16> -> tensor<128x256xf32>
        CHECK: arith.constant dense<64> : tensor<128x64xi32>
        CHECK-NEXT: tt.addptr
        CHECK: scf.yield
        CHECK: arith.truncf {{.*}}#2 : tensor<128x256xf32> to tensor<128x256xf16>
        CHECK: arith.andi {{.*}} : tensor<128x256xi1>
        CHECK-NEXT: tt.store %c_ptrs_{{[0-9]+}}, %c,
    """)
