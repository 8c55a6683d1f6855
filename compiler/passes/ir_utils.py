"""Helpers the ttir passes share: constants, side effects, loop membership, op creation."""
from __future__ import annotations

from compiler.dialects.tt import ElementwiseInlineAsmOp
from compiler.ir.attributes import BoolAttr, DenseAttr, FloatAttr, IntegerAttr
from compiler.ir.core import Block, BlockArgument, Operation, Value
from compiler.ir.location import Location
from compiler.ir.traits import (CallLike, ConstantLike, MayNotTerminate, MemoryRead, MemoryWrite,
                                Symbol, Terminator)
from compiler.ir.types import TensorType, Type

EFFECT_TRAITS = (MemoryWrite, CallLike, MayNotTerminate)


def constant_value(value: Value):
    """The Python number `value` always holds (a scalar or splat `arith.constant`), else None."""
    op = value.owner_op
    if op is None or not op.has_trait(ConstantLike):
        return None
    attr = op.attributes.get("value")
    if isinstance(attr, (IntegerAttr, FloatAttr, DenseAttr)):
        return attr.value
    return None


def is_constant(value: Value, number) -> bool:
    """Whether `value` is a constant equal to `number` (bools compare as 0/1)."""
    held = constant_value(value)
    return held is not None and not isinstance(held, str) and held == number


def constant_attr(number, type_: Type):
    """The attribute an `arith.constant` of `type_` holding `number` needs."""
    if isinstance(type_, TensorType):
        return DenseAttr(number, type_)
    if type_.is_float:
        return FloatAttr(float(number), type_)
    return IntegerAttr(int(number), type_)


def make_constant(number, type_: Type, before: Operation, loc: Location | None = None) -> Value:
    """Insert an `arith.constant` of `type_` holding `number` just before `before`."""
    from compiler.dialects.arith import ConstantOp
    op = ConstantOp([], [type_], {"value": constant_attr(number, type_)}, None,
                    before.loc if loc is None else loc)
    before.parent.insert_before(before, op)
    return op.result


def insert_new(cls, operands, result_types, attributes, before: Operation,
               loc: Location | None = None) -> Operation:
    """Create an op of class `cls` just before `before` (with `before`'s location by default)."""
    op = cls(list(operands), list(result_types), dict(attributes or {}), None,
             before.loc if loc is None else loc)
    before.parent.insert_before(before, op)
    return op


def is_volatile(op: Operation) -> bool:
    """A load marked `isVolatile = true` (it must happen even when unused)."""
    attr = op.attributes.get("isVolatile")
    return isinstance(attr, BoolAttr) and attr.value


def has_side_effects(op: Operation) -> bool:
    """Whether `op` (or an op nested in it) writes memory, calls, prints or may not terminate.
    Reads alone are not side effects: an unused load can go."""
    for nested in (op.walk() if op.regions else (op,)):
        effects, reads = _class_effects(type(nested))
        if effects or (reads and is_volatile(nested)):
            return True
        if isinstance(nested, ElementwiseInlineAsmOp) and not nested.pure:
            return True             # user PTX not declared pure (a timer read, a store)
    return False


def reads_memory(op: Operation) -> bool:
    """Whether `op` or an op nested in it reads memory."""
    return any(_class_effects(type(nested))[1]
               for nested in (op.walk() if op.regions else (op,)))


def _class_effects(cls: type) -> tuple[bool, bool]:
    """(side effects, reads memory) of ops of class `cls`, from its traits (an unregistered op,
    of which nothing is known, has side effects); worked out once per class."""
    found = _EFFECTS.get(cls)
    if found is None:
        effects = cls is Operation or any(cls.class_has_trait(t) for t in EFFECT_TRAITS)
        found = _EFFECTS[cls] = (effects, cls.class_has_trait(MemoryRead))
    return found


_EFFECTS: dict[type, tuple[bool, bool]] = {}


def is_removable_if_unused(op: Operation) -> bool:
    """An op whose results are all unused may be erased when it has no side effects and is
    not a terminator or symbol (function)."""
    if op.has_trait(Terminator) or op.has_trait(Symbol):
        return False
    return not has_side_effects(op)


def is_pure(op: Operation) -> bool:
    """Pure in the CSE / hoisting sense: no side effects and no memory reads."""
    return not has_side_effects(op) and not reads_memory(op)


def defined_outside(value: Value, region_op: Operation) -> bool:
    """Whether `value` is defined outside `region_op` (so it is invariant in its regions)."""
    if isinstance(value, BlockArgument):
        owner = value.block.parent_op
        return owner is None or not region_op.is_ancestor_of(owner)
    return not region_op.is_ancestor_of(value.owner_op)


def remove_block_argument(block: Block, index: int) -> None:
    """Delete the (unused) `index`-th argument of `block`, renumbering the rest."""
    arg = block.args.pop(index)
    if arg.uses:
        raise ValueError("cannot remove a block argument that is still used")
    for i, a in enumerate(block.args):
        a.index = i

