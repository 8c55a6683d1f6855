"""The semantic layer: DSL types, Triton's promotion rules, broadcasting, casts and IR building.

The code generator (syntax) hands this layer `tensor` and `constexpr` values; it returns new
`tensor`s whose IR it built through `compiler.ir.Builder` at the builder's current location.
Errors are raised as `SemanticError` (one sentence); the code generator adds the position.

Type promotion follows Triton's `computation_type_impl` (triton/language/semantic.py), written
here as numbered rules:

  R0  A Python scalar (a constexpr number) combined with a tensor does not take part in the
      promotion when its kind (bool < integer < float) is not higher than the tensor's: the
      result has the tensor's dtype (fp16/bf16 become fp32 for `/` and `%`). So `u32 // 3` is
      uint32, `i8 + 300` is int8 (wrapping) and `i32 * 2.5` is fp32.
  R1  If either operand is fp64, compute in fp64.
  R2  Else if either is fp32, compute in fp32.
  R3  Else if either is fp16: fp16 with bf16 -> fp32; otherwise fp16 (fp32 for `/` and `%`).
  R4  Else if both are bf16: bf16 (fp32 for `/` and `%`); one bf16 with an integer -> bf16.
  R5  Both integers: C's usual arithmetic conversions (the wider wins; at equal width the
      unsigned one wins; a wider signed beats a narrower unsigned); `/`, `//`, `%` of mixed
      signedness is rejected.
  R6  Python scalars become int32 (or uint32/int64/uint64 when they do not fit), fp32 (fp64
      when the magnitude is outside fp32's normal range: 1e50, 1e-40), or int1.
"""
from __future__ import annotations

import numbers
import warnings
from math import prod

from compiler.dialects import arith, math as mathd, scf, tt  # noqa: F401  (registers ops)
from compiler.ir.attributes import (BoolAttr, DenseArrayAttr, DenseAttr, FloatAttr, IntegerAttr,
                                    StringAttr, int_attr)
from compiler.ir.core import Block, Region
from compiler.language import core as tl
from compiler.language.core import block_type, constexpr, dtype, tensor

from .errors import SemanticError


def is_python_number(x) -> bool:
    """True for a constexpr (or raw) Python bool/int/float."""
    v = x.value if isinstance(x, constexpr) else x
    return isinstance(v, numbers.Number) and not isinstance(v, tensor)


FP32_MIN_NORMAL = 2.0 ** -126
FP32_MAX = (2.0 - 2.0 ** -23) * 2.0 ** 127


def literal_dtype(value) -> dtype:
    """R6: the dtype a Python scalar takes."""
    if isinstance(value, bool):
        return tl.int1
    if isinstance(value, int):
        if -2**31 <= value < 2**31:
            return tl.int32
        if 2**31 <= value < 2**32:
            return tl.uint32
        if -2**63 <= value < 2**63:
            return tl.int64
        if 2**63 <= value < 2**64:
            return tl.uint64
        raise SemanticError(f"integer constant {value} does not fit in 64 bits")
    if isinstance(value, float):
        magnitude = abs(value)
        if magnitude in (0.0, float("inf")) or value != value or \
                FP32_MIN_NORMAL <= magnitude <= FP32_MAX:
            return tl.float32
        return tl.float64
    raise SemanticError(f"cannot use {value!r} of Python type {type(value).__name__} as a value "
                        "in a kernel; use a number, a tensor or a dtype")


def integer_promote(a: dtype, b: dtype) -> dtype:
    """R5: C's usual arithmetic conversions for two integer dtypes."""
    if a.is_int_signed() == b.is_int_signed():
        return a if a.int_bitwidth > b.int_bitwidth else b
    if a.is_int_unsigned():
        return a if a.int_bitwidth >= b.int_bitwidth else b
    return b if b.int_bitwidth >= a.int_bitwidth else a


def computation_type(a: dtype, a_scalar: bool, b: dtype, b_scalar: bool,
                     div_or_mod: bool = False) -> dtype:
    """The dtype a binary arithmetic op computes in (rules R0-R5 above)."""
    if a_scalar != b_scalar:                                            # R0
        scalar_ty, tensor_ty = (a, b) if a_scalar else (b, a)
        if scalar_ty.kind() <= tensor_ty.kind():
            if div_or_mod and tensor_ty in (tl.float16, tl.bfloat16):
                return tl.float32
            return tensor_ty
    if a.is_fp64() or b.is_fp64():                                      # R1
        return tl.float64
    if a.is_fp32() or b.is_fp32():                                      # R2
        return tl.float32
    if a.is_fp16() or b.is_fp16():                                      # R3
        if a.is_bf16() or b.is_bf16() or div_or_mod:
            return tl.float32
        return tl.float16
    if a.is_bf16() or b.is_bf16():                                      # R4
        return tl.float32 if div_or_mod else tl.bfloat16
    if not (a.is_int() and b.is_int()):
        raise SemanticError(f"unsupported operand dtypes {a} and {b}")
    if div_or_mod and a.is_int_signed() != b.is_int_signed():
        raise SemanticError(f"Cannot use /, // or % with {a} and {b} because they have "
                            "different signedness; cast one of them with .to() first")
    return integer_promote(a, b)                                        # R5


INT_PREDICATES = {"lt": ("slt", "ult"), "le": ("sle", "ule"), "gt": ("sgt", "ugt"),
                  "ge": ("sge", "uge"), "eq": ("eq", "eq"), "ne": ("ne", "ne")}
