"""Axis info: what is known, per dim, about the integer and pointer values of a kernel.

For each value and each dim (as Triton's AxisInfo):
  contiguity[d]   the length of runs along d whose values go up by 1 (pointers: by 1 element);
  divisibility[d] the largest power of two dividing the first value of every such run
                  (pointers: the byte address, so a 16-aligned f32 pointer has divisibility 16);
  constancy[d]    the length of runs along d whose values are all equal.
Scalars are treated as 1-element tensors. Facts come from `tt.divisibility` argument
attributes, `tt.divisibility` / `tt.contiguity` op attributes (multiple_of, max_contiguous),
constants, make_range, splat/broadcast/expand_dims and integer arithmetic; loads, program ids
and anything else unknown give the pessimistic (1, 1, 1). `vector_width` turns this into the
number of elements one thread can move with a single (at most 16-byte) access.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import gcd

from compiler.dialects import arith, scf, tt, ttg
from compiler.dialects.tt import PointerType
from compiler.ir.attributes import DenseArrayAttr, DenseAttr, IntegerAttr
from compiler.ir.core import BlockArgument, Operation, Value
from compiler.ir.traits import Elementwise
from compiler.ir.types import FloatType, IntegerType, TensorType, Type

MAX_DIVISIBILITY = 1 << 30


def pow2_divisor(n: int) -> int:
    """The largest power of two dividing `n` (MAX_DIVISIBILITY for 0)."""
    if n == 0:
        return MAX_DIVISIBILITY
    return min(abs(n) & -abs(n), MAX_DIVISIBILITY)


def _shape(t: Type) -> tuple:
    return t.shape if isinstance(t, TensorType) else (1,)


@dataclass(frozen=True)
class AxisInfo:
    """Per-dim contiguity, divisibility and constancy of a value, and its value when constant."""

    contiguity: tuple
    divisibility: tuple
    constancy: tuple
    constant: int | None = None

    @property
    def rank(self) -> int:
        """Number of dims described (1 for scalars)."""
        return len(self.contiguity)

    @staticmethod
    def unknown(shape: tuple) -> "AxisInfo":
        """Nothing known: runs of length 1, divisible by 1."""
        ones = (1,) * len(shape)
        return AxisInfo(ones, ones, ones)

    @staticmethod
    def splat(shape: tuple, divisibility: int, constant: int | None = None) -> "AxisInfo":
        """The same value everywhere: constant along every dim."""
        return AxisInfo((1,) * len(shape), (divisibility,) * len(shape), tuple(shape), constant)

    def join(self, other: "AxisInfo") -> "AxisInfo":
        """What holds for a value that may be either (loop-carried values, scf.if results)."""
        const = self.constant if self.constant == other.constant else None
        return AxisInfo(tuple(map(gcd, self.contiguity, other.contiguity)),
                        tuple(map(gcd, self.divisibility, other.divisibility)),
                        tuple(map(gcd, self.constancy, other.constancy)), const)

    def element_divisibility(self) -> int:
        """A power of two dividing every element (not just run starts)."""
        div = MAX_DIVISIBILITY
        for c, d in zip(self.contiguity, self.divisibility):
            div = min(div, d if c == 1 else 1)
        return div


def _elem_bytes(t: Type) -> int:
    scalar = t.scalar
    if isinstance(scalar, PointerType):
        pointee = scalar.pointee
        width = pointee.width if isinstance(pointee, (IntegerType, FloatType)) else 64
        return max(width // 8, 1)
    return 1


def _cap(n: int) -> int:
    return max(1, min(n, MAX_DIVISIBILITY))


class _Analysis:
    """One walk over a function, computing AxisInfo for every value in program order."""

    def __init__(self):
        self.info: dict[Value, AxisInfo] = {}

    def get(self, v: Value) -> AxisInfo:
        found = self.info.get(v)
        if found is None:
            found = AxisInfo.unknown(_shape(v.type))
            self.info[v] = found
        return found

    # ---- walking -------------------------------------------------------------------------
    def function(self, func: Operation) -> None:
        for arg in func.regions[0].blocks[0].args:
            self.info[arg] = _argument_info(arg)
        self.block(func.regions[0].blocks[0])

    def block(self, block) -> None:
        for op in block.ops:
            self.op(op)

    def op(self, op: Operation) -> None:
        if isinstance(op, scf.ForOp):
            self._for(op)
            return
        if isinstance(op, scf.IfOp):
            for region in op.regions:
                self.block(region.blocks[0])
            yields = [region.blocks[0].terminator for region in op.regions]
            for i, r in enumerate(op.results):
                self.info[r] = self.get(yields[0].operands[i]).join(self.get(yields[1].operands[i]))
            return
        for region in op.regions:          # while loops, reduce/scan combiners: pessimistic
            for block in region.blocks:
                for arg in block.args:
                    self.info[arg] = AxisInfo.unknown(_shape(arg.type))
                self.block(block)
        for r in op.results:
            self.info[r] = _with_hints(op, r, self._rule(op, r))

    def _for(self, op: Operation) -> None:
        lb, ub, step, *inits = op.operands
        body = op.regions[0].blocks[0]
        iv_div = gcd(self.get(lb).divisibility[0], self.get(step).divisibility[0])
        self.info[body.args[0]] = AxisInfo((1,), (iv_div,), (1,))
        carried = [self.get(v) for v in inits]
        for _ in range(8):                  # fixed point over the loop-carried values
            for arg, info in zip(body.args[1:], carried):
                self.info[arg] = info
            self.block(body)
            yielded = [self.get(v) for v in body.terminator.operands]
            joined = [c.join(y) for c, y in zip(carried, yielded)]
            if joined == carried:
                break
            carried = joined
        for r, info in zip(op.results, carried):
            self.info[r] = info

    # ---- transfer rules --------------------------------------------------------------------
    def _rule(self, op: Operation, result: Value) -> AxisInfo:
        shape = _shape(result.type)
        ins = [self.get(v) for v in op.operands]
        rule = TRANSFER_RULES.get(type(op))
        if rule is not None:
            return rule(op, result, ins, shape)
        if op.has_trait(Elementwise) and op.operands:
            return _only_constancy(ins, shape, keep_div=False)
        return AxisInfo.unknown(shape)


# Transfer rules by op class: `rule(op, result, operand infos, result shape) -> AxisInfo`.
# Elementwise ops without a rule keep only constancy; every other op is unknown.
def _same_as_operand(op, result, ins, shape):
    return ins[0]


def _make_range_rule(op, result, ins, shape):
    return AxisInfo((shape[0],), (pow2_divisor(op.start),), (1,))


def _splat_rule(op, result, ins, shape):
    return AxisInfo.splat(shape, ins[0].divisibility[0], ins[0].constant)


def _trans_rule(op, result, ins, shape):
    src, order = ins[0], op.order
    return AxisInfo(tuple(src.contiguity[o] for o in order),
                    tuple(src.divisibility[o] for o in order),
                    tuple(src.constancy[o] for o in order), src.constant)


def _addptr_rule(op, result, ins, shape):
    scale = _elem_bytes(op.ptr.type)
    return _add(ins[0], _scale(ins[1], scale), subtract=False, pointer=True)


def _shli_rule(op, result, ins, shape):
    amount = ins[1].constant
    if amount is not None and 0 <= amount < 64:
        return _mul(ins[0], AxisInfo.splat(shape, pow2_divisor(1 << amount), 1 << amount))
    return _only_constancy(ins, shape, keep_div=False)


def _min_max_rule(op, result, ins, shape):
    return _only_constancy(ins, shape, keep_div=True)


def _bitwise_rule(op, result, ins, shape):
    return _only_constancy(ins, shape, keep_div=False)


_B = arith.BINARY_OPS
TRANSFER_RULES = {
    arith.ConstantOp: lambda op, result, ins, shape: _constant_info(op, shape),
    tt.MakeRangeOp: _make_range_rule,
    tt.SplatOp: _splat_rule,
    ttg.ConvertLayoutOp: _same_as_operand,
    arith.CAST_OPS["extsi"]: _same_as_operand,
    arith.CAST_OPS["extui"]: _same_as_operand,
    arith.CAST_OPS["index_cast"]: _same_as_operand,
    arith.CAST_OPS["trunci"]: lambda op, result, ins, shape: _truncate(ins[0],
                                                                     result.type.scalar.width),
    tt.BroadcastOp: lambda op, result, ins, shape: _broadcast(ins[0], _shape(op.src.type), shape),
    tt.ExpandDimsOp: lambda op, result, ins, shape: _expand_dims(ins[0], op.axis),
    tt.TransOp: _trans_rule,
    tt.AddPtrOp: _addptr_rule,
    _B["addi"]: lambda op, result, ins, shape: _add(ins[0], ins[1], subtract=False),
    _B["subi"]: lambda op, result, ins, shape: _add(ins[0], ins[1], subtract=True),
    _B["muli"]: lambda op, result, ins, shape: _mul(ins[0], ins[1]),
    _B["divsi"]: lambda op, result, ins, shape: _div(ins[0], ins[1]),
    _B["divui"]: lambda op, result, ins, shape: _div(ins[0], ins[1]),
    _B["remsi"]: lambda op, result, ins, shape: _rem(ins[0], ins[1]),
    _B["remui"]: lambda op, result, ins, shape: _rem(ins[0], ins[1]),
    _B["shli"]: _shli_rule,
    arith.CmpIOp: lambda op, result, ins, shape: _compare(ins[0], ins[1], op.predicate),
    arith.SelectOp: lambda op, result, ins, shape: _select(ins[0], ins[1], ins[2]),
    **{_B[n]: _min_max_rule for n in ("maxsi", "minsi", "maxui", "minui")},
    **{_B[n]: _bitwise_rule for n in ("andi", "ori", "xori", "shrsi", "shrui")},
}


def _argument_info(arg: BlockArgument) -> AxisInfo:
    """A kernel argument: unknown but for its `tt.divisibility` / `tt.contiguity` attributes
    (one integer for every dim, or a dense array with one entry per dim)."""
    shape = _shape(arg.type)
    return AxisInfo(_per_dim(arg.attributes.get("tt.contiguity"), shape),
                    _per_dim(arg.attributes.get("tt.divisibility"), shape), (1,) * len(shape))


def _per_dim(attr, shape: tuple) -> tuple:
    """An argument attribute's value for each dim (1s when absent or of another rank)."""
    if isinstance(attr, IntegerAttr):
        return (attr.value,) * len(shape)
    if isinstance(attr, DenseArrayAttr) and len(attr.values) == len(shape):
        return tuple(attr.values)
    return (1,) * len(shape)


