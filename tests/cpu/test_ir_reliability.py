"""Regression tests for issue 14's parser and verifier failure classes: each malformed input
gives a ParseError or VerificationError with file:line:col, the line and a caret; accepted
modules round-trip."""
from __future__ import annotations

import re

import pytest

from compiler.ir import parse_module, print_module, verify_module
from compiler.ir.parser import MAX_NESTING, ParseError
from compiler.ir.verifier_errors import VerificationError

LOCATED = re.compile(r"^t\.ir:(\d+):(\d+): error: [^\n]*\n[^\n]*\n *\^$")

BLOCKED = ("#blocked = #ttg.blocked<{sizePerThread = [SPT], threadsPerWarp = [32], "
           "warpsPerCTA = [WARPS], order = [0]}>\n")
TTGIR = (BLOCKED + 'module attributes {"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = '
         '32 : i32} {\n  tt.func public @k(%p: !tt.ptr<f32>) {\n'
         '    %r = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32, #blocked>\n'
         "    tt.return\n  }\n}\n")


def func(body: str, args: str = "%v: f32, %i: i32, %p: !tt.ptr<f32>") -> str:
    return f"module {{\n  tt.func public @k({args}) {{\n{body}\n    tt.return\n  }}\n}}\n"


def rejected(text: str, error=(ParseError, VerificationError), match: str = "") -> str:
    """Parse and verify `text`; it must fail with a located `error` matching `match`."""
    with pytest.raises(error) as info:
        verify_module(parse_module(text, "t.ir"))
    message = str(info.value)
    assert LOCATED.match(message), message
    assert re.search(match, message), message
    return message


def line_of(message: str) -> int:
    return int(LOCATED.match(message).group(1))


def test_unary_op_with_two_operands_is_rejected():
    rejected(func("    %r = math.rsqrt %v, %v : f32"), VerificationError,
             "expects 1 operands, got 2")


def test_cast_of_the_wrong_kind_is_rejected():
    rejected(func("    %r = arith.sitofp %v : f32 to f32"), VerificationError, "casts int to float")
    rejected(func("    %r = arith.extsi %i : i32 to i32"), VerificationError, "must widen")


def test_custom_syntax_types_are_checked_against_the_operands():
    rejected(func("    %r = arith.sitofp %i : i64 to f32"), ParseError,
             "operand #0 has type i32, but i64 is written")
    rejected(func("    %c = arith.cmpi slt, %i, %i : i64"), ParseError, "i64 is written")


def test_i1_attribute_out_of_range_is_rejected_not_printed_as_true():
    text = func("    %r = tt.make_range {end = 128 : i1, start = 0 : i32} : tensor<128xi32>")
    assert line_of(rejected(text, ParseError, "128 does not fit in i1")) == 3


def test_strings_unterminated_and_with_raw_carriage_returns():
    rejected(func('    "tt.print"() <{prefix = "abc}> : () -> ()'), ParseError,
             "unterminated string")
    text = func('    "tt.print"() <{prefix = "a\rb\\0Dc\\22"}> : () -> ()')
    module = parse_module(text)
    assert module.ops[0].body.ops[0].attributes["prefix"].value == 'a\rb\rc"'
    printed = print_module(module)
    assert "\r" not in printed and "\\0D" in printed
    assert print_module(parse_module(printed)) == printed


@pytest.mark.parametrize("depth", [MAX_NESTING + 1, 5000])
def test_deep_nesting_is_refused_with_a_message(depth):
    nested = "tensor<" * depth + "f32" + ">" * depth
    rejected(func("    %r = ub.poison : " + nested), ParseError, "nested deeper than")
    ifs = "    scf.if %c {\n" * depth + "    }\n" * depth
    rejected(func("    %c = arith.constant true : i1\n" + ifs), ParseError, "nested deeper than")
    loc = "loc(" + "callsite(" * depth + "unknown" + " at unknown)" * depth + ")"
    rejected(func(f"    %r = arith.addf %v, %v : f32 {loc}"), ParseError, "nested deeper than")


def test_errors_inside_loc_aliases_point_at_the_alias_line():
    text = func("    %r = arith.addf %v, %v : f32 loc(#loc3)") + \
        '#loc = loc("f.py":1:0)\n#loc3 = loc("x"(#loc9))\n'
    message = rejected(text, ParseError, "undefined location alias #loc9")
    assert line_of(message) == 8
    cyclic = func("    %r = arith.addf %v, %v : f32 loc(#loc1)") + "#loc1 = loc(\"x\"(#loc1))\n"
    rejected(cyclic, ParseError, "refers to itself")


