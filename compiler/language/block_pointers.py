"""Block pointers (`tl.make_block_ptr`, `tl.advance`, and what `tl.load` / `tl.store` do with
one: `boundary_check`, `padding_option`) and device-side tensor descriptors
(`tl.make_tensor_descriptor`, `desc.load` / `desc.store`, which check every dim).

A block pointer is a front-end value (`core.block_pointer`) holding runtime scalars: the base
pointer, the tensor's shape and strides (int64) and the window's offsets (int32), with the
window's static block shape and dim order. It never reaches the IR as such: a load or store
through it builds the block of pointers base + sum_d (offset_d + arange(block_d)) * stride_d
(in int64) and, for the dims in `boundary_check`, the mask 0 <= offset_d + i < shape_d, as
Triton's rewrite of tensor pointers does for targets without TMA. Loops carry its fields
(see `CodeGenerator.loop_carried`), so `p = tl.advance(p, ...)` in a loop works.

Tensor descriptors are lowered the same way by default, without TMA: a descriptor is a
front-end value (`core.tensor_descriptor`: base, shape, strides as runtime scalars, block shape
and padding static), made in the kernel by `tl.make_tensor_descriptor` or passed in as a host
`TensorDescriptor` (a kernel parameter of type `core.tensor_descriptor_type`, which the launch
expands into its fields); `desc.load(offsets)` is a load of the block of pointers masked on
every dim (other = 0, or NaN), `desc.store` a masked store. Building the pointers in the front
end, like block pointers, means every later pass (axis info, coalescing, the Hopper dot path,
the pipeliner) sees ordinary pointer loads and needs nothing new. A descriptor of a kernel
compiled with TMA (`tensor_map` set: a host descriptor's CUtensorMap argument, or for
`tl.make_tensor_descriptor` the address `tt.make_tensor_descriptor` gives, of a tensor map the
kernel builds in global scratch memory) is read and written through `tt.descriptor_load` /
`tt.descriptor_store` instead, which the pipeliner and `tma-lowering` turn into TMA copies.
Blocks TMA cannot copy (`compiler.codegen.tma.supports`), and device-side descriptors whose
base or strides are not known to meet TMA's 16-byte rules (`_tma_can_address`), keep the
pointer path.
"""
from __future__ import annotations

from compiler.codegen.tma import supports as tma_supports
from compiler.dialects import tt
from compiler.ir.attributes import DenseArrayAttr, StringAttr
from compiler.frontend.errors import SemanticError

from . import core
from .core import block_pointer, builtin, constexpr, tensor, tensor_descriptor
from .standard import _const, arange

PADDINGS = ("zero", "nan")


def _scalars(_sem, values, dt, what: str) -> list:
    """A list of runtime integer scalars of dtype `dt` from a tuple/list argument."""
    values = _const(values, what)
    if not isinstance(values, (tuple, list)):
        values = [values]
    out = []
    for v in values:
        t = _sem.to_tensor(v)
        if t.is_block() or not t.dtype.is_int():
            raise SemanticError(f"tl.make_block_ptr's {what} must be integer scalars, got "
                                f"{t.type}")
        out.append(_sem.cast(t, dt))
    return out


def _static_ints(values, what: str) -> tuple:
    values = _const(values, what)
    if not isinstance(values, (tuple, list)):
        values = [values]
    out = tuple(_const(v, what) for v in values)
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in out):
        raise SemanticError(f"tl.make_block_ptr's {what} must be integer constants, got "
                            f"{list(out)}")
    return out


