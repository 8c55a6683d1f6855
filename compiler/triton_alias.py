"""Make `import triton` resolve to this compiler, so Triton kernels run unmodified.

`install()` puts `compiler` in `sys.modules` as `triton`, `compiler.language` as
`triton.language` (and its `math` as `triton.language.math`), `compiler.testing` as
`triton.testing` and `compiler.profiler` as `triton.profiler` (Proton's import path);
`uninstall()` puts back whatever was there before. `installed()` is the same as a context
manager. The explorer's command line applies it to the files it runs.
"""
from __future__ import annotations

import importlib
import sys
from contextlib import contextmanager

#: `sys.modules` name -> the module of ours it resolves to.
ALIASES = {
    "triton": "compiler",
    "triton.language": "compiler.language",
    "triton.language.math": "compiler.language.math",
    "triton.language.random": "compiler.language.random",
    "triton.language.extra": "compiler.language.extra",
    "triton.language.extra.libdevice": "compiler.language.extra.libdevice",
    "triton.language.extra.cuda": "compiler.language.extra.cuda",
    "triton.language.extra.cuda.libdevice": "compiler.language.extra.cuda.libdevice",
    "triton.testing": "compiler.testing",
    "triton.profiler": "compiler.profiler",
    "triton.profiler.language": "compiler.profiler.language",
    "triton.compiler": "compiler.compiler",
    "triton.compiler.compiler": "compiler.compiler",    # where Triton defines compile/ASTSource
    "triton.compiler.errors": "compiler.frontend.errors",
    "triton.runtime": "compiler.runtime",
    "triton.runtime.driver": "compiler.runtime.driver",
    "triton.runtime.errors": "compiler.runtime.errors",
    "triton.errors": "compiler.errors",
    "triton.knobs": "compiler.knobs",
    "triton.tools": "compiler.tools",
    "triton.tools.tensor_descriptor": "compiler.tools.tensor_descriptor",
    "triton.backends": "compiler.backends",
    "triton.backends.compiler": "compiler.codegen.backend",
}

_MISSING = object()
_saved: dict | None = None


def install() -> None:
    """Alias the `triton` modules to ours (idempotent; remembers what it replaced)."""
    global _saved
    if _saved is not None:
        return
    modules = {name: importlib.import_module(target) for name, target in ALIASES.items()}
    _saved = {name: sys.modules.get(name, _MISSING) for name in ALIASES}
    sys.modules.update(modules)


def uninstall() -> None:
    """Undo `install()`: restore the previous `triton` modules, or remove the aliases."""
    global _saved
    if _saved is None:
        return
    for name, previous in _saved.items():
        if previous is _MISSING:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = previous
    _saved = None


def is_installed() -> bool:
    """True while the aliases are in place."""
    return _saved is not None


@contextmanager
def installed():
    """`with installed(): ...` runs the block with the aliases (restored afterwards, unless
    they were already installed before the block)."""
    was_installed = is_installed()
    install()
    try:
        yield
    finally:
        if not was_installed:
            uninstall()
