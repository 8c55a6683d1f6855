"""Axis info: contiguity / divisibility / constancy rules and the vector widths they allow."""
from __future__ import annotations

import textwrap

import pytest

import compiler.dialects  # noqa: F401
from compiler.analysis.axis_info import AxisInfo, analyze, pow2_divisor, vector_width
from compiler.dialects.ttg import BlockedEncoding
from compiler.ir.parser import parse_module
from tests.conftest import REFERENCE

ARG16 = "{tt.divisibility = 16 : i32}"


def _analyze(body: str, args: str):
    text = (f"module {{\n  tt.func public @k({args}) {{\n"
            + textwrap.indent(textwrap.dedent(body).strip(), "    ")
            + "\n    tt.return\n  }\n}\n")
    func = parse_module(text).functions()[0]
    return func, analyze(func), _Names(func)


class _Names:
    """Look values up by the `%name` they had in the parsed text (order of definition)."""

    def __init__(self, func):
        from compiler.ir.printer import Printer
        p = Printer()
        p.name_block_args(func.regions[0].blocks[0])
        self.values = {}
        for op in func.walk():
            p.name_op_results(op)
            for r in op.results:
                self.values[p.names[r]] = r
        for a in func.regions[0].blocks[0].args:
            self.values[p.names[a]] = a

    def __getitem__(self, name):
        return self.values[name]


ADD_BODY = """
%c1024 = arith.constant 1024 : i32
%pid = tt.get_program_id x : i32
%start = arith.muli %pid, %c1024 : i32
%range = tt.make_range {end = 1024 : i32, start = 0 : i32} : tensor<1024xi32>
%s = tt.splat %start : i32 -> tensor<1024xi32>
%offs = arith.addi %s, %range : tensor<1024xi32>
%nn = tt.splat %n : i32 -> tensor<1024xi32>
%mask = arith.cmpi slt, %offs, %nn : tensor<1024xi32>
%base = tt.splat %x : !tt.ptr<f32> -> tensor<1024x!tt.ptr<f32>>
%ptrs = tt.addptr %base, %offs : tensor<1024x!tt.ptr<f32>>, tensor<1024xi32>
%v = tt.load %ptrs, %mask : tensor<1024x!tt.ptr<f32>>
"""


def test_pow2_divisor():
    assert pow2_divisor(48) == 16
    assert pow2_divisor(-8) == 8
    assert pow2_divisor(7) == 1
    assert pow2_divisor(0) >= 1 << 30


def test_block_offsets_are_contiguous_and_aligned():
    _, info, v = _analyze(ADD_BODY, f"%x: !tt.ptr<f32> {ARG16}, %n: i32 {ARG16}")
    assert info[v["range"]].contiguity == (1024,)
    assert info[v["start"]].divisibility == (1024,)
    assert info[v["s"]].constancy == (1024,)
    assert info[v["offs"]] == AxisInfo((1024,), (1024,), (1,))
    # pointer divisibility is in bytes: a 16-byte aligned base plus 4-byte multiples of 1024
    assert info[v["ptrs"]] == AxisInfo((1024,), (16,), (1,))
    # offs < n stays constant over runs of 16 (n is a multiple of 16)
    assert info[v["mask"]].constancy == (16,)
    # a loaded value is unknown
    assert info[v["v"]] == AxisInfo.unknown((1024,))


@pytest.mark.parametrize("predicate,run_left,constancy", [
    ("slt", True, 16), ("sge", True, 16), ("ult", True, 16), ("uge", True, 16),
    ("sle", True, 1), ("sgt", True, 1),            # offs <= n changes one past n
    ("sgt", False, 16), ("sle", False, 16),        # n > offs is offs < n
    ("slt", False, 1), ("sge", False, 1), ("eq", True, 1)])
def test_compare_constancy_only_where_the_boundary_is_aligned(predicate, run_left, constancy):
    """A run compared with a multiple of 16 is constant over aligned blocks of 16 only when the
    result flips at the bound itself: offs = n and offs = n + 1 share a block, and `<=` (or
    `>`) separates them."""
    operands = "%offs, %nn" if run_left else "%nn, %offs"
    body = ADD_BODY.replace("arith.cmpi slt, %offs, %nn", f"arith.cmpi {predicate}, {operands}")
    _, info, v = _analyze(body, f"%x: !tt.ptr<f32> {ARG16}, %n: i32 {ARG16}")
    assert info[v["mask"]].constancy == (constancy,)


def test_without_divisibility_hints_alignment_is_one_element():
    _, info, v = _analyze(ADD_BODY, "%x: !tt.ptr<f32>, %n: i32")
    assert info[v["ptrs"]].divisibility == (1,)
    assert info[v["mask"]].constancy == (1,)


