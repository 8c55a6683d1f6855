"""How many elements one load/store/copy instruction may move: the single place the lowering
(and the pipeliner, which must predict the lowering's copies) asks.

The facts (contiguity, divisibility, constancy per dim) come from the project's one axis
analysis, `compiler.analysis.axis_info`; this module only adds what the lowering knows about
its own registers: an access never spans more elements than a thread holds contiguously. The
lowering's register order is the layout's linear layout for every distributed layout (blocked,
slices, mma accumulators and operands, `#ttg.linear`), so that run is read off the linear
layout: the leading register bases that step 1, 2, 4, ... along one dim. A copy into shared
memory is also kept within what the buffer holds contiguously along that dim (`shared_run`).
"""
from __future__ import annotations

from compiler.analysis import axis_info
from compiler.analysis.layout_to_linear import to_linear_layout
from compiler.dialects.tt import PointerType
from compiler.ir.types import TensorType

from .lower_convert import contiguous_dim, follows_order


def analyze(func_op) -> dict:
    """The axis information of a kernel (computed once per lowering): `axis_info.analyze`."""
    return axis_info.analyze(func_op)


def vector_width(info: dict, ptr_value, mask_value, elem_bytes: int) -> int:
    """Elements per memory instruction for a tensor of pointers to `elem_bytes`-byte elements
    (1 when nothing is known): the thread's contiguous registers (`register_run`), contiguous
    and aligned in global memory along their dim, at most 16 bytes, one mask value."""
    t = ptr_value.type
    if not isinstance(t, TensorType):
        return 1
    dim, run = register_run(t)
    if run == 1:
        return 1
    return axis_info.vector_width(ptr_value, info, None, mask_value, elem_bytes=elem_bytes,
                                  along=(dim, run))


def copy_width(info: dict, ptr_value, mask_value, buf_type) -> int:
    """Elements per `cp.async` of `ttg.async_copy_global_to_local %ptrs, %buf`: the global
    access's `vector_width`, when the thread's registers run along the dim the buffer stores
    contiguously, and no more than the buffer keeps contiguous there."""
    width = vector_width(info, ptr_value, mask_value, max(1, buf_type.element.width // 8))
    if width == 1:
        return 1
    dim, _ = register_run(ptr_value.type)
    shared_dim, contiguous = shared_run(buf_type.encoding, tuple(buf_type.shape))
    return min(width, contiguous) if dim == shared_dim else 1


def register_run(t: TensorType) -> tuple[int, int]:
    """(dim, n): a thread's registers r, r+1, ..., r+n-1 (r a multiple of n) hold consecutive
    elements along `dim` (n a power of two, 1 when the first register basis is no unit step)."""
    bases = to_linear_layout(t.encoding, tuple(t.shape)).bases("register")
    if not bases or sorted(bases[0]) != [0] * (t.rank - 1) + [1]:
        return t.rank - 1, 1
    dim = list(bases[0]).index(1)
    run = 1
    for vec in bases:
        if tuple(vec) != tuple(run if d == dim else 0 for d in range(t.rank)):
            break
        run *= 2
    return dim, run


def shared_run(encoding, shape: tuple) -> tuple[int, int]:
    """(dim, n): the dim along which a shared buffer's consecutive elements are adjacent
    (`lower_convert.contiguous_dim`) and how many of them, from an aligned start, stay adjacent:
    one swizzle group (`vec`) of a swizzled buffer, a whole row of an unswizzled one (`maxPhase`
    1) or of a row-major one (`lower_convert.follows_order`)."""
    dim = contiguous_dim(encoding, len(shape))
    if follows_order(encoding) and getattr(encoding, "max_phase", 2) > 1:
        return dim, encoding.vec
    return dim, shape[dim]


def is_pointer(value) -> bool:
    """Whether a value is a pointer or a tensor of pointers."""
    return isinstance(value.type.scalar, PointerType)
