"""Evaluating arith ops on constants the way the hardware would (wrapping integers, IEEE
floats of the op's width), for canonicalize's folding patterns. Each function returns the
folded Python number, or None when folding is not safe (division by zero, overflow, an
unsupported type)."""
from __future__ import annotations

import math
import operator

import numpy as np

from compiler.ir.core import OP_REGISTRY
from compiler.ir.types import FloatType, IntegerType, Type

NUMPY_FLOATS = {"f16": np.float16, "f32": np.float32, "f64": np.float64}


def two_complement(value: int, width: int) -> int:
    """`value`'s bits as a signed number, i1 included (true is -1, as extsi and slt see it)."""
    value = int(value) & ((1 << width) - 1)
    return value - (1 << width) if value >> (width - 1) else value


def to_signed(value: int, width: int) -> int:
    """How an `iN` constant is stored: two's complement, except i1, which stays 0/1."""
    return int(value) & 1 if width == 1 else two_complement(value, width)


def to_unsigned(value: int, width: int) -> int:
    """`value`'s bits read as an unsigned `width`-bit number."""
    return int(value) & ((1 << width) - 1)


def _div_trunc(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _int_binary(name: str, a: int, b: int, width: int) -> int | None:
    sa, sb = two_complement(a, width), two_complement(b, width)
    ua, ub = to_unsigned(a, width), to_unsigned(b, width)
    min_int = -(1 << (width - 1))
    if name in ("divsi", "remsi", "ceildivsi") and (sb == 0 or (sa == min_int and sb == -1)):
        return None
    if name in ("divui", "remui") and ub == 0:
        return None
    if name in ("shli", "shrsi", "shrui") and not 0 <= ub < width:
        return None
    table = {
        "addi": lambda: sa + sb, "subi": lambda: sa - sb, "muli": lambda: sa * sb,
        "divsi": lambda: _div_trunc(sa, sb), "divui": lambda: ua // ub,
        "remsi": lambda: sa - _div_trunc(sa, sb) * sb, "remui": lambda: ua % ub,
        "ceildivsi": lambda: -((-sa) // sb),          # floor division, negated twice
        "andi": lambda: ua & ub, "ori": lambda: ua | ub, "xori": lambda: ua ^ ub,
        "shli": lambda: ua << ub, "shrui": lambda: ua >> ub, "shrsi": lambda: sa >> ub,
        "maxsi": lambda: max(sa, sb), "minsi": lambda: min(sa, sb),
        "maxui": lambda: max(ua, ub), "minui": lambda: min(ua, ub),
    }
    if name not in table:
        return None
    return to_signed(table[name](), width)


def _float_binary(name: str, a: float, b: float, kind: str) -> float | None:
    dtype = NUMPY_FLOATS.get(kind)
    if dtype is None:
        return None
    x, y = dtype(a), dtype(b)
    with np.errstate(all="ignore"):
        table = {
            "addf": lambda: x + y, "subf": lambda: x - y, "mulf": lambda: x * y,
            "divf": lambda: x / y if y != 0 else None,
            "maxnumf": lambda: np.fmax(x, y), "minnumf": lambda: np.fmin(x, y),
            "maximumf": lambda: np.maximum(x, y), "minimumf": lambda: np.minimum(x, y),
        }
        if name not in table:
            return None
        out = table[name]()
    return None if out is None else float(dtype(out))


def fold_binary(name: str, a, b, type_: Type) -> int | float | None:
    """`arith.<name>` applied to constants `a`, `b` of (element) type `type_`."""
    scalar = type_.scalar
    if isinstance(scalar, IntegerType):
        return _int_binary(name, int(a), int(b), scalar.width)
    if isinstance(scalar, FloatType):
        return _float_binary(name, float(a), float(b), scalar.kind)
    return None


INT_COMPARE = {"eq": operator.eq, "ne": operator.ne, "slt": operator.lt, "sle": operator.le,
               "sgt": operator.gt, "sge": operator.ge, "ult": operator.lt, "ule": operator.le,
               "ugt": operator.gt, "uge": operator.ge}
FLOAT_COMPARE = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
                 "gt": operator.gt, "ge": operator.ge}


def fold_compare(op: type | str, predicate: str, a, b, type_: Type) -> int | None:
    """`arith.cmpi`/`cmpf` (the op class, or its name as written in IR) with `predicate` on
    constants: 1 or 0."""
    from compiler.dialects.arith import CmpFOp, CmpIOp
    op_class = OP_REGISTRY[op] if isinstance(op, str) else op
    scalar = type_.scalar
    if op_class is CmpIOp and isinstance(scalar, IntegerType):
        convert = to_unsigned if predicate.startswith("u") else two_complement
        return int(INT_COMPARE[predicate](convert(a, scalar.width), convert(b, scalar.width)))
    if op_class is CmpFOp:
        a, b = float(a), float(b)
        if predicate in ("false", "true"):
            return int(predicate == "true")
        unordered = math.isnan(a) or math.isnan(b)
        if predicate == "ord":
            return int(not unordered)
        if predicate == "uno":
            return int(unordered)
        compare = FLOAT_COMPARE[predicate[1:]]
        if unordered:
            return int(predicate[0] == "u")
        return int(compare(a, b))
    return None


def fold_cast(name: str, value, src: Type, dst: Type) -> int | float | None:
    """`arith.<name>` cast of a constant from element type `src` to `dst`."""
    s, d = src.scalar, dst.scalar
    if name == "extsi":
        return two_complement(value, s.width)
    if name == "extui":
        return to_signed(to_unsigned(value, s.width), d.width)
    if name == "trunci":
        return to_signed(value, d.width)
    if name in ("sitofp", "uitofp") and d.kind in NUMPY_FLOATS:
        v = two_complement(value, s.width) if name == "sitofp" else to_unsigned(value, s.width)
        return float(NUMPY_FLOATS[d.kind](v))
    if name in ("extf", "truncf") and d.kind in NUMPY_FLOATS:
        with np.errstate(all="ignore"):
            return float(NUMPY_FLOATS[d.kind](float(value)))
    if name == "fptosi" and isinstance(d, IntegerType):
        v = float(value)
        if math.isnan(v) or math.isinf(v):
            return None
        t = int(v)
        if not -(1 << (d.width - 1)) <= t < (1 << (d.width - 1)):
            return None
        return t
    return None
