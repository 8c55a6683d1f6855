"""Moving a tensor between layouts: `ttg.convert_layout` (and reshape/trans, which are the same
move to the result's layout seen over the operand's coordinates), plus the explicit
shared-memory ops `ttg.local_alloc/load/store`.

A conversion is planned from the two linear layouts (compiler.analysis.conversion): nothing, a
renumbering of registers, warp shuffles, or an exchange through a shared buffer whose swizzle
keeps the stores and the loads free of bank conflicts (a barrier before the stores, so earlier
users of the scratch area are done, and one before the loads). The explicit buffers of
`local_alloc` / `local_load` / `local_store` are addressed by their shared encoding.
"""
from __future__ import annotations

from llvmlite import ir

from compiler.dialects import tt, ttg
from compiler.analysis import layouts
from compiler.analysis.bank_conflicts import offsets_layout, vector_bits
from compiler.analysis.conversion import element_facts, tensor_plan, unique_registers
from compiler.analysis.layout_to_linear import (LayoutConversionError, identity_nd, out_dim_names,
                                                to_linear_layout)
from compiler.ir.types import TensorType

from .llvm_helpers import (I64, barrier, from_memory, i32, inline_ptx, llvm_byte_width, llvm_type,
                           memory_type, shuffle_idx, to_memory)
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


def shared_element_address(b, base, offset, elem_ty: ir.Type):
    """The address of element `offset` (i32) of the shared array at `base` of `elem_ty`, as an
    i8 GEP over the offset scaled to bytes by an instruction of its own: a loop-invariant offset
    is then scaled once, outside the loop, where a typed GEP scales it at every use inside."""
    shift = llvm_byte_width(elem_ty).bit_length() - 1      # sizes are 1, 2, 4 or 8 bytes
    scaled = b.shl(offset, i32(shift)) if shift else offset
    return b.gep(base, [scaled], source_etype=ir.IntType(8))


def shared_store(ctx, base, offset, value) -> None:
    """Store a register value at element `offset` of a shared array of its memory type."""
    b = ctx.builder
    v = _storable(b, value)
    b.store(v, shared_element_address(b, base, offset, v.type))


def shared_store_vector(ctx, base, offset, values, elem_bytes: int) -> None:
    """Store consecutive register values as one vector at element `offset` (aligned to the
    vector's size)."""
    b = ctx.builder
    parts = [to_memory(b, v) for v in values]
    vec = ir.Constant(ir.VectorType(parts[0].type, len(parts)), None)
    for i, part in enumerate(parts):
        vec = b.insert_element(vec, part, i32(i))
    b.store(vec, shared_element_address(b, base, offset, parts[0].type),
            align=len(parts) * elem_bytes)


def shared_load(ctx, base, offset, ty):
    """Load an element of register type `ty` from element `offset` of a shared array."""
    b = ctx.builder
    mem_ty = I64 if isinstance(ty, ir.PointerType) else memory_type(ty)
    return _loaded(b, b.load(shared_element_address(b, base, offset, mem_ty), typ=mem_ty), ty)


def move_values(ctx, values, src_type: TensorType, dst_type: TensorType, dst_layout=None):
    """Registers of `src_type`'s layout -> registers of `dst_type`'s layout, by the cheapest
    plan the two linear layouts allow (`compiler.analysis.conversion`); the plan's one-line
    description goes into the LLVM IR as a comment. `dst_layout` is the destination's linear
    layout over the source's coordinates when the shapes differ (trans, reshape)."""
    try:
        plan = tensor_plan(src_type, dst_type, dst_layout)
        for t in (src_type, dst_type):
            _check_threads(ctx, t)
    except (LayoutConversionError, ValueError) as err:
        raise LayoutConversionError(f"cannot move {src_type} from {src_type.encoding} to "
                                    f"{dst_type.encoding}: {err}") from None
    b = ctx.builder
    b.comment(plan.describe())
    if plan.strategy == "noop":
        return list(values)
    if plan.strategy == "registers":
        return [values[r] for r in plan.register_map]
    if plan.strategy == "shuffle":
        return _shuffled(ctx, values, plan)
    src = to_linear_layout(src_type.encoding, src_type.shape)
    dst = dst_layout if dst_layout is not None else to_linear_layout(dst_type.encoding,
                                                                    dst_type.shape)
    return _through_shared(ctx, values, plan, src, dst)


