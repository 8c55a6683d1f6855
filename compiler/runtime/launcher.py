"""The launcher: packs kernel arguments and calls cuLaunchKernel with little Python per launch.

A `Launcher` is built once per compiled kernel from its signature, the list of argument kinds
("ptr" — or Triton's "*fp32" style —, "i1", "i8", "i16", "i32", "i64", "u8", "u16", "u32",
"u64", "fp16", "bf16", "fp32", "fp64", and "tensormap": a host descriptor's 128-byte
CUtensorMap, `compiler.runtime.tensor_map`). Building it lays the arguments out in one ctypes buffer
with natural alignment, builds the `void*[]` that points at each slot, and generates a small
launch function specialized to the signature, so that a launch is: convert each pointer argument
to an address, `struct.pack_into` the buffer (which also range-checks every scalar), one
cuLaunchKernel. Anything unexpected (wrong type, wrong count, a host array, a bad grid) drops to
a slow path that names the argument and says what is allowed. A bound launch made with
`addresses=True` skips the pointer conversion: the jit, which already read each array's address
to specialize on its alignment, passes the addresses.

Pointer arguments accept torch tensors (CUDA ones), our `DeviceArray`, anything with
`__cuda_array_interface__`, raw ints (device addresses) and None (a null pointer).
"""
from __future__ import annotations

import ctypes
import functools
import math
import struct
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from . import driver

# kind -> struct format character; the slot size and alignment follow from it.
ARG_FORMATS = {
    "ptr": "Q", "i1": "I", "i8": "b", "i16": "h", "i32": "i", "i64": "q",
    "u8": "B", "u16": "H", "u32": "I", "u64": "Q", "fp16": "e", "bf16": "H", "fp32": "f",
    "fp64": "d", "tensormap": "128s",
}
#: slot alignment per kind where it is not the slot's size (a CUtensorMap: 64 bytes)
ARG_ALIGNMENT = {"tensormap": 64}
# kind -> expression (on the argument's name) the fast path packs instead of the argument itself.
# A pointer's getter is looked up by type inline (one call instead of two per pointer).
_FAST_CONVERSIONS = {"ptr": "(pointer_getters.get(type({0})) or device_pointer)({0})",
                     "i1": "bool({0})", "bf16": "bf16_bits({0})",
                     "tensormap": "({0} if len({0}) == 128 else tensor_map_bytes({0}))"}
ALIASES = {"pointer": "ptr", "f16": "fp16", "f32": "fp32", "f64": "fp64", "bool": "i1",
           "u1": "i1"}
FLOAT_LIMITS = {"fp16": 65504.0, "bf16": 3.3895313892515355e38, "fp32": 3.4028234663852886e38}
INT_RANGES = {"i8": (-2**7, 2**7), "i16": (-2**15, 2**15), "i32": (-2**31, 2**31),
              "i64": (-2**63, 2**63), "u8": (0, 2**8), "u16": (0, 2**16), "u32": (0, 2**32),
              "u64": (0, 2**64)}


class ArgumentError(TypeError):
    """A kernel argument of the wrong type or out of range (the message names it)."""


def normalize_kind(kind: str) -> str:
    """A canonical argument kind: Triton's "*fp16" and the lowering's "ptr<f16>" pointers
    become "ptr", "f32" becomes "fp32"."""
    if kind.startswith("*") or kind.startswith("ptr<"):
        return "ptr"
    kind = ALIASES.get(kind, kind)
    if kind not in ARG_FORMATS:
        raise ValueError(f"unsupported kernel argument kind '{kind}'; supported: "
                         f"{', '.join(ARG_FORMATS)} (or '*<dtype>' for pointers)")
    return kind


# --------------------------------------------------------------------------------------------
# Pointer arguments

class HostMemoryError(ArgumentError, ValueError):
    """Host memory the GPU cannot reach was passed as a pointer argument (Triton raises a
    ValueError for a CPU tensor)."""


def _host_array_error(arg) -> ArgumentError:
    return HostMemoryError(
        f"a host array ({type(arg).__module__}.{type(arg).__name__}) was passed where the GPU "
        f"kernel needs device memory; copy it first with "
        f"compiler.runtime.device_array.DeviceArray.from_numpy(array) or torch's .cuda() "
        f"(or pin it: pinned host memory is reachable from the GPU)")


def torch_device_reachable(tensor) -> bool:
    """Whether the GPU can address a torch tensor's memory: a CUDA tensor, or pinned
    (page-locked) host memory, which unified addressing maps at the same address."""
    if tensor.is_cuda:
        return True
    is_pinned = getattr(tensor, "is_pinned", None)
    return is_pinned is not None and is_pinned()


