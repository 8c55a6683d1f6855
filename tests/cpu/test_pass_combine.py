"""combine: addptr chains, select of equal operands, dot + add into the accumulator, and a
broadcast multiply summed over its middle axis as a tt.dot."""
import numpy as np
import pytest

import compiler as triton
import compiler.language as tl
from tests.cpu.pass_helpers import check_pass, kernel, patterns_fired

DOT_ARGS = "%a: !tt.ptr<f16>, %b: !tt.ptr<f16>, %c: !tt.ptr<f32>"
DOT_HEADER = """
%pa = tt.splat %a : !tt.ptr<f16> -> tensor<16x16x!tt.ptr<f16>>
%pb = tt.splat %b : !tt.ptr<f16> -> tensor<16x16x!tt.ptr<f16>>
%pc = tt.splat %c : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
%x = tt.load %pa : tensor<16x16x!tt.ptr<f16>>
%y = tt.load %pb : tensor<16x16x!tt.ptr<f16>>
%d = tt.load %pc : tensor<16x16x!tt.ptr<f32>>
"""


def test_addptr_chain_becomes_one_addptr():
    ir = kernel("""
        %ps = tt.splat %p : !tt.ptr<f32> -> tensor<4x!tt.ptr<f32>>
        %o1 = tt.make_range {end = 4 : i32, start = 0 : i32} : tensor<4xi32>
        %o2 = tt.splat %n : i32 -> tensor<4xi32>
        %q1 = tt.addptr %ps, %o1 : tensor<4x!tt.ptr<f32>>, tensor<4xi32>
        %q2 = tt.addptr %q1, %o2 : tensor<4x!tt.ptr<f32>>, tensor<4xi32>
        %v = tt.load %q2 : tensor<4x!tt.ptr<f32>>
        tt.store %q2, %v : tensor<4x!tt.ptr<f32>>
    """)
    trace = check_pass(ir, "combine", """
        CHECK: [[SUM:%[0-9]+]] = arith.addi %o1, %o2
        CHECK-NEXT: [[PTR:%[0-9]+]] = tt.addptr %ps, [[SUM]]
        CHECK-NEXT: tt.load [[PTR]]
        CHECK-NOT: tt.addptr
    """)
    assert patterns_fired(trace)["combine-addptr-chain"] == 1


def test_addptr_chain_with_different_offset_types_stays():
    ir = kernel("""
        %ps = tt.splat %p : !tt.ptr<f32> -> tensor<4x!tt.ptr<f32>>
        %o1 = tt.make_range {end = 4 : i32, start = 0 : i32} : tensor<4xi32>
        %o2 = arith.extsi %o1 : tensor<4xi32> to tensor<4xi64>
        %q1 = tt.addptr %ps, %o1 : tensor<4x!tt.ptr<f32>>, tensor<4xi32>
        %q2 = tt.addptr %q1, %o2 : tensor<4x!tt.ptr<f32>>, tensor<4xi64>
        %v = tt.load %q2 : tensor<4x!tt.ptr<f32>>
        tt.store %q2, %v : tensor<4x!tt.ptr<f32>>
    """)
    check_pass(ir, "combine", "CHECK: %q1 = tt.addptr %ps, %o1\nCHECK: %q2 = tt.addptr %q1, %o2")


def test_select_of_equal_operands():
    ir = kernel("""
        %c0 = arith.constant 0 : i32
        %cond = arith.cmpi sgt, %n, %c0 : i32
        %s = arith.select %cond, %n, %n : i1, i32
        %ps = tt.splat %p : !tt.ptr<f32> -> tensor<4x!tt.ptr<f32>>
        %t = tt.splat %s : i32 -> tensor<4xi32>
        %q = tt.addptr %ps, %t : tensor<4x!tt.ptr<f32>>, tensor<4xi32>
        %v = tt.load %q : tensor<4x!tt.ptr<f32>>
        tt.store %q, %v : tensor<4x!tt.ptr<f32>>
    """)
    check_pass(ir, "combine", "CHECK-NOT: arith.select\nCHECK: tt.splat %n : i32")


def test_dot_plus_add_folds_into_accumulator():
    ir = kernel(DOT_HEADER + """
        %zero = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
        %m = tt.dot %x, %y, %zero, inputPrecision = tf32 : tensor<16x16xf16> * tensor<16x16xf16> -> tensor<16x16xf32>
        %s = arith.addf %d, %m : tensor<16x16xf32>
        tt.store %pc, %s : tensor<16x16x!tt.ptr<f32>>
    """, args=DOT_ARGS)
    check_pass(ir, "combine", """
        CHECK: [[R:%[0-9]+]] = tt.dot %x, %y, %d, inputPrecision = tf32
        CHECK-NOT: arith.addf
        CHECK: tt.store %pc, [[R]]
    """)


