"""Interpreter semantics of host descriptors read through their tensor maps: `tt.descriptor_load
/ store` and the TMA and mbarrier ops of `tma-lowering` and the pipeliner.

In the interpreter a kernel's CUtensorMap parameter is bound to the host `TensorDescriptor`
itself (`bind_tensor_map`: its base array registered in the interpreter's memory, its shape and
element strides); a block access computes every element's address, reads out-of-bounds elements
as the padding (0 or NaN) and drops out-of-bounds writes, as TMA does. Copies complete at once
in a sequential run, so the mbarrier ops, fences and waits change nothing.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from compiler.dialects import tt, ttg, ttng

from .errors import OpError
from .registry import semantics
from .values import byte_size


@dataclass(frozen=True)
class InterpretedTensorMap:
    """A tensor map in the interpreter: the tensor's base address, shape, element strides and
    out-of-bounds padding."""

    address: int
    shape: tuple
    strides: tuple
    padding: str


def bind_tensor_map(value, memory, name: str, host_array) -> InterpretedTensorMap:
    """The tensor map of a host `TensorDescriptor` argument (`host_array(base)` gives the
    array and the staged copy's write-back, which this binding does not need: the fields'
    pointer argument registers the same base)."""
    from compiler.tools.tensor_descriptor import TensorDescriptor
    if not isinstance(value, TensorDescriptor):
        raise OpError(f"a tensor-map parameter takes the host TensorDescriptor, got "
                      f"{type(value).__name__}")
    array, _ = host_array(value.base)
    if array is None:
        raise OpError("the TensorDescriptor's base is not an array the interpreter can read")
    return InterpretedTensorMap(memory.add_array(array, name), tuple(map(int, value.shape)),
                                tuple(map(int, value.strides)), value.padding)


class ScratchTensorMap:
    """A `ttg.global_scratch_alloc` holding a tensor map: the map `ttng.tensormap_create`
    wrote into it (None before)."""

    def __init__(self):
        self.map: InterpretedTensorMap | None = None


def _resolve(tmap):
    """The map itself (a scratch slot holds the map written into it)."""
    if isinstance(tmap, ScratchTensorMap):
        if tmap.map is None:
            raise OpError("a tensor map in global scratch memory is read before "
                          "ttng.tensormap_create wrote it")
        return tmap.map
    return tmap


def _block(tmap: InterpretedTensorMap, coords, shape, element) -> tuple:
    """(addresses, in-bounds mask) of the `shape` block at `coords`."""
    if not isinstance(tmap, InterpretedTensorMap):
        raise OpError(f"expected a tensor map (a TensorDescriptor argument), got "
                      f"{type(tmap).__name__}")
    index = np.indices(shape)
    offset = np.zeros(shape, np.int64)
    inside = np.ones(shape, bool)
    for d, start in enumerate(coords):
        position = index[d] + int(start)
        inside &= (position >= 0) & (position < tmap.shape[d])
        offset += position.astype(np.int64) * tmap.strides[d]
    return tmap.address + offset * byte_size(element), inside


def _read(ctx, tmap, coords, t) -> np.ndarray:
    tmap = _resolve(tmap)
    addresses, inside = _block(tmap, coords, tuple(t.shape), t.element)
    loaded = ctx.memory.load(addresses, inside, t.element)
    fill = np.nan if tmap.padding == "nan" else 0
    return np.where(inside, loaded, np.asarray(fill).astype(loaded.dtype))


def _write(ctx, tmap, coords, t, data) -> None:
    tmap = _resolve(tmap)
    addresses, inside = _block(tmap, coords, tuple(t.shape), t.element)
    ctx.memory.store(addresses, np.asarray(data), inside, t.element)


@semantics(tt.DescriptorLoadOp)
def descriptor_load(ctx, op, values):
    """The block at the offsets; out-of-bounds elements are the padding."""
    return _read(ctx, values[0], values[1:], op.results[0].type)


@semantics(tt.DescriptorStoreOp)
def descriptor_store(ctx, op, values):
    """Write the block's in-bounds elements."""
    _write(ctx, values[0], values[2:], op.operands[1].type, values[1])


@semantics(ttng.AsyncTMACopyGlobalToLocalOp)
def tma_load(ctx, op, values):
    """Copy the block into the buffer now (when the predicate holds)."""
    tmap, buf, _, pred = values[:4]
    if bool(pred):
        buf.data[...] = _read(ctx, tmap, values[4:], op.operands[1].type)


@semantics(ttng.AsyncTMACopyLocalToGlobalOp)
def tma_store(ctx, op, values):
    """Store the buffer's block now."""
    _write(ctx, values[0], values[2:], op.operands[1].type, values[1].data)


@semantics(ttng.InitBarrierOp, ttng.InvalBarrierOp, ttng.BarrierExpectOp, ttng.WaitBarrierOp,
           ttng.TMAStoreWaitOp, ttng.FenceAsyncSharedOp)
def tma_sync(ctx, op, values):
    """Barriers, fences and waits: copies completed when they were issued."""
    return None


@semantics(tt.MakeTensorDescriptorOp, opaque_results=True)
def make_tensor_descriptor(ctx, op, values):
    """The map of the tensor at the base with the given dims and element strides."""
    rank = len(op.attributes["block_shape"].values)
    padding = op.attributes.get("padding")
    return InterpretedTensorMap(int(values[0]), tuple(int(v) for v in values[1:1 + rank]),
                                tuple(int(v) for v in values[1 + rank:]),
                                padding.value if padding is not None else "zero")


@semantics(ttg.GlobalScratchAllocOp, opaque_results=True)
def global_scratch_alloc(ctx, op, values):
    """A place for the tensor map a `ttng.tensormap_create` writes."""
    return ScratchTensorMap()


@semantics(ttng.TensormapCreateOp)
def tensormap_create(ctx, op, values):
    """Record the map (dims and byte strides innermost first, as the op takes them)."""
    holder, address = values[0], int(values[1])
    if not isinstance(holder, ScratchTensorMap):
        raise OpError("ttng.tensormap_create writes into a ttg.global_scratch_alloc")
    rank = len(op.attributes["box_dim"].values)
    element_bytes = byte_size(op.operands[1].type.pointee)
    dims = tuple(int(v) for v in reversed(values[2:2 + rank]))
    strides = tuple(int(v) // element_bytes for v in reversed(values[2 + rank:])) + (1,)
    fill = "nan" if op.attributes["fill_mode"].value == ttng.TENSORMAP_FILL_MODES["nan"] \
        else "zero"
    holder.map = InterpretedTensorMap(address, dims, strides, fill)


@semantics(ttng.TensormapFenceproxyAcquireOp)
def tensormap_fence(ctx, op, values):
    """The map is visible as soon as it is written in a sequential run."""
    return None
