"""Flattening of a loop nest that asks for it (`tl.range(..., flatten=True)`, the `tt.flatten`
attribute): `for i: for j: body` becomes one loop over i * j iterations, which the software
pipeliner can then treat as one long loop (Triton's fuse-nested-loops does this before it
pipelines). Run by the `pipeline` pass before it pipelines.

Only perfect nests are flattened: the outer loop's body is the inner loop and the yield, after
side-effect-free ops (what LICM hoisted out of the inner loop, say `arange * i`; they are
recomputed in every iteration of the flat loop), the inner bounds do not depend on the outer
loop, and the values the outer loop carries are the ones the inner loop carries (outer
iter_args feed the inner inits, the inner results are what the outer loop yields). Other nests
keep their shape; `tt.flatten` is then only a hint.
"""
from __future__ import annotations

from compiler.dialects.arith import BINARY_OPS
from compiler.dialects.scf import ForOp, YieldOp
from compiler.ir.core import Block, Region

from .base import PassContext
from .ir_utils import defined_outside, insert_new, is_pure, make_constant

FLATTEN_ATTR = "tt.flatten"


def _perfect_inner(outer: ForOp) -> ForOp | None:
    """The inner loop of a flattenable nest, or None."""
    ops = outer.body.ops
    if len(ops) < 2 or not isinstance(ops[-2], ForOp) or not isinstance(ops[-1], YieldOp):
        return None
    inner, yield_op = ops[-2:]
    if not all(is_pure(op) and not op.regions for op in ops[:-2]):
        return None                    # only side-effect-free ops may be recomputed
    if not all(defined_outside(v, outer) for v in inner.operands[:3]):
        return None
    if list(inner.init_args) != list(outer.iter_args):
        return None
    if list(yield_op.operands) != list(inner.results):
        return None
    return inner


def _binary(name: str, a, b, before):
    return insert_new(BINARY_OPS[name], [a, b], [a.type], {}, before).results[0]


def _trip_count(loop: ForOp, before):
    """max(ceildiv(ub - lb, step), 0), inserted before `before` (steps are positive)."""
    lb, ub, step = loop.operands[:3]
    count = _binary("ceildivsi", _binary("subi", ub, lb, before), step, before)
    return _binary("maxsi", count, make_constant(0, lb.type, before), before)


def flatten_loop(outer: ForOp, inner: ForOp) -> ForOp:
    """Replace the nest `outer { inner }` by one loop over t in [0, n_outer * n_inner): i is
    lb + (t / n_inner) * step of the outer loop, j likewise with t % n_inner."""
    ty = outer.operands[0].type
    n_inner = _trip_count(inner, outer)
    total = _binary("muli", _trip_count(outer, outer), n_inner, outer)
    zero, one = make_constant(0, ty, outer), make_constant(1, ty, outer)
    body = Block([ty] + [a.type for a in outer.iter_args])
    attrs = {k: v for k, v in outer.attributes.items() if k != FLATTEN_ATTR}
    fused = ForOp([zero, total, one] + list(outer.init_args), [r.type for r in outer.results],
                  attrs, [Region([body])], outer.loc)
    outer.parent.insert_before(outer, fused)
    anchor = body.append(YieldOp([], [], {}, None, outer.loc))     # a place to insert before
    t = body.args[0]
    ivs = []
    for loop, index in ((outer, _binary("divsi", t, n_inner, anchor)),
                        (inner, _binary("remsi", t, n_inner, anchor))):
        lb, _, step = loop.operands[:3]
        ivs.append(_binary("addi", lb, _binary("muli", index, step, anchor), anchor))
    anchor.erase()
    mapping = {outer.induction_var: ivs[0], inner.induction_var: ivs[1]}
    for old_outer, old_inner, new in zip(outer.iter_args, inner.iter_args, body.args[1:]):
        mapping[old_outer] = new
        mapping[old_inner] = new
    for op in outer.body.ops[:-2] + inner.body.ops:
        body.append(op.clone(mapping))
    outer.replace_with(list(fused.results))
    return fused


def flatten_loop_nests(func, ctx: PassContext) -> None:
    """Flatten every perfect nest whose outer loop carries `tt.flatten` (innermost first)."""
    for outer in [op for op in func.walk() if isinstance(op, ForOp)][::-1]:
        if FLATTEN_ATTR not in outer.attributes:
            continue
        inner = _perfect_inner(outer)
        if inner is None:
            continue
        flatten_loop(outer, inner)
        ctx.record_pattern("flatten a tt.flatten loop nest")
