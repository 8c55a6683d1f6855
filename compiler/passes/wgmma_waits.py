"""Where a pipelined loop waits for its asynchronous warp-group dots (wgmma.wait_group).

accelerate-matmul follows every `ttng.warp_group_dot` with `ttng.warp_group_dot_wait
{pendings = 0}`. In a pipelined loop a dot may stay in flight past that point, but only while
nothing except another wgmma reads its accumulator registers: ptxas serializes every wgmma of
the kernel (warning C7514) when a non-wgmma instruction can read accumulator registers that a
wgmma may still be writing. So, per dot of the loop body (Triton's WGMMAPipeline does the same
three things):

- a result read by ordinary ops in the same iteration (attention's q.k^T, read by the softmax)
  is waited for at once (`pendings = 0`);
- a result that only feeds wgmma accumulators, in this iteration and through the loop-carried
  value in the next (a matmul's K loop), keeps this dot's group in flight: its wait asks for
  `pendings` = the groups committed from the dot to the wait, and goes when an earlier wait
  of the body already leaves no more groups than that pending (tutorial 06's dV and dK
  dots, each after a pendings-0 wait: Triton has no wait there either);
- a result carried to the next iteration and read there by ordinary ops (attention's p.v
  accumulator, rescaled by the softmax) loses its wait in this iteration; the next iteration
  waits for it just before its first reader, in a wait that is already there when one
  guarantees it (the q.k^T wait) or in a new one.

A dot that reads a shared buffer the body itself fills from registers (a `ttg.local_alloc` of
the loop, say a transposed tile: tutorial 06's dq += ds @ kT^T) is waited for at once whatever
its result feeds: that buffer lives only to the dot's wait, so the allocator may give its bytes
to a buffer that the next iteration writes before any wait (tutorial 06's dq loop stores the
next kT there while the previous dq wgmma still reads it). Only operands defined outside the
loop, or slots of the pipeliner's multi-buffers (`ttg.memdesc_index`), may be read by a dot in
flight past its iteration (Triton's rule, `dotCanBeProperlyAsync`).

Every choice leaves, before the end of the body's last dot, a wait that completes all of the
previous iteration's dots, so the slot they read can be refilled after it.
"""
from __future__ import annotations

from compiler.analysis.conversion import tensor_plan
from compiler.analysis.layout_to_linear import LayoutConversionError
from compiler.dialects.ttg import ConvertLayoutOp, MemDescIndexOp, MemDescTransOp, MemDescType
from compiler.dialects.ttng import WarpGroupDotOp, WarpGroupDotWaitOp
from compiler.ir.attributes import BoolAttr, IntegerAttr
from compiler.ir.core import Block, Operation, Value
from compiler.ir.types import TensorType, i32

#: operand index of a warp-group dot's accumulator
ACCUMULATOR = 2


def is_free_convert(op: Operation) -> bool:
    """A `ttg.convert_layout` that moves no data (the same registers, maybe renumbered): its
    lowering emits no instruction, so it does not read a pending accumulator."""
    if not isinstance(op, ConvertLayoutOp):
        return False
    try:
        plan = tensor_plan(op.operands[0].type, op.results[0].type)
    except (LayoutConversionError, ValueError):
        return False
    return plan.strategy in ("noop", "registers")


def readers(value: Value) -> list:
    """The (op, operand index) uses of `value`, looking through free conversions."""
    out = []
    for user, index in value.uses:
        if is_free_convert(user):
            out += readers(user.results[0])
        else:
            out.append((user, index))
    return out


def _feeds_accumulator(use) -> bool:
    user, index = use
    return isinstance(user, WarpGroupDotOp) and index == ACCUMULATOR


def _top_level(op: Operation, body: Block) -> Operation:
    """The op of `body` that is or holds `op`."""
    while op.parent is not body:
        op = op.parent_op
    return op


def _dot_waits(body: Block) -> list | None:
    """(dot, wait) pairs of the body: a dot whose only user is its own `pendings = 0` wait on
    it alone. None when the body holds a dot nested in a region (its group may not be
    committed every iteration, so groups could not be counted)."""
    pairs = []
    for op in body.ops:
        if any(isinstance(inner, WarpGroupDotOp) for inner in op.walk() if inner is not op):
            return None
        if not isinstance(op, WarpGroupDotOp):
            continue
        users = op.results[0].uses
        if len(users) != 1:
            continue
        wait = users[0][0]
        if isinstance(wait, WarpGroupDotWaitOp) and wait.parent is body and \
                wait.pendings == 0 and len(wait.operands) == 1:
            pairs.append((op, wait))
    return pairs


def _groups_before(body: Block, op: Operation) -> int:
    """Commit groups the body issues before `op`: one per warp-group dot."""
    index = body.ops.index(op)
    return sum(isinstance(o, WarpGroupDotOp) for o in body.ops[:index])


