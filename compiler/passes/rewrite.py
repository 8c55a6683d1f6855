"""Rewrite patterns and the greedy, worklist-driven driver that applies them (MLIR's
`applyPatternsGreedily`). Each pattern has a name; every time one fires the driver reports it
through `PassContext.record_pattern`, so a pass's record says which rewrites it made."""
from __future__ import annotations

from compiler.ir.core import Module, Operation, Value
from compiler.ir.traits import Trait

from .base import PassContext
from .ir_utils import is_removable_if_unused


class RewritePattern:
    """One rewrite. `roots` limits it to ops of those classes, or ops with those traits (empty:
    any op). `rewrite` returns True when it changed the IR, using only the `Rewriter`'s methods
    to do so."""

    name: str = ""
    roots: tuple = ()

    def rewrite(self, op: Operation, rewriter: "Rewriter") -> bool:
        raise NotImplementedError

    def matches(self, op_class: type[Operation]) -> bool:
        """Whether this pattern is tried on ops of `op_class` (a subclass of a root class, or
        a class with a root trait); worked out once per (roots, class)."""
        if not self.roots:
            return True
        key = (self.roots, op_class)
        found = _MATCHES.get(key)
        if found is None:
            classes = tuple(r for r in self.roots if not issubclass(r, Trait))
            traits = [r for r in self.roots if issubclass(r, Trait)]
            found = _MATCHES[key] = issubclass(op_class, classes) or \
                any(op_class.class_has_trait(t) for t in traits)
        return found


_MATCHES: dict[tuple, bool] = {}
"""(roots, op class) -> whether a pattern with those roots is tried on ops of that class."""


class Rewriter:
    """The driver's view of a change: every new, changed or erased op goes through here so the
    worklist stays right."""

    def __init__(self, worklist: "Worklist"):
        self.worklist = worklist

    def notify_new(self, op: Operation) -> Operation:
        """`op` (and what it nests) was just inserted: queue it for the patterns."""
        self.worklist.push_tree(op)
        return op

    def notify_changed(self, op: Operation) -> None:
        """`op` was changed in place: queue it and its users again."""
        self.worklist.push(op)
        self._push_users(op)

    def replace(self, op: Operation, values: list[Value]) -> None:
        """Replace `op`'s results with `values` and erase `op` (and what becomes dead)."""
        for result, new in zip(op.results, values):
            for user in result.users():
                self.worklist.push(user)
            result.replace_all_uses_with(new)
        self.erase(op)

    def erase(self, op: Operation) -> None:
        """Erase `op` (its results must be unused) and queue its operands' producers, which
        may have become dead."""
        operands = [v.owner_op for v in op.operands]
        for nested in op.walk():
            self.worklist.erased.add(nested)
        op.erase()
        for producer in operands:
            if producer is not None:
                self.worklist.push(producer)

    def _push_users(self, op: Operation) -> None:
        for r in op.results:
            for user in r.users():
                self.worklist.push(user)


class Worklist:
    """A LIFO of ops with membership tracking; erased ops are skipped when popped."""

    def __init__(self):
        self.items: list[Operation] = []
        self.members: set[Operation] = set()
        self.erased: set[Operation] = set()     # kept alive here, so never mistaken for new

    def push(self, op: Operation) -> None:
        """Queue `op` unless it is queued already or detached."""
        if op not in self.members and op.parent is not None:
            self.members.add(op)
            self.items.append(op)

    def push_tree(self, op: Operation) -> None:
        """Queue `op` and every op nested in it."""
        for nested in op.walk("post"):
            self.push(nested)

    def pop(self) -> Operation | None:
        """The next live op to visit, or None when the worklist is empty."""
        while self.items:
            op = self.items.pop()
            self.members.discard(op)
            if op not in self.erased and op.parent is not None:
                return op
        return None


def apply_patterns(module: Module, patterns: list[RewritePattern], ctx: PassContext,
                   erase_dead: bool = True, max_rewrites: int = 100_000) -> bool:
    """Apply `patterns` until none fires; returns whether anything changed. With `erase_dead`
    unused side-effect-free ops are erased as they are met (reported as `erase-dead-op`)."""
    by_class: dict[type, list[RewritePattern]] = {}
    rooted = [p for p in patterns if p.roots]
    generic = [p for p in patterns if not p.roots]

    def patterns_for(op_class: type) -> list[RewritePattern]:
        # rooted patterns first, then the generic ones, each group in the order given
        found = by_class.get(op_class)
        if found is None:
            found = by_class[op_class] = [p for p in rooted if p.matches(op_class)] + generic
        return found
    worklist = Worklist()
    # Pre-order pushed, so popping (LIFO) visits the last, innermost ops first.
    for op in module.walk("pre"):
        worklist.push(op)
    worklist.items.reverse()
    rewriter = Rewriter(worklist)
    changed = False
    rewrites = 0
    while (op := worklist.pop()) is not None:
        if erase_dead and op.results and not any(r.uses for r in op.results) \
                and is_removable_if_unused(op):
            rewriter.erase(op)
            ctx.record_pattern("erase-dead-op", op=op, source=f"{__name__}.apply_patterns")
            changed = True
            continue
        for pattern in patterns_for(type(op)):
            if pattern.rewrite(op, rewriter):
                cls = type(pattern)
                ctx.record_pattern(pattern.name, op=op,
                                   source=f"{cls.__module__}.{cls.__qualname__}")
                changed = True
                rewrites += 1
                if rewrites > max_rewrites:
                    raise RuntimeError(f"patterns did not converge after {max_rewrites} "
                                       f"rewrites (last: {pattern.name})")
                break
    return changed
