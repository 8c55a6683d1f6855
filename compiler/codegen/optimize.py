"""LLVM optimization of the lowered kernel: libdevice linked in when the kernel calls it, then O3
through llvmlite's new pass manager."""
from __future__ import annotations

import llvmlite.binding as llvm

from .libdevice import link_libdevice
from .target import target_machine


def optimize_llvm(llvm_text: str, speed_level: int = 3, arch: str = "sm_90",
                  features: str = "+ptx80") -> str:
    """Parse, verify, link libdevice if needed and optimize LLVM IR text (the NVPTX target's
    pipeline for `arch` and `features`), return the text."""
    return str(optimize_llvm_module(llvm_text, speed_level, arch, features))


def optimize_llvm_module(llvm_text: str, speed_level: int = 3, arch: str = "sm_90",
                         features: str = "+ptx80") -> llvm.ModuleRef:
    """`optimize_llvm`, returning the optimized llvmlite module itself (which the PTX stage
    can emit from without parsing its text again)."""
    module = llvm.parse_assembly(llvm_text)
    module.verify()
    link_libdevice(module)
    tuning = llvm.create_pipeline_tuning_options(speed_level=speed_level)
    builder = llvm.create_pass_builder(target_machine(arch, features), tuning)
    builder.getModulePassManager().run(module, builder)
    return module
