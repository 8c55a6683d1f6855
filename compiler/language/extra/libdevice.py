"""`triton.language.extra.libdevice`: the common functions of CUDA's libdevice, by name.

Each function maps to one of our math ops (which lower to LLVM intrinsics or PTX:
`ex2.approx`, `sqrt.rn`, `cvt.rni`, `copysign`, ...; in double precision the transcendental
ones call libdevice's own `__nv_exp`, `__nv_tanh`, ..., linked in from libdevice.10.bc, see
compiler/codegen/libdevice.py) or to a short composition of them, and runs in the interpreter
through those ops. Results follow
the C library: `isnan` / `isinf` / `isfinited` / `signbit` return int32 as libdevice does;
`sqrt` and `div_rn` are IEEE-rounded as `__nv_sqrtf` / `__nv_fdiv_rn` are; the
transcendental functions have the accuracy of our `tl.exp`, `tl.log`, ... (PTX's
approximate instructions for fp32). Functions not listed here (the inverse trigonometric,
gamma and Bessel families, the bit-manipulation intrinsics) are not provided, and naming one
is a located compile error.
"""
from __future__ import annotations

import math as _pymath

from compiler.frontend.errors import SemanticError
from compiler.language import core
from compiler.language.core import builtin, constexpr

_UNARY_OPS = {
    "exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2", "rsqrt": "rsqrt", "sin": "sin",
    "cos": "cos", "tan": "tan", "tanh": "tanh", "floor": "floor", "ceil": "ceil",
    "trunc": "trunc", "round": "round", "rint": "roundeven", "nearbyint": "roundeven",
    "erf": "erf", "log1p": "log1p", "expm1": "expm1", "fabs": "absf",
}


def _float(_sem, x, name):
    x = _sem.to_tensor(x)
    if not x.dtype.is_floating():
        raise SemanticError(f"libdevice.{name} needs a floating-point operand, got {x.dtype}")
    return x


def _unary(name: str, op_name: str):
    def impl(_sem, arg0):
        """The builtin's implementation."""
        return _sem.unary_math(op_name, _float(_sem, arg0, name))
    impl.__name__ = name
    impl.__doc__ = f"libdevice's {name}: math.{op_name}."
    return builtin(impl)


def _define(fn):
    """Register a composed libdevice function under its name."""
    fn.__doc__ = fn.__doc__ or f"libdevice's {fn.__name__}."
    return builtin(fn)


globals().update({name: _unary(name, op) for name, op in _UNARY_OPS.items()})


@_define
def abs(_sem, arg0):
    """|x| for floats and integers."""
    return _sem.abs(_sem.to_tensor(arg0))


@_define
def sqrt(_sem, arg0):
    """The IEEE-rounded square root (`__nv_sqrtf` is correctly rounded)."""
    return _sem.precise_sqrt(_float(_sem, arg0, "sqrt"))


@_define
def sqrt_rn(_sem, arg0):
    """The IEEE-rounded square root."""
    return _sem.precise_sqrt(_float(_sem, arg0, "sqrt_rn"))


@_define
def div_rn(_sem, arg0, arg1):
    """IEEE-rounded division."""
    return _sem.precise_divf(arg0, arg1)


@_define
def fma(_sem, arg0, arg1, arg2):
    """x * y + z rounded once."""
    return _sem.fma(arg0, arg1, arg2)


@_define
def fmax(_sem, arg0, arg1):
    """The larger, ignoring a NaN operand (C's fmax)."""
    return _sem.maximum(arg0, arg1)


@_define
def fmin(_sem, arg0, arg1):
    """The smaller, ignoring a NaN operand (C's fmin)."""
    return _sem.minimum(arg0, arg1)


@_define
def fmod(_sem, arg0, arg1):
    """C's fmod: the remainder with the dividend's sign."""
    return _sem.mod(arg0, arg1)


@_define
def copysign(_sem, arg0, arg1):
    """|x| with the sign of y."""
    from compiler.dialects import math as mathd
    x, y = _sem.operands(arg0, arg1)
    if not x.dtype.is_floating():
        raise SemanticError(f"libdevice.copysign needs floats, got {x.dtype}")
    return _sem._new(mathd.CopySignOp, [x, y], x.type)


@_define
def exp10(_sem, arg0):
    """10**x as exp2(x * log2(10))."""
    x = _float(_sem, arg0, "exp10")
    return _sem.unary_math("exp2", _sem.mul(x, constexpr(_pymath.log2(10.0))))


