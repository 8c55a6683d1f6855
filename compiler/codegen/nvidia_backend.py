"""The NVIDIA backend: sm_XX targets through llvmlite's NVPTX, ptxas, and the CUDA driver.

It parses NVIDIA's compile options (the compute capability as `arch`, e.g. 90 for sm_90; PTX
version; register cap; dot precision), lists the stages in order (ttir -> ttgir -> llir -> ptx
-> cubin -> sass) and loads a cubin (or PTX, JIT-compiled by the driver) onto a device. The
target's capability comes from an explicit request, else the present GPU, else sm_90.
"""
from __future__ import annotations

from typing import Any, Mapping

from .backend import BaseBackend, GPUTarget, LoadedKernel, OptionError, StageFn, register_backend
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
        """sm_<requested> when given, else the present GPU's capability, else sm_90."""
        if requested is not None:
            arch = parse_arch(requested)
        elif cls.is_available():
            from compiler.runtime import driver
            major, minor = driver.device_capability(0)
            arch = major * 10 + minor
        else:
            arch = DEFAULT_ARCH
        return GPUTarget(cls.name, arch, 32)

    @classmethod
    def is_available(cls) -> bool:
        from compiler.runtime import driver
        return driver.gpu_available()

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

    def load_binary(self, name: str, binary: bytes | str, shared: int,
                    device: int = 0) -> LoadedKernel:
        """Load a cubin (or PTX text, which the driver JIT-compiles) and look up kernel `name`;
        raise the dynamic shared memory limit when `shared` > 48 KB."""
        from compiler.runtime import driver
        try:
            module = driver.load_module(binary, device)
        except driver.CudaError as err:
            if err.name in ("CUDA_ERROR_NO_BINARY_FOR_GPU", "CUDA_ERROR_INVALID_IMAGE",
                            "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"):
                major, minor = driver.device_capability(device)
                raise driver.CudaError(
                    err.call, err.code, err.name, err.description,
                    f"the kernel was compiled for sm_{self.target.arch}; this device is "
                    f"sm_{major}{minor}: compile with arch={major}{minor}") from None
            raise
        function = driver.get_function(module, name)
        driver.set_dynamic_shared_memory(function, shared, device)
        return LoadedKernel(
            name=name, module=module, function=function, shared=shared, device=device,
            num_regs=driver.function_attribute(function, "NUM_REGS"),
            local_bytes=driver.function_attribute(function, "LOCAL_SIZE_BYTES"),
            max_threads=driver.function_attribute(function, "MAX_THREADS_PER_BLOCK"),
            notes=("the driver JIT-compiled the PTX (no cubin)",) if module.from_ptx else ())
