"""Which thread holds which element in the tensor-core layouts (#ttg.nvidia_mma v2 and its
#ttg.dot_op operands), checked against the PTX ISA's fragment layouts of
mma.m16n8k16 with .f16/.bf16 inputs and an .f32 accumulator ("Matrix Fragments for
mma.m16n8k16 with floating point type"), and the LLVM index values the lowering emits checked
against the layout helper."""
from __future__ import annotations

import pytest

from compiler.analysis import layouts
from compiler.dialects.ttg import DotOperandEncoding, NvidiaMmaEncoding
from tests.cpu.test_codegen_indices import _evaluate, _indexer

ONE_WARP = NvidiaMmaEncoding(2, 0, (1, 1), (16, 8))
FOUR_WARPS = NvidiaMmaEncoding(2, 0, (2, 2), (16, 8))
EIGHT_WARPS = NvidiaMmaEncoding(2, 0, (2, 4), (16, 8))


# The ISA's figures, written out per lane as (row, col) of each fragment element:
#   groupID = laneid >> 2, threadID_in_group = laneid % 4
#   C: c0..c3: row = groupID (+8 for c2, c3), col = threadID_in_group * 2 + (i & 1)
#   A: a0..a7: row = groupID (+8 for a2, a3, a6, a7),
#              col = threadID_in_group * 2 + (i & 1) (+8 for a4..a7)
#   B: b0..b3: row = threadID_in_group * 2 + (i & 1) (+8 for b2, b3), col = groupID
def isa_c(lane):
    g, t = lane >> 2, lane % 4
    return [(g + (8 if i >= 2 else 0), t * 2 + (i & 1)) for i in range(4)]


def isa_a(lane):
    g, t = lane >> 2, lane % 4
    return [(g + (8 if i in (2, 3, 6, 7) else 0), t * 2 + (i & 1) + (8 if i >= 4 else 0))
            for i in range(8)]


def isa_b(lane):
    g, t = lane >> 2, lane % 4
    return [(t * 2 + (i & 1) + (8 if i >= 2 else 0), g) for i in range(4)]


# A few lanes copied from the ISA's figures by hand, to pin the formulas above.
HAND_TABLE = {
    0: {"c": [(0, 0), (0, 1), (8, 0), (8, 1)],
        "a": [(0, 0), (0, 1), (8, 0), (8, 1), (0, 8), (0, 9), (8, 8), (8, 9)],
        "b": [(0, 0), (1, 0), (8, 0), (9, 0)]},
    5: {"c": [(1, 2), (1, 3), (9, 2), (9, 3)],
        "a": [(1, 2), (1, 3), (9, 2), (9, 3), (1, 10), (1, 11), (9, 10), (9, 11)],
        "b": [(2, 1), (3, 1), (10, 1), (11, 1)]},
    31: {"c": [(7, 6), (7, 7), (15, 6), (15, 7)],
         "a": [(7, 6), (7, 7), (15, 6), (15, 7), (7, 14), (7, 15), (15, 14), (15, 15)],
         "b": [(6, 7), (7, 7), (14, 7), (15, 7)]},
}


@pytest.mark.parametrize("lane", sorted(HAND_TABLE))
def test_hand_copied_lanes_match_the_isa_formulas(lane):
    assert isa_c(lane) == HAND_TABLE[lane]["c"]
    assert isa_a(lane) == HAND_TABLE[lane]["a"]
    assert isa_b(lane) == HAND_TABLE[lane]["b"]


def test_one_instruction_tile_matches_the_isa_fragments():
    a = DotOperandEncoding(0, ONE_WARP, 2)
    b = DotOperandEncoding(1, ONE_WARP, 2)
    for lane in range(32):
        assert layouts.thread_elements(ONE_WARP, (16, 8), 0, lane) == isa_c(lane)
        assert layouts.thread_elements(a, (16, 16), 0, lane) == isa_a(lane)
        assert layouts.thread_elements(b, (16, 8), 0, lane) == isa_b(lane)


