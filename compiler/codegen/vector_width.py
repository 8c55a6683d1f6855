"""How many elements one load/store instruction may move: the single place the lowering asks.

A conservative axis analysis of its own (contiguity, divisibility, constancy per dim, Triton's
rules for the ops that matter: arguments with `tt.divisibility`, constants, make_range, splat,
broadcast, expand_dims, add/sub/mul, addptr, comparisons and logic on masks, convert_layout).
The project's axis analysis (`compiler.analysis.axis_info`) answers first when it is present;
this one is the fallback (and a cross-check in the tests), so the lowering never depends on it.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import gcd

from compiler.analysis.layouts import root_blocked, root_dims
from compiler.dialects.ttg import DotOperandEncoding
from compiler.ir.attributes import DenseArrayAttr, DenseAttr, IntegerAttr
from compiler.ir.types import PointerType, TensorType, shape_of

MAX_DIV = 1 << 30


@dataclass(frozen=True)
class Info:
    """Per dim: contiguity, divisibility (in elements; bytes for pointers), constancy."""

    contiguity: tuple
    divisibility: tuple
    constancy: tuple


def _pow2_divisor(n: int) -> int:
    n = abs(int(n))
    return MAX_DIV if n == 0 else min(MAX_DIV, n & -n)


def _dims(value) -> tuple:
    shape = shape_of(value.type)
    return shape if shape else (1,)


def _unknown(value) -> Info:
    r = len(_dims(value))
    return Info((1,) * r, (1,) * r, (1,) * r)


def _attr_seed(op_or_arg, info: Info) -> Info:
    """Apply `tt.divisibility` / `tt.contiguity` attributes (multiple_of / max_contiguous)."""
    attrs = op_or_arg.attributes
    div = attrs.get("tt.divisibility")
    cont = attrs.get("tt.contiguity")
    if div is not None:
        vals = div.values if isinstance(div, DenseArrayAttr) else (div.value,) * len(info.divisibility)
        info = Info(info.contiguity, tuple(max(a, b) for a, b in zip(info.divisibility, vals)),
                    info.constancy)
    if cont is not None:
        vals = cont.values if isinstance(cont, DenseArrayAttr) else (cont.value,) * len(info.contiguity)
        info = Info(tuple(max(a, b) for a, b in zip(info.contiguity, vals)), info.divisibility,
                    info.constancy)
    return info


class AxisAnalysis:
    """Axis information of every value of one function (values without a rule: all 1)."""

    def __init__(self, func_op):
        self.info: dict[int, Info] = {}
        for arg in func_op.body.args:
            self.info[id(arg)] = _attr_seed(arg, _unknown(arg))
        for op in func_op.walk():
            if op is func_op:
                continue
            for region in op.regions:
                for block in region.blocks:
                    for arg in block.args:
                        self.info.setdefault(id(arg), _unknown(arg))
            if len(op.results) == 1:
                try:
                    info = self._visit(op)
                except (KeyError, AttributeError, TypeError, ValueError):
                    info = None
                info = info or _unknown(op.results[0])
                self.info[id(op.results[0])] = _attr_seed(op, info)
            else:
                for r in op.results:
                    self.info[id(r)] = _unknown(r)

    def get(self, value) -> Info:
        return self.info.get(id(value)) or _unknown(value)

    def _visit(self, op):
        name = op.name
        res = op.results[0]
        shape = _dims(res)
        rank = len(shape)
        if name == "arith.constant":
            attr = op.attributes["value"]
            if isinstance(attr, (IntegerAttr, DenseAttr)) and not isinstance(attr.value, float):
                d = _pow2_divisor(attr.value)
                return Info((1,) * rank, (d,) * rank, shape)
            return Info((1,) * rank, (1,) * rank, shape)
        if name in ("tt.get_program_id", "tt.get_num_programs"):
            return Info((1,), (1,), (1,))
        if name == "tt.make_range":
            start = op.attributes["start"].value
            end = op.attributes["end"].value
            return Info((end - start,), (_pow2_divisor(start),), (1,))
        ops = [self.get(v) for v in op.operands]
        if name == "tt.splat":
            return Info((1,) * rank, (ops[0].divisibility[0],) * rank, shape)
        if name in ("ttg.convert_layout", "arith.extsi", "arith.extui", "arith.trunci",
                    "arith.index_cast"):
            return ops[0]
        if name == "tt.broadcast":
            src = shape_of(op.operands[0].type)
            a = ops[0]
            return Info(tuple(1 if s == 1 and t > 1 else c for s, t, c in zip(src, shape, a.contiguity)),
                        a.divisibility,
                        tuple(t if s == 1 else c for s, t, c in zip(src, shape, a.constancy)))
        if name == "tt.expand_dims":
            axis = op.attributes["axis"].value
            a = ops[0]
            ins = lambda t, v: t[:axis] + (v,) + t[axis:]  # noqa: E731
            return Info(ins(a.contiguity, 1), ins(a.divisibility, a.divisibility[0]),
                        ins(a.constancy, 1))
        if name in ("arith.addi", "tt.addptr", "arith.subi"):
            a, b = ops
            scale = 1
            if name == "tt.addptr":
                pointee = op.operands[0].type.scalar.pointee
                scale = max(1, getattr(pointee, "width", 64) // 8)
            contig = []
            for d in range(rank):
                c = max(gcd(a.contiguity[d], b.constancy[d]),
                        gcd(a.constancy[d], b.contiguity[d]) if name != "arith.subi" else 1)
                contig.append(c)
            div = tuple(gcd(x, min(MAX_DIV, y * scale)) for x, y in zip(a.divisibility, b.divisibility))
            const = tuple(gcd(x, y) for x, y in zip(a.constancy, b.constancy))
            return Info(tuple(contig), div, const)
        if name == "arith.muli":
            a, b = ops
            div = tuple(min(MAX_DIV, x * y) for x, y in zip(a.divisibility, b.divisibility))
            const = tuple(gcd(x, y) for x, y in zip(a.constancy, b.constancy))
            return Info((1,) * rank, div, const)
        if name == "arith.cmpi":
            a, b = ops
            const = []
            for d in range(rank):
                c = gcd(a.constancy[d], b.constancy[d])
                if b.constancy[d] == shape[d]:
                    c = max(c, gcd(a.contiguity[d], gcd(a.divisibility[d], b.divisibility[d])))
                if a.constancy[d] == shape[d]:
                    c = max(c, gcd(b.contiguity[d], gcd(a.divisibility[d], b.divisibility[d])))
                const.append(c)
            return Info((1,) * rank, (1,) * rank, tuple(const))
        if name in ("arith.andi", "arith.ori", "arith.xori", "arith.select"):
            const = ops[0].constancy
            for o in ops[1:]:
                const = tuple(gcd(x, y) for x, y in zip(const, o.constancy))
            return Info((1,) * rank, (1,) * rank, const)
        return None


@dataclass
class Analyses:
    """The axis information of one kernel: the project's analysis (None when unavailable) and
    the built-in fallback."""

    project: dict | None
    fallback: AxisAnalysis

    def get(self, value) -> Info:
        return self.fallback.get(value)


def analyze(func_op) -> Analyses:
    """The axis information of a kernel (computed once per lowering)."""
    project = None
    try:
        from compiler.analysis import axis_info
        project = axis_info.analyze(func_op)
    except Exception:  # noqa: BLE001  (absent or failing: the fallback answers alone)
        project = None
    return Analyses(project, AxisAnalysis(func_op))


def _project_width(analyses: Analyses, ptr_value, mask_value):
    if analyses.project is None:
        return None
    try:
        from compiler.analysis import axis_info
        return int(axis_info.vector_width(ptr_value, analyses.project, None, mask_value))
    except Exception:  # noqa: BLE001
        return None


def fallback_width(analysis: AxisAnalysis, ptr_value, mask_value, elem_bytes: int) -> int:
    """The built-in analysis's answer (see `vector_width`)."""
    t = ptr_value.type
    if not isinstance(t, TensorType) or isinstance(t.encoding, DotOperandEncoding):
        return 1
    layout = t.encoding
    root = root_blocked(layout)
    fast = root.order[0]
    dims = root_dims(layout)
    if fast not in dims:
        return 1
    dim = dims.index(fast)
    info = analysis.get(ptr_value)
    width = min(root.size_per_thread[fast], t.shape[dim], info.contiguity[dim],
                max(1, info.divisibility[dim] // elem_bytes), max(1, 16 // elem_bytes))
    if mask_value is not None and isinstance(mask_value.type, TensorType):
        width = min(width, analysis.get(mask_value).constancy[dim])
    width = max(1, width)
    return 1 << (width.bit_length() - 1)


def vector_width(analyses: Analyses, ptr_value, mask_value, elem_bytes: int) -> int:
    """Elements per memory instruction for a tensor of pointers (1 when nothing is known):
    contiguous along the layout's fastest dim, aligned, at most 16 bytes, one mask value."""
    fallback = fallback_width(analyses.fallback, ptr_value, mask_value, elem_bytes)
    project = _project_width(analyses, ptr_value, mask_value)
    width = fallback if project is None else project
    # never wider than the registers the thread holds contiguously in this layout
    return min(width, _contiguous_registers(ptr_value.type))


def _contiguous_registers(t) -> int:
    if not isinstance(t, TensorType) or isinstance(t.encoding, DotOperandEncoding):
        return 1
    root = root_blocked(t.encoding)
    fast = root.order[0]
    dims = root_dims(t.encoding)
    if fast not in dims:
        return 1
    return min(root.size_per_thread[fast], t.shape[dims.index(fast)])


def is_pointer(value) -> bool:
    """Whether a value is a pointer or a tensor of pointers."""
    return isinstance(value.type.scalar, PointerType)
