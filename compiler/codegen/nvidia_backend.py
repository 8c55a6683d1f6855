"""The NVIDIA backend: sm_XX targets through llvmlite's NVPTX, ptxas, and the CUDA driver.

It parses NVIDIA's compile options (the compute capability as `arch`, e.g. 90 for sm_90; PTX
version; register cap; dot precision) and lists the stages in order (ttir -> ttgir -> llir ->
ptx -> cubin -> sass, defined in `nvidia_stages`). The target's capability comes from an
explicit request, else sm_90; the backend queries no device: `compiler.compile` asks the active
driver for the present GPU's capability when the caller names none. Loading a cubin onto a
device is the runtime driver's (`compiler.runtime.driver.load_kernel`).
"""
from __future__ import annotations

from typing import Any, Mapping

from .backend import BaseBackend, GPUTarget, OptionError, StageFn, register_backend
from .nvidia_options import (DEFAULT_ARCH, DOT_PRECISIONS, KNOWN_ARCHS, NvidiaOptions,  # noqa: F401
                             parse_arch)
from .nvidia_stages import STAGES

@register_backend
class NvidiaBackend(BaseBackend):
    """NVIDIA GPUs: PTX from llvmlite's NVPTX target, cubin from ptxas, the CUDA driver."""

    name = "nvidia"
    options_class = NvidiaOptions
    binary_ext = "cubin"
    priority = 10

    @classmethod
    def default_target(cls, requested: Any = None) -> GPUTarget:
        """sm_<requested> when given, else sm_90 (`runtime.driver.device_arch` is the present
        GPU's, for a caller that wants to compile for it)."""
        return GPUTarget(cls.name, DEFAULT_ARCH if requested is None else parse_arch(requested),
                         32)

    def parse_options(self, options: Mapping[str, Any] | None = None) -> NvidiaOptions:
        """As `BaseBackend.parse_options`; `capability` is accepted for `arch`, and `arch` may
        be written "sm_90" or (9, 0). Without one, the target's capability is used."""
        options = dict(options or {})
        if "capability" in options:
            if "arch" in options:
                raise OptionError("give 'arch' or 'capability', not both")
            options["arch"] = options.pop("capability")
        if "arch" in options:
            options["arch"] = parse_arch(options["arch"])
        return super().parse_options(options)

    def target_options(self, options: dict) -> dict:
        return {} if "arch" in options else {"arch": self.target.arch}

    def add_stages(self, stages: dict[str, StageFn], options) -> None:
        """ttir -> ttgir -> llir -> ptx -> cubin -> sass (`nvidia_stages.STAGES`)."""
        stages.update(STAGES)
