"""`triton.backends` through the alias: the registered compilation backends, as Triton lists
them (`backends` maps a name to a `Backend` of its compiler class and its driver class).

Code around Triton reads this table: torch's `has_triton()` asks `"cpu" in
triton.backends.backends`, and tools look up `backends["nvidia"].compiler`. Ours has one
backend, "nvidia" (compiler.codegen.nvidia_backend, driven by compiler.runtime's CUDA driver);
`triton.backends.compiler` is compiler.codegen.backend (GPUTarget, BaseBackend).
"""
from __future__ import annotations

from dataclasses import dataclass

from compiler.codegen.backend import discover_backends

__all__ = ["Backend", "backends"]


@dataclass(frozen=True)
class Backend:
    """One backend: its compiler class (a `BaseBackend`) and the driver class that loads and
    launches what it compiles."""
    compiler: type
    driver: type


def _drivers() -> dict:
    from compiler.runtime.active_driver import CudaDriver
    return {"nvidia": CudaDriver}


def _table() -> dict:
    drivers = _drivers()
    return {name: Backend(compiler=cls, driver=drivers[name])
            for name, cls in discover_backends().items() if name in drivers}


#: backend name -> Backend(compiler, driver)
backends: dict = _table()