def _with_hints(op: Operation, result: Value, info: AxisInfo) -> AxisInfo:
    """`tt.divisibility` / `tt.contiguity` on the defining op (multiple_of / max_contiguous)
    are promises from the user and override what was derived."""
    for key, field in (("tt.divisibility", "divisibility"), ("tt.contiguity", "contiguity"),
                       ("tt.constancy", "constancy")):
        hint = op.attributes.get(key)
        if isinstance(hint, DenseArrayAttr) and len(hint.values) == info.rank:
            info = _replace(info, field, tuple(hint.values))
        elif isinstance(hint, IntegerAttr):
            info = _replace(info, field, (hint.value,) * info.rank)
    return info


def _replace(info: AxisInfo, field: str, values: tuple) -> AxisInfo:
    parts = {"contiguity": info.contiguity, "divisibility": info.divisibility,
             "constancy": info.constancy}
    parts[field] = values
    return AxisInfo(parts["contiguity"], parts["divisibility"], parts["constancy"],
                    info.constant)


def _constant_info(op: Operation, shape: tuple) -> AxisInfo:
    attr = op.attributes["value"]
    if isinstance(attr, (IntegerAttr, DenseAttr)) and not isinstance(attr.value, float) \
            and isinstance(getattr(attr.type, "scalar", attr.type), IntegerType):
        value = int(attr.value)
        return AxisInfo.splat(shape, pow2_divisor(value), value)
    return AxisInfo.splat(shape, 1)


