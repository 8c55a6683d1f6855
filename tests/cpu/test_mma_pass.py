"""IR-in / IR-out tests of accelerate-matmul: the ttgir a kernel has right before the pass (built
by the front end and the earlier ttgir passes) goes through the pass alone, and FileCheck says
where it moved the dot onto tensor cores and where it must leave the FMA dot alone."""
from __future__ import annotations

import pytest

from compiler.ir import print_module
from compiler.passes.ttgir_accelerate_matmul import warps_per_tile
from tests.cpu.filecheck import filecheck
from tests.cpu.mma_cases import BEFORE_MMA, WITH_MMA, compile_source_ttgir, tile_dot_source
from tests.cpu.pass_helpers import patterns_fired, run_pipeline

PATTERN = "tt.dot -> mma.sync m16n8k16 (MMA v2)"


def accelerate(element: str, m: int, n: int, k: int, num_warps: int = 4, acc: str = "fp32",
               options: str = ""):
    """(ttgir before, ttgir after accelerate-matmul{options}, patterns fired)."""
    compiled = compile_source_ttgir(tile_dot_source(element, m, n, k, acc), num_warps, BEFORE_MMA)
    before = print_module(compiled.ttgir_module)
    pipeline = f"accelerate-matmul{{{options}}}" if options else "accelerate-matmul"
    after, trace = run_pipeline(before, pipeline, stage="ttgir")
    return before, after, patterns_fired(trace)


@pytest.mark.parametrize("element,ir_type", [("fp16", "f16"), ("bf16", "bf16")])
def test_fires_for_half_precision_128x128x32_with_4_warps(element, ir_type):
    _, after, fired = accelerate(element, 128, 128, 32)
    filecheck(after, f"""
        CHECK: #[[MMA:mma]] = #ttg.nvidia_mma<{{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 8]}}>
        CHECK: #[[A:dot_op]] = #ttg.dot_op<{{opIdx = 0, parent = #[[MMA]], kWidth = 2}}>
        CHECK: #[[B:dot_op1]] = #ttg.dot_op<{{opIdx = 1, parent = #[[MMA]], kWidth = 2}}>
        CHECK: arith.constant dense<0.000000e+00> : tensor<128x128xf32, #[[MMA]]>
        CHECK: ttg.convert_layout %{{{{.*}}}} : tensor<128x32x{ir_type}, #blocked{{{{[0-9]*}}}}> -> tensor<128x32x{ir_type}, #[[A]]>
        CHECK-NEXT: ttg.convert_layout %{{{{.*}}}} : tensor<32x128x{ir_type}, #blocked{{{{[0-9]*}}}}> -> tensor<32x128x{ir_type}, #[[B]]>
        CHECK-NEXT: tt.dot {{{{.*}}}} -> tensor<128x128xf32, #[[MMA]]>
        CHECK: ttg.convert_layout %{{{{.*}}}} : tensor<128x128xf32, #[[MMA]]> -> tensor<128x128xf32, #blocked
        CHECK-NEXT: tt.store
    """)
    assert fired[PATTERN] == 1


@pytest.mark.parametrize("element,m,n,k,num_warps,acc", [
    ("fp32", 128, 128, 32, 4, "fp32"),      # fp32 stays on FMA with mma-v2-tf32-int8 off
    ("i8", 128, 128, 32, 4, "i32"),         # int8 too (test_mma_v2_narrow.py covers it on)
])
def test_does_not_fire(element, m, n, k, num_warps, acc):
    before, after, fired = accelerate(element, m, n, k, num_warps, acc,
                                      options="mma-v2-tf32-int8=false")
    assert PATTERN not in fired
    assert after == before
    assert "nvidia_mma" not in after


B2 = ("#ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], "
      "order = [1, 0]}>")


