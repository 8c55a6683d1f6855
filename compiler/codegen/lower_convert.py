"""Moving a tensor between layouts: `ttg.convert_layout` (and reshape/trans, which reuse the same
shared-memory exchange), plus the explicit shared-memory ops `ttg.local_alloc/load/store`.

The exchange writes every register to shared memory at the element's row-major offset, waits at a
barrier, and reads back the elements the new layout gives each thread (a barrier first, too, so
earlier users of the scratch area are done). Correct for any pair of distributed layouts; not yet
the swizzled, vectorized path Triton takes.
"""
from __future__ import annotations

from llvmlite import ir

from compiler.dialects import tt, ttg
from compiler.analysis import layouts
from compiler.dialects.ttg import BlockedEncoding
from compiler.ir.types import TensorType

from compiler.analysis.shared_memory import exchange_row_padding, same_distribution

from .llvm_helpers import (I64, barrier, byte_width, from_memory, i32, inline_ptx, llvm_type,
                           memory_type, to_memory, type_bits)
from .registry import lowers


def row_major_strides(shape) -> list:
    """Element strides of a row-major array of `shape`."""
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    return strides


def flat_offset(builder, coords, shape):
    """Row-major element offset (i32) of per-dim coordinate values."""
    offset = None
    for c, stride in zip(coords, row_major_strides(shape)):
        term = c if stride == 1 else builder.mul(c, i32(stride))
        offset = term if offset is None else builder.add(offset, term)
    return offset if offset is not None else i32(0)


def follows_order(shared_layout) -> bool:
    """Whether a shared buffer is laid out by its encoding's `order` and swizzle. Buffers with
    `vec` 1 (the FMA dot's staging) are plain row-major whatever their order: the FMA dot reads
    them so; tensor-core operand buffers (`vec` > 1, read by ldmatrix) follow their encoding."""
    return getattr(shared_layout, "vec", 1) > 1


def contiguous_dim(shared_layout, rank: int) -> int:
    """The dim whose consecutive elements are adjacent in a shared buffer."""
    return shared_layout.order[0] if follows_order(shared_layout) else rank - 1


def shared_offset(builder, shared_layout, coords, shape):
    """Element offset (i32) of per-dim coordinates in a shared buffer. A buffer that follows its
    rank-2 encoding stores rows along `order[1]` of `shape[order[0]]` elements, and element
    (row, col) sits at column col ^ (((row / perPhase) % maxPhase) * vec): Triton's swizzling,
    which keeps each `vec` group contiguous and spreads the groups of consecutive rows over the
    banks. Other buffers are row-major."""
    if isinstance(shared_layout, ttg.NVMMASharedEncoding):
        from .nvmma import emit_offset
        return emit_offset(builder, shared_layout, coords, shape)
    if not follows_order(shared_layout):
        return flat_offset(builder, coords, shape)
    inner, outer = shared_layout.order[0], shared_layout.order[1]
    row, col = coords[outer], coords[inner]
    if shared_layout.max_phase > 1:
        per_phase = shared_layout.per_phase.bit_length() - 1
        phase = builder.and_(builder.lshr(row, i32(per_phase)) if per_phase else row,
                             i32(shared_layout.max_phase - 1))
        vec_shift = shared_layout.vec.bit_length() - 1
        col = builder.xor(col, builder.shl(phase, i32(vec_shift)))
    return builder.add(builder.mul(row, i32(shape[inner])), col)


def _storable(builder, value):
    if isinstance(value.type, ir.PointerType):
        return builder.ptrtoint(value, I64)
    return to_memory(builder, value)


def _loaded(builder, value, ty):
    if isinstance(ty, ir.PointerType):
        return builder.inttoptr(value, ty)
    return from_memory(builder, value, ty)


def shared_store(ctx, base, offset, value) -> None:
    """Store a register value at element `offset` of a shared array of its memory type."""
    b = ctx.builder
    v = _storable(b, value)
    ptr = b.gep(base, [offset], source_etype=v.type)
    b.store(v, ptr)


def shared_store_vector(ctx, base, offset, values, elem_bytes: int) -> None:
    """Store consecutive register values as one vector at element `offset` (aligned to the
    vector's size)."""
    b = ctx.builder
    parts = [to_memory(b, v) for v in values]
    vec = ir.Constant(ir.VectorType(parts[0].type, len(parts)), None)
    for i, part in enumerate(parts):
        vec = b.insert_element(vec, part, i32(i))
    b.store(vec, b.gep(base, [offset], source_etype=parts[0].type),
            align=len(parts) * elem_bytes)


def shared_load(ctx, base, offset, ty):
    """Load an element of register type `ty` from element `offset` of a shared array."""
    b = ctx.builder
    mem_ty = I64 if isinstance(ty, ir.PointerType) else memory_type(ty)
    ptr = b.gep(base, [offset], source_etype=mem_ty)
    return _loaded(b, b.load(ptr, typ=mem_ty), ty)