def _torch_pointer(tensor) -> int:
    if not torch_device_reachable(tensor):
        raise _host_array_error(tensor)
    return tensor.data_ptr()


def _data_ptr_pointer(arg) -> int:
    return arg.data_ptr()


def _interface_pointer(arg) -> int:
    return arg.__cuda_array_interface__["data"][0]


def _int_pointer(arg) -> int:
    return arg


def _null_pointer(arg) -> int:
    return 0


_POINTER_GETTERS: dict[type, Callable[[Any], int]] = {int: _int_pointer,
                                                      type(None): _null_pointer}


def _pointer_getter(cls: type, sample) -> Callable[[Any], int]:
    """How to get a device address from objects of type `cls` (decided once per type)."""
    module = cls.__module__ or ""
    if module.startswith("torch") and hasattr(sample, "data_ptr"):
        return _torch_pointer
    if hasattr(sample, "__cuda_array_interface__"):
        return _data_ptr_pointer if hasattr(sample, "data_ptr") else _interface_pointer
    if hasattr(sample, "__array_interface__") or hasattr(sample, "__array__"):
        raise _host_array_error(sample)
    if hasattr(sample, "data_ptr"):        # e.g. test doubles, or other tensor libraries
        return _data_ptr_pointer
    if isinstance(sample, int) and not isinstance(sample, bool):
        return _int_pointer
    raise ArgumentError(f"cannot pass a {cls.__name__} as a pointer argument; pass a torch "
                        f"tensor, a DeviceArray, an object with __cuda_array_interface__, "
                        f"an int address or None")


def device_pointer(arg) -> int:
    """The device address of a pointer argument (see the module docstring for what counts)."""
    getter = _POINTER_GETTERS.get(type(arg))
    if getter is None:
        getter = _pointer_getter(type(arg), arg)
        _POINTER_GETTERS[type(arg)] = getter
    return getter(arg)


_GETTER_NAMES = {_torch_pointer: "torch", _data_ptr_pointer: "data_ptr",
                 _interface_pointer: "interface", _int_pointer: "int", _null_pointer: "null"}


def pointer_source(arg) -> str | None:
    """How the launcher reads the device address of arguments of `arg`'s type: "torch"
    (`data_ptr()` of a tensor whose `is_cuda` holds), "data_ptr", "interface"
    (`__cuda_array_interface__`), "int", "null"; None when it rejects the type (host memory,
    or nothing it can take as a pointer)."""
    getter = _POINTER_GETTERS.get(type(arg))
    if getter is None:
        try:
            getter = _pointer_getter(type(arg), arg)
        except ArgumentError:
            return None
        _POINTER_GETTERS[type(arg)] = getter
    return _GETTER_NAMES.get(getter)


def bf16_bits(value) -> int:
    """The bfloat16 bit pattern of a Python number (round to nearest even, NaN kept quiet)."""
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    if (bits & 0x7F800000) == 0x7F800000 and bits & 0x007FFFFF:
        return (bits >> 16) | 0x0040
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


# --------------------------------------------------------------------------------------------
# Scalar checks (slow path only: the fast path lets struct.pack_into check)

def _check_scalar(kind: str, value, name: str):
    """The value to pack for a scalar argument, or an `ArgumentError` saying what is wrong."""
    if kind == "tensormap":
        if not isinstance(value, bytes) or len(value) != 128:
            raise ArgumentError(f"argument {name} (a CUtensorMap) must be 128 bytes "
                                f"(compiler.runtime.tensor_map.encode), not "
                                f"{type(value).__name__}")
        return value
    if kind == "i1":
        try:
            return bool(value)
        except Exception:
            raise ArgumentError(f"argument {name} (i1) must be a bool, "
                                f"not {type(value).__name__}") from None
    if kind in ("fp16", "bf16", "fp32", "fp64"):
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise ArgumentError(f"argument {name} ({kind}) must be a float, "
                                f"not {type(value).__name__}") from None
        limit = FLOAT_LIMITS.get(kind)
        if limit is not None and math.isfinite(value) and abs(value) > limit:
            raise ArgumentError(f"argument {name} ({kind}) = {value} is too large for {kind} "
                                f"(largest finite value {limit})")
        return value
    if not hasattr(value, "__index__"):
        raise ArgumentError(f"argument {name} ({kind}) must be an integer, "
                            f"not {type(value).__name__}")
    value = value.__index__()
    low, high = INT_RANGES[kind]
    if not low <= value < high:
        raise ArgumentError(f"argument {name} ({kind}) = {value} is out of range "
                            f"[{low}, {high - 1}]")
    return value


