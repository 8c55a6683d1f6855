"""Semantics of the `arith` and `math` dialects on numpy values, exact about dtypes.

Integer ops wrap like the GPU's; signed ops read the bits as two's complement and unsigned ops
(`divui`, `shrui`, `cmpi ult`, ...) reinterpret them as unsigned. Division and remainder
truncate toward zero (C semantics); a zero divisor (undefined on the GPU) gives 0. Shifts by the
bit width or more give 0 (or the sign, for `shrsi`), as PTX clamps them. Float ops compute in
the operand's own precision (fp16 in float16, bf16 in float32 then rounded, see `values`).
Float-to-int casts truncate and saturate, NaN giving 0, as PTX's `cvt.rzi` does.
"""
from __future__ import annotations

import math

import numpy as np

from compiler.dialects import arith, tt, ub
from compiler.dialects import math as math_ops
from compiler.ir.attributes import DenseAttr, FloatAttr, IntegerAttr

from .errors import OpError
from .registry import semantics
from .values import (as_signed, as_unsigned, bits_of, emulated_format,
                     float_to_int, from_bits, int_width, value_dtype,
                     wrap_to)


# ---- constants ---------------------------------------------------------------------------------
@semantics(arith.ConstantOp)
def constant(ctx, op, values):
    """A scalar or splat constant (splats are read-only broadcast views, never copied)."""
    attr = op.attributes["value"]
    t = op.results[0].type
    dt = value_dtype(t)
    if isinstance(attr, (IntegerAttr, DenseAttr)) and t.scalar.is_int:
        scalar = np.asarray(int(attr.value)).astype(dt) if dt != np.bool_ \
            else np.asarray(bool(attr.value))
    elif isinstance(attr, (FloatAttr, DenseAttr)):
        scalar = np.asarray(float(attr.value), dtype=np.float64).astype(dt)
    else:
        raise OpError(f"unsupported constant {attr}")
    if isinstance(attr, DenseAttr):
        return np.broadcast_to(scalar, t.shape)
    return scalar[()]


@semantics(ub.PoisonOp)
def poison(ctx, op, values):
    """An undefined value: zeros (any contents are a valid reading of it)."""
    t = op.results[0].type
    zeros = np.zeros(getattr(t, "shape", ()), dtype=value_dtype(t))
    return zeros if zeros.shape else zeros[()]


# ---- integer arithmetic ------------------------------------------------------------------------
def _safe(b):
    """The divisor with zeros replaced by ones (the quotient is zeroed afterwards)."""
    return np.where(b == 0, np.ones_like(b), b)