def test_dot_with_nonzero_accumulator_or_other_users_stays():
    ir = kernel(DOT_HEADER + """
        %zero = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
        %m = tt.dot %x, %y, %d : tensor<16x16xf16> * tensor<16x16xf16> -> tensor<16x16xf32>
        %s = arith.addf %d, %m : tensor<16x16xf32>
        %m2 = tt.dot %x, %y, %zero : tensor<16x16xf16> * tensor<16x16xf16> -> tensor<16x16xf32>
        %s2 = arith.addf %s, %m2 : tensor<16x16xf32>
        %s3 = arith.addf %s2, %m2 : tensor<16x16xf32>
        tt.store %pc, %s3 : tensor<16x16x!tt.ptr<f32>>
    """, args=DOT_ARGS)
    check_pass(ir, "combine", """
        CHECK: %m = tt.dot %x, %y, %d
        CHECK: %s = arith.addf %d, %m
        CHECK: %m2 = tt.dot %x, %y, %zero
        CHECK: %s2 = arith.addf %s, %m2
    """)


MUL_SUM_ARGS = "%a: !tt.ptr<f32>, %b: !tt.ptr<f32>, %c: !tt.ptr<f32>"


def _mul_sum(m=32, k=16, n=32, axis=1, combiner="arith.addf", swap=False, half=False):
    """sum(x[:, :, None] * y[None, :, :], axis) + d as the front end emits it, on f32 loads
    (`half`: truncated to f16 first, the sum extended back)."""
    t = "f16" if half else "f32"
    x2, y2 = f"{m}x{k}", f"{k}x{n}"
    x3, y3, p3 = f"{m}x{k}x1x{t}", f"1x{k}x{n}x{t}", f"{m}x{k}x{n}x{t}"
    o = "x".join(str(d) for i, d in enumerate((m, k, n)) if i != axis)
    if half:
        casts = f"""
        %x = arith.truncf %xl : tensor<{x2}xf32> to tensor<{x2}xf16>
        %y = arith.truncf %yl : tensor<{y2}xf32> to tensor<{y2}xf16>"""
        widen = f"%w = arith.extf %s : tensor<{o}xf16> to tensor<{o}xf32>"
    else:
        casts = """
        %x = arith.addf %xl, %xl : tensor<{x2}xf32>
        %y = arith.addf %yl, %yl : tensor<{y2}xf32>""".format(x2=x2, y2=y2)
        widen = f"%w = arith.addf %s, %s : tensor<{o}xf32>"
    mul = "%yb, %xb" if swap else "%xb, %yb"
    return kernel(f"""
        %pa = tt.splat %a : !tt.ptr<f32> -> tensor<{x2}x!tt.ptr<f32>>
        %pb = tt.splat %b : !tt.ptr<f32> -> tensor<{y2}x!tt.ptr<f32>>
        %pc = tt.splat %c : !tt.ptr<f32> -> tensor<{o}x!tt.ptr<f32>>
        %xl = tt.load %pa : tensor<{x2}x!tt.ptr<f32>>
        %yl = tt.load %pb : tensor<{y2}x!tt.ptr<f32>>{casts}
        %xe = tt.expand_dims %x {{axis = 2 : i32}} : tensor<{x2}x{t}> -> tensor<{x3}>
        %xb = tt.broadcast %xe : tensor<{x3}> -> tensor<{p3}>
        %ye = tt.expand_dims %y {{axis = 0 : i32}} : tensor<{y2}x{t}> -> tensor<{y3}>
        %yb = tt.broadcast %ye : tensor<{y3}> -> tensor<{p3}>
        %prod = arith.mulf {mul} : tensor<{p3}>
        %s = "tt.reduce"(%prod) <{{axis = {axis} : i32}}> ({{
        ^bb0(%l: {t}, %r: {t}):
          %t = {combiner} %l, %r : {t}
          tt.reduce.return %t : {t}
        }}) : (tensor<{p3}>) -> tensor<{o}x{t}>
        {widen}
        %d = tt.load %pc : tensor<{o}x!tt.ptr<f32>>
        %acc = arith.addf %d, %w : tensor<{o}xf32>
        tt.store %pc, %acc : tensor<{o}x!tt.ptr<f32>>
    """, args=MUL_SUM_ARGS)


