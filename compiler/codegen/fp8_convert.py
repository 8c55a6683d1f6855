"""Conversions to and from the fp8 formats (e4m3 "fn" and e5m2), which LLVM holds as plain i8.

LLVM has no fp8 float types, so `fpext` / `fptrunc` cannot take them; Hopper's PTX converts
two at a time (sm_89+), as Triton's conversions do:
- up: `cvt.rn.f16x2.{e4m3x2,e5m2x2}` gives fp16 (exact: both formats fit in fp16), then an
  ordinary LLVM cast to the wanted type (fp16 -> bf16 / fp32 / fp64 is exact for these values,
  infinities and NaNs included);
- down: the source goes to fp32 first (exact from fp16 / bf16; an int is converted as LLVM
  converts it), then `cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32` rounds to nearest even and
  saturates finite overflow to the largest finite value (NaN stays NaN).
"""
from __future__ import annotations

from llvmlite import ir

from .llvm_helpers import F32, inline_ptx

#: MLIR fp8 kinds this module converts, with their PTX names.
FP8_PTX = {"f8E4M3FN": "e4m3", "f8E5M2": "e5m2"}
I8, I16, I32 = ir.IntType(8), ir.IntType(16), ir.IntType(32)
F16 = ir.HalfType()


def float_kind(ty) -> str:
    """The MLIR float kind ("f16", "f8E5M2", ...) of a type's elements; "" for the others."""
    return getattr(ty.scalar, "kind", "")


def is_fp8(kind: str) -> bool:
    """Whether an MLIR scalar kind is one of the fp8 formats kept as i8 in LLVM."""
    return kind.startswith("f8")


def _pairs(values: list) -> list:
    """`values` two by two, the last one paired with itself when their count is odd."""
    return [(values[i], values[min(i + 1, len(values) - 1)]) for i in range(0, len(values), 2)]


def fp8_to_f16(b: ir.IRBuilder, values: list, kind: str) -> list:
    """fp8 bytes (i8) of `kind` to fp16 values, two per `cvt`."""
    name = FP8_PTX[kind]
    out = []
    for lo, hi in _pairs(values):
        packed = b.or_(b.zext(lo, I16), b.shl(b.zext(hi, I16), ir.Constant(I16, 8)))
        word = inline_ptx(b, I32, f"cvt.rn.f16x2.{name}x2 $0, $1;", "=r,h", [packed],
                          side_effect=False)
        halves = b.bitcast(word, ir.VectorType(F16, 2))
        out += [b.extract_element(halves, ir.Constant(I32, i)) for i in range(2)]
    return out[:len(values)]


def f32_to_fp8(b: ir.IRBuilder, values: list, kind: str) -> list:
    """fp32 values to fp8 bytes (i8) of `kind`, rounded to nearest even, saturating."""
    name = FP8_PTX[kind]
    out = []
    for lo, hi in _pairs(values):
        # The first source lands in the upper byte, the second in the lower one.
        word = inline_ptx(b, I16, f"cvt.rn.satfinite.{name}x2.f32 $0, $1, $2;", "=h,f,f",
                          [hi, lo], side_effect=False)
        out += [b.trunc(word, I8), b.trunc(b.lshr(word, ir.Constant(I16, 8)), I8)]
    return out[:len(values)]


def _float_width(ty) -> int:
    return {ir.HalfType: 16, ir.FloatType: 32, ir.DoubleType: 64}.get(type(ty), 16)


def _float_cast(b: ir.IRBuilder, x, to):
    """An LLVM float-to-float cast in whichever direction the widths ask (bf16 is 16 wide but
    not fp16: it goes by way of fp32)."""
    if x.type == to:
        return x
    if isinstance(x.type, ir.HalfType) and not isinstance(to, (ir.FloatType, ir.DoubleType)):
        x = b.fpext(x, F32)
        if x.type == to:
            return x
    src, dst = _float_width(x.type), _float_width(to)
    return b.fpext(x, to) if dst > src else b.fptrunc(x, to)


def convert_fp8(b: ir.IRBuilder, values: list, src_kind: str, dst_kind: str, to,
                kind: str) -> list:
    """Lower one cast (`kind`: an LLVM cast name, "fpext", "sitofp", ...) whose source or
    result is fp8. `to` is the result's LLVM type."""
    if is_fp8(src_kind):
        halves = fp8_to_f16(b, values, src_kind)
        if kind in ("fptosi", "fptoui"):
            return [getattr(b, kind)(b.fpext(h, F32), to) for h in halves]
        if is_fp8(dst_kind):
            return f32_to_fp8(b, [b.fpext(h, F32) for h in halves], dst_kind)
        return [_float_cast(b, h, to) for h in halves]
    if kind in ("sitofp", "uitofp"):
        wide = [getattr(b, kind)(x, F32) for x in values]
    else:
        wide = [_float_cast(b, x, F32) for x in values]
    return f32_to_fp8(b, wide, dst_kind)
