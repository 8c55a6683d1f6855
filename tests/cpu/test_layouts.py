"""The layout helper: which warp / lane / register holds which element (Triton's semantics)."""
from __future__ import annotations

import pytest

from compiler.analysis import layouts
from compiler.dialects.ttg import BlockedEncoding, DotOperandEncoding, SliceEncoding

ADD = BlockedEncoding((4,), (32,), (4,), (0,))            # Triton's add.ttgir layout
TILE2D = BlockedEncoding((1, 4), (4, 8), (4, 1), (1, 0))   # 16 x 32 tile, rows of 4 per thread


def test_blocked_1d_registers_in_triton_order():
    # sizePerThread first, then the tile repeats every 4 * 32 * 4 = 512 elements
    assert layouts.thread_elements(ADD, (1024,), 0, 0) == [(0,), (1,), (2,), (3,), (512,), (513,),
                                                          (514,), (515,)]
    assert layouts.thread_elements(ADD, (1024,), 1, 3) == [(140,), (141,), (142,), (143,),
                                                          (652,), (653,), (654,), (655,)]
    assert layouts.elements_per_thread(ADD, (1024,)) == 8


def test_every_element_has_exactly_one_owner_when_the_tensor_covers_the_tile():
    owners = layouts.element_owners(ADD, (1024,))
    assert sorted(owners) == [(i,) for i in range(1024)]
    assert all(len(v) == 1 for v in owners.values())


def test_threads_duplicate_elements_of_a_tensor_smaller_than_the_tile():
    owners = layouts.element_owners(ADD, (64,))
    assert sorted(owners) == [(i,) for i in range(64)]
    # 128 threads x 4 registers hold 64 elements: each element 8 times
    assert {len(v) for v in owners.values()} == {8}
    # lane 16 wraps around to the start: (16 * 4) % 64 == 0
    assert layouts.thread_elements(ADD, (64,), 0, 16)[0] == (0,)


def test_registers_duplicate_elements_of_a_tensor_smaller_than_size_per_thread():
    layout = BlockedEncoding((8,), (32,), (1,), (0,))
    assert layouts.thread_elements(layout, (4,), 0, 0) == [(0,), (1,), (2,), (3,)] * 2


def test_blocked_2d_order_1_0_by_hand():
    # lane bits: 3 for dim 1 (8 lanes), then 2 for dim 0; warps along dim 0
    assert layouts.thread_elements(TILE2D, (16, 32), 0, 0) == [(0, 0), (0, 1), (0, 2), (0, 3)]
    assert layouts.thread_elements(TILE2D, (16, 32), 0, 9) == [(1, 4), (1, 5), (1, 6), (1, 7)]
    assert layouts.thread_elements(TILE2D, (16, 32), 2, 31)[0] == (8 + 3, 28)
    # 32 x 64: the 16 x 32 tile repeats twice per dim, dim 1 (order[0]) first
    regs = layouts.thread_elements(TILE2D, (32, 64), 0, 0)
    assert regs[:8] == [(0, 0), (0, 1), (0, 2), (0, 3), (0, 32), (0, 33), (0, 34), (0, 35)]
    assert regs[8] == (16, 0)
    owners = layouts.element_owners(TILE2D, (32, 64))
    assert len(owners) == 32 * 64 and all(len(v) == 1 for v in owners.values())


def test_slice_layout_is_the_parent_without_the_dim():
    rows = SliceEncoding(1, TILE2D)      # a column vector's layout: reducing along dim 1
    assert layouts.thread_elements(rows, (32,), 0, 0) == [(0,), (16,)]
    assert layouts.thread_elements(rows, (32,), 1, 8) == [(5,), (21,)]
    owners = layouts.element_owners(rows, (32,))
    # the 8 lanes along dim 1 hold the same row
    assert {len(v) for v in owners.values()} == {8}
    cols = SliceEncoding(0, TILE2D)
    assert layouts.elements_per_thread(cols, (64,)) == 8
    assert {len(v) for v in layouts.element_owners(cols, (64,)).values()} == {16}


def test_slice_registers_match_the_parent_registers_with_the_dim_removed():
    parent = BlockedEncoding((2, 2), (8, 4), (2, 2), (0, 1))
    sliced = SliceEncoding(0, parent)
    for warp in range(4):
        for lane in range(32):
            parent_cols = {c[1] for c in layouts.thread_elements(parent, (64, 32), warp, lane)}
            mine = {c[0] for c in layouts.thread_elements(sliced, (32,), warp, lane)}
            assert mine == parent_cols


def test_dot_operand_layouts_hold_full_k():
    parent = TILE2D
    a = DotOperandEncoding(0, parent)
    b = DotOperandEncoding(1, parent)
    a_regs = layouts.thread_elements(a, (16, 8), 0, 0)
    assert a_regs == [(0, k) for k in range(8)]
    b_regs = layouts.thread_elements(b, (8, 32), 0, 9)
    # registers in the linear layout's order (the parent's order, dim 1 first): the thread's
    # 4 columns, then K
    assert b_regs[:4] == [(0, 4 + c) for c in range(4)]
    assert sorted(b_regs) == sorted((k, 4 + c) for k in range(8) for c in range(4))


@pytest.mark.parametrize("shape", [(8, 8), (16, 32), (64, 128)])
def test_owner_map_covers_every_element(shape):
    owners = layouts.element_owners(TILE2D, shape)
    assert len(owners) == shape[0] * shape[1]
    counts = {len(v) for v in owners.values()}
    assert len(counts) == 1      # every element held equally often


def test_describe():
    assert layouts.describe(ADD, (1024,)) == "8 elements/thread, CTA tile 512, warps 4"
