"""Structured control flow to LLVM branches: scf.for (a header with phi nodes for the induction
variable and every register of every loop-carried tensor), scf.if (a merge block with phis),
scf.while (before/after blocks), and tt.return.

A loop that leaves wgmma groups in flight (its results go straight into a
`ttng.warp_group_dot_wait`) gets a guard of its own and that wait on its exit path: the loop's
wgmma groups complete before the path that skips the loop joins it. With the wait only after
the join, the init registers the skipping path sets (zero accumulators) can sit between the
loop's wgmmas and their wait, and ptxas then serializes every wgmma of the loop (its warning
C7515)."""
from __future__ import annotations

from compiler.dialects import scf, tt, ttng

from .lower_wgmma import wait_on
from .lowering import LoweringError
from .registry import lowers


def _flatten(lists) -> list:
    return [v for values in lists for v in values]


def _unflatten(flat: list, counts: list) -> list:
    out, i = [], 0
    for n in counts:
        out.append(flat[i:i + n])
        i += n
    return out


def _phis(builder, template: list) -> list:
    return [builder.phi(v.type) for v in template]


def _less(builder, x, y, unsigned: bool):
    return builder.icmp_unsigned("<", x, y) if unsigned else builder.icmp_signed("<", x, y)


def in_flight_wait(op):
    """The `ttng.warp_group_dot_wait` right after loop `op` that waits on its results (the
    loop's last wgmma groups are still running when it exits), or None."""
    ops = op.parent.ops if op.parent is not None else [op]
    after = ops.index(op) + 1
    wait = ops[after] if after < len(ops) else None
    if isinstance(wait, ttng.WarpGroupDotWaitOp) and \
            any(v.owner_op is op for v in wait.operands):
        return wait
    return None


@lowers(scf.ForOp)
def lower_for(ctx, op):
    """`scf.for`: header (phis, `iv < ub`), body, latch (`iv + step`), exit. A loop with
    wgmma groups in flight at its exit is guarded (`lb < ub`) and waits on its exit path
    (module docstring)."""
    b = ctx.builder
    lb, ub, step = (ctx.get(v)[0] for v in op.operands[:3])
    inits = [ctx.get(v) for v in op.operands[3:]]
    counts = [len(v) for v in inits]
    flat_inits = _flatten(inits)
    unsigned = "unsignedCmp" in op.attributes
    wait = in_flight_wait(op)
    if wait is not None:
        skip_from = b.block
        guarded = b.append_basic_block("for.guarded")
        merge = b.append_basic_block("for.merge")
        b.cbranch(_less(b, lb, ub, unsigned), guarded, merge)
        b.position_at_end(guarded)
    pre = b.block
    header = b.append_basic_block("for.header")
    body = b.append_basic_block("for.body")
    exit_ = b.append_basic_block("for.exit")
    b.branch(header)
    b.position_at_end(header)
    iv = b.phi(lb.type)
    iv.add_incoming(lb, pre)
    carried = _phis(b, flat_inits)
    for phi, init in zip(carried, flat_inits):
        phi.add_incoming(init, pre)
    b.cbranch(_less(b, iv, ub, unsigned), body, exit_)
    b.position_at_end(body)
    block = op.regions[0].blocks[0]
    ctx.set(block.args[0], [iv])
    for arg, values in zip(block.args[1:], _unflatten(carried, counts)):
        ctx.set(arg, values)
    ctx.lower_block(block)
    yielded = _flatten(ctx.get(v) for v in block.terminator.operands)
    latch = b.block
    iv.add_incoming(b.add(iv, step), latch)
    for phi, value in zip(carried, yielded):
        phi.add_incoming(value, latch)
    b.branch(header)
    b.position_at_end(exit_)
    results = _unflatten(carried, counts)
    if wait is not None:
        results = _wait_on_exit(ctx, op, wait, results, inits, skip_from, merge)
    for result, values in zip(op.results, results):
        ctx.set(result, values)


