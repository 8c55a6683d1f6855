"""Ops that index shared memory by data: `tt.gather` and `tt.histogram`.

gather: when the gathered dim lies within a warp for both layouts (see `warp_local_plan`),
every result register is fetched from the source's registers with `shfl.sync.idx`, as Triton
does; otherwise the source is written row-major (each element once, from whatever layout it
is in), and every result register reads the source element at its own coordinates with the
gathered dim replaced by its index register. histogram: the bins are zeroed in shared memory, each
element (counted once however many threads hold it) adds 1 to its bin with a shared atomic,
and every result register reads its bin."""
from __future__ import annotations

from compiler.dialects import tt

from llvmlite import ir

from compiler.analysis.gather import WarpGatherPlan, warp_local_plan

from .llvm_helpers import I32, barrier, byte_width, i32, llvm_type, shuffle_idx
from .lower_convert import flat_offset, shared_load, write_row_major, xor_const
from .lowering import LoweringError
from .registry import lowers


def _gather_by_shuffles(ctx, op, plan: WarpGatherPlan) -> list:
    """Result registers of a warp-local gather: per result register, the index's bits pick the
    source lane and register; one shuffle per candidate register, then a select."""
    b = ctx.builder
    values = ctx.get(op.src)
    term = ctx.indexer.thread_term(plan.thread_lanes)
    out = []
    for r, index in enumerate(ctx.get(op.indices)):
        index = b.trunc(index, I32) if index.type.width > 32 else \
            (b.sext(index, I32) if index.type.width < 32 else index)
        lane = xor_const(b, term, plan.lane_const[r])
        reg = i32(0)
        for k, (reg_bit, lane_bit) in enumerate(zip(plan.axis_regs, plan.axis_lanes)):
            bit = b.and_(b.lshr(index, i32(k)), i32(1))
            if lane_bit:
                lane = b.xor(lane, b.mul(bit, i32(lane_bit)))
            if reg_bit:
                reg = b.xor(reg, b.mul(bit, i32(reg_bit)))
        value = None
        for extra in plan.reg_span:
            fetched = shuffle_idx(b, values[plan.reg_const[r] ^ extra], lane)
            value = fetched if value is None else \
                b.select(b.icmp_unsigned("==", reg, i32(extra)), fetched, value)
        out.append(value)
    return out


@lowers(tt.GatherOp)
def lower_gather(ctx, op):
    """`tt.gather`: warp shuffles when the gathered dim is warp-local; else write the source,
    barrier, read at (coords with coords[axis] = index)."""
    src_t, idx_t, out_t = op.operands[0].type, op.operands[1].type, op.results[0].type
    if idx_t.encoding != out_t.encoding:
        raise LoweringError(f"tt.gather: the indices' layout {idx_t.encoding} differs from the "
                            f"result's {out_t.encoding}")
    plan = warp_local_plan(src_t, out_t, op.axis)
    if plan is not None:
        ctx.set(op.results[0], _gather_by_shuffles(ctx, op, plan))
        return
    b = ctx.builder
    base = ctx.scratch(src_t.numel * byte_width(src_t))
    barrier(b)                                  # the scratch area may still be read by others
    write_row_major(ctx, base, src_t, ctx.get(op.src))
    barrier(b)
    coords = ctx.indexer.coords(b, out_t.encoding, out_t.shape)
    ty = llvm_type(out_t.scalar)
    out = []
    for reg, index in enumerate(ctx.get(op.indices)):
        width = index.type.width
        if width > 32:
            index = b.trunc(index, coords[reg][0].type)
        elif width < 32:
            index = b.sext(index, coords[reg][0].type)
        at = list(coords[reg])
        at[op.axis] = index
        out.append(shared_load(ctx, base, flat_offset(b, at, src_t.shape), ty))
    ctx.set(op.results[0], out)


@lowers(tt.HistogramOp)
def lower_histogram(ctx, op):
    """`tt.histogram`: zero the bins, barrier, atomic adds of the unique in-range unmasked
    elements, barrier, read the bins at the result's coordinates."""
    src_t, out_t = op.operands[0].type, op.results[0].type
    bins = out_t.shape[0]
    b = ctx.builder
    base = ctx.scratch(bins * 4)
    threads = ctx.num_warps * 32
    zero = ir.Constant(I32, 0)
    barrier(b)                                  # the scratch area may still be read by others
    for start in range(0, bins, threads):
        slot = b.add(ctx.indexer.tid, i32(start))
        with b.if_then(b.icmp_unsigned("<", slot, i32(bins))):
            b.store(zero, b.gep(base, [slot], source_etype=I32))
    barrier(b)
    values = ctx.get(op.src)
    masks = ctx.get(op.mask) if op.mask is not None else None
    owner = ctx.indexer.unique_owner(src_t.encoding, src_t.shape)
    for reg in ctx.indexer.unique_registers(src_t.encoding, src_t.shape):
        v = values[reg]
        take = b.icmp_unsigned("<", v, ir.Constant(v.type, bins))     # negatives are huge
        if owner is not None:
            take = b.and_(take, owner)
        if masks is not None:
            take = b.and_(take, masks[reg])
        with b.if_then(take):
            slot = b.trunc(v, I32) if v.type.width > 32 else \
                (b.zext(v, I32) if v.type.width < 32 else v)
            b.atomic_rmw("add", b.gep(base, [slot], source_etype=I32), ir.Constant(I32, 1),
                         "monotonic")
    barrier(b)
    coords = ctx.indexer.coords(b, out_t.encoding, out_t.shape)
    ctx.set(op.results[0], [shared_load(ctx, base, c[0], llvm_type(out_t.scalar)) for c in coords])
