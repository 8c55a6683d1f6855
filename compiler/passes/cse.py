"""cse: common-subexpression elimination over nested regions with scoped tables."""
from __future__ import annotations

from compiler.ir.core import Block, Module, Operation
from compiler.ir.traits import IsolatedFromAbove

from .base import Pass, PassContext, register_pass
from .ir_utils import is_pure


def _attr_key(op: Operation):
    try:
        key = tuple(sorted(op.attributes.items()))
        hash(key)
        return key
    except TypeError:
        return tuple(sorted((k, str(v)) for k, v in op.attributes.items()))


def op_key(op: Operation):
    """Two ops with equal keys compute the same values: same name, operands, attributes and
    result types (locations do not matter)."""
    return (op.name, tuple(op.operands), _attr_key(op),
            tuple(r.type for r in op.results))


@register_pass
class CSE(Pass):
    """Removes ops that recompute a value already available: a pure op with the same name,
    operands, attributes and types as one that dominates it is replaced by the earlier one.
    Scopes follow regions, so an op in a loop body or if arm reuses values defined outside it,
    never values from a sibling region. Memory reads and side effects are never merged."""

    name = "cse"
    stage = "ttir"

    def run(self, module: Module, ctx: PassContext):
        for func in module.ops:
            for region in func.regions:
                for block in region.blocks:
                    self._block(block, [{}], ctx)

    def _block(self, block: Block, scopes: list[dict], ctx: PassContext) -> None:
        scopes = scopes + [{}]
        for op in list(block.ops):
            if not op.regions and op.results and is_pure(op):
                key = op_key(op)
                existing = next((s[key] for s in reversed(scopes) if key in s), None)
                if existing is not None:
                    for old, new in zip(op.results, existing.results):
                        old.replace_all_uses_with(new)
                    op.erase()
                    ctx.record_pattern(f"merge {op.name}", op=op, source=f"{__name__}.CSE")
                    continue
                scopes[-1][key] = op
            for region in op.regions:
                nested = [{}] if op.has_trait(IsolatedFromAbove) else scopes
                for inner in region.blocks:
                    self._block(inner, nested, ctx)
