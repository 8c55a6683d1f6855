"""`triton.runtime.driver.active`: the device queries Triton code makes before it launches.

`active()` returns the `CudaDriver` when a CUDA GPU is usable, else the `InterpreterDriver`,
whose device is the host (torch's "cpu") and whose properties are those of the simulated target
the interpreter stands for (sm_90, H100/H200 limits), stated as such in `SIMULATED_PROPERTIES`.
As in Triton, the choice does not depend on whether kernels are interpreted
(TILE_INTERPRET / TRITON_INTERPRET): on a GPU host, interpreted code keeps its tensors on the
GPU and the interpreter stages them through host memory for each launch.
Both answer `get_current_target`, `get_active_torch_device`, `get_current_device`,
`set_current_device`, `get_current_stream`, `get_device_interface`, `get_benchmarker`,
`get_empty_cache_for_benchmark`, `clear_cache` and `utils.get_device_properties(device)` with
Triton's keys.
"""
from __future__ import annotations

import functools

from compiler.codegen.backend import GPUTarget
from compiler.codegen.nvidia_backend import DEFAULT_ARCH

#: What `utils.get_device_properties` reports in the interpreter: the limits of the sm_90 target
#: it simulates (an H100/H200), so occupancy arithmetic in user code stays meaningful.
SIMULATED_PROPERTIES = {"max_shared_mem": 232448, "max_num_regs": 65536,
                        "multiprocessor_count": 132, "warpSize": 32, "sm_clock_rate": 1980000,
                        "mem_clock_rate": 2619000, "mem_bus_width": 5120,
                        "max_threads_per_sm": 2048}

#: Triton's property key -> our driver's CU_DEVICE_ATTRIBUTE_ name.
_ATTRIBUTES = {"max_shared_mem": "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
               "max_num_regs": "MAX_REGISTERS_PER_BLOCK",
               "multiprocessor_count": "MULTIPROCESSOR_COUNT", "warpSize": "WARP_SIZE",
               "sm_clock_rate": "CLOCK_RATE", "mem_clock_rate": "MEMORY_CLOCK_RATE",
               "mem_bus_width": "GLOBAL_MEMORY_BUS_WIDTH",
               "max_threads_per_sm": "MAX_THREADS_PER_MULTIPROCESSOR"}


def _torch():
    try:
        import torch
    except ImportError:
        raise RuntimeError("this driver query returns a torch object, and torch is not "
                           "installed (pip install torch)") from None
    return torch


class _Utils:
    """`driver.active.utils`: the device property table."""

    def __init__(self, properties):
        self._properties = properties

    def get_device_properties(self, device: int = 0) -> dict:
        """Triton's property dict (max_shared_mem, max_num_regs, multiprocessor_count,
        warpSize, sm_clock_rate, mem_clock_rate, mem_bus_width) of `device`."""
        return self._properties(device)


class _Driver:
    """What both drivers share: the current device number and the benchmarker."""

    backend = "cuda"

    def __init__(self):
        self._device = 0

    def get_current_device(self) -> int:
        """The device number launches go to."""
        return self._device

    def set_current_device(self, device: int) -> None:
        """Make `device` the one launches go to."""
        self._device = int(device)

    def get_benchmarker(self):
        """The timing function (`triton.testing.do_bench`)."""
        from compiler.testing import do_bench
        return do_bench

    def is_active(self) -> bool:
        """True: this is the driver in use."""
        return True


