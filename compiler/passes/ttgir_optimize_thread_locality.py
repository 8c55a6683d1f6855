"""optimize-thread-locality: keep reductions inside warps when a conversion is paid anyway,
carry a loop's reduction as thread-local partials that cross threads once, after the loop, and
give gathers a layout whose gathered dim lies within warps (warp shuffles, no shared memory)."""
from __future__ import annotations

import math
from dataclasses import dataclass

from compiler.analysis.conversion import reshaped_in_source, tensor_plan, transposed_in_source
from compiler.analysis.gather import warp_local_plan
from compiler.analysis.layout_propagation import order_of
from compiler.analysis.layout_to_linear import to_linear_layout
from compiler.dialects.arith import BINARY_OPS, ConstantOp
from compiler.dialects.scf import ForOp, YieldOp
from compiler.dialects.tt import GatherOp, LoadOp, ReduceOp, ReshapeOp, TransOp
from compiler.dialects.ttg import BlockedEncoding, ConvertLayoutOp, SliceEncoding
from compiler.ir.attributes import DenseArrayAttr, DenseAttr, UnitAttr, int_attr
from compiler.ir.core import Module, Operation, Value
from compiler.ir.types import TensorType
from compiler.metadata import KernelMetadata

from .base import Pass, PassContext, register_pass
from .requirements import SHARED_ALLOCATED, TTGIR
from .ttgir_rewrite import insert_convert, insert_convert_after, set_encoding


