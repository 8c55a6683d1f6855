"""The CUDA driver layer: a thin, checked wrapper over `cuda.bindings.driver`.

Everything here imports on a machine without a GPU or without libcuda: the bindings are imported
lazily, `gpu_available()` answers False instead of raising, and any other call raises
`CudaUnavailable` with the reason. Every CUDA call goes through `check`, which turns a failed
`CUresult` into a `CudaError` naming the call, the error (cuGetErrorName) and its description
(cuGetErrorString). The device's primary context is retained once and made current on demand
in each thread that needs it.
"""
from __future__ import annotations

import functools
import sys
import threading
from dataclasses import dataclass, field
from typing import Any

#: Dynamic shared memory a kernel may use without opting in (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_...).
DEFAULT_SHARED_LIMIT = 48 * 1024


class CudaUnavailable(RuntimeError):
    """No usable CUDA driver or device on this machine (the message says which)."""


class CudaError(RuntimeError):
    """A CUDA driver call failed: carries the call, the error code, its name and description."""

    def __init__(self, call: str, code: int, name: str, description: str, detail: str = ""):
        message = f"{call} failed: {name} ({description})"
        if detail:
            message += "\n" + detail
        super().__init__(message)
        self.call = call
        self.code = code
        self.name = name
        self.description = description
        self.detail = detail


# --------------------------------------------------------------------------------------------
# Importing the bindings and checking results

_BINDINGS: Any = None
_BINDINGS_ERROR: str | None = None


def bindings():
    """The `cuda.bindings.driver` module, imported on first use; `CudaUnavailable` if missing."""
    global _BINDINGS, _BINDINGS_ERROR
    if _BINDINGS is None and _BINDINGS_ERROR is None:
        try:
            from cuda.bindings import driver as cuda_driver
            _BINDINGS = cuda_driver
        except Exception as exc:  # ImportError, or a broken install raising at import time
            _BINDINGS_ERROR = f"cuda-python (cuda.bindings) cannot be imported: {exc}"
    if _BINDINGS is None:
        raise CudaUnavailable(_BINDINGS_ERROR)
    return _BINDINGS


def error_name_and_description(code) -> tuple[str, str]:
    """cuGetErrorName / cuGetErrorString for `code`, with fallbacks if they fail themselves."""
    cu = bindings()
    try:
        fallback = cu.CUresult(int(code)).name      # the enum knows names without libcuda
    except Exception:
        fallback = f"CUDA error {int(code)}"
    try:
        err, name = cu.cuGetErrorName(code)
        name = name.decode() if not err and name else fallback
    except Exception:
        name = fallback
    try:
        err, text = cu.cuGetErrorString(code)
        text = text.decode() if not err and text else "no description"
    except Exception:
        text = "no description"
    return name, text


def raise_cuda_error(call: str, code, detail: str = "") -> None:
    """Raise the `CudaError` for a failed call."""
    name, text = error_name_and_description(code)
    raise CudaError(call, int(code), name, text, detail)


def check(result: tuple, call: str):
    """Unpack a cuda.bindings result `(err, *values)`: raise `CudaError` on failure, else
    return None, the single value, or the tuple of values."""
    err = result[0]
    if err:
        raise_cuda_error(call, err)
    if len(result) == 1:
        return None
    return result[1] if len(result) == 2 else result[1:]


# --------------------------------------------------------------------------------------------
# Initialization, devices and the primary context

_INIT_LOCK = threading.Lock()
_INITIALIZED = False
_INIT_ERROR: str | None = None          # why cuInit failed, remembered so we ask only once
_CONTEXTS: dict[int, Any] = {}          # device ordinal -> retained primary CUcontext
_THREAD = threading.local()             # .current: device ordinal made current in this thread


def init() -> None:
    """cuInit(0), once per process. Raises `CudaUnavailable` when there is no driver or GPU."""
    global _INITIALIZED, _INIT_ERROR
    if _INITIALIZED:
        return
    with _INIT_LOCK:
        if _INITIALIZED:
            return
        if _INIT_ERROR is None:
            cu = bindings()
            try:
                result = cu.cuInit(0)
            except Exception as exc:   # libcuda missing: cuda.pathfinder raises at first call
                _INIT_ERROR = f"the CUDA driver library cannot be loaded: {exc}"
            else:
                if result[0]:
                    name, text = error_name_and_description(result[0])
                    _INIT_ERROR = f"cuInit failed: {name} ({text})"
                else:
                    _INITIALIZED = True
        if _INIT_ERROR is not None:
            raise CudaUnavailable(_INIT_ERROR)