@builtin
def make_block_ptr(_sem, base, shape, strides, offsets, block_shape, order) -> block_pointer:
    """A pointer to a `block_shape` window at `offsets` of the `shape`d tensor at `base`
    (element `strides`); `order` is the dims' order, fastest first (a layout hint)."""
    base = _sem.to_tensor(base)
    if base.is_block() or not base.dtype.is_ptr():
        raise SemanticError(f"tl.make_block_ptr needs a scalar pointer base, got {base.type}")
    blocks = _static_ints(block_shape, "block_shape")
    dims = _static_ints(order, "order")
    rank = len(blocks)
    shape_t = _scalars(_sem, shape, core.int64, "shape")
    strides_t = _scalars(_sem, strides, core.int64, "strides")
    offsets_t = _scalars(_sem, offsets, core.int32, "offsets")
    for what, got in (("shape", shape_t), ("strides", strides_t), ("offsets", offsets_t),
                      ("order", dims)):
        if len(got) != rank:
            raise SemanticError(f"tl.make_block_ptr's {what} has {len(got)} entries but "
                                f"block_shape has {rank}")
    if sorted(dims) != list(range(rank)):
        raise SemanticError(f"tl.make_block_ptr's order {list(dims)} is not a permutation of "
                            f"0..{rank - 1}")
    for b in blocks:
        if b <= 0 or b & (b - 1):
            raise SemanticError(f"tl.make_block_ptr's block_shape entries must be powers of two, "
                                f"got {list(blocks)}")
    return block_pointer(base, shape_t, strides_t, offsets_t, blocks, dims)


@builtin
def advance(_sem, base, offsets) -> block_pointer:
    """The block pointer moved by `offsets` (one per dim, added to its offsets)."""
    if not isinstance(base, block_pointer):
        raise SemanticError("tl.advance needs a block pointer (from tl.make_block_ptr)")
    deltas = _scalars(_sem, offsets, core.int32, "offsets")
    if len(deltas) != len(base.block_shape):
        raise SemanticError(f"tl.advance got {len(deltas)} offsets for a block pointer of rank "
                            f"{len(base.block_shape)}")
    moved = [_sem.add(o, d) for o, d in zip(base.offsets, deltas)]
    return block_pointer(base.base, base.shape, base.strides, moved, base.block_shape,
                         base.order)


def _boundary_dims(bp: block_pointer, boundary_check) -> list:
    dims = _const(boundary_check, "boundary_check") if boundary_check is not None else ()
    dims = list(dims) if isinstance(dims, (tuple, list)) else [dims]
    dims = [_const(d, "boundary_check") for d in dims]
    rank = len(bp.block_shape)
    for d in dims:
        if not isinstance(d, int) or not 0 <= d < rank:
            raise SemanticError(f"boundary_check entries must be dims 0..{rank - 1}, got {dims}")
    return sorted(set(dims))


def access(_sem, bp: block_pointer, boundary_check):
    """(block of pointers, mask or None) for a load or store through `bp`."""
    rank = len(bp.block_shape)
    checked = _boundary_dims(bp, boundary_check)
    ptr = _sem.broadcast_to(bp.base, bp.block_shape)
    mask = None
    for d in range(rank):
        index = arange.__tile_builtin__(_sem, constexpr(0), constexpr(bp.block_shape[d]))
        for _ in range(d):
            index = _sem.expand_dims(index, 0)
        for _ in range(d + 1, rank):
            index = _sem.expand_dims(index, len(index.shape))
        coord = _sem.add(_sem.cast(index, core.int64), _sem.cast(bp.offsets[d], core.int64))
        ptr = _sem.add(ptr, _sem.broadcast_to(_sem.mul(coord, bp.strides[d]), bp.block_shape))
        if d in checked:
            inside = _sem.and_(_sem.compare("ge", coord, constexpr(0)),
                               _sem.compare("lt", coord, bp.shape[d]))
            inside = _sem.broadcast_to(inside, bp.block_shape)
            mask = inside if mask is None else _sem.and_(mask, inside)
    return ptr, mask


def load(_sem, bp: block_pointer, mask, other, boundary_check, padding_option) -> tensor:
    """tl.load through a block pointer: masked by `boundary_check`, padded with zeros or NaNs."""
    if mask is not None or other is not None:
        raise SemanticError("tl.load through a block pointer takes no mask or other; use "
                            "boundary_check and padding_option")
    padding = _const(padding_option, "padding_option") if padding_option is not None else ""
    if padding not in ("",) + PADDINGS:
        raise SemanticError(f"padding_option must be 'zero' or 'nan', got {padding!r}")
    if padding == "nan" and not bp.element_ty.is_floating():
        raise SemanticError(f"padding_option='nan' needs a floating-point pointee, got "
                            f"{bp.element_ty}")
    ptr, in_bounds = access(_sem, bp, boundary_check)
    if in_bounds is None:
        return _sem.load(ptr)
    fill = constexpr(float("nan")) if padding == "nan" else constexpr(0)
    return _sem.load(ptr, in_bounds, fill)