def _covering_wait(body: Block, before: Operation) -> Operation | None:
    """A wait of the body ahead of `before` that completes every group of earlier iterations:
    it leaves at most as many groups pending as this iteration has committed by then."""
    for op in body.ops[:body.ops.index(before)]:
        if isinstance(op, WarpGroupDotWaitOp) and op.pendings <= _groups_before(body, op):
            return op
    return None


def _implied(body: Block, wait: Operation, pendings: int) -> bool:
    """Whether a wait of the body ahead of `wait` (the nearest) already leaves no more than
    `pendings` groups in flight at `wait`: its own pendings plus the dots committed since.
    Tutorial 06's dV and dK dots each follow the pendings-0 wait of the dot before them, so
    their own waits (pendings 1) would wait for nothing."""
    committed = 0
    for op in reversed(body.ops[:body.ops.index(wait)]):
        if isinstance(op, WarpGroupDotOp):
            committed += 1
        elif isinstance(op, WarpGroupDotWaitOp):
            return op.pendings + committed <= pendings
    return False


def _reads_a_buffer_of_the_iteration(dot: Operation, body: Block) -> bool:
    """Whether a shared-memory operand of `dot` is defined in `body` by an op other than
    `ttg.memdesc_index` (a multi-buffer's slot), looking through `ttg.memdesc_trans` views: a
    buffer that lives only in this iteration."""
    for operand in dot.operands[:ACCUMULATOR]:
        while isinstance(operand.owner_op, MemDescTransOp):
            operand = operand.owner_op.operands[0]
        definer = operand.owner_op
        if not isinstance(operand.type, MemDescType) or definer is None or \
                isinstance(definer, MemDescIndexOp):
            continue
        op = definer
        while op is not None and op.parent is not body:
            op = op.parent_op
        if op is not None:
            return True
    return False


def _report(ctx, pattern: str, op: Operation) -> None:
    if ctx is not None:
        ctx.record_pattern(pattern, op=op)


def _wait_also_for(wait: Operation, value: Value) -> Value:
    """Rebuild `wait` with `value` as one more operand; returns the value's waited result."""
    new = WarpGroupDotWaitOp(list(wait.operands) + [value],
                             [v.type for v in wait.operands] + [value.type],
                             dict(wait.attributes), None, wait.loc)
    wait.parent.insert_before(wait, new)
    wait.replace_with(new.results[:-1])
    return new.results[-1]


def _defer_to_next_iteration(body: Block, arg: Value) -> Operation:
    """Wait for the loop-carried `arg` (a dot of the previous iteration may still write it)
    before its first reader in the body; returns the wait."""
    uses = list(arg.uses)
    first = min((_top_level(user, body) for user, _ in uses), key=body.ops.index)
    wait = _covering_wait(body, first)
    if wait is not None:
        done = _wait_also_for(wait, arg)
        wait = done.owner_op
    else:
        wait = WarpGroupDotWaitOp([arg], [arg.type],
                                  {"pendings": IntegerAttr(_groups_before(body, first), i32)},
                                  None, first.loc)
        body.insert_before(first, wait)
        done = wait.results[0]
    for user, index in uses:
        user.set_operand(index, done)
    return wait


def relax_dot_waits(body: Block, ctx=None) -> Operation | None:
    """Make the body's warp-group dots asynchronous and place their waits as the module
    docstring says (each choice reported to `ctx`, a PassContext, when given). Returns the op
    after which the previous iteration's shared slots may be refilled (its dots are all
    complete there), or None when the body has no dot to relax."""
    pairs = _dot_waits(body)
    if not pairs:
        return None
    loop_args = body.args[1:]
    deferred = []
    last = None
    for dot, wait in pairs:
        dot.attributes["isAsync"] = BoolAttr(True)
        uses = readers(wait.results[0])
        carried = [index for user, index in uses if user is body.terminator]
        if not all(_feeds_accumulator(u) or u[0] is body.terminator for u in uses):
            _report(ctx, "wgmma result read at once: wait with pendings 0", dot)
            last = wait
            continue
        if _reads_a_buffer_of_the_iteration(dot, body):
            _report(ctx, "wgmma reads a buffer of its iteration: wait with pendings 0", dot)
            last = wait
            continue
        if all(_feeds_accumulator(u) for i in carried for u in readers(loop_args[i])):
            span = body.ops[body.ops.index(dot):body.ops.index(wait)]
            pendings = sum(isinstance(o, WarpGroupDotOp) for o in span)
            if _implied(body, wait, pendings):
                wait.replace_with([dot.results[0]])
                _report(ctx, "wgmma accumulator chain: an earlier wait already leaves its "
                        "group the only one pending", dot)
                last = dot
                continue
            wait.attributes["pendings"] = IntegerAttr(pendings, i32)
            _report(ctx, "wgmma accumulator chain: its group stays in flight", dot)
            last = wait
            continue
        wait.replace_with([dot.results[0]])
        deferred += [loop_args[i] for i in carried if loop_args[i].has_uses()]
        _report(ctx, "wgmma result carried: waited for in the next iteration", dot)
        last = dot
    ends = [last] + [_defer_to_next_iteration(body, arg) for arg in deferred]
    return max(ends, key=body.ops.index)
