"""The layout view's thread-ownership map for tensor-core layouts: mma v2 accumulators and dot
operands (checked against the PTX ISA's m16n8k16 fragment tables), shared layouts described in a
line, and the fallback message when the compiler's layout model is not importable."""
from __future__ import annotations

import sys

import pytest

from explorer.ownership import NotDrawable, ownership_grid, shared_description, tensor_shape
from explorer.views.layout_view import ownership_text

# the layouts the compiler gives sample_kernels/matmul.py with 128x128x32 tiles and 4 warps
ALIASES = {
    "#mma": "#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], "
            "instrShape = [16, 8]}>",
    "#dot_op": "#ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2}>",
    "#dot_op1": "#ttg.dot_op<{opIdx = 1, parent = #mma, kWidth = 2}>",
    "#shared": "#ttg.swizzled_shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>",
    "#slice": "#ttg.slice<{dim = 1, parent = #mma}>",
}


def test_mma_accumulator_follows_the_m16n8k16_c_fragment():
    grid = ownership_grid("#mma", (128, 128), ALIASES)
    # lane 0 of warp 0: c0, c1 at (0, 0), (0, 1); c2, c3 at (8, 0), (8, 1)
    assert [grid[0][0], grid[0][1], grid[8][0], grid[8][1]] == \
        [(0, 0, 0), (0, 0, 1), (0, 0, 2), (0, 0, 3)]
    assert grid[0][2] == (0, 1, 0)          # lane 1 = threadID_in_group 1: columns 2, 3
    assert grid[1][0] == (0, 4, 0)          # lane 4 = groupID 1: row 1
    assert grid[0][8] == (1, 0, 0)          # warps [2, 2]: warp 1 owns the next 8 columns
    owners = {cell for row in grid for cell in row}
    assert {warp for warp, _, _ in owners} == {0, 1}   # rows 0-15 are warps 0 and 1


def test_dot_operands_follow_the_a_and_b_fragments():
    a = ownership_grid("#dot_op", (128, 32), ALIASES)
    assert [a[0][0], a[0][1], a[8][0], a[8][1], a[0][8]] == \
        [(0, 0, 0), (0, 0, 1), (0, 0, 2), (0, 0, 3), (0, 0, 4)]
    b = ownership_grid("#dot_op1", (32, 128), ALIASES)
    # b0, b1 at k = 2t + {0, 1}, n = g
    assert [b[0][0], b[1][0], b[0][1], b[8][0]] == [(0, 0, 0), (0, 0, 1), (0, 4, 0), (0, 0, 2)]


def test_shared_layouts_are_described_not_drawn():
    with pytest.raises(NotDrawable, match="XOR-swizzled over 4 phases"):
        ownership_grid("#shared", (128, 32), ALIASES)
    assert "not swizzled" in shared_description(
        "#ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0, 1]}>")
    assert tensor_shape("!ttg.memdesc<128x32xf16, #shared, #smem, mutable>") == (128, 32)
    text = ownership_text("#shared", ALIASES, (128, 32)).plain
    assert text.startswith("#shared: shared memory")
    lines = text.splitlines()
    # vec 8, perPhase 2, maxPhase 4 on f16: row 2's first 8-element group is XORed to column 8
    assert lines[2].split()[:4] == ["0", "0", "1", "1"]          # banks of row 0
    assert lines[4].split()[:2] == ["4", "4"]                    # row 2: column group 1
    assert "bases" in text and "offset: (0, 1) (0, 2)" in text


def test_slices_of_mma_layouts_are_drawn_from_their_linear_layout():
    # a row of the m16n8k16 C fragment: rows g (lanes 4g) in c0, rows g + 8 in c2 (register 1
    # of the slice, the column registers having collapsed); first owner per element shown
    (row,) = ownership_grid("#slice", (128,), ALIASES)
    assert [row[0], row[1], row[7], row[8]] == [(0, 0, 0), (0, 4, 0), (0, 28, 0), (0, 0, 1)]
    assert {warp for warp, _, _ in row[:16]} == {0}


def test_the_view_draws_an_mma_map():
    text = ownership_text("#mma", ALIASES, (128, 128), width=48).plain
    lines = text.splitlines()
    assert "#mma on tensor 128x128" in lines[0]
    assert lines[1].split()[:4] == ["0", "0", "1", "1"]      # lanes 0, 0, 1, 1 along row 0
    assert "[0]→(0, 0, 0)" in text


def test_without_the_compilers_layout_model_mma_is_not_drawn(monkeypatch):
    import compiler.analysis
    monkeypatch.setitem(sys.modules, "compiler.analysis.layout_to_linear", None)
    monkeypatch.delattr(compiler.analysis, "layout_to_linear", raising=False)
    with pytest.raises(NotDrawable, match="needs the compiler's layout model"):
        ownership_grid("#mma", (128, 128), ALIASES)


def test_hopper_shared_layouts_are_described_too():
    text = "#ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, elementBitWidth = 16}>"
    with pytest.raises(NotDrawable, match="NVMMA layout \\(128-byte swizzle\\)"):
        ownership_grid(text, (128, 64))


# a piece of the ttgir our compiler makes for sample_kernels/matmul.py (128x128x32, 4 warps)
MATMUL_TTGIR = "\n".join(f"{name} = {text}" for name, text in ALIASES.items()) + """
#smem = #ttg.shared_memory
module attributes {"ttg.num-warps" = 4 : i32} {
  tt.func public @matmul_kernel(%a: tensor<128x32xf16, #dot_op>, %b: tensor<32x128xf16, #dot_op1>) {
    %acc = arith.constant dense<0.000000e+00> : tensor<128x128xf32, #mma>
    %d = tt.dot %a, %b, %acc : tensor<128x32xf16, #dot_op> * tensor<32x128xf16, #dot_op1> -> tensor<128x128xf32, #mma>
    %buf = ttg.local_alloc : () -> !ttg.memdesc<128x32xf16, #shared, #smem, mutable>
    tt.return
  }
}
"""


def test_the_layout_view_shows_mma_and_shared_layouts_under_the_cursor():
    import asyncio

    from compiler.trace import CompileTrace
    from explorer.app import ExplorerApp
    from explorer.views.code_view import CodeView

    lines = MATMUL_TTGIR.splitlines()
    trace = CompileTrace("matmul_kernel", stages={"ttgir": MATMUL_TTGIR})

    async def drive():
        app = ExplorerApp([trace])
        async with app.run_test(size=(140, 44)) as pilot:
            await pilot.press("4")
            code = app.query_one("#layout-code", CodeView)
            seen = []
            for needle in ("%d = tt.dot", "%buf = ttg.local_alloc"):
                code.cursor = next(i for i, line in enumerate(lines, 1) if needle in line)
                await pilot.pause()
                seen.append(str(app.query_one("#layout-owner").render()))
            return seen

    dot, alloc = asyncio.run(drive())
    assert "#mma on tensor 128x128" in dot and "[1]→(0, 0, 1)" in dot
    assert "#shared: shared memory" in alloc and "XOR-swizzled" in alloc
