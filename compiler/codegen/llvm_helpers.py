"""Small llvmlite.ir helpers shared by the lowering modules: types, constants, intrinsics,
inline PTX, warp shuffles and word packing for vector memory accesses."""
from __future__ import annotations

import struct

from llvmlite import ir

from compiler.dialects.tt import PointerType
from compiler.ir.types import FloatType, IntegerType, TensorType, Type


class BFloatType(ir.Type):
    """LLVM's `bfloat` (llvmlite.ir has no class for it); constants print as `0xR....`."""

    null = "0xR0000"

    def __str__(self) -> str:
        return "bfloat"

    def __eq__(self, other):
        return isinstance(other, BFloatType)

    def __hash__(self):
        return hash("bfloat")

    def format_constant(self, value):
        bits = struct.unpack("<I", struct.pack("<f", float(value)))[0]
        rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
        return "0xR%04X" % (rounded & 0xFFFF)


BFLOAT = BFloatType()
I1, I8, I16, I32, I64 = (ir.IntType(w) for w in (1, 8, 16, 32, 64))
F16, F32, F64 = ir.HalfType(), ir.FloatType(), ir.DoubleType()
#: Fast-math flags of float arithmetic: LLVM may fuse a mul and an add into an fma (Triton's
#: fp-fusion default; `lowering._forbid_contraction` drops them for enable_fp_fusion=False).
CONTRACT = ("contract",)
GLOBAL_PTR = ir.PointerType(addrspace=1)
SHARED_PTR = ir.PointerType(addrspace=3)
GENERIC_PTR = ir.PointerType()


def llvm_type(t: Type) -> ir.Type:
    """The LLVM type of one element of an IR type (a tensor's element, or a scalar)."""
    t = t.scalar if isinstance(t, TensorType) else t
    if isinstance(t, IntegerType):
        return ir.IntType(t.width)
    if isinstance(t, FloatType):
        # fp8 values are bytes in LLVM (only tensor cores and conversions interpret them)
        return {"f16": F16, "bf16": BFLOAT, "f32": F32, "f64": F64, "f8E4M3FN": I8,
                "f8E5M2": I8}[t.kind]
    if isinstance(t, PointerType):
        return ir.PointerType(addrspace=t.address_space)
    raise NotImplementedError(f"no LLVM type for {t}")