def store(_sem, bp: block_pointer, value, mask, boundary_check) -> None:
    """tl.store through a block pointer: the value broadcast to the block, masked by
    `boundary_check`."""
    if mask is not None:
        raise SemanticError("tl.store through a block pointer takes no mask; use boundary_check")
    ptr, in_bounds = access(_sem, bp, boundary_check)
    _sem.store(ptr, value, in_bounds)


# ---- tensor descriptors ---------------------------------------------------------------------------
def _known_divisor(value) -> int:
    """A number the runtime integer (or pointer address) `value` is known to be a multiple of:
    a kernel argument's `tt.divisibility` (the launch specializes arguments divisible by 16),
    a constant, and what casts and products of those keep; 1 when nothing is known."""
    from compiler.dialects.arith import BINARY_OPS, CAST_OPS, ConstantOp
    from compiler.ir.core import BlockArgument
    if isinstance(value, BlockArgument):
        attr = value.attributes.get("tt.divisibility")
        return int(attr.value) if attr is not None else 1
    op = value.owner_op
    if isinstance(op, ConstantOp):
        number = abs(int(op.attributes["value"].value))
        return number if number else 1 << 30
    if isinstance(op, (CAST_OPS["extsi"], CAST_OPS["extui"])):
        return _known_divisor(op.operands[0])
    if isinstance(op, BINARY_OPS["muli"]):
        return _known_divisor(op.operands[0]) * _known_divisor(op.operands[1])
    return 1


def _constant_value(value) -> int | None:
    """The integer constant `value` is (through integer casts), or None."""
    from compiler.dialects.arith import CAST_OPS, ConstantOp
    op = value.owner_op
    while isinstance(op, (CAST_OPS["extsi"], CAST_OPS["extui"])):
        op = op.operands[0].owner_op
    if isinstance(op, ConstantOp):
        return int(op.attributes["value"].value)
    return None


def _tma_can_address(base, strides, element_bytes: int) -> bool:
    """Whether a tensor map can describe the tensor for every launch of this specialization:
    a 16-byte aligned base, strides but the last known to be multiples of 16 bytes, and the
    last the constant 1 (what TMA requires; anything else keeps the pointer path, which is
    right for any strides, so a launch with, say, an odd row length still gets right results)."""
    if _constant_value(strides[-1].handle) != 1:
        return False
    if _known_divisor(base.handle) % 16:
        return False
    return all(_known_divisor(s.handle) * element_bytes % 16 == 0 for s in strides[:-1])