FLOAT_PREDICATES = {"lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge", "eq": "oeq", "ne": "une"}


class Semantic:
    """Builds typed IR for the DSL's operations through `builder` (its location is the caller's)."""

    def __init__(self, builder, default_dot_input_precision: str = "tf32", call_function=None,
                 gpu_limits: bool = True, num_warps: int = 4, tma: bool = False):
        self.builder = builder
        #: whether the compile copies tensor descriptors by TMA (the `tma` option on sm_90+):
        #: `tl.make_tensor_descriptor` then builds a tensor map on the device
        self.tma = tma
        #: the kernel's warps (a compile option): `tl.extra.cuda.num_threads()` is 32 times it
        self.num_warps = num_warps
        #: tl.dot's input_precision when neither it nor allow_tf32 is given (a compile option)
        self.default_dot_input_precision = default_dot_input_precision
        #: whether the GPU's instruction limits apply (tl.dot's minimum K); not for ttir made
        #: for the interpreter, which has none (as Triton's interpreter)
        self.gpu_limits = gpu_limits
        # `call_function(jit_fn, args) -> list of tensors`: emits a tt.call of a @jit function
        # (the code generator's, which specializes and generates the callee); builtins taking
        # user functions (tl.reduce's combine_fn) call it.
        self._call_function = call_function

    # ---- small helpers ---------------------------------------------------------------------
    def _op(self, cls, operands, result_type, attributes=None, regions=None):
        op = self.builder.create(cls, [o.handle if isinstance(o, tensor) else o for o in operands],
                                 [] if result_type is None else [result_type.to_ir()],
                                 attributes or {}, regions)
        return op

    def _new(self, cls, operands, result_type, attributes=None) -> tensor:
        op = self._op(cls, operands, result_type, attributes)
        return tensor(op.results[0], result_type)

    @staticmethod
    def with_dtype(t, dt: dtype):
        """`t`'s DSL type with element `dt` (same shape)."""
        return block_type(dt, t.shape) if isinstance(t, block_type) else dt

    def type_of(self, t: tensor, dt: dtype):
        """`t`'s DSL type with element `dt`."""
        return self.with_dtype(t.type, dt)

    # ---- constants ------------------------------------------------------------------------
    def constant(self, value, dt: dtype, shape=()) -> tensor:
        """An `arith.constant` of `value` cast to `dt` (a dense splat when `shape` is given)."""
        ir_t = dt.to_ir()
        if dt.is_floating():
            value = float(value)
        elif dt.is_int():
            value = int(value)
            bits = dt.int_bitwidth
            value &= (1 << bits) - 1
            if dt.is_bool():
                value = 1 if value else 0
            elif value >= 1 << (bits - 1):
                value -= 1 << bits
        else:
            raise SemanticError(f"cannot make a constant of dtype {dt}")
        if shape:
            ty = block_type(dt, shape)
            attr = DenseAttr(value, ty.to_ir())
            return self._new(arith.ConstantOp, [], ty, {"value": attr})
        attr = FloatAttr(value, ir_t) if dt.is_floating() else IntegerAttr(value, ir_t)
        return self._new(arith.ConstantOp, [], dt, {"value": attr})

    def to_tensor(self, x, dt: dtype | None = None) -> tensor:
        """A runtime value for `x` (a tensor passes through; a Python number becomes a constant)."""
        if isinstance(x, tensor):
            return x
        v = x.value if isinstance(x, constexpr) else x
        if isinstance(v, tensor):
            return v
        if not isinstance(v, numbers.Number):
            raise SemanticError(_not_a_value(v))
        return self.constant(v, dt or literal_dtype(v))

    # ---- shapes ----------------------------------------------------------------------------
    def splat(self, t: tensor, shape) -> tensor:
        """`tt.splat` of a scalar to a block of `shape`; the scalar itself for shape ()
        (`tl.full([], x, dtype)` is a scalar, as in Triton)."""
        if not tuple(shape):
            return t
        return self._new(tt.SplatOp, [t], block_type(t.dtype, shape))

    def expand_dims(self, t: tensor, axis: int) -> tensor:
        """`tt.expand_dims`: insert a size-1 axis at `axis` (a scalar becomes a 1-element block)."""
        if not t.is_block():
            return self.splat(t, (1,))
        shape = list(t.shape)
        if axis < 0:
            axis += len(shape) + 1
        if not 0 <= axis <= len(shape):
            raise SemanticError(f"expand_dims axis {axis} is out of range for shape {list(t.shape)}")
        shape.insert(axis, 1)
        return self._new(tt.ExpandDimsOp, [t], block_type(t.dtype, shape),
                         {"axis": int_attr(axis)})

    def broadcast_to(self, t: tensor, shape) -> tensor:
        """Numpy-style broadcast of `t` to `shape` (splat, leading expand_dims, tt.broadcast)."""
        shape = tuple(int(d) for d in shape)
        if not t.is_block():
            return self.splat(t, shape) if shape else t
        if t.shape == shape:
            return t
        if len(t.shape) > len(shape):
            raise SemanticError(f"cannot broadcast shape {list(t.shape)} to {list(shape)}")
        while len(t.shape) < len(shape):
            t = self.expand_dims(t, 0)
        for s, d in zip(t.shape, shape):
            if s != d and s != 1:
                raise SemanticError(f"cannot broadcast shape {list(t.shape)} to {list(shape)}")
        return self._new(tt.BroadcastOp, [t], block_type(t.dtype, shape))

    @staticmethod
    def broadcast_shape(a: tuple, b: tuple) -> tuple:
        """The numpy broadcast of two shapes, or a SemanticError naming both."""
        if len(a) < len(b):
            a = (1,) * (len(b) - len(a)) + tuple(a)
        if len(b) < len(a):
            b = (1,) * (len(a) - len(b)) + tuple(b)
        out = []
        for x, y in zip(a, b):
            if x != y and 1 not in (x, y):
                raise SemanticError(f"shapes {list(a)} and {list(b)} are incompatible: dimensions "
                                    f"{x} and {y} differ and neither is 1")
            out.append(max(x, y) if 1 in (x, y) else x)
        return tuple(out)

    def broadcast_pair(self, a: tensor, b: tensor):
        """Broadcast two runtime values to their common shape."""
        if a.shape == b.shape:
            return a, b
        shape = self.broadcast_shape(a.shape, b.shape)
        return self.broadcast_to(a, shape), self.broadcast_to(b, shape)

    def reshape(self, t: tensor, shape, can_reorder: bool = False) -> tensor:
        """`tt.reshape` to `shape` (same element count)."""
        shape = tuple(int(d) for d in shape)
        n = prod(shape)
        if n != t.numel:
            raise SemanticError(f"cannot reshape {list(t.shape)} ({t.numel} elements) to "
                                f"{list(shape)} ({n} elements)")
        if not t.is_block():
            return self.splat(t, shape)
        if not shape:
            raise SemanticError("reshape to a scalar is not supported; use a reduction")
        return self._new(tt.ReshapeOp, [t], block_type(t.dtype, shape))

    def trans(self, t: tensor, order=None) -> tensor:
        """`tt.trans` by `order` (reversed dims by default)."""
        if not t.is_block():
            raise SemanticError("trans needs a tensor, got a scalar")
        order = list(order) if order else list(reversed(range(len(t.shape))))
        if sorted(order) != list(range(len(t.shape))):
            raise SemanticError(f"trans order {order} is not a permutation of 0..{len(t.shape) - 1}")
        shape = [t.shape[i] for i in order]
        return self._new(tt.TransOp, [t], block_type(t.dtype, shape),
                         {"order": DenseArrayAttr(tuple(order))})

    # ---- casts -----------------------------------------------------------------------------
    def cast(self, t: tensor, dst: dtype, bitcast: bool = False) -> tensor:
        """Triton's cast: int<->int by sign-/zero-extension or truncation, float<->float,
        int<->float by signedness, to int1 by comparison with zero, pointers by bitcast."""
        src = t.dtype
        if src == dst:
            return t
        rt = self.type_of(t, dst)
        if bitcast:
            if src.primitive_bitwidth != dst.primitive_bitwidth:
                raise SemanticError(f"cannot bitcast {src} to {dst}: their widths differ")
            return self._new(tt.BitcastOp, [t], rt)
        if src.is_ptr() or dst.is_ptr():
            if src.is_ptr() and dst.is_ptr():
                return self._new(tt.BitcastOp, [t], rt)
            if src.is_ptr() and dst.is_int():
                return self._new(tt.PtrToIntOp, [t], rt) if dst == tl.int64 else \
                    self.cast(self._new(tt.PtrToIntOp, [t], self.type_of(t, tl.int64)), dst)
            if dst.is_ptr() and src.is_int():
                return self._new(tt.IntToPtrOp, [self.cast(t, tl.int64)], rt)
            raise SemanticError(f"cannot cast {src} to {dst}")
        if dst.is_bool() and not src.is_bool():
            zero = self.constant(0, src, t.shape)
            return self.compare("ne", t, zero)
        if src.is_int() and dst.is_int():
            sb, db = src.int_bitwidth, dst.int_bitwidth
            if sb == db:
                return tensor(t.handle, rt)
            if db > sb:
                name = "extui" if (src.is_int_unsigned() or src.is_bool()) else "extsi"
                return self._new(arith.CAST_OPS[name], [t], rt)
            return self._new(arith.CAST_OPS["trunci"], [t], rt)
        if src.is_floating() and dst.is_floating():
            if src.primitive_bitwidth == dst.primitive_bitwidth:
                return self.cast(self.cast(t, tl.float32), dst)
            name = "extf" if dst.primitive_bitwidth > src.primitive_bitwidth else "truncf"
            return self._new(arith.CAST_OPS[name], [t], rt)
        if (src.is_int() and dst.is_fp8()) or (src.is_fp8() and dst.is_int()):
            # int <-> fp8 goes through fp32, as the fp8 conversions are float-to-float only
            return self.cast(self.cast(t, tl.float32), dst)
        if src.is_int() and dst.is_floating():
            name = "uitofp" if (src.is_int_unsigned() or src.is_bool()) else "sitofp"
            return self._new(arith.CAST_OPS[name], [t], rt)
        if src.is_floating() and dst.is_int():
            name = "fptoui" if dst.is_int_unsigned() else "fptosi"
            return self._new(arith.CAST_OPS[name], [t], rt)
        raise SemanticError(f"cannot cast {src} to {dst}")

    def cast_rounded(self, t: tensor, dst: dtype, rounding: str) -> tensor:
        """A float downcast with an explicit rounding mode ("rtne" or "rtz"), as Triton's
        `fp_downcast_rounding`: only for narrowing float conversions; rtz for fp32 to
        fp16/bf16 (tt.fp_to_fp), rtne is the ordinary cast."""
        src = t.dtype
        if not (src.is_floating() and dst.is_floating()
                and src.primitive_bitwidth > dst.primitive_bitwidth):
            raise SemanticError(f"fp_downcast_rounding is only for narrowing float casts, not "
                                f"{src} to {dst}")
        if rounding not in tt.FP_ROUNDINGS:
            raise SemanticError(f"fp_downcast_rounding must be 'rtne' or 'rtz', got "
                                f"{rounding!r}")
        if rounding == "rtne":
            return self.cast(t, dst)
        if src != tl.float32 or dst not in (tl.float16, tl.bfloat16):
            raise SemanticError(f"fp_downcast_rounding='rtz' supports fp32 to fp16 or bf16, "
                                f"not {src} to {dst}")
        return self._new(tt.FpToFpOp, [t], self.type_of(t, dst),
                         {"rounding": StringAttr(rounding)})

    # ---- binary arithmetic ------------------------------------------------------------------
    def operands(self, a, b, div_or_mod: bool = False, dt: dtype | None = None):
        """Materialize and promote two operands (a Python scalar adapts to the tensor, R0),
        broadcast them, and cast both to the computation dtype (or to `dt` when given)."""
        a_scalar, b_scalar = is_python_number(a), is_python_number(b)
        for x, scalar in ((a, a_scalar), (b, b_scalar)):
            if not scalar and not isinstance(x, tensor):
                raise SemanticError(_not_a_value(_value(x)))
        a_dt = literal_dtype(_value(a)) if a_scalar else a.dtype
        b_dt = literal_dtype(_value(b)) if b_scalar else b.dtype
        ct = dt or computation_type(a_dt, a_scalar, b_dt, b_scalar, div_or_mod)
        if ct.is_int() and a_scalar != b_scalar:
            check_scalar_fits(_value(a) if a_scalar else _value(b), ct)
        if a_scalar and not b_scalar:
            b = self.cast(b, ct)
            return self.constant(_value(a), ct, b.shape), b
        if b_scalar and not a_scalar:
            a = self.cast(a, ct)
            return a, self.constant(_value(b), ct, a.shape)
        a, b = self.to_tensor(a), self.to_tensor(b)
        a, b = self.broadcast_pair(a, b)
        return self.cast(a, ct), self.cast(b, ct)

    def _binary(self, name: str, a: tensor, b: tensor) -> tensor:
        return self._new(arith.BINARY_OPS[name], [a, b], a.type)

    def _ptr_offset(self, ptr, offset, negate: bool = False) -> tensor:
        if is_python_number(offset) and isinstance(_value(offset), int):
            value = -_value(offset) if negate else _value(offset)
            return self._new(tt.AddPtrOp, [ptr, self.constant(value, literal_dtype(value),
                                                              ptr.shape)], ptr.type)
        offset = self.to_tensor(offset)
        if not offset.dtype.is_int():
            raise SemanticError(f"a pointer offset must be an integer, got {offset.dtype}")
        ptr, offset = self.broadcast_pair(ptr, offset)
        if negate:
            zero = self.constant(0, offset.dtype, offset.shape)
            offset = self._binary("subi", zero, offset)
        return self._new(tt.AddPtrOp, [ptr, offset], ptr.type)

    def add(self, a, b) -> tensor:
        """`+`: addf/addi after promotion, or tt.addptr for pointer + integer."""
        if _is_ptr(b) and not _is_ptr(a):
            a, b = b, a
        if _is_ptr(a):
            if _is_ptr(b):
                raise SemanticError("cannot add two pointers")
            return self._ptr_offset(a, b)
        a, b = self.operands(a, b)
        return self._binary("addf" if a.dtype.is_floating() else "addi", a, b)

    def sub(self, a, b) -> tensor:
        """`-`: subf/subi, or tt.addptr with a negated offset."""
        if _is_ptr(a):
            if _is_ptr(b):
                raise SemanticError("subtracting pointers is not supported; subtract offsets")
            return self._ptr_offset(a, b, negate=True)
        a, b = self.operands(a, b)
        return self._binary("subf" if a.dtype.is_floating() else "subi", a, b)

    def mul(self, a, b) -> tensor:
        """`*`: mulf/muli after promotion."""
        a, b = self.operands(a, b)
        return self._binary("mulf" if a.dtype.is_floating() else "muli", a, b)

    def truediv(self, a, b) -> tensor:
        """`/`: always a float division; two integers divide in fp32."""
        a, b = self.operands(a, b, div_or_mod=True)
        if a.dtype.is_int():
            a, b = self.cast(a, tl.float32), self.cast(b, tl.float32)
        return self._binary("divf", a, b)

    def precise_divf(self, a, b) -> tensor:
        """IEEE division rounded to nearest (`tt.precise_divf`, PTX div.rn), not `/`'s
        faster full-range division."""
        a, b = self.operands(a, b, div_or_mod=True)
        if not a.dtype.is_floating():
            raise SemanticError(f"div_rn needs floating-point operands, got {a.dtype}")
        return self._new(tt.PreciseDivFOp, [a, b], a.type)

    def precise_sqrt(self, x) -> tensor:
        """IEEE square root rounded to nearest (`tt.precise_sqrt`, PTX sqrt.rn)."""
        x = self.to_tensor(x)
        if not x.dtype.is_floating():
            raise SemanticError(f"sqrt_rn needs a floating-point operand, got {x.dtype}")
        return self._new(tt.PreciseSqrtOp, [x], x.type)

    def floordiv(self, a, b) -> tensor:
        """`//`: C-like integer division (rounds toward zero), as Triton and the GPU do."""
        a, b = self.operands(a, b, div_or_mod=True)
        if a.dtype.is_floating():
            raise SemanticError("`//` needs integer operands; use `/` for floating point")
        return self._binary("divui" if a.dtype.is_int_unsigned() else "divsi", a, b)

    def mod(self, a, b) -> tensor:
        """`%`: C-like remainder (takes the dividend's sign) for integers, remf for floats."""
        a, b = self.operands(a, b, div_or_mod=True)
        if a.dtype.is_floating():
            return self._binary("remf", a, b)
        return self._binary("remui" if a.dtype.is_int_unsigned() else "remsi", a, b)

    @staticmethod
    def _int_operand_dtypes(a, b, op: str) -> list:
        """The operands' own dtypes (before promotion; None for a non-value, which `operands`
        then reports), refusing non-integer operands of bitwise and shift operators."""
        kinds = [literal_dtype(_value(x)) if is_python_number(x) else getattr(x, "dtype", None)
                 for x in (a, b)]
        if all(k is not None for k in kinds) and not all(k.is_int() for k in kinds):
            # Triton's wording first ("invalid operands of type A and B"), then ours.
            raise SemanticError(f"invalid operands of type {kinds[0]} and {kinds[1]}: `{op}` "
                                "needs integer (or boolean) operands")
        return kinds

    def _int_only(self, name: str, a, b, op: str) -> tensor:
        self._int_operand_dtypes(a, b, op)
        return self._binary(name, *self.operands(a, b))

    def and_(self, a, b) -> tensor:
        """`&` on integers or booleans."""
        return self._int_only("andi", a, b, "&")

    def or_(self, a, b) -> tensor:
        """`|` on integers or booleans."""
        return self._int_only("ori", a, b, "|")

    def xor_(self, a, b) -> tensor:
        """`^` on integers or booleans."""
        return self._int_only("xori", a, b, "^")

    def lshift(self, a, b) -> tensor:
        """`<<` on integers."""
        return self._int_only("shli", a, b, "<<")

    def rshift(self, a, b) -> tensor:
        """`>>`: arithmetic shift when the tensor operand's own dtype is signed, logical when
        it is unsigned. As in Triton, that dtype is the one before promotion: `int8 >> uint16`
        shifts the sign-extended 16-bit value arithmetically."""
        kinds = self._int_operand_dtypes(a, b, ">>")
        own = kinds[1] if isinstance(b, tensor) and not isinstance(a, tensor) else kinds[0]
        a, b = self.operands(a, b)
        return self._binary("shrsi" if own.is_int_signed() else "shrui", a, b)

    def pow(self, a, b) -> tensor:
        """`**`: repeated multiplication for a small constant integer exponent, else
        exp2(b * log2(a)) in floating point."""
        if is_python_number(b) and isinstance(_value(b), int) and 0 <= _value(b) <= 64:
            n = _value(b)
            a = self.to_tensor(a)
            if n == 0:
                return self.constant(1, a.dtype, a.shape)
            result = a
            for _ in range(n - 1):
                result = self.mul(result, a)
            return result
        a, b = self.operands(a, b)
        if not a.dtype.is_floating():
            a, b = self.cast(a, tl.float32), self.cast(b, tl.float32)
        return self.unary_math("exp2", self.mul(b, self.unary_math("log2", a)))

    def minimum(self, a, b, propagate_nan: bool = False) -> tensor:
        """Elementwise minimum (minnumf, or minimumf when NaNs propagate / minsi / minui)."""
        return self._extremum("min", a, b, propagate_nan)

    def maximum(self, a, b, propagate_nan: bool = False) -> tensor:
        """Elementwise maximum (maxnumf, or maximumf when NaNs propagate / maxsi / maxui)."""
        return self._extremum("max", a, b, propagate_nan)

    def _extremum(self, kind: str, a, b, propagate_nan: bool = False) -> tensor:
        """`kind` "min" or "max" after promotion: the float op (NaN-ignoring, or returning NaN
        when either operand is NaN with `propagate_nan`), the unsigned or the signed op."""
        a, b = self.operands(a, b)
        if a.dtype.is_floating():
            return self._binary(f"{kind}imumf" if propagate_nan else f"{kind}numf", a, b)
        return self._binary(kind + ("ui" if a.dtype.is_int_unsigned() else "si"), a, b)

    def compare(self, pred: str, a, b) -> tensor:
        """`<`, `<=`, `>`, `>=`, `==`, `!=` after promotion; the result is int1."""
        if _is_ptr(a) or _is_ptr(b):
            a, b = self.to_tensor(a), self.to_tensor(b)
            a, b = self.broadcast_pair(a, b)
            a, b = self.cast(a, tl.int64), self.cast(b, tl.int64)
        else:
            a, b = self.operands(a, b)
        rt = self.type_of(a, tl.int1)
        if a.dtype.is_floating():
            return self._new(arith.CmpFOp, [a, b], rt,
                             {"predicate": StringAttr(FLOAT_PREDICATES[pred])})
        signed, unsigned = INT_PREDICATES[pred]
        chosen = unsigned if a.dtype.is_int_unsigned() else signed
        return self._new(arith.CmpIOp, [a, b], rt, {"predicate": StringAttr(chosen)})

    # ---- unary -----------------------------------------------------------------------------
    def neg(self, a: tensor) -> tensor:
        """Unary `-`: negf for floats, 0 - x for integers."""
        if a.dtype.is_floating():
            return self._new(arith.NegFOp, [a], a.type)
        if not a.dtype.is_int():
            raise SemanticError(f"cannot negate a value of dtype {a.dtype}")
        return self._binary("subi", self.constant(0, a.dtype, a.shape), a)

    def invert(self, a: tensor) -> tensor:
        """`~`: xori with all ones."""
        if not a.dtype.is_int():
            raise SemanticError(f"`~` needs an integer operand, got {a.dtype}")
        return self._binary("xori", a, self.constant(-1, a.dtype, a.shape))

    def logical_not(self, a: tensor) -> tensor:
        """`not`: x == 0 (xori with true for booleans)."""
        if a.dtype.is_bool():
            return self._binary("xori", a, self.constant(1, tl.int1, a.shape))
        return self.compare("eq", a, self.constant(0, a.dtype, a.shape))

    def unary_math(self, name: str, a: tensor) -> tensor:
        """An elementwise `math.*` op on floats (integers are rejected, as in Triton)."""
        a = self.to_tensor(a)
        if not a.dtype.is_floating():
            raise SemanticError(f"{name} needs a floating-point operand, got {a.dtype}; "
                                "cast it with .to(tl.float32) first")
        return self._new(mathd.UNARY_OPS[name], [a], a.type)

    def abs(self, a: tensor) -> tensor:
        """absf / absi (unsigned values pass through); fp8 clears the sign bit of its bits
        (there is no 8-bit float arithmetic to run math.absf on)."""
        if a.dtype.is_fp8():
            bits = self.cast(a, tl.uint8, bitcast=True)
            cleared = self.and_(bits, constexpr(0x7F))
            return self.cast(cleared, a.dtype, bitcast=True)
        if a.dtype.is_floating():
            return self._new(mathd.UNARY_OPS["absf"], [a], a.type)
        if a.dtype.is_int_unsigned() or a.dtype.is_bool():
            return a
        return self._new(mathd.AbsIOp, [a], a.type)

    def fma(self, x, y, z) -> tensor:
        """`math.fma` of three broadcast, promoted float operands."""
        x, y, z = self.to_tensor(x), self.to_tensor(y), self.to_tensor(z)
        shape = self.broadcast_shape(self.broadcast_shape(x.shape, y.shape), z.shape)
        ct = computation_type(computation_type(x.dtype, False, y.dtype, False), False,
                              z.dtype, False)
        if not ct.is_floating():
            raise SemanticError(f"fma needs floating-point operands, got {ct}")
        x, y, z = (self.cast(self.broadcast_to(v, shape), ct) for v in (x, y, z))
        return self._new(mathd.FmaOp, [x, y, z], x.type)

    def where(self, cond, x, y) -> tensor:
        """`tl.where`: broadcast all three, promote x and y together, select elementwise. A
        condition that is not boolean is compared with zero, with Triton's deprecation
        warning."""
        cond = self.to_tensor(cond)
        if not cond.dtype.is_bool():
            warnings.warn(f"tl.where with a non-boolean condition is deprecated and will error "
                          f"out in a future triton release. Got {cond.dtype}", stacklevel=2)
        cond = self.cast(cond, tl.int1)
        if is_python_number(x) and is_python_number(y):
            x = self.to_tensor(x)
        if _is_ptr(x) and _is_ptr(y):           # selecting between pointers: no promotion
            if x.dtype != y.dtype:
                raise SemanticError(f"tl.where's pointers must have one type, got {x.dtype} "
                                    f"and {y.dtype}")
            x, y = self.broadcast_pair(x, y)
        else:
            x, y = self.operands(x, y)
        shape = self.broadcast_shape(cond.shape, x.shape)
        cond, x, y = (self.broadcast_to(v, shape) for v in (cond, x, y))
        return self._new(arith.SelectOp, [cond, x, y], x.type)

    # ---- reductions and scans ---------------------------------------------------------------
    def _combine_block(self, inputs) -> Block:
        """The combine region's block: two scalar arguments per input, at the current location."""
        block = Block()
        for t in inputs * 2:
            block.add_argument(t.dtype.to_ir(), self.builder.loc)
        return block

    def reduce(self, inputs: list, axis, combine, keep_dims: bool = False) -> list:
        """`tt.reduce` of `inputs` along `axis` (all axes when None); `combine(args)` builds the
        region body from 2N scalar block arguments and returns N scalar results."""
        inputs = [self.to_tensor(t) for t in inputs]
        if any(not t.is_block() for t in inputs):
            raise SemanticError("reductions need a tensor, got a scalar")
        if axis is None:
            inputs = [t if len(t.shape) == 1 else self.reshape(t, (t.numel,), can_reorder=True)
                      for t in inputs]
            axis = 0
            keep_dims = False
        rank = len(inputs[0].shape)
        if axis < 0:
            axis += rank
        if not 0 <= axis < rank:
            raise SemanticError(f"axis {axis} is out of range for a tensor of rank {rank}")
        block = self._combine_block(inputs)
        arg_types = [t.dtype for t in inputs] * 2
        with self.builder.at_end_of(block):
            args = [tensor(a, dt) for a, dt in zip(block.args, arg_types)]
            results = combine(args)
            self._op(tt.ReduceReturnOp, results, None)
        shape = inputs[0].shape[:axis] + inputs[0].shape[axis + 1:]
        result_types = [block_type(t.dtype, shape) if shape else t.dtype for t in inputs]
        op = self.builder.create(tt.ReduceOp, [t.handle for t in inputs],
                                 [rt.to_ir() for rt in result_types], {"axis": int_attr(axis)},
                                 [Region([block])])
        outs = [tensor(r, rt) for r, rt in zip(op.results, result_types)]
        if keep_dims:
            outs = [self.expand_dims(o, axis) for o in outs]
        return outs

    def scan(self, inputs: list, axis: int, combine, reverse: bool = False) -> list:
        """`tt.scan` (an inclusive prefix combine) along `axis`."""
        inputs = [self.to_tensor(t) for t in inputs]
        rank = len(inputs[0].shape)
        if rank == 0:
            raise SemanticError("scans need a tensor, got a scalar")
        if axis < 0:
            axis += rank
        if not 0 <= axis < rank:
            raise SemanticError(f"axis {axis} is out of range for a tensor of rank {rank}")
        block = self._combine_block(inputs)
        with self.builder.at_end_of(block):
            args = [tensor(a, dt) for a, dt in zip(block.args, [t.dtype for t in inputs] * 2)]
            self._op(tt.ScanReturnOp, combine(args), None)
        op = self.builder.create(tt.ScanOp, [t.handle for t in inputs],
                                 [t.type.to_ir() for t in inputs],
                                 {"axis": int_attr(axis), "reverse": BoolAttr(bool(reverse))},
                                 [Region([block])])
        return [tensor(r, t.type) for r, t in zip(op.results, inputs)]

    def call_combine(self, fn, args: list, dtypes: list, what: str) -> list:
        """Call the user's @jit combine function `fn` on the scalar block arguments `args`
        inside a combine region; its results (one per input) are checked against `dtypes`
        (a constant result becomes a constant of its input's dtype)."""
        if self._call_function is None:
            raise SemanticError(f"{what} cannot call a @jit function here")
        results = self._call_function(fn, args)
        if len(results) != len(dtypes):
            raise SemanticError(f"{what}'s combine function returns {len(results)} value(s), "
                                f"but it combines {len(dtypes)} tensor(s): it must return one "
                                "value per input")
        out = []
        for i, (r, dt) in enumerate(zip(results, dtypes)):
            if is_python_number(r):
                r = self.constant(_value(r), dt)
            if not isinstance(r, tensor) or r.is_block():
                raise SemanticError(f"{what}'s combine function must return scalars, but "
                                    f"result {i} is {r!r}")
            if r.dtype != dt:
                raise SemanticError(f"{what}'s combine function returns {r.dtype} for input "
                                    f"{i}, which is {dt}; the combined values must keep the "
                                    "input's dtype (cast with .to())")
            out.append(r)
        return out

    # ---- memory ----------------------------------------------------------------------------
    def load(self, ptr, mask=None, other=None, cache_modifier=None, eviction_policy=None,
             volatile=False) -> tensor:
        """`tt.load`: mask broadcast to the pointer's shape; `other` cast to the pointee type;
        cache and eviction hints (Triton's spellings, ".cg", "evict_last") as attributes."""
        hints = memory_hints(cache_modifier, eviction_policy, tt.LOAD_CACHE_MODIFIERS)
        if volatile:
            hints["isVolatile"] = BoolAttr(True)
        ptr = self.to_tensor(ptr)
        if not ptr.dtype.is_ptr():
            raise SemanticError(f"tl.load needs a pointer, got a value of dtype {ptr.dtype}")
        elt = ptr.dtype.element_ty
        operands = [ptr]
        if mask is not None:
            mask = self._mask_for(ptr, mask)
            operands.append(mask)
            if other is not None:
                if is_python_number(other):
                    other = self.constant(_value(other), elt, ptr.shape)
                else:
                    other = self.cast(self.to_pointer_shape(self.to_tensor(other), ptr,
                                                            "other"), elt)
                operands.append(other)
        elif other is not None:
            raise SemanticError("tl.load got `other` without `mask`; `other` fills masked-off "
                                "lanes, so pass a mask too")
        return self._new(tt.LoadOp, operands, self.type_of(ptr, elt), hints)

    def _mask_for(self, ptr: tensor, mask) -> tensor:
        mask = self.to_tensor(mask)
        if not ptr.is_block() and mask.is_block():
            raise SemanticError("the mask is a tensor but the pointer is a scalar; make the "
                                "pointer a block first")
        mask = self.to_pointer_shape(mask, ptr, "mask")
        if not mask.dtype.is_bool():
            mask = self.cast(mask, tl.int1)
        return mask

    def value_for(self, ptr: tensor, value) -> tensor:
        """`value` broadcast to the pointer's shape and cast to its pointee dtype (a Python
        number becomes a constant of that dtype)."""
        elt = ptr.dtype.element_ty
        if is_python_number(value):
            return self.constant(_value(value), elt, ptr.shape)
        value = self.to_tensor(value)
        if value.is_block() and not ptr.is_block():
            raise SemanticError(f"cannot use a block of shape {list(value.shape)} with a scalar "
                                "pointer")
        return self.cast(self.to_pointer_shape(value, ptr, "value"), elt)

    def to_pointer_shape(self, t: tensor, ptr: tensor, what: str) -> tensor:
        """`t` (a value, `other` or mask of a memory op) broadcast to the pointer's shape. A
        block must already have the pointer's rank: as in Triton, no leading dims are added
        (a [1, 32] value stored through a [32, 32, 32] pointer is an error, not 32 copies).
        A rank-0 block (`tl.full([], v, dtype)`) is a scalar and fills the pointer's shape."""
        if t.is_block() and ptr.is_block() and len(t.shape) not in (0, len(ptr.shape)):
            raise SemanticError(f"cannot broadcast the {what} of shape {list(t.shape)} to the "
                                f"pointer's shape {list(ptr.shape)}: the ranks differ "
                                f"({len(t.shape)} vs {len(ptr.shape)}); give it the pointer's "
                                f"rank (expand_dims or reshape)")
        return self.broadcast_to(t, ptr.shape)

    def store(self, ptr, value, mask=None, cache_modifier=None, eviction_policy=None) -> None:
        """`tt.store`: the value is broadcast to the pointer's shape and cast to its pointee;
        cache and eviction hints as for `load`."""
        hints = memory_hints(cache_modifier, eviction_policy, tt.STORE_CACHE_MODIFIERS)
        ptr = self.to_tensor(ptr)
        if not ptr.dtype.is_ptr():
            raise SemanticError(f"tl.store needs a pointer, got a value of dtype {ptr.dtype}")
        if ptr.dtype.const:
            raise SemanticError("Cannot store to a constant pointer (a parameter annotated "
                                "tl.const)")
        operands = [ptr, self.value_for(ptr, value)]
        if mask is not None:
            operands.append(self._mask_for(ptr, mask))
        self._op(tt.StoreOp, operands, None, hints)

    def atomic_rmw(self, kind: str, ptr, val, mask=None, sem="acq_rel", scope="gpu") -> tensor:
        """`tt.atomic_rmw` with `kind` already chosen for the dtype."""
        ptr = self.to_tensor(ptr)
        if not ptr.dtype.is_ptr():
            raise SemanticError(f"atomics need a pointer, got {ptr.dtype}")
        if ptr.dtype.const:
            raise SemanticError("Cannot store to a constant pointer (a parameter annotated "
                                "tl.const)")
        val = self.value_for(ptr, val)
        operands = [ptr, val]
        if mask is not None:
            operands.append(self._mask_for(ptr, mask))
        return self._new(tt.AtomicRMWOp, operands, val.type,
                         {"atomic_rmw_op": StringAttr(kind), "sem": StringAttr(sem or "acq_rel"),
                          "scope": StringAttr(scope or "gpu")})


