"""TMA copies and mbarriers (the `tma-lowering` pass's ops) as inline PTX.

One thread (thread 0 of the CTA) initializes and invalidates mbarriers, announces the bytes a
copy brings (`mbarrier.arrive.expect_tx`) and issues the copies; every thread waits on the
barrier's phase with `mbarrier.try_wait.parity` in a loop. A descriptor block is copied as
`TmaBox.copies` messages of one box each (`compiler.codegen.tma`), message k at column
k * box width of the block and k * box bytes into the buffer. The tensor map is the kernel's
`.param .align 64 .b8 [128]` parameter, addressed generically (`cvta.param`, which LLVM emits
for a grid-constant byval parameter).
"""
from __future__ import annotations

from llvmlite import ir

from compiler.dialects import ttng

from .llvm_helpers import i32, inline_ptx, special_register
from .registry import lowers
from .tma import tma_box

VOID = ir.VoidType()


def _shared_address(ctx, value):
    """The 32-bit shared-window address of a memdesc's base."""
    return ctx.builder.ptrtoint(ctx.get(value)[0], ir.IntType(32))


def _leader(ctx, pred=None):
    """i1: this thread is thread 0 of the CTA (and `pred` holds)."""
    b = ctx.builder
    first = b.icmp_unsigned("==", special_register(b, "tid.x"), i32(0))
    return first if pred is None else b.and_(first, pred)


def _predicated(ctx, asm: str, constraints: str, args: list, pred) -> None:
    """`asm` issued only where `pred` (an i1) holds; `$0` in `asm` is the predicate."""
    wrapped = "{ .reg .pred %p; setp.ne.b32 %p, $0, 0; @%p " + asm + " }"
    flag = ctx.builder.zext(pred, ir.IntType(32))
    inline_ptx(ctx.builder, VOID, wrapped, "r," + constraints if constraints else "r",
               [flag] + args)


@lowers(ttng.InitBarrierOp)
def lower_init_barrier(ctx, op):
    """`mbarrier.init.shared::cta.b64 [bar], count` by thread 0."""
    count = op.attributes["count"].value
    _predicated(ctx, f"mbarrier.init.shared::cta.b64 [$1], {count};", "r",
                [_shared_address(ctx, op.operands[0])], _leader(ctx))


@lowers(ttng.InvalBarrierOp)
def lower_inval_barrier(ctx, op):
    """`mbarrier.inval.shared::cta.b64 [bar]` by thread 0."""
    _predicated(ctx, "mbarrier.inval.shared::cta.b64 [$1];", "r",
                [_shared_address(ctx, op.operands[0])], _leader(ctx))


@lowers(ttng.BarrierExpectOp)
def lower_barrier_expect(ctx, op):
    """`mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], size` by thread 0 (when pred)."""
    size = op.attributes["size"].value
    bar, pred = op.operands
    _predicated(ctx, f"mbarrier.arrive.expect_tx.shared::cta.b64 _, [$1], {size};", "r",
                [_shared_address(ctx, bar)], _leader(ctx, ctx.get(pred)[0]))


@lowers(ttng.WaitBarrierOp)
def lower_wait_barrier(ctx, op):
    """Every thread spins on `mbarrier.try_wait.parity` until the phase completed."""
    bar, phase = op.operands
    asm = ("{ .reg .pred %done; waitLoop${:uid}: "
           "mbarrier.try_wait.parity.shared::cta.b64 %done, [$0], $1; "
           "@!%done bra.uni waitLoop${:uid}; }")
    inline_ptx(ctx.builder, VOID, asm, "r,r", [_shared_address(ctx, bar), ctx.get(phase)[0]])


def _messages(ctx, buf_type, coords):
    """(shared byte offset, innermost-first coordinate values) of each TMA message of a block."""
    box = tma_box(buf_type.element.width, buf_type.shape)
    b = ctx.builder
    values = [ctx.get(c)[0] for c in coords]
    out = []
    for k in range(box.copies):
        inner = values[-1] if k == 0 else b.add(values[-1], i32(k * box.box[-1]))
        out.append((k * box.box_bytes, [inner] + list(reversed(values[:-1]))))
    return out


def _coords_text(first: int, rank: int) -> str:
    return "{" + ", ".join(f"${first + i}" for i in range(rank)) + "}"


@lowers(ttng.AsyncTMACopyGlobalToLocalOp)
def lower_tma_load(ctx, op):
    """`cp.async.bulk.tensor.Nd.shared::cluster.global.mbarrier::complete_tx::bytes` per
    message, by thread 0 (when pred)."""
    desc, buf, bar, pred = op.operands[:4]
    coords = op.operands[4:]
    rank = len(coords)
    b = ctx.builder
    base = _shared_address(ctx, buf)
    bar_address = _shared_address(ctx, bar)
    leader = _leader(ctx, ctx.get(pred)[0])
    asm = (f"cp.async.bulk.tensor.{rank}d.shared::cluster.global.mbarrier::complete_tx::bytes "
           f"[$1], [$2, {_coords_text(4, rank)}], [$3];")
    for offset, values in _messages(ctx, buf.type, coords):
        dst = base if offset == 0 else b.add(base, i32(offset))
        _predicated(ctx, asm, "r,l,r" + ",r" * rank, [dst, ctx.get(desc)[0], bar_address]
                    + values, leader)


@lowers(ttng.AsyncTMACopyLocalToGlobalOp)
def lower_tma_store(ctx, op):
    """`cp.async.bulk.tensor.Nd.global.shared::cta.bulk_group` per message and one
    `cp.async.bulk.commit_group`, by thread 0."""
    desc, buf = op.operands[:2]
    coords = op.operands[2:]
    rank = len(coords)
    b = ctx.builder
    base = _shared_address(ctx, buf)
    leader = _leader(ctx)
    asm = (f"cp.async.bulk.tensor.{rank}d.global.shared::cta.bulk_group "
           f"[$1, {_coords_text(3, rank)}], [$2];")
    for offset, values in _messages(ctx, buf.type, coords):
        src = base if offset == 0 else b.add(base, i32(offset))
        _predicated(ctx, asm, "l,r" + ",r" * rank, [ctx.get(desc)[0], src] + values, leader)
    _predicated(ctx, "cp.async.bulk.commit_group;", "", [], leader)


@lowers(ttng.TMAStoreWaitOp)
def lower_tma_store_wait(ctx, op):
    """`cp.async.bulk.wait_group.read N` by the thread that issued the stores."""
    pendings = op.attributes["pendings"].value
    _predicated(ctx, f"cp.async.bulk.wait_group.read {pendings};", "", [], _leader(ctx))


@lowers(ttng.FenceAsyncSharedOp)
def lower_fence_async_shared(ctx, op):
    """`fence.proxy.async.shared::cta`."""
    inline_ptx(ctx.builder, VOID, "fence.proxy.async.shared::cta;", "", [])
