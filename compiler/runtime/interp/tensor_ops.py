"""Semantics of the `tt` block-level ops (and the few `ttg` ops) that need no nested region.

Program ids, ranges, shape manipulation, pointer arithmetic, loads, stores, atomics, dot,
printing and assertions. ttg's layout conversions and shared-memory ops are identities on
values here (layouts do not change what a tensor holds), so ttgir runs as well as ttir.
"""
from __future__ import annotations

import math
import sys

import numpy as np

from compiler.dialects import tt, ttg, ttng
from compiler.ir.types import TensorType

from .errors import KernelAssertionError, OpError
from .memory import atomic_update, cas_update
from .registry import semantics
from .values import as_unsigned, bits_of, byte_size, value_dtype


# ---- program ids and ranges --------------------------------------------------------------------
@semantics(tt.GetProgramIdOp)
def get_program_id(ctx, op, values):
    """This program's index along the axis, as i32."""
    return np.int32(ctx.pid[op.attributes["axis"].value])


@semantics(tt.GetNumProgramsOp)
def get_num_programs(ctx, op, values):
    """The grid size along the axis, as i32."""
    return np.int32(ctx.grid[op.attributes["axis"].value])


@semantics(tt.MakeRangeOp)
def make_range(ctx, op, values):
    """The i32 range [start, end)."""
    return np.arange(op.attributes["start"].value, op.attributes["end"].value, dtype=np.int32)


# ---- shapes ------------------------------------------------------------------------------------
@semantics(tt.SplatOp)
def splat(ctx, op, values):
    """A read-only broadcast view of the scalar (copy-free)."""
    t = op.results[0].type
    return np.broadcast_to(np.asarray(values[0], dtype=value_dtype(t)), t.shape)


@semantics(tt.BroadcastOp)
def broadcast(ctx, op, values):
    """Broadcast size-1 dims to the result shape (a read-only view)."""
    return np.broadcast_to(values[0], op.results[0].type.shape)


@semantics(tt.ExpandDimsOp)
def expand_dims(ctx, op, values):
    """Insert a size-1 dim at `axis`."""
    return np.expand_dims(values[0], op.attributes["axis"].value)


@semantics(tt.ReshapeOp)
def reshape(ctx, op, values):
    """Row-major reshape to the result shape."""
    return np.reshape(values[0], op.results[0].type.shape)


@semantics(tt.TransOp)
def trans(ctx, op, values):
    """Permute the dims by `order`."""
    return np.transpose(values[0], op.attributes["order"].values)


# ---- pointers ----------------------------------------------------------------------------------
@semantics(tt.AddPtrOp)
def addptr(ctx, op, values):
    """pointer + offset * sizeof(pointee); offsets are signed (i32 offsets sign-extend)."""
    ptr, offset = values
    size = byte_size(op.operands[0].type.scalar.pointee)
    return ptr + np.asarray(offset).astype(np.int64) * np.int64(size)


@semantics(tt.IntToPtrOp)
def int_to_ptr(ctx, op, values):
    """An integer as a byte address."""
    return np.asarray(values[0]).astype(np.int64)


@semantics(tt.PtrToIntOp)
def ptr_to_int(ctx, op, values):
    """A byte address as an integer of the result width (wrapping)."""
    return np.asarray(values[0]).astype(value_dtype(op.results[0].type))


# ---- memory ------------------------------------------------------------------------------------
def _pointee(op):
    return op.operands[0].type.scalar.pointee


@semantics(tt.LoadOp)
def load(ctx, op, values):
    """Masked-off lanes take `other` (0 when there is none)."""
    ptr = values[0]
    mask = values[1] if len(values) > 1 else None
    loaded = ctx.memory.load(ptr, mask, _pointee(op))
    if mask is not None and len(values) > 2:
        loaded = np.where(mask, loaded, values[2])
    return loaded


@semantics(tt.StoreOp)
def store(ctx, op, values):
    """Write the values where the mask (if any) is true."""
    mask = values[2] if len(values) > 2 else None
    ctx.memory.store(values[0], values[1], mask, _pointee(op))