def check_scalar_fits(value, ct: dtype) -> None:
    """A Python int combined with an integer tensor takes the tensor's dtype (rule R0); it
    must fit that dtype, as in Triton, instead of silently wrapping around."""
    if not isinstance(value, int) or isinstance(value, bool):
        return
    bits = ct.int_bitwidth
    if ct.is_int_unsigned():
        if value < 0:
            raise SemanticError(f"Cannot perform a binary operation between an unsigned tensor "
                                f"({ct}) and a negative scalar ({value}); cast one of them "
                                f"explicitly")
        low, high = 0, (1 << bits) - 1
    else:
        low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if not low <= value <= high:
        raise SemanticError(f"Scalar {value} is out of range for type {ct} "
                            f"[{low}, {high}]; cast the tensor to a wider type first")


def memory_hints(cache_modifier, eviction_policy, cache_modifiers) -> dict:
    """The `cache` / `evict` attributes of a load or store from Triton's hint strings
    (`cache_modifier=".cg"`, `eviction_policy="evict_last"`; "" or None: the default)."""
    hints = {}
    if cache_modifier:
        name = cache_modifier[1:] if cache_modifier.startswith(".") else cache_modifier
        if name not in cache_modifiers:
            raise SemanticError(f"Cache modifier {cache_modifier} not supported here: this "
                                f"takes " + ", ".join(f"'.{m}'" for m in cache_modifiers))
        hints["cache"] = StringAttr(name)
    if eviction_policy:
        if eviction_policy not in tt.EVICTION_POLICIES:
            raise SemanticError(f"Eviction policy {eviction_policy} not supported: use "
                                + " or ".join(f"'{e}'" for e in tt.EVICTION_POLICIES))
        hints["evict"] = StringAttr(eviction_policy)
    if len(hints) == 2:
        raise SemanticError(f"cache_modifier={cache_modifier!r} and eviction_policy="
                            f"{eviction_policy!r} cannot be combined: a PTX load or store takes "
                            f"a cache operator or an L1 eviction priority, not both")
    return hints


def _value(x):
    return x.value if isinstance(x, constexpr) else x


def _not_a_value(v) -> str:
    """Why `v` cannot be an operand; None says what None means for a kernel argument."""
    if v is None:
        return ("None cannot be used as a value: an argument passed as None is a constexpr None "
                "(as in Triton), not a null pointer; pass an array, or guard the use with "
                "`if arg is not None:`")
    return f"expected a tensor or a number, got {v!r}"


def _is_ptr(x) -> bool:
    return isinstance(x, tensor) and x.dtype.is_ptr()

