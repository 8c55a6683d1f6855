"""Printed forms that Triton's own `.ttgir` tests write (test_core.py's test_chain_reduce,
test_scan_layouts, test_reduce_layouts): a quoted comparison predicate (`arith.cmpi "sgt", ...`),
MLIR's generic form with the predicate as its enum number, and `tt.assert`'s custom form. Each
parses, prints in our canonical form and parses back to the same text; malformed ones fail
with a located message."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

from compiler.codegen.lowering import LoweringOptions, lower_module
from compiler.ir import parse_module, verify_module
from compiler.ir.parser import ParseError
from compiler.ir.printer import print_module
from compiler.ir.verifier_errors import VerificationError

from .filecheck import filecheck
from .simt import run_kernel


def _module(body: str, args: str = "%a: i32, %b: i32, %x: f32") -> str:
    return textwrap.dedent(f"""\
    module attributes {{"ttg.num-warps" = 4 : i32}} {{
      tt.func public @k({args}) {{
    {textwrap.indent(textwrap.dedent(body), "    ")}
        tt.return
      }}
    }}
    """)


def _round_trip(text: str) -> str:
    printed = print_module(parse_module(text))
    assert print_module(parse_module(printed)) == printed
    return printed


def test_quoted_predicates_parse_and_print_bare():
    printed = _round_trip(_module("""
        %0 = arith.cmpi "sgt", %a, %b : i32
        %1 = arith.cmpf "olt", %x, %x : f32
        %2 = arith.cmpi ule, %a, %b : i32
    """))
    filecheck(printed, """
        CHECK: arith.cmpi sgt, %a, %b : i32
        CHECK: arith.cmpf olt, %x, %x : f32
        CHECK: arith.cmpi ule, %a, %b : i32
    """)


@pytest.mark.parametrize("op,number,name,ty", [("arith.cmpi", 4, "sgt", "i32"),
                                               ("arith.cmpi", 0, "eq", "i32"),
                                               ("arith.cmpf", 4, "olt", "f32"),
                                               ("arith.cmpf", 13, "une", "f32")])
def test_generic_form_takes_the_predicate_enum_number(op, number, name, ty):
    v = "%a, %b" if ty == "i32" else "%x, %x"
    printed = _round_trip(_module(
        f'%0 = "{op}"({v}) <{{predicate = {number} : i64}}> : ({ty}, {ty}) -> i1'))
    filecheck(printed, f"CHECK: {op} {name}, {v} : {ty}")


def test_generic_form_string_predicate_still_parses():
    printed = _round_trip(
        _module('%0 = "arith.cmpi"(%a, %b) <{predicate = "sge"}> : (i32, i32) -> i1'))
    filecheck(printed, "CHECK: arith.cmpi sge, %a, %b : i32")


def test_out_of_range_predicate_number_is_located():
    text = _module('%0 = "arith.cmpi"(%a, %b) <{predicate = 10 : i64}> : (i32, i32) -> i1')
    with pytest.raises(ParseError) as err:
        parse_module(text, "k.ttgir")
    assert "k.ttgir:3:" in str(err.value) and "predicate number 10" in str(err.value)
    assert "^" in str(err.value)


def test_unknown_quoted_predicate_fails_verification():
    with pytest.raises(VerificationError, match="unknown predicate 'bigger'"):
        verify_module(parse_module(_module('%0 = arith.cmpi "bigger", %a, %b : i32')))


def test_assert_custom_form_round_trips():
    printed = _round_trip(_module("""
        %0 = arith.cmpi slt, %a, %b : i32
        tt.assert %0, "overflow \\"detected\\"" : i1
        %1 = arith.cmpi sge, %a, %b : i32
        tt.assert %1, "x" {note = 1 : i32} : i1
    """))
    filecheck(printed, r"""
        CHECK: tt.assert %0, "overflow \"detected\"" : i1
        CHECK: tt.assert %1, "x" {note = 1 : i32} : i1
    """)


def test_assert_generic_form_prints_custom():
    printed = _round_trip(_module("""
        %0 = arith.cmpi slt, %a, %b : i32
        "tt.assert"(%0) <{message = "m"}> : (i1) -> ()
    """))
    filecheck(printed, 'CHECK: tt.assert %0, "m" : i1')


@pytest.mark.parametrize("body,expected", [
    ('tt.assert %a, "m" : i1', "operand #0 has type i32, but i1 is written"),
    ('tt.assert %a : i32', "expected ','"),
    ('tt.assert %a, m : i32', "expected a string"),
])
def test_malformed_assert_is_located(body, expected):
    with pytest.raises(ParseError) as err:
        parse_module(_module(body), "k.ttgir")
    assert "k.ttgir:3:" in str(err.value) and expected in str(err.value)


def test_assert_needs_an_i1_condition():
    with pytest.raises(VerificationError, match="condition must be i1"):
        verify_module(parse_module(_module('"tt.assert"(%a) <{message = "m"}> : (i32) -> ()')))


BLOCKED = ("#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], "
           "order = [0, 1]}>")

#: `%off`, the row-major offsets of a 32x16 tile in the layout `#b` (for kernels written here)
TILE_OFFSETS = """    %r = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #ttg.slice<{dim = 1, parent = #b}>>
    %r2 = tt.expand_dims %r {axis = 1 : i32} : tensor<32xi32, #ttg.slice<{dim = 1, parent = #b}>> -> tensor<32x1xi32, #b>
    %c16 = arith.constant dense<16> : tensor<32x1xi32, #b>
    %row = arith.muli %r2, %c16 : tensor<32x1xi32, #b>
    %c = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32, #ttg.slice<{dim = 0, parent = #b}>>
    %c2 = tt.expand_dims %c {axis = 0 : i32} : tensor<16xi32, #ttg.slice<{dim = 0, parent = #b}>> -> tensor<1x16xi32, #b>
    %rowb = tt.broadcast %row : tensor<32x1xi32, #b> -> tensor<32x16xi32, #b>
    %colb = tt.broadcast %c2 : tensor<1x16xi32, #b> -> tensor<32x16xi32, #b>
    %off = arith.addi %rowb, %colb : tensor<32x16xi32, #b>"""