def test_broadcast_multiply_summed_over_k_becomes_an_ieee_dot():
    trace = check_pass(_mul_sum(), "combine", """
        CHECK: %x = arith.addf %xl, %xl
        CHECK: %y = arith.addf %yl, %yl
        CHECK: [[Z:%[0-9a-z_]+]] = arith.constant dense<0.000000e+00> : tensor<32x32xf32>
        CHECK: [[R:%[0-9a-z_]+]] = tt.dot %x, %y, [[Z]], inputPrecision = ieee : tensor<32x16xf32> * tensor<16x32xf32> -> tensor<32x32xf32>
        CHECK-NOT: tt.reduce
        CHECK-NOT: arith.mulf
        CHECK: %w = arith.addf [[R]], [[R]]
    """)
    assert patterns_fired(trace)["combine-broadcast-mul-sum"] == 1


def test_an_add_after_the_sum_becomes_the_dots_accumulator():
    ir = _mul_sum().replace("%w = arith.addf %s, %s : tensor<32x32xf32>", "") \
        .replace("arith.addf %d, %w", "arith.addf %d, %s")
    trace = check_pass(ir, "combine", """
        CHECK: %d = tt.load %pc
        CHECK: [[R:%[0-9a-z_]+]] = tt.dot %x, %y, %d, inputPrecision = ieee
        CHECK-NOT: arith.addf %d
        CHECK: tt.store %pc, [[R]]
    """)
    assert patterns_fired(trace)["combine-dot-add"] == 1


def test_operands_of_the_multiply_in_either_order():
    check_pass(_mul_sum(swap=True), "combine", "CHECK: tt.dot %x, %y, {{.*}}inputPrecision = ieee")


@pytest.mark.parametrize("kw", [
    dict(m=8), dict(n=8), dict(k=8),           # below 16x16 (M, N) or tl.dot's K of 16
    dict(combiner="arith.maxnumf"),           # not a sum
])
def test_multiply_sums_that_are_not_dots_stay(kw):
    check_pass(_mul_sum(**kw), "combine", "CHECK-NOT: tt.dot\nCHECK: tt.reduce")


@pytest.mark.parametrize("axis", [0, 2])
def test_sums_over_another_axis_stay(axis):
    check_pass(_mul_sum(axis=axis), "combine", "CHECK-NOT: tt.dot\nCHECK: tt.reduce")


def test_half_precision_sums_stay():
    check_pass(_mul_sum(half=True), "combine", "CHECK-NOT: tt.dot\nCHECK: tt.reduce")


@triton.jit
def matmul_by_sum(X, Y, Z, M: tl.constexpr, K: tl.constexpr, N: tl.constexpr):
    """Z = X @ Y for one (M, K) x (K, N) tile, spelled as a broadcast multiply summed over K."""
    rm = tl.arange(0, M)
    rk = tl.arange(0, K)
    rn = tl.arange(0, N)
    x = tl.load(X + rm[:, None] * K + rk[None, :])
    y = tl.load(Y + rk[:, None] * N + rn[None, :])
    z = tl.sum(x[:, :, None] * y[None, :, :], axis=1)
    tl.store(Z + rm[:, None] * N + rn[None, :], z)


def mul_sum_case(m=32, k=16, n=32, seed=3):
    """Random f32 operands of matmul_by_sum and their float64 product."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, k)).astype(np.float32)
    y = rng.standard_normal((k, n)).astype(np.float32)
    return x, y, x.astype(np.float64) @ y.astype(np.float64)


def test_a_kernel_summing_a_broadcast_product_compiles_to_a_dot_that_computes_it():
    """Through the jit: the compiled ttir holds the dot, and that ttir, run by the
    interpreter, computes the product numpy computes."""
    from compiler.runtime.interpreter import interpret

    compiled = matmul_by_sum.warmup("*fp32", "*fp32", "*fp32", 32, 16, 32, grid=(1,))
    assert "tt.dot" in compiled.asm["ttir"] and "tt.reduce" not in compiled.asm["ttir"]
    x, y, ref = mul_sum_case()
    z = np.zeros((32, 32), np.float32)
    interpret(compiled.ttir_module, (1, 1, 1), [x, y, z], kernel_name=compiled.name)
    np.testing.assert_allclose(z, ref, rtol=1e-5, atol=1e-5)