def hand_written_dot(m: int, n: int, k: int) -> str:
    """A ttgir dot of constant f16 operands (shapes the front end would refuse are fine here)."""
    return f"""
#b2 = {B2}
#dot_op = #ttg.dot_op<{{opIdx = 0, parent = #b2}}>
#dot_op1 = #ttg.dot_op<{{opIdx = 1, parent = #b2}}>
module attributes {{"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32, ttg.target = "cuda:90", "ttg.threads-per-warp" = 32 : i32}} {{
  tt.func public @k(%p: !tt.ptr<f32> {{tt.divisibility = 16 : i32}}) {{
    %a = arith.constant dense<1.000000e+00> : tensor<{m}x{k}xf16, #b2>
    %b = arith.constant dense<1.000000e+00> : tensor<{k}x{n}xf16, #b2>
    %ca = ttg.convert_layout %a : tensor<{m}x{k}xf16, #b2> -> tensor<{m}x{k}xf16, #dot_op>
    %cb = ttg.convert_layout %b : tensor<{k}x{n}xf16, #b2> -> tensor<{k}x{n}xf16, #dot_op1>
    %z = arith.constant dense<0.000000e+00> : tensor<{m}x{n}xf32, #b2>
    %d = tt.dot %ca, %cb, %z, inputPrecision = tf32 : tensor<{m}x{k}xf16, #dot_op> * tensor<{k}x{n}xf16, #dot_op1> -> tensor<{m}x{n}xf32, #b2>
    %ptrs = tt.splat %p : !tt.ptr<f32> -> tensor<{m}x{n}x!tt.ptr<f32>, #b2>
    tt.store %ptrs, %d : tensor<{m}x{n}x!tt.ptr<f32>, #b2>
    tt.return
  }}
}}
"""


@pytest.mark.parametrize("m,n,k", [(32, 32, 8), (32, 32, 24), (48, 32, 16)])
def test_does_not_fire_for_shapes_off_the_instruction_grid(m, n, k):
    """K not a multiple of 16, or M not a multiple of the warps' 32-row tile."""
    after, trace = run_pipeline(hand_written_dot(m, n, k), "accelerate-matmul", stage="ttgir")
    assert PATTERN not in patterns_fired(trace)
    assert "nvidia_mma" not in after


def test_fires_on_hand_written_ttgir():
    after, trace = run_pipeline(hand_written_dot(32, 32, 16), "accelerate-matmul", stage="ttgir")
    assert patterns_fired(trace)[PATTERN] == 1
    filecheck(after, """
        CHECK: #[[MMA:mma]] = #ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 8]}>
        CHECK: tt.dot {{.*}} -> tensor<32x32xf32, #[[MMA]]>
    """)


def test_warps_per_tile_follows_tritons_rule():
    assert warps_per_tile((128, 128), 4) == (2, 2)
    assert warps_per_tile((128, 128), 8) == (2, 4)
    assert warps_per_tile((128, 256), 8) == (2, 4)
    assert warps_per_tile((16, 32), 4) == (1, 4)
    assert warps_per_tile((16, 16), 1) == (1, 1)
    assert warps_per_tile((16, 16), 4) == (1, 4)     # two warps per tile compute copies
    assert warps_per_tile((32, 32), 16) == (2, 8)


