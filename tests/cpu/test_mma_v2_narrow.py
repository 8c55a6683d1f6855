"""tf32 (mma.sync m16n8k8) and int8 (m16n8k32) dots on MMA v2, behind the `mma_v2_tf32_int8`
option (TILE_MMA_V2_TF32_INT8, knobs.nvidia.mma_v2_tf32_int8, on by default since the H200
verified it: tests/cpu/test_compile_options.py): accelerate-matmul's choice (FileCheck), the
operand and accumulator linear layouts against the PTX ISA's fragment tables (written out
here on their own), PTX that ptxas assembles for the shapes of Triton's test_dot that wgmma
cannot take, and the values on the SIMT evaluator (tests/cpu/simt.py, whose m16n8k8/k32
follow the same ISA tables)."""
from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

import compiler as triton
import compiler.language as tl
from compiler.analysis import layouts
from compiler.analysis.layout_to_linear import to_linear_layout
from compiler.dialects.ttg import DotOperandEncoding, NvidiaMmaEncoding
from compiler.ir import print_module
from tests.cpu.filecheck import filecheck
from tests.cpu.mma_cases import (BEFORE_MMA, compile_jit, compile_source_ttgir, run_on_simt,
                                 tile_dot_source)
from tests.cpu.pass_helpers import patterns_fired, run_pipeline

needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not on the PATH")

TF32_MMA = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
INT8_MMA = "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32"
ON = {"mma_v2_tf32_int8": True}


# ---- accelerate-matmul ---------------------------------------------------------------------
def accelerate(element: str, m: int, n: int, k: int, num_warps: int, options: str,
               acc: str = "fp32", precision: str | None = None):
    """(ttgir before, after accelerate-matmul{options}, patterns fired) of the tile dot."""
    source = tile_dot_source(element, m, n, k, acc)
    compiled = compile_source_ttgir(source, num_warps, BEFORE_MMA)
    before = print_module(compiled.ttgir_module)
    if precision is not None:
        before = before.replace("inputPrecision = tf32", f"inputPrecision = {precision}")
    after, trace = run_pipeline(before, f"accelerate-matmul{{{options}}}", stage="ttgir")
    return before, after, patterns_fired(trace)


@pytest.mark.parametrize("arch,num_warps,warps", [(80, 4, "[2, 2]"), (90, 2, "[1, 2]")])
def test_tf32_dot_gets_kwidth_1_operands_of_an_mma_v2_accumulator(arch, num_warps, warps):
    _, after, fired = accelerate("fp32", 32, 32, 32, num_warps,
                                 f"compute-capability={arch} mma-v2-tf32-int8=true")
    filecheck(after, f"""
        CHECK: #[[MMA:mma]] = #ttg.nvidia_mma<{{versionMajor = 2, versionMinor = 0, warpsPerCTA = {warps}, instrShape = [16, 8]}}>
        CHECK: #[[A:dot_op]] = #ttg.dot_op<{{opIdx = 0, parent = #[[MMA]], kWidth = 1}}>
        CHECK: #[[B:dot_op1]] = #ttg.dot_op<{{opIdx = 1, parent = #[[MMA]], kWidth = 1}}>
        CHECK: ttg.convert_layout %{{{{.*}}}} -> tensor<32x32xf32, #[[A]]>
        CHECK-NEXT: ttg.convert_layout %{{{{.*}}}} -> tensor<32x32xf32, #[[B]]>
        CHECK-NEXT: tt.dot {{{{.*}}}} -> tensor<32x32xf32, #[[MMA]]>
    """)
    assert fired["tt.dot -> mma.sync m16n8k8 (MMA v2)"] == 1