@builtin
def make_tensor_descriptor(_sem, base, shape, strides, block_shape, padding_option="zero"):
    """A descriptor of the `shape`d tensor at `base` (element `strides`, the last one 1) for
    loads and stores of `block_shape` blocks (rows of at least 16 bytes, as TMA needs);
    out-of-bounds reads give zeros (or NaNs)."""
    base = _sem.to_tensor(base)
    if base.is_block() or not base.dtype.is_ptr():
        raise SemanticError(f"tl.make_tensor_descriptor needs a scalar pointer base, got "
                            f"{base.type}")
    blocks = _static_ints(block_shape, "block_shape")
    shape_t = _scalars(_sem, shape, core.int32, "shape")
    strides_t = _scalars(_sem, strides, core.int64, "strides")
    if len(shape_t) != len(blocks) or len(strides_t) != len(blocks):
        raise SemanticError(f"tl.make_tensor_descriptor's shape and strides need "
                            f"{len(blocks)} entries, as block_shape has")
    given = _const(strides, "strides")
    given = [g.value if isinstance(g, constexpr) else g for g in given] \
        if isinstance(given, (tuple, list)) else []
    if given and isinstance(given[-1], int) and given[-1] != 1:
        raise SemanticError(f"tl.make_tensor_descriptor needs the last stride to be 1, got "
                            f"{given[-1]}")
    element_bytes = base.dtype.element_ty.primitive_bitwidth // 8
    for stride in given[:-1]:
        if isinstance(stride, int) and (stride * element_bytes) % 16:
            raise SemanticError(f"tl.make_tensor_descriptor's strides must be multiples of 16 "
                                f"bytes but the last, got {stride} * {element_bytes} bytes")
    padding = _const(padding_option, "padding_option")
    if padding not in PADDINGS:
        raise SemanticError(f"padding_option must be 'zero' or 'nan', got {padding!r}")
    for b in blocks:
        if b <= 0 or b & (b - 1):
            raise SemanticError(f"tl.make_tensor_descriptor's block_shape entries must be "
                                f"powers of two, got {list(blocks)}")
    row_bytes = blocks[-1] * base.dtype.element_ty.primitive_bitwidth // 8
    if row_bytes < 16:
        raise SemanticError(f"Descriptor block shape must have at least 16 bytes in the last "
                            f"dimension, but got {blocks[-1]} * "
                            f"{base.dtype.element_ty.primitive_bitwidth // 8} = {row_bytes} bytes")
    tensor_map = None
    if _sem.tma and tma_supports(str(base.dtype.element_ty), blocks) and \
            _tma_can_address(base, strides_t, element_bytes):
        # built on the device (`tma-lowering`: a tensor map in global scratch memory)
        map_type = core.pointer_type(core.int8)
        tensor_map = _sem._new(tt.MakeTensorDescriptorOp, [base] + shape_t + strides_t,
                               map_type, {"block_shape": DenseArrayAttr(tuple(blocks)),
                                          "padding": StringAttr(padding)})
    return tensor_descriptor(base, shape_t, strides_t, blocks, padding, tensor_map)


def _window(_sem, desc, offsets) -> block_pointer:
    if not isinstance(desc, tensor_descriptor):
        raise SemanticError("expected a tensor descriptor (from tl.make_tensor_descriptor)")
    rank = len(desc.block_shape)
    offs = _scalars(_sem, offsets, core.int32, "offsets")
    if len(offs) != rank:
        raise SemanticError(f"a rank-{rank} tensor descriptor takes {rank} offsets, got "
                            f"{len(offs)}")
    return block_pointer(desc.base, [_sem.cast(s, core.int64) for s in desc.shape],
                         desc.strides, offs, desc.block_shape, tuple(reversed(range(rank))))


def _map_offsets(_sem, desc, offsets) -> list:
    """The i32 offsets of an access through a descriptor's tensor map."""
    _window(_sem, desc, offsets)        # the same checks (and errors) as the pointer path
    return _scalars(_sem, offsets, core.int32, "offsets")


@builtin
def load_tensor_descriptor(_sem, desc, offsets) -> tensor:
    """The `block_shape` block at `offsets` (out-of-bounds elements padded)."""
    if desc.tensor_map is not None:
        offs = _map_offsets(_sem, desc, offsets)
        return _sem._new(tt.DescriptorLoadOp, [desc.tensor_map] + offs,
                         core.block_type(desc.dtype, list(desc.block_shape)))
    window = _window(_sem, desc, offsets)
    return load(_sem, window, None, None, tuple(range(len(desc.block_shape))), desc.padding)


@builtin
def store_tensor_descriptor(_sem, desc, offsets, value) -> None:
    """Store a `block_shape` block at `offsets` (out-of-bounds elements are not written)."""
    if desc.tensor_map is not None:
        offs = _map_offsets(_sem, desc, offsets)
        block = core.block_type(desc.dtype, list(desc.block_shape))
        value = _sem.cast(_sem.broadcast_to(_sem.to_tensor(value), block.shape), desc.dtype)
        _sem._op(tt.DescriptorStoreOp, [desc.tensor_map, value] + offs, None)
        return
    window = _window(_sem, desc, offsets)
    store(_sem, window, value, None, tuple(range(len(desc.block_shape))))