def check_grid(grid) -> tuple[int, int, int]:
    """The grid as three non-negative ints (`compiler.runtime.grid`); `ArgumentError` naming
    the bad entry and the launch line for anything else."""
    from .grid import GridError, grid_dims
    if not isinstance(grid, (tuple, list)):
        raise ArgumentError(f"grid must be a tuple of 1 to 3 ints, not {grid!r}")
    try:
        return grid_dims(grid)
    except GridError as err:
        raise ArgumentError(f"grid must be a tuple of 1 to 3 non-negative ints below 2**31: "
                            f"{err}") from None


# --------------------------------------------------------------------------------------------
# The argument buffer

@dataclass(frozen=True)
class ArgLayout:
    """Where each argument lives in the packed buffer."""

    kinds: tuple[str, ...]
    struct_format: str
    offsets: tuple[int, ...]
    size: int


def layout_args(kinds: Sequence[str]) -> ArgLayout:
    """Lay the arguments out in one buffer, each at its natural alignment. The struct format
    uses standard sizes with explicit padding ("=" and "x"), so packing range-checks floats as
    well as integers (native "@" packing would silently turn 1e39 into an fp32 inf)."""
    kinds = tuple(normalize_kind(k) for k in kinds)
    fmt, offsets, position = "=", [], 0
    for kind in kinds:
        item = ARG_FORMATS[kind]
        size = struct.calcsize("=" + item)
        align = ARG_ALIGNMENT.get(kind, size)
        start = (position + align - 1) // align * align
        fmt += "x" * (start - position) + item
        offsets.append(start)
        position = start + size
    return ArgLayout(kinds, fmt, tuple(offsets), max(position, 8))


# The per-signature launch function. `{header}` is either the general form
# `launch(grid, num_warps, shared_bytes, stream, args)` or the bound form
# `launch(grid, args, stream=None)` whose num_warps/shared_bytes were fixed at build time.
# No stream means torch's current stream, as in Triton (`driver.current_stream`); the default
# stream goes to cuLaunchKernel as None, its cheapest spelling of stream 0.
_LAUNCH_TEMPLATE = '''
def launch({header}):
    try:
        {unpack} = args
        {pack}
        n = len(grid)
        gx = grid[0]
        gy = grid[1] if n > 1 else 1
        gz = grid[2] if n > 2 else 1
        if n > 3 or gx * gy * gz == 0:
            check_grid(grid)
            return
        err, = cu_launch(function, gx, gy, gz, 32 * num_warps, 1, 1, shared_bytes,
                         current_stream() if stream is None else stream_handle(stream),
                         params_address, 0)
    except Exception:
        explain_bad_args(args, grid)
        raise
    if err:
        launch_failed(err, grid, num_warps, shared_bytes, stream, args)
'''
GENERAL_HEADER = "grid, num_warps, shared_bytes, stream, args"
BOUND_HEADER = "grid, args, stream=None"


