"""Functions Triton's library builds from other ops: join, split, interleave, cat, flip, sort,
topk, and the entry points of the ops histogram, gather, inline asm and debug_barrier.

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
- `sort` is a bitonic network on the last dim, as Triton's: each compare-and-swap step meets
  every element with its partner through one tt.gather (Triton reshapes to [outer, 2, inner]
  instead, which here costs several layout exchanges a step). `topk` sorts and keeps the first
  k along the last dim (the reduction keeping the left element).
- `histogram` and `gather` are ops of their own (tt.histogram, tt.gather, through shared
  memory in codegen/lower_gather.py): comparisons against every bin or source position along a
  new dim would be exact too, but do not scale past small tensors.
"""
from __future__ import annotations

from compiler.frontend.errors import SemanticError

from . import core
from .core import builtin, constexpr, tensor
from .standard import TENSOR_METHODS, _axis, _const, arange


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
    if len(joined.shape) == 1:          # two scalars: [a, b]
        return joined
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


def _minor_dim_size(x: tensor, dim, what: str) -> int:
    rank = len(x.shape)
    axis = _axis(dim)
    if axis is not None and axis % rank != rank - 1:
        raise SemanticError(f"{what} sorts along the last dim only (dim={rank - 1} or None), "
                            f"got dim={axis}")
    n = x.shape[-1]
    if n & (n - 1):
        raise SemanticError(f"{what} needs a power-of-two size along the last dim, got {n}")
    return n


def sort_tensor(_sem, x: tensor, descending: bool) -> tensor:
    """A bitonic sort of `x` along its last dim: for sequence sizes k = 2, 4, .., n and
    distances j = k/2, .., 1, every element meets its partner at position p ^ j (one gather
    through shared memory) and keeps the smaller or the larger of the two, by whether it is
    the lower of the pair and the direction of its sequence ((p & k) == 0, flipped when
    descending). Ties and NaNs keep their own value, so no value is lost or duplicated."""
    n = _minor_dim_size(x, None, "tl.sort")
    rank = len(x.shape)
    pos = _sem.broadcast_to(_index_along(_sem, n, rank - 1, rank), x.shape)
    k = 2
    while k <= n:
        ascending = _sem.compare("eq", _sem.and_(pos, constexpr(k)), constexpr(0))
        if descending:
            ascending = _sem.logical_not(ascending)
        j = k // 2
        while j >= 1:
            partner = _gather(_sem, x, _sem.xor_(pos, constexpr(j)), rank - 1)
            lower = _sem.compare("eq", _sem.and_(pos, constexpr(j)), constexpr(0))
            keep_smaller = _sem.compare("eq", lower, ascending)
            take = _sem.where(keep_smaller, _sem.compare("lt", partner, x),
                              _sem.compare("gt", partner, x))
            x = _sem.where(take, partner, x)
            j //= 2
        k *= 2
    return x


@builtin
def sort(_sem, x, dim=None, descending=False) -> tensor:
    """Sort along the last dim (a power of two long), ascending or `descending` (a bitonic
    network of compare-and-swaps, as Triton's)."""
    x = _sem.to_tensor(x)
    if not x.is_block():
        raise SemanticError("tl.sort needs a tensor, got a scalar")
    _minor_dim_size(x, dim, "tl.sort")
    return sort_tensor(_sem, x, bool(_const(descending, "descending")))