def warps_off_axis(layout: BlockedEncoding, shape: tuple, axis: int) -> BlockedEncoding | None:
    """`layout` with no warp split along `axis`: its warps go to the other dims, fastest dim
    first, as far as each dim has room for them without holding copies. None when the other
    dims cannot take them all or nothing would change."""
    if layout.warps_per_cta[axis] == 1:
        return None
    total = 1
    for w in layout.warps_per_cta:
        total *= w
    wpc = [1] * len(shape)
    left = total
    others = [d for d in layout.order if d != axis]
    for d in others:
        room = max(shape[d] // (layout.size_per_thread[d] * layout.threads_per_warp[d]), 1)
        take = 1
        while take * 2 <= min(room, left):
            take *= 2
        wpc[d] = take
        left //= take
    if left != 1:
        return None
    return BlockedEncoding(layout.size_per_thread, layout.threads_per_warp, tuple(wpc),
                           layout.order)


@register_pass
class OptimizeThreadLocality(Pass):
    """Two rewrites, as Triton's OptimizeThreadLocality. (1) A loop that folds a reduction of
    each iteration's loaded tile into a loop-carried accumulator (`acc = acc + sum(x, axis)`)
    pays the cross-thread part of the reduction every iteration; the loop is made to carry the
    thread-local partials instead (the tile seen as [..., N/e, e] with each thread's e elements
    along the last dim, reduced there without leaving the thread), and one cross-thread
    reduction after the loop finishes the job (`carry_partials`). (2) A reduction whose
    operand's layout splits the reduced axis across warps must exchange partial results
    through shared memory behind a barrier. When that operand is produced by a
    ttg.convert_layout (so a shared-memory round trip is paid anyway), this pass converts into
    a layout whose warps sit on the other dims instead, keeping the reduction inside each warp
    (shuffles only); the smaller reduced result is converted back if its users need the old
    layout. Reductions that fit neither are left as they are, and the pass then records
    nothing."""

    name = "optimize-thread-locality"
    stage = "ttgir"
    requires = TTGIR
    invalidates = (SHARED_ALLOCATED,)

    def run(self, module: Module, ctx: PassContext) -> None:
        gathers = [o for o in module.walk() if isinstance(o, GatherOp) and not o.efficient_layout]
        if gathers:
            facts = KernelMetadata.from_ttgir(module, reader=self.name)
            for op in gathers:
                outcome = warp_local_gather(op, facts.num_warps, facts.threads_per_warp)
                if outcome:
                    ctx.record_pattern(outcome, op=op)
        for op in [o for o in module.walk() if isinstance(o, ReduceOp)]:
            match = match_loop_reduction(op)
            if match is not None:
                carry_partials(match)
                ctx.record_pattern("carry thread-local partials through the loop", op=op)
            elif self._rewrite(op):
                ctx.record_pattern("keep reduction within warps")

    @staticmethod
    def _rewrite(op: Operation) -> bool:
        operand = op.operands[0]
        producer = operand.owner_op
        t = operand.type
        if not isinstance(producer, ConvertLayoutOp) or len(op.operands) != 1:
            return False
        if not isinstance(t.encoding, BlockedEncoding):
            return False
        axis = op.attributes["axis"].value
        better = warps_off_axis(t.encoding, t.shape, axis)
        if better is None:
            return False
        source = producer.operands[0]
        op.set_operand(0, source if source.type.encoding == better
                       else insert_convert(source, better, op))
        result = op.results[0]
        if isinstance(result.type, TensorType):
            old = result.type.encoding
            users = list(result.uses)
            set_encoding(result, SliceEncoding(axis, better))
            if users:
                back = insert_convert_after(result, old, op.loc)
                for user, index in users:
                    user.set_operand(index, back)
        if not producer.results[0].uses:
            producer.erase()
        return True


# ---- gathers ---------------------------------------------------------------------------------
def gather_layout(src_t: TensorType, axis: int, num_warps: int, threads: int) -> BlockedEncoding:
    """One blocked layout for a gather's source, indices and result that keeps the gathered dim
    inside each warp with the fewest shuffles. Each shuffle round serves one source register
    per index register along the axis, so the lanes go to the axis first (as many as it has
    rows, the axis fastest), the rest to the other dims in the source's order; the warps go to
    the other dims only, each as far as it has room; what is left over repeats along the
    axis. Every thread holds one element of each other dim per repetition."""
    rank = src_t.rank
    shape = src_t.shape
    lanes = [1] * rank
    warps = [1] * rank
    lanes[axis] = min(shape[axis], threads)
    lanes_left = threads // lanes[axis]
    others = [d for d in order_of(src_t.encoding) if d != axis]
    for d in others:
        lanes[d] = min(shape[d], lanes_left)
        lanes_left //= lanes[d]
    warps_left = num_warps
    for d in others:
        warps[d] = min(shape[d] // lanes[d], warps_left)
        warps_left //= warps[d]
    size = [1] * rank
    size[axis] = shape[axis] // lanes[axis]
    lanes[axis] *= lanes_left
    warps[axis] *= warps_left
    return BlockedEncoding(tuple(size), tuple(lanes), tuple(warps), tuple([axis] + others))


def warp_local_gather(op: Operation, num_warps: int, threads: int) -> str | None:
    """Put `op` (a tt.gather) in `gather_layout`, with conversions into it and back, when that
    makes it warp-local, and mark it `efficient_layout` so that later passes keep it; a gather
    that is warp-local as it stands is only marked. The conversions take the gather's location,
    name included, as Triton's do (its printed IR reads `%out = ttg.convert_layout ...`,
    `%out_1 = tt.gather %out[...]`). Returns what was done, or None when no layout of this
    kind is warp-local (the shared-memory gather stays)."""
    src, indices = op.operands
    out = op.results[0]
    if indices.type.encoding == out.type.encoding and \
            warp_local_plan(src.type, out.type, op.axis) is not None:
        op.attributes["efficient_layout"] = UnitAttr()
        return "keep the gather's warp-local layout"
    layout = gather_layout(src.type, op.axis, num_warps, threads)
    if warp_local_plan(src.type.with_encoding(layout), out.type.with_encoding(layout),
                       op.axis) is None:
        return None
    users = list(out.uses)
    op.set_operand(0, insert_convert(src, layout, op))
    op.set_operand(1, insert_convert(indices, layout, op))
    old = out.type.encoding
    set_encoding(out, layout)
    op.attributes["efficient_layout"] = UnitAttr()
    if users:
        back = insert_convert_after(out, old, op.loc)
        for user, index in users:
            user.set_operand(index, back)
    return "gather in a warp-local layout"


# ---- loop-carried reductions -------------------------------------------------------------------
#: Combine ops a loop's partials may be reassociated over, with their neutral element.
NEUTRAL = {BINARY_OPS["addf"]: 0.0, BINARY_OPS["mulf"]: 1.0,
           BINARY_OPS["maxnumf"]: -math.inf, BINARY_OPS["maximumf"]: -math.inf,
           BINARY_OPS["minnumf"]: math.inf, BINARY_OPS["minimumf"]: math.inf}


@dataclass
class LoopReduction:
    """A reduction `op` whose result one `update` (same combine op) folds into the loop-carried
    value `loop.iter_args[index]`, yielded back; `views` show the operand as [..., N/e, e]
    with each thread's e elements along the last dim (`partial_views`)."""

    op: Operation
    update: Operation
    loop: ForOp
    index: int
    views: list


def _combine_class(reduce: Operation):
    """The class of a reduce's combine op when its region is that one op on the two block
    arguments, else None."""
    region = reduce.regions[0]
    if len(region.blocks) != 1:
        return None
    block = region.blocks[0]
    if len(block.ops) != 2:
        return None
    combine, ret = block.ops
    if list(combine.operands) != list(block.args) or list(ret.operands) != combine.results:
        return None
    return type(combine)


def _elements_along(t: TensorType, axis: int) -> int:
    """How many elements along `axis` each thread holds in `t`'s layout."""
    bases = to_linear_layout(t.encoding, t.shape).bases("register")
    return 1 << sum(1 for basis in bases if basis[axis])


def _blocked(layout: BlockedEncoding, axis: int, dims: list, fastest: list) -> BlockedEncoding:
    """`layout` (reduced along its last dim `axis`) with that dim replaced by `dims`, each
    (elements per thread, whether it takes the axis's threads and warps); `fastest` orders the
    new dims (indices into `dims`) fastest first, at the axis's place in `order`."""
    spt, tpw, wpc = (list(v[:axis]) for v in (layout.size_per_thread, layout.threads_per_warp,
                                               layout.warps_per_cta))
    for per_thread, threaded in dims:
        spt.append(per_thread)
        tpw.append(layout.threads_per_warp[axis] if threaded else 1)
        wpc.append(layout.warps_per_cta[axis] if threaded else 1)
    order = []
    for d in layout.order:
        order.extend([axis + k for k in fastest] if d == axis else [d])
    return BlockedEncoding(tuple(spt), tuple(tpw), tuple(wpc), tuple(order))


def _moves_no_data(src: TensorType, dst: TensorType, seen) -> bool:
    """Whether `dst`'s layout, seen over `src`'s coordinates, only renumbers registers."""
    return tensor_plan(src, dst, seen).strategy in ("noop", "registers")


def partial_views(t: TensorType, axis: int) -> list | None:
    """The views that show `t` (blocked, reduced along its last dim `axis`) as [..., H, e] in a
    blocked layout with each thread's e elements along the last dim and the axis's threads
    and warps on H, each a register renumbering only: [(op class, result type, trans order)].
    One reshape when a thread's elements along the axis are one run of S; with R runs (the
    layout repeats along the axis) [..., R, H, S] -> trans -> [..., H, R, S] -> [..., H, R*S].
    None when a thread holds one element along the axis or no such views exist."""
    layout = t.encoding
    e = _elements_along(t, axis)
    if e == 1 or t.shape[axis] % e:
        return None
    head, h = tuple(t.shape[:axis]), t.shape[axis] // e
    last = TensorType(head + (h, e), t.element, _blocked(layout, axis, [(1, True), (e, False)],
                                                         [1, 0]))
    runs_of = min(layout.size_per_thread[axis], e)
    runs = e // runs_of
    if runs == 1:
        seen = reshaped_in_source(to_linear_layout(last.encoding, last.shape), t.shape)
        return [(ReshapeOp, last, None)] if _moves_no_data(t, last, seen) else None
    split = TensorType(head + (runs, h, runs_of), t.element,
                       _blocked(layout, axis, [(runs, False), (1, True), (runs_of, False)],
                                [2, 1, 0]))
    order = tuple(range(axis)) + (axis + 1, axis, axis + 2)
    swapped = TensorType(head + (h, runs, runs_of), t.element,
                         _blocked(layout, axis, [(1, True), (runs, False), (runs_of, False)],
                                  [2, 0, 1]))
    steps = [(ReshapeOp, split, None), (TransOp, swapped, order), (ReshapeOp, last, None)]
    before = t
    for kind, after, perm in steps:
        dst = to_linear_layout(after.encoding, after.shape)
        seen = transposed_in_source(dst, perm) if kind is TransOp else \
            reshaped_in_source(dst, before.shape)
        if not _moves_no_data(before, after, seen):
            return None
        before = after
    return steps


def match_loop_reduction(op: Operation) -> LoopReduction | None:
    """The loop-carried reduction `op` takes part in, in the shape `carry_partials` rewrites:
    one loaded operand in a blocked layout of rank > 1 reduced along its last dim, more than
    one element per thread along it, a combine op of `NEUTRAL`; its one user the same op on
    a loop-carried value of the scf.for whose body holds `op`, used only there and yielded
    back at its own index, with a constant initial value. None otherwise."""
    kind = _combine_class(op)
    if kind not in NEUTRAL or len(op.operands) != 1 or len(op.results) != 1:
        return None
    operand = op.operands[0]
    t = operand.type
    axis = op.attributes["axis"].value
    if not isinstance(t, TensorType) or not isinstance(t.encoding, BlockedEncoding) or \
            len(t.shape) < 2 or axis != len(t.shape) - 1:
        return None
    if not isinstance(operand.owner_op, LoadOp) or len(op.results[0].uses) != 1:
        return None
    update, _ = op.results[0].uses[0]
    if type(update) is not kind or len(update.results[0].uses) != 1:
        return None
    yield_op, index = update.results[0].uses[0]
    loop = op.parent_op
    if not isinstance(yield_op, YieldOp) or yield_op.parent is not op.parent or \
            not isinstance(loop, ForOp):
        return None
    carried = loop.iter_args[index]
    if set(update.operands) != {carried, op.results[0]} or len(carried.uses) != 1:
        return None
    if not isinstance(loop.init_args[index].owner_op, ConstantOp):
        return None
    views = partial_views(t, axis)
    if views is None:
        return None
    return LoopReduction(op, update, loop, index, views)


def _insert_after(anchor: Operation, op: Operation) -> Operation:
    block = anchor.parent
    return block.insert(block.ops.index(anchor) + 1, op)


def _reduce_of(reduce: Operation, operand: Value, axis: int) -> Operation:
    """A copy of `reduce` (same combine region) over `operand` along `axis`."""
    t = operand.type
    new = reduce.clone({reduce.operands[0]: operand})
    new.attributes["axis"] = int_attr(axis)
    new.attributes.pop("allocation.offset", None)
    shape = t.shape[:axis] + t.shape[axis + 1:]
    new.results[0].type = TensorType(shape, t.element, SliceEncoding(axis, t.encoding))
    return new


def _update_of(update: Operation, mapping: dict, result_type) -> Operation:
    """A copy of the accumulating op with its operands mapped and its result retyped."""
    new = update.clone(dict(mapping))
    new.results[0].type = result_type
    return new


def _with_carried(loop: ForOp, init: Value) -> ForOp:
    """`loop` rebuilt with one more loop-carried value (initially `init`); its body moves over,
    the old loop's results are replaced by the new one's first results, and it is erased."""
    new = ForOp(list(loop.operands) + [init], [r.type for r in loop.results] + [init.type],
                dict(loop.attributes), [], loop.loc)
    new.add_region(loop.regions.pop())
    loop.parent.insert_before(loop, new)
    for old, fresh in zip(loop.results, new.results):
        old.replace_all_uses_with(fresh)
    loop.erase()
    new.body.add_argument(init.type, new.loc)
    return new


def carry_partials(match: LoopReduction) -> None:
    """Rewrite a matched loop reduction: in the loop, the tile is reshaped (registers only) to
    the partial layout and reduced along its last dim inside each thread, and a new
    loop-carried partial (starting at the combine op's neutral element) accumulates that;
    the old carried value now passes through unchanged. After the loop, the partials are
    reduced along the original axis (across threads, once), converted to the old result's
    layout and folded into the old initial value."""
    op, update, index = match.op, match.update, match.index
    axis = op.attributes["axis"].value
    old_carried, old_init = match.loop.iter_args[index], match.loop.init_args[index]

    view = op.operands[0]
    for kind, view_type, order in match.views:
        attrs = {} if order is None else {"order": DenseArrayAttr(order)}
        step_op = kind([view], [view_type], attrs, None, op.loc)
        op.parent.insert_before(op, step_op)
        view = step_op.result
    local = _reduce_of(op, view, len(view.type.shape) - 1)
    op.parent.insert_before(op, local)
    acc_type = local.results[0].type
    neutral = ConstantOp([], [acc_type], {"value": DenseAttr(NEUTRAL[type(update)], acc_type)},
                         None, old_init.owner_op.loc)
    match.loop.parent.insert_before(match.loop, neutral)

    loop = _with_carried(match.loop, neutral.result)
    carried = loop.iter_args[-1]
    step = _update_of(update, {old_carried: carried, op.results[0]: local.results[0]}, acc_type)
    _insert_after(local, step)
    body_yield = loop.body.terminator
    body_yield.set_operand(index, old_carried)
    body_yield._append_operand(step.results[0])

    total = _reduce_of(local, loop.results[-1], axis)
    _insert_after(loop, total)
    result = loop.results[index]
    back = ConvertLayoutOp([total.results[0]], [result.type], {}, None, op.loc)
    _insert_after(total, back)
    final = _update_of(update, {old_carried: old_init, op.results[0]: back.result}, result.type)
    _insert_after(back, final)
    result.replace_all_uses_with(final.results[0])
    update.erase()
    op.erase()
