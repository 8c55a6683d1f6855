"""tile-explore's compiler: a Triton-style GPU kernel compiler with every pass instrumented.

This package stands in for Triton's top-level `triton` module: `jit`, `autotune`, `Config`,
`heuristics`, `cdiv`, `next_power_of_2`, `constexpr`, `language`, `testing` and `compile`
(`compiler.triton_alias.install()` makes `import triton` resolve here). Importing it stays
light: the compile driver, textual, CUDA and llvmlite load only when first used.
"""
from __future__ import annotations

from compiler import language  # noqa: F401
from compiler.language import constexpr  # noqa: F401
from compiler.runtime.autotuner import (Autotuner, Config, Heuristics, autotune,  # noqa: F401
                                        heuristics)
from compiler.runtime.jit import (JITFunction, KernelArgumentError, KernelInterface,  # noqa: F401
                                  jit)
from compiler.runtime.tensor_wrapper import TensorWrapper, reinterpret  # noqa: F401

#: The Triton API version this package implements, as `triton.__version__` reports it through the
#: alias (libraries such as Liger-Kernel choose their code paths by it); the project's own
#: version (pyproject.toml) is `tile_version`.
__version__ = "3.6.0"
tile_version = "0.1.0"

__all__ = ["jit", "autotune", "Config", "heuristics", "cdiv", "next_power_of_2", "constexpr",
           "language", "testing", "compile", "JITFunction", "KernelInterface", "Autotuner",
           "Heuristics", "CompilationError", "KernelArgumentError", "TritonError", "knobs",
           "set_allocator", "runtime", "compiler", "tools", "OutOfResources", "reinterpret",
           "TensorWrapper"]


def cdiv(x: int, y: int) -> int:
    """Ceiling division of integers: the number of blocks of size `y` that cover `x`."""
    return (x + y - 1) // y


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= `n` (1 for n <= 1)."""
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


#: Names loaded on first use: name -> (module, attribute or None for the module itself).
_LAZY = {
    "compile": ("compiler.compiler", "compile"),
    "compiler": ("compiler.compiler", None),
    "testing": ("compiler.testing", None),
    "runtime": ("compiler.runtime", None),
    "knobs": ("compiler.knobs", None),
    "tools": ("compiler.tools", None),
    "errors": ("compiler.errors", None),
    "CompilationError": ("compiler.frontend.errors", "CompilationError"),
    "TritonError": ("compiler.errors", "TritonError"),
    "set_allocator": ("compiler.runtime.allocation", "set_allocator"),
    "OutOfResources": ("compiler.runtime.errors", "OutOfResources"),
}


def __getattr__(name: str):
    """Load the heavier names on first use (`compile`, `compiler`, `testing`, `runtime`,
    `knobs`, `tools`, the error classes, `set_allocator`)."""
    import importlib
    if name not in _LAZY:
        raise AttributeError(f"module 'compiler' has no attribute '{name}'")
    module_name, attribute = _LAZY[name]
    module = importlib.import_module(module_name)
    return module if attribute is None else getattr(module, attribute)