def test_int8_dot_gets_kwidth_4_operands_and_an_i32_accumulator():
    _, after, fired = accelerate("i8", 64, 32, 64, 2,
                                 "compute-capability=90 mma-v2-tf32-int8=true", acc="i32")
    filecheck(after, """
        CHECK: #[[MMA:mma]] = #ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 1], instrShape = [16, 8]}>
        CHECK: #[[A:dot_op]] = #ttg.dot_op<{opIdx = 0, parent = #[[MMA]], kWidth = 4}>
        CHECK: #[[B:dot_op1]] = #ttg.dot_op<{opIdx = 1, parent = #[[MMA]], kWidth = 4}>
        CHECK: arith.constant dense<0> : tensor<64x32xi32, #[[MMA]]>
        CHECK: tt.dot {{.*}} : tensor<64x64xi8, #[[A]]> * tensor<64x32xi8, #[[B]]> -> tensor<64x32xi32, #[[MMA]]>
    """)
    assert fired["tt.dot -> mma.sync m16n8k32 (MMA v2)"] == 1


@pytest.mark.parametrize("arch", [80, 90])
def test_tf32x3_becomes_three_tf32_dots_on_mma_v2(arch):
    _, after, fired = accelerate("fp32", 32, 32, 32, 2,
                                 f"compute-capability={arch} mma-v2-tf32-int8=true",
                                 precision="tf32x3")
    assert fired["tt.dot tf32x3 -> 3 tf32 dots"] == 1
    assert fired["tt.dot -> mma.sync m16n8k8 (MMA v2)"] == 3
    dots = [line for line in after.splitlines() if "tt.dot " in line]
    assert len(dots) == 3 and all("inputPrecision = tf32 " in d and "#mma" in d for d in dots)


@pytest.mark.parametrize("element,k,acc,options,precision", [
    ("fp32", 32, "fp32", "compute-capability=90 mma-v2-tf32-int8=false", None),  # option off
    ("i8", 64, "i32", "compute-capability=90 mma-v2-tf32-int8=false", None),
    ("fp32", 32, "fp32", "compute-capability=80 mma-v2-tf32-int8=false", "tf32x3"),  # no split
    ("fp32", 32, "fp32", "compute-capability=90 mma-v2-tf32-int8=true", "ieee"),
    ("fp32", 32, "fp32", "compute-capability=75 mma-v2-tf32-int8=true", None),  # no tf32 mma
])
def test_stays_on_fma(element, k, acc, options, precision):
    before, after, fired = accelerate(element, 32, 32, k, 2, options, acc, precision)
    assert after == before and "nvidia_mma" not in after
    assert not any("mma.sync" in p or "tf32x3" in p for p in fired)


# ---- layouts against the PTX ISA -------------------------------------------------------------
# PTX ISA "Matrix Fragments for mma.m16n8k8" (.tf32) and "mma.m16n8k32" (.s8): groupID
# g = lane >> 2, threadID_in_group t = lane % 4.
def _isa_tf32_a(g, t):
    # a0: (g, t), a1: (g + 8, t), a2: (g, t + 4), a3: (g + 8, t + 4)
    return [(g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4)]


def _isa_tf32_b(g, t):
    # b0: (row t, col g), b1: (row t + 4, col g)
    return [(t, g), (t + 4, g)]


def _isa_s8_a(g, t):
    # a0..a3: row g, cols 4t + i; a4..a7: row g + 8; a8..a11: row g, cols 4t + 16 + i;
    # a12..a15: row g + 8, cols 4t + 16 + i
    rows_cols = [(g, 0), (g + 8, 0), (g, 16), (g + 8, 16)]
    return [(row, 4 * t + col + i) for row, col in rows_cols for i in range(4)]


def _isa_s8_b(g, t):
    # b0..b3: rows 4t + i, col g; b4..b7: rows 4t + 16 + i, col g
    return [(4 * t + i, g) for i in range(4)] + [(4 * t + 16 + i, g) for i in range(4)]


def _isa_s32_c(g, t):
    # c0, c1: (g, 2t + i); c2, c3: (g + 8, 2t + i)
    return [(g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1)]


MMA1 = NvidiaMmaEncoding(2, 0, (1, 1), (16, 8))


def _registers(layout, shape, warp, lane):
    ll = to_linear_layout(layout, shape)
    return [ll.apply_tuple(register=r, lane=lane, warp=warp)
            for r in range(ll.in_dim_size("register"))]


