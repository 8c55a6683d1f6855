"""A module's shape: a flat list of everything its printed text and its verification depend on.

Two states of one module with equal shapes print the same text and verify alike, so the shape
is what lets the pass instrumentation skip a print or a verification after a pass that changed
nothing, and lets the printer hand back its last print of an unchanged module. It costs about
an eighth of a print.
"""
from __future__ import annotations

from .core import Module


def module_shape(module: Module) -> list:
    """A flat list of everything the printed IR and the verifier depend on: ops (by identity)
    and their parent links, names, locations, operands, result types and names, attributes,
    blocks and their arguments, with counts that fix the nesting. Two equal lists print the
    same text and verify alike (types and attributes are immutable), so a pass whose list
    equals the one before it changed nothing: it needs no new print, and no new verification
    when the IR before it verified. The list holds the objects themselves (not ids), so nothing
    in it can be freed and its address reused while it is kept."""
    shape: list = [len(module.attributes), *module.attributes.items(), module.loc]
    add = shape.append
    extend = shape.extend

    def visit(ops) -> None:         # pre-order, as `module.walk()`, without nested generators
        for op in ops:
            extend((op, op.parent, op.name, op.loc, len(op.operands)))
            extend(op.operands)
            add(len(op.results))
            for r in op.results:
                extend((r.type, r.name_hint))
            add(len(op.attributes))
            extend(op.attributes.items())
            add(len(op.regions))
            for region in op.regions:
                add(len(region.blocks))
                for block in region.blocks:
                    extend((block, len(block.ops), len(block.args)))
                    for arg in block.args:
                        extend((arg, arg.type, arg.loc, len(arg.attributes)))
                        extend(arg.attributes.items())
            for region in op.regions:
                for block in region.blocks:
                    visit(block.ops)

    visit(module.body.ops)
    return shape


