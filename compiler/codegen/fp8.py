"""Conversions to and from the 8-bit floats (e4m3 = f8E4M3FN, e5m2 = f8E5M2).

In LLVM an fp8 value is a byte (`llvm_type`), so `fpext`/`fptrunc` cannot touch it; PTX has the
conversions from sm_89 on, two values at a time: `cvt.rn.f16x2.{e4m3x2,e5m2x2}` widens a pair of
bytes to a pair of halves (exact), `cvt.rn.satfinite.{e4m3x2,e5m2x2}.{f32,f16x2}` narrows a pair
with round-to-nearest-even, saturating to the largest finite value (NaN stays NaN), as Triton
does on Hopper. Every other width goes through these: fp8 -> f16 -> (fpext/fptrunc, exact for
fp8 values) -> bf16/f32/f64, and f64/bf16 -> f32 -> fp8. Registers are converted in pairs; an
odd one out is paired with itself.
"""
from __future__ import annotations

from llvmlite import ir

from .llvm_helpers import F16, F32, I8, I16, I32, inline_ptx, type_bits

#: PTX's name of each fp8 IR kind in the x2 conversion instructions.
PTX_FP8 = {"f8E4M3FN": "e4m3x2", "f8E5M2": "e5m2x2"}
#: The first compute capability with the fp8 cvt instructions.
MIN_ARCH = 89


def is_fp8(kind: str) -> bool:
    """Whether an IR float kind is one of the 8-bit floats (a byte in LLVM)."""
    return kind in PTX_FP8


def _pairs(values: list) -> list:
    return [(values[i], values[i + 1] if i + 1 < len(values) else values[i])
            for i in range(0, len(values), 2)]


def _unpair(pairs: list, count: int) -> list:
    return [x for pair in pairs for x in pair][:count]


def _fp8_to_f16(b: ir.IRBuilder, values: list, kind: str) -> list:
    """Bytes of fp8 `kind` -> halves, exactly (`cvt.rn.f16x2.<kind>x2`)."""
    asm = f"cvt.rn.f16x2.{PTX_FP8[kind]} $0, $1;"
    out = []
    for lo, hi in _pairs(values):
        packed = b.or_(b.zext(lo, I16), b.shl(b.zext(hi, I16), ir.Constant(I16, 8)))
        word = inline_ptx(b, I32, asm, "=r,h", [packed], side_effect=False)
        halves = b.bitcast(word, ir.VectorType(F16, 2))
        out.append((b.extract_element(halves, ir.Constant(I32, 0)),
                    b.extract_element(halves, ir.Constant(I32, 1))))
    return _unpair(out, len(values))


def _to_fp8(b: ir.IRBuilder, values: list, kind: str) -> list:
    """f16 or f32 registers -> bytes of fp8 `kind` (`cvt.rn.satfinite.<kind>x2.{f16x2,f32}`);
    the first operand of the f32 form lands in the high byte."""
    dst = PTX_FP8[kind]
    out = []
    for lo, hi in _pairs(values):
        if lo.type == F16:
            vec = ir.VectorType(F16, 2)
            pair = b.insert_element(b.insert_element(ir.Constant(vec, None), lo,
                                                     ir.Constant(I32, 0)),
                                    hi, ir.Constant(I32, 1))
            word = b.bitcast(pair, I32)
            packed = inline_ptx(b, I16, f"cvt.rn.satfinite.{dst}.f16x2 $0, $1;", "=h,r",
                                [word], side_effect=False)
        else:
            packed = inline_ptx(b, I16, f"cvt.rn.satfinite.{dst}.f32 $0, $2, $1;", "=h,f,f",
                                [lo, hi], side_effect=False)
        out.append((b.trunc(packed, I8), b.trunc(b.lshr(packed, ir.Constant(I16, 8)), I8)))
    return _unpair(out, len(values))


def _resize(b: ir.IRBuilder, x, to: ir.Type):
    """An exact-or-rounding float width change between LLVM float types."""
    if x.type == to:
        return x
    if type_bits(to) == type_bits(x.type):           # f16 <-> bf16: through f32, exactly
        return _resize(b, b.fpext(x, F32), to)
    return b.fpext(x, to) if type_bits(to) > type_bits(x.type) else b.fptrunc(x, to)


def convert_fp8(b: ir.IRBuilder, values: list, src_kind: str, dst_kind: str,
                dst: ir.Type) -> list:
    """Convert float registers of IR kind `src_kind` to `dst_kind` (LLVM type `dst`) when
    either side is fp8; rounding is to nearest even, fp8 results saturate to finite."""
    if is_fp8(src_kind):
        values = _fp8_to_f16(b, values, src_kind)
        if is_fp8(dst_kind):
            return _to_fp8(b, values, dst_kind)
        return [_resize(b, x, dst) for x in values]
    narrow = [x if x.type in (F16, F32) else _resize(b, x, F32) for x in values]
    return _to_fp8(b, narrow, dst_kind)