@semantics(tt.AtomicRMWOp)
def atomic_rmw(ctx, op, values):
    """Sequential per-lane read-modify-write; returns the old values (0 in masked-off lanes)."""
    ptr, val = values[0], values[1]
    mask = values[2] if len(values) > 2 else None
    elem = _pointee(op)
    flat = np.broadcast_to(np.asarray(val), np.shape(ptr)).reshape(-1)
    update = atomic_update(op.attributes["atomic_rmw_op"].value, elem, flat)
    return ctx.memory.atomic(ptr, mask, elem, update)


@semantics(tt.AtomicCASOp)
def atomic_cas(ctx, op, values):
    """Compare-and-swap on the bit patterns; returns the old values."""
    ptr, cmp, val = values
    elem = _pointee(op)
    shape = np.shape(ptr)
    update = cas_update(elem, np.broadcast_to(np.asarray(cmp), shape).reshape(-1),
                        np.broadcast_to(np.asarray(val), shape).reshape(-1))
    return ctx.memory.atomic(ptr, None, elem, update)


# ---- dot ---------------------------------------------------------------------------------------
@semantics(tt.DotOp)
def dot(ctx, op, values):
    """a @ b + acc, accumulating fp16/bf16 products in fp32 and integer products in the
    accumulator's width. fp32 inputs are multiplied in full fp32 (tf32 is not emulated)."""
    a, b, acc = (np.asarray(v) for v in values)
    acc_dtype = value_dtype(op.operands[2].type)
    if acc_dtype.kind == "f":
        compute = np.float64 if np.float64 in (a.dtype, b.dtype, acc_dtype) else np.float32
    else:
        compute = acc_dtype
    product = np.matmul(a.astype(compute), b.astype(compute))
    return product + acc.astype(compute)


@semantics(ttng.WarpGroupDotOp)
def warp_group_dot(ctx, op, values):
    """Hopper's warp-group dot computes what tt.dot computes; its shared operands are read
    from their buffers (a sequential run has no asynchrony to model)."""
    a, b, acc = (v.data if isinstance(v, SharedBuffer) else v for v in values)
    return dot(ctx, op, (a, b, acc))


@semantics(ttng.WarpGroupDotWaitOp)
def warp_group_dot_wait(ctx, op, values):
    """Waiting for warp-group dots passes its operands through (they completed at once)."""
    return list(values)


