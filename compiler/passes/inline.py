"""inline: replace tt.call of functions defined in the module by a copy of their body."""
from __future__ import annotations

from compiler.ir.attributes import BoolAttr
from compiler.dialects.tt import CallOp, FuncOp, ReturnOp
from compiler.ir.core import Module, Operation
from compiler.ir.location import CallSiteLoc

from .base import Pass, PassContext, register_pass
from .requirements import INLINED
from .dce import remove_unused_private_functions


def _callee(module: Module, call: Operation) -> Operation | None:
    func = module.lookup(call.attributes["callee"].name)
    if not isinstance(func, FuncOp) or len(func.regions[0].blocks) != 1:
        return None
    noinline = func.attributes.get("noinline")
    if isinstance(noinline, BoolAttr) and noinline.value:
        return None
    return func


def _calls_itself(module: Module, func: Operation, seen: frozenset = frozenset()) -> bool:
    """Whether `func` can reach itself through calls (such calls are left alone)."""
    name = func.attributes["sym_name"].value
    if name in seen:
        return True
    for op in func.walk():
        if isinstance(op, CallOp):
            callee = module.lookup(op.attributes["callee"].name)
            if callee is not None and _calls_itself(module, callee, seen | {name}):
                return True
    return False


def inline_call(call: Operation, func: Operation) -> None:
    """Clone `func`'s body in front of `call`, give the copies call-site locations, and replace
    the call's results by what the body returns."""
    body = func.regions[0].blocks[0]
    mapping = dict(zip(body.args, call.operands))
    returned = []
    for op in body.ops:
        if isinstance(op, ReturnOp):
            returned = [mapping.get(v, v) for v in op.operands]
            continue
        copy = op.clone(mapping)
        for nested in copy.walk():
            nested.loc = CallSiteLoc(nested.loc, call.loc)
        call.parent.insert_before(call, copy)
    call.replace_with(returned)


@register_pass
class Inline(Pass):
    """Inlines every tt.call of a function defined in this module (the @jit helpers a kernel
    calls), giving each copied op a call-site location (callee position, call position). It
    then deletes private functions no longer called, like MLIR's inliner with symbol DCE.
    Recursive functions and functions marked noinline stay calls."""

    name = "inline"
    stage = "ttir"
    establishes = (INLINED,)

    def run(self, module: Module, ctx: PassContext):
        while True:
            calls = [(op, _callee(module, op)) for op in module.walk() if isinstance(op, CallOp)]
            calls = [(c, f) for c, f in calls if f is not None and not _calls_itself(module, f)]
            if not calls:
                break
            for call, func in calls:
                inline_call(call, func)
                ctx.record_pattern("inline-call", op=call, source=f"{__name__}.inline_call")
        remove_unused_private_functions(module, ctx)
