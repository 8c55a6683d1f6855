"""CUDA's libdevice (`libdevice.10.bc`): double-precision math linked into a lowered kernel.

The lowering calls `__nv_exp`, `__nv_erf`, ... for the math functions that have no PTX
instruction in double precision (as Triton's lowering does) and only declares them; before
LLVM's optimizer runs (or before PTX is emitted, for a pipeline without it),
`link_libdevice` links the bitcode in when the module declares any `__nv_` function and makes
every function it brought internal, so the optimizer inlines the called ones and drops the
rest. libdevice's `__nvvm_reflect` queries (`__CUDA_FTZ`, `__CUDA_ARCH`) are answered by the
NVPTX target's NVVMReflect pass, which runs in both the optimizer and the code generator.

The bitcode comes from the NVIDIA wheels the package already depends on (`nvidia-nvvm`, which
`nvidia-cuda-nvcc` 13 requires, or `nvidia-cuda-nvcc` 12's own `nvvm/`), else from
/usr/local/cuda.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import llvmlite.binding as llvm

PREFIX = "__nv_"
_RELATIVE = ("cu13/nvvm/libdevice/libdevice.10.bc", "cuda_nvcc/nvvm/libdevice/libdevice.10.bc",
             "nvvm/libdevice/libdevice.10.bc")


class LibdeviceNotFound(RuntimeError):
    """The kernel calls libdevice functions and no libdevice.10.bc is installed."""


@lru_cache(maxsize=None)
def find_libdevice() -> Path | None:
    """The path of libdevice.10.bc in the NVIDIA wheels or /usr/local/cuda, or None."""
    roots = []
    try:
        import nvidia  # type: ignore
        roots = [Path(p) for p in getattr(nvidia, "__path__", [])]
    except ImportError:
        pass
    for root in roots:
        for rel in _RELATIVE:
            if (root / rel).is_file():
                return root / rel
    system = Path("/usr/local/cuda/nvvm/libdevice/libdevice.10.bc")
    return system if system.is_file() else None


@lru_cache(maxsize=None)
def _bitcode() -> bytes:
    path = find_libdevice()
    if path is None:
        raise LibdeviceNotFound(
            "this kernel needs CUDA's libdevice (double-precision math) and libdevice.10.bc "
            "was not found: install the nvidia-nvvm wheel (a dependency of nvidia-cuda-nvcc)")
    return path.read_bytes()


def needed_functions(module: llvm.ModuleRef) -> list:
    """The `__nv_` functions `module` declares but does not define."""
    return [f.name for f in module.functions if f.is_declaration and f.name.startswith(PREFIX)]


def link_libdevice(module: llvm.ModuleRef) -> bool:
    """Link libdevice into `module` when it declares `__nv_` functions (in place); the linked
    functions become internal so that LLVM keeps only what the kernel calls. Returns whether
    anything was linked."""
    if not needed_functions(module):
        return False
    own = {f.name for f in module.functions if not f.is_declaration}
    lib = llvm.parse_bitcode(_bitcode())
    lib.triple, lib.data_layout = module.triple, module.data_layout
    module.link_in(lib)
    for fn in module.functions:
        if not fn.is_declaration and fn.name not in own:
            fn.linkage = "internal"
    return True
