"""Semantics of ops with regions: scf.for / if / while, tt.call, tt.reduce and tt.scan.

These run nested blocks through the interpreter (`ctx.run_block`). Combine regions of
reductions and scans run once per tree level on whole arrays; a region that cannot (say, an
scf.if on a per-element condition) falls back to running per element.
"""
from __future__ import annotations

import numpy as np

from compiler.dialects import scf, tt

from .combine import elementwise, inclusive_scan, tree_reduce
from .errors import NotVectorizable, OpError
from .registry import semantics


def _scalar_condition(value) -> bool:
    """A control-flow condition as a Python bool; an array here means a vectorized region."""
    if isinstance(value, np.ndarray) and value.ndim > 0:
        raise NotVectorizable()
    return bool(value)


def _scalar_int(value) -> int:
    if isinstance(value, np.ndarray) and value.ndim > 0:
        raise NotVectorizable()
    return int(value)


@semantics(scf.ForOp)
def for_(ctx, op, values):
    """Run the body for iv = lb, lb + step, ... < ub (signed), threading the iter_args."""
    lb, ub, step = (_scalar_int(v) for v in values[:3])
    carried = list(values[3:])
    if step <= 0:
        raise OpError(f"scf.for needs a positive step, got {step}")
    iv_type = np.asarray(values[0]).dtype.type
    body = op.regions[0].blocks[0]
    for i in range(lb, ub, step):
        carried = ctx.run_block(body, [iv_type(i)] + carried)
    return carried


@semantics(scf.IfOp)
def if_(ctx, op, values):
    """Run the then or else region and return what its scf.yield yields."""
    region = op.regions[0] if _scalar_condition(values[0]) else op.regions[1]
    if not region.blocks:
        return []
    return ctx.run_block(region.blocks[0], [])


@semantics(scf.WhileOp)
def while_(ctx, op, values):
    """Run `before`; while its scf.condition is true, run `after` on the forwarded values."""
    before, after = op.regions[0].blocks[0], op.regions[1].blocks[0]
    carried = list(values)
    while True:
        condition, *forwarded = ctx.run_block(before, carried)
        if not _scalar_condition(condition):
            return forwarded
        carried = ctx.run_block(after, forwarded)


@semantics(tt.CallOp)
def call(ctx, op, values):
    """Run the callee (a tt.func of this module) in a fresh frame."""
    name = op.attributes["callee"].name
    callee = ctx.module.lookup(name)
    if not isinstance(callee, tt.FuncOp):
        raise OpError(f"calls @{name}, which is not a function of this module")
    return ctx.call(callee, values)


def _region_combine(ctx, op):
    """The combine region of a reduce/scan as a whole-array combine function."""
    block = op.regions[0].blocks[0]

    def vectorized(lhs: list, rhs: list) -> list:
        return ctx.run_block(block, lhs + rhs)

    per_element = elementwise(vectorized)

    def combine(lhs: list, rhs: list) -> list:
        try:
            return vectorized(lhs, rhs)
        except NotVectorizable:
            return per_element(lhs, rhs)

    return combine


@semantics(tt.ReduceOp)
def reduce_(ctx, op, values):
    """Reduce the operands along `axis` with the combine region (a pairwise tree)."""
    return tree_reduce(values, op.attributes["axis"].value, _region_combine(ctx, op))


@semantics(tt.ScanOp)
def scan(ctx, op, values):
    """Inclusive scan of the operands along `axis` with the combine region."""
    reverse = op.attributes.get("reverse")
    return inclusive_scan(values, op.attributes["axis"].value,
                          bool(reverse.value) if reverse is not None else False,
                          _region_combine(ctx, op))