def byte_width(t: Type) -> int:
    """Bytes one element of `t` takes in memory (i1 is stored as a byte)."""
    t = t.scalar if isinstance(t, TensorType) else t
    if isinstance(t, PointerType):
        return 8
    return max(1, t.width // 8)


def llvm_byte_width(t: ir.Type) -> int:
    """Bytes one scalar of LLVM type `t` takes in memory (`byte_width` for the IR's types)."""
    if isinstance(t, ir.IntType):
        return max(1, t.width // 8)
    if isinstance(t, ir.PointerType):
        return 8
    sizes = {ir.HalfType: 2, BFloatType: 2, ir.FloatType: 4, ir.DoubleType: 8}
    if type(t) not in sizes:
        raise NotImplementedError(f"no memory size for the LLVM type {t}")
    return sizes[type(t)]


def const(ty: ir.Type, value) -> ir.Constant:
    """An LLVM constant of `ty`."""
    return ir.Constant(ty, value)


def i32(value: int) -> ir.Constant:
    """An i32 LLVM constant."""
    return ir.Constant(I32, value)


def intrinsic(module: ir.Module, name: str, ret: ir.Type, args: list) -> ir.Function:
    """Declare (once) and return an intrinsic or external function."""
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    fn = ir.Function(module, ir.FunctionType(ret, args), name=name)
    return fn


def call_intrinsic(builder: ir.IRBuilder, name: str, ret: ir.Type, args: list):
    """Call an intrinsic declared from its argument values' types."""
    fn = intrinsic(builder.module, name, ret, [a.type for a in args])
    return builder.call(fn, args)


def special_register(builder: ir.IRBuilder, name: str):
    """Read a PTX special register such as `tid.x` or `ctaid.y`."""
    return call_intrinsic(builder, f"llvm.nvvm.read.ptx.sreg.{name}", I32, [])


def linear_program_id(builder: ir.IRBuilder):
    """The program's linear id (i64): ctaid.x + nctaid.x * (ctaid.y + nctaid.y * ctaid.z)."""
    x, y, z = (special_register(builder, f"ctaid.{a}") for a in "xyz")
    nx, ny = (special_register(builder, f"nctaid.{a}") for a in "xy")
    return builder.zext(builder.add(x, builder.mul(nx, builder.add(y, builder.mul(ny, z)))), I64)


def inline_ptx(builder: ir.IRBuilder, ret: ir.Type, asm: str, constraints: str, args: list,
               side_effect: bool = True):
    """Emit an inline PTX block."""
    fty = ir.FunctionType(ret, [a.type for a in args])
    return builder.asm(fty, asm, constraints, args, side_effect)


def barrier(builder: ir.IRBuilder) -> None:
    """`bar.sync 0`: every thread of the CTA waits here."""
    call_intrinsic(builder, "llvm.nvvm.barrier.cta.sync.aligned.all", ir.VoidType(), [i32(0)])


def to_i32_words(builder: ir.IRBuilder, value) -> list:
    """Split a scalar into i32 words for shuffles (1 word up to 32 bits, 2 for 64 bits)."""
    ty = value.type
    if isinstance(ty, ir.PointerType):
        value = builder.ptrtoint(value, I64)
        ty = I64
    bits = type_bits(ty)
    as_int = value if isinstance(ty, ir.IntType) else builder.bitcast(value, ir.IntType(bits))
    if bits < 32:
        return [builder.zext(as_int, I32)]
    if bits == 32:
        return [as_int]
    lo = builder.trunc(as_int, I32)
    hi = builder.trunc(builder.lshr(as_int, ir.Constant(I64, 32)), I32)
    return [lo, hi]


def from_i32_words(builder: ir.IRBuilder, words: list, ty: ir.Type):
    """Inverse of `to_i32_words`."""
    if isinstance(ty, ir.PointerType):
        return builder.inttoptr(from_i32_words(builder, words, I64), ty)
    bits = type_bits(ty)
    int_ty = ir.IntType(bits)
    if bits < 32:
        as_int = builder.trunc(words[0], int_ty)
    elif bits == 32:
        as_int = words[0]
    else:
        lo = builder.zext(words[0], I64)
        hi = builder.shl(builder.zext(words[1], I64), ir.Constant(I64, 32))
        as_int = builder.or_(lo, hi)
    return as_int if isinstance(ty, ir.IntType) else builder.bitcast(as_int, ty)


def type_bits(ty: ir.Type) -> int:
    """Bit width of an LLVM scalar type."""
    if isinstance(ty, ir.IntType):
        return ty.width
    if isinstance(ty, (ir.HalfType, BFloatType)):
        return 16
    if isinstance(ty, ir.FloatType):
        return 32
    if isinstance(ty, ir.DoubleType):
        return 64
    if isinstance(ty, ir.PointerType):
        return 64
    raise NotImplementedError(f"bit width of {ty}")


def shuffle_xor(builder: ir.IRBuilder, value, offset: int):
    """`shfl.sync.bfly.b32` of any scalar up to 64 bits with lane mask `offset`."""
    words = [call_intrinsic(builder, "llvm.nvvm.shfl.sync.bfly.i32", I32,
                            [i32(-1), w, i32(offset), i32(31)])
             for w in to_i32_words(builder, value)]
    return from_i32_words(builder, words, value.type)


def shuffle_idx(builder: ir.IRBuilder, value, lane):
    """`shfl.sync.idx.b32` of any scalar up to 64 bits (pointers too) from lane `lane` (i32)."""
    words = [call_intrinsic(builder, "llvm.nvvm.shfl.sync.idx.i32", I32,
                            [i32(-1), w, lane, i32(31)])
             for w in to_i32_words(builder, value)]
    return from_i32_words(builder, words, value.type)


def pack_words(builder: ir.IRBuilder, values: list, word_bits: int) -> list:
    """Pack consecutive scalars into `word_bits`-wide integers (for vector loads/stores), through
    a vector bitcast so the backend emits `mov.b32 {%rs1, %rs2}` rather than shifts."""
    elem_bits = type_bits(values[0].type)
    per_word = max(1, word_bits // elem_bits)
    word_ty = ir.IntType(word_bits)
    if per_word == 1:
        return [as_int_bits(builder, v) if elem_bits == word_bits else builder.zext(
            as_int_bits(builder, v), word_ty) for v in values]
    vec_ty = ir.VectorType(_bits_type(values[0].type), per_word)
    words = []
    for i in range(0, len(values), per_word):
        vec = ir.Constant(vec_ty, None)
        for j, v in enumerate(values[i:i + per_word]):
            vec = builder.insert_element(vec, _bits_value(builder, v), i32(j))
        words.append(builder.bitcast(vec, word_ty))
    return words


def unpack_words(builder: ir.IRBuilder, words: list, elem_ty: ir.Type, count: int) -> list:
    """Inverse of `pack_words`: `count` scalars of `elem_ty` from integer words."""
    elem_bits = type_bits(elem_ty)
    word_bits = words[0].type.width
    per_word = max(1, word_bits // elem_bits)
    if per_word == 1:
        return [from_int_bits(builder, w if elem_bits == word_bits else
                              builder.trunc(w, ir.IntType(elem_bits)), elem_ty)
                for w in words[:count]]
    vec_ty = ir.VectorType(_bits_type(elem_ty), per_word)
    out = []
    for i in range(count):
        if i % per_word == 0:
            vec = builder.bitcast(words[i // per_word], vec_ty)
        part = builder.extract_element(vec, i32(i % per_word))
        out.append(part if part.type == elem_ty else from_int_bits(builder, part, elem_ty))
    return out


def _bits_type(ty: ir.Type) -> ir.Type:
    """The vector element type used for packing: floats as themselves, the rest as integers."""
    if isinstance(ty, (ir.HalfType, BFloatType, ir.FloatType, ir.DoubleType)):
        return ty
    return ir.IntType(max(8, type_bits(ty)))


def _bits_value(builder: ir.IRBuilder, value):
    ty = _bits_type(value.type)
    return value if value.type == ty else as_int_bits(builder, value)


def as_int_bits(builder: ir.IRBuilder, value):
    """A scalar reinterpreted as an integer of its width (i1 widened to i8)."""
    ty = value.type
    if isinstance(ty, ir.IntType):
        return builder.zext(value, I8) if ty.width == 1 else value
    if isinstance(ty, ir.PointerType):
        return builder.ptrtoint(value, I64)
    return builder.bitcast(value, ir.IntType(type_bits(ty)))


def from_int_bits(builder: ir.IRBuilder, value, ty: ir.Type):
    """Inverse of `as_int_bits`."""
    if isinstance(ty, ir.IntType):
        if ty.width == 1:
            return builder.icmp_unsigned("!=", value, ir.Constant(value.type, 0))
        return value
    if isinstance(ty, ir.PointerType):
        return builder.inttoptr(value, ty)
    return builder.bitcast(value, ty)


def memory_type(ty: ir.Type) -> ir.Type:
    """The type an element is stored as (i1 is a byte in memory)."""
    return I8 if isinstance(ty, ir.IntType) and ty.width == 1 else ty


def to_memory(builder: ir.IRBuilder, value):
    """A register value in its memory representation."""
    if isinstance(value.type, ir.IntType) and value.type.width == 1:
        return builder.zext(value, I8)
    return value


def from_memory(builder: ir.IRBuilder, value, ty: ir.Type):
    """A loaded value in its register representation `ty`."""
    if isinstance(ty, ir.IntType) and ty.width == 1:
        return builder.icmp_unsigned("!=", value, ir.Constant(value.type, 0))
    return value
