"""The llir stage's passes: ttgir -> LLVM IR (the lowering), then LLVM's optimizer.

They run through the same `PassManager` as the ttir and ttgir passes (selectable by a pipeline
string: `pipelines={"llir": "convert-tritongpu-to-llvm,llvm-optimize{level=2}"}` or
TILE_PIPELINE_LLIR), over an `LLIRModule` (the ttgir module and, once lowered, the LLVM IR
text), and `LLIRTraceInstrumentation` records one `PassRecord` per pass as the ttir/ttgir
instrumentation does.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from compiler.codegen.nvidia_options import NvidiaOptions
from compiler.ir.core import Module
from compiler.trace import CompileTrace, PassRecord

from .base import Option, Pass, PassContext, register_pass
from .manager import PassFailure, PassInstrumentation, PassRun


@dataclass
class LLIRModule:
    """What the llir passes work on: the kernel's ttgir module with its metadata, and the LLVM
    IR text once `convert-tritongpu-to-llvm` has run (`lowered` holds the lowering's result)."""

    ttgir: Module
    metadata: Any                   # compiler.stage_state.KernelMetadata
    ttgir_file: str
    text: str | None = None
    lowered: Any = None             # compiler.codegen.lowering.LoweredKernel
    parsed: tuple | None = None     # (text, the llvmlite module it was printed from), if kept

    def parsed_module(self):
        """The llvmlite module `text` was printed from, when the last pass kept it, else None."""
        if self.parsed is not None and self.parsed[0] is self.text:
            return self.parsed[1]
        return None

    def require_text(self, pass_name: str) -> str:
        """The LLVM IR text; a clear error when no pass has produced it yet."""
        if self.text is None:
            raise ValueError(f"{pass_name} works on LLVM IR: put convert-tritongpu-to-llvm "
                             f"before it in the llir pipeline")
        return self.text


def instruction_count(text: str) -> int:
    """LLVM instructions that define a value (the llir passes' `op_counts`)."""
    return sum(1 for line in text.splitlines() if line.startswith("  ") and "=" in line)


def _options(ctx: PassContext):
    """The compile options bound to the run, or the backend's defaults for a pass run alone."""
    return ctx.options if ctx.options is not None else NvidiaOptions()


@register_pass
class ConvertTritonGPUToLLVM(Pass):
    """Lowers every ttgir op to LLVM IR: a distributed tensor becomes a list of per-thread
    registers; memory ops become (vectorized, predicated) PTX."""

    name = "convert-tritongpu-to-llvm"
    stage = "llir"

    def run(self, module: LLIRModule, ctx: PassContext) -> None:
        from compiler.codegen.lowering import LoweringOptions, lower_module
        if module.text is not None:
            raise ValueError("the kernel is already LLVM IR; convert-tritongpu-to-llvm runs once")
        options = _options(ctx)
        lowered = lower_module(module.ttgir, LoweringOptions(
            ttgir_file=module.ttgir_file, optimize=False, metadata=module.metadata,
            maxnreg=options.maxnreg, fp_fusion=options.enable_fp_fusion, arch=options.arch,
            tf32_ldmatrix=options.tf32_ldmatrix))
        module.lowered = lowered
        module.text = lowered.llvm_ir


@register_pass
class LLVMOptimize(Pass):
    """LLVM's O3 pipeline through llvmlite: inlining, instcombine, GVN, loop and vector
    optimizations on the lowered kernel."""

    name = "llvm-optimize"
    stage = "llir"
    options_spec = (Option("level", int, 3, "LLVM speed level (0-3)",
                           check=lambda v: 0 <= v <= 3, allowed="an integer from 0 to 3"),)

    def run(self, module: LLIRModule, ctx: PassContext) -> None:
        from compiler.codegen.optimize import optimize_llvm_module
        options = _options(ctx)
        optimized = optimize_llvm_module(module.require_text(self.name), self.options["level"],
                                         options.ptx_arch, options.ptx_features)
        module.text = str(optimized)
        module.parsed = (module.text, optimized)


class LLIRTraceInstrumentation(PassInstrumentation):
    """Records each llir pass into the trace: its LLVM IR after (with snapshots), whether it
    changed it, and its instruction count."""

    def __init__(self, trace: CompileTrace, snapshots: bool = True):
        self.trace = trace
        self.snapshots = snapshots
        self._last_text = ""
        self._start = 0.0

    def before_pass(self, run: PassRun, module: LLIRModule) -> None:
        self._last_text = module.text or ""
        self._start = time.perf_counter()

    def _record(self, run: PassRun, module: LLIRModule) -> PassRecord:
        text = module.text or ""
        record = PassRecord(stage="llir", name=run.pass_.name, options=dict(run.pass_.options),
                            index=len(self.trace.passes), wall_ms=run.wall_ms,
                            changed=text != self._last_text,
                            ir_after=text if self.snapshots else "", doc=run.pass_.doc(),
                            op_counts={"instructions": instruction_count(text)},
                            patterns=dict(run.ctx.patterns))
        self.trace.passes.append(record)
        return record

    def after_pass(self, run: PassRun, module: LLIRModule) -> None:
        self._record(run, module)

    def after_pass_failed(self, run: PassRun, module: LLIRModule) -> None:
        if isinstance(run.error, PassFailure):
            return
        self._record(run, module).error = f"{type(run.error).__name__}: {run.error}"
