"""pytest plugin for triage without a GPU: Triton's language tests run against the GPU path of
this compiler on a CPU-only machine. Every kernel is compiled exactly as for an H200 (ttir ->
ttgir -> LLVM IR -> PTX -> cubin, sm_90), so compile errors and the PTX / LLVM IR checks of the
tests are real; instead of launching, the kernel's ttir runs in our interpreter on the torch
CPU tensors, so that the value checks in front of those asm checks pass.

What it stands in for, and only for this triage (never in the product): `torch.cuda`'s
capability / device name / synchronize, the driver's "is there a GPU" and capability queries,
and `CompiledKernel.launcher`. A failure here that is a value mismatch can be the interpreter's,
not the GPU path's; compile errors and asm mismatches are the GPU path's. DRY_NOEXEC=1 skips
the interpretation (compile only). Used by `run.sh` beside this file.
"""
import os

H200_CAPABILITY = (9, 0)


class _InterpretedLaunch:
    """Stands in for a loaded kernel: `launch` runs the kernel's ttir in the interpreter."""

    def __init__(self, kernel):
        self.kernel = kernel

    def launch(self, grid, args, stream=None):
        """Interpret every program of `grid` on the (host) arguments."""
        from compiler.runtime.interpreter import interpret
        if os.environ.get("DRY_NOEXEC"):
            return
        try:
            module = self.kernel.ttir_module
        except (AttributeError, KeyError):
            return                  # compiled from a ttgir file: there is no ttir to run
        interpret(module, tuple(grid), list(args), kernel_name=self.kernel.name)

    def cooperative(self):
        """The cooperative form (launch_cooperative_grid=True): the interpreter runs the
        programs one after another either way."""
        return self


def pytest_configure(config):
    """Install the stand-ins before any test module imports torch or triton."""
    import torch
    torch.cuda.get_device_capability = lambda *args, **kwargs: H200_CAPABILITY
    torch.cuda.get_device_name = lambda *args, **kwargs: "NVIDIA H200 (dry run)"
    torch.cuda.synchronize = lambda *args, **kwargs: None
    import compiler.compiler as compiled
    import compiler.runtime.driver as driver
    import compiler.runtime.jit as jit
    driver.gpu_available = lambda: True
    driver.device_capability = lambda *args, **kwargs: H200_CAPABILITY
    compiled.CompiledKernel.launcher = lambda self: _InterpretedLaunch(self)
    jit.MAX_FAST_LAUNCHES = 0       # every launch through `run`, which calls the stand-in