@pytest.mark.parametrize("layout,shape,isa", [
    (DotOperandEncoding(0, MMA1, 1), (16, 8), _isa_tf32_a),
    (DotOperandEncoding(1, MMA1, 1), (8, 8), _isa_tf32_b),
    (DotOperandEncoding(0, MMA1, 4), (16, 32), _isa_s8_a),
    (DotOperandEncoding(1, MMA1, 4), (32, 8), _isa_s8_b),
    (MMA1, (16, 8), _isa_s32_c),
], ids=["tf32-A", "tf32-B", "s8-A", "s8-B", "s32-C"])
def test_one_instruction_follows_the_isa_fragment(layout, shape, isa):
    for lane in range(32):
        assert _registers(layout, shape, 0, lane) == isa(lane >> 2, lane % 4), lane


@pytest.mark.parametrize("k_width", [1, 4])
@pytest.mark.parametrize("warps", [(1, 2), (2, 1), (2, 2)])
def test_repetitions_and_the_slot_model_agree_with_the_linear_layout(k_width, warps):
    """Over several instruction tiles and warps: per K step the ISA fragment moved by the tile's
    origin (K steps of 8 kWidth), warps along K broadcast; the slot model (`mma_slot_offset`,
    which the lowering's K steps follow) names the same elements."""
    mma = NvidiaMmaEncoding(2, 0, warps, (16, 8))
    k = 2 * 8 * k_width
    isa = {1: (_isa_tf32_a, _isa_tf32_b), 4: (_isa_s8_a, _isa_s8_b)}[k_width]
    for op_idx, shape in ((0, (64, k)), (1, (k, 32))):
        layout = DotOperandEncoding(op_idx, mma, k_width)
        reps = layouts.mma_repetitions(layout, shape)
        strides = layouts.mma_tile_strides(layout)
        slots = layouts.mma_register_slots(layout, shape)
        for warp in range(warps[0] * warps[1]):
            wm, wn = layouts.mma_warp_coords(mma, warp)
            for lane in range(32):
                g, t = lane >> 2, lane % 4
                got = _registers(layout, shape, warp, lane)
                want = []
                for outer in range(reps[0 if op_idx == 0 else 1]):
                    for rk in range(reps[1 if op_idx == 0 else 0]):
                        if op_idx == 0:
                            origin = (outer * strides[0] + 16 * wm, rk * strides[1])
                        else:
                            origin = (rk * strides[0], outer * strides[1] + 8 * wn)
                        want += [(origin[0] + r, origin[1] + c) for r, c in isa[op_idx](g, t)]
                assert got == want, (op_idx, warp, lane)
                base = (g + 16 * wm, k_width * t) if op_idx == 0 else (k_width * t, g + 8 * wn)
                model = [tuple(b + o for b, o in zip(base, layouts.mma_slot_offset(layout, s)))
                         for s in slots]
                assert model == want, (op_idx, warp, lane)


def test_describe_names_the_instruction_of_the_operand():
    assert "m16n8k8" in layouts.describe(DotOperandEncoding(0, MMA1, 1), (16, 8))
    assert "m16n8k32" in layouts.describe(DotOperandEncoding(1, MMA1, 4), (32, 8))


# ---- PTX and ptxas -------------------------------------------------------------------------
@triton.jit
def strided_dot_kernel(x_ptr, sxm, sxk, y_ptr, syk, syn, z_ptr, M: tl.constexpr,
                       N: tl.constexpr, K: tl.constexpr, PRECISION: tl.constexpr):
    """Z = X @ Y for one tile, X and Y read through strides (row- or column-major)."""
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    x = tl.load(x_ptr + rm[:, None] * sxm + rk[None, :] * sxk)
    y = tl.load(y_ptr + rk[:, None] * syk + rn[None, :] * syn)
    z = tl.dot(x, y, input_precision=PRECISION)
    tl.store(z_ptr + rm[:, None] * N + rn[None, :], z)


