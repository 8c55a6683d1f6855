"""The `math` dialect: transcendental and other elementwise functions on floats."""
from __future__ import annotations

from compiler.ir.accessors import operand
from compiler.ir.syntax import SameType
from compiler.ir.traits import Elementwise, Pure

from .common import (chain, define_op, set_counts, verify_float_operands, verify_int_operands,
                     verify_same_type)

FLOAT_UNARY = ["exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "absf", "floor",
               "ceil", "erf", "tanh", "log1p", "expm1", "tan", "round", "trunc", "roundeven"]
UNARY_OPS = {}
for _name in FLOAT_UNARY:
    UNARY_OPS[_name] = define_op(f"Math{_name.capitalize()}Op", f"math.{_name}", SameType(),
                                 (Pure, Elementwise),
                                 chain(verify_same_type, verify_float_operands), src=operand(0))

AbsIOp = define_op("MathAbsIOp", "math.absi", SameType(), (Pure, Elementwise),
                   chain(verify_same_type, verify_int_operands), src=operand(0))
FmaOp = define_op("MathFmaOp", "math.fma", SameType(), (Pure, Elementwise),
                  chain(verify_same_type, verify_float_operands), a=operand(0), b=operand(1),
                  c=operand(2))
CopySignOp = define_op("MathCopySignOp", "math.copysign", SameType(), (Pure, Elementwise),
                       chain(verify_same_type, verify_float_operands),
                       magnitude=operand(0), sign=operand(1))

set_counts(list(UNARY_OPS.values()) + [AbsIOp], operands=1, results=1)
set_counts([FmaOp], operands=3, results=1)
set_counts([CopySignOp], operands=2, results=1)