@functools.lru_cache(maxsize=None)
def gpu_available() -> bool:
    """True when the CUDA driver loads and sees at least one device. Cached; never raises."""
    try:
        return device_count() > 0
    except Exception:
        return False


def device_count() -> int:
    """Number of CUDA devices visible to this process."""
    init()
    return check(bindings().cuDeviceGetCount(), "cuDeviceGetCount")


def _device_handle(device: int):
    init()
    count = device_count()
    if not 0 <= device < count:
        raise ValueError(f"device {device} does not exist; this machine has {count} CUDA "
                         f"device(s), numbered from 0")
    return check(bindings().cuDeviceGet(device), f"cuDeviceGet({device})")


def device_attribute(name: str, device: int = 0) -> int:
    """A device attribute by its short name, e.g. "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"."""
    cu = bindings()
    attr = getattr(cu.CUdevice_attribute, "CU_DEVICE_ATTRIBUTE_" + name)
    return check(cu.cuDeviceGetAttribute(attr, _device_handle(device)),
                 f"cuDeviceGetAttribute({name})")


@functools.lru_cache(maxsize=None)
def device_capability(device: int = 0) -> tuple[int, int]:
    """Compute capability (major, minor) of `device`, e.g. (9, 0) on an H100/H200."""
    return (device_attribute("COMPUTE_CAPABILITY_MAJOR", device),
            device_attribute("COMPUTE_CAPABILITY_MINOR", device))


def device_arch(device: int = 0) -> int:
    """The device's compute capability as one number (90 for 9.0): the arch to compile for."""
    major, minor = device_capability(device)
    return major * 10 + minor


def device_name(device: int = 0) -> str:
    """The device's marketing name, e.g. "NVIDIA H200"."""
    raw = check(bindings().cuDeviceGetName(256, _device_handle(device)), "cuDeviceGetName")
    return raw.split(b"\0", 1)[0].decode()


def driver_version() -> int:
    """The driver's CUDA version as an int (13000 for CUDA 13.0)."""
    init()
    return check(bindings().cuDriverGetVersion(), "cuDriverGetVersion")