def test_vector_width_follows_layout_alignment_and_mask():
    layout4 = BlockedEncoding((4,), (32,), (4,), (0,))
    layout8 = BlockedEncoding((8,), (32,), (4,), (0,))
    layout1 = BlockedEncoding((1,), (32,), (4,), (0,))
    _, info, v = _analyze(ADD_BODY, f"%x: !tt.ptr<f32> {ARG16}, %n: i32 {ARG16}")
    ptrs = v["ptrs"]
    assert vector_width(ptrs, info, layout4) == 4
    assert vector_width(ptrs, info, layout8) == 4      # 16 bytes of f32 at most
    assert vector_width(ptrs, info, layout1) == 1      # one element per thread per tile
    assert vector_width(ptrs, info[ptrs], layout4) == 4
    _, info, v = _analyze(ADD_BODY, f"%x: !tt.ptr<f32> {ARG16}, %n: i32")
    assert vector_width(v["ptrs"], info, layout4) == 4
    assert vector_width(v["ptrs"], info, layout4, mask=v["mask"]) == 1
    _, info, v = _analyze(ADD_BODY, "%x: !tt.ptr<f32>, %n: i32")
    assert vector_width(v["ptrs"], info, layout4) == 1


def test_fp16_pointers_allow_eight_wide_access():
    body = ADD_BODY.replace("f32", "f16")
    _, info, v = _analyze(body, f"%x: !tt.ptr<f16> {ARG16}, %n: i32 {ARG16}")
    assert info[v["ptrs"]].divisibility == (16,)
    assert vector_width(v["ptrs"], info, BlockedEncoding((8,), (32,), (4,), (0,))) == 8


def test_multiple_of_and_max_contiguous_hints_override():
    body = """
    %o = arith.muli %a, %b {tt.divisibility = array<i32: 64>} : i32
    %r = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %q = arith.muli %r, %r {tt.contiguity = array<i32: 8>, tt.divisibility = array<i32: 8>} : tensor<128xi32>
    """
    _, info, v = _analyze(body, "%a: i32, %b: i32")
    assert info[v["o"]].divisibility == (64,)
    assert info[v["q"]].contiguity == (8,)
    assert info[v["q"]].divisibility == (8,)


def test_2d_rules_expand_broadcast_mul_rem_div():
    body = """
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %c4 = arith.constant dense<4> : tensor<64xi32>
    %c16 = arith.constant dense<16> : tensor<64xi32>
    %q = arith.divsi %r, %c4 : tensor<64xi32>
    %m = arith.remsi %r, %c16 : tensor<64xi32>
    %w = arith.muli %r, %c4 : tensor<64xi32>
    %col = tt.expand_dims %r {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %row = tt.expand_dims %r {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %sp = tt.splat %stride : i32 -> tensor<64x1xi32>
    %ro = arith.muli %row, %sp : tensor<64x1xi32>
    %rb = tt.broadcast %ro : tensor<64x1xi32> -> tensor<64x64xi32>
    %cb = tt.broadcast %col : tensor<1x64xi32> -> tensor<64x64xi32>
    %off = arith.addi %rb, %cb : tensor<64x64xi32>
    """
    _, info, v = _analyze(body, f"%stride: i32 {ARG16}")
    assert info[v["q"]].constancy == (4,)           # r // 4 is constant over runs of 4
    assert info[v["m"]].contiguity == (16,)         # r % 16 restarts every 16
    assert info[v["w"]].contiguity == (1,)
    assert info[v["w"]].divisibility == (4,)        # every element of 4 * r, not just r's start
    assert info[v["col"]].contiguity == (1, 64)
    assert info[v["ro"]].divisibility[0] == 16      # row * stride: each element a multiple of 16
    assert info[v["rb"]].constancy == (1, 64)
    assert info[v["off"]].contiguity == (1, 64)
    # along dim 1 each row starts at row * stride (a multiple of 16); down a column the values
    # differ by the column index, so nothing is known there
    assert info[v["off"]].divisibility == (1, 16)


