"""The `arith` dialect: integer and float arithmetic, comparisons, select, casts, constants."""
from __future__ import annotations

from compiler.ir.accessors import attr, operand
from compiler.ir.attributes import DenseAttr, FloatAttr, IntegerAttr, StringAttr
from compiler.ir.core import Operation, register_op
from compiler.ir.syntax import AttrsThenType, Compare, Convert, OperandTypes, SameType
from compiler.ir.types import IntegerType, TensorType, shape_of
from compiler.ir.traits import (Cast, Commutative, ConstantLike, Elementwise, LayoutLeaf, Pure,
                                SameOperandsAndResultLayout, SameOperandsAndResultType)
from compiler.ir.verifier_errors import VerificationError

from .common import (chain, define_op, set_attribute_kinds, set_counts, verify_cast_kinds,
                     verify_float_operands, verify_int_operands, verify_same_shape,
                     verify_same_type)

BINARY = (Pure, Elementwise, SameOperandsAndResultType)


@register_op
class ConstantOp(Operation):
    """`arith.constant`: a scalar or splat tensor constant held in the `value` attribute."""

    name = "arith.constant"
    syntax = AttrsThenType(bare_attr="value")
    traits = (ConstantLike, SameOperandsAndResultLayout, LayoutLeaf)

    def verify_op(self):
        value = self.attributes.get("value")
        if not isinstance(value, (IntegerAttr, FloatAttr, DenseAttr)):
            raise VerificationError(self, "needs a `value` attribute")
        if value.type != self.results[0].type:
            raise VerificationError(self, f"value type {value.type} differs from result type "
                                          f"{self.results[0].type}")

    @property
    def value(self):
        return self.attributes["value"].value


INT_BINARY = ["addi", "subi", "muli", "divsi", "divui", "remsi", "remui", "andi", "ori", "xori",
              "shli", "shrsi", "shrui", "maxsi", "minsi", "maxui", "minui", "ceildivsi",
              "mulhiui"]
FLOAT_BINARY = ["addf", "subf", "mulf", "divf", "remf", "maxnumf", "minnumf", "maximumf",
                "minimumf"]
COMMUTATIVE = {"addi", "muli", "andi", "ori", "xori", "maxsi", "minsi", "maxui", "minui", "addf",
               "mulf", "maxnumf", "minnumf", "maximumf", "minimumf", "mulhiui"}

BINARY_OPS: dict[str, type[Operation]] = {}
for _name in INT_BINARY + FLOAT_BINARY:
    _check = verify_int_operands if _name in INT_BINARY else verify_float_operands
    _traits = BINARY + ((Commutative,) if _name in COMMUTATIVE else ())
    BINARY_OPS[_name] = define_op(f"{_name.capitalize()}Op", f"arith.{_name}", SameType(), _traits,
                                  chain(verify_same_type, _check), lhs=operand(0), rhs=operand(1))

NegFOp = define_op("NegFOp", "arith.negf", SameType(), (Pure, Elementwise),
                   chain(verify_same_type, verify_float_operands), src=operand(0))

INT_PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
FLOAT_PREDICATES = ("false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge",
                    "ult", "ule", "une", "uno", "true")


def _verify_compare(predicates):
    def verify(op):
        pred = op.attributes["predicate"].value
        if pred not in predicates:
            raise VerificationError(op, f"unknown predicate '{pred}'; allowed: "
                                    + ", ".join(predicates))
        if op.operands[0].type != op.operands[1].type:
            raise VerificationError(op, "compared operands must have the same type")
        if op.results[0].type.scalar != IntegerType(1):
            raise VerificationError(op, "result must be i1")
        verify_same_shape(op)
    return verify


CmpIOp = define_op("CmpIOp", "arith.cmpi", Compare(), (Pure, Elementwise),
                   _verify_compare(INT_PREDICATES), lhs=operand(0), rhs=operand(1),
                   predicate=attr("predicate"))