def _truncate(src: AxisInfo, width: int) -> AxisInfo:
    """Keeping the low `width` bits (as Triton, runs are assumed not to wrap around 2**width):
    runs and alignment stay; a constant stays only when it is representable."""
    fits = src.constant is not None and -(1 << (width - 1)) <= src.constant < (1 << width)
    return AxisInfo(src.contiguity, src.divisibility, src.constancy,
                    src.constant if fits else None)


def _broadcast(src: AxisInfo, src_shape: tuple, shape: tuple) -> AxisInfo:
    contig, div, const = [], [], []
    for d, (s, n) in enumerate(zip(src_shape, shape)):
        if s == 1 and n != 1:
            contig.append(1)
            div.append(src.divisibility[d])
            const.append(n)
        else:
            contig.append(src.contiguity[d])
            div.append(src.divisibility[d])
            const.append(src.constancy[d])
    return AxisInfo(tuple(contig), tuple(div), tuple(const), src.constant)


def _expand_dims(src: AxisInfo, axis: int) -> AxisInfo:
    contig, div, const = list(src.contiguity), list(src.divisibility), list(src.constancy)
    contig.insert(axis, 1)
    div.insert(axis, src.element_divisibility())
    const.insert(axis, 1)
    return AxisInfo(tuple(contig), tuple(div), tuple(const), src.constant)


