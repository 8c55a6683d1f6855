"""Where an element lives in a `#ttg.nvmma_shared` buffer, and the wgmma matrix descriptors
that tell the tensor cores the same thing.

A rank-2 buffer is cut along its contiguous dim into column blocks one swizzle row wide
(`swizzlingByteWidth` bytes); each block stores its rows one after another, and in row r the
16-byte chunks are XORed with (r / perPhase) % maxPhase (perPhase = 128 / swizzle bytes,
maxPhase = swizzle bytes / 16), so 8 consecutive rows of one chunk column hit 8 different bank
groups. This is the closed form of `compiler.analysis.layout_to_linear`'s linear layout for the
encoding (tests/cpu/test_wgmma.py checks them against each other), and exactly the canonical
layout wgmma reads with the matching descriptor swizzle mode: the stride between 8-row core
matrix groups (SBO) is 8 swizzle rows, the stride between column blocks (LBO) is the block's
size. The swizzle XOR is applied by the hardware to address bits, so buffers are 1024-byte
aligned.
"""
from __future__ import annotations

from llvmlite import ir

from compiler.dialects.ttg import NVMMASharedEncoding

from .llvm_helpers import I64, i32

#: PTX's descriptor swizzle mode (bits 62-63) per swizzle width in bytes
SWIZZLE_MODE = {0: 0, 128: 1, 64: 2, 32: 3}
#: byte alignment a swizzled buffer needs (the XOR reads address bits 4-9)
NVMMA_ALIGNMENT = 1024


def geometry(enc: NVMMASharedEncoding, shape) -> tuple:
    """(contiguous dim, elements per swizzle row, rows per column block)."""
    if len(shape) != 2:
        raise ValueError(f"{enc}: rank-2 buffers only, got shape {list(shape)}")
    contig = 0 if enc.transposed else 1
    width = enc.swizzling_byte_width or 16
    row_elems = width * 8 // enc.element_bit_width
    if shape[contig] % row_elems:
        raise ValueError(f"{enc}: contiguous dim {shape[contig]} is not a multiple of "
                         f"{row_elems} elements")
    return contig, row_elems, shape[1 - contig]


def _phase_params(enc: NVMMASharedEncoding) -> tuple:
    width = enc.swizzling_byte_width
    if not width:
        return 1, 1
    return 128 // width, width // 16


def offset_of(enc: NVMMASharedEncoding, shape, coords) -> int:
    """Element offset of integer coordinates (dim 0, dim 1)."""
    contig, row_elems, rows = geometry(enc, shape)
    c, r = coords[contig], coords[1 - contig]
    per_phase, max_phase = _phase_params(enc)
    col = (c % row_elems) ^ (((r // per_phase) % max_phase) * enc.vec)
    return (c // row_elems) * rows * row_elems + r * row_elems + col


def emit_offset(builder: ir.IRBuilder, enc: NVMMASharedEncoding, coords, shape):
    """`offset_of` for i32 coordinate values, as LLVM IR (powers of two become shifts)."""
    contig, row_elems, rows = geometry(enc, shape)
    c, r = coords[contig], coords[1 - contig]
    shift = row_elems.bit_length() - 1
    block = builder.lshr(c, i32(shift))
    col = builder.and_(c, i32(row_elems - 1))
    per_phase, max_phase = _phase_params(enc)
    if max_phase > 1:
        phase = builder.lshr(r, i32(per_phase.bit_length() - 1)) if per_phase > 1 else r
        phase = builder.and_(phase, i32(max_phase - 1))
        col = builder.xor(col, builder.shl(phase, i32(enc.vec.bit_length() - 1)))
    base = builder.add(builder.mul(block, i32(rows * row_elems)), builder.shl(r, i32(shift)))
    return builder.add(base, col)


def descriptor_fields(enc: NVMMASharedEncoding, shape) -> tuple:
    """(leading byte offset, stride byte offset, swizzle mode) of a wgmma descriptor of this
    buffer: LBO = bytes of one column block, SBO = bytes of 8 swizzle rows."""
    _, row_elems, rows = geometry(enc, shape)
    row_bytes = row_elems * enc.element_bit_width // 8
    return rows * row_bytes, 8 * row_bytes, SWIZZLE_MODE[enc.swizzling_byte_width]


def emit_descriptor(builder: ir.IRBuilder, enc: NVMMASharedEncoding, shape, address):
    """The 64-bit wgmma matrix descriptor of the sub-matrix starting at shared byte `address`
    (an i32 in the shared window): start address >> 4 in bits 0-13, LBO >> 4 in 16-29,
    SBO >> 4 in 32-45, base offset 0, swizzle mode in 62-63."""
    lbo, sbo, mode = descriptor_fields(enc, shape)
    start = builder.and_(builder.lshr(address, i32(4)), i32(0x3FFF))
    low = builder.or_(start, i32(((lbo >> 4) & 0x3FFF) << 16))
    high = ((sbo >> 4) & 0x3FFF) | (mode << 30)
    return builder.or_(builder.zext(low, I64), ir.Constant(I64, high << 32))