def _check_threads(ctx, tensor_type) -> None:
    """A layout the kernel's threads can hold: 32 lanes and the kernel's number of warps."""
    layout = to_linear_layout(tensor_type.encoding, tensor_type.shape)
    lanes, warps = layout.in_dim_size("lane"), layout.in_dim_size("warp")
    if lanes != 32:
        raise LayoutConversionError(f"{tensor_type.encoding} has {lanes} lanes per warp, not 32")
    if ctx.indexer.num_warps is not None and warps != ctx.indexer.num_warps:
        raise LayoutConversionError(f"{tensor_type.encoding} spreads over {warps} warps but the "
                                    f"kernel has {ctx.indexer.num_warps}")


def _shuffled(ctx, values, plan) -> list:
    """One `shfl.sync.idx` per distinct (source register, lane part) round."""
    b = ctx.builder
    term = ctx.indexer.thread_term(plan.lane_map)
    moved: dict = {}
    out = []
    for reg, const in plan.rounds:
        if (reg, const) not in moved:
            lane = xor_const(b, term, const)
            moved[reg, const] = shuffle_idx(b, values[reg], lane)
        out.append(moved[reg, const])
    return out


def xor_const(b, term, const: int):
    """A thread term (value, mask of its possible bits) XOR a constant: the constant's bits
    inside the mask (a swizzle's) are XORed, and the others, which cannot carry into the
    term, added last. Registers whose constants differ only outside the mask then share one
    XORed value, and the add folds into the memory instruction's immediate."""
    if term is None:
        return i32(const)
    value, mask = term
    if const & mask:
        value = b.xor(value, i32(const & mask))
    return b.add(value, i32(const & ~mask)) if const & ~mask else value


def _vector_groups(registers: int, vec_bits: tuple) -> list:
    """Register index lists, one per vector access: each register whose vector bits are 0,
    then the registers of its vector in element order."""
    mask = sum(1 << bit for bit in vec_bits)
    groups = []
    for r in range(registers):
        if r & mask:
            continue
        group = []
        for i in range(1 << len(vec_bits)):
            group.append(r | sum(((i >> k) & 1) << bit for k, bit in enumerate(vec_bits)))
        groups.append(group)
    return groups


def _register_offsets(ctx, offsets, registers: list, strip: int = 0) -> dict:
    """{register: i32 element offset} of a (register, lane, warp) -> offset layout; the register
    bits in `strip` (a conversion's round bits) are left out of the offset."""
    term = ctx.indexer.thread_term(offsets)
    return {r: xor_const(ctx.builder, term, offsets.apply(register=r & ~strip)["offset"])
            for r in registers}


def _through_shared(ctx, values, plan, src, dst) -> list:
    """Stores of the source's distinct registers into the swizzled scratch buffer, a barrier,
    loads of the destination's registers; vectors where the plan found shared register bases.
    A plan in rounds repeats this once per round, each on the registers holding that round's
    part of the tensor, with a barrier before each round's stores (the last round's loads are
    done)."""
    b = ctx.builder
    swizzle = plan.swizzle
    base = ctx.scratch(plan.scratch_bytes)
    ty = values[0].type
    src_offsets, dst_offsets = swizzle.offsets_of(src), swizzle.offsets_of(dst)
    dst_registers = dst.in_dim_size("register")
    stmatrix_mode = _stmatrix_mode(ctx, plan, src_offsets, ty)
    from .matrix_memory import stmatrix_offsets
    got: dict = {}
    for index in range(swizzle.rounds):
        barrier(b)
        if stmatrix_mode is not None:
            stmatrix_offsets(ctx, base, src_offsets, stmatrix_mode, ty, values)
        else:
            _store_registers(ctx, base, src, src_offsets, swizzle.src_vec_bits,
                             plan.elem_bytes, values, swizzle.round_registers(
                                 len(values), swizzle.src_round_bits, index),
                             swizzle.src_round_bits)
        barrier(b)
        got.update(_load_register_groups(
            ctx, base, dst, dst_offsets, swizzle.dst_vec_bits, plan.elem_bytes, ty,
            swizzle.round_registers(dst_registers, swizzle.dst_round_bits, index),
            swizzle.dst_round_bits))
    return [got[first] for first in _register_map_within(dst)]


