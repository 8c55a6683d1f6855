"""The shared-memory bank-conflict model (compiler.analysis.bank_conflicts) and the conversion
plans (compiler.analysis.conversion): the swizzles chosen for the sample kernels' conversions
(compiled for sm_90) and for a matrix of layout pairs are conflict-free for the stores and the
loads; naive buffers are counted as conflicting, so the counter can fail; every plan, simulated
thread by thread on the CPU, hands each destination register its element."""
from __future__ import annotations

import itertools

import pytest

from compiler.analysis.bank_conflicts import (access_conflicts, conversion_conflicts,
                                              layout_conflicts)
from compiler.analysis.conversion import (_xor_of, flat_bases, plan_conversion, reshaped_in_source, tensor_plan,
                                         transposed_in_source)
from compiler.analysis.layout_to_linear import to_linear_layout
from compiler.analysis.linear_layout import LinearLayout
from compiler.dialects.tt import ReshapeOp, TransOp
from compiler.dialects.ttg import (BlockedEncoding, ConvertLayoutOp, DotOperandEncoding,
                                   NVMMASharedEncoding, NvidiaMmaEncoding, SwizzledSharedEncoding)

BLOCKED_ROWS = BlockedEncoding((1, 4), (4, 8), (4, 1), (1, 0))
BLOCKED_COLS = BlockedEncoding((4, 1), (8, 4), (1, 4), (0, 1))
BLOCKED_WIDE = BlockedEncoding((1, 8), (4, 8), (4, 1), (1, 0))
BLOCKED_ONE = BlockedEncoding((1, 1), (32, 1), (1, 4), (0, 1))
BLOCKED_SQUARE = BlockedEncoding((2, 2), (4, 8), (2, 2), (0, 1))
MMA_V2 = NvidiaMmaEncoding(2, 0, (2, 2), (16, 8))
MMA_V3 = NvidiaMmaEncoding(3, 0, (4, 1), (16, 32, 16))
LAYOUTS_2D = {
    "rows": BLOCKED_ROWS, "cols": BLOCKED_COLS, "wide": BLOCKED_WIDE, "one": BLOCKED_ONE,
    "square": BLOCKED_SQUARE, "mma_v2": MMA_V2, "mma_v3": MMA_V3,
    "dot_a_v2": DotOperandEncoding(0, MMA_V2, 2), "dot_b_v2": DotOperandEncoding(1, MMA_V2, 2),
    "dot_a_v3": DotOperandEncoding(0, MMA_V3, 2),
    "dot_a_rows": DotOperandEncoding(0, BLOCKED_ROWS, 0),
    "dot_b_rows": DotOperandEncoding(1, BLOCKED_ROWS, 0),
}
SHAPE = (32, 32)


def _ll(encoding, shape=SHAPE):
    return to_linear_layout(encoding, shape)


def _table(layout: LinearLayout, warps: int) -> dict:
    """{(warp, lane, register): flattened output} of a (register, lane, warp) layout."""
    flat = {d: flat_bases(layout, d) for d in ("register", "lane", "warp")}
    return {(w, lane, r): _xor_of(flat["warp"], w) ^ _xor_of(flat["lane"], lane)
            ^ _xor_of(flat["register"], r)
            for w, lane, r in itertools.product(range(warps), range(32),
                                                range(layout.in_dim_size("register")))}


def simulate(src: LinearLayout, dst: LinearLayout, plan, warps: int = 4) -> list:
    """Run a plan thread by thread: the (warp, lane, register) places whose value is wrong."""
    held, want = _table(src, warps), _table(dst, warps)
    if plan.strategy == "shared":
        stored, loaded = (_table(plan.swizzle.offsets_of(x), warps) for x in (src, dst))
        memory = {}
        for place, offset in stored.items():
            assert memory.setdefault(offset, held[place]) == held[place], "two elements, one offset"
        got = {place: memory[offset] for place, offset in loaded.items()}
    elif plan.strategy == "shuffle":
        lane_of = _table(plan.lane_map.with_bases("register", []).with_bases("warp", []), 1)
        got = {}
        for (w, lane, r) in want:
            reg, const = plan.rounds[r]
            got[w, lane, r] = held[w, lane_of[0, lane, 0] ^ const, reg]
    else:
        mapping = plan.register_map or tuple(range(dst.in_dim_size("register")))
        got = {(w, lane, r): held[w, lane, mapping[r]] for (w, lane, r) in want}
    return [place for place, value in got.items() if value != want[place]]


PAIRS = [(a, b) for a in LAYOUTS_2D for b in LAYOUTS_2D if a != b]


@pytest.mark.parametrize("elem_bytes", [2, 4])
@pytest.mark.parametrize("src,dst", PAIRS)
def test_every_plan_moves_the_right_elements_without_conflicts(src, dst, elem_bytes):
    s, d = _ll(LAYOUTS_2D[src]), _ll(LAYOUTS_2D[dst])
    plan = plan_conversion(s, d, elem_bytes)
    assert simulate(s, d, plan) == []
    if plan.strategy == "shared":
        counts = conversion_conflicts(s, d, plan.swizzle, elem_bytes)
        assert sum(counts["store"]) == 0 and sum(counts["load"]) == 0, counts


