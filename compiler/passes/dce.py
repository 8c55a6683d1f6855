"""dce: dead-code elimination: unused side-effect-free ops, unused loop-carried values and
private functions nobody calls."""
from __future__ import annotations

from compiler.dialects.scf import ForOp
from compiler.dialects.tt import CallOp
from compiler.ir.core import Module, Operation

from .base import Option, Pass, PassContext, register_pass
from .ir_utils import is_removable_if_unused, remove_block_argument


def erase_dead_ops(module: Module, ctx: PassContext) -> bool:
    """Erase unused ops without side effects until none is left; returns whether any went."""
    changed = False
    progress = True
    while progress:
        progress = False
        for op in list(module.walk("post")):
            if op.parent is None or not op.results or any(r.uses for r in op.results):
                continue
            if is_removable_if_unused(op):
                op.erase()
                ctx.record_pattern(f"erase {op.name}", op=op, source=f"{__name__}.erase_dead_ops")
                progress = changed = True
    return changed


def dead_iter_arg_slice(loop: ForOp, i: int) -> list[Operation] | None:
    """When the i-th loop-carried value is dead, the body ops that only compute it (in body
    order); None when it is live. Dead means: the loop's result is unused, and inside the body
    the value only flows, through side-effect-free ops of the body block, into its own yield
    slot."""
    if loop.results[i].uses:
        return None
    body = loop.body
    yield_op = body.terminator
    slice_ops: dict[int, Operation] = {}
    pending = [loop.iter_args[i]]
    while pending:
        value = pending.pop()
        for user, index in value.uses:
            if user is yield_op:
                if index != i:
                    return None
                continue
            if user.parent is not body or not is_removable_if_unused(user):
                return None
            if id(user) not in slice_ops:
                slice_ops[id(user)] = user
                pending.extend(user.results)
    return [op for op in body.ops if id(op) in slice_ops]


def drop_loop_carried(loop: ForOp, keep: list[int], dead_ops: list[Operation]) -> ForOp:
    """Rebuild `loop` carrying only the values at positions `keep` (erasing `dead_ops`, the
    body ops that computed the others); returns the new loop."""
    yield_op = loop.body.terminator
    yield_op.set_operands([yield_op.operands[i] for i in keep])
    for op in reversed(dead_ops):
        op.erase()
    for i in reversed(range(len(loop.iter_args))):
        if i not in keep:
            remove_block_argument(loop.body, i + 1)
    region = loop.regions.pop(0)
    operands = list(loop.operands[:3]) + [loop.operands[3 + i] for i in keep]
    new = ForOp(operands, [loop.results[i].type for i in keep], dict(loop.attributes),
                [region], loop.loc)
    loop.parent.insert_before(loop, new)
    for j, i in enumerate(keep):
        new.results[j].name_hint = loop.results[i].name_hint
        loop.results[i].replace_all_uses_with(new.results[j])
    loop.erase()
    return new


def remove_dead_loop_values(module: Module, ctx: PassContext) -> bool:
    """Drop dead loop-carried values from every scf.for; returns whether any went."""
    changed = False
    for op in list(module.walk("post")):
        if not isinstance(op, ForOp) or op.parent is None:
            continue
        slices = {i: dead_iter_arg_slice(op, i) for i in range(len(op.results))}
        dead = [i for i, ops in slices.items() if ops is not None]
        if dead:
            dead_ops = {id(o): o for i in dead for o in slices[i]}
            ordered = [o for o in op.body.ops if id(o) in dead_ops]
            drop_loop_carried(op, [i for i in range(len(op.results)) if i not in dead], ordered)
            ctx.record_pattern("drop-dead-iter-arg", len(dead))
            changed = True
    return changed


def remove_unused_private_functions(module: Module, ctx: PassContext) -> None:
    """SymbolDCE: drop private functions that no `tt.call` names."""
    while True:
        called = {op.attributes["callee"].name for op in module.walk() if isinstance(op, CallOp)}
        dead = [f for f in module.functions() if _is_private(f)
                and f.attributes["sym_name"].value not in called]
        if not dead:
            return
        for func in dead:
            func.erase()
            ctx.record_pattern("erase-unused-private-function")


def _is_private(func: Operation) -> bool:
    vis = func.attributes.get("sym_visibility")
    return vis is not None and vis.value == "private"


@register_pass
class DCE(Pass):
    """Deletes code whose results nobody uses and that has no side effects (stores, atomics,
    prints and calls always stay), loop-carried values of scf.for that only feed themselves,
    and private functions that are no longer called (what MLIR's symbol-dce does)."""

    name = "dce"
    stage = "ttir"
    options_spec = (Option("loop-values", bool, True, "also drop dead loop-carried values"),)

    def run(self, module: Module, ctx: PassContext):
        while True:
            changed = erase_dead_ops(module, ctx)
            if self.options["loop-values"]:
                changed |= remove_dead_loop_values(module, ctx)
            if not changed:
                break
        remove_unused_private_functions(module, ctx)
