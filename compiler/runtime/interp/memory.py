"""The interpreter's global memory: argument arrays at virtual byte addresses, checked accesses.

Each array argument becomes a `Region` in the middle of its own 2**40-byte window of the
address space, so its base address is distinct, an offset gone wrong (either way) can never
reach another array, and the error can still say which array the address was meant for. Pointers
are int64 byte addresses, as on the GPU; `tt.addptr` scales offsets by the element size. Loads,
stores and atomics translate addresses back to (region, element index), honour masks, and raise
`OpError` naming the offending lane, address and array before touching memory, so a bad access
never reads or writes outside the arrays.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from compiler.ir.types import Type

from .errors import OpError
from .values import as_signed, as_unsigned, bits_of, from_storage, storage_dtype, to_storage

WINDOW_BITS = 40


@dataclass
class Region:
    """One argument array seen as bytes: `raw[i]` is the byte at address `start + i`."""

    name: str
    start: int
    raw: np.ndarray
    pointer: int
    array_dtype: np.dtype
    writable: bool
    _views: dict = field(default_factory=dict)

    @property
    def nbytes(self) -> int:
        """Size of the region in bytes."""
        return self.raw.size

    def typed(self, dtype: np.dtype) -> np.ndarray:
        """The region's bytes read as elements of `dtype` (a cached view, no copy)."""
        view = self._views.get(dtype)
        if view is None:
            usable = self.raw.size - self.raw.size % dtype.itemsize
            view = self.raw[:usable].view(dtype)
            self._views[dtype] = view
        return view


class _ByteSpan:
    """Exposes the bytes spanned by a strided array through the array interface."""

    def __init__(self, owner: np.ndarray, address: int, nbytes: int, readonly: bool):
        self.owner = owner
        self.__array_interface__ = {"data": (address, readonly), "shape": (nbytes,),
                                    "typestr": "|u1", "version": 3}


def byte_view(array: np.ndarray) -> tuple[np.ndarray, int]:
    """A uint8 view of the memory `array` spans, and the offset of its first element in it."""
    if array.size == 0:
        return np.zeros(0, np.uint8), 0
    if array.flags.c_contiguous or array.flags.f_contiguous:
        return array.ravel(order="K").view(np.uint8), 0
    low = sum(min(0, s * (n - 1)) for s, n in zip(array.strides, array.shape))
    high = sum(max(0, s * (n - 1)) for s, n in zip(array.strides, array.shape)) + array.itemsize
    data = array.__array_interface__["data"][0]
    span = _ByteSpan(array, data + low, high - low, not array.flags.writeable)
    return np.asarray(span), -low


class Memory:
    """All arrays a launch can reach, with checked, vectorized access by address."""

    def __init__(self):
        self.regions: list[Region] = []

    # ---- setup ------------------------------------------------------------------------------
    def add_array(self, array: np.ndarray, name: str) -> int:
        """Give `array` a region and return the address of its first element."""
        raw, offset = byte_view(array)
        start = ((len(self.regions) + 1) << WINDOW_BITS) + (1 << (WINDOW_BITS - 1))
        self.regions.append(Region(name, start, raw, start + offset, array.dtype,
                                   bool(array.flags.writeable)))
        return start + offset

    # ---- translation ------------------------------------------------------------------------
    def _describe(self, address: int, itemsize: int) -> str:
        index = (address >> WINDOW_BITS) - 1
        if abs(address) < 1 << WINDOW_BITS:
            return f"address {address:#x} is {address} bytes from a null pointer"
        if not 0 <= index < len(self.regions):
            return f"address {address:#x} does not point into any argument array"
        region = self.regions[index]
        if (address - region.start) % itemsize:
            return (f"address {address:#x} in '{region.name}' is not aligned to the "
                    f"{itemsize}-byte element size")
        element = (address - region.pointer) // itemsize
        count = (region.nbytes - (region.pointer - region.start)) // itemsize
        return (f"address {address:#x} is element {element} of '{region.name}', which has "
                f"{count} elements of {itemsize} bytes ({region.array_dtype} array)")

    def locate(self, addresses: np.ndarray, active: np.ndarray, itemsize: int, verb: str,
               shape: tuple) -> tuple[np.ndarray, np.ndarray]:
        """(region index, element index) of each flat address; checks every active lane."""
        index = (addresses >> WINDOW_BITS) - 1
        known = (index >= 0) & (index < len(self.regions))
        safe = np.where(known, index, 0)
        starts = np.array([r.start for r in self.regions] or [0], dtype=np.int64)
        sizes = np.array([r.nbytes for r in self.regions] or [0], dtype=np.int64)
        offset = addresses - starts[safe]
        ok = known & (offset >= 0) & (offset + itemsize <= sizes[safe]) & (offset % itemsize == 0)
        bad = active & ~ok
        if bad.any():
            lane = int(np.flatnonzero(bad)[0])
            where = (" at lane " + str(tuple(int(i) for i in np.unravel_index(lane, shape)))
                     if shape else "")
            raise OpError(f"{verb} out of bounds{where}: "
                          f"{self._describe(int(addresses[lane]), itemsize)}; mask the access "
                          f"or fix its offsets")
        return safe, offset // itemsize

    def _groups(self, index: np.ndarray, active: np.ndarray):
        """(region, lane selector) for each region the active lanes touch."""
        lanes = index[active]
        if lanes.size == 0:
            return []
        first, last = lanes.min(), lanes.max()
        if first == last:
            return [(self.regions[int(first)], active)]
        return [(self.regions[int(r)], active & (index == r)) for r in np.unique(lanes)]

    # ---- access -----------------------------------------------------------------------------
    def _lanes(self, addresses, mask, elem: Type, verb: str):
        """Flatten an access: (shape, active lanes, storage dtype, region index, element index)."""
        addresses = np.asarray(addresses, dtype=np.int64)
        shape = addresses.shape
        flat = addresses.reshape(-1)
        active = _active(mask, flat.size)
        dtype = storage_dtype(elem)
        index, element = self.locate(flat, active, dtype.itemsize, verb, shape)
        return shape, active, dtype, index, element

    def load(self, addresses, mask, elem: Type) -> np.ndarray:
        """Values of type `elem` at `addresses` (any shape); masked-off lanes read as 0."""
        shape, active, dtype, index, element = self._lanes(addresses, mask, elem, "load")
        out = np.zeros(active.size, dtype)
        for region, sel in self._groups(index, active):
            out[sel] = region.typed(dtype)[element[sel]]
        return from_storage(out, elem).reshape(shape)

    def store(self, addresses, values, mask, elem: Type) -> None:
        """Write `values` (type `elem`) at `addresses`, skipping masked-off lanes."""
        shape, active, dtype, index, element = self._lanes(addresses, mask, elem, "store")
        raw = np.broadcast_to(to_storage(values, elem), shape).reshape(-1)
        groups = self._groups(index, active)
        for region, _ in groups:
            if not region.writable:
                raise OpError(f"store into '{region.name}', whose array is read-only")
        for region, sel in groups:
            region.typed(dtype)[element[sel]] = raw[sel]

    def atomic(self, addresses, mask, elem: Type, update) -> np.ndarray:
        """Apply `update(old, lanes) -> new` per lane in lane order; return the old values.

        Lanes that share an address see each other's effects in lane order (sequential
        semantics): lanes are processed in rounds, each round touching each address once.
        """
        shape, active, dtype, index, element = self._lanes(addresses, mask, elem, "atomic")
        old = np.zeros(active.size, dtype)
        for region, sel in self._groups(index, active):
            if not region.writable:
                raise OpError(f"atomic on '{region.name}', whose array is read-only")
            view = region.typed(dtype)
            lanes = np.flatnonzero(sel)
            for round_lanes in _rounds(element[lanes], lanes):
                slots = element[round_lanes]
                current = view[slots]
                old[round_lanes] = current
                new = update(from_storage(current, elem), round_lanes)
                view[slots] = to_storage(new, elem)
        return from_storage(old, elem).reshape(shape)


