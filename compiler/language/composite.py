"""Shape functions Triton's library builds from other ops: join, split, interleave, cat, flip,
and debug_barrier.

Each is written here with the semantic layer's existing ops (expand_dims, broadcast, select,
reshape, trans, reductions), so it lowers on every layout those lower on and needs no code of
its own in the interpreter or the backend:

- `join(a, b)` stacks along a new last dim of size 2: select between the two broadcast along
  it, by the index along it.
- `split(a)` takes the last dim (size 2) apart: a reduction of (a, a) over that dim whose
  combine keeps the left of the first and the right of the second (associative, and exact for
  every dtype, NaNs and signed zeros included).
- `interleave`, `cat` are join followed by a reshape (cat moves the new dim to the front).
- `flip` reverses a power-of-two dim the way Triton does: view it as [2, 2, ...] and swap each
  pair with an xor of the integer bits.
"""
from __future__ import annotations

from compiler.frontend.errors import SemanticError

from . import core
from .core import builtin, constexpr, tensor
from .standard import _axis, arange


def _index_along(_sem, n: int, axis: int, rank: int) -> tensor:
    """arange(0, n) shaped to broadcast along `axis` of a rank-`rank` tensor."""
    idx = arange.__tile_builtin__(_sem, constexpr(0), constexpr(n))
    for _ in range(axis):
        idx = _sem.expand_dims(idx, 0)
    for _ in range(axis + 1, rank):
        idx = _sem.expand_dims(idx, len(idx.shape))
    return idx


def join_tensors(_sem, a: tensor, b: tensor) -> tensor:
    """`a` and `b` (broadcast and promoted together) stacked along a new last dim of size 2."""
    a, b = _sem.operands(a, b)
    if a.dtype != b.dtype:
        raise SemanticError(f"tl.join needs one dtype, got {a.dtype} and {b.dtype}")
    shape = tuple(a.shape) + (2,)
    pick_a = _sem.compare("eq", _index_along(_sem, 2, len(shape) - 1, len(shape)),
                          constexpr(0))
    a2 = _sem.broadcast_to(_sem.expand_dims(a, len(a.shape)) if a.is_block() else a, shape)
    b2 = _sem.broadcast_to(_sem.expand_dims(b, len(b.shape)) if b.is_block() else b, shape)
    return _sem.where(_sem.broadcast_to(pick_a, shape), a2, b2)


@builtin
def join(_sem, a, b) -> tensor:
    """Stack two tensors of one shape along a new minor dim of size 2 (shape [..., 2])."""
    return join_tensors(_sem, _sem.to_tensor(a), _sem.to_tensor(b))


@builtin
def split(_sem, a):
    """Split a tensor whose last dim has size 2 into its two halves along it (shape [...])."""
    a = _sem.to_tensor(a)
    if not a.is_block() or a.shape[-1] != 2:
        raise SemanticError(f"tl.split needs a tensor whose last dim has size 2, got shape "
                            f"{list(a.shape)}")
    if len(a.shape) == 1:
        a = _sem.expand_dims(a, 0)        # reduce to a [1] block, then drop it below
        first, second = _sem.reduce([a, a], 1, lambda args: [args[0], args[3]])
        return _scalar_of(_sem, first), _scalar_of(_sem, second)
    first, second = _sem.reduce([a, a], len(a.shape) - 1, lambda args: [args[0], args[3]])
    return first, second


def _scalar_of(_sem, t: tensor) -> tensor:
    """The one element of a [1] block, as a scalar (a reduction keeping it)."""
    return _sem.reduce([t], 0, lambda args: [args[0]])[0]


@builtin
def interleave(_sem, a, b) -> tensor:
    """Interleave two tensors along their last dim: [a0, b0, a1, b1, ...]."""
    a, b = _sem.to_tensor(a), _sem.to_tensor(b)
    joined = join_tensors(_sem, a, b)
    shape = joined.shape[:-2] + (joined.shape[-2] * 2,)
    return _sem.reshape(joined, shape)


@builtin
def cat(_sem, input, other, can_reorder=False) -> tensor:
    """Concatenate two tensors of one shape along dim 0. Triton only promises the elements in
    some order (`can_reorder=True`); this gives them in order, which satisfies both."""
    a, b = _sem.to_tensor(input), _sem.to_tensor(other)
    if not a.is_block() or a.shape != b.shape:
        raise SemanticError(f"tl.cat needs two tensors of one shape, got {list(a.shape)} and "
                            f"{list(b.shape)}")
    joined = join_tensors(_sem, a, b)
    rank = len(joined.shape)
    front = _sem.trans(joined, [rank - 1] + list(range(rank - 1)))
    return _sem.reshape(front, (2 * a.shape[0],) + tuple(a.shape[1:]))


@builtin
def flip(_sem, x, dim=None) -> tensor:
    """Reverse `x` along `dim` (the last dim when None), whose size must be a power of two."""
    x = _sem.to_tensor(x)
    if not x.is_block():
        raise SemanticError("tl.flip needs a tensor, got a scalar")
    rank = len(x.shape)
    axis = _axis(dim)
    axis = rank - 1 if axis is None else axis
    if not -rank <= axis < rank:
        raise SemanticError(f"tl.flip's dim {axis} is out of range for shape {list(x.shape)}")
    axis %= rank
    n = x.shape[axis]
    if n & (n - 1):
        raise SemanticError(f"tl.flip needs a power-of-two size along dim {axis}, got {n}")
    steps = n.bit_length() - 1
    if steps == 0:
        return x
    bits = x.dtype.primitive_bitwidth
    idtype = core.int1 if bits == 1 else core.DTYPES_BY_NAME[f"int{bits}"]
    y = _sem.cast(x, idtype, bitcast=True) if x.dtype != idtype else x
    y = _sem.reshape(y, x.shape[:axis] + (2,) * steps + x.shape[axis + 1:])
    for i in range(steps):
        pair = _sem.reduce([y], axis + i, lambda args: [_sem.xor_(args[0], args[1])],
                           keep_dims=True)[0]
        y = _sem.xor_(y, pair)
    y = _sem.reshape(y, x.shape)
    return _sem.cast(y, x.dtype, bitcast=True) if x.dtype != idtype else y


@builtin
def debug_barrier(_sem) -> None:
    """Synchronize every thread of the program (gpu.barrier); a no-op in the interpreter."""
    from compiler.dialects import ttg
    _sem._op(ttg.BarrierOp, [], None)




