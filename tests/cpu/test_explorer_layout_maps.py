"""The layout view draws every layout from its linear layout, through the Pilot: the ownership
map and bases table of a Hopper wgmma accumulator (mma v3) and the offsets/banks map and
bases table of an nvmma_shared buffer, for the value under the cursor."""
from __future__ import annotations

import asyncio

from compiler.trace import CompileTrace
from explorer.app import ExplorerApp
from explorer.views.code_view import CodeView

TTGIR = """\
#blocked = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#mma = #ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1], instrShape = [16, 64, 16]}>
#shared = #ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, elementBitWidth = 16}>
#smem = #ttg.shared_memory
module attributes {"ttg.num-warps" = 4 : i32} {
  tt.func public @wgmma_kernel(%a: tensor<64x64xf16, #blocked>) {
    %acc = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #mma>
    %buf = ttg.local_alloc %a : (tensor<64x64xf16, #blocked>) -> !ttg.memdesc<64x64xf16, #shared, #smem>
    tt.return
  }
}
"""


def _trace() -> CompileTrace:
    trace = CompileTrace("wgmma_kernel", source_file="wgmma.py", source_line=1)
    trace.stages["ttgir"] = TTGIR
    return trace


def _line_of(needle: str) -> int:
    return next(i for i, line in enumerate(TTGIR.splitlines(), 1) if needle in line)


async def _owner_text_at(needle: str) -> str:
    app = ExplorerApp([_trace()])
    async with app.run_test(size=(140, 48)) as pilot:
        await pilot.press("4")
        app.query_one("#layout-code", CodeView).cursor = _line_of(needle)
        await pilot.pause()
        return str(app.query_one("#layout-owner").render())


def test_mma_v3_accumulator_map_and_bases():
    text = asyncio.run(_owner_text_at("%acc = "))
    assert "#mma on tensor 64x64: lane per element" in text
    # row 0 of the wgmma accumulator: lanes 0, 0, 1, 1, 2, 2, 3, 3, then 0 again at column 8
    row0 = text.splitlines()[1].split()
    assert row0[:10] == ["0", "0", "1", "1", "2", "2", "3", "3", "0", "0"]
    assert "bases (bit → coordinates, XORed)" in text
    assert "lane: (0, 2) (0, 4) (1, 0) (2, 0) (4, 0)" in text
    assert "warp: (16, 0) (32, 0)" in text


def test_nvmma_shared_buffer_offsets_banks_and_bases():
    text = asyncio.run(_owner_text_at("%buf = "))
    assert text.startswith("#shared: shared memory in the NVMMA layout (128-byte swizzle)")
    assert "bank per element (16-bit elements)" in text
    # row 0: two f16 a bank; row 1: its 16-byte chunks XORed with 1, so column 0 is in bank 4
    lines = text.splitlines()
    assert lines[2].split()[:4] == ["0", "0", "1", "1"]
    assert lines[3].split()[:2] == ["4", "4"]
    assert "offset: (0, 1) (0, 2) (0, 4) (0, 8) (0, 16) (0, 32) (1, 8) (2, 16) (4, 32)" in text