def _run_div(info: AxisInfo, d: int, result_contiguity: int) -> int:
    """An operand's divisibility as it applies to the result's runs: the run-start value when
    the result keeps runs (contiguity > 1), else what divides every element."""
    if result_contiguity > 1 or info.contiguity[d] == 1:
        return info.divisibility[d]
    return 1


def _scale(info: AxisInfo, factor: int) -> AxisInfo:
    """An offset in elements as an offset in bytes (contiguity stays in elements)."""
    const = info.constant * factor if info.constant is not None else None
    return AxisInfo(info.contiguity, tuple(_cap(d * factor) for d in info.divisibility),
                    info.constancy, const)


def _add(a: AxisInfo, b: AxisInfo, subtract: bool, pointer: bool = False) -> AxisInfo:
    contig = tuple(max(gcd(ca, kb), gcd(ka, cb)) if not subtract else gcd(ca, kb)
                   for ca, cb, ka, kb in zip(a.contiguity, b.contiguity, a.constancy,
                                             b.constancy))
    div = tuple(gcd(_run_div(a, d, c), _run_div(b, d, c)) for d, c in enumerate(contig))
    const = tuple(map(gcd, a.constancy, b.constancy))
    value = None
    if a.constant is not None and b.constant is not None and not pointer:
        value = a.constant - b.constant if subtract else a.constant + b.constant
        div = tuple(pow2_divisor(value) for _ in div)
    return AxisInfo(contig, div, const, value)


def _mul(a: AxisInfo, b: AxisInfo) -> AxisInfo:
    contig = []
    for ca, cb in zip(a.contiguity, b.contiguity):
        if b.constant == 1:
            contig.append(ca)
        elif a.constant == 1:
            contig.append(cb)
        else:
            contig.append(1)
    div = tuple(_cap(_run_div(a, d, c) * _run_div(b, d, c)) for d, c in enumerate(contig))
    const = tuple(map(gcd, a.constancy, b.constancy))
    value = a.constant * b.constant if a.constant is not None and b.constant is not None else None
    if value is not None:
        div = tuple(pow2_divisor(value) for _ in div)
    return AxisInfo(tuple(contig), div, const, value)


