"""`DeviceArray`: a small n-dimensional array in GPU memory, so kernels run without torch.

It owns one `cuMemAlloc` allocation (freed when the array is garbage collected or `free()`d),
knows its shape, numpy dtype and strides (in elements, as torch reports them), and exposes what
launchers and the jit's specialization read: `data_ptr()`, `dtype`, `stride(i)`,
`element_size()`, and `__cuda_array_interface__` (version 3) for other libraries.
"""
from __future__ import annotations

import math
import weakref

import numpy as np

from . import driver


def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for extent in reversed(shape):
        strides.append(step)
        step *= max(extent, 1)
    return tuple(reversed(strides))


def _normalize_shape(shape) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"array shape {shape} has a negative extent")
    return shape


class DeviceArray:
    """A contiguous array in device memory. Build it with `empty`, `zeros` or `from_numpy`;
    read it back with `to_numpy()`."""

    def __init__(self, shape, dtype, pointer: int, device: int = 0, owner: bool = True):
        self.shape = _normalize_shape(shape)
        self.dtype = np.dtype(dtype)
        self.device = device
        self._pointer = int(pointer)
        self._strides = _contiguous_strides(self.shape)
        self._finalizer = None
        if owner and self._pointer:
            self._finalizer = weakref.finalize(self, driver.mem_free, self._pointer, device)
            self._finalizer.atexit = False      # the driver frees everything at process exit

    # ---- construction --------------------------------------------------------------------
    @classmethod
    def empty(cls, shape, dtype=np.float32, device: int = 0) -> "DeviceArray":
        """Uninitialized device memory of `shape` and `dtype`."""
        shape = _normalize_shape(shape)
        nbytes = math.prod(shape) * np.dtype(dtype).itemsize
        return cls(shape, dtype, driver.mem_alloc(nbytes, device), device)

    @classmethod
    def zeros(cls, shape, dtype=np.float32, device: int = 0) -> "DeviceArray":
        """Device memory of `shape` and `dtype` set to zero."""
        array = cls.empty(shape, dtype, device)
        driver.memset_d8(array._pointer, 0, array.nbytes)
        return array

    @classmethod
    def from_numpy(cls, host: np.ndarray, device: int = 0) -> "DeviceArray":
        """A device copy of a numpy array (made contiguous first)."""
        host = np.ascontiguousarray(host)
        array = cls.empty(host.shape, host.dtype, device)
        driver.memcpy_htod(array._pointer, host.ctypes.data, host.nbytes)
        return array

    @classmethod
    def empty_like(cls, other) -> "DeviceArray":
        """An uninitialized array with `other`'s shape and dtype."""
        return cls.empty(other.shape, other.dtype, getattr(other, "device", 0)
                         if isinstance(other, DeviceArray) else 0)

    # ---- reading back ----------------------------------------------------------------------
    def to_numpy(self) -> np.ndarray:
        """A host copy (waits for the copy, which follows earlier work on the default stream)."""
        host = np.empty(self.shape, self.dtype)
        driver.memcpy_dtoh(host.ctypes.data, self._pointer, self.nbytes)
        return host

    def copy_from_numpy(self, host: np.ndarray) -> None:
        """Overwrite the contents with a host array of the same shape and dtype."""
        host = np.ascontiguousarray(host, dtype=self.dtype)
        if host.shape != self.shape:
            raise ValueError(f"cannot copy an array of shape {host.shape} into a DeviceArray "
                             f"of shape {self.shape}")
        driver.memcpy_htod(self._pointer, host.ctypes.data, host.nbytes)

    def free(self) -> None:
        """Release the device memory now (the array must not be used afterwards)."""
        if self._finalizer is not None:
            self._finalizer()
        self._pointer = 0

    # ---- what launchers and the specialization read ------------------------------------------
    def data_ptr(self) -> int:
        """The device address of the first element (torch-compatible)."""
        return self._pointer

    def stride(self, dim: int | None = None):
        """Stride of `dim` in elements, or all strides when `dim` is None (torch-compatible)."""
        return self._strides if dim is None else self._strides[dim]

    def element_size(self) -> int:
        """Bytes per element."""
        return self.dtype.itemsize

    def numel(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    @property
    def size(self) -> int:
        """Number of elements (numpy-compatible)."""
        return self.numel()

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def nbytes(self) -> int:
        return self.numel() * self.dtype.itemsize

    @property
    def strides(self) -> tuple[int, ...]:
        """Strides in bytes (numpy-compatible)."""
        return tuple(s * self.dtype.itemsize for s in self._strides)

    @property
    def is_cuda(self) -> bool:
        return True

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"version": 3, "shape": self.shape, "typestr": self.dtype.str,
                "data": (self._pointer, False), "strides": None, "stream": None}

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d DeviceArray")
        return self.shape[0]

    def __repr__(self) -> str:
        return (f"DeviceArray(shape={self.shape}, dtype={self.dtype.name}, "
                f"ptr=0x{self._pointer:x}, device={self.device})")
