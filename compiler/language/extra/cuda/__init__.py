"""`triton.language.extra.cuda`: CUDA's libdevice (the same functions as `extra.libdevice`) and
the CUDA-only helpers Triton has here: the global nanosecond timer, the SM a program runs on,
and the kernel's thread and warp counts (compile-time constants)."""
from compiler.language import core
from compiler.language.composite import inline_asm_elementwise
from compiler.language.core import builtin

from . import libdevice  # noqa: F401


def _special_register(_sem, register: str, dtype):
    """The value of a PTX special register, read by a `mov` that is never merged or hoisted
    (not pure: two reads of a timer are two reads)."""
    ptx_type, constraint = ("u64", "=l") if dtype.primitive_bitwidth == 64 else ("u32", "=r")
    return core.builtin_impl(inline_asm_elementwise)(
        _sem, f"mov.{ptx_type} $0, %{register};", constraint, [], dtype, False, 1)


@builtin
def globaltimer(_sem):
    """The GPU's global timer in nanoseconds (`%globaltimer`, int64)."""
    return _special_register(_sem, "globaltimer", core.int64)


@builtin
def smid(_sem):
    """The index of the streaming multiprocessor running this program (`%smid`, int32)."""
    return _special_register(_sem, "smid", core.int32)


@builtin
def num_warps(_sem):
    """The kernel's warps per program (the num_warps it is compiled with), a constexpr."""
    return core.constexpr(_sem.num_warps)


@builtin
def num_threads(_sem):
    """The kernel's threads per program (32 per warp), a constexpr usable as a block size."""
    return core.constexpr(_sem.num_warps * 32)
