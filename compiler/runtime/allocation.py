"""`triton.set_allocator`: the function kernels that need global scratch memory get it from.

Triton calls the allocator as `alloc(size, alignment, stream)` for kernels using on-device
tensor descriptors or profiling scratch; so does our launch (`global_scratch`) for a kernel
whose metadata asks for global scratch memory (`global_scratch_size` bytes per program: the
tensor maps `tl.make_tensor_descriptor` builds when copied by TMA), once per launch, for the
whole grid. Without an allocator the launch uses a buffer of its own, one per device and
stream (so kernels running at once on different streams never share one), grown as needed:
where Triton stops with "no allocator was set", a kernel still runs.
"""
from __future__ import annotations

from typing import Callable

_allocator: Callable | None = None


def set_allocator(allocator: Callable | None) -> None:
    """Set the global-scratch allocator: `allocator(size: int, alignment: int, stream)` returns
    an object with `data_ptr()` (a torch tensor), or None to clear it."""
    global _allocator
    if allocator is not None and not callable(allocator):
        raise TypeError(f"set_allocator takes a callable (size, alignment, stream) -> buffer, "
                        f"not {type(allocator).__name__}")
    _allocator = allocator


def current_allocator() -> Callable | None:
    """The allocator set with `set_allocator`, or None."""
    return _allocator


#: (device, stream handle) -> the launch's own scratch buffer (a DeviceArray); buffers a
#: larger one replaced are kept, as a kernel launched earlier may still use them
_own_buffers: dict = {}
_retired: list = []


def global_scratch(nbytes: int, alignment: int, stream, device: int = 0):
    """(device address, keep-alive object) of `nbytes` of global scratch memory aligned to
    `alignment` for one launch on `stream` (a raw handle): from the `set_allocator` allocator
    when there is one, else the launch's own buffer for this device and stream."""
    if _allocator is not None:
        buffer = _allocator(nbytes, alignment, stream)
        address = int(buffer.data_ptr())
        if address % alignment:
            raise ValueError(f"the set_allocator allocator returned address {address:#x} for "
                             f"{nbytes} bytes aligned to {alignment}: it is not aligned")
        return address, buffer
    import numpy as np

    from .device_array import DeviceArray
    key = (device, stream)
    buffer = _own_buffers.get(key)
    if buffer is None or buffer.nbytes < nbytes:
        if buffer is not None:
            _retired.append(buffer)
        size = max(nbytes, 2 * buffer.nbytes if buffer is not None else 0)
        buffer = DeviceArray.empty((size,), np.uint8, device=device)   # cuMemAlloc: 256-aligned
        _own_buffers[key] = buffer
    return buffer.data_ptr(), buffer
