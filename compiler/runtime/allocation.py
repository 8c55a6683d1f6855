"""`triton.set_allocator`: the function kernels that need global scratch memory get it from.

Triton calls the allocator as `alloc(size, alignment, stream)` for kernels using on-device
tensor descriptors or profiling scratch. Our kernels use no global scratch yet, so the allocator
is recorded and handed to the code that will need it (`current_allocator()`), never called.
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