def exchange(ctx, values, src_type: TensorType, dst_type: TensorType, dst_coords_to_src=None):
    """Registers of `src_type`'s layout -> registers of `dst_type`'s layout via shared memory.

    `dst_coords_to_src(builder, coords) -> coords` maps a destination element to the source
    element it takes (identity for convert_layout; a permutation for trans; a re-flattening for
    reshape). Runs of registers that every thread holds contiguously along the last dim move as
    one vector access of up to 16 bytes (`vector_runs`)."""
    b = ctx.builder
    ty = values[0].type
    # rows padded where the source layout would otherwise write with bank conflicts
    pad = exchange_row_padding(src_type) if dst_coords_to_src is None else 0
    buffer_shape = tuple(src_type.shape[:-1]) + (src_type.shape[-1] + pad,)
    nbytes = (src_type.numel // src_type.shape[-1] * buffer_shape[-1] *
              max(byte_width(src_type), 8 if isinstance(ty, ir.PointerType) else 1))
    base = ctx.scratch(nbytes)
    src_coords = ctx.indexer.coords(b, src_type.encoding, src_type.shape)
    barrier(b)
    unique = ctx.indexer.unique_registers(src_type.encoding, src_type.shape)
    runs = vector_runs(src_type, ty, unique)
    for reg in unique:
        width = runs.get(reg, 1)
        if width == 0:
            continue
        offset = flat_offset(b, src_coords[reg], buffer_shape)
        if width == 1:
            shared_store(ctx, base, offset, values[reg])
            continue
        shared_store_vector(ctx, base, offset, values[reg:reg + width], byte_width(src_type))
    barrier(b)
    dst_coords = ctx.indexer.coords(b, dst_type.encoding, dst_type.shape)
    if dst_coords_to_src is not None:
        return [shared_load(ctx, base, flat_offset(b, dst_coords_to_src(b, c), src_type.shape), ty)
                for c in dst_coords]
    runs = vector_runs(dst_type, ty, list(range(len(dst_coords))))
    out = []
    for reg, coords in enumerate(dst_coords):
        width = runs.get(reg, 1)
        if width == 0:
            continue
        offset = flat_offset(b, coords, buffer_shape)
        if width == 1:
            out.append(shared_load(ctx, base, offset, ty))
            continue
        mem_ty = memory_type(ty)
        vec = b.load(b.gep(base, [offset], source_etype=mem_ty), typ=ir.VectorType(mem_ty, width),
                     align=width * byte_width(dst_type))
        out += [from_memory(b, b.extract_element(vec, i32(i)), ty) for i in range(width)]
    return out


