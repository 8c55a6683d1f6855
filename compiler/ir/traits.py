"""Op traits: what passes, analyses, lowering and the interpreter may assume about an op, as
classes (MLIR's `OpTrait`s, xDSL's `OpTrait` subclasses), declared once on the op class.

An op class lists its traits as classes (`traits = (Pure, Elementwise)`); `op.has_trait(Pure)`
asks for one. A trait may refine another (`ConstantLike` is `Pure`), so asking for the parent
finds the child too. Traits carry no state; they name a property, documented here, that the
rest of the compiler relies on instead of an op-name table.
"""
from __future__ import annotations


class Trait:
    """Base class of every op trait; subclass it to name a new property."""


# ---- effects -------------------------------------------------------------------------------------
class Pure(Trait):
    """No side effects and no memory access: an unused result can go, equal ops can merge
    (CSE), and the op may move across anything (LICM hoists it)."""


class ConstantLike(Pure):
    """Produces a value known at compile time from its attributes alone (`arith.constant`)."""


class MemoryRead(Trait):
    """Reads memory (global or shared): it must stay after writes that may alias it."""


class MemoryWrite(Trait):
    """Writes memory or has another visible effect (printing, barriers): never removed, never
    reordered across other memory ops."""


class CallLike(Trait):
    """Calls a function whose effects are unknown here (`tt.call`)."""


class MayNotTerminate(Trait):
    """May run forever (`scf.while`): a side effect for dead-code elimination."""


# ---- elementwise algebra -------------------------------------------------------------------------
class Elementwise(Trait):
    """Applies one scalar function element by element: every tensor operand and result has the
    same shape and layout, so a layout can pass through it in either direction."""


class Commutative(Trait):
    """A binary op whose two operands may be swapped."""


class Cast(Trait):
    """An elementwise type conversion (`arith.extf`, `arith.trunci`, ...)."""


class SameOperandsAndResultType(Trait):
    """Every operand and result has one type."""


class SameOperandsAndResultShape(Trait):
    """Every operand and result has one shape."""


class SameOperandsAndResultLayout(Trait):
    """The op's tensor results have the layout of its tensor operands (elementwise ops,
    broadcasts, scans): layout propagation passes straight through it."""


# ---- layouts -------------------------------------------------------------------------------------
class LayoutAnchor(Trait):
    """The op's layout is chosen for it (coalescing picks loads' and stores' layouts, tensor
    cores pick dot's): layout propagation starts from it and does not change it."""


class LayoutBarrier(Trait):
    """Never takes a propagated layout: it fixes its own (loads, stores, dots, atomics) or its
    operands cross a region boundary (yields, loops, calls, returns)."""


class LayoutExchange(Trait):
    """Moves elements between threads (through shared memory), so its result may take any
    layout whatever its operand's (reshape, trans)."""


class LayoutLeaf(Trait):
    """Cheap to rebuild in any layout from scalars (splat, make_range, constants): backward
    rematerialization stops here and builds a copy in the wanted layout."""


class SharedMemoryScratch(Trait):
    """May need scratch shared memory while it runs (conversions, transposes, cross-warp
    reductions, scalar atomics); the allocator asks `scratch_bytes` about it."""


# ---- structure -----------------------------------------------------------------------------------
class Terminator(Trait):
    """Ends a block: it must be the block's last op, and passes never move or remove it."""


class NoTerminator(Trait):
    """The op's regions' blocks need not end in a terminator."""


class IsolatedFromAbove(Trait):
    """The op's regions use no value defined outside it (functions); CSE and LICM stop here."""


class Symbol(Trait):
    """Defines a symbol (`sym_name`) that other ops refer to by name (functions)."""


class FunctionLike(Symbol, IsolatedFromAbove):
    """A function: a symbol with one isolated body region whose entry block holds the arguments."""


class ReturnLike(Terminator):
    """Ends a function, returning its operands (`tt.return`)."""


class LoopLike(Trait):
    """A loop whose body region runs repeatedly (`scf.for`, `scf.while`)."""


class HasCombineRegion(Trait):
    """Carries a combine region that the op applies to pairs of elements (reduce, scan)."""


def trait_closure(traits) -> frozenset:
    """Every trait class `traits` declares, with the traits each one refines."""
    closure = set()
    for trait in traits:
        if not (isinstance(trait, type) and issubclass(trait, Trait)):
            raise TypeError(f"an op trait must be a Trait subclass, got {trait!r}")
        closure.update(t for t in trait.__mro__ if isinstance(t, type) and issubclass(t, Trait)
                       and t is not Trait)
    return frozenset(closure)