def _stmatrix_mode(ctx, plan, src_offsets, ty: ir.Type):
    """Whether a conversion's stores go by stmatrix, and in which form (False plain, True
    `.trans`; None: the plan's vector stores). Where the buffer has the source's register pair
    and lanes 0-1 as a 16-byte row (an mma accumulator into a layout that reads 8 elements
    wide, the epilogue's conversion), one stmatrix.x4 writes what took eight 4-byte stores
    (Triton gets the same 16 bytes a lane with st.shared.v4 and an ldmatrix read). sm_90+,
    16-bit values, one round (every register), vector stores of at most one register pair."""
    if ctx.arch < 90 or plan.elem_bytes != 2 or plan.swizzle.rounds != 1 or \
            isinstance(ty, ir.PointerType) or len(plan.swizzle.src_vec_bits) > 1:
        return None
    from .matrix_memory import offsets_matrix_mode
    return offsets_matrix_mode(src_offsets)


def _bit_mask(bits) -> int:
    return sum(1 << bit for bit in bits)


def _store_registers(ctx, base, layout, offsets, vec_bits, elem_bytes, values,
                     registers=None, round_bits=()) -> None:
    """Each distinct register of `layout` (of `registers`, all by default) stored into the
    shared buffer at `base` (element offsets by `offsets`, `round_bits` left out), in vectors
    over `vec_bits`."""
    keep = set(unique_registers(layout))
    if registers is not None:
        keep &= set(registers)
    groups = [g for g in _vector_groups(len(values), vec_bits) if g[0] in keep]
    at = _register_offsets(ctx, offsets, [g[0] for g in groups], _bit_mask(round_bits))
    for group in groups:
        if len(group) == 1:
            shared_store(ctx, base, at[group[0]], values[group[0]])
        else:
            shared_store_vector(ctx, base, at[group[0]], [values[r] for r in group], elem_bytes)


def _load_registers(ctx, base, layout, offsets, vec_bits, elem_bytes, ty) -> list:
    """Every register of `layout` loaded from the shared buffer at `base` (element offsets by
    `offsets`): each distinct element once, in vectors over `vec_bits`."""
    got = _load_register_groups(ctx, base, layout, offsets, vec_bits, elem_bytes, ty)
    return [got[first] for first in _register_map_within(layout)]


def _load_register_groups(ctx, base, layout, offsets, vec_bits, elem_bytes, ty,
                          registers=None, round_bits=()) -> dict:
    """{register: value} for the distinct registers of `layout` (of `registers`, all by
    default) loaded from the shared buffer at `base`, in vectors over `vec_bits`; offsets as
    `_store_registers` computes them."""
    b = ctx.builder
    keep = set(unique_registers(layout))
    if registers is not None:
        keep &= set(registers)
    loads = [g for g in _vector_groups(layout.in_dim_size("register"), vec_bits) if g[0] in keep]
    at = _register_offsets(ctx, offsets, [g[0] for g in loads], _bit_mask(round_bits))
    got: dict = {}
    for group in loads:
        if len(group) == 1:
            got[group[0]] = shared_load(ctx, base, at[group[0]], ty)
            continue
        mem_ty = memory_type(ty)
        vec = b.load(shared_element_address(b, base, at[group[0]], mem_ty),
                     typ=ir.VectorType(mem_ty, len(group)), align=len(group) * elem_bytes)
        for i, r in enumerate(group):
            got[r] = from_memory(b, b.extract_element(vec, i32(i)), ty)
    return got


def _register_map_within(layout) -> list:
    """For each register, the lowest-numbered register of the thread holding its element."""
    first: dict = {}
    out = []
    for r in range(layout.in_dim_size("register")):
        element = layout.apply_tuple(register=r)
        out.append(first.setdefault(element, r))
    return out