def _operands(element: str, m: int, n: int, k: int, col_a: bool, col_b: bool, seed: int = 0):
    """(x, y, z, runtime strides) with x (m, k), y (k, n) stored column-major when asked."""
    rng = np.random.default_rng(seed)
    if element == "int8":
        draw = lambda shape: rng.integers(-128, 128, shape).astype(np.int8)  # noqa: E731
        z = np.zeros((m, n), np.int32)
    else:
        draw = lambda shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
        z = np.zeros((m, n), np.float32)
    x = draw((k, m)).T if col_a else draw((m, k))
    y = draw((n, k)).T if col_b else draw((k, n))
    strides = [s // x.itemsize for s in x.strides] + [s // y.itemsize for s in y.strides]
    return x, y, z, strides


def compile_strided(element: str, m: int, n: int, k: int, num_warps: int, precision: str,
                    col_a: bool = False, col_b: bool = False, stop_after: str | None = None,
                    options: dict | None = None):
    """Compile the strided dot for sm_90 (with the option on unless `options` says otherwise);
    returns (compiled, runtime args, (x, y, z))."""
    x, y, z, (sxm, sxk, syk, syn) = _operands(element, m, n, k, col_a, col_b)
    # the arrays in memory order: a column-major operand is its transpose, row-major
    xa = np.ascontiguousarray(x.T if col_a else x).reshape(-1)
    ya = np.ascontiguousarray(y.T if col_b else y).reshape(-1)
    compiled, args = compile_jit(strided_dot_kernel, [xa, sxm, sxk, ya, syk, syn, z],
                                 {"M": m, "N": n, "K": k, "PRECISION": precision},
                                 {"num_warps": num_warps}, None, stop_after=stop_after,
                                 target={"arch": 90, **(ON if options is None else options)})
    return compiled, args, (x, y, z)


# Triton's test_dot shapes that wgmma cannot take (2 warps, or M below 64 per warp group)
TF32_SHAPES = [(128, 128, 64, 2), (32, 128, 64, 2), (32, 128, 64, 4), (32, 32, 128, 4),
               (64, 128, 128, 2), (16, 16, 16, 4), (32, 32, 32, 4), (32, 32, 32, 2)]
INT8_SHAPES = [(128, 128, 64, 2), (32, 128, 64, 2), (32, 128, 64, 4), (32, 32, 128, 4),
               (64, 128, 128, 2)]
TF32_PATTERN = r"[mma|wgmma.mma_async].sync.aligned.m\d+n\d+k8(?:.row.col)?.f32.tf32.tf32"


def _check_cubin(compiled, m: int, n: int, num_warps: int, precision: str = "tf32") -> None:
    """ptxas assembled it; no spills where the accumulator takes at most 64 registers a thread
    (128x128 at 2 warps holds 256 and must spill, in Triton too; the 128-register 64x128 ones
    spill a little, tf32x3 a lot: the three dots' operand loads are scheduled early). tf32x3
    at 32x128, 2 warps, sits at the limit: 253 registers with A's scalar loads, 255 and a
    16-byte spill with its ldmatrix.x4 (the tf32_ldmatrix option), so 16 bytes are allowed
    there."""
    info = compiled.trace.cubin_info
    assert info["registers"] > 0, info["report"]
    if m * n // (32 * num_warps) <= 64:
        assert info["spill_stores"] <= (16 if precision == "tf32x3" else 0), info["report"]


@needs_ptxas
@pytest.mark.parametrize("precision", ["tf32", "tf32x3"])
@pytest.mark.parametrize("m,n,k,num_warps", TF32_SHAPES)
def test_tf32_ptx_has_m16n8k8_and_assembles(m, n, k, num_warps, precision):
    compiled, _, _ = compile_strided("float32", m, n, k, num_warps, precision)
    ptx = compiled.asm["ptx"]
    assert TF32_MMA in ptx and re.search(TF32_PATTERN, ptx) and "wgmma" not in ptx
    _check_cubin(compiled, m, n, num_warps, precision)
    if (m * n) // (num_warps * 32) >= 4:
        assert "ld.global.v4" in ptx and "st.global.v4" in ptx


@needs_ptxas
@pytest.mark.parametrize("m,n,k,num_warps", INT8_SHAPES)
def test_int8_ptx_has_m16n8k32_satfinite_and_assembles(m, n, k, num_warps):
    compiled, _, _ = compile_strided("int8", m, n, k, num_warps, "tf32")
    ptx = compiled.asm["ptx"]
    assert INT8_MMA in ptx and "wgmma" not in ptx
    _check_cubin(compiled, m, n, num_warps)
    assert "ld.global.v4" in ptx and "st.global.v4" in ptx


@needs_ptxas
def test_option_off_keeps_the_fma_ptx_and_the_default_is_on():
    off = {"mma_v2_tf32_int8": False}
    compiled, _, _ = compile_strided("float32", 32, 32, 32, 2, "tf32", options=off)
    assert "mma.sync" not in compiled.asm["ptx"]
    compiled, _, _ = compile_strided("int8", 32, 32, 64, 2, "tf32", options=off)
    assert "mma.sync" not in compiled.asm["ptx"]
    compiled, _, _ = compile_strided("float32", 32, 32, 32, 2, "tf32", options={})
    assert TF32_MMA in compiled.asm["ptx"]


# ---- values on the SIMT evaluator ---------------------------------------------------------------
def _tf32(x: np.ndarray) -> np.ndarray:
    return (np.ascontiguousarray(x, np.float32).view(np.uint32) & np.uint32(0xFFFFE000)).view(
        np.float32).astype(np.float64)


@pytest.mark.parametrize("element,precision,m,n,k,num_warps,col_a,col_b", [
    ("float32", "tf32", 32, 32, 32, 2, False, False),
    ("float32", "tf32", 32, 64, 16, 4, True, False),
    ("float32", "tf32", 64, 32, 32, 2, False, True),
    ("float32", "tf32", 16, 16, 16, 4, True, True),
    ("float32", "tf32x3", 32, 32, 32, 2, True, False),
    ("int8", "tf32", 32, 32, 64, 2, False, False),
    ("int8", "tf32", 32, 64, 32, 4, True, True),
    ("int8", "tf32", 64, 32, 64, 2, False, True),
])
def test_values_on_the_simt_evaluator(element, precision, m, n, k, num_warps, col_a, col_b):
    compiled, args, (x, y, z) = compile_strided(element, m, n, k, num_warps, precision,
                                                col_a, col_b, stop_after="ttgir")
    assert "versionMajor = 2" in print_module(compiled.ttgir_module)
    (got,) = run_on_simt(compiled, (1,), args, [args[-1]])
    got = got.reshape(m, n)
    if element == "int8":
        np.testing.assert_array_equal(got, x.astype(np.int64) @ y.astype(np.int64))
        return
    exact = x.astype(np.float64) @ y.astype(np.float64)
    if precision == "tf32":
        # the hardware's tf32 keeps 10 mantissa bits: the products of truncated operands
        np.testing.assert_allclose(got, _tf32(x) @ _tf32(y), rtol=1e-5, atol=1e-5)
        assert np.abs(got - exact).max() > 1e-4     # really tf32, not an fp32 FMA
    else:
        np.testing.assert_allclose(got, exact, rtol=1e-5, atol=1e-5)


# ---- the lowering's guards ------------------------------------------------------------------
@pytest.mark.parametrize("k_width,message", [
    (2, "a f32 operand of mma.sync needs kWidth = 1, not 2"),
    (3, "kWidth = 3 of a tensor-core layout must be a power of two"),
])
def test_a_wrong_kwidth_is_a_located_lowering_error(k_width, message):
    from compiler.codegen.lowering import LoweringError, LoweringOptions, lower_module
    from compiler.ir import parse_module
    compiled, _, _ = compile_strided("float32", 32, 32, 32, 2, "tf32", stop_after="ttgir")
    text = print_module(compiled.ttgir_module).replace("kWidth = 1", f"kWidth = {k_width}")
    with pytest.raises(LoweringError) as err:
        lower_module(parse_module(text, "k.ttgir"), LoweringOptions(ttgir_file="k.ttgir"))
    assert message in str(err.value) and "k.ttgir:" in str(err.value)
