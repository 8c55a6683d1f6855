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

__version__ = "0.1.0"

__all__ = ["jit", "autotune", "Config", "heuristics", "cdiv", "next_power_of_2", "constexpr",
           "language", "testing", "compile", "JITFunction", "KernelInterface", "Autotuner",
           "Heuristics", "CompilationError", "KernelArgumentError"]


def cdiv(x: int, y: int) -> int:
    """Ceiling division of integers: the number of blocks of size `y` that cover `x`."""
    return (x + y - 1) // y


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= `n` (1 for n <= 1)."""
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def __getattr__(name: str):
    """Load the heavier names on first use: `compile`, `testing`, `CompilationError`."""
    if name == "compile":
        from compiler.compiler import compile as compile_fn
        return compile_fn
    if name == "testing":
        import compiler.testing as testing_module
        return testing_module
    if name == "CompilationError":
        from compiler.frontend.errors import CompilationError
        return CompilationError
    raise AttributeError(f"module 'compiler' has no attribute '{name}'")