def test_loop_carried_pointers_reach_a_fixed_point():
    body = """
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %b = tt.splat %p : !tt.ptr<f16> -> tensor<64x!tt.ptr<f16>>
    %ptrs = tt.addptr %b, %r : tensor<64x!tt.ptr<f16>>, tensor<64xi32>
    %step = arith.constant dense<64> : tensor<64xi32>
    %odd = arith.constant dense<3> : tensor<64xi32>
    %out:2 = scf.for %i = %c0 to %n step %c1 iter_args(%a = %ptrs, %u = %ptrs) -> (tensor<64x!tt.ptr<f16>>, tensor<64x!tt.ptr<f16>>) : i32 {
      %na = tt.addptr %a, %step : tensor<64x!tt.ptr<f16>>, tensor<64xi32>
      %nu = tt.addptr %u, %odd : tensor<64x!tt.ptr<f16>>, tensor<64xi32>
      scf.yield %na, %nu : tensor<64x!tt.ptr<f16>>, tensor<64x!tt.ptr<f16>>
    }
    """
    func, info, _ = _analyze(body, f"%p: !tt.ptr<f16> {ARG16}, %n: i32")
    loop = next(op for op in func.walk() if op.name == "scf.for")
    stepped, odd = loop.results
    assert info[stepped] == AxisInfo((64,), (16,), (1,))
    assert info[odd].divisibility == (2,)           # +3 elements of 2 bytes breaks alignment
    assert info[loop.regions[0].blocks[0].args[2]].divisibility == (2,)


@pytest.mark.parametrize("name, width", [("add", 4), ("softmax", 4), ("layernorm", 8)])
def test_reference_kernels_loads_allow_triton_widths(name, width):
    if not REFERENCE.is_dir():
        pytest.skip("../shared/reference is not present")
    func = parse_module((REFERENCE / f"{name}.ttgir").read_text()).functions()[0]
    info = analyze(func)
    loads = [op for op in func.walk() if op.name in ("tt.load", "tt.store")]
    assert loads
    for op in loads:
        assert vector_width(op.operands[0], info) == width


def test_argument_attributes_may_give_one_value_per_dim():
    args = ("%t: tensor<4x8xi32> {tt.divisibility = array<i32: 16, 8>, "
            "tt.contiguity = array<i32: 1, 8>}, %s: i32 {tt.contiguity = 4 : i32}")
    func, info, v = _analyze("", args)
    assert info[v["t"]] == AxisInfo((1, 8), (16, 8), (1, 1))
    assert info[v["s"]] == AxisInfo((4,), (1,), (1,))


def test_truncation_keeps_runs_and_alignment():
    body = """
    %r = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
    %w = arith.extsi %r : tensor<256xi32> to tensor<256xi64>
    %big = arith.constant 4294967312 : i64
    %b = tt.splat %big : i64 -> tensor<256xi64>
    %o = arith.addi %w, %b : tensor<256xi64>
    %t = arith.trunci %o : tensor<256xi64> to tensor<256xi32>
    %c = arith.constant 48 : i64
    %tc = arith.trunci %c : i64 to i32
    %tb = arith.trunci %big : i64 to i32
    """
    _, info, v = _analyze(body, "")
    assert info[v["t"]] == AxisInfo((256,), (16,), (1,))
    assert info[v["tc"]].constant == 48
    assert info[v["tb"]].constant is None           # 2**32 + 16 does not fit in 32 bits
    assert info[v["tb"]].divisibility == (16,)


def test_odd_shift_amounts_are_not_multiplications():
    body = """
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %neg = arith.constant dense<-1> : tensor<64xi32>
    %two = arith.constant dense<2> : tensor<64xi32>
    %a = arith.shli %r, %neg : tensor<64xi32>
    %b = arith.shli %r, %two : tensor<64xi32>
    """
    _, info, v = _analyze(body, "")
    assert info[v["a"]] == AxisInfo.unknown((64,))
    assert info[v["b"]].divisibility == (4,)


def test_vector_width_of_values_made_after_the_analysis_and_explicit_element_size():
    layout = BlockedEncoding((4,), (32,), (4,), (0,))
    func, info, v = _analyze(ADD_BODY, f"%x: !tt.ptr<f32> {ARG16}, %n: i32 {ARG16}")
    ptrs = v["ptrs"]
    del info[ptrs]                                  # as if a rewrite made it afterwards
    assert vector_width(ptrs, info, layout) == 1
    _, info, v = _analyze(ADD_BODY, f"%x: !tt.ptr<f32> {ARG16}, %n: i32 {ARG16}")
    assert vector_width(v["ptrs"], info, layout, elem_bytes=8) == 2


def test_every_test_and_reference_kernel_is_analysed():
    """The lowering relies on this analysis alone: it must answer for every kernel we have."""
    from tests.cpu.codegen_kernels import KERNELS
    texts = [KERNELS[name]() for name in sorted(KERNELS)]
    if REFERENCE.is_dir():
        texts += [p.read_text() for p in sorted(REFERENCE.glob("*.ttir"))]
        texts += [(REFERENCE / f"{n}.ttgir").read_text() for n in ("add", "softmax", "layernorm")]
    analysed = 0
    for text in texts:
        for func in parse_module(text).functions():
            info = analyze(func)
            for op in func.walk():
                assert all(r in info for r in op.results), op.name
            analysed += 1
    assert analysed >= len(KERNELS)