class Launcher:
    """Launches one compiled kernel; build once, call `launch` many times.

    `function` is the CUfunction (from `driver.get_function`), `signature` the argument kinds
    in kernel-parameter order (constexprs excluded). `launch_fn` defaults to cuda.bindings'
    cuLaunchKernel; tests pass a stand-in with the same signature. The shared argument buffer
    makes one Launcher unsafe to call from two threads at once; the driver copies the arguments
    during cuLaunchKernel, so reusing it across launches is safe.
    """

    def __init__(self, function, signature: Sequence[str], *, name: str = "kernel",
                 arg_names: Sequence[str] | None = None, device: int = 0,
                 launch_fn: Callable | None = None):
        self.function = function
        self.name = name
        self.device = device
        self.layout = layout_args(signature)
        n = len(self.layout.kinds)
        self.arg_names = tuple(arg_names) if arg_names is not None else \
            tuple(f"#{i}" for i in range(n))
        if len(self.arg_names) != n:
            raise ValueError(f"{n} argument kinds but {len(self.arg_names)} argument names")
        self.buffer = (ctypes.c_char * self.layout.size)()
        base = ctypes.addressof(self.buffer)
        self.params = (ctypes.c_void_p * max(n, 1))(*[base + off for off in self.layout.offsets])
        self.params_address = ctypes.addressof(self.params)
        if launch_fn is None:
            launch_fn = driver.bindings().cuLaunchKernel
        self._launch_fn = launch_fn
        self._retrying = False
        self.launch = self._generate_launch(GENERAL_HEADER, {})

    def _generate_launch(self, header: str, bound: dict, addresses: bool = False) -> Callable:
        """Compile a launch function for this signature (see `_LAUNCH_TEMPLATE`); `bound`
        supplies names the header does not take (num_warps, shared_bytes). With `addresses`,
        pointer arguments must already be int addresses and are packed as they are."""
        names = [f"a{i}" for i in range(len(self.layout.kinds))]
        conversions = [("{0}" if addresses and kind == "ptr" else
                        _FAST_CONVERSIONS.get(kind, "{0}")) for kind in self.layout.kinds]
        values = [conversion.format(arg) for arg, conversion in zip(names, conversions)]
        source = _LAUNCH_TEMPLATE.format(
            header=header,
            unpack=", ".join(names) + "," if names else "()",
            pack=f"pack_into(buffer, 0, {', '.join(values)})" if names else "pass")
        namespace = {
            "pack_into": struct.Struct(self.layout.struct_format).pack_into,
            "buffer": self.buffer, "device_pointer": device_pointer, "bf16_bits": bf16_bits,
            "tensor_map_bytes": lambda v: _check_scalar("tensormap", v, "(a CUtensorMap)"),
            "pointer_getters": _POINTER_GETTERS,
            "cu_launch": self._launch_fn, "function": self.function,
            "stream_handle": driver.stream_handle, "current_stream": driver.current_stream,
            "params_address": self.params_address,
            "explain_bad_args": functools.partial(self.explain_bad_args, addresses=addresses),
            "launch_failed": self._launch_failed,
            "check_grid": check_grid, **bound,
        }
        exec(compile(source, f"<launcher {self.name}>", "exec"), namespace)
        return namespace["launch"]

    def bind(self, num_warps: int, shared_bytes: int = 0, *, addresses: bool = False) -> Callable:
        """A launch function `(grid, args, stream=None)` with num_warps and dynamic shared
        memory fixed: the fastest way to launch one compiled kernel repeatedly. With
        `addresses=True` it takes pointer arguments as int device addresses only (the jit
        reads them once, while specializing); anything else there is reported as a bad
        argument."""
        if num_warps not in (1, 2, 4, 8, 16, 32):
            raise ValueError(f"num_warps must be a power of two from 1 to 32, not {num_warps}")
        return self._generate_launch(BOUND_HEADER, {"num_warps": num_warps,
                                                    "shared_bytes": int(shared_bytes)},
                                     addresses)

    def pack(self, args: Sequence) -> bytes:
        """Pack `args` into the buffer (checked, slow path) and return the buffer's bytes."""
        values = self.convert_args(args)
        struct.pack_into(self.layout.struct_format, self.buffer, 0, *values)
        return bytes(self.buffer)

    def convert_args(self, args: Sequence) -> list:
        """The values to pack, checked one by one; `ArgumentError` names a bad argument."""
        if len(args) != len(self.layout.kinds):
            raise ArgumentError(f"kernel {self.name} takes {len(self.layout.kinds)} arguments "
                                f"({', '.join(self.arg_names)}), got {len(args)}")
        values = []
        for arg, kind, name in zip(args, self.layout.kinds, self.arg_names):
            if kind == "ptr":
                try:
                    values.append(device_pointer(arg))
                except ArgumentError as exc:
                    # the same class: a HostMemoryError stays a ValueError, as Triton's is
                    raise type(exc)(f"argument {name} of kernel {self.name}: {exc}") from None
            else:
                value = _check_scalar(kind, arg, f"{name} of kernel {self.name}")
                values.append(bf16_bits(value) if kind == "bf16" else value)
        return values

    def explain_bad_args(self, args, grid=(1,), addresses: bool = False) -> None:
        """Called when the fast path failed: raise a clear `ArgumentError` if the arguments
        or the grid are at fault (otherwise return and let the original exception propagate).
        `addresses`: the failed launch took pointers as int addresses only."""
        check_grid(grid)
        if not isinstance(args, (tuple, list)):
            raise ArgumentError(f"launch arguments of kernel {self.name} must be a tuple or "
                                f"list, not {type(args).__name__}")
        self.convert_args(args)
        if addresses:
            for arg, kind, name in zip(args, self.layout.kinds, self.arg_names):
                if kind == "ptr" and type(arg) is not int:
                    raise ArgumentError(f"argument {name} of kernel {self.name}: this launch "
                                        f"takes pointers as int device addresses, not "
                                        f"{type(arg).__name__}")

    def _launch_failed(self, err, grid, num_warps, shared_bytes, stream, args) -> None:
        """A failed cuLaunchKernel: retry once if this thread had no context, else raise."""
        cu = driver.bindings()
        if err == cu.CUresult.CUDA_ERROR_INVALID_CONTEXT and not self._retrying:
            driver.forget_current_context()     # a new thread: make the context current, retry
            driver.context(self.device)
            self._retrying = True
            try:
                self.launch(grid, num_warps, shared_bytes, stream, args)  # general form
            finally:
                self._retrying = False
            return
        driver.raise_cuda_error(
            f"cuLaunchKernel({self.name}, grid={tuple(grid)}, block={32 * num_warps}, "
            f"shared={shared_bytes})", err)

    # ---- building one from a compiled kernel -------------------------------------------------
    @classmethod
    def for_kernel(cls, kernel, device: int = 0, loader: Callable | None = None,
                   launch_fn: Callable | None = None) -> "KernelLauncher":
        """Load a `CompiledKernel` (its cubin, else its PTX) onto `device` with `loader`
        (default: the runtime driver's `load_kernel`) and return its `KernelLauncher`, whose
        `launch(grid, args, stream=None)` is the fast path. Warps, shared memory and argument
        kinds come from the kernel's `KernelMetadata`."""
        binary = kernel.asm.get("cubin")
        if loader is None:
            arch = getattr(getattr(kernel, "options", None), "arch", None)
            loader = functools.partial(driver.load_kernel, arch=arch)
            if arch is not None and not cubin_runs_on(arch, driver.device_arch(device)):
                binary = None       # e.g. arch=80 on an sm_90 device: the driver JITs the PTX
        if not isinstance(binary, (bytes, bytearray)):
            binary = kernel.asm.get("ptx")
        if not binary:
            raise ValueError(f"kernel {kernel.name} has neither a cubin nor PTX to load; "
                             f"compile it through the ptx stage first")
        metadata = kernel.metadata
        if metadata is None:
            raise ValueError(f"kernel {kernel.name} has no metadata (it was not compiled "
                             f"through the ttgir stage)")
        loaded = loader(kernel.name, binary, metadata.shared, device)
        module = getattr(kernel, "ttgir_module", None) or getattr(kernel, "ttir_module", None)
        kinds = list(metadata.arg_kinds) or (kernel_arg_kinds(module) if module else None)
        if kinds is None:
            raise ValueError(f"kernel {kernel.name} has no argument kinds (metadata "
                             f"'arg_kinds') and no IR module to read them from")
        names = kernel_arg_names(module) if module is not None else None
        if names is not None and len(names) != len(kinds):
            names = None
        scratch = metadata.global_scratch_size
        if scratch:     # the launch's global scratch buffer: a last, hidden argument
            kinds = list(kinds) + ["ptr"]
            names = None if names is None else list(names) + ["global_scratch"]
        launcher = cls(loaded.function, kinds, name=kernel.name, arg_names=names, device=device,
                       launch_fn=launch_fn)
        return KernelLauncher(launcher, loaded, metadata.num_warps, metadata.shared,
                              scratch, metadata.global_scratch_align)