@lowers(ttg.ConvertLayoutOp)
def lower_convert_layout(ctx, op):
    """`ttg.convert_layout`: no-op, register renumbering, warp shuffles or a swizzled exchange
    through shared memory, whichever the two linear layouts allow most cheaply."""
    src, dst = op.operands[0].type, op.results[0].type
    values = ctx.get(op.operands[0])
    if not isinstance(src, TensorType):
        ctx.set(op.results[0], values)
        return
    ctx.set(op.results[0], move_values(ctx, values, src, dst))


# ---- explicit shared memory buffers --------------------------------------------------------------
def buffer_layout(shared_layout, shape) -> "LinearLayout":
    """Where each element of an explicit shared buffer sits, as a linear layout offset ->
    coordinates: the shared encoding's own map for buffers that follow it (nvmma_shared, whose
    closed form is nvmma.emit_offset, and swizzled_shared with vec > 1: `follows_order`),
    row-major for the others (the FMA dot's staging, as `shared_offset` addresses them)."""
    shape = tuple(shape)
    if isinstance(shared_layout, ttg.NVMMASharedEncoding) or (
            shared_layout is not None and follows_order(shared_layout)):
        return to_linear_layout(shared_layout, shape)
    rank = len(shape)
    return identity_nd("offset", shape, list(reversed(range(rank)))).transpose_outs(
        out_dim_names(rank))


def _buffer_offsets(value_type, shared_layout):
    """(register, lane, warp) -> buffer offset for a tensor of `value_type`, and the register
    bits of one vector access (none for pointers and i1)."""
    regs = to_linear_layout(value_type.encoding, value_type.shape)
    offsets = offsets_layout(regs, buffer_layout(shared_layout, value_type.shape))
    elem_bytes, vectorizable = element_facts(value_type)
    return regs, offsets, (vector_bits(offsets, elem_bytes) if vectorizable else ()), elem_bytes


def write_row_major(ctx, base, value_type, values, shared_layout=None) -> None:
    """Store a tensor's registers (each element once) into a shared buffer laid out by
    `buffer_layout` (row-major without a layout), in vectors of up to 16 bytes where the
    register bases run along the buffer's consecutive offsets."""
    regs, offsets, vec, elem_bytes = _buffer_offsets(value_type, shared_layout)
    _store_registers(ctx, base, regs, offsets, vec, elem_bytes, values)


def write_buffer(ctx, base, value_type, values, shared_layout) -> None:
    """A tensor's registers into an explicit shared buffer of `shared_layout`: by stmatrix
    where the target and the offsets map allow it (tensor-core layouts), else as
    `write_row_major` does."""
    from .matrix_memory import stmatrix_fits, stmatrix_registers, tensor_core_layout
    if tensor_core_layout(value_type.encoding) and stmatrix_fits(ctx, shared_layout, value_type):
        stmatrix_registers(ctx, base, shared_layout, value_type, values)
        return
    write_row_major(ctx, base, value_type, values, shared_layout)


def read_buffer(ctx, base, value_type, shared_layout) -> list:
    """The registers of a tensor of `value_type` loaded from a shared buffer laid out by
    `buffer_layout`, in vectors where the maps allow."""
    regs, offsets, vec, elem_bytes = _buffer_offsets(value_type, shared_layout)
    return _load_registers(ctx, base, regs, offsets, vec, elem_bytes, llvm_type(value_type))


def read_buffer_registers(ctx, base, value_type, shared_layout, registers: list) -> dict:
    """{register: value} for `registers` of a tensor of `value_type` in a shared buffer laid out
    by `buffer_layout` (what a dot reads of its operand per K step), in vectors where the maps
    allow; a register repeating an element of an earlier one of the thread gets that value."""
    regs, offsets, vec, elem_bytes = _buffer_offsets(value_type, shared_layout)
    first = _register_map_within(regs)
    got = _load_register_groups(ctx, base, regs, offsets, vec, elem_bytes,
                                llvm_type(value_type), sorted({first[r] for r in registers}))
    return {r: got[first[r]] for r in registers}