@_define
def log10(_sem, arg0):
    """log10(x) as log2(x) * log10(2)."""
    x = _float(_sem, arg0, "log10")
    return _sem.mul(_sem.unary_math("log2", x), constexpr(_pymath.log10(2.0)))


@_define
def sinh(_sem, arg0):
    """(e**x - e**-x) / 2."""
    x = _float(_sem, arg0, "sinh")
    e, inv = _sem.unary_math("exp", x), _sem.unary_math("exp", _sem.neg(x))
    return _sem.mul(_sem.sub(e, inv), constexpr(0.5))


@_define
def cosh(_sem, arg0):
    """(e**x + e**-x) / 2."""
    x = _float(_sem, arg0, "cosh")
    e, inv = _sem.unary_math("exp", x), _sem.unary_math("exp", _sem.neg(x))
    return _sem.mul(_sem.add(e, inv), constexpr(0.5))


@_define
def hypot(_sem, arg0, arg1):
    """sqrt(x*x + y*y)."""
    x, y = _sem.operands(arg0, arg1)
    return _sem.precise_sqrt(_sem.fma(x, x, _sem.mul(y, y)))


@_define
def pow(_sem, arg0, arg1):
    """x**y as C's pow for the common cases: exp2(y * log2|x|), negated for a negative x and
    an odd integer y (-0.0 included), NaN for a negative x and a non-integer y, 1 for y == 0."""
    x, y = _sem.operands(arg0, arg1)
    if not x.dtype.is_floating():
        x, y = _sem.cast(x, core.float32), _sem.cast(y, core.float32)
    magnitude = _sem.unary_math("exp2", _sem.mul(y, _sem.unary_math("log2", _sem.abs(x))))
    is_int = _sem.compare("eq", _sem.unary_math("trunc", y), y)
    half = _sem.mul(y, constexpr(0.5))
    odd = _sem.and_(is_int, _sem.compare("ne", _sem.unary_math("trunc", half), half))
    negative = _sem.compare("lt", x, constexpr(0.0))
    result = _sem.where(_sem.and_(_sign_bit(_sem, x), odd), _sem.neg(magnitude), magnitude)
    nan = _sem.constant(float("nan"), x.dtype, x.shape)
    result = _sem.where(_sem.and_(negative, _sem.logical_not(is_int)), nan, result)
    return _sem.where(_sem.compare("eq", y, constexpr(0.0)),
                      _sem.constant(1.0, x.dtype, x.shape), result)


def _int32(_sem, flag):
    return _sem.cast(flag, core.int32)


@_define
def isnan(_sem, arg0):
    """1 where x is NaN, else 0 (int32)."""
    x = _float(_sem, arg0, "isnan")
    return _int32(_sem, _sem.compare("ne", x, x))


@_define
def isinf(_sem, arg0):
    """1 where x is +-infinity, else 0 (int32)."""
    x = _float(_sem, arg0, "isinf")
    return _int32(_sem, _sem.compare("eq", _sem.abs(x), constexpr(float("inf"))))


@_define
def isfinited(_sem, arg0):
    """1 where x is neither NaN nor infinite, else 0 (int32)."""
    x = _float(_sem, arg0, "isfinited")
    return _int32(_sem, _sem.compare("lt", _sem.abs(x), constexpr(float("inf"))))


finitef = isfinited


def _sign_bit(_sem, x):
    """Whether each float's sign bit is set (int1)."""
    bits = _sem.cast(x, core.DTYPES_BY_NAME[f"int{x.dtype.primitive_bitwidth}"], bitcast=True)
    return _sem.compare("lt", bits, constexpr(0))


@_define
def signbit(_sem, arg0):
    """1 where x's sign bit is set (negative numbers, -0.0, negative NaNs), else 0 (int32)."""
    return _int32(_sem, _sign_bit(_sem, _float(_sem, arg0, "signbit")))


@_define
def rcp_rn(_sem, arg0):
    """1 / x, IEEE-rounded."""
    x = _float(_sem, arg0, "rcp_rn")
    return _sem.precise_divf(constexpr(1.0), x)


__all__ = sorted(list(_UNARY_OPS) + [
    "abs", "sqrt", "sqrt_rn", "div_rn", "fma", "fmax", "fmin", "fmod", "copysign", "exp10",
    "log10", "sinh", "cosh", "hypot", "pow", "isnan", "isinf", "isfinited", "finitef",
    "signbit", "rcp_rn"])
