"""How IR values live in numpy: dtypes, bf16 emulation, signedness views and exact casts.

A value of scalar type is a numpy scalar, a tensor value an ndarray, a pointer an int64 byte
address (see `memory`). Integers are signless in the IR, so each `iN` is held as numpy's signed
`intN` and unsigned ops reinterpret the bits (`as_unsigned`); arithmetic wraps like the GPU's.
`i1` is numpy `bool_`.

bf16 and the 8-bit floats (f8E4M3FN, f8E5M2) have no numpy dtype: they are `EmulatedFloat`
formats. A value of one is held as float32 whose value is exactly representable in the format:
every op producing one computes in float32 and rounds the result (round-to-nearest-even) in
`coerce`. In *memory* an element is its bit pattern (uint16 / uint8); `to_storage` /
`from_storage` convert. fp16 stays numpy float16 throughout.

Rounding a value into a format overflows as IEEE rounding does (to infinity, or to NaN in
e4m3 "FN", which has no infinity); a *conversion* into an 8-bit float (truncf, fp_to_fp)
first saturates as the GPU's `cvt.rn.satfinite` does: a magnitude beyond the largest finite
value (infinity included) becomes that value, NaN stays NaN (`EmulatedFloat.saturate`).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from compiler.dialects.tt import PointerType
from compiler.ir.types import FloatType, IntegerType, TensorType, Type

from .errors import OpError

_INT_DTYPES = {1: np.dtype(np.bool_), 8: np.dtype(np.int8), 16: np.dtype(np.int16),
               32: np.dtype(np.int32), 64: np.dtype(np.int64)}
_UINT_DTYPES = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32),
                64: np.dtype(np.uint64)}
_FLOAT_DTYPES = {"f16": np.dtype(np.float16), "bf16": np.dtype(np.float32),
                 "f32": np.dtype(np.float32), "f64": np.dtype(np.float64),
                 "f8E4M3FN": np.dtype(np.float32), "f8E5M2": np.dtype(np.float32)}
_FLOAT_STORAGE = {"f16": np.dtype(np.float16), "bf16": np.dtype(np.uint16),
                  "f32": np.dtype(np.float32), "f64": np.dtype(np.float64),
                  "f8E4M3FN": np.dtype(np.uint8), "f8E5M2": np.dtype(np.uint8)}
ADDRESS = np.dtype(np.int64)


def is_bf16(t: Type) -> bool:
    """Whether `t` (or its element type) is bf16."""
    return isinstance(t.scalar, FloatType) and t.scalar.kind == "bf16"


def emulated_format(t: Type) -> "EmulatedFloat | None":
    """The emulated float format of `t` (or its element type): bf16, f8E4M3FN, f8E5M2."""
    s = t.scalar
    return EMULATED_FLOATS.get(s.kind) if isinstance(s, FloatType) else None


def _float_entry(table: dict, s: FloatType) -> np.dtype:
    """The numpy dtype `table` gives a float type, or an OpError for kinds it lacks (fp8)."""
    if s.kind not in table:
        raise OpError(f"the interpreter does not support the {s} float type")
    return table[s.kind]


@lru_cache(maxsize=None)
def value_dtype(t: Type) -> np.dtype:
    """The numpy dtype holding values of IR type `t` (a tensor's element type decides)."""
    s = t.scalar
    if isinstance(s, IntegerType):
        if s.width not in _INT_DTYPES:
            raise OpError(f"the interpreter does not support {s} integers")
        return _INT_DTYPES[s.width]
    if isinstance(s, FloatType):
        return _float_entry(_FLOAT_DTYPES, s)
    if isinstance(s, PointerType):
        return ADDRESS
    raise OpError(f"the interpreter cannot hold values of type {t}")


@lru_cache(maxsize=None)
def storage_dtype(t: Type) -> np.dtype:
    """The numpy dtype of one element of type `t` in memory (bf16 as uint16, i1 as a byte)."""
    s = t.scalar
    if isinstance(s, IntegerType):
        return np.dtype(np.uint8) if s.width == 1 else value_dtype(s)
    if isinstance(s, FloatType):
        return _float_entry(_FLOAT_STORAGE, s)
    if isinstance(s, PointerType):
        return ADDRESS
    raise OpError(f"type {t} cannot be stored in memory")


def byte_size(t: Type) -> int:
    """Bytes one element of type `t` takes in memory (the unit of tt.addptr offsets)."""
    return storage_dtype(t).itemsize


def int_width(t: Type) -> int:
    """The bit width of an integer type (or tensor of integers)."""
    return t.scalar.width


# ---- bf16 --------------------------------------------------------------------------------------
def f32_to_bf16_bits(x) -> np.ndarray:
    """Round float32 values to bf16 (nearest even; NaN stays a quiet NaN), as uint16 bits."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32)
    rounding = np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
    rounded = ((bits.astype(np.uint64) + rounding) >> np.uint64(16)).astype(np.uint16)
    nan = np.isnan(np.asarray(x, dtype=np.float32))
    quiet = ((bits >> np.uint32(16)) | np.uint32(0x40)).astype(np.uint16)
    return np.where(nan, quiet, rounded)


def bf16_bits_to_f32(bits) -> np.ndarray:
    """Widen bf16 bit patterns (uint16) to the float32 values they denote."""
    return (np.asarray(bits).astype(np.uint32) << np.uint32(16)).view(np.float32)


def round_to_bf16(x) -> np.ndarray:
    """float32 values rounded to the nearest bf16 value (still held as float32)."""
    return bf16_bits_to_f32(f32_to_bf16_bits(x))


class EmulatedFloat:
    """A float format numpy lacks: `to_bits(float32 values) -> unsigned bit patterns` (round to
    nearest even) and `from_bits(bits) -> float32 values`; `round` is the two in turn.
    `saturating_max` is set for formats whose conversions saturate (the 8-bit floats)."""

    def __init__(self, name: str, to_bits, from_bits, saturating_max: float | None = None):
        self.name, self.to_bits, self.from_bits = name, to_bits, from_bits
        self.saturating_max = saturating_max

    def round(self, x) -> np.ndarray:
        """float32 values rounded to the nearest value of the format (still float32)."""
        return self.from_bits(self.to_bits(x))

    def saturate(self, x) -> np.ndarray:
        """`x` clamped to the largest finite magnitude when conversions into this format
        saturate (NaN kept); unchanged otherwise."""
        if self.saturating_max is None:
            return x
        return np.clip(np.asarray(x, dtype=np.float32), -self.saturating_max, self.saturating_max)


class _Fp8:
    """An 8-bit float: sign, `exp_bits` exponent bits with `bias`, `man_bits` mantissa bits;
    IEEE-like infinities and NaNs (e5m2), or none but the all-ones NaN (e4m3 "FN")."""

    def __init__(self, exp_bits: int, man_bits: int, bias: int, ieee_specials: bool):
        self.man_bits, self.bias = man_bits, bias
        top = (1 << exp_bits) - 1
        self.max_finite = ((2 - 2.0 ** -man_bits) if ieee_specials else
                           (2 - 2.0 ** (1 - man_bits))) * 2.0 ** ((top - 1 if ieee_specials else top)
                                                                  - bias)
        self.nan_bits = 0x7F
        self.overflow_bits = (top << man_bits) if ieee_specials else self.nan_bits
        codes = np.arange(256)
        exp, man = (codes >> man_bits) & top, codes & ((1 << man_bits) - 1)
        magnitude = np.where(exp == 0, man * 2.0 ** (1 - bias - man_bits),
                             (1 + man / 2.0 ** man_bits) * 2.0 ** (exp - bias))
        if ieee_specials:
            magnitude = np.where(exp == top, np.where(man == 0, np.inf, np.nan), magnitude)
        else:
            magnitude = np.where((exp == top) & (man == (1 << man_bits) - 1), np.nan, magnitude)
        self.table = np.where(codes >= 128, -magnitude, magnitude).astype(np.float32)

    def from_bits(self, bits) -> np.ndarray:
        """Bit patterns (uint8) to the float32 values they denote."""
        return self.table[np.asarray(bits).astype(np.uint8)]

    def to_bits(self, x) -> np.ndarray:
        """float32 values to the nearest pattern (ties to even); beyond the largest finite
        value, infinity (e5m2) or NaN (e4m3fn)."""
        x = np.asarray(x, dtype=np.float64)
        magnitude = np.where(np.isnan(x), 0.0, np.abs(x))
        overflow = magnitude > self.max_finite
        magnitude = np.minimum(magnitude, 2 * self.max_finite)
        with np.errstate(divide="ignore", invalid="ignore"):
            exponent = np.floor(np.log2(np.where(magnitude > 0, magnitude, 1.0)))
        exponent = np.maximum(exponent, 1 - self.bias)              # subnormals share one step
        step = 2.0 ** (exponent - self.man_bits)
        rounded = np.round(magnitude / step) * step
        overflow |= rounded > self.max_finite
        rounded = np.minimum(rounded, self.max_finite)
        # The pattern of a representable magnitude: normal exponent field and mantissa.
        with np.errstate(divide="ignore", invalid="ignore"):
            e = np.floor(np.log2(np.where(rounded > 0, rounded, 1.0)))
        normal = rounded >= 2.0 ** (1 - self.bias)
        field = np.where(normal, e + self.bias, 0)
        mantissa = np.where(normal, rounded / 2.0 ** e - 1, rounded / 2.0 ** (1 - self.bias))
        code = (field.astype(np.int64) << self.man_bits) + np.round(
            mantissa * 2 ** self.man_bits).astype(np.int64)
        code = np.where(overflow, self.overflow_bits, code)
        code = np.where(np.signbit(x), code | 0x80, code)
        return np.where(np.isnan(x), self.nan_bits, code).astype(np.uint8)


def _fp8_format(name: str, fmt: _Fp8) -> EmulatedFloat:
    return EmulatedFloat(name, fmt.to_bits, fmt.from_bits, saturating_max=fmt.max_finite)


# ---- coercion ----------------------------------------------------------------------------------
def _scalar(x):
    """A 0-d array as a numpy scalar; anything else unchanged."""
    if isinstance(x, np.ndarray) and x.ndim == 0:
        return x[()]
    return x


def coercer(t: Type):
    """A function holding any value exactly as type `t` requires (dtype, bf16 rounding, scalar
    vs array); made once per op result, since it runs after every op.

    Inside a vectorized combine region a scalar-typed value may be an array; it stays one.
    """
    dt = value_dtype(t)
    emulated = emulated_format(t)
    tensor = isinstance(t, TensorType)

    def coerce_value(x):
        if emulated is not None:
            x = emulated.round(x)
        if isinstance(x, np.ndarray):
            if x.dtype != dt:
                x = x.astype(dt)
            return x[()] if not tensor and x.ndim == 0 else x
        if isinstance(x, np.generic) and x.dtype == dt:
            return x
        return np.asarray(x).astype(dt)[()]

    return coerce_value


def coerce(x, t: Type):
    """`x` held exactly as type `t` requires (see `coercer`)."""
    return coercer(t)(x)


def to_storage(x, t: Type) -> np.ndarray:
    """Values of type `t` as their in-memory representation (see `storage_dtype`)."""
    emulated = emulated_format(t)
    if emulated is not None:
        return emulated.to_bits(x)
    return np.asarray(x).astype(storage_dtype(t), copy=False)


def from_storage(raw: np.ndarray, t: Type) -> np.ndarray:
    """In-memory elements of type `t` as values (emulated floats widened, i1 bytes as
    booleans)."""
    emulated = emulated_format(t)
    if emulated is not None:
        return emulated.from_bits(raw)
    if value_dtype(t) == np.bool_:
        return np.asarray(raw) != 0
    return np.asarray(raw).astype(value_dtype(t), copy=False)


# ---- integer views -----------------------------------------------------------------------------
def as_signed(x, t: Type):
    """The two's-complement signed reading of integer `x` (i1: true is -1, as LLVM has it)."""
    if value_dtype(t) == np.bool_:
        return np.where(x, np.int8(-1), np.int8(0))
    return x


def as_unsigned(x, t: Type):
    """The unsigned reading of integer `x`'s bits (i1: 0 or 1)."""
    dt = value_dtype(t)
    if dt == np.bool_:
        return np.asarray(x).astype(np.uint8)
    return np.asarray(x).view(_UINT_DTYPES[dt.itemsize * 8])


def wrap_to(x, t: Type):
    """Integer results computed in a wider or unsigned dtype, wrapped back into type `t`."""
    dt = value_dtype(t)
    if dt == np.bool_:
        return (np.asarray(x) & 1).astype(np.bool_)
    x = np.asarray(x)
    if x.dtype.itemsize == dt.itemsize and x.dtype.kind in "iu":
        return x.view(dt)
    return x.astype(dt)


def bits_of(x, t: Type) -> np.ndarray:
    """The raw bit pattern of values of type `t` as an unsigned integer array."""
    raw = to_storage(x, t)
    return raw.view(_UINT_DTYPES[raw.dtype.itemsize * 8])


def from_bits(bits: np.ndarray, t: Type):
    """Values of type `t` whose bit patterns are `bits` (an unsigned array of the right width)."""
    return from_storage(np.asarray(bits).view(storage_dtype(t)), t)


def float_to_int(x, t: Type, signed: bool):
    """fptosi/fptoui as the GPU does them: truncate toward zero, saturate, NaN becomes 0."""
    width = int_width(t)
    if width == 1:
        lo, hi = (-1, 0) if signed else (0, 1)
    else:
        lo, hi = (-(1 << (width - 1)), (1 << (width - 1)) - 1) if signed else (0, (1 << width) - 1)
    r = np.trunc(np.asarray(x, dtype=np.float64))
    r = np.where(np.isnan(r), 0.0, r)
    big = r >= float(hi) + 1.0          # hi + 1 is a power of two: exact in float64
    small = r < float(lo)
    inner = np.where(big | small, 0.0, r)
    container = np.int64 if signed or width < 64 else np.uint64
    out = inner.astype(container)
    out = np.where(big, container(hi), np.where(small, container(lo), out))
    return wrap_to(out, t)


#: The float formats numpy lacks, by IR kind.
EMULATED_FLOATS = {"bf16": EmulatedFloat("bf16", f32_to_bf16_bits, bf16_bits_to_f32),
                   "f8E4M3FN": _fp8_format("f8E4M3FN", _Fp8(4, 3, 7, ieee_specials=False)),
                   "f8E5M2": _fp8_format("f8E5M2", _Fp8(5, 2, 15, ieee_specials=True))}
