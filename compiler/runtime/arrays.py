"""Where sample kernels and scripts keep their data: on the GPU when one is usable, else numpy.

`to_device(a)` gives a `DeviceArray` on a machine with a GPU and returns the numpy array itself
otherwise (kernels then run through the interpreter); `to_host(x)` brings either back as numpy.
"""
from __future__ import annotations

import numpy as np


def gpu_available() -> bool:
    """True when a CUDA GPU can be used (the driver loads and a device exists)."""
    try:
        from compiler.runtime.driver import gpu_available as driver_gpu_available
    except ImportError:
        return False
    return driver_gpu_available()


def to_device(a: np.ndarray):
    """Copy `a` to the GPU (a DeviceArray) when one is usable; else return `a` unchanged."""
    if gpu_available():
        from compiler.runtime.device_array import DeviceArray
        return DeviceArray.from_numpy(np.ascontiguousarray(a))
    return a


def empty_like(a: np.ndarray):
    """An uninitialized array shaped like `a`, where kernels will run (GPU or host)."""
    return to_device(np.empty_like(a))


def to_host(x) -> np.ndarray:
    """A numpy copy of a DeviceArray, a torch tensor or a numpy array."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "to_numpy"):
        return x.to_numpy()
    if hasattr(x, "detach"):
        return x.detach().cpu().numpy()
    return np.asarray(x)