def _div(a: AxisInfo, b: AxisInfo) -> AxisInfo:
    if b.constant == 1:
        return a
    const = list(map(gcd, a.constancy, b.constancy))
    div = [1] * a.rank
    c = b.constant
    if c is not None and c > 0 and c & (c - 1) == 0:
        for d in range(a.rank):
            if a.divisibility[d] % c == 0:
                # a run start + 0..n-1 with the start a multiple of c: quotient constant over c
                const[d] = max(const[d], gcd(a.contiguity[d], c))
                div[d] = max(a.divisibility[d] // c, 1) if a.contiguity[d] == 1 else 1
    value = None
    if a.constant is not None and c:
        value = int(a.constant / c) if (a.constant < 0) != (c < 0) else a.constant // c
        div = [pow2_divisor(value)] * a.rank
    return AxisInfo((1,) * a.rank, tuple(div), tuple(const), value)


def _rem(a: AxisInfo, b: AxisInfo) -> AxisInfo:
    contig, div = [], []
    for d in range(a.rank):
        # a run of a, starting at a multiple of `window`, cannot wrap around a multiple of b
        # (b constant over the run and divisible by `window`)
        window = gcd(gcd(a.contiguity[d], b.divisibility[d]),
                     gcd(a.divisibility[d], b.constancy[d]))
        contig.append(window if b.constant != 1 else 1)
        div.append(gcd(_run_div(a, d, contig[-1]), _run_div(b, d, contig[-1])))
    const = tuple(map(gcd, a.constancy, b.constancy))
    value = None
    if a.constant is not None and b.constant:
        value = abs(a.constant) % abs(b.constant) * (1 if a.constant >= 0 else -1)
    return AxisInfo(tuple(contig), tuple(div), const, value)


#: predicates `run OP bound` whose value can only change where the run reaches the bound
#: itself: with the run's first value and the bound multiples of g, every aligned block of g
#: consecutive values lies wholly below or wholly at-or-above the bound (`<=` and `>` change
#: one past it, inside a block). Keyed by which side holds the run.
_RUN_LEFT = ("slt", "ult", "sge", "uge")
_RUN_RIGHT = ("sgt", "ugt", "sle", "ule")


def _compare(a: AxisInfo, b: AxisInfo, predicate: str) -> AxisInfo:
    const = list(map(gcd, a.constancy, b.constancy))
    for d in range(a.rank):
        # a contiguous run compared with a value constant over it changes at most at a
        # multiple of the constant's divisibility
        for run, bound, sides in ((a, b, _RUN_LEFT), (b, a, _RUN_RIGHT)):
            if predicate in sides and run.contiguity[d] > 1 and bound.constancy[d] > 1:
                const[d] = max(const[d], gcd(gcd(run.contiguity[d], bound.divisibility[d]),
                                             gcd(run.divisibility[d], bound.constancy[d])))
    ones = (1,) * a.rank
    return AxisInfo(ones, ones, tuple(const))


def _select(cond: AxisInfo, a: AxisInfo, b: AxisInfo) -> AxisInfo:
    contig = tuple(gcd(gcd(ca, cb), kc) for ca, cb, kc in
                   zip(a.contiguity, b.contiguity, cond.constancy))
    div = tuple(map(gcd, a.divisibility, b.divisibility))
    const = tuple(gcd(gcd(ka, kb), kc) for ka, kb, kc in
                  zip(a.constancy, b.constancy, cond.constancy))
    return AxisInfo(contig, div, const)


def _only_constancy(ins: list, shape: tuple, keep_div: bool) -> AxisInfo:
    const = tuple(shape)
    div = (MAX_DIVISIBILITY,) * len(shape)
    for info in ins:
        if info.rank != len(shape):
            return AxisInfo.unknown(shape)
        const = tuple(map(gcd, const, info.constancy))
        div = tuple(map(gcd, div, info.divisibility))
    return AxisInfo((1,) * len(shape), div if keep_div else (1,) * len(shape), const)


def analyze(func_op: Operation) -> dict[Value, AxisInfo]:
    """AxisInfo for every value of a `tt.func` (arguments, results, loop-carried values)."""
    analysis = _Analysis()
    analysis.function(func_op)
    return analysis.info


def _order_and_size(layout, rank: int) -> tuple[tuple, tuple]:
    from compiler.analysis.layout_propagation import order_of, size_per_thread_of
    if layout is None:
        return tuple(reversed(range(rank))), (1,) * rank
    try:
        return order_of(layout), size_per_thread_of(layout)
    except TypeError:
        return tuple(reversed(range(rank))), (1,) * rank


def vector_width(ptr_value: Value, info, layout=None, mask: Value | None = None,
                 elem_bytes: int | None = None, along: tuple | None = None) -> int:
    """Elements one thread can load or store with one access through `ptr_value` in `layout`:
    a power of two, limited by the elements the thread holds contiguously along the layout's
    fastest dim, the pointers' contiguity and alignment there, 16 bytes per access, and (when
    given) the mask's constancy. `info` is `analyze`'s dict or the pointer's `AxisInfo`;
    `elem_bytes` defaults to the size of the pointee type; `along` = (dim, elements), when
    given, is the thread's contiguous run instead of the layout's fastest dim and
    sizePerThread there (the lowering reads it off the linear layout)."""
    t = ptr_value.type
    if not isinstance(t, TensorType):
        return 1
    # a value made after the analysis ran (by a rewrite) has no entry: nothing is known of it
    ptr_info = (info.get(ptr_value) or AxisInfo.unknown(t.shape)) if isinstance(info, dict) \
        else info
    if layout is None:
        layout = t.encoding
    if along is None:
        order, size = _order_and_size(layout, t.rank)
        along = order[0], size[order[0]]
    dim, run = along
    if elem_bytes is None:
        elem_bytes = _elem_bytes(t)
    width = min(run, ptr_info.contiguity[dim],
                max(ptr_info.divisibility[dim] // elem_bytes, 1), max(16 // elem_bytes, 1))
    if mask is not None and isinstance(info, dict) and mask in info:
        width = min(width, info[mask].constancy[dim])
    power = 1
    while power * 2 <= width:
        power *= 2
    return power
