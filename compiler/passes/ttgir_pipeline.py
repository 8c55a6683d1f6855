"""pipeline: software pipelining of loops whose loads feed dots through shared memory.

Triton's sm_80 scheme: each operand staged as `tt.load -> ttg.local_alloc -> ttg.local_load ->
tt.dot` (a tensor-core or an FMA dot) becomes an asynchronous copy
(`ttg.async_copy_global_to_local`, cp.async) into one slot of a `num_stages`-deep shared buffer,
each copy committed as a group of its own (`ttg.async_commit_group`), as Triton commits them. A
prologue issues the copies of the first num_stages-1 iterations; iteration i waits for its own
groups, whose `!ttg.async.token`s the loop carries from the iteration that issued them
(`ttg.async_wait %tokens {num = (num_stages-2) * copies}`: the later iterations' groups may stay
pending; the wait also fences the CTA, and the reads of the slots take its token), issues the
copies of iteration i+num_stages-1 into the slot iteration i-1 read, then runs the dot on slot
i % num_stages. Copies past the loop's end are masked off (zero-filled, no memory read). The
ops computing a load's pointer and mask (its "stage 0" slice, including the loop-carried
pointer increments) are cloned with the induction variable moved num_stages-1 iterations
ahead, and the carried pointers run that far ahead: in place when only that slice reads them,
else as shadow iter args next to the originals, which the rest of the body keeps reading at the
current iteration.
"""
from __future__ import annotations

from compiler.codegen import vector_width as vw
from compiler.dialects import arith, tt
from compiler.dialects.scf import ForOp
from compiler.dialects.ttg import (ASYNC_TOKEN, MEMDESC_VIEWS, AsyncCommitGroupOp,
                                   AsyncCopyGlobalToLocalOp, AsyncWaitOp, BarrierOp, LocalAllocOp,
                                   LocalDeallocOp, LocalLoadOp, MemDescIndexOp,
                                   NVMMASharedEncoding, SwizzledSharedEncoding, replace_buffer)
from compiler.dialects.ttng import (AsyncTMACopyGlobalToLocalOp, BarrierExpectOp,
                                    FenceAsyncSharedOp, InitBarrierOp, InvalBarrierOp,
                                    WaitBarrierOp, WarpGroupDotWaitOp)
from compiler.ir.attributes import IntegerAttr, StringAttr
from compiler.ir.core import Module, Operation, Value
from compiler.dialects.ttg import MemDescType
from compiler.ir.types import TensorType, i1, i32

from .base import Option, Pass, PassContext, register_pass
from .requirements import SHARED_ALLOCATED, TTGIR
from .ir_utils import constant_value, is_pure, make_constant
from .ttgir_optimize_dot_operands import only_dots_read, reads_for_dots
from .ttgir_tma_lowering import BARRIER_TYPE, box_of
from .loop_flatten import flatten_loop_nests
from .wgmma_waits import relax_dot_waits


def _is_zero_other(value: Value | None) -> bool:
    """Whether a load's `other` is absent or a constant zero (cp.async zero-fills)."""
    if value is None:
        return True
    number = constant_value(value)
    return number is not None and number == 0


#: the narrowest cp.async (bytes); narrower loads stay synchronous and are not pipelined
MIN_COPY_BYTES = 4