# the shape of test_scan_layouts' kernel with its overflow check (written here, not copied):
# a cumulative sum along axis 1 of a 32x16 int tile whose combine region asserts no overflow
SCAN = f"""
#b = {BLOCKED}
module attributes {{"ttg.num-warps" = 4 : i32, "ttg.num-ctas" = 1 : i32, "ttg.threads-per-warp" = 32 : i32}} {{
  tt.func public @scan(%src: !tt.ptr<i32> {{tt.divisibility = 16 : i32}}, %dst: !tt.ptr<i32> {{tt.divisibility = 16 : i32}}) {{
{TILE_OFFSETS}
    %sp = tt.splat %src : !tt.ptr<i32> -> tensor<32x16x!tt.ptr<i32>, #b>
    %sptr = tt.addptr %sp, %off : tensor<32x16x!tt.ptr<i32>, #b>, tensor<32x16xi32, #b>
    %x = tt.load %sptr : tensor<32x16x!tt.ptr<i32>, #b>
    %y = "tt.scan"(%x) <{{axis = 1 : i32, reverse = false}}> ({{
    ^bb0(%p: i32, %q: i32):
      %s = arith.addi %p, %q : i32
      %p64 = arith.extsi %p : i32 to i64
      %q64 = arith.extsi %q : i32 to i64
      %s64 = arith.addi %p64, %q64 : i64
      %max = arith.constant 2147483647: i64
      %min = arith.constant -2147483648: i64
      %le = arith.cmpi "sle", %s64, %max : i64
      %ge = arith.cmpi sge, %s64, %min : i64
      %ok = arith.andi %le, %ge : i1
      tt.assert %ok, "overflow detected" : i1
      tt.scan.return %s : i32
    }}) : (tensor<32x16xi32, #b>) -> tensor<32x16xi32, #b>
    %dp = tt.splat %dst : !tt.ptr<i32> -> tensor<32x16x!tt.ptr<i32>, #b>
    %dptr = tt.addptr %dp, %off : tensor<32x16x!tt.ptr<i32>, #b>, tensor<32x16xi32, #b>
    tt.store %dptr, %y : tensor<32x16x!tt.ptr<i32>, #b>
    tt.return
  }}
}}
"""


def test_scan_with_an_asserting_combine_region_runs():
    """The custom forms lower: the scan is right and its in-region assert never fires."""
    kernel = lower_module(parse_module(SCAN), LoweringOptions(optimize=False))
    x = np.random.RandomState(17).randint(-100, 100, (32, 16)).astype(np.int32)
    out = np.zeros_like(x)
    memory = run_kernel(kernel, (1,), [x, out])
    np.testing.assert_array_equal(memory.read(1, out), np.cumsum(x, axis=1))
