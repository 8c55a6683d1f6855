"""Asynchronous global -> shared copies (the `pipeline` pass's ops), multi-buffer slices and
transposed views of shared buffers.

`ttg.async_copy_global_to_local` becomes one `cp.async` per run of registers contiguous in both
global and shared memory (16 bytes: `.cg`, which bypasses L1; 4 or 8 bytes: `.ca`), with
`src_size` 0 for masked-off elements so the hardware zero-fills them without reading memory.
Runs narrower than 4 bytes fall back to a predicated load and a shared store. `ttg.async_wait`
is `cp.async.wait_group N` followed by a CTA barrier, so the data is visible to every thread and
every thread has finished reading the slot the next copies overwrite. The ops' `!ttg.async.token`
results only order them in the IR: they lower to no registers (a loop carrying them gets no phi).
"""
from __future__ import annotations

from llvmlite import ir

from compiler.dialects import ttg

from . import vector_width as vw
from .llvm_helpers import barrier, byte_width, i32, inline_ptx, llvm_type
from .lower_convert import shared_element_address, shared_offset, shared_store
from .lower_memory import _load_group
from .registry import lowers

CP_ASYNC_BYTES = (4, 8, 16)


@lowers(ttg.MemDescIndexOp)
def lower_memdesc_index(ctx, op):
    """`ttg.memdesc_index %buf[%i]`: the buffer's base plus i slices (bytes)."""
    buf, index = op.operands
    t = op.results[0].type
    slice_bytes = byte_width(t.element)
    for d in t.shape:
        slice_bytes *= d
    b = ctx.builder
    base = ctx.get(buf)[0]
    offset = b.mul(ctx.get(index)[0], i32(slice_bytes))
    ctx.set(op.results[0], [b.gep(base, [offset], source_etype=ir.IntType(8))])


@lowers(ttg.MemDescTransOp)
def lower_memdesc_trans(ctx, op):
    """`ttg.memdesc_trans`: the same base address; the result's shared layout (the one its
    readers address the buffer by) is the transposed view of the source's."""
    ctx.set(op.results[0], list(ctx.get(op.operands[0])))


def _cp_async(ctx, dst, src, pred, nbytes: int) -> None:
    """One `cp.async` of `nbytes`; zero-filled (no read) where `pred` is false."""
    b = ctx.builder
    src_size = i32(nbytes) if pred is None else b.select(pred, i32(nbytes), i32(0))
    cache = "cg" if nbytes == 16 else "ca"
    asm = f"cp.async.{cache}.shared.global [ $0 + 0 ], [ $1 + 0 ], {nbytes}, $2;"
    # the memory clobber keeps LLVM from moving this thread's shared loads across the copy
    inline_ptx(b, ir.VoidType(), asm, "r,l,r,~{memory}", [dst, src, src_size])


@lowers(ttg.AsyncCopyGlobalToLocalOp)
def lower_async_copy(ctx, op):
    """`ttg.async_copy_global_to_local %ptrs, %buf [mask %m]`: each thread copies its unique
    elements to their swizzled place in the buffer, `vector_width.copy_width` elements per
    instruction."""
    ptr_value, buf = op.operands[:2]
    mask_value = op.operands[2] if len(op.operands) > 2 else None
    t = ptr_value.type
    b = ctx.builder
    ptrs = ctx.get(ptr_value)
    masks = ctx.get(mask_value) if mask_value is not None else [None] * len(ptrs)
    base = ctx.get(buf)[0]
    elem_bytes = byte_width(buf.type.element)
    elem_ty = llvm_type(buf.type.element)
    coords = ctx.indexer.coords(b, t.encoding, t.shape)
    unique = ctx.indexer.unique_registers(t.encoding, t.shape)
    width = vw.copy_width(ctx.axis, ptr_value, mask_value, buf.type)
    if width * elem_bytes not in CP_ASYNC_BYTES:
        width = 1
    unique_set = set(unique)
    starts = {r for r in unique if r % width == 0
              and all(r + i in unique_set for i in range(width))}
    covered = {r + i for r in starts for i in range(1, width)}
    for reg in unique:
        if reg in covered:
            continue
        run = width if reg in starts else 1
        offset = shared_offset(b, buf.type.encoding, coords[reg], t.shape)
        dst = shared_element_address(b, base, offset, elem_ty)
        if run * elem_bytes in CP_ASYNC_BYTES:
            _cp_async(ctx, dst, ptrs[reg], masks[reg], run * elem_bytes)
            continue
        value = _load_group(ctx, ptrs[reg], masks[reg], None, elem_ty, 1)[0]
        shared_store(ctx, base, offset, value)
    ctx.set(op.results[0], [])      # the token: no registers


@lowers(ttg.AsyncCommitGroupOp)
def lower_async_commit_group(ctx, op):
    """`ttg.async_commit_group tokens %copies`: `cp.async.commit_group`."""
    inline_ptx(ctx.builder, ir.VoidType(), "cp.async.commit_group;", "", [])
    ctx.set(op.results[0], [])      # the token: no registers


@lowers(ttg.AsyncWaitOp)
def lower_async_wait(ctx, op):
    """`ttg.async_wait %groups {num}`: `cp.async.wait_group num`, then a CTA barrier."""
    num = op.attributes["num"].value
    inline_ptx(ctx.builder, ir.VoidType(), f"cp.async.wait_group {num};", "~{memory}", [])
    barrier(ctx.builder)
    ctx.set(op.results[0], [])      # the token: no registers

