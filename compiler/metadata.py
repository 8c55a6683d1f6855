"""The facts of a compiled kernel: one object the ttgir passes, the lowering and the launcher read.

`KernelMetadata` holds num_warps, threads per warp, CTAs, shared memory, target and argument
kinds. The ttgir stage makes it from the module's attributes (`from_ttgir`, the one reader of
`ttg.num-warps` and friends), the lowering completes it (shared bytes with scratch, argument
kinds), the disk cache stores it (`to_dict` / `from_dict`) and the launcher launches with it.
After convert-triton-to-tritongpu it is the one source of `num_warps`: nothing falls back to 4.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Mapping

from compiler.ir.core import Module


class MetadataError(ValueError):
    """A ttgir module that lacks what the lowering and launcher need (e.g. ttg.num-warps)."""


@dataclass(frozen=True)
class KernelMetadata:
    """The facts of a compiled kernel that the lowering and the launcher consume."""

    name: str
    num_warps: int
    threads_per_warp: int = 32
    num_ctas: int = 1
    shared: int = 0
    target_name: str = ""          # the module's `ttg.target`, e.g. "cuda:90"
    arg_kinds: tuple = ()
    #: bytes of global scratch memory each program needs (device-side tensor maps), which the
    #: launch allocates for the grid and passes as a last, hidden kernel argument
    global_scratch_size: int = 0
    global_scratch_align: int = 1

    @property
    def target(self):
        """Triton's `metadata.target`: a `GPUTarget("cuda", arch, warp size)` (None when the
        module named no target)."""
        from compiler.codegen.backend import GPUTarget
        backend, _, arch = self.target_name.partition(":")
        if not arch.isdigit():
            return None
        return GPUTarget(backend, int(arch), self.threads_per_warp)

    @classmethod
    def from_ttgir(cls, module: Module, name: str = "", reader: str = "") -> "KernelMetadata":
        """The metadata a ttgir module states in its attributes; `MetadataError` when the
        module has no `ttg.num-warps` (it was not converted to ttgir). `reader` (a pass name)
        is named in that message."""
        attrs = module.attributes
        if "ttg.num-warps" not in attrs:
            who = f"{reader} needs ttgir" if reader else "a ttgir module is needed"
            raise MetadataError(f"{who}, but the module has no 'ttg.num-warps': run "
                                f"convert-triton-to-tritongpu before it")

        def value(key: str, default):
            attr = attrs.get(key)
            return attr.value if attr is not None else default
        return cls(name=name, num_warps=int(value("ttg.num-warps", 0)),
                   threads_per_warp=int(value("ttg.threads-per-warp", 32)),
                   num_ctas=int(value("ttg.num-ctas", 1)), shared=int(value("ttg.shared", 0)),
                   target_name=str(value("ttg.target", "")),
                   global_scratch_size=int(value("ttg.global_scratch_memory_size", 0)),
                   global_scratch_align=int(value("ttg.global_scratch_memory_alignment", 1)))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "KernelMetadata":
        """Metadata from its `to_dict` form (a cache entry's manifest)."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["arg_kinds"] = tuple(values.get("arg_kinds", ()))
        return cls(**values)

    def to_dict(self) -> dict:
        """A JSON-ready dict of every field."""
        data = asdict(self)
        data["arg_kinds"] = list(self.arg_kinds)
        return data

    def __getitem__(self, key: str):
        """Read a field by name (`metadata["num_warps"]`), as Triton's metadata allows."""
        if key not in {f.name for f in fields(self)} | {"target"}:
            raise KeyError(key)
        return getattr(self, key)

    def __getattr__(self, name: str):
        """Only for names that are not fields: say which fields there are."""
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"kernel metadata has no field '{name}' (fields: "
                             + ", ".join(f.name for f in fields(self)) + ", target)")

    def get(self, key: str, default=None):
        """A field by name, or `default` when there is no such field."""
        try:
            return self[key]
        except KeyError:
            return default

    def with_lowering(self, shared: int, arg_kinds) -> "KernelMetadata":
        """These facts completed by the lowering (shared bytes incl. scratch, argument kinds)."""
        return replace(self, shared=shared, arg_kinds=tuple(arg_kinds))