@builtin
def topk(_sem, x, k, dim=None, descending=True) -> tensor:
    """The `k` largest elements along the last dim, largest first (k a power of two); the `k`
    smallest, smallest first, with `descending=False`."""
    x = _sem.to_tensor(x)
    if not x.is_block():
        raise SemanticError("tl.topk needs a tensor, got a scalar")
    n = _minor_dim_size(x, dim, "tl.topk")
    k = _const(k, "k")
    if not isinstance(k, int) or k <= 0 or k & (k - 1) or k > n:
        raise SemanticError(f"tl.topk's k must be a power of two from 1 to {n}, got {k!r}")
    ordered = sort_tensor(_sem, x, bool(_const(descending, "descending")))
    if k == n:
        return ordered
    rows = _sem.reshape(ordered, x.shape[:-1] + (n // k, k))
    first = _sem.reduce([rows], len(rows.shape) - 2, lambda args: [args[0]])[0]
    return first


@builtin
def histogram(_sem, input, num_bins, mask=None) -> tensor:
    """Counts (int32, shape [num_bins]) of the values of the 1-D integer `input` in the bins
    [0, 1), [1, 2), ...; lanes where `mask` is false are not counted, nor values outside."""
    x = _sem.to_tensor(input)
    bins = _const(num_bins, "num_bins")
    if not x.is_block() or len(x.shape) != 1 or not x.dtype.is_int():
        raise SemanticError(f"tl.histogram needs a 1-D integer tensor, got {x.type}")
    if not isinstance(bins, int) or bins <= 0 or bins & (bins - 1):
        raise SemanticError(f"tl.histogram's num_bins must be a power of two, got {bins!r}")
    from compiler.dialects import tt
    operands = [x]
    if mask is not None:
        operands.append(_sem.cast(_sem.broadcast_to(_sem.to_tensor(mask), x.shape), core.int1))
    return _sem._new(tt.HistogramOp, operands, core.block_type(core.int32, (bins,)))


@builtin
def gather(_sem, src, index, axis) -> tensor:
    """out[i][j] = src[index[i][j]][j] for axis 0 (and likewise for other axes): `index` has
    `src`'s rank and size on every other dim. An index out of range gives an unspecified
    value, as in Triton."""
    src, index = _sem.to_tensor(src), _sem.to_tensor(index)
    rank = len(src.shape)
    ax = _axis(axis)
    if not src.is_block() or len(index.shape) != rank or not index.dtype.is_int():
        raise SemanticError(f"tl.gather needs a tensor and an integer index of the same rank, "
                            f"got {src.type} and {index.type}")
    if ax is None or not -rank <= ax < rank:
        raise SemanticError(f"tl.gather's axis must be a dim of the rank-{rank} source, got "
                            f"{ax!r}")
    ax %= rank
    for d in range(rank):
        if d != ax and src.shape[d] != index.shape[d]:
            raise SemanticError(f"tl.gather's index must match the source on every dim but "
                                f"axis {ax}: {list(index.shape)} vs {list(src.shape)}")
    return _gather(_sem, src, index, ax)


def _gather(_sem, src: tensor, index: tensor, axis: int) -> tensor:
    """tt.gather of `src` at `index` along `axis` (already checked)."""
    from compiler.dialects import tt
    from compiler.ir.attributes import int_attr
    return _sem._new(tt.GatherOp, [src, index], core.block_type(src.dtype, index.shape),
                     {"axis": int_attr(axis)})


@builtin
def inline_asm_elementwise(_sem, asm, constraints, args, dtype, is_pure, pack):
    """Run the PTX `asm` on each element of the broadcast `args` (LLVM inline-asm
    `constraints`, outputs first); `dtype` is the result dtype, or a tuple of them for several
    results (then a tuple is returned). GPU only: the interpreter refuses it."""
    from compiler.dialects import tt
    from compiler.ir.attributes import BoolAttr, StringAttr, int_attr
    text, cons = _const(asm, "asm"), _const(constraints, "constraints")
    if not isinstance(text, str) or not isinstance(cons, str):
        raise SemanticError("tl.inline_asm_elementwise's asm and constraints must be strings")
    dts = _const(dtype, "dtype")
    single = not isinstance(dts, (tuple, list))
    dts = [dts] if single else [_const(d, "dtype") for d in dts]
    if not all(isinstance(d, core.dtype) for d in dts):
        raise SemanticError(f"tl.inline_asm_elementwise's dtype must be a tl dtype or a tuple "
                            f"of them, got {dts!r}")
    packed = _const(pack, "pack")
    if not isinstance(packed, int) or packed < 1:
        raise SemanticError(f"tl.inline_asm_elementwise's pack must be a positive integer, "
                            f"got {packed!r}")
    items = _const(args, "args")
    values = [_sem.to_tensor(a) for a in (items if isinstance(items, (tuple, list)) else [items])]
    shape = ()
    for v in values:
        shape = _sem.broadcast_shape(shape, v.shape)
    values = [_sem.broadcast_to(v, shape) for v in values]
    result_types = [core.block_type(d, shape) if shape else d for d in dts]
    op = _sem.builder.create(
        tt.ElementwiseInlineAsmOp, [v.handle for v in values],
        [t.to_ir() for t in result_types],
        {"asm_string": StringAttr(text), "constraints": StringAttr(cons),
         "pure": BoolAttr(bool(_const(is_pure, "is_pure"))), "packed_element": int_attr(packed)})
    outs = [tensor(r, t) for r, t in zip(op.results, result_types)]
    return outs[0] if single else tuple(outs)


@builtin
def debug_barrier(_sem) -> None:
    """Synchronize every thread of the program (gpu.barrier); a no-op in the interpreter."""
    from compiler.dialects import ttg
    _sem._op(ttg.BarrierOp, [], None)






# These are also tensor methods in Triton (`x.sort()`, `x.split()`, ...): the method table of
# `standard` gains them here, where they are defined.
TENSOR_METHODS.update({"sort": sort, "flip": flip, "split": split, "topk": topk})
