"""compiler.runtime: jit, specialization, cache, driver, launcher, autotuner, interpreter.

As `triton.runtime` it also offers Triton's names: `JITFunction`, `KernelInterface`,
`Autotuner`, `Heuristics`, `Config`, `OutOfResources`, `InterpreterError` and the submodules
`driver` (with `driver.active`), `errors`, `jit`, `autotuner`; they load on first use.
"""
from __future__ import annotations

import importlib

#: Name -> (module, attribute or None for the module itself), loaded on first use.
_LAZY = {
    "driver": ("compiler.runtime.driver", None),
    "errors": ("compiler.runtime.errors", None),
    "jit": ("compiler.runtime.jit", None),
    "autotuner": ("compiler.runtime.autotuner", None),
    "JITFunction": ("compiler.runtime.jit", "JITFunction"),
    "KernelInterface": ("compiler.runtime.jit", "KernelInterface"),
    "Autotuner": ("compiler.runtime.autotuner", "Autotuner"),
    "Heuristics": ("compiler.runtime.autotuner", "Heuristics"),
    "Config": ("compiler.runtime.autotuner", "Config"),
    "OutOfResources": ("compiler.runtime.errors", "OutOfResources"),
    "InterpreterError": ("compiler.runtime.errors", "InterpreterError"),
}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'compiler.runtime' has no attribute '{name}'")
    module_name, attribute = _LAZY[name]
    module = importlib.import_module(module_name)
    return module if attribute is None else getattr(module, attribute)