def cubin_runs_on(built_for: int, device_arch: int) -> bool:
    """Whether a cubin built for compute capability `built_for` runs on a device of
    `device_arch`: the same major version and a minor no higher than the device's (CUDA's
    binary compatibility rule; PTX, JIT-compiled by the driver, runs on any newer device)."""
    return built_for // 10 == device_arch // 10 and built_for % 10 <= device_arch % 10


def cooperative_launch_fn(name: str, device: int = 0, launch_fn: Callable | None = None):
    """A stand-in for cuLaunchKernel (same arguments) that launches cooperatively
    (cuLaunchCooperativeKernel: every CTA of the grid resident at once, so that they may wait
    for each other, Triton's `launch_cooperative_grid=True`). A grid larger than the device
    holds at once is refused with `OutOfResources` naming both numbers, before the driver
    would refuse it with CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE."""
    capacity: dict = {}

    def launch(function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        key = (bx, shared)
        if key not in capacity:
            per_sm = driver.max_active_blocks_per_sm(function, bx * by * bz, shared)
            capacity[key] = (per_sm, driver.device_attribute("MULTIPROCESSOR_COUNT", device))
        per_sm, sms = capacity[key]
        if gx * gy * gz > per_sm * sms:
            from .errors import OutOfResources
            raise OutOfResources(gx * gy * gz, per_sm * sms,
                                 f"CTAs resident at once for the cooperative launch of {name} "
                                 f"(launch_cooperative_grid=True; {sms} SMs x {per_sm} CTAs "
                                 f"each)")
        cu_launch = launch_fn or driver.bindings().cuLaunchCooperativeKernel
        return cu_launch(function, gx, gy, gz, bx, by, bz, shared, stream, params)
    return launch


class KernelLauncher:
    """A loaded kernel ready to launch: `launch(grid, args, stream=None)` with its num_warps
    and dynamic shared memory fixed (the generated fast path), and `launch_addresses`, the
    same taking pointers as int addresses only (what the jit passes)."""

    def __init__(self, launcher: Launcher, loaded, num_warps: int, shared_bytes: int,
                 global_scratch_size: int = 0, global_scratch_align: int = 1):
        self.launcher = launcher
        self.loaded = loaded
        self.num_warps = num_warps
        self.shared_bytes = shared_bytes
        self.global_scratch_size = global_scratch_size
        self.global_scratch_align = global_scratch_align
        self.launch = launcher.bind(num_warps, shared_bytes)
        self.launch_addresses = launcher.bind(num_warps, shared_bytes, addresses=True)
        if global_scratch_size:
            self.launch = self._with_scratch(self.launch)
            self.launch_addresses = self._with_scratch(self.launch_addresses)
        self._cooperative = None

    def _with_scratch(self, launch: Callable) -> Callable:
        """`launch` given, after the kernel's own arguments, the address of global scratch
        memory for every program of the grid (`allocation.global_scratch`), as Triton's
        launcher does for kernels with `global_scratch_size`."""
        from .allocation import global_scratch
        size, align, device = self.global_scratch_size, self.global_scratch_align, \
            self.launcher.device

        def launch_with_scratch(grid, args, stream=None):
            gx, gy, gz = check_grid(grid)
            handle = driver.stream_handle(driver.current_stream() if stream is None else stream)
            address, buffer = global_scratch(size * gx * gy * gz, align, handle, device)
            launch(grid, (*args, address), stream)
            del buffer      # an allocator's buffer may go: its allocator orders reuse by stream
        return launch_with_scratch

    def cooperative(self, launch_fn: Callable | None = None) -> "KernelLauncher":
        """The same loaded kernel launched cooperatively (`cooperative_launch_fn`); built
        once. `launch_fn` replaces cuLaunchCooperativeKernel (tests)."""
        if self._cooperative is None:
            base = self.launcher
            coop = Launcher(base.function, base.layout.kinds, name=base.name,
                            arg_names=base.arg_names, device=base.device,
                            launch_fn=cooperative_launch_fn(base.name, base.device, launch_fn))
            self._cooperative = KernelLauncher(coop, self.loaded, self.num_warps,
                                               self.shared_bytes, self.global_scratch_size,
                                               self.global_scratch_align)
        return self._cooperative

    def __repr__(self) -> str:
        return (f"KernelLauncher({self.launcher.name}, num_warps={self.num_warps}, "
                f"shared={self.shared_bytes}, args={list(self.launcher.layout.kinds)})")


def _public_function(module):
    funcs = [op for op in module.functions()
             if getattr(op.attributes.get("sym_visibility"), "value", "public") == "public"]
    if len(funcs) != 1:
        raise ValueError(f"expected one public tt.func in the module, found {len(funcs)}")
    return funcs[0]


def kernel_arg_kinds(module) -> list[str]:
    """Argument kinds of a module's public kernel, from its block arguments' types
    (pointers -> "ptr", i32 -> "i32", f32 -> "fp32", ...)."""
    from compiler.codegen.tma import TENSOR_MAP_KIND, is_tensor_map
    from compiler.dialects.tt import PointerType
    kinds = []
    for arg in _public_function(module).body.args:
        if is_tensor_map(arg):
            kinds.append(TENSOR_MAP_KIND)
            continue
        kinds.append("ptr" if isinstance(arg.type, PointerType) else normalize_kind(str(arg.type)))
    return kinds


def kernel_arg_names(module) -> list[str] | None:
    """The kernel's parameter names (from their locations), or None when any is unnamed."""
    names = []
    for arg in _public_function(module).body.args:
        name_of = getattr(arg.loc, "name", None)
        name = name_of() if callable(name_of) else name_of
        if not name:
            return None
        names.append(str(name))
    return names
