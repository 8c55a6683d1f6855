"""tt.gather along a dim that lies within each warp lowers to warp shuffles (no shared memory),
as Triton's does; the SIMT evaluator runs the result. Layouts are written as linear layouts
(ours): dim 0 (the gathered one) is spread over registers and lanes only, differently in the
source and in the indices, and the warps split dim 1 the same way in both."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from compiler.analysis.gather import warp_local_plan  # noqa: E402
from compiler.ir import parse_module  # noqa: E402
from tests.compat_simt import simulated_compile  # noqa: E402
from tests.cpu.test_ttgir_triton_forms import TILE_OFFSETS  # noqa: E402

SRC = ("#ttg.linear<{register = [[1, 0], [0, 1]], lane = [[2, 0], [4, 0], [8, 0], [16, 0], "
       "[0, 2]], warp = [[0, 4], [0, 8]], block = []}>")
IDX = ("#ttg.linear<{register = [[0, 1], [4, 0]], lane = [[1, 0], [2, 0], [16, 0], [8, 0], "
       "[0, 2]], warp = [[0, 4], [0, 8]], block = []}>")
#: dim 1's second bit in a register here but in a lane of the source (a constant lane part)
IDX_REG_LANE = ("#ttg.linear<{register = [[0, 1], [0, 2]], lane = [[1, 0], [2, 0], [4, 0], "
                "[8, 0], [16, 0]], warp = [[0, 4], [0, 8]], block = []}>")
#: the same indices' layout with the warps over dim 0: a warp would need another warp's data
IDX_CROSS_WARP = ("#ttg.linear<{register = [[0, 1], [4, 0]], lane = [[1, 0], [2, 0], [0, 4], "
                  "[0, 8], [0, 2]], warp = [[16, 0], [8, 0]], block = []}>")


def _gather_ttgir(idx_layout: str) -> str:
    t = "tensor<32x16x{}, {}>"
    b = "#b"
    return f"""
#b = #ttg.blocked<{{sizePerThread = [1, 4], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}}>
#src = {SRC}
#idx = {idx_layout}
module attributes {{"ttg.num-warps" = 4 : i32, "ttg.num-ctas" = 1 : i32, "ttg.threads-per-warp" = 32 : i32}} {{
  tt.func public @gather(%s: !tt.ptr<f32> {{tt.divisibility = 16 : i32}}, %i: !tt.ptr<i32> {{tt.divisibility = 16 : i32}}, %o: !tt.ptr<f32> {{tt.divisibility = 16 : i32}}) {{
{TILE_OFFSETS}
    %sp = tt.splat %s : !tt.ptr<f32> -> {t.format("!tt.ptr<f32>", b)}
    %sptr = tt.addptr %sp, %off : {t.format("!tt.ptr<f32>", b)}, {t.format("i32", b)}
    %x = tt.load %sptr : {t.format("!tt.ptr<f32>", b)}
    %ip = tt.splat %i : !tt.ptr<i32> -> {t.format("!tt.ptr<i32>", b)}
    %iptr = tt.addptr %ip, %off : {t.format("!tt.ptr<i32>", b)}, {t.format("i32", b)}
    %y = tt.load %iptr : {t.format("!tt.ptr<i32>", b)}
    %xs = ttg.convert_layout %x : {t.format("f32", b)} -> {t.format("f32", "#src")}
    %ys = ttg.convert_layout %y : {t.format("i32", b)} -> {t.format("i32", "#idx")}
    %g = "tt.gather"(%xs, %ys) <{{axis = 0 : i32}}> : ({t.format("f32", "#src")}, {t.format("i32", "#idx")}) -> {t.format("f32", "#idx")}
    %gb = ttg.convert_layout %g : {t.format("f32", "#idx")} -> {t.format("f32", b)}
    %op = tt.splat %o : !tt.ptr<f32> -> {t.format("!tt.ptr<f32>", b)}
    %optr = tt.addptr %op, %off : {t.format("!tt.ptr<f32>", b)}, {t.format("i32", b)}
    tt.store %optr, %gb : {t.format("!tt.ptr<f32>", b)}
    tt.return
  }}
}}
"""


def _gather_op(text: str):
    return next(op for op in parse_module(text).walk() if op.name == "tt.gather")


def test_warp_local_layouts_have_a_shuffle_plan_and_others_do_not():
    op = _gather_op(_gather_ttgir(IDX))
    plan = warp_local_plan(op.operands[0].type, op.results[0].type, 0)
    assert plan is not None and len(plan.reg_span) == 2     # dim 0 bit 0 is a src register bit
    op = _gather_op(_gather_ttgir(IDX_CROSS_WARP))
    assert warp_local_plan(op.operands[0].type, op.results[0].type, 0) is None


@pytest.mark.parametrize("idx_layout, shuffles", [(IDX, True), (IDX_REG_LANE, True),
                                                  (IDX_CROSS_WARP, False)])
def test_gather_values_with_and_without_shuffles(tmp_path, idx_layout, shuffles):
    path = tmp_path / "gather.ttgir"
    path.write_text(_gather_ttgir(idx_layout))
    kernel = simulated_compile(str(path))
    assert ("nvvm.shfl.sync.idx" in kernel.asm["llir"]) == shuffles
    rs = np.random.RandomState(3)
    src = torch.tensor(rs.randn(32, 16).astype(np.float32))
    idx = torch.tensor(rs.randint(0, 32, (32, 16)).astype(np.int32))
    out = torch.zeros((32, 16), dtype=torch.float32)
    kernel[(1, 1, 1)](src, idx, out)
    torch.testing.assert_close(out, torch.gather(src, 0, idx.long()), rtol=0, atol=0)


# The front end's gathers in their default layouts: tests/cpu/test_gather_layout.py (no torch).
