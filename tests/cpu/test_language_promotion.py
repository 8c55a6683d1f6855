"""Triton's promotion and division semantics, checked against a table: the result dtype of
each binary operation and the arith ops it builds (C-like // and %, / always in floating point,
Python scalars adapting to tensor dtypes, numpy broadcasting, i1 comparisons)."""
from __future__ import annotations

import pytest

import compiler.language as tl
from compiler.frontend.errors import SemanticError
from compiler.frontend.semantic import Semantic, computation_type
from compiler.ir.builder import Builder
from compiler.ir.core import Block
from compiler.language.core import block_type, constexpr, tensor

D = {"i1": tl.int1, "i8": tl.int8, "i16": tl.int16, "i32": tl.int32, "i64": tl.int64,
     "u8": tl.uint8, "u32": tl.uint32, "u64": tl.uint64, "f16": tl.float16, "bf16": tl.bfloat16,
     "f32": tl.float32, "f64": tl.float64}


def run(method: str, a, b, shape_a=(16,), shape_b=(16,)):
    """Apply `Semantic.<method>` to a block argument of dtype `a` and either a block argument of
    dtype `b` or the Python scalar `b`; returns (result dtype name, shape, op names built)."""
    block = Block()
    sem = Semantic(Builder(block))

    def arg(dt, shape):
        t = block_type(dt, shape) if shape else dt
        return tensor(block.add_argument(t.to_ir()), t)
    lhs = arg(D[a], shape_a)
    rhs = arg(D[b], shape_b) if isinstance(b, str) else constexpr(b)
    result = getattr(sem, method)(lhs, rhs)
    return str(result.dtype), result.shape, [op.name for op in block.ops]


PROMOTION = [
    # (lhs, rhs, result)
    ("i32", "i64", "int64"), ("i64", "i32", "int64"), ("i8", "i16", "int16"),
    ("i8", "u8", "uint8"), ("u8", "i32", "int32"), ("u32", "i32", "uint32"),
    ("i64", "u32", "int64"), ("u32", "u64", "uint64"), ("i1", "i32", "int32"),
    ("f16", "f32", "fp32"), ("f32", "f16", "fp32"), ("bf16", "f16", "fp32"),
    ("f16", "bf16", "fp32"), ("bf16", "bf16", "bf16"), ("f16", "f16", "fp16"),
    ("f64", "f32", "fp64"), ("i32", "f32", "fp32"), ("i16", "f16", "fp16"),
    ("i64", "bf16", "bf16"), ("i32", "f64", "fp64"),
    # Python scalars adapt to the tensor's dtype unless they are of a higher kind (rule R0:
    # bool < integer < float).
    ("i8", 100, "int8"), ("f16", 2.0, "fp16"), ("f16", 2, "fp16"), ("i32", 2.5, "fp32"),
    ("u8", 1, "uint8"), ("u32", 7, "uint32"), ("bf16", 1.0, "bf16"), ("i64", 1, "int64"), ("i1", True, "int1"),
]


@pytest.mark.parametrize("a,b,expected", PROMOTION)
def test_add_promotion_table(a, b, expected):
    dtype, _, ops = run("add", a, b)
    assert dtype == expected
    assert ops[-1] == ("arith.addf" if expected.startswith(("fp", "bf")) else "arith.addi")


@pytest.mark.parametrize("a,b,pattern", [
    ("i8", 300, r"Scalar 300 is out of range for type int8 \[-128, 127\]"),
    ("i32", 2 ** 56 - 1, "out of range for type int32"),
    ("u8", 256, "out of range for type uint8"),
    ("u32", -1, "unsigned tensor .* and a negative scalar"),
])
def test_a_python_int_must_fit_the_tensor_dtype_it_adapts_to(a, b, pattern):
    """Rule R0 gives the scalar the tensor's dtype; one that does not fit is refused (as
    Triton does, and test_core's test_scalar_overflow checks) instead of wrapping around."""
    with pytest.raises(SemanticError, match=pattern):
        run("add", a, b)


DIVISION = [
    # (method, lhs, rhs, result dtype, final op)
    ("floordiv", "i32", "i32", "int32", "arith.divsi"),
    ("floordiv", "u32", "u32", "uint32", "arith.divui"),
    ("floordiv", "i64", "i32", "int64", "arith.divsi"),
    ("mod", "i32", "i32", "int32", "arith.remsi"),
    ("mod", "u8", "u8", "uint8", "arith.remui"),
    ("mod", "f32", "f32", "fp32", "arith.remf"),
    ("mod", "f16", "f16", "fp32", "arith.remf"),
    ("truediv", "i32", "i32", "fp32", "arith.divf"),
    ("truediv", "i32", 2, "fp32", "arith.divf"),
    ("truediv", "f16", "f16", "fp32", "arith.divf"),
    ("truediv", "f16", 2.0, "fp32", "arith.divf"),
    ("truediv", "f64", "i32", "fp64", "arith.divf"),
    ("truediv", "f32", "f32", "fp32", "arith.divf"),
    ("rshift", "i32", "i32", "int32", "arith.shrsi"),
    ("rshift", "u32", "u32", "uint32", "arith.shrui"),
    ("lshift", "i16", 2, "int16", "arith.shli"),
]


