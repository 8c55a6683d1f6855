"""The verifier: op invariants (each op's `verify_op`), terminators and SSA dominance."""
from __future__ import annotations

from .core import Block, Module, Operation
from .traits import IsolatedFromAbove, Terminator
from .verifier_errors import VerificationError

TERMINATED_REGION_OPS = {"tt.func", "scf.for", "scf.if", "scf.while", "tt.reduce", "tt.scan"}


def verify_module(module: Module) -> None:
    """Raise `VerificationError` for the first broken invariant found in `module`."""
    import compiler.dialects  # noqa: F401
    for op in module.ops:
        if op.name != "tt.func" and not op.name.startswith("llvm."):
            raise VerificationError(op, "only functions may appear at module level")
        _verify_op_tree(op, visible=set())


def _verify_op_tree(op: Operation, visible: set) -> None:
    for index, v in enumerate(op.operands):
        if id(v) not in visible:
            raise VerificationError(op, f"operand #{index} ({v.type}) does not dominate this use "
                                        "(it is defined later, in another region, or erased)")
    if op.name == "builtin.unregistered" or type(op) is Operation:
        raise VerificationError(op, f"unregistered operation '{op.name}'")
    op.verify_op()
    isolated = op.has_trait(IsolatedFromAbove)
    for region in op.regions:
        for block in region.blocks:
            _verify_block(op, block, set() if isolated else set(visible))


def _verify_block(owner: Operation, block: Block, visible: set) -> None:
    for arg in block.args:
        visible.add(id(arg))
    for i, op in enumerate(block.ops):
        if op.parent is not block:
            raise VerificationError(op, "op's parent link is broken")
        is_last = i == len(block.ops) - 1
        if op.has_trait(Terminator) and not is_last:
            raise VerificationError(op, "terminator must be the last op of its block")
        _verify_op_tree(op, visible)
        for r in op.results:
            visible.add(id(r))
    if owner.name in TERMINATED_REGION_OPS:
        term = block.terminator
        if term is None or not term.has_trait(Terminator):
            raise VerificationError(owner, "a region's block must end in a terminator")


