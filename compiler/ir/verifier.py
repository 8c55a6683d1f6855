"""The verifier: registration, operand/result counts, each op's `verify_op`, terminators and SSA
dominance, checked against the ops a `Context` knows.

An op verifier that trips over a malformed op (a missing attribute, a wrong attribute kind)
still ends in a `VerificationError` naming the op, never in an internal exception. When the
module was parsed from text, errors point at the op's line of that text (file:line:col, the line
and a caret); otherwise at the op's source location.
"""
from __future__ import annotations

from .attributes import BoolAttr, IntegerAttr
from .context import Context, resolve
from .core import Block, Module, Operation
from .traits import IsolatedFromAbove, Terminator
from .types import IntegerType, TensorType
from .verifier_errors import VerificationError

MAX_TENSOR_NUMEL = 1 << 20
"""Triton's limit on a tensor's element count (TRITON_MAX_TENSOR_NUMEL)."""

MALFORMED = (KeyError, IndexError, TypeError, ValueError, AttributeError, OverflowError,
             ZeroDivisionError, RecursionError)


def verify_module(module: Module, context: Context | None = None) -> None:
    """Raise `VerificationError` for the first broken invariant found in `module`."""
    ctx = resolve(context)
    try:
        for op in module.ops:
            if not ctx.is_module_level(op):
                raise VerificationError(op, "only functions may appear at module level")
            _verify_op_tree(ctx, op, visible=set())
        for check in ctx.module_checks():
            check(module)
    except VerificationError as err:
        raise err.located(getattr(module, "parsed_from", None)) from None


def _verify_op_tree(ctx: Context, op: Operation, visible: set) -> None:
    for index, v in enumerate(op.operands):
        if id(v) not in visible:
            raise VerificationError(op, f"operand #{index} ({v.type}) does not dominate this use "
                                        "(it is defined later, in another region, or erased)")
    if type(op) is Operation or ctx.lookup_op(op.name) is not type(op):
        raise VerificationError(op, f"unregistered operation '{op.name}'")
    _verify_counts(op)
    _verify_attribute_kinds(op)
    for r in op.results:
        _verify_tensor_shape(op, r.type)
    try:
        op.verify_op()
    except MALFORMED as err:
        what = f"missing attribute or field {err}" if isinstance(err, KeyError) else \
            f"{type(err).__name__}: {err}"
        raise VerificationError(op, f"malformed op ({what})") from None
    isolated = op.has_trait(IsolatedFromAbove)
    for region in op.regions:
        for block in region.blocks:
            _verify_block(ctx, op, block, set() if isolated else set(visible))


def _verify_counts(op: Operation) -> None:
    """The op's declared `operand_count` / `result_count` / `region_count`: an int or a
    (min, max) pair, max None for no upper bound."""
    for what, have in (("operand", len(op.operands)), ("result", len(op.results)),
                       ("region", len(op.regions))):
        want = getattr(op, f"{what}_count", None)
        if want is None:
            continue
        low, high = (want, want) if isinstance(want, int) else want
        if have < low or (high is not None and have > high):
            expected = str(low) if low == high else \
                f"{low} to {high}" if high is not None else f"at least {low}"
            raise VerificationError(op, f"expects {expected} {what}s, got {have}")


def _verify_tensor_shape(op: Operation, t) -> None:
    """Tensors have positive dims and at most `MAX_TENSOR_NUMEL` elements (Triton's limit)."""
    if not isinstance(t, TensorType):
        return
    if any(d < 1 for d in t.shape):
        raise VerificationError(op, f"tensor dims must be positive: {t}")
    if t.numel > MAX_TENSOR_NUMEL:
        raise VerificationError(op, f"{t} has {t.numel} elements, more than the "
                                    f"{MAX_TENSOR_NUMEL} a tensor may hold")


def _verify_attribute_kinds(op: Operation) -> None:
    """The attributes the op's class requires are present and of the right kind (an `i1`
    integer prints as `true`/`false` and so counts as a `BoolAttr`)."""
    for key, kinds in op.attribute_kinds.items():
        attr = op.attributes.get(key)
        if attr is None:
            raise VerificationError(op, f"needs the attribute '{key}'")
        as_bool = isinstance(attr, IntegerAttr) and attr.type == IntegerType(1)
        if not isinstance(attr, kinds) or (as_bool and not _allows(kinds, BoolAttr)):
            names = " or ".join(k.__name__ for k in (kinds if isinstance(kinds, tuple)
                                                     else (kinds,)))
            raise VerificationError(op, f"attribute '{key}' must be of kind {names}, "
                                        f"got {attr}")


def _allows(kinds, cls) -> bool:
    return cls in (kinds if isinstance(kinds, tuple) else (kinds,))


def _verify_block(ctx: Context, owner: Operation, block: Block, visible: set) -> None:
    for arg in block.args:
        _verify_tensor_shape(owner, arg.type)
        visible.add(id(arg))
    for i, op in enumerate(block.ops):
        if op.parent is not block:
            raise VerificationError(op, "op's parent link is broken")
        is_last = i == len(block.ops) - 1
        if op.has_trait(Terminator) and not is_last:
            raise VerificationError(op, "terminator must be the last op of its block")
        _verify_op_tree(ctx, op, visible)
        for r in op.results:
            visible.add(id(r))
    term = block.terminator
    if term is None or not term.has_trait(Terminator):
        raise VerificationError(owner, "a region's block must end in a terminator")