def fence_for_async_proxy(ctx, shared_layout) -> None:
    """After ordinary stores into a buffer that wgmma reads (an nvmma_shared layout):
    `fence.proxy.async.shared::cta`, which makes them visible to the tensor cores' async proxy."""
    if isinstance(shared_layout, ttg.NVMMASharedEncoding):
        inline_ptx(ctx.builder, ir.VoidType(), "fence.proxy.async.shared::cta;", "", [])


@lowers(ttg.LocalAllocOp)
def lower_local_alloc(ctx, op):
    """`ttg.local_alloc`: a row-major shared buffer (offset planned before lowering), written
    from registers when an initial value is given. An empty one (the pipeliner's multi-buffer)
    starts with a CTA barrier: the allocator may have given its bytes to a buffer whose last
    readers (say a layout conversion's scratch, read by other warps) are still running, and the
    async copies that fill it next have no barrier of their own (tutorial 06's dq, whose `m`
    scratch the first prefetched vT tile overwrote)."""
    base = ctx.local_buffer(op)
    ctx.set(op.results[0], [base])
    barrier(ctx.builder)
    if op.operands:
        write_buffer(ctx, base, op.operands[0].type, ctx.get(op.operands[0]),
                     op.results[0].type.encoding)
        fence_for_async_proxy(ctx, op.results[0].type.encoding)
        barrier(ctx.builder)


@lowers(ttg.LocalStoreOp)
def lower_local_store(ctx, op):
    """`ttg.local_store`: registers into a shared buffer (barriers on both sides)."""
    value, buf = op.operands
    barrier(ctx.builder)
    write_buffer(ctx, ctx.get(buf)[0], value.type, ctx.get(value), buf.type.encoding)
    fence_for_async_proxy(ctx, buf.type.encoding)
    barrier(ctx.builder)


@lowers(ttg.LocalLoadOp)
def lower_local_load(ctx, op):
    """`ttg.local_load`: a shared buffer into registers of the result's layout: by ldmatrix
    where the offsets map allows it (tensor-core layouts), else vector loads. When only tt.dot
    ops use a result that ldmatrix can read (or an FMA dot's operand, or an mma.sync tf32/int8
    operand, which the dot reads per K step by vector loads), no registers are made: the dot
    reads the buffer itself (region records naming the result do not count: they tie
    registers, and there are none)."""
    from .matrix_memory import load_matrices, matrix_mode, tensor_core_layout
    buf = op.operands[0]
    t = op.results[0].type
    base = ctx.get(buf)[0]
    users = [u for u in op.results[0].users() if not isinstance(u, tt.ProfileRecordOp)]
    only_dots = bool(users) and all(isinstance(u, tt.DotOp) for u in users)
    if tensor_core_layout(t.encoding) and matrix_mode(buf.type.encoding, t) is not None:
        if only_dots and layouts.is_mma_family(t.encoding):
            ctx.shared_sources[op.results[0]] = base
            ctx.set(op.results[0], [])
        else:
            ctx.set(op.results[0], load_matrices(ctx, base, buf.type.encoding, t))
        return
    narrow_mma = layouts.is_mma_family(t.encoding) and t.element.width != 16
    if only_dots and (narrow_mma or not layouts.is_mma_family(t.encoding) and
                      _row_major(buf.type.encoding)):
        ctx.shared_sources[op.results[0]] = base
        ctx.set(op.results[0], [])
        return
    ctx.set(op.results[0], read_buffer(ctx, base, t, buf.type.encoding))


def _row_major(encoding) -> bool:
    """Whether a shared layout stores its tensor row-major without a swizzle, as the FMA dot
    reads a buffer (a `ttg.memdesc_trans` view of a buffer is not)."""
    if not isinstance(encoding, ttg.SwizzledSharedEncoding):
        return False
    return not follows_order(encoding) or encoding.max_phase == 1 and \
        tuple(encoding.order) == tuple(reversed(range(len(encoding.order))))


@lowers(ttg.LocalDeallocOp)
def lower_local_dealloc(ctx, op):
    """`ttg.local_dealloc`: nothing to emit (offsets are static)."""


@lowers(ttg.BarrierOp)
def lower_barrier(ctx, op):
    """`gpu.barrier`: bar.sync 0."""
    barrier(ctx.builder)