def vector_runs(t: TensorType, reg_ty, registers: list) -> dict:
    """{first register: run length, covered register: 0} for runs of `registers` (consecutive
    indices) that every thread of `t`'s layout holds at consecutive, run-aligned positions along
    the last dim (row-major adjacent in the exchange buffer): up to 16 bytes, a power of two.
    Pointers and i1 stay scalar."""
    if isinstance(reg_ty, ir.PointerType) or byte_width(t) * 8 != type_bits(reg_ty):
        return {}
    max_width = max(1, 16 // byte_width(t))
    shape = tuple(t.shape)
    try:
        warps = layouts.num_warps_of(t.encoding)
        threads = [layouts.thread_elements(t.encoding, shape, w, lane)
                   for w in range(warps) for lane in range(32)]
    except NotImplementedError:
        return {}
    chosen = set(registers)
    runs: dict = {}
    for reg in registers:
        if reg in runs:
            continue
        width = max_width
        while width > 1:
            group = list(range(reg, reg + width))
            if all(r in chosen for r in group) and all(_contiguous(th, group) for th in threads):
                break
            width //= 2
        if width > 1:
            runs[reg] = width
            runs.update({r: 0 for r in range(reg + 1, reg + width)})
    return runs


def _contiguous(thread_coords: list, group: list) -> bool:
    if group[-1] >= len(thread_coords):
        return False
    first = thread_coords[group[0]]
    if first[-1] % len(group):
        return False
    return all(tuple(thread_coords[r]) == tuple(first[:-1]) + (first[-1] + i,)
               for i, r in enumerate(group))


@lowers(ttg.ConvertLayoutOp)
def lower_convert_layout(ctx, op):
    """`ttg.convert_layout`: free when both layouts distribute elements alike, else through
    shared memory."""
    src, dst = op.operands[0].type, op.results[0].type
    values = ctx.get(op.operands[0])
    if not isinstance(src, TensorType):
        ctx.set(op.results[0], values)
        return
    if same_distribution(src.encoding, dst.encoding, src.shape):
        ctx.set(op.results[0], list(values))
        return
    ctx.set(op.results[0], exchange(ctx, values, src, dst))


# ---- explicit shared memory buffers --------------------------------------------------------------
def write_row_major(ctx, base, value_type, values, shared_layout=None) -> None:
    """Store a tensor's registers (each element once) at a shared pointer: row-major, or as
    `shared_layout` places them when it is swizzled. Into a buffer that follows its encoding,
    runs of registers contiguous along its inner dim go in one vector store of up to 16 bytes
    (swizzling moves whole `vec` groups, so such a run stays contiguous)."""
    b = ctx.builder
    coords = ctx.indexer.coords(b, value_type.encoding, value_type.shape)
    unique = ctx.indexer.unique_registers(value_type.encoding, value_type.shape)
    width = _store_width(value_type, shared_layout)
    unique_set = set(unique)
    starts = {r for r in unique if width > 1 and r % width == 0
              and all(r + i in unique_set for i in range(width))}
    covered = {r + i for r in starts for i in range(width)}
    for reg in unique:
        if reg in covered and reg not in starts:
            continue
        offset = shared_offset(b, shared_layout, coords[reg], value_type.shape)
        if reg not in starts:
            shared_store(ctx, base, offset, values[reg])
            continue
        shared_store_vector(ctx, base, offset, values[reg:reg + width], byte_width(value_type))


def _store_width(value_type, shared_layout) -> int:
    """How many consecutive registers of a blocked tensor may go in one vector store into a
    buffer that follows `shared_layout` (1: element by element)."""
    layout = value_type.encoding
    if not follows_order(shared_layout) or not isinstance(layout, BlockedEncoding):
        return 1
    if isinstance(llvm_type(value_type), ir.PointerType) or len(value_type.shape) != 2:
        return 1
    inner = shared_layout.order[0]
    if layout.order[0] != inner:
        return 1
    width = min(layout.size_per_thread[inner], shared_layout.vec,
                max(1, 16 // byte_width(value_type)), value_type.shape[inner])
    return width if width & (width - 1) == 0 else 1


def fence_for_async_proxy(ctx, shared_layout) -> None:
    """After ordinary stores into a buffer that wgmma reads (an nvmma_shared layout):
    `fence.proxy.async.shared::cta`, which makes them visible to the tensor cores' async proxy."""
    if isinstance(shared_layout, ttg.NVMMASharedEncoding):
        inline_ptx(ctx.builder, ir.VoidType(), "fence.proxy.async.shared::cta;", "", [])


@lowers(ttg.LocalAllocOp)
def lower_local_alloc(ctx, op):
    """`ttg.local_alloc`: a row-major shared buffer (offset planned before lowering), written
    from registers when an initial value is given."""
    base = ctx.local_buffer(op)
    ctx.set(op.results[0], [base])
    if op.operands:
        barrier(ctx.builder)
        write_row_major(ctx, base, op.operands[0].type, ctx.get(op.operands[0]),
                        op.results[0].type.encoding)
        fence_for_async_proxy(ctx, op.results[0].type.encoding)
        barrier(ctx.builder)


@lowers(ttg.LocalStoreOp)
def lower_local_store(ctx, op):
    """`ttg.local_store`: registers into a shared buffer (barriers on both sides)."""
    value, buf = op.operands
    barrier(ctx.builder)
    write_row_major(ctx, ctx.get(buf)[0], value.type, ctx.get(value), buf.type.encoding)
    fence_for_async_proxy(ctx, buf.type.encoding)
    barrier(ctx.builder)


@lowers(ttg.LocalLoadOp)
def lower_local_load(ctx, op):
    """`ttg.local_load`: a shared buffer into registers of the result's layout. When only
    tt.dot ops use the result, no registers are made: the dot reads the buffer itself."""
    buf = op.operands[0]
    t = op.results[0].type
    base = ctx.get(buf)[0]
    users = op.results[0].users()
    if users and all(isinstance(u, tt.DotOp) for u in users):
        ctx.shared_sources[id(op.results[0])] = base
        ctx.set(op.results[0], [])
        return
    if layouts.is_mma_family(t.encoding):
        from .lower_mma import load_mma_operand
        ctx.set(op.results[0], load_mma_operand(ctx, base, buf.type.encoding, t))
        return
    ty = llvm_type(t)
    b = ctx.builder
    ctx.set(op.results[0], [shared_load(ctx, base, shared_offset(b, buf.type.encoding, c, t.shape),
                                       ty)
                            for c in ctx.indexer.coords(b, t.encoding, t.shape)])


@lowers(ttg.LocalDeallocOp)
def lower_local_dealloc(ctx, op):
    """`ttg.local_dealloc`: nothing to emit (offsets are static)."""


@lowers(ttg.BarrierOp)
def lower_barrier(ctx, op):
    """`gpu.barrier`: bar.sync 0."""
    barrier(ctx.builder)