CmpFOp = define_op("CmpFOp", "arith.cmpf", Compare(), (Pure, Elementwise),
                   _verify_compare(FLOAT_PREDICATES), lhs=operand(0), rhs=operand(1),
                   predicate=attr("predicate"))



def _numbered_predicate(predicates):
    """MLIR's generic form writes a comparison's predicate as its enum number
    (`<{predicate = 4 : i64}>`: sgt); the number is its position in `predicates`."""
    def convert(attrs: dict, error) -> dict:
        pred = attrs.get("predicate")
        if isinstance(pred, IntegerAttr):
            if not 0 <= pred.value < len(predicates):
                raise error(f"predicate number {pred.value} is not one of 0..{len(predicates) - 1}")
            attrs = {**attrs, "predicate": StringAttr(predicates[pred.value])}
        return attrs
    return convert


CmpIOp.generic_attributes = staticmethod(_numbered_predicate(INT_PREDICATES))
CmpFOp.generic_attributes = staticmethod(_numbered_predicate(FLOAT_PREDICATES))

# `%c, %a, %b : Tc, T` (the condition's type first, as MLIR prints tensor selects)
_SELECT_SYNTAX = OperandTypes(lambda types, attrs: types[-1], num_types=2)


def _verify_select(op):
    c, a, b = op.operands
    if c.type.scalar != IntegerType(1):
        raise VerificationError(op, f"condition must be i1, got {c.type}")
    if a.type != b.type or a.type != op.results[0].type:
        raise VerificationError(op, "both branches and the result must have the same type")
    if isinstance(c.type, TensorType) and shape_of(c.type) != shape_of(a.type):
        raise VerificationError(op, "condition shape differs from the operands'")


SelectOp = define_op("SelectOp", "arith.select", _SELECT_SYNTAX, (Pure, Elementwise),
                     _verify_select, condition=operand(0), true_value=operand(1),
                     false_value=operand(2))


def _verify_cast(op):
    if shape_of(op.operands[0].type) != shape_of(op.results[0].type):
        raise VerificationError(op, f"cast must keep the shape: {op.operands[0].type} to "
                                    f"{op.results[0].type}")


def _verify_bitcast(op):
    src, dst = op.operands[0].type.scalar, op.results[0].type.scalar
    if not all(t.is_int or t.is_float for t in (src, dst)) or src.width != dst.width:
        raise VerificationError(op, f"bitcast keeps the bit width: {src} to {dst}")


_CAST_KINDS = {"extsi": verify_cast_kinds("int", "int", "<"),
               "extui": verify_cast_kinds("int", "int", "<"),
               "trunci": verify_cast_kinds("int", "int", ">"),
               "extf": verify_cast_kinds("float", "float", "<"),
               "truncf": verify_cast_kinds("float", "float", ">"),
               "sitofp": verify_cast_kinds("int", "float"),
               "uitofp": verify_cast_kinds("int", "float"),
               "fptosi": verify_cast_kinds("float", "int"),
               "fptoui": verify_cast_kinds("float", "int"),
               "bitcast": _verify_bitcast,
               "index_cast": verify_cast_kinds("int", "int")}

CAST_OPS: dict[str, type[Operation]] = {}
for _name in ["extsi", "extui", "trunci", "extf", "truncf", "sitofp", "uitofp", "fptosi",
              "fptoui", "bitcast", "index_cast"]:
    CAST_OPS[_name] = define_op(f"{_name.capitalize()}Op", f"arith.{_name}", Convert("to"),
                                (Pure, Elementwise, Cast), chain(_verify_cast, _CAST_KINDS[_name]),
                                src=operand(0))

# ---- operand and result counts (checked before the verifiers above run) ------------------------
set_counts([ConstantOp], operands=0, results=1)
set_counts(list(BINARY_OPS.values()) + [CmpIOp, CmpFOp], operands=2, results=1)
set_counts([NegFOp] + list(CAST_OPS.values()), operands=1, results=1)
set_counts([SelectOp], operands=3, results=1)
set_attribute_kinds([CmpIOp, CmpFOp], predicate=StringAttr)