def test_warps_and_repetitions_tile_the_accumulator():
    """4 warps [2, 2] on 64x32: warp w holds instruction tiles at rows 16 * (w // 2) + 32 * i,
    columns 8 * (w % 2) + 16 * j; every element has exactly one owner."""
    shape = (64, 32)
    owners = layouts.element_owners(FOUR_WARPS, shape)
    assert len(owners) == 64 * 32 and all(len(v) == 1 for v in owners.values())
    for warp in range(4):
        for lane in range(32):
            elements = layouts.thread_elements(FOUR_WARPS, shape, warp, lane)
            assert len(elements) == 2 * 2 * 4
            for reg, (row, col) in enumerate(elements):
                tile, i = divmod(reg, 4)
                rep_m, rep_n = divmod(tile, 2)
                r0 = 16 * (warp // 2) + 32 * rep_m
                c0 = 8 * (warp % 2) + 16 * rep_n
                assert (row - r0, col - c0) == isa_c(lane)[i]


def test_operands_are_shared_by_the_warps_of_the_other_dim():
    """A is held by both warps of a row of warps (they compute different N tiles), B by both
    warps of a column; within one warp each element has one holder."""
    a = DotOperandEncoding(0, FOUR_WARPS, 2)
    b = DotOperandEncoding(1, FOUR_WARPS, 2)
    for layout, shape, partner in ((a, (64, 32), lambda w: w ^ 1), (b, (32, 32), lambda w: w ^ 2)):
        owners = layouts.element_owners(layout, shape)
        assert len(owners) == shape[0] * shape[1]
        for holders in owners.values():
            warps = sorted(w for w, _, _ in holders)
            assert len(holders) == 2 and warps[1] == partner(warps[0])


def test_operand_registers_follow_the_isa_per_k_step():
    a = DotOperandEncoding(0, EIGHT_WARPS, 2)
    shape = (64, 64)                      # warps [2, 4]: 2 M tiles per warp, 4 K steps
    for warp in (0, 5):
        for lane in (0, 13, 31):
            elements = layouts.thread_elements(a, shape, warp, lane)
            for reg, (row, col) in enumerate(elements):
                tile, i = divmod(reg, 8)
                rep_m, rep_k = divmod(tile, 4)
                r0 = 16 * (warp // 4) + 32 * rep_m
                assert (row - r0, col - 16 * rep_k) == isa_a(lane)[i]


MMA_LAYOUTS = [
    (ONE_WARP, (16, 8)), (FOUR_WARPS, (64, 32)), (EIGHT_WARPS, (128, 128)),
    (DotOperandEncoding(0, FOUR_WARPS, 2), (64, 32)),
    (DotOperandEncoding(1, FOUR_WARPS, 2), (32, 64)),
    (DotOperandEncoding(0, EIGHT_WARPS, 2), (32, 16)),
    (DotOperandEncoding(1, EIGHT_WARPS, 2), (16, 64)),
]


@pytest.mark.parametrize("layout,shape", MMA_LAYOUTS, ids=lambda x: str(x)[:60])
def test_emitted_coordinates_match_the_layout_helper(layout, shape):
    indexer, builder = _indexer()
    coords = indexer.coords(builder, layout, shape)
    for tid in range(layouts.num_warps_of(layout) * 32):
        cache: dict = {}
        got = [tuple(_evaluate(c, tid, cache) for c in reg) for reg in coords]
        assert got == layouts.thread_elements(layout, shape, tid // 32, tid % 32), tid


@pytest.mark.parametrize("layout,shape", MMA_LAYOUTS, ids=lambda x: str(x)[:60])
def test_owner_predicate_picks_one_holder_per_element(layout, shape):
    indexer, builder = _indexer()
    owner = indexer.unique_owner(layout, shape)
    writers: dict = {}
    for tid in range(layouts.num_warps_of(layout) * 32):
        if owner is not None and not _evaluate(owner, tid, {}):
            continue
        for element in layouts.thread_elements(layout, shape, tid // 32, tid % 32):
            writers[element] = writers.get(element, 0) + 1
    assert len(writers) == shape[0] * shape[1] and set(writers.values()) == {1}


def test_describe_names_the_instruction():
    assert "m16n8k16" in layouts.describe(FOUR_WARPS, (64, 32))
    assert layouts.elements_per_thread(FOUR_WARPS, (128, 128)) == 128
