"""TMA copies and mbarriers (the `tma-lowering` pass's ops) as inline PTX.

One thread (thread 0 of the CTA) initializes and invalidates mbarriers, announces the bytes a
copy brings (`mbarrier.arrive.expect_tx`) and issues the stores; a load's messages are issued by
lane 0 of one warp each (message k by warp k mod num_warps); every thread waits on the
barrier's phase with `mbarrier.try_wait.parity` in a loop. A descriptor block is copied as
`TmaBox.copies` messages of one box each (`compiler.codegen.tma`), message k at column
k * box width of the block and k * box bytes into the buffer. The tensor map is the kernel's
`.param .align 64 .b8 [128]` parameter, addressed generically (`cvta.param`, which LLVM emits
for a grid-constant byval parameter).
"""
from __future__ import annotations

from llvmlite import ir

from compiler.dialects import ttg, ttng

from .lowering_errors import LoweringError
from .llvm_helpers import I64, barrier, i32, inline_ptx, linear_program_id, special_register
from .registry import lowers
from .tma import tma_box

VOID = ir.VoidType()
#: bytes of a tensor map (CUtensorMap)
TENSOR_MAP_BYTES = 128


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
    message (when pred), message k by lane 0 of warp k mod num_warps (as Triton spreads them;
    the mbarrier counts the bytes of all, whichever thread issued them)."""
    desc, buf, bar, pred = op.operands[:4]
    coords = op.operands[4:]
    rank = len(coords)
    b = ctx.builder
    base = _shared_address(ctx, buf)
    bar_address = _shared_address(ctx, bar)
    asm = (f"cp.async.bulk.tensor.{rank}d.shared::cluster.global.mbarrier::complete_tx::bytes "
           f"[$1], [$2, {_coords_text(4, rank)}], [$3];")
    tid = special_register(b, "tid.x")
    for k, (offset, values) in enumerate(_messages(ctx, buf.type, coords)):
        # message k goes from lane 0 of warp k (mod the warps), so the messages of a block
        # that needs several are issued side by side rather than one after another
        issuer = b.icmp_unsigned("==", tid, i32(32 * (k % ctx.num_warps)))
        dst = base if offset == 0 else b.add(base, i32(offset))
        _predicated(ctx, asm, "r,l,r" + ",r" * rank, [dst, _generic(ctx, ctx.get(desc)[0]),
                                                      bar_address]
                    + values, b.and_(issuer, ctx.get(pred)[0]))


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
        _predicated(ctx, asm, "l,r" + ",r" * rank, [_generic(ctx, ctx.get(desc)[0]), src]
                    + values, leader)
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


# ---- device-side tensor maps ------------------------------------------------------------------
def _generic(ctx, pointer):
    """A global pointer as a generic address (cvta.global), as the TMA and fence instructions
    take a tensor map's address."""
    if getattr(pointer.type, "addrspace", 0) == 1:
        return ctx.builder.addrspacecast(pointer, ir.PointerType())
    return pointer


@lowers(ttg.GlobalScratchAllocOp)
def lower_global_scratch_alloc(ctx, op):
    """The program's bytes of the kernel's global scratch buffer (its last, hidden parameter):
    base + linear program id * slice size + the alloc's offset."""
    offset = op.attributes.get("ttg.global_scratch_memory_offset")
    if offset is None or ctx.global_scratch is None:
        raise LoweringError(f"{op.name} has no place in global scratch memory: run the "
                            f"global-scratch-allocation pass after tma-lowering")
    b = ctx.builder
    program = linear_program_id(b)
    start = b.add(b.mul(program, ir.Constant(I64, ctx.global_scratch_size)),
                  ir.Constant(I64, offset.value))
    ctx.set(op.results[0], [b.gep(ctx.global_scratch, [start], source_etype=ir.IntType(8))])


def _in_first_warp(ctx):
    """i1: this thread is in warp 0."""
    return ctx.builder.icmp_unsigned("<", special_register(ctx.builder, "tid.x"), i32(32))