def copy_bytes(axis, load: Operation, buf_type: MemDescType) -> int:
    """Bytes one thread can copy per instruction for `load` into a buffer of `buf_type`: what
    the lowering of ttg.async_copy_global_to_local will copy (`vector_width.copy_width`)."""
    ptr = load.operands[0]
    mask = load.operands[1] if len(load.operands) > 1 else None
    elem_bytes = max(1, load.results[0].type.element.width // 8)
    if not isinstance(ptr.type, TensorType):
        return elem_bytes
    return vw.copy_width(axis, ptr, mask, buf_type) * elem_bytes


def _staged_loads(loop: ForOp, axis) -> list:
    """(load, local_alloc) pairs of the loop body whose value reaches only tt.dots, through
    `ttg.local_alloc` and `ttg.local_load`, and that cp.async can copy (4 bytes or more per
    instruction): the loads worth copying asynchronously."""
    pairs = []
    for op in loop.body.ops:
        if isinstance(op, tt.DescriptorLoadOp):
            alloc = tma_staged_alloc(op, loop)
            if alloc is not None:
                pairs.append((op, alloc))
            continue
        if not isinstance(op, tt.LoadOp) or not isinstance(op.results[0].type, TensorType):
            continue
        users = op.results[0].users()
        if len(users) != 1 or not isinstance(users[0], LocalAllocOp) or \
                users[0].parent is not loop.body:
            continue
        alloc = users[0]
        if not isinstance(alloc.results[0].type.encoding,
                          (SwizzledSharedEncoding, NVMMASharedEncoding)):
            continue
        if len(op.results[0].type.shape) != 2 or not _is_zero_other(
                op.other):
            continue
        if copy_bytes(axis, op, alloc.results[0].type) < MIN_COPY_BYTES:
            continue
        readers = alloc.results[0].users()
        if readers and all(isinstance(r, LocalLoadOp) and r.results[0].users() and
                           all(isinstance(u, tt.DotOp) for u in r.results[0].users()) or
                           reads_for_dots(r) for r in readers):
            pairs.append((op, alloc))
    return pairs


def vector_shared(rank: int) -> SwizzledSharedEncoding:
    """The unswizzled shared layout a pipelined 1-D load is copied into (row-major, vec 1)."""
    return SwizzledSharedEncoding(1, 1, 1, tuple(range(rank)))


def _vector_loads(loop: ForOp, axis) -> list:
    """The 1-D tensor loads of the loop body (zero or no `other`, 4 bytes or more per copy) that
    ride along with a loop's dot operands: each is copied into a ring of its own and read back
    with `ttg.local_load` where it was loaded. Tutorial 06's backward loads a row block of M and
    of Delta every iteration; left synchronous, each iteration waited for both global loads
    (Triton's pipeliner copies them asynchronously too)."""
    found = []
    for op in loop.body.ops:
        if not isinstance(op, tt.LoadOp) or not isinstance(op.results[0].type, TensorType):
            continue
        t = op.results[0].type
        if len(t.shape) != 1 or not isinstance(getattr(t.element, "width", None), int) or \
                not _is_zero_other(op.other):
            continue
        if not op.results[0].users() or \
                copy_bytes(axis, op, _slot_type(op, None)) < MIN_COPY_BYTES:
            continue
        found.append(op)
    return found


def tma_staged_alloc(load: Operation, loop: ForOp) -> Operation | None:
    """The `ttg.local_alloc` a descriptor load of the loop body feeds when TMA can copy it
    straight into that buffer (its layout is the TMA box's, `ttgir_tma_lowering.box_of`) and
    only warp-group dots read it (directly or through `ttg.memdesc_trans` views); None
    otherwise (tma-lowering then copies it in place)."""
    users = load.results[0].users()
    if len(users) != 1 or not isinstance(users[0], LocalAllocOp) or \
            users[0].parent is not loop.body:
        return None
    alloc = users[0]
    if alloc.results[0].type.encoding != box_of(load.results[0].type)[1]:
        return None
    return alloc if only_dots_read(alloc.results[0]) else None


def _stage0_slice(loop: ForOp, loads: list) -> tuple[set, set] | None:
    """The body ops the loads depend on (with the loads) and the iter-arg indices they read,
    closed over the yielded values of those iter args. None when the slice holds ops that
    cannot be cloned ahead (regions, side effects, other loads)."""
    body = loop.body
    in_slice: set = set()
    carried: set = set()
    work = [v for load in loads for v in load.operands]
    yield_op = body.terminator
    while work:
        value = work.pop()
        owner = value.owner_op
        if owner is None:
            if value in loop.iter_args:
                index = loop.iter_args.index(value)
                if index not in carried:
                    carried.add(index)
                    work.append(yield_op.operands[index])
            continue
        if owner.parent is not body or owner in in_slice:
            continue
        if owner.regions or not is_pure(owner):
            return None
        in_slice.add(owner)
        work.extend(owner.operands)
    return in_slice | set(loads), carried


def _slot_type(load: Operation, alloc: Operation | None) -> MemDescType:
    """The type of one slot of `load`'s ring: its `ttg.local_alloc`'s, or for a vector load
    (no alloc) the loaded tensor's shape in `vector_shared`."""
    if alloc is not None:
        return alloc.results[0].type
    t = load.results[0].type
    return MemDescType(tuple(t.shape), t.element, vector_shared(len(t.shape)), False)


def _ordered(body, ops: set) -> list:
    return [op for op in body.ops if op in ops]


def _read_outside_stage0(loop: ForOp, ordered: list, carried: list, loads: set) -> bool:
    """Whether anything but the stage-0 slice needs the current iteration's value of a carried
    index: an op outside the slice (or nested in the body) reading the iter arg or a slice op
    computed from it, a yield of such a value into another index, or a use of the index's
    final value after the loop. (Tutorial 06 computes K's and V's row offsets from one carried
    scalar; only V's load is pipelined, and K's address must not run ahead with it.)"""
    stage0 = set(ordered)
    yield_op = loop.body.terminator
    derived = {loop.iter_args[j] for j in carried}
    for op in ordered:
        if op not in loads and any(v in derived for v in op.operands):
            derived.update(op.results)
    for value in derived:
        for user, index in value.uses:
            if user is yield_op:
                if index not in carried:
                    return True
            elif user not in stage0:
                return True
    return any(loop.results[j].has_uses() for j in carried)


class _Emitter:
    """Creates ops before an anchor op with one location."""

    def __init__(self, anchor: Operation):
        self.anchor = anchor

    def op(self, cls, operands, result_types, attributes=None, loc=None) -> Operation:
        new = cls(list(operands), list(result_types), dict(attributes or {}), None,
                  self.anchor.loc if loc is None else loc)
        self.anchor.parent.insert_before(self.anchor, new)
        return new

    def const(self, number, type_=i32) -> Value:
        return make_constant(number, type_, self.anchor)

    def clone(self, op: Operation, mapping: dict) -> Operation:
        new = op.clone(mapping)
        self.anchor.parent.insert_before(self.anchor, new)
        return new


def _slot_view(emit: _Emitter, buffer: Value, slot: Value, loc=None) -> Value:
    """`ttg.memdesc_index %buffer[%slot]`: one stage's buffer."""
    t = buffer.type
    view_type = MemDescType(tuple(t.shape[1:]), t.element, t.encoding, True)
    return emit.op(MemDescIndexOp, [buffer, slot], [view_type], loc=loc).results[0]


def _issue_stage(emit: _Emitter, loop: ForOp, ops: list, loads: list, buffers: dict,
                 mapping: dict, iv: Value, slot: Value, barriers: Value | None = None) -> list:
    """Clone the stage-0 `ops` under `mapping` (the iteration whose induction value is `iv`),
    turning each load into an asynchronous copy into slot `slot` of its buffer, masked off when
    `iv` is past the loop's end, committed as a group of its own; returns the groups' tokens in
    load order. Descriptor loads become TMA copies completing on the slot's mbarrier of
    `barriers`, announced by one expect of their bytes."""
    ub = loop.operands[1]
    in_range = emit.op(arith.CmpIOp, [iv, ub], [i1], {"predicate": StringAttr("slt")}).results[0]
    groups = []
    tma_loads = [op for op in ops if isinstance(op, tt.DescriptorLoadOp) and op in buffers]
    if tma_loads:
        barrier = _slot_view(emit, barriers, slot, loop.loc)
        size = sum(box_of(op.results[0].type)[0].box_bytes * box_of(op.results[0].type)[0].copies
                   for op in tma_loads)
        emit.op(BarrierExpectOp, [barrier, in_range], [], {"size": IntegerAttr(size, i32)})
    for op in ops:
        if op not in buffers:
            emit.clone(op, mapping)
            continue
        if isinstance(op, tt.DescriptorLoadOp):
            view = _slot_view(emit, buffers[op], slot, op.loc)
            coords = [mapping.get(c, c) for c in op.operands[1:]]
            emit.op(AsyncTMACopyGlobalToLocalOp, [op.operands[0], view, barrier, in_range]
                    + coords, [], loc=op.loc)
            continue
        ptr = mapping.get(op.operands[0], op.operands[0])
        t = ptr.type
        mask_type = TensorType(t.shape, i1, t.encoding)
        mask = emit.op(tt.SplatOp, [in_range], [mask_type], loc=op.loc).results[0]
        if len(op.operands) > 1:
            old_mask = mapping.get(op.operands[1], op.operands[1])
            mask = emit.op(arith.BINARY_OPS["andi"], [old_mask, mask], [mask_type],
                           loc=op.loc).results[0]
        buffer = buffers[op]
        view_type = MemDescType(t.shape, buffer.type.element, buffer.type.encoding, True)
        view = emit.op(MemDescIndexOp, [buffer, slot], [view_type], loc=op.loc).results[0]
        copy = emit.op(AsyncCopyGlobalToLocalOp, [ptr, view, mask], [ASYNC_TOKEN], loc=op.loc)
        groups.append(emit.op(AsyncCommitGroupOp, copy.results, [ASYNC_TOKEN],
                              loc=op.loc).results[0])
    return groups


def _local_loads_of(buffer: Value) -> list:
    """The `ttg.local_load`s reading `buffer`, directly or through `MEMDESC_VIEWS`."""
    found, work = [], [buffer]
    while work:
        value = work.pop()
        for user in value.users():
            if isinstance(user, MEMDESC_VIEWS) and user.operands[0] is value:
                work.append(user.results[0])
            elif isinstance(user, LocalLoadOp) and user.operands[0] is value:
                found.append(user)
    return found


def _iv_ahead(emit: _Emitter, loop: ForOp, iterations: int) -> Value | None:
    """`iterations * step` (None for 0 iterations)."""
    if iterations == 0:
        return None
    return emit.op(arith.BINARY_OPS["muli"], [loop.operands[2], emit.const(iterations)],
                   [i32]).results[0]


def _plus(emit: _Emitter, base: Value, offset: Value | None) -> Value:
    if offset is None:
        return base
    return emit.op(arith.BINARY_OPS["addi"], [base, offset], [i32]).results[0]


def _stage_barriers(emit: _Emitter, stages: int, loc) -> Value:
    """One mbarrier per stage (`!ttg.memdesc<stages x 1 x i64>`), initialized for one arrival
    and visible to every thread and to the async proxy."""
    buf_type = MemDescType((stages,) + tuple(BARRIER_TYPE.shape), BARRIER_TYPE.element,
                           BARRIER_TYPE.encoding, True)
    barriers = emit.op(LocalAllocOp, [], [buf_type], loc=loc).results[0]
    for s in range(stages):
        emit.op(InitBarrierOp, [_slot_view(emit, barriers, emit.const(s))], [],
                {"count": IntegerAttr(1, i32)})
    emit.op(FenceAsyncSharedOp, [], [])
    emit.op(BarrierOp, [], [])
    return barriers


def _wait_stage_barrier(emit: _Emitter, loop: ForOp, barriers: Value, slot: Value,
                        stages: int) -> None:
    """Wait for the TMA copies of this iteration's slot: iteration i is the (i / stages)-th
    use of slot i % stages, so it waits on phase (i / stages) & 1 of the slot's barrier."""
    binary = arith.BINARY_OPS
    lb, step = loop.operands[0], loop.operands[2]
    moved = emit.op(binary["subi"], [loop.induction_var, lb], [i32]).results[0]
    iteration = emit.op(binary["divsi"], [moved, step], [i32]).results[0]
    use = emit.op(binary["divsi"], [iteration, emit.const(stages)], [i32]).results[0]
    phase = emit.op(binary["andi"], [use, emit.const(1)], [i32]).results[0]
    emit.op(WaitBarrierOp, [_slot_view(emit, barriers, slot), phase], [])


def _wait_after(emit: _Emitter, loop: ForOp) -> None:
    """After a loop with asynchronous dots: `ttng.warp_group_dot_wait {pendings = 0}` on the
    loop's tensor results, which their users then read."""
    results = [r for r in loop.results if isinstance(r.type, TensorType) and r.has_uses()]
    if not results:
        emit.op(WarpGroupDotWaitOp, [], [], {"pendings": IntegerAttr(0, i32)})
        return
    uses = [list(r.uses) for r in results]
    wait = emit.op(WarpGroupDotWaitOp, results, [r.type for r in results],
                   {"pendings": IntegerAttr(0, i32)})
    for new, old_uses in zip(wait.results, uses):
        for user, index in old_uses:
            user.set_operand(index, new)


def pipeline_loop(loop: ForOp, stages: int, ctx: PassContext, axis) -> bool:
    """Pipeline one scf.for (`axis`: the kernel's axis analysis); False (and nothing changed)
    when it does not qualify."""
    pairs = _staged_loads(loop, axis)
    if not pairs or loop.operands[0].type != i32:
        return False
    step = constant_value(loop.operands[2])
    if step is None or step <= 0:
        return False
    loads = [load for load, _ in pairs]
    found = _stage0_slice(loop, loads)
    if found is None:
        return False
    for load in _vector_loads(loop, axis):
        # a vector load rides along only when its address can run ahead too (not, say, one
        # computed from another load's value); the dot operands are pipelined either way
        wider = _stage0_slice(loop, loads + [load])
        if wider is not None:
            loads.append(load)
            pairs.append((load, None))
            found = wider
    stage0, carried = found
    body = loop.body
    ordered = _ordered(body, stage0)
    yield_op = body.terminator
    carried = sorted(carried)
    # the stage-0 clones read carried values num_stages-1 iterations ahead: in place when only
    # stage 0 reads them, else from shadow copies (extra iter args) next to the originals
    shadowed = _read_outside_stage0(loop, ordered, carried, set(loads))

    # buffers and prologue, before the loop
    before = _Emitter(loop)
    buffers = {}
    slot_types = {load: _slot_type(load, alloc) for load, alloc in pairs}
    for load, alloc in pairs:
        t = slot_types[load]
        buf_type = MemDescType((stages,) + tuple(t.shape), t.element, t.encoding, True)
        buffers[load] = before.op(LocalAllocOp, [], [buf_type],
                                  loc=(alloc or load).loc).results[0]
    tma_loads = [load for load in loads if isinstance(load, tt.DescriptorLoadOp)]
    copies = len(loads) - len(tma_loads)        # cp.async ones
    barriers = _stage_barriers(before, stages, loop.loc) if tma_loads else None
    lookahead = _iv_ahead(before, loop, stages - 1)
    current = {index: loop.init_args[index] for index in carried}
    issued = []         # per prologue iteration, its copy groups' tokens
    for p in range(stages - 1):
        iv = _plus(before, loop.operands[0], _iv_ahead(before, loop, p))
        mapping = {loop.induction_var: iv}
        mapping.update({loop.iter_args[j]: current[j] for j in carried})
        issued.append(_issue_stage(before, loop, ordered, loads, buffers, mapping, iv,
                                   before.const(p), barriers))
        current = {j: mapping.get(yield_op.operands[j], yield_op.operands[j]) for j in carried}
    # the loop carries the tokens of the groups in flight: per group (a load's copies) those of
    # iterations i .. i+stages-2, in Triton's order
    in_flight = [issued[p][g] for g in range(copies) for p in range(stages - 1)]
    shadows = [current[j] for j in carried] if shadowed else []
    if not shadowed:
        for j in carried:
            loop.set_operand(3 + j, current[j])

    # the loop: the shadows, two more carried indices (slot to fill, slot to read), the tokens
    new_loop = ForOp(list(loop.operands) + shadows + [before.const(stages - 1),
                                                      before.const(0)] + in_flight,
                     [r.type for r in loop.results] + [v.type for v in shadows] + [i32, i32]
                     + [ASYNC_TOKEN] * len(in_flight),
                     dict(loop.attributes), [], loop.loc)
    region = loop.regions.pop()
    new_loop.add_region(region)
    loop.parent.insert_before(loop, new_loop)
    for old, new in zip(loop.results, new_loop.results):
        old.replace_all_uses_with(new)
    loop.erase()
    shadow_args = [body.add_argument(v.type, new_loop.loc) for v in shadows]
    insert_slot = body.add_argument(i32, new_loop.loc)
    extract_slot = body.add_argument(i32, new_loop.loc)
    tokens = [[body.add_argument(ASYNC_TOKEN, new_loop.loc) for _ in range(stages - 1)]
              for _ in range(copies)]       # [group][iteration - i], as in_flight

    top = _Emitter(body.ops[0])
    waited = None
    if copies:
        # this iteration's groups; the (stages-2) later iterations' may still be pending
        waited = top.op(AsyncWaitOp, [group[0] for group in tokens], [ASYNC_TOKEN],
                        {"num": IntegerAttr((stages - 2) * copies, i32)},
                        loc=new_loop.loc).results[0]
    if tma_loads:
        _wait_stage_barrier(top, new_loop, barriers, extract_slot, stages)
    for load, alloc in pairs:
        t = slot_types[load]
        slot_type = MemDescType(t.shape, t.element, t.encoding, True)
        if alloc is None:       # read back where it was loaded
            here = _Emitter(load)
            view = here.op(MemDescIndexOp, [buffers[load], extract_slot], [slot_type],
                           loc=load.loc).results[0]
            value = here.op(LocalLoadOp, [view, waited], [load.results[0].type], loc=load.loc)
            load.results[0].replace_all_uses_with(value.results[0])
            continue
        view = top.op(MemDescIndexOp, [buffers[load], extract_slot], [slot_type],
                      loc=alloc.loc).results[0]
        replace_buffer(alloc.results[0], view)
        alloc.erase()
        if not isinstance(load, tt.DescriptorLoadOp):     # its reads follow the cp.async wait
            for reader in _local_loads_of(view):
                reader._append_operand(waited)
    released = relax_dot_waits(body, ctx)
    if released is not None:
        # wgmma of iteration i runs while iteration i+1's copies are issued: once iteration
        # i-1's dots are complete (compiler.passes.wgmma_waits), fence the CTA (the other warp
        # groups' dots read the slot too), then refill the slot they read
        issue = _Emitter(body.ops[body.ops.index(released) + 1])
        issue.op(BarrierOp, [], [], loc=new_loop.loc)
    else:
        issue = top
        if not copies:      # (async_wait's CTA barrier) every warp is done with the slot
            issue.op(BarrierOp, [], [], loc=new_loop.loc)
    iv = _plus(issue, new_loop.induction_var, lookahead)
    mapping = {new_loop.induction_var: iv}
    mapping.update({new_loop.iter_args[j]: arg for j, arg in zip(carried, shadow_args)})
    issued = _issue_stage(issue, new_loop, ordered, loads, buffers, mapping, iv, insert_slot,
                          barriers)

    end = _Emitter(yield_op)
    ahead = [mapping.get(yield_op.operands[j], yield_op.operands[j]) for j in carried]
    if shadowed:
        for value in ahead:
            yield_op._append_operand(value)
    else:
        for j, value in zip(carried, ahead):
            yield_op.set_operand(j, value)
    count = end.const(stages)
    one = end.const(1)
    zero = end.const(0)
    for slot in (insert_slot, extract_slot):
        # slot + 1, back to 0 at `stages`: a compare and a select (uniform, cheap), where a
        # remainder by a constant costs a multiply-high and shifts in every iteration
        bumped = end.op(arith.BINARY_OPS["addi"], [slot, one], [i32]).results[0]
        past_end = end.op(arith.CmpIOp, [bumped, count], [i1],
                          {"predicate": StringAttr("sge")}).results[0]
        wrapped = end.op(arith.SelectOp, [past_end, zero, bumped], [i32]).results[0]
        yield_op._append_operand(wrapped)
    for group, new in zip(tokens, issued):       # one iteration on: drop i's, add i+stages-1's
        for value in group[1:] + [new]:
            yield_op._append_operand(value)
    for op in reversed(ordered):        # the original stage-0 ops are dead now
        if not any(r.has_uses() for r in op.results):
            op.erase()

    after = new_loop.parent.ops[new_loop.parent.ops.index(new_loop) + 1]
    tail = _Emitter(after)
    if copies:
        tail.op(AsyncWaitOp, [], [ASYNC_TOKEN], {"num": IntegerAttr(0, i32)}, loc=new_loop.loc)
    if released is not None:
        _wait_after(tail, new_loop)
    if tma_loads:           # copies past the end were never issued: the barriers are idle
        tail.op(BarrierOp, [], [], loc=new_loop.loc)
        for s in range(stages):
            tail.op(InvalBarrierOp, [_slot_view(tail, barriers, tail.const(s))], [])
        tail.op(LocalDeallocOp, [barriers], [], loc=new_loop.loc)
    for buffer in buffers.values():
        tail.op(LocalDeallocOp, [buffer], [], loc=new_loop.loc)
    kind = "TMA" if not copies else "cp.async" if not tma_loads else "cp.async + TMA"
    ctx.record_pattern(f"scf.for -> {stages}-stage {kind} pipeline", op=new_loop)
    return True


@register_pass
class Pipeline(Pass):
    """Software-pipelines loops whose dot operands (tensor-core or FMA dots) are loaded from
    global memory and staged in shared memory: the loads become cp.async copies into a
    num_stages-deep shared buffer issued num_stages-1 iterations ahead, one commit group each,
    whose async tokens the loop carries to the wait before their reads, so memory traffic
    overlaps the math (Triton's sm_80 pipeliner). A loop's `tt.num_stages` attribute overrides
    the option, which defaults to the compile option num_stages; 1 leaves loops alone. Loop
    nests marked `tt.flatten` (`tl.range(flatten=True)`) are first made one loop
    (passes/loop_flatten.py)."""

    name = "pipeline"
    stage = "ttgir"
    requires = TTGIR
    invalidates = (SHARED_ALLOCATED,)
    options_spec = (Option("num-stages", int, 3,
                           "buffers per operand (default: the compile option num_stages)",
                           check=lambda v: 1 <= v <= 8, allowed="an integer from 1 to 8",
                           from_compile="num_stages"),)

    def run(self, module: Module, ctx: PassContext) -> None:
        default = self.options["num-stages"]
        for func in module.functions():
            flatten_loop_nests(func, ctx)
            loops = [op for op in func.walk() if isinstance(op, ForOp)]
            if not loops:
                continue
            axis = vw.analyze(func)
            for loop in loops:
                attr = loop.attributes.get("tt.num_stages")
                stages = attr.value if attr is not None else default
                if stages >= 2:
                    pipeline_loop(loop, stages, ctx, axis)