def context(device: int = 0):
    """The primary context of `device`, retained once per process and made current in the
    calling thread (cheap after the first call in a thread)."""
    if getattr(_THREAD, "current", None) == device:
        return _CONTEXTS[device]
    with _INIT_LOCK:
        ctx = _CONTEXTS.get(device)
    if ctx is None:
        handle = _device_handle(device)
        with _INIT_LOCK:
            ctx = _CONTEXTS.get(device)
            if ctx is None:
                ctx = check(bindings().cuDevicePrimaryCtxRetain(handle),
                            "cuDevicePrimaryCtxRetain")
                _CONTEXTS[device] = ctx
    check(bindings().cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    _THREAD.current = device
    return ctx


def forget_current_context() -> None:
    """Mark this thread as having no current context (the next `context()` sets it again)."""
    _THREAD.current = None


def synchronize(device: int = 0) -> None:
    """Wait for all work on `device` (cuCtxSynchronize)."""
    context(device)
    check(bindings().cuCtxSynchronize(), "cuCtxSynchronize")


# --------------------------------------------------------------------------------------------
# Modules and functions

@dataclass
class LoadedModule:
    """A module loaded into a context: its handle, and whether the driver JIT-compiled PTX."""

    handle: Any
    from_ptx: bool
    jit_log: str = ""
    device: int = 0
    functions: dict = field(default_factory=dict)

    def unload(self) -> None:
        """cuModuleUnload; the module's functions become invalid."""
        if self.handle is not None:
            context(self.device)
            check(bindings().cuModuleUnload(self.handle), "cuModuleUnload")
            self.handle = None
            self.functions.clear()


def _is_ptx(image: bytes | str) -> bool:
    if isinstance(image, str):
        return True
    return not image.startswith(b"\x7fELF") and b".target" in image[:4096]


def load_module(image: bytes | str, device: int = 0) -> LoadedModule:
    """Load a cubin (ELF bytes) or PTX (text, or bytes of text; the driver JIT-compiles it and
    the result says so) into `device`'s primary context. A PTX error includes the JIT's log."""
    context(device)
    cu = bindings()
    if not _is_ptx(image):
        handle = check(cu.cuModuleLoadData(bytes(image)), "cuModuleLoadData(cubin)")
        return LoadedModule(handle, from_ptx=False, device=device)
    text = image.encode() if isinstance(image, str) else bytes(image)
    if not text.endswith(b"\0"):
        text += b"\0"
    log_size = 16384
    error_log, info_log = bytearray(log_size), bytearray(log_size)
    opts = cu.CUjit_option
    keys = [opts.CU_JIT_ERROR_LOG_BUFFER, opts.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            opts.CU_JIT_INFO_LOG_BUFFER, opts.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES]
    values = [error_log, log_size, info_log, log_size]
    try:
        result = cu.cuModuleLoadDataEx(text, len(keys), keys, values)
    except TypeError:  # a bindings version that will not take log buffers: load without logs
        result = cu.cuModuleLoadData(text)
        error_log = info_log = bytearray()
    if result[0]:
        log = error_log.split(b"\0", 1)[0].decode(errors="replace").strip()
        raise_cuda_error("cuModuleLoadDataEx(PTX, driver JIT)", result[0],
                         f"PTX JIT log:\n{log}" if log else "")
    info = info_log.split(b"\0", 1)[0].decode(errors="replace").strip()
    return LoadedModule(result[1], from_ptx=True, jit_log=info, device=device)


@dataclass
class LoadedKernel:
    """A kernel loaded onto a device: its module and function handles plus the resource facts
    the driver reports."""

    name: str
    module: Any
    function: Any
    shared: int
    device: int = 0
    num_regs: int = 0
    local_bytes: int = 0          # per-thread local memory (spills, stack)
    max_threads: int = 0
    notes: tuple = ()             # e.g. "the driver compiled the kernel at load time"


def load_kernel(name: str, binary: bytes | str, shared: int, device: int = 0,
                arch: int | None = None) -> LoadedKernel:
    """Load a cubin (or PTX text, which the driver JIT-compiles) onto `device`, look up kernel
    `name` and allow it `shared` bytes of dynamic shared memory (raising the limit above
    48 KB). `arch` (the compute capability the binary was built for) makes a mismatch with
    the device an error that says which arch to compile for."""
    try:
        module = load_module(binary, device)
    except CudaError as err:
        if err.name in ("CUDA_ERROR_NO_BINARY_FOR_GPU", "CUDA_ERROR_INVALID_IMAGE",
                        "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"):
            present = device_arch(device)
            built = f"sm_{arch}" if arch is not None else "another GPU"
            raise CudaError(err.call, err.code, err.name, err.description,
                            f"the kernel was compiled for {built}; this device is "
                            f"sm_{present}: compile with arch={present}") from None
        raise
    function = get_function(module, name)
    set_dynamic_shared_memory(function, shared, device)
    return LoadedKernel(
        name=name, module=module, function=function, shared=shared, device=device,
        num_regs=function_attribute(function, "NUM_REGS"),
        local_bytes=function_attribute(function, "LOCAL_SIZE_BYTES"),
        max_threads=function_attribute(function, "MAX_THREADS_PER_BLOCK"),
        notes=("the driver JIT-compiled the PTX (no cubin)",) if module.from_ptx else ())


def get_function(module: LoadedModule, name: str):
    """The kernel `name` of a loaded module (a CUfunction), looked up once."""
    fn = module.functions.get(name)
    if fn is None:
        if module.handle is None:
            raise ValueError(f"module was unloaded; cannot get function '{name}'")
        context(module.device)
        fn = check(bindings().cuModuleGetFunction(module.handle, name.encode()),
                   f"cuModuleGetFunction('{name}')")
        module.functions[name] = fn
    return fn


def function_attribute(fn, name: str) -> int:
    """A function attribute by short name, e.g. "NUM_REGS", "SHARED_SIZE_BYTES"."""
    cu = bindings()
    attr = getattr(cu.CUfunction_attribute, "CU_FUNC_ATTRIBUTE_" + name)
    return check(cu.cuFuncGetAttribute(attr, fn), f"cuFuncGetAttribute({name})")


def max_active_blocks_per_sm(fn, block_size: int, shared_bytes: int) -> int:
    """How many CTAs of `fn` (with `block_size` threads and `shared_bytes` of dynamic shared
    memory) one SM holds at once (cuOccupancyMaxActiveBlocksPerMultiprocessor)."""
    return check(bindings().cuOccupancyMaxActiveBlocksPerMultiprocessor(fn, block_size,
                                                                         shared_bytes),
                 "cuOccupancyMaxActiveBlocksPerMultiprocessor")


def set_dynamic_shared_memory(fn, shared_bytes: int, device: int = 0) -> None:
    """Allow `fn` to launch with `shared_bytes` of dynamic shared memory: above the 48 KB default
    this sets CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, after checking the device's
    opt-in limit (minus the function's static shared memory), and asks for the largest
    shared-memory carveout (CU_FUNC_CACHE_PREFER_SHARED, as Triton's launcher does), so that
    as many CTAs as the shared memory allows stay resident on an SM (two 113 KB attention
    CTAs need the 228 KB carveout; a smaller one the driver may pick holds only one)."""
    if shared_bytes <= DEFAULT_SHARED_LIMIT:
        return
    limit = device_attribute("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", device)
    static = function_attribute(fn, "SHARED_SIZE_BYTES")
    if shared_bytes + static > limit:
        from compiler.runtime.errors import OutOfResources
        raise OutOfResources(shared_bytes + static, limit, "shared memory (bytes per block)")
    cu = bindings()
    check(cu.cuFuncSetCacheConfig(fn, cu.CUfunc_cache.CU_FUNC_CACHE_PREFER_SHARED),
          "cuFuncSetCacheConfig(PREFER_SHARED)")
    attr = cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    check(cu.cuFuncSetAttribute(fn, attr, shared_bytes),
          "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)")


# --------------------------------------------------------------------------------------------
# Streams and events

class Stream:
    """A CUDA stream. `Stream.default()` is the legacy default stream (handle 0)."""

    def __init__(self, handle=None, owned: bool = False, device: int = 0):
        self.device = device
        self.owned = owned
        self.handle = handle if handle is not None else bindings().CUstream(0)

    @classmethod
    def create(cls, non_blocking: bool = True, device: int = 0) -> "Stream":
        """A new stream (non-blocking with respect to the default stream unless told)."""
        context(device)
        cu = bindings()
        flags = cu.CUstream_flags.CU_STREAM_NON_BLOCKING if non_blocking else \
            cu.CUstream_flags.CU_STREAM_DEFAULT
        return cls(check(cu.cuStreamCreate(int(flags)), "cuStreamCreate"), True, device)

    @classmethod
    def default(cls) -> "Stream":
        """The default stream of the current context."""
        return cls(None, False)

    def synchronize(self) -> None:
        """Wait until all work queued on this stream is done."""
        context(self.device)
        check(bindings().cuStreamSynchronize(self.handle), "cuStreamSynchronize")

    def close(self) -> None:
        """Destroy the stream if we created it."""
        if self.owned and self.handle is not None:
            context(self.device)
            check(bindings().cuStreamDestroy(self.handle), "cuStreamDestroy")
            self.handle = None

    def __int__(self) -> int:
        return int(self.handle)


#: (torch module, its raw current-stream reader, its current-device reader), cached once that
#: module has initialized CUDA: a launch asks for the current stream every time, and the lookups
#: and `torch.cuda.is_initialized()` cost about as much as the two calls themselves
_TORCH_STREAM: tuple = (None, None, None)


def current_stream():
    """The stream a launch that names none goes to. Triton launches on torch's current stream,
    so ours does too: torch's current stream on its current device, when torch is imported and
    has initialized CUDA and that stream is not the default one; else None (the default stream,
    which cuLaunchKernel takes for free). Without this, a kernel launched inside
    `torch.cuda.stream(s)` would run unordered with the torch work around it on `s`."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    module, raw_stream, device = _TORCH_STREAM
    if module is not torch:
        raw_stream, device = _torch_stream_readers(torch)
        if raw_stream is None:
            return None
    try:
        raw = raw_stream(device())
    except RuntimeError:                       # torch's CUDA went away (a bad fork)
        return None
    return raw or None


def _torch_stream_readers(torch) -> tuple:
    """torch's (raw current stream, current device) readers once it has initialized CUDA
    (cached in `_TORCH_STREAM`), else (None, None)."""
    global _TORCH_STREAM
    try:
        if not torch.cuda.is_initialized():
            return None, None
        readers = torch._C._cuda_getCurrentRawStream, torch._C._cuda_getDevice
    except (AttributeError, RuntimeError):     # a torch without CUDA, or a stand-in module
        return None, None
    _TORCH_STREAM = (torch, *readers)
    return readers


def stream_handle(stream) -> int:
    """A raw stream handle (int) from None (default stream), an int, our `Stream`, a CUstream,
    or a torch/cupy stream object (`.cuda_stream` / `.ptr`)."""
    if stream is None:
        return 0
    if isinstance(stream, int):
        return stream
    if isinstance(stream, Stream):
        return int(stream.handle)
    for attribute in ("cuda_stream", "ptr", "handle"):
        value = getattr(stream, attribute, None)
        if value is not None:
            return int(value)
    try:
        return int(stream)
    except (TypeError, ValueError):
        raise TypeError(f"cannot use {type(stream).__name__} as a CUDA stream; pass None, an "
                        f"int handle, a compiler.runtime.driver.Stream or a torch stream") from None


class Event:
    """A CUDA event for timing: record on a stream, then `elapsed_ms(start, end)`."""

    def __init__(self, device: int = 0):
        context(device)
        cu = bindings()
        self.device = device
        self.handle = check(cu.cuEventCreate(int(cu.CUevent_flags.CU_EVENT_DEFAULT)),
                            "cuEventCreate")

    def record(self, stream=None) -> "Event":
        """Enqueue the event on `stream` (default stream when None)."""
        check(bindings().cuEventRecord(self.handle, stream_handle(stream)), "cuEventRecord")
        return self

    def synchronize(self) -> None:
        """Wait until the event has completed."""
        check(bindings().cuEventSynchronize(self.handle), "cuEventSynchronize")

    def elapsed_ms(self, end: "Event") -> float:
        """Milliseconds between this event and `end` (waits for `end`)."""
        end.synchronize()
        return float(check(bindings().cuEventElapsedTime(self.handle, end.handle),
                           "cuEventElapsedTime"))

    def __del__(self):
        handle = getattr(self, "handle", None)
        if handle is not None and _BINDINGS is not None:
            try:
                _BINDINGS.cuEventDestroy(handle)
            except Exception:
                pass


def elapsed_ms(start: Event, end: Event) -> float:
    """Milliseconds between two recorded events."""
    return start.elapsed_ms(end)


# --------------------------------------------------------------------------------------------
# Memory

def mem_alloc(nbytes: int, device: int = 0) -> int:
    """Allocate `nbytes` of device memory; returns the address (0 for a zero-byte request)."""
    if nbytes == 0:
        return 0
    context(device)
    return int(check(bindings().cuMemAlloc(int(nbytes)), f"cuMemAlloc({nbytes} bytes)"))


def mem_free(pointer: int, device: int = 0) -> None:
    """Free device memory from `mem_alloc` (0 is ignored)."""
    if pointer:
        context(device)
        check(bindings().cuMemFree(pointer), "cuMemFree")


def memcpy_htod(dst: int, src_host_address: int, nbytes: int) -> None:
    """Copy `nbytes` from a host address to a device address (synchronous)."""
    if nbytes:
        check(bindings().cuMemcpyHtoD(dst, src_host_address, nbytes), "cuMemcpyHtoD")


def memcpy_dtoh(dst_host_address: int, src: int, nbytes: int) -> None:
    """Copy `nbytes` from a device address to a host address (synchronous)."""
    if nbytes:
        check(bindings().cuMemcpyDtoH(dst_host_address, src, nbytes), "cuMemcpyDtoH")


def memcpy_dtod(dst: int, src: int, nbytes: int) -> None:
    """Copy `nbytes` between device addresses."""
    if nbytes:
        check(bindings().cuMemcpyDtoD(dst, src, nbytes), "cuMemcpyDtoD")


def memset_d8(dst: int, value: int, nbytes: int) -> None:
    """Set `nbytes` bytes at a device address to `value`."""
    if nbytes:
        check(bindings().cuMemsetD8(dst, value, nbytes), "cuMemsetD8")


def mem_info(device: int = 0) -> tuple[int, int]:
    """(free, total) bytes of device memory."""
    context(device)
    free, total = check(bindings().cuMemGetInfo(), "cuMemGetInfo")
    return int(free), int(total)


def __getattr__(name: str):
    """`driver.active` (Triton's `triton.runtime.driver.active`): see `active_driver`."""
    if name == "active":
        from compiler.runtime.active_driver import active
        return active()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