def _div_trunc(a, b, w):
    rem = np.fmod(a, _safe(b))
    return np.where(b == 0, 0, (a - rem) // _safe(b))


def _rem_trunc(a, b, w):
    return np.where(b == 0, 0, np.fmod(a, _safe(b)))


def _ceildiv(a, b, w):
    rem = np.fmod(a, _safe(b))
    quot = (a - rem) // _safe(b)
    bump = (rem != 0) & ((a < 0) == (b < 0))
    return np.where(b == 0, 0, quot + bump.astype(quot.dtype))


def _div_unsigned(a, b, w):
    return np.where(b == 0, 0, a // _safe(b))


def _rem_unsigned(a, b, w):
    return np.where(b == 0, 0, a % _safe(b))


def _shift_amount(b, w, dtype):
    """The shift amount as `dtype`, clamped to w - 1 (callers handle amounts >= w)."""
    return np.minimum(b, w - 1).astype(dtype)


def _shl(a, b, w):
    return np.where(b >= w, 0, np.left_shift(a, _shift_amount(b, w, a.dtype)))


def _shrui(a, b, w):
    return np.where(b >= w, 0, np.right_shift(a, _shift_amount(b, w, a.dtype)))


def _mulhi(a, b, w):
    """High half of the unsigned 2w-bit product."""
    if w <= 32:
        return (a.astype(np.uint64) * b.astype(np.uint64)) >> np.uint64(w)
    a, b = a.astype(np.uint64), b.astype(np.uint64)
    low, shift = np.uint64(0xFFFFFFFF), np.uint64(32)
    a_lo, a_hi, b_lo, b_hi = a & low, a >> shift, b & low, b >> shift
    lo_lo, hi_lo, lo_hi, hi_hi = a_lo * b_lo, a_hi * b_lo, a_lo * b_hi, a_hi * b_hi
    cross = (lo_lo >> shift) + (hi_lo & low) + (lo_hi & low)
    return hi_hi + (hi_lo >> shift) + (lo_hi >> shift) + (cross >> shift)


# name: (function(a, b, width), reading of the operands): "bits" reads both as held, "signed"
# as two's complement, "unsigned" as unsigned; "shift" and "signed_shift" read the shift amount
# b as unsigned and a as held or as signed.
INT_BINARY = {
    "addi": (lambda a, b, w: a + b, "bits"),
    "subi": (lambda a, b, w: a - b, "bits"),
    "muli": (lambda a, b, w: a * b, "bits"),
    "andi": (lambda a, b, w: a & b, "bits"),
    "ori": (lambda a, b, w: a | b, "bits"),
    "xori": (lambda a, b, w: a ^ b, "bits"),
    "divsi": (_div_trunc, "signed"),
    "remsi": (_rem_trunc, "signed"),
    "ceildivsi": (_ceildiv, "signed"),
    "divui": (_div_unsigned, "unsigned"),
    "remui": (_rem_unsigned, "unsigned"),
    "maxsi": (lambda a, b, w: np.maximum(a, b), "signed"),
    "minsi": (lambda a, b, w: np.minimum(a, b), "signed"),
    "maxui": (lambda a, b, w: np.maximum(a, b), "unsigned"),
    "minui": (lambda a, b, w: np.minimum(a, b), "unsigned"),
    "shli": (_shl, "shift"),
    "shrsi": (lambda a, b, w: np.right_shift(a, _shift_amount(b, w, a.dtype)), "signed_shift"),
    "shrui": (_shrui, "unsigned"),
    "mulhiui": (_mulhi, "unsigned"),
}


def _int_binary(fn, reading):
    """Semantics of an integer binary op: read the operands as `reading` says, wrap the result."""
    def run(ctx, op, values):
        t = op.results[0].type
        a, b = values
        boolean = value_dtype(t) == np.bool_
        if reading in ("signed", "signed_shift"):
            a = np.asarray(as_signed(a, t))
        elif reading == "unsigned" or boolean:
            a = as_unsigned(a, t)
        else:
            a = np.asarray(a)
        if reading == "signed":
            b = np.asarray(as_signed(b, t))
        elif reading != "bits" or boolean:
            b = as_unsigned(b, t)
        else:
            b = np.asarray(b)
        return wrap_to(fn(a, b, int_width(t)), t)
    return run


for _name, (_fn, _reading) in INT_BINARY.items():
    semantics(arith.BINARY_OPS[_name])(_int_binary(_fn, _reading))
semantics(tt.MulhiUIOp)(_int_binary(_mulhi, "unsigned"))


# ---- float arithmetic --------------------------------------------------------------------------
FLOAT_BINARY = {
    "addf": np.add, "subf": np.subtract, "mulf": np.multiply, "divf": np.divide,
    "remf": np.fmod, "maxnumf": np.fmax, "minnumf": np.fmin, "maximumf": np.maximum,
    "minimumf": np.minimum,
}


def numpy_op(fn):
    """Semantics that apply the numpy function `fn` to the operand values, as they are."""
    def run(ctx, op, values):
        return fn(*values)
    return run


for _name, _fn in FLOAT_BINARY.items():
    semantics(arith.BINARY_OPS[_name])(numpy_op(_fn))
semantics(tt.PreciseDivFOp)(numpy_op(np.divide))
semantics(arith.NegFOp)(numpy_op(np.negative))


# ---- comparisons and select --------------------------------------------------------------------
INT_PREDICATES = {
    "eq": (np.equal, "bits"), "ne": (np.not_equal, "bits"),
    "slt": (np.less, "signed"), "sle": (np.less_equal, "signed"),
    "sgt": (np.greater, "signed"), "sge": (np.greater_equal, "signed"),
    "ult": (np.less, "unsigned"), "ule": (np.less_equal, "unsigned"),
    "ugt": (np.greater, "unsigned"), "uge": (np.greater_equal, "unsigned"),
}


@semantics(arith.CmpIOp)
def cmpi(ctx, op, values):
    """Integer comparison; s* predicates read two's complement, u* read unsigned."""
    fn, reading = INT_PREDICATES[op.attributes["predicate"].value]
    t = op.operands[0].type
    a, b = values
    if reading == "signed":
        a, b = as_signed(a, t), as_signed(b, t)
    elif reading == "unsigned":
        a, b = as_unsigned(a, t), as_unsigned(b, t)
    return fn(a, b)


def _unordered(a, b):
    return np.isnan(a) | np.isnan(b)


FLOAT_PREDICATES = {
    "false": lambda a, b: np.zeros(np.broadcast(a, b).shape, dtype=bool),
    "true": lambda a, b: np.ones(np.broadcast(a, b).shape, dtype=bool),
    "oeq": np.equal, "ogt": np.greater, "oge": np.greater_equal, "olt": np.less,
    "ole": np.less_equal,
    "one": lambda a, b: np.not_equal(a, b) & ~_unordered(a, b),
    "ord": lambda a, b: ~_unordered(a, b),
    "ueq": lambda a, b: np.equal(a, b) | _unordered(a, b),
    "ugt": lambda a, b: np.greater(a, b) | _unordered(a, b),
    "uge": lambda a, b: np.greater_equal(a, b) | _unordered(a, b),
    "ult": lambda a, b: np.less(a, b) | _unordered(a, b),
    "ule": lambda a, b: np.less_equal(a, b) | _unordered(a, b),
    "une": np.not_equal,
    "uno": _unordered,
}


@semantics(arith.CmpFOp)
def cmpf(ctx, op, values):
    """Float comparison; o* predicates are false and u* true when an operand is NaN."""
    return FLOAT_PREDICATES[op.attributes["predicate"].value](values[0], values[1])


@semantics(arith.SelectOp)
def select(ctx, op, values):
    """Elementwise (or scalar-condition) choice between the two operands."""
    cond, a, b = values
    return np.where(cond, a, b)


# ---- casts -------------------------------------------------------------------------------------
@semantics(arith.CAST_OPS["extsi"])
def extsi(ctx, op, values):
    """Sign-extend (i1 true becomes -1)."""
    return as_signed(values[0], op.operands[0].type)


@semantics(arith.CAST_OPS["extui"])
def extui(ctx, op, values):
    """Zero-extend (i1 true becomes 1)."""
    return as_unsigned(values[0], op.operands[0].type)


@semantics(arith.CAST_OPS["trunci"])
def trunci(ctx, op, values):
    """Keep the low bits."""
    return wrap_to(values[0], op.results[0].type)


@semantics(arith.CAST_OPS["index_cast"])
def index_cast(ctx, op, values):
    """Sign-extend or truncate to the result width."""
    src, dst = op.operands[0].type, op.results[0].type
    if int_width(dst) > int_width(src):
        return as_signed(values[0], src)
    return wrap_to(values[0], dst)


@semantics(arith.CAST_OPS["sitofp"])
def sitofp(ctx, op, values):
    """Signed integer to float (rounded to nearest in `coerce`)."""
    return np.asarray(as_signed(values[0], op.operands[0].type)).astype(np.float64)


@semantics(arith.CAST_OPS["uitofp"])
def uitofp(ctx, op, values):
    """Unsigned integer to float."""
    return as_unsigned(values[0], op.operands[0].type).astype(np.float64)


@semantics(arith.CAST_OPS["fptosi"])
def fptosi(ctx, op, values):
    """Float to signed integer, truncating and saturating."""
    return float_to_int(values[0], op.results[0].type, signed=True)


@semantics(arith.CAST_OPS["fptoui"])
def fptoui(ctx, op, values):
    """Float to unsigned integer, truncating and saturating."""
    return float_to_int(values[0], op.results[0].type, signed=False)


@semantics(arith.CAST_OPS["extf"], arith.CAST_OPS["truncf"])
def float_cast(ctx, op, values):
    """extf/truncf: numpy's conversions round to nearest even; emulated formats round in
    `coerce`, after the saturation conversions into 8-bit floats have (see `values`)."""
    return _saturated(values[0], op.results[0].type).astype(value_dtype(op.results[0].type))


def _saturated(x, t) -> np.ndarray:
    """`x` clamped for a conversion into `t` when `t`'s conversions saturate (8-bit floats)."""
    emulated = emulated_format(t)
    return np.asarray(x) if emulated is None else np.asarray(emulated.saturate(x))


@semantics(tt.FpToFpOp)
def fp_to_fp(ctx, op, values):
    """A float conversion with a rounding mode: rtne as truncf; rtz rounds to nearest, then
    steps one unit toward zero where that rounded away from zero (so a finite value too large
    for the target becomes its largest finite value, never infinity)."""
    dst = op.results[0].type
    x = _saturated(values[0], dst)
    with np.errstate(over="ignore"):
        if op.attributes["rounding"].value == "rtne":
            return x.astype(value_dtype(dst))
        nearest = _round_float(x, dst)
    wide = nearest.astype(np.float64)
    away = np.isfinite(x) & (np.abs(wide) > np.abs(x.astype(np.float64)))
    if not away.any():
        return nearest
    toward = _round_float(_next_toward_zero(nearest.astype(np.float32), dst), dst)
    return np.where(away, toward, nearest)


def _round_float(x, t):
    """`x` rounded to nearest even in float type `t`, held as `value_dtype(t)` (emulated
    formats too)."""
    held = np.asarray(x).astype(value_dtype(t))
    emulated = emulated_format(t)
    return emulated.round(held) if emulated is not None else held


def _next_toward_zero(x, t):
    """The value one unit in the last place of float type `t` closer to zero than `x`."""
    emulated = emulated_format(t)
    if emulated is not None:          # sign-magnitude patterns: one less is one step inward
        bits = emulated.to_bits(x)
        return emulated.from_bits((bits.astype(np.int64) - 1).astype(bits.dtype))
    narrow = x.astype(value_dtype(t))
    return np.nextafter(narrow, np.zeros_like(narrow))


@semantics(arith.CAST_OPS["bitcast"], tt.BitcastOp)
def bitcast(ctx, op, values):
    """Reinterpret the bits (pointer-to-pointer bitcasts keep the address)."""
    src, dst = op.operands[0].type, op.results[0].type
    if src.scalar.is_ptr and dst.scalar.is_ptr:
        return values[0]
    bits = bits_of(values[0], src)
    return from_bits(bits, dst)


# ---- math --------------------------------------------------------------------------------------
def _rsqrt(x):
    return np.reciprocal(np.sqrt(x))


def _round_half_away(x):
    """math.round: to nearest, halves away from zero (unlike numpy's half-to-even)."""
    whole = np.trunc(x)
    frac = x - whole
    return whole + np.where(np.abs(frac) >= 0.5, np.sign(x), 0).astype(np.asarray(x).dtype)


def _erf(x):
    try:
        from scipy.special import erf
    except ImportError:
        erf = np.frompyfunc(math.erf, 1, 1)
    return np.asarray(erf(np.asarray(x, dtype=np.float64)), dtype=np.float64)


MATH_UNARY = {
    "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sqrt": np.sqrt,
    "rsqrt": _rsqrt, "sin": np.sin, "cos": np.cos, "tan": np.tan, "absf": np.abs,
    "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "round": _round_half_away,
    "erf": _erf, "tanh": np.tanh, "log1p": np.log1p, "expm1": np.expm1, "roundeven": np.rint,
}


for _name, _fn in MATH_UNARY.items():
    semantics(math_ops.UNARY_OPS[_name])(numpy_op(_fn))
semantics(tt.PreciseSqrtOp)(numpy_op(np.sqrt))
semantics(math_ops.CopySignOp)(numpy_op(np.copysign))


@semantics(math_ops.AbsIOp)
def absi(ctx, op, values):
    """|x| with wraparound (abs of the most negative value is itself)."""
    t = op.results[0].type
    return wrap_to(np.abs(np.asarray(as_signed(values[0], t))), t)


@semantics(math_ops.FmaOp)
def fma(ctx, op, values):
    """a * b + c: float64 holds the fp16/bf16/f32 product exactly, so one rounding remains
    (in `coerce`); f64 is computed unfused."""
    a, b, c = values
    return np.asarray(a).astype(np.float64) * b + c


@semantics(tt.ElementwiseInlineAsmOp)
def inline_asm(ctx, op, values):
    """Inline PTX cannot run on the CPU: a located error, as Triton's interpreter gives."""
    raise OpError("tl.inline_asm_elementwise runs PTX on the GPU and cannot be interpreted; "
                  "launch with interpret=False")