def _wait_on_exit(ctx, op, wait, results: list, inits: list, skip_from, merge) -> list:
    """On the loop's exit path, `wgmma.wait_group` (the following wait's pendings) on the
    results that wait names; then join the path that skipped the loop (`inits`) in `merge`.
    The wait itself still runs after the join (a no-op for the loop's groups by then)."""
    b = ctx.builder
    chosen = sorted({v.index for v in wait.operands if v.owner_op is op and results[v.index]})
    waited = wait_on(b, [results[i] for i in chosen], wait.attributes["pendings"].value)
    for i, regs in zip(chosen, waited):
        results[i] = regs
    exit_from = b.block
    b.branch(merge)
    b.position_at_end(merge)
    joined = []
    for values, init in zip(results, inits):
        phis = _phis(b, values)
        for phi, value, first in zip(phis, values, init):
            phi.add_incoming(first, skip_from)
            phi.add_incoming(value, exit_from)
        joined.append(phis)
    return joined


@lowers(scf.IfOp)
def lower_if(ctx, op):
    """`scf.if`: then/else blocks joined by phis of the yielded registers."""
    b = ctx.builder
    cond = ctx.get(op.operands[0])[0]
    then_bb = b.append_basic_block("if.then")
    else_bb = b.append_basic_block("if.else")
    merge = b.append_basic_block("if.end")
    b.cbranch(cond, then_bb, else_bb)
    incoming = []
    for region, bb in zip(op.regions, (then_bb, else_bb)):
        b.position_at_end(bb)
        block = region.blocks[0]
        ctx.lower_block(block)
        values = _flatten(ctx.get(v) for v in block.terminator.operands)
        incoming.append((values, b.block))
        b.branch(merge)
    b.position_at_end(merge)
    counts = [len(v) for v in (ctx.get(x) for x in op.regions[0].blocks[0].terminator.operands)]
    if counts:
        then_values, then_end = incoming[0]
        else_values, else_end = incoming[1]
        phis = _phis(b, then_values)
        for phi, t, e in zip(phis, then_values, else_values):
            phi.add_incoming(t, then_end)
            phi.add_incoming(e, else_end)
        for result, values in zip(op.results, _unflatten(phis, counts)):
            ctx.set(result, values)


@lowers(scf.WhileOp)
def lower_while(ctx, op):
    """`scf.while`: the before block (phis, condition) loops through the after block."""
    b = ctx.builder
    inits = [ctx.get(v) for v in op.operands]
    counts = [len(v) for v in inits]
    flat_inits = _flatten(inits)
    pre = b.block
    before_bb = b.append_basic_block("while.before")
    after_bb = b.append_basic_block("while.after")
    exit_ = b.append_basic_block("while.exit")
    b.branch(before_bb)
    b.position_at_end(before_bb)
    phis = _phis(b, flat_inits)
    for phi, init in zip(phis, flat_inits):
        phi.add_incoming(init, pre)
    before, after = op.regions[0].blocks[0], op.regions[1].blocks[0]
    for arg, values in zip(before.args, _unflatten(phis, counts)):
        ctx.set(arg, values)
    ctx.lower_block(before)
    condition = before.terminator
    cond = ctx.get(condition.operands[0])[0]
    forwarded = [ctx.get(v) for v in condition.operands[1:]]
    b.cbranch(cond, after_bb, exit_)
    b.position_at_end(after_bb)
    for arg, values in zip(after.args, forwarded):
        ctx.set(arg, values)
    ctx.lower_block(after)
    yielded = _flatten(ctx.get(v) for v in after.terminator.operands)
    if len(yielded) != len(phis):
        raise LoweringError("scf.while: the after region yields a different number of registers")
    end = b.block
    for phi, value in zip(phis, yielded):
        phi.add_incoming(value, end)
    b.branch(before_bb)
    b.position_at_end(exit_)
    for result, values in zip(op.results, forwarded):
        ctx.set(result, values)


@lowers(tt.ReturnOp)
def lower_return(ctx, op):
    """`tt.return` of a kernel: `ret void`."""
    if op.operands:
        raise LoweringError("kernels return nothing; device functions are inlined before "
                            "lowering")
    if not ctx.builder.block.is_terminated:
        ctx.builder.ret_void()
