"""The verifier: registration, operand/result counts, each op's `verify_op`, terminators and SSA
dominance, checked against the ops a `Context` knows.

An op verifier that trips over a malformed op (a missing attribute, a wrong attribute kind)
still ends in a `VerificationError` naming the op, never in an internal exception. When the
module was parsed from text, errors point at the op's line of that text (file:line:col, the line
and a caret); otherwise at the op's source location.

It runs after every pass, so it is written for speed: what it checks of an op's class (counts,
attribute kinds, traits, whether the class has its own `verify_op`) is worked out once per class
(`_plan`), and values are tracked in sets by identity.
"""
from __future__ import annotations

import math
import sys

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
            _verify_op_tree(ctx, op, _plan(ctx, op), visible=set())
        for check in ctx.module_checks():
            check(module)
    except VerificationError as err:
        raise err.located(getattr(module, "parsed_from", None)) from None


def _verify_op_tree(ctx: Context, op: Operation, plan: "_Plan", visible: set) -> None:
    for index, v in enumerate(op.operands):
        if v not in visible:
            raise VerificationError(op, f"operand #{index} ({v.type}) does not dominate this use "
                                        "(it is defined later, in another region, or erased)")
    operands, results, regions = plan.counts
    if not operands[0] <= len(op.operands) <= operands[1] or \
            not results[0] <= len(op.results) <= results[1] or \
            not regions[0] <= len(op.regions) <= regions[1]:
        _count_error(op)
    if plan.kinds:
        _verify_attribute_kinds(op, plan.kinds)
    for r in op.results:
        if isinstance(r.type, TensorType):
            _verify_tensor_shape(op, r.type)
    if plan.has_verifier:
        try:
            op.verify_op()
        except MALFORMED as err:
            what = f"missing attribute or field {err}" if isinstance(err, KeyError) else \
                f"{type(err).__name__}: {err}"
            raise VerificationError(op, f"malformed op ({what})") from None
    for region in op.regions:
        for block in region.blocks:
            _verify_block(ctx, op, block, set() if plan.isolated else set(visible))


def _verify_block(ctx: Context, owner: Operation, block: Block, visible: set) -> None:
    for arg in block.args:
        if isinstance(arg.type, TensorType):
            _verify_tensor_shape(owner, arg.type)
        visible.add(arg)
    ops = block.ops
    last = len(ops) - 1
    for i, op in enumerate(ops):
        if op.parent is not block:
            raise VerificationError(op, "op's parent link is broken")
        plan = _plan(ctx, op)
        if plan.terminator and i != last:
            raise VerificationError(op, "terminator must be the last op of its block")
        _verify_op_tree(ctx, op, plan, visible)
        visible.update(op.results)
    if not ops or not _plan(ctx, ops[-1]).terminator:
        raise VerificationError(owner, "a region's block must end in a terminator")


class _Plan:
    """What the verifier checks of every op of one class, worked out once per class (and again
    when its declarations change): the `(low, high)` operand / result / region counts, the
    required attributes `(name, kinds, whether an i1 may stand for a bool)`, whether the class
    has its own `verify_op`, and its structural traits."""

    __slots__ = ("declared", "counts", "kinds", "has_verifier", "isolated", "terminator")

    def __init__(self, cls: type, declared: tuple):
        self.declared = declared
        self.counts = tuple(_bounds(want) for want in declared[:3])
        self.kinds = tuple((key, kinds, _allows(kinds, BoolAttr))
                           for key, kinds in cls.attribute_kinds.items())
        self.has_verifier = cls.verify_op is not Operation.verify_op
        self.isolated = cls.class_has_trait(IsolatedFromAbove)
        self.terminator = cls.class_has_trait(Terminator)


_PLANS: dict[type, _Plan] = {}


def _declared(cls: type) -> tuple:
    """The class attributes a plan is built from (compared to spot a change)."""
    return cls.operand_count, cls.result_count, cls.region_count, cls.attribute_kinds, \
        cls.verify_op, cls._trait_set


def _plan(ctx: Context, op: Operation) -> _Plan:
    """The verification plan of `op`'s class (cached; rebuilt when a declaration changed);
    an op whose class the context does not register is an error."""
    cls = type(op)
    if cls is Operation or ctx.ops.get(op.name) is not cls:
        raise VerificationError(op, f"unregistered operation '{op.name}'")
    plan = _PLANS.get(cls)
    declared = _declared(cls)
    if plan is None or plan.declared != declared:
        plan = _PLANS[cls] = _Plan(cls, declared)
    return plan


_NO_BOUND = (0, sys.maxsize)


def _bounds(want) -> tuple:
    """`(low, high)` of a count declaration: an int, or a (min, max) pair (max None: no bound);
    no declaration is no bound."""
    if want is None:
        return _NO_BOUND
    low, high = (want, want) if isinstance(want, int) else want
    return low, sys.maxsize if high is None else high


def _count_error(op: Operation) -> None:
    """Raise for the first of the op's declared `operand_count` / `result_count` /
    `region_count` (an int or a (min, max) pair, max None for no upper bound) it breaks."""
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


def _verify_tensor_shape(op: Operation, t: TensorType) -> None:
    """Tensors have positive dims and at most `MAX_TENSOR_NUMEL` elements (Triton's limit)."""
    shape = t.shape
    if not shape:
        return
    if min(shape) < 1:
        raise VerificationError(op, f"tensor dims must be positive: {t}")
    if math.prod(shape) > MAX_TENSOR_NUMEL:
        raise VerificationError(op, f"{t} has {t.numel} elements, more than the "
                                    f"{MAX_TENSOR_NUMEL} a tensor may hold")


def _verify_attribute_kinds(op: Operation, kinds_plan: tuple) -> None:
    """The attributes the op's class requires are present and of the right kind (an `i1`
    integer prints as `true`/`false` and so counts as a `BoolAttr`)."""
    attributes = op.attributes
    for key, kinds, bool_allowed in kinds_plan:
        attr = attributes.get(key)
        if attr is None:
            raise VerificationError(op, f"needs the attribute '{key}'")
        as_bool = isinstance(attr, IntegerAttr) and attr.type == _I1
        if not isinstance(attr, kinds) or (as_bool and not bool_allowed):
            names = " or ".join(k.__name__ for k in (kinds if isinstance(kinds, tuple)
                                                     else (kinds,)))
            raise VerificationError(op, f"attribute '{key}' must be of kind {names}, "
                                        f"got {attr}")


_I1 = IntegerType(1)


def _allows(kinds, cls) -> bool:
    return cls in (kinds if isinstance(kinds, tuple) else (kinds,))