@pytest.mark.parametrize("number", ["9" * 5000, "1" + "0" * 45, str(2**64)])
def test_huge_numbers_are_refused(number):
    rejected(func(f"    %c = arith.constant {number} : i32"), ParseError)
    rejected(func(f"    %r = tt.make_range {{end = {number} : i32, start = 0 : i32}} : "
                  f"tensor<{number}xi32>"), ParseError)


def test_encodings_missing_a_field_or_of_wrong_kind():
    text = TTGIR.replace("SPT", "1").replace("WARPS", "4")
    verify_module(parse_module(text))
    rejected(text.replace(", warpsPerCTA = [4]", ""), ParseError, "needs warpsPerCTA")
    rejected(text.replace("order = [0]", "order = 0"), ParseError, "'order' must be a list")
    rejected(text.replace("order = [0]", 'order = "x"'), ParseError)


@pytest.mark.parametrize("spt,warps,match", [
    ("0", "4", "must be positive"),
    ("99999999999", "4", "sizePerThread above"),
    ("1", "8", "covers 8 warps, the module has 4"),
])
def test_layout_sanity(spt, warps, match):
    rejected(TTGIR.replace("SPT", spt).replace("WARPS", warps), VerificationError, match)


def test_order_must_be_a_permutation():
    text = TTGIR.replace("SPT", "1").replace("WARPS", "4").replace("order = [0]", "order = [1]")
    rejected(text, VerificationError, "not a permutation")


def test_ttgir_tensors_need_layouts():
    text = TTGIR.replace("SPT", "1").replace("WARPS", "4").replace(", #blocked>\n", ">\n")
    rejected(text, VerificationError, "ttgir tensors need a layout")


def test_wrong_attribute_kind_is_a_verification_error():
    rejected(func('    %r = "tt.get_program_id"() <{axis = "x"}> : () -> i32'),
             VerificationError, "attribute 'axis' must be of kind IntegerAttr")
    rejected(func('    %r = "tt.get_program_id"() : () -> i32'), VerificationError,
             "needs the attribute 'axis'")
    # `0 : i1` prints as `false`, which would read back as a BoolAttr: refused from the start
    rejected(func('    %r = "tt.get_program_id"() <{axis = 0 : i1}> : () -> i32'),
             VerificationError, "attribute 'axis' must be of kind IntegerAttr, got false")


def test_scf_while_region_types_are_checked():
    body = ('    %r = "scf.while"(%i) ({\n    ^bb0(%a: f32):\n'
            '      %t = arith.constant true : i1\n'
            '      scf.condition(%t) %i : i32\n    }, {\n    ^bb1(%b: i32):\n'
            '      scf.yield %b : i32\n    }) : (i32) -> i32')
    rejected(func(body.replace("scf.condition(%t) %i : i32", "scf.condition %t, %i : i1, i32")),
             VerificationError, "before region's arguments")


def test_calls_name_an_existing_function_with_its_type():
    callee = "  tt.func private @f(%x: i32) -> i32 {\n    tt.return %x : i32\n  }\n"
    good = func("    %r = tt.call @f(%i) : (i32) -> (i32)").replace("module {\n",
                                                                     "module {\n" + callee)
    verify_module(parse_module(good))
    rejected(good.replace("tt.call @f", "tt.call @g"), VerificationError, "not a function")
    rejected(good.replace("%r = tt.call @f(%i) : (i32) -> (i32)",
                          "%r = tt.call @f(%i) : (i32) -> (f32)"), VerificationError, "differ")


def test_redefined_and_out_of_range_values():
    rejected(func("    %r = arith.addf %v, %v : f32\n    %r = arith.addf %v, %v : f32"),
             ParseError, "redefinition of %r")
    rejected(func("    %r = arith.addf %v#3, %v : f32"), ParseError, "single result")


def test_verifier_errors_of_built_modules_name_the_source_location():
    from compiler.ir import FileLineCol
    module = parse_module(func("    %r = math.rsqrt %v, %v : f32"))
    op = module.ops[0].body.ops[0]
    del module.parsed_from
    op.loc = FileLineCol(__file__, 1, 5)
    with pytest.raises(VerificationError, match=rf"{re.escape(__file__)}:1:5: error: "
                                                r"'math.rsqrt': expects 1 operands"):
        verify_module(module)


def test_linear_layouts_need_bases():
    text = TTGIR.replace("SPT", "1").replace("WARPS", "4").replace(
        "#ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], "
        "order = [0]}>", "#ttg.linear<{register = [], lane = [], warp = []}>")
    rejected(text, VerificationError, "needs bases")