@pytest.mark.parametrize("method,a,b,expected,op", DIVISION)
def test_division_and_shift_table(method, a, b, expected, op):
    dtype, _, ops = run(method, a, b)
    assert dtype == expected
    assert ops[-1] == op


def test_integer_true_division_converts_both_sides_to_fp32():
    _, _, ops = run("truediv", "i32", "i32")
    assert ops == ["arith.sitofp", "arith.sitofp", "arith.divf"]
    _, _, ops = run("truediv", "u32", "u32")
    assert ops == ["arith.uitofp", "arith.uitofp", "arith.divf"]


@pytest.mark.parametrize("a,b", [("i32", "u32"), ("u8", "i8")])
def test_mixed_signedness_division_is_rejected(a, b):
    for method in ("floordiv", "mod", "truediv"):
        with pytest.raises(SemanticError, match="because they have different signedness"):
            run(method, a, b)


def test_floor_division_of_floats_is_rejected():
    with pytest.raises(SemanticError, match="`//` needs integer operands"):
        run("floordiv", "f32", "f32")


COMPARE = [
    ("lt", "i32", "i32", "slt", "arith.cmpi"), ("lt", "u32", "u32", "ult", "arith.cmpi"),
    ("ge", "i8", "u8", "uge", "arith.cmpi"), ("lt", "f32", "f32", "olt", "arith.cmpf"),
    ("eq", "f16", "f16", "oeq", "arith.cmpf"), ("ne", "f32", "f32", "une", "arith.cmpf"),
    ("gt", "i32", 1.5, "ogt", "arith.cmpf"),
]


@pytest.mark.parametrize("pred,a,b,expected_pred,op", COMPARE)
def test_comparisons_give_i1(pred, a, b, expected_pred, op):
    block = Block()
    sem = Semantic(Builder(block))
    lhs = tensor(block.add_argument(block_type(D[a], (4,)).to_ir()), block_type(D[a], (4,)))
    rhs = constexpr(b) if not isinstance(b, str) else \
        tensor(block.add_argument(block_type(D[b], (4,)).to_ir()), block_type(D[b], (4,)))
    result = sem.compare(pred, lhs, rhs)
    assert result.dtype == tl.int1
    last = block.ops[-1]
    assert last.name == op and last.attributes["predicate"].value == expected_pred


def test_numpy_broadcasting():
    dtype, shape, ops = run("add", "f32", "f32", shape_a=(4, 1), shape_b=(8,))
    assert shape == (4, 8)
    assert ops == ["tt.broadcast", "tt.expand_dims", "tt.broadcast", "arith.addf"]
    dtype, shape, ops = run("mul", "i32", "i32", shape_a=(16,), shape_b=())
    assert shape == (16,) and ops == ["tt.splat", "arith.muli"]
    with pytest.raises(SemanticError, match="incompatible"):
        run("add", "f32", "f32", shape_a=(4, 2), shape_b=(8,))


def test_python_scalar_becomes_dense_constant_of_the_tensor_dtype():
    block = Block()
    sem = Semantic(Builder(block))
    t = block_type(tl.float16, (8,))
    x = tensor(block.add_argument(t.to_ir()), t)
    sem.add(x, constexpr(1))
    const = block.ops[0]
    assert const.name == "arith.constant"
    assert str(const.results[0].type) == "tensor<8xf16>"


def test_computation_type_rules_directly():
    assert computation_type(tl.int32, False, tl.int64, False) == tl.int64
    assert computation_type(tl.float16, False, tl.float16, False, div_or_mod=True) == tl.float32
    assert computation_type(tl.bfloat16, False, tl.float16, False) == tl.float32
    assert computation_type(tl.int8, True, tl.float16, False) == tl.float16


def test_int_overflowing_literals_pick_wider_types():
    from compiler.frontend.semantic import literal_dtype
    assert literal_dtype(2**31 - 1) == tl.int32
    assert literal_dtype(2**31) == tl.uint32
    assert literal_dtype(2**32) == tl.int64
    assert literal_dtype(2**63) == tl.uint64
    assert literal_dtype(1.0) == tl.float32
    assert literal_dtype(True) == tl.int1
