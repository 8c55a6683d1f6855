"""The IR core: printing, parsing (Triton's own text included), round trips and the verifier."""
from __future__ import annotations

import pytest

from compiler.dialects import arith, scf, tt
from compiler.dialects.tt import PointerType
from compiler.ir import (Builder, DenseAttr, FileLineCol, FunctionType, Module, NameLoc,
                         ParseError, StringAttr, TensorType, TypeAttr,
                         VerificationError, f32, i1, i32, int_attr, new_region_with_block,
                         parse_module, print_module)
from compiler.ir.verifier import verify_module

REFERENCE_STAGES = [("add", "ttir"), ("softmax", "ttir"), ("layernorm", "ttir"),
                    ("matmul", "ttir"), ("add", "ttgir"), ("softmax", "ttgir"),
                    ("layernorm", "ttgir"), ("softmax", "source"), ("layernorm", "source"),
                    ("matmul", "source")]


def make_kernel() -> tuple[Module, Builder, list]:
    """An empty `tt.func public @k(%x: !tt.ptr<f32>, %n: i32)` and a builder inside it."""
    module = Module()
    loc = FileLineCol("k.py", 3, 0)
    fn = tt.FuncOp([], [], {"sym_name": StringAttr("k"), "sym_visibility": StringAttr("public"),
                            "function_type": TypeAttr(FunctionType((PointerType(f32), i32), ()))},
                   [new_region_with_block([PointerType(f32), i32])], loc)
    module.append(fn)
    for arg, name in zip(fn.body.args, ["x", "n"]):
        arg.loc = NameLoc(name, loc)
    return module, Builder(fn.body), list(fn.body.args)


@pytest.mark.parametrize("kernel,stage", REFERENCE_STAGES)
def test_triton_reference_text_parses_verifies_and_round_trips(reference_dir, kernel, stage):
    module = parse_module((reference_dir / f"{kernel}.{stage}").read_text())
    verify_module(module)
    text = print_module(module)
    again = print_module(parse_module(text))
    assert again == text


def test_printed_names_follow_locations_like_triton():
    module, b, (x, n) = make_kernel()
    with b.location(NameLoc("pid", FileLineCol("k.py", 4, 10))):
        pid = b.create(tt.GetProgramIdOp, [], [i32], {"axis": int_attr(0)}).result
    with b.location(NameLoc("offs", FileLineCol("k.py", 5, 10))):
        b.create(arith.BINARY_OPS["muli"], [pid, n], [i32])
        b.create(arith.BINARY_OPS["addi"], [pid, n], [i32])
    b.create(tt.ReturnOp, [], [])
    text = print_module(module)
    assert "%pid = tt.get_program_id x : i32 loc(" in text
    assert "%offs = arith.muli %pid, %n : i32" in text
    assert "%offs_0 = arith.addi %pid, %n : i32" in text
    assert '= loc("k.py":5:10)' in text


def test_constants_loops_and_reductions_round_trip():
    module, b, (x, n) = make_kernel()
    t = TensorType((128,), f32)
    neg_inf = b.create(arith.ConstantOp, [], [t], {"value": DenseAttr(float("-inf"), t)}).result
    tenth = b.create(arith.ConstantOp, [], [t], {"value": DenseAttr(0.1, t)}).result
    c0 = b.create(arith.ConstantOp, [], [i32], {"value": int_attr(0)}).result
    c1 = b.create(arith.ConstantOp, [], [i32], {"value": int_attr(1)}).result
    loop = b.create(scf.ForOp, [c0, n, c1, neg_inf], [t],
                    regions=[new_region_with_block([i32, t])])
    with b.at_end_of(loop.body):
        acc = b.create(arith.BINARY_OPS["addf"], [loop.body.args[1], tenth], [t]).result
        b.create(scf.YieldOp, [acc], [])
    red = b.create(tt.ReduceOp, [loop.results[0]], [f32], {"axis": int_attr(0)},
                   regions=[new_region_with_block([f32, f32])])
    with b.at_end_of(red.regions[0].block):
        lhs, rhs = red.regions[0].block.args
        m = b.create(arith.BINARY_OPS["maxnumf"], [lhs, rhs], [f32]).result
        b.create(tt.ReduceReturnOp, [m], [])
    b.create(tt.ReturnOp, [], [])
    verify_module(module)
    text = print_module(module)
    assert "arith.constant dense<0xFF800000> : tensor<128xf32>" in text
    assert "arith.constant dense<1.000000e-01> : tensor<128xf32>" in text
    assert "%0 = scf.for %1 = %c0_i32 to %n step %c1_i32 iter_args(%2 = %cst)" in text
    assert '"tt.reduce"(%0) <{axis = 0 : i32}> ({' in text
    reparsed = parse_module(text)
    verify_module(reparsed)
    assert print_module(reparsed) == text


def test_verifier_rejects_use_before_definition():
    module, b, (x, n) = make_kernel()
    first = b.create(arith.BINARY_OPS["addi"], [n, n], [i32])
    second = b.create(arith.BINARY_OPS["muli"], [n, n], [i32])
    first.set_operand(0, second.result)
    b.create(tt.ReturnOp, [], [])
    with pytest.raises(VerificationError, match="does not dominate"):
        verify_module(module)


def test_verifier_rejects_mismatched_types_and_missing_terminator():
    module, b, (x, n) = make_kernel()
    b.create(arith.BINARY_OPS["addf"], [n, n], [i32])
    with pytest.raises(VerificationError, match="floating-point"):
        verify_module(module)
    module, b, (x, n) = make_kernel()
    b.create(arith.BINARY_OPS["addi"], [n, n], [i32])
    with pytest.raises(VerificationError, match="terminator"):
        verify_module(module)


def test_verifier_checks_load_mask_shape():
    module, b, (x, n) = make_kernel()
    pt = TensorType((64,), PointerType(f32))
    ptrs = b.create(tt.SplatOp, [x], [pt]).result
    mask = b.create(tt.SplatOp, [b.create(arith.CmpIOp, [n, n], [i1],
                                          {"predicate": StringAttr("slt")}).result],
                    [TensorType((32,), i1)]).result
    b.create(tt.LoadOp, [ptrs, mask], [TensorType((64,), f32)])
    b.create(tt.ReturnOp, [], [])
    with pytest.raises(VerificationError, match="mask must be i1 of the pointer's shape"):
        verify_module(module)


def test_parse_errors_point_at_line_and_column():
    text = "module {\n  tt.func public @k() {\n    %0 = arith.bogus 1 : i32\n  }\n}\n"
    with pytest.raises(ParseError) as err:
        parse_module(text)
    message = str(err.value)
    assert "<ir>:3:10: error: unknown operation 'arith.bogus'" in message
    assert message.splitlines()[-1] == " " * 9 + "^"


def test_parse_error_for_undefined_value():
    text = "module {\n  tt.func public @k() {\n    %0 = arith.addi %a, %a : i32\n  }\n}\n"
    with pytest.raises(ParseError, match="use of undefined value %a"):
        parse_module(text)
