"""loop-unroll: unroll scf.for loops that ask for it (`tt.loop_unroll_factor`) or, when the
option is set, loops with a small constant trip count."""
from __future__ import annotations

from compiler.dialects.arith import BINARY_OPS
from compiler.dialects.scf import ForOp, YieldOp
from compiler.ir.attributes import IntegerAttr
from compiler.ir.core import Block, Module, Operation, Region, Value

from .base import Option, Pass, PassContext, register_pass
from .constant_folding import fold_binary
from .ir_utils import constant_value, insert_new, make_constant

UNROLL_ATTR = "tt.loop_unroll_factor"


IDENTITY = {"addi": 0, "subi": 0, "muli": 1, "divsi": 1}
COMMUTATIVE = ("addi", "muli")


def _as_value(x: Value | int, int_type, before: Operation) -> Value:
    return make_constant(x, int_type, before) if isinstance(x, int) else x


def _arith(name: str, a: Value | int, b: Value | int, before: Operation, int_type) -> Value | int:
    """`arith.<name>(a, b)` inserted before `before`. Operands may be Python ints; constants
    fold to a Python int, and x+0, x-0, x*1, x/1 give x, so the new bounds stay readable."""
    x = a if isinstance(a, int) else constant_value(a)
    y = b if isinstance(b, int) else constant_value(b)
    if x is not None and y is not None:
        folded = fold_binary(name, x, y, int_type)
        if folded is not None:
            return folded
    if y is not None and IDENTITY.get(name) == y:
        return a
    if name in COMMUTATIVE and x is not None and IDENTITY[name] == x:
        return b
    operands = [_as_value(a, int_type, before), _as_value(b, int_type, before)]
    return insert_new(BINARY_OPS[name], operands, [int_type], {}, before).result


def trip_count(loop: ForOp) -> int | None:
    """The number of iterations when lb, ub and step are constants."""
    lb, ub, step = (constant_value(v) for v in loop.operands[:3])
    if lb is None or ub is None or step is None or step <= 0:
        return None
    return max(0, -(-(ub - lb) // step))


def _emit_copies(loop: ForOp, ivs: list[Value], carried: list[Value], anchor: Operation,
                 insert) -> list[Value]:
    """Copy the loop body once per induction value in `ivs`, chaining the carried values;
    `insert(op)` places each copy. Returns the values the last copy yields."""
    body = loop.body
    for iv in ivs:
        mapping = {body.args[0]: iv}
        mapping.update(zip(body.args[1:], carried))
        for op in body.ops[:-1]:
            insert(op.clone(mapping))
        carried = [mapping.get(v, v) for v in body.terminator.operands]
    return carried


def full_unroll(loop: ForOp, trips: int) -> None:
    """Replace a loop of `trips` constant iterations by that many copies of its body."""
    lb, step = constant_value(loop.operands[0]), constant_value(loop.operands[2])
    ivs = [make_constant(lb + k * step, loop.operands[0].type, loop) for k in range(trips)]
    results = _emit_copies(loop, ivs, list(loop.init_args), loop,
                           lambda op: loop.parent.insert_before(loop, op))
    loop.replace_with(results)


def unroll_by_factor(loop: ForOp, factor: int) -> None:
    """Split `loop` into a main loop doing `factor` iterations per trip and the original loop
    as the remainder, starting where the main loop stops."""
    lb, ub, step = loop.operands[:3]
    int_type = lb.type

    def arith(name, a, b):
        return _arith(name, a, b, loop, int_type)

    def value(x):
        return _as_value(x, int_type, loop)

    # trips = max(ceil((ub - lb) / step), 0); the main loop covers trips rounded down to f.
    trips = arith("maxsi", arith("divsi", arith("addi", arith("subi", ub, lb),
                                                arith("subi", step, 1)), step), 0)
    main_ub = value(arith("addi", lb, arith("muli", arith("muli", arith("divsi", trips, factor),
                                                          factor), step)))
    big_step = value(arith("muli", step, factor))
    offsets = [None] + [value(arith("muli", step, k)) for k in range(1, factor)]

    block = Block([int_type] + [a.type for a in loop.iter_args])
    attrs = {k: v for k, v in loop.attributes.items() if k != UNROLL_ATTR}
    main = ForOp([lb, main_ub, big_step] + list(loop.init_args),
                 [r.type for r in loop.results], attrs, [Region([block])], loop.loc)
    loop.parent.insert_before(loop, main)
    iv = block.args[0]
    ivs = [iv]
    for off in offsets[1:]:
        ivs.append(block.append(BINARY_OPS["addi"]([iv, off], [int_type], {}, None,
                                                   loop.loc)).result)
    results = _emit_copies(loop, ivs, list(block.args[1:]), loop, block.append)
    block.append(YieldOp(results, [], {}, None, loop.body.terminator.loc))
    # The original loop becomes the remainder.
    loop.set_operand(0, main_ub)
    for i, r in enumerate(main.results):
        loop.set_operand(3 + i, r)
    loop.attributes.pop(UNROLL_ATTR, None)


@register_pass
class LoopUnroll(Pass):
    """Unrolls scf.for loops carrying a `tt.loop_unroll_factor` attribute (from
    tl.range(..., loop_unroll_factor=n)): the body is repeated n times per trip and a remainder
    loop finishes the odd iterations; a loop whose constant trip count is at most n is fully
    unrolled. With max-trip-count=N, loops of at most N constant trips (tl.static_range
    style) are fully unrolled too. Unrolling trades code size for fewer branches."""

    name = "loop-unroll"
    stage = "ttir"
    options_spec = (Option("max-trip-count", int, 0,
                           "fully unroll loops with at most this many constant trips",
                           check=lambda v: 0 <= v <= 4096, allowed="an integer from 0 to 4096"),)

    def run(self, module: Module, ctx: PassContext):
        for loop in list(module.walk("post")):
            if not isinstance(loop, ForOp) or loop.parent is None:
                continue
            attr = loop.attributes.get(UNROLL_ATTR)
            factor = attr.value if isinstance(attr, IntegerAttr) else 0
            trips = trip_count(loop)
            limit = self.options["max-trip-count"]
            if trips is not None and (0 < trips <= factor or (factor < 2 and trips <= limit)):
                ctx.record_pattern("full-unroll", op=loop, source=f"{__name__}.full_unroll")
                full_unroll(loop, trips)
            elif factor >= 2:
                ctx.record_pattern("unroll-by-factor", op=loop,
                                   source=f"{__name__}.unroll_by_factor")
                unroll_by_factor(loop, factor)
            elif attr is not None:
                loop.attributes.pop(UNROLL_ATTR)   # factor 1: nothing to do