def _active(mask, size: int) -> np.ndarray:
    """A flat boolean lane mask (all lanes when there is no mask)."""
    if mask is None:
        return np.ones(size, dtype=bool)
    return np.broadcast_to(np.asarray(mask, dtype=bool), (size,) if np.ndim(mask) == 0
                           else np.shape(mask)).reshape(-1)


def _rounds(slots: np.ndarray, lanes: np.ndarray):
    """Split `lanes` into rounds with distinct `slots`, keeping lane order within each slot."""
    if slots.size == 0:
        return
    order = np.argsort(slots, kind="stable")
    sorted_slots = slots[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_slots)) + 1]
    group_start = np.repeat(starts, np.diff(np.r_[starts, sorted_slots.size]))
    rank = np.empty(slots.size, dtype=np.int64)
    rank[order] = np.arange(slots.size) - group_start
    for r in range(int(rank.max()) + 1):
        yield lanes[rank == r]


ATOMIC_KINDS = ("add", "fadd", "max", "min", "umax", "umin", "exch", "and", "or", "xor")


def atomic_update(kind: str, elem: Type, values: np.ndarray):
    """The `update(old, lanes)` function of tt.atomic_rmw `kind` with operand `values` (flat)."""
    is_float = elem.scalar.is_float

    def pick(lanes):
        return values[lanes]

    if kind in ("add", "fadd"):
        return lambda old, lanes: old + pick(lanes)
    if kind in ("max", "min"):
        fn = np.maximum if kind == "max" else np.minimum
        if is_float:
            return lambda old, lanes: fn(old, pick(lanes))
        return lambda old, lanes: np.where(
            fn(as_signed(old, elem), as_signed(pick(lanes), elem)) == as_signed(old, elem),
            old, pick(lanes))
    if kind in ("umax", "umin"):
        fn = np.maximum if kind == "umax" else np.minimum
        return lambda old, lanes: np.where(
            fn(as_unsigned(old, elem), as_unsigned(pick(lanes), elem))
            == as_unsigned(old, elem), old, pick(lanes))
    if kind == "exch":
        return lambda old, lanes: pick(lanes)
    if kind in ("and", "or", "xor"):
        fn = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[kind]
        if is_float:
            raise OpError(f"atomic '{kind}' needs an integer pointee, not {elem}")
        return lambda old, lanes: fn(old, pick(lanes))
    raise OpError(f"unknown atomic kind '{kind}'; allowed: {', '.join(ATOMIC_KINDS)}")


def cas_update(elem: Type, compare: np.ndarray, values: np.ndarray):
    """The `update(old, lanes)` of tt.atomic_cas: write the value where the bits equal `compare`."""
    def update(old, lanes):
        equal = bits_of(old, elem) == bits_of(compare[lanes], elem)
        return np.where(equal, values[lanes], old)
    return update