# ---- debugging ---------------------------------------------------------------------------------
def _format_value(value, t, hex_: bool, signed: bool) -> str:
    """One element as Triton's device_print formats it (%f, %i / %u, 0x%0Nx, %p)."""
    if t.scalar.is_ptr:
        return f"{int(value):#x}"
    if hex_:
        digits = max(1, t.scalar.width // 4)
        return "0x" + format(int(bits_of(np.asarray(value), t)), f"0{digits}x")
    if t.scalar.is_float:
        return f"{float(value):f}"
    if signed:
        return str(int(value))
    return str(int(as_unsigned(np.asarray(value), t)))


@semantics(tt.PrintOp)
def print_(ctx, op, values):
    """`pid (x, y, z) idx (i, j)<prefix><value>`, one line per element, like device_print."""
    prefix = op.attributes["prefix"].value if "prefix" in op.attributes else ""
    hex_attr = op.attributes.get("hex")
    hex_ = bool(hex_attr.value) if hex_attr is not None else False
    signed_attr = op.attributes.get("isSigned")
    signed = list(signed_attr.values) if signed_attr is not None else []
    pid = "pid ({}, {}, {})".format(*ctx.pid)
    out = ctx.stdout if ctx.stdout is not None else sys.stdout
    if not values:
        out.write(f"{pid}{prefix}\n")
        return None
    lines = []
    for n, (value, operand) in enumerate(zip(values, op.operands)):
        t = operand.type
        shape = t.shape if isinstance(t, TensorType) else ()
        widths = [math.ceil(math.log10(d)) if d > 0 else 0 for d in shape]
        is_signed = bool(signed[n]) if n < len(signed) else True
        tag = f"(operand {n}) " if len(values) > 1 else ""
        array = np.broadcast_to(np.asarray(value), shape)
        for index in np.ndindex(*shape):
            idx = ", ".join(f"{i:{w}d}" if w else str(i) for i, w in zip(index, widths))
            text = _format_value(array[index], t, hex_, is_signed)
            lines.append(f"{pid} idx ({idx}){prefix}{tag}{text}\n")
    out.write("".join(lines))
    return None


@semantics(tt.AssumeOp)
def assume(ctx, op, values):
    """tl.assume's promise: nothing to do (it is not checked, as in Triton's interpreter)."""
    return None


@semantics(tt.AssertOp)
def assert_(ctx, op, values):
    """Fail with the message when any element of the condition is false."""
    cond = np.asarray(values[0])
    if cond.all():
        return None
    message = ""
    for key in ("message", "msg"):
        if key in op.attributes:
            message = op.attributes[key].value
    first = tuple(int(i) for i in np.argwhere(~cond.astype(bool))[0]) if cond.ndim else ()
    raise KernelAssertionError(f"device-side assertion failed at index {first}: {message}",
                               op, ctx.pid)


# ---- ttg (layouts and shared memory) -----------------------------------------------------------
class SharedBuffer:
    """A shared-memory buffer (a ttg memdesc) holding one tensor's values."""

    def __init__(self, data: np.ndarray):
        self.data = np.array(data)


@semantics(ttg.ConvertLayoutOp)
def convert_layout(ctx, op, values):
    """Layouts do not change values: the identity."""
    return values[0]


@semantics(ttg.LocalAllocOp)
def local_alloc(ctx, op, values):
    """A shared-memory buffer, initialised from the operand when there is one."""
    if values:
        return SharedBuffer(values[0])
    t = op.results[0].type
    return SharedBuffer(np.zeros(t.shape, dtype=value_dtype(t.element)))


@semantics(ttg.LocalLoadOp)
def local_load(ctx, op, values):
    """The buffer's current values."""
    return values[0].data.copy()


@semantics(ttg.LocalStoreOp)
def local_store(ctx, op, values):
    """Overwrite the buffer with the operand."""
    values[1].data[...] = values[0]


@semantics(ttg.LocalDeallocOp, ttg.BarrierOp)
def no_effect(ctx, op, values):
    """Deallocation and barriers change no values in a sequential run."""
    return None


# ---- the `pipeline` pass's ops: copies land at once in a sequential run ------------------------
@semantics(ttg.MemDescIndexOp)
def memdesc_index(ctx, op, values):
    """Slice `i` of a multi-buffered allocation, sharing its storage."""
    view = SharedBuffer.__new__(SharedBuffer)
    view.data = values[0].data[int(values[1])]
    return view


@semantics(ttg.MemDescTransOp)
def memdesc_trans(ctx, op, values):
    """The buffer with its dims permuted by `order`, sharing its storage."""
    view = SharedBuffer.__new__(SharedBuffer)
    view.data = values[0].data.transpose(tuple(op.order))
    return view


@semantics(ttg.AsyncCopyGlobalToLocalOp)
def async_copy_global_to_local(ctx, op, values):
    """Copy global memory into the buffer now; masked-off elements become 0 (zero-fill)."""
    ptr, buf = values[0], values[1]
    mask = values[2] if len(values) > 2 else None
    element = op.operands[1].type.element
    loaded = ctx.memory.load(ptr, mask, element)
    buf.data[...] = loaded if mask is None else np.where(mask, loaded, 0)


@semantics(ttg.AsyncCommitGroupOp, ttg.AsyncWaitOp)
def async_group(ctx, op, values):
    """Copy groups need no bookkeeping when copies complete at once."""
    return None


@semantics(tt.GatherOp)
def gather(ctx, op, values):
    """`np.take_along_axis`; an index outside the source is an error here (the GPU reads an
    unspecified value)."""
    src, index = np.asarray(values[0]), np.asarray(values[1]).astype(np.int64)
    axis = op.attributes["axis"].value
    if index.size and (index.min() < 0 or index.max() >= src.shape[axis]):
        raise OpError(f"gather index out of range [0, {src.shape[axis]}) along dim {axis}: "
                      f"{int(index.min())}..{int(index.max())}")
    return np.take_along_axis(src, index, axis)


@semantics(tt.HistogramOp)
def histogram(ctx, op, values):
    """np.bincount of the in-range values where the mask (if any) is true."""
    src = np.asarray(values[0]).astype(np.int64)
    bins = op.results[0].type.shape[0]
    keep = (src >= 0) & (src < bins)
    if len(values) > 1:
        keep &= np.asarray(values[1]).astype(bool)
    return np.bincount(src[keep], minlength=bins).astype(np.int32)