def test_whole_pipeline_carries_the_accumulator_in_mma_and_stages_operands_swizzled():
    """Through every ttgir pass (verified after each): the operands are staged through shared
    buffers swizzled for ldmatrix, and the loop carries the accumulator in #mma."""
    from sample_kernels.matmul import matmul_kernel
    from tests.cpu.mma_cases import compile_jit
    import numpy as np
    m = n = k = 256
    args = [np.zeros(m * k, np.float16), np.zeros(k * n, np.float16),
            np.zeros(m * n, np.float16), m, n, k, k, 1, n, 1, n, 1]
    compiled, _ = compile_jit(matmul_kernel, args, {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128,
                                                    "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8},
                              {"num_warps": 4}, WITH_MMA)
    text = print_module(compiled.ttgir_module)
    filecheck(text, """
        CHECK: #[[MMA:mma]] = #ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 8]}>
        CHECK: #[[SH:shared]] = #ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>
        CHECK: arith.constant dense<0.000000e+00> : tensor<128x128xf32, #[[MMA]]>
        CHECK: scf.for {{.*}} -> ({{.*}}, tensor<128x128xf32, #[[MMA]]>)
        CHECK-NOT: ttg.convert_layout
        CHECK: ttg.local_alloc {{.*}} -> !ttg.memdesc<128x64xf16, #[[SH]], #smem>
        CHECK-NOT: ttg.convert_layout
        CHECK: ttg.local_alloc {{.*}} -> !ttg.memdesc<64x128xf16, #[[SH]], #smem>
        CHECK-NOT: ttg.convert_layout
        CHECK: tt.dot {{.*}} -> tensor<128x128xf32, #[[MMA]]>
        CHECK-NOT: ttg.convert_layout
        CHECK: scf.yield
    """)
    assert [r.name for r in compiled.trace.passes_of("ttgir") if r.name == "accelerate-matmul"]


@pytest.mark.parametrize("shape,order,expected", [
    ((128, 64), (1, 0), (8, 1, 8)),       # 128-byte rows: a new phase every row, 8 phases
    ((64, 128), (1, 0), (8, 1, 8)),       # 256-byte rows
    ((32, 32), (1, 0), (8, 2, 4)),        # 64-byte rows: two rows share a phase
    ((16, 32), (0, 1), (8, 4, 2)),        # dim 0 contiguous: 32-byte "rows" along dim 1
    ((64, 8), (1, 0), (8, 8, 1)),         # 16-byte rows: one phase, no swizzling
])
def test_tensor_core_operands_are_staged_swizzled_for_ldmatrix(shape, order, expected):
    from compiler.dialects.ttg import BlockedEncoding, DotOperandEncoding, NvidiaMmaEncoding
    from compiler.passes.ttgir_reduce_data_duplication import shared_layout_for
    src = BlockedEncoding((1, 8) if order == (1, 0) else (8, 1), (4, 8) if order == (1, 0)
                          else (8, 4), (4, 1), order)
    mma = NvidiaMmaEncoding(2, 0, (2, 2), (16, 8))
    shared = shared_layout_for(src, DotOperandEncoding(0, mma, 2), shape, 2)
    assert (shared.vec, shared.per_phase, shared.max_phase) == expected
    assert shared.order == order
    blocked_parent = DotOperandEncoding(0, src)
    assert shared_layout_for(src, blocked_parent, shape, 2).max_phase == 1   # FMA: no swizzle


@pytest.mark.parametrize("op_idx,order,element_bytes,expected", [
    (0, (1, 0), 4, (4, 1, 8)),      # A, K contiguous, 32-bit: ldmatrix rows of 16 bytes
    (1, (0, 1), 4, (4, 1, 8)),      # B, K contiguous
    (1, (1, 0), 4, (8, 1, 4)),      # B, N contiguous, 32-bit: 4 K rows x 8 columns a read
    (0, (0, 1), 4, (8, 1, 4)),      # A, M contiguous
    (1, (1, 0), 2, (8, 1, 8)),      # 16-bit either way: ldmatrix(.trans) rows of 16 bytes
    (1, (1, 0), 1, (8, 1, 16)),     # 8-bit, N contiguous: 16 K rows of one mma step
    (1, (0, 1), 1, (16, 1, 8)),     # 8-bit, K contiguous
])
def test_operands_without_contiguous_k_swizzle_by_the_mma_step(op_idx, order, element_bytes,
                                                                 expected):
    """Triton's rule for an operand whose K is not contiguous: 8-element groups (the lanes'
    groupIDs) over as many phases as one mma step has K rows (16 bytes of K); 32-bit tf32 B
    with 16-byte groups over 8 phases put its 4 K rows on the same 8 banks."""
    from compiler.dialects.ttg import BlockedEncoding, DotOperandEncoding, NvidiaMmaEncoding
    from compiler.passes.ttgir_reduce_data_duplication import shared_layout_for
    src = BlockedEncoding((1, 4) if order == (1, 0) else (4, 1), (4, 8) if order == (1, 0)
                          else (8, 4), (4, 1), order)
    mma = NvidiaMmaEncoding(2, 0, (2, 2), (16, 8))
    row_elements = 256 // element_bytes             # 256-byte rows: a new phase every row
    shared = shared_layout_for(src, DotOperandEncoding(op_idx, mma, 4 // element_bytes or 1),
                               (row_elements, row_elements), element_bytes)
    assert (shared.vec, shared.per_phase, shared.max_phase) == expected
