"""How many elements one load/store instruction may move: the single place the lowering asks.

The facts (contiguity, divisibility, constancy per dim) come from the project's one axis
analysis, `compiler.analysis.axis_info`; this module only adds what the lowering knows about
its own registers: an access never spans more elements than a thread holds contiguously along
the root blocked layout's fastest dim (so slices that drop that dim, and dot operands, move one
element at a time). Layouts without a blocked root (mma accumulators, their slices,
`#ttg.linear`) read the same fact from their linear layout: the leading register bases that step
1, 2, 4, ... along the last dim.
"""
from __future__ import annotations

from compiler.analysis import axis_info
from compiler.analysis.layout_to_linear import to_linear_layout
from compiler.analysis.layouts import has_slot_model, is_mma_family, root_blocked, root_dims
from compiler.dialects.ttg import DotOperandEncoding
from compiler.dialects.tt import PointerType
from compiler.ir.types import TensorType


def analyze(func_op) -> dict:
    """The axis information of a kernel (computed once per lowering): `axis_info.analyze`."""
    return axis_info.analyze(func_op)


def vector_width(info: dict, ptr_value, mask_value, elem_bytes: int) -> int:
    """Elements per memory instruction for a tensor of pointers to `elem_bytes`-byte elements
    (1 when nothing is known): contiguous and aligned along the layout's fastest dim, at most
    16 bytes, one mask value, and within the registers the thread holds contiguously."""
    width = axis_info.vector_width(ptr_value, info, None, mask_value, elem_bytes=elem_bytes)
    return min(width, _contiguous_registers(ptr_value.type))


def _contiguous_registers(t) -> int:
    if not isinstance(t, TensorType) or isinstance(t.encoding, DotOperandEncoding):
        return 1
    if not has_slot_model(t.encoding) or is_mma_family(t.encoding):
        return _linear_contiguous_registers(t)
    root = root_blocked(t.encoding)
    fast = root.order[0]
    dims = root_dims(t.encoding)
    if fast not in dims:
        return 1
    return min(root.size_per_thread[fast], t.shape[dims.index(fast)])


def _linear_contiguous_registers(t) -> int:
    last = t.rank - 1
    run = 1
    for vec in to_linear_layout(t.encoding, tuple(t.shape)).bases("register"):
        if tuple(vec) != tuple(run if d == last else 0 for d in range(t.rank)):
            break
        run *= 2
    return run


def is_pointer(value) -> bool:
    """Whether a value is a pointer or a tensor of pointers."""
    return isinstance(value.type.scalar, PointerType)
