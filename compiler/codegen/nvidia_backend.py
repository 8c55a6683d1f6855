"""The NVIDIA backend: sm_XX targets through llvmlite's NVPTX, ptxas, and the CUDA driver.

It parses NVIDIA's compile options (the compute capability as `arch`, e.g. 90 for sm_90; PTX
version; register cap; dot precision), lists the stages in order (ttir -> ttgir -> llir -> ptx
-> cubin -> sass) and loads a cubin (or PTX, JIT-compiled by the driver) onto a device. The
target's capability comes from an explicit request, else the present GPU, else sm_90.
"""
from __future__ import annotations

import dataclasses
import importlib
import re
from dataclasses import dataclass
from typing import Any, Mapping

from .backend import (BackendOptions, BaseBackend, GPUTarget, LoadedKernel, OptionError,
                      StageFn, register_backend)

DEFAULT_ARCH = 90
#: Compute capabilities this backend accepts (the NVPTX targets of LLVM 20+, Volta onwards).
KNOWN_ARCHS = (70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 103, 120, 121)
DOT_PRECISIONS = ("tf32", "tf32x3", "ieee")

#: The stages in order, and where each stage function lives (module, attribute): ttir and ttgir
#: are the compile driver's common stages, the rest this backend's own (`nvidia_stages`). Each
#: takes the compile state and writes the next stage's output into it.
STAGE_FUNCTIONS = (
    ("ttir", "compiler.compiler", "stage_ttir"),
    ("ttgir", "compiler.compiler", "stage_ttgir"),
    ("llir", "compiler.codegen.nvidia_stages", "stage_llir"),
    ("ptx", "compiler.codegen.nvidia_stages", "stage_ptx"),
    ("cubin", "compiler.codegen.nvidia_stages", "stage_cubin"),
    ("sass", "compiler.codegen.nvidia_stages", "stage_sass"),
)


@dataclass(frozen=True)
class NvidiaOptions(BackendOptions):
    """Compile options of the NVIDIA backend (the common ones plus NVIDIA's). They are the one
    definition of the target options: the compile driver's `CompileOptions` derives from this
    class and adds only its own fields."""

    arch: int = dataclasses.field(default=DEFAULT_ARCH, metadata={
        "check": lambda v: v in KNOWN_ARCHS,
        "allowed": "a compute capability such as 80 or 90 (or 'sm_90'); known: "
                   + ", ".join(map(str, KNOWN_ARCHS))})
    ptx_version: int | None = dataclasses.field(default=None, metadata={
        "check": lambda v: isinstance(v, int) and 60 <= v <= 99,
        "allowed": "a PTX ISA version times ten, e.g. 80 for PTX 8.0, or None"})
    maxnreg: int | None = dataclasses.field(default=None, metadata={
        "check": lambda v: isinstance(v, int) and 16 <= v <= 255,
        "allowed": "an integer from 16 to 255, or None"})
    default_dot_input_precision: str = dataclasses.field(default="tf32", metadata={
        "check": lambda v: v in DOT_PRECISIONS, "allowed": " or ".join(DOT_PRECISIONS)})
    warp_size: int = dataclasses.field(default=32, metadata={
        "check": lambda v: v == 32, "allowed": "32 (NVIDIA warps have 32 threads)"})
    line_info: bool = True

    @property
    def ptx_arch(self) -> str:
        """The `.target` / ptxas -arch name, e.g. "sm_90"."""
        return f"sm_{self.arch}"


def parse_arch(value: Any) -> int:
    """A compute capability from 90, "90", "sm_90", "sm_90a" or (9, 0)."""
    if isinstance(value, bool):
        raise OptionError(f"option 'arch' takes a compute capability, not {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return value[0] * 10 + value[1]
    if isinstance(value, str):
        match = re.fullmatch(r"(?:sm_|compute_)?(\d+)a?", value.strip())
        if match:
            return int(match.group(1))
    raise OptionError(f"option 'arch' takes a compute capability such as 90, 'sm_90' or (9, 0), "
                      f"not {value!r}")


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
        """ttir -> ttgir -> llir -> ptx -> cubin -> sass, each the compile driver's stage
        function (see `STAGE_FUNCTIONS`)."""
        for stage, module_name, attribute in STAGE_FUNCTIONS:
            module = importlib.import_module(module_name)
            try:
                stages[stage] = getattr(module, attribute)
            except AttributeError:
                raise LookupError(f"stage '{stage}' of the nvidia backend needs "
                                  f"{module_name}.{attribute}, which does not exist") from None

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
