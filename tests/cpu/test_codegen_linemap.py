"""Line maps: every PTX instruction points (through `.loc`) at one op of the printed ttgir, the
map is right for the hand-checked vector add, and each ttgir line keeps its Python location."""
from __future__ import annotations

import pytest

from compiler.codegen.debuginfo import op_lines
from compiler.codegen.linemap import (instruction_lines, ptx_files, ptx_line_map,
                                      python_line_map)
from compiler.ir.parser import parse_module

from .codegen_kernels import KERNELS, compile_ttgir


def _op_line_numbers(ttgir_text: str) -> set:
    text, lines = op_lines(parse_module(ttgir_text))
    assert text == ttgir_text
    return set(lines.values())


@pytest.mark.parametrize("name", ["add", "softmax", "layernorm"])
def test_every_ptx_instruction_belongs_to_a_ttgir_op(reference_dir, name):
    result = compile_ttgir((reference_dir / f"{name}.ttgir").read_text(), build_cubin=False)
    op_line_numbers = _op_line_numbers(result.trace.stage_inputs["llir"])
    instructions = instruction_lines(result.asm["ptx"])
    assert len(instructions) > 10
    for ptx_line, ttgir_line in instructions:
        assert ttgir_line in op_line_numbers, (ptx_line, result.asm["ptx"].splitlines()[ptx_line - 1])
    assert ptx_files(result.asm["ptx"]) == {1: f"{name}_kernel.ttgir"}


@pytest.mark.parametrize("name", ["reduce_axis0", "loop_if", "scan", "while_print_assert"])
def test_small_kernels_map_every_instruction(name):
    result = compile_ttgir(KERNELS[name](), build_cubin=False)
    op_line_numbers = _op_line_numbers(result.trace.stage_inputs["llir"])
    for ptx_line, ttgir_line in instruction_lines(result.asm["ptx"]):
        assert ttgir_line in op_line_numbers, (ptx_line, result.asm["ptx"].splitlines()[ptx_line - 1])


def test_vector_add_map_by_hand(reference_dir):
    result = compile_ttgir((reference_dir / "add.ttgir").read_text(), build_cubin=False)
    ttgir = result.trace.stage_inputs["llir"].splitlines()
    ptx = result.asm["ptx"].splitlines()

    def line_of(fragment: str) -> int:
        matches = [i + 1 for i, text in enumerate(ttgir) if fragment in text]
        assert len(matches) == 1, fragment
        return matches[0]

    def ptx_text(ttgir_line: int) -> list:
        return [ptx[i - 1].strip() for first, last in result.trace.ttgir_to_ptx[str(ttgir_line)]
                for i in range(first, last + 1)]

    addf = ptx_text(line_of("arith.addf"))
    assert [t.split()[0] for t in addf] == ["add.f32"] * 8
    load_x = " ".join(ptx_text(line_of("%x_5 = tt.load")))
    assert load_x.count("ld.global.v4.b32") == 2
    store = " ".join(ptx_text(line_of("tt.store")))
    assert store.count("st.global.v4.b32") == 2 and "ld.global" not in store
    assert "%ctaid.x" in " ".join(ptx_text(line_of("tt.get_program_id")))
    assert ptx_text(line_of("tt.return")) == ["ret;"]
    cmp = ptx_text(line_of("arith.cmpi"))
    assert [t.split()[0] for t in cmp] == ["setp.lt.s32"] * 2
    # ranges are ordered, non-overlapping
    spans = sorted(tuple(r) for ranges in result.trace.ttgir_to_ptx.values() for r in ranges)
    assert all(a[1] < b[0] for a, b in zip(spans, spans[1:]))


def test_ttgir_lines_keep_their_python_location(reference_dir):
    result = compile_ttgir((reference_dir / "add.ttgir").read_text(), build_cubin=False)
    ttgir = result.trace.stage_inputs["llir"].splitlines()
    addf_line = next(i + 1 for i, t in enumerate(ttgir) if "arith.addf" in t)
    assert result.trace.ttgir_op_python[str(addf_line)] == "triton_h200_kernels.py:11:33"
    assert str(addf_line) in python_line_map(result.trace.ttgir_op_python)[11]


def test_ptx_line_map_groups_runs():
    ptx = """.visible .entry k(
)
{
\t.reg .b32 %r<3>;
\t.loc\t1 7 0
\tmov.u32 %r1, %tid.x;
\tadd.s32 %r2, %r1, 1;
\t.loc\t1 9 0
\tst.global.b32 [%rd1], %r2;
\t.loc\t1 7 0
\tret;
}
"""
    assert ptx_line_map(ptx) == {7: [[6, 7], [11, 11]], 9: [[9, 9]]}


def test_merged_locations_go_to_the_next_op():
    # LLVM writes line 0 for an instruction merged from several ops (hoisted out of branches)
    ptx = """.visible .entry k(
)
{
\t.loc\t1 5 0
\tmov.u32 %r1, %tid.x;
\t.loc\t1 0 0
\tcvt.u32.u64 %r2, %rd1;
\t.loc\t1 8 0
\tsetp.lt.s32 %p1, %r2, %r1;
\t.loc\t1 0 0
\tret;
}
"""
    assert ptx_line_map(ptx) == {5: [[5, 5]], 8: [[7, 11]]}