def test_strategies_are_the_cheapest_the_maps_allow():
    rows = _ll(BLOCKED_ROWS)
    assert plan_conversion(rows, rows, 4).strategy == "noop"
    # the same threads, registers in another order: a renumbering
    renumbered = rows.with_bases("register", list(reversed(rows.bases("register"))))
    plan = plan_conversion(rows, renumbered, 4)
    assert plan.strategy == "registers" and plan.cost == 0
    # lanes swapped inside each warp, warps alike, scalar elements (pointers): shuffles
    one = _ll(BLOCKED_ONE)
    lanes = list(one.bases("lane"))
    swapped = one.with_bases("lane", lanes[3:] + lanes[:3])
    plan = plan_conversion(one, swapped, 8, vectorizable=False)
    assert plan.strategy == "shuffle" and simulate(one, swapped, plan) == []
    assert plan.cost == one.in_dim_size("register")
    # a slice and an mma accumulator to blocked, warps differing: shared memory
    assert plan_conversion(_ll(MMA_V2), rows, 4).strategy == "shared"


def test_a_row_major_buffer_for_a_transposing_conversion_conflicts():
    """Columns of f32 read from a row-major 64x64 buffer: every lane of a warp in one bank."""
    plain = _ll(SwizzledSharedEncoding(1, 1, 1, (1, 0)), (64, 64))
    assert sum(layout_conflicts(_ll(BLOCKED_ROWS, (64, 64)), plain, 4)) == 0
    cols = layout_conflicts(_ll(BLOCKED_ONE, (64, 64)), plain, 4)
    assert cols and min(cols) == 31          # 32 lanes, 32 words of one bank


def test_nvmma_swizzle_removes_the_conflicts_of_the_unswizzled_buffer():
    """16-byte reads of f16 rows of a 64x64 buffer, one row per lane: the 8 lanes of a
    quarter-warp hit the same banks without a swizzle; the 128-byte swizzle spreads them."""
    reader = _ll(BlockedEncoding((1, 8), (32, 1), (2, 2), (1, 0)), (64, 64))
    unswizzled = layout_conflicts(reader, _ll(NVMMASharedEncoding(0, False, 16), (64, 64)), 2)
    swizzled = layout_conflicts(reader, _ll(NVMMASharedEncoding(128, False, 16), (64, 64)), 2)
    assert sum(unswizzled) > 0
    assert sum(swizzled) == 0


def test_vector_width_sets_the_phases():
    """16-byte accesses of consecutive lanes over 128 contiguous bytes: one wavefront per
    quarter-warp, no conflict; the same lanes 128 bytes apart conflict 7 times per phase."""
    lanes16 = LinearLayout({"register": [1, 2, 4, 8], "lane": [16, 32, 64, 128, 256],
                            "warp": []}, {"offset": 512})
    assert access_conflicts(lanes16, 1, (0, 1, 2, 3)) == [0]
    strided = LinearLayout({"register": [1, 2, 4, 8], "lane": [128, 256, 512, 1024, 2048],
                            "warp": []}, {"offset": 4096})
    assert access_conflicts(strided, 1, (0, 1, 2, 3)) == [4 * 7]


def _compile_for_sm90(kernel, args, constexprs):
    """A sample kernel to ttgir for sm_90, as the jit would specialize it."""
    from compiler.compiler import CompileOptions, compile as compile_source
    from compiler.runtime.jit import JITFunction
    fn = JITFunction(kernel.fn)
    bound, key = fn.bind(*args, **constexprs)[:2]
    spec = fn._specialization(key, bound)
    options = {k: v for k, v in fn.compile_options(key).items()
               if k in CompileOptions.__dataclass_fields__}
    options["arch"] = 90
    return compile_source(fn.source_for(spec), options=options, stop_after="ttgir").ttgir_module


SAMPLE_CASES = {
    "vector_add": {}, "softmax": {}, "layernorm": {}, "matmul": {}, "attention": {},
    # the matmul at the block sizes people run, whose epilogue converts mma -> blocked
    "matmul_64": dict(BLOCK_SIZE_M=64, BLOCK_SIZE_N=64, BLOCK_SIZE_K=32),
    "matmul_128": dict(BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64),
}


def _shared_conversions(module):
    """(op, source layout, destination layout over the source's coordinates, plan) of every
    conversion, trans and reshape in a ttgir module that goes through shared memory."""
    for op in module.walk():
        if not isinstance(op, (ConvertLayoutOp, TransOp, ReshapeOp)):
            continue
        src, dst = op.operands[0].type, op.results[0].type
        if getattr(src, "encoding", None) is None:
            continue
        d = _ll(dst.encoding, dst.shape)
        if isinstance(op, TransOp):
            d = transposed_in_source(d, list(op.attributes["order"].values))
        elif isinstance(op, ReshapeOp):
            d = reshaped_in_source(d, src.shape)
        plan = tensor_plan(src, dst, d)
        if plan.strategy == "shared":
            yield op, _ll(src.encoding, src.shape), d, plan


@pytest.mark.parametrize("case", list(SAMPLE_CASES))
def test_sample_kernel_conversions_are_conflict_free(case):
    from tests.cpu.test_pipeline_samples import SAMPLES
    kernel, args, constexprs, _, _ = SAMPLES[case.split("_")[0] if case.startswith("matmul")
                                             else case]()
    module = _compile_for_sm90(kernel, args, dict(constexprs, **SAMPLE_CASES[case]))
    found = list(_shared_conversions(module))
    for op, src, dst, plan in found:
        counts = conversion_conflicts(src, dst, plan.swizzle, plan.elem_bytes)
        assert sum(counts["store"]) == 0 and sum(counts["load"]) == 0, (op, counts)
    if SAMPLE_CASES[case]:
        assert found, "the epilogue's conversion goes through shared memory"