class CudaDriver(_Driver):
    """The CUDA GPU, through our driver module (cuda-python)."""

    def __init__(self):
        super().__init__()
        self.utils = _Utils(self._device_properties)

    def get_current_target(self) -> GPUTarget:
        """GPUTarget("cuda", <compute capability as major*10+minor>, 32)."""
        from compiler.runtime import driver
        major, minor = driver.device_capability(self._device)
        return GPUTarget("cuda", major * 10 + minor, 32)

    def get_active_torch_device(self):
        """torch.device("cuda", <current device>)."""
        return _torch().device("cuda", self._device)

    def get_current_stream(self, device: int | None = None) -> int:
        """The raw handle of torch's current CUDA stream (0, the default stream, without
        torch)."""
        try:
            import torch
        except ImportError:
            return 0
        return torch.cuda.current_stream(self._device if device is None else device).cuda_stream

    def get_device_interface(self):
        """torch.cuda (what Triton hands out here)."""
        return _torch().cuda

    def get_empty_cache_for_benchmark(self):
        """A 256 MB torch buffer whose zeroing evicts the L2 cache between timed runs."""
        from compiler.testing import L2_FLUSH_BYTES
        torch = _torch()
        return torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int, device="cuda")

    def clear_cache(self, cache) -> None:
        """Zero the buffer from `get_empty_cache_for_benchmark`."""
        cache.zero_()

    @functools.lru_cache(maxsize=None)
    def _device_properties(self, device: int) -> dict:
        from compiler.runtime import driver
        return {key: driver.device_attribute(name, device) for key, name in _ATTRIBUTES.items()}


def complete_torch_cpu_streams(torch) -> None:
    """Give `torch.cpu` the `set_stream` that device-agnostic code calls as
    `getattr(torch, device.type).set_stream(stream)` (Triton's tutorials do). torch's CPU
    module has `Stream`, `current_stream` and the `stream(...)` context, "to facilitate
    device-agnostic code", but no `set_stream`; the one added here makes `stream` the current
    CPU stream through torch's own `StreamContext`, so `torch.cpu.current_stream()` returns it
    afterwards. Nothing is added when torch has one."""
    cpu = torch.cpu
    if hasattr(cpu, "set_stream") or not hasattr(cpu, "StreamContext"):
        return

    def set_stream(stream) -> None:
        """Make `stream` (a torch.cpu.Stream) the current CPU stream (CPU work runs in
        program order: streams change nothing else)."""
        if not isinstance(stream, cpu.Stream):
            raise TypeError(f"torch.cpu.set_stream needs a torch.cpu.Stream, got "
                            f"{type(stream).__name__}")
        cpu.StreamContext(stream).__enter__()

    set_stream.__module__ = __name__
    cpu.set_stream = set_stream


class InterpreterDriver(_Driver):
    """No GPU: kernels run in our interpreter on host memory."""

    def __init__(self):
        super().__init__()
        self.utils = _Utils(lambda device: dict(SIMULATED_PROPERTIES))

    def get_current_target(self) -> GPUTarget:
        """The target the compiler generates code for when asked (sm_90): the interpreter
        simulates it."""
        return GPUTarget("cuda", DEFAULT_ARCH, 32)

    def get_active_torch_device(self):
        """torch.device("cpu"): the interpreter reads and writes host tensors. torch.cpu
        gets the `set_stream` it lacks (`complete_torch_cpu_streams`), since code given this
        device calls it as it calls torch.cuda.set_stream."""
        torch = _torch()
        complete_torch_cpu_streams(torch)
        return torch.device("cpu")

    def get_current_stream(self, device: int | None = None) -> int:
        """0: the interpreter runs synchronously, there is no stream."""
        return 0

    def get_device_interface(self):
        """torch.cpu (the interpreter's device), with `set_stream` (see
        `get_active_torch_device`)."""
        torch = _torch()
        complete_torch_cpu_streams(torch)
        return torch.cpu

    def get_empty_cache_for_benchmark(self):
        """A small host buffer (no L2 to flush on the host)."""
        return _torch().empty(1, dtype=_torch().int)

    def clear_cache(self, cache) -> None:
        """Nothing to evict on the host."""


@functools.lru_cache(maxsize=None)
def active() -> _Driver:
    """The driver in use, chosen once: CUDA when a GPU is usable (whether or not kernels are
    interpreted, as Triton chooses it), else the interpreter's."""
    from compiler.runtime.driver import gpu_available
    if gpu_available():
        return CudaDriver()
    return InterpreterDriver()