@lowers(ttng.TensormapCreateOp)
def lower_tensormap_create(ctx, op):
    """Warp 0 zeroes the op's 128-byte shared scratch (one word a lane), thread 0 fills in
    every field with `tensormap.replace.tile.*.shared::cta` (a zeroed map is a valid start on
    sm_90a), and warp 0 copies it to global memory with `tensormap.cp_fenceproxy ... release`.
    Strides are in bytes: the H200 run of tests/gpu/test_device_tma_gpu.py gave right results
    at PTX 8.4, 8.6 and 8.7 with ptxas 13.0 (Triton divides them by 16 for PTX 8.5 and
    earlier, for the older ptxas such versions come with; that divided form read wrong)."""
    b = ctx.builder
    box = op.attributes["box_dim"].values
    rank = len(box)
    dims = [ctx.get(v)[0] for v in op.operands[2:2 + rank]]
    strides = [ctx.get(v)[0] for v in op.operands[2 + rank:]]
    smem = b.ptrtoint(ctx.scratch(TENSOR_MAP_BYTES), ir.IntType(32))
    warp0 = _in_first_warp(ctx)
    lane_word = b.add(smem, b.mul(special_register(b, "tid.x"), i32(4)))
    _predicated(ctx, "st.shared.b32 [$1], $2;", "r,r", [lane_word, i32(0)], warp0)
    inline_ptx(b, VOID, "bar.warp.sync -1;", "", [])

    field = "tensormap.replace.tile.{}.shared::cta.b1024.{} [$1]"
    lines, args, constraints = [], [smem], ["r"]

    def operand(value, constraint):
        args.append(value)
        constraints.append(constraint)
        return f"${len(args)}"

    address = b.ptrtoint(ctx.get(op.operands[1])[0], I64)
    lines.append(field.format("global_address", "b64") + f", {operand(address, 'l')};")
    lines.append(field.format("rank", "b32") + f", {rank - 1};")
    for i, size in enumerate(box):
        lines.append(field.format("box_dim", "b32") + f", {i}, {size};")
    for i, dim in enumerate(dims):
        lines.append(field.format("global_dim", "b32") + f", {i}, {operand(dim, 'r')};")
    for i, stride in enumerate(strides):
        lines.append(field.format("global_stride", "b64") + f", {i}, {operand(stride, 'l')};")
    for i in range(rank):
        lines.append(field.format("element_stride", "b32") + f", {i}, 1;")
    for name, key in (("elemtype", "elem_type"), ("interleave_layout", None),
                      ("swizzle_mode", "swizzle_mode"), ("fill_mode", "fill_mode")):
        code = op.attributes[key].value if key else 0
        lines.append(field.format(name, "b32") + f", {code};")
    _predicated(ctx, " @%p ".join(lines), ",".join(constraints), args, _leader(ctx))
    inline_ptx(b, VOID, "bar.warp.sync -1;", "", [])
    destination = ctx.get(op.operands[0])[0]
    _predicated(ctx, "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu"
                     f".sync.aligned [$1], [$2], {TENSOR_MAP_BYTES};", "l,r",
                [destination, smem], warp0)


@lowers(ttng.TensormapFenceproxyAcquireOp)
def lower_tensormap_fenceproxy_acquire(ctx, op):
    """Warp 0 acquires the written map for the tensor-map proxy (`fence.proxy.tensormap::
    generic.acquire.gpu`; then an empty bulk group waited for, Triton's workaround for a
    ptxas that drops the fence), and the CTA syncs so every warp may use it."""
    address = _generic(ctx, ctx.get(op.operands[0])[0])
    _predicated(ctx, f"fence.proxy.tensormap::generic.acquire.gpu [$1], {TENSOR_MAP_BYTES}; "
                     "@%p cp.async.bulk.commit_group; @%p cp.async.bulk.wait_group.read 0;",
                "l", [address], _in_first_warp(ctx))
    barrier(ctx.builder)
