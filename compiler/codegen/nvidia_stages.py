"""The NVIDIA backend's own stages: ttgir -> LLVM IR (lowering, O3) -> PTX -> cubin -> SASS.

Each is a stage function of the compile driver (`compiler.compiler`): it reads the previous
stage's output from the compile state and writes its own, recording text, line maps, ptxas's
report and notes into the trace. `nvidia_backend.NvidiaBackend.add_stages` lists them after the
common ttir and ttgir stages.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING

from compiler.trace import PassRecord

if TYPE_CHECKING:
    from compiler.compiler import CompileState


def override_text(state, stage: str):
    """The compile driver's override lookup (TILE_OVERRIDE_DIR), noted in the trace."""
    from compiler.compiler import override_text as lookup
    return lookup(state, stage)


def stage_llir(state: CompileState) -> None:
    """llir: lower ttgir to LLVM IR with llvmlite, then optimize it (O3)."""
    from compiler.codegen.lowering import LoweringOptions, lower_module
    from compiler.codegen.optimize import optimize_llvm
    text = override_text(state, "llir")
    base_index = len(state.trace.passes)
    if text is None:
        start = time.perf_counter()
        lowered = lower_module(state.ttgir, LoweringOptions(ttgir_file=f"{state.name}.ttgir",
                                                            optimize=False,
                                                            maxnreg=state.options.maxnreg))
        state.metadata.update({"shared": lowered.shared_bytes, "num_warps": lowered.num_warps,
                               "arg_kinds": list(lowered.arg_kinds),
                               "threads_per_warp": lowered.threads_per_warp})
        state.trace.ttgir_op_python = {str(k): v for k, v in lowered.op_python.items()}
        state.trace.stage_inputs["llir"] = lowered.ttgir
        _llir_record(state, "convert-tritongpu-to-llvm", base_index, start, lowered.llvm_ir,
                     "Lowers every ttgir op to LLVM IR: a distributed tensor becomes a list of "
                     "per-thread registers; memory ops become (vectorized, predicated) PTX.")
        start = time.perf_counter()
        text = optimize_llvm(lowered.llvm_ir, 3)
        _llir_record(state, "llvm-optimize", base_index + 1, start, text,
                     "LLVM's O3 pipeline through llvmlite: inlining, instcombine, GVN, "
                     "loop and vector optimizations on the lowered kernel.")
    state.llir = text
    state.trace.stages["llir"] = text


def _llir_record(state, name, index, start, text, doc) -> None:
    previous = [p for p in state.trace.passes if p.stage == "llir"]
    before = previous[-1].ir_after if previous else ""
    state.trace.passes.append(PassRecord(
        stage="llir", name=name, index=index, wall_ms=(time.perf_counter() - start) * 1e3,
        changed=text != before, ir_after=text if state.options.snapshots else "", doc=doc,
        op_counts={"instructions": sum(1 for line in text.splitlines()
                                       if line.startswith("  ") and "=" in line)}))


def ptx_arch(state: CompileState) -> str:
    """The PTX `.target` / ptxas `-arch`: the options' sm_XX, with the architecture-specific
    `a` suffix (sm_90a) when the kernel uses features only that exact chip has (wgmma)."""
    from compiler.dialects.ttng import WarpGroupDotOp
    arch = state.options.ptx_arch
    module = state.ttgir
    if module is not None and state.options.arch == 90 and \
            any(isinstance(op, WarpGroupDotOp) for op in module.walk()):
        return arch + "a"
    return arch


def stage_ptx(state: CompileState) -> None:
    """ptx: LLVM IR to PTX through llvmlite's NVPTX target; then the ttgir -> PTX line map."""
    from compiler.codegen.linemap import ptx_line_map
    from compiler.codegen.ptx import llvm_to_ptx
    text = override_text(state, "ptx")
    state.ptx = text if text is not None else llvm_to_ptx(state.llir, ptx_arch(state))
    state.trace.stages["ptx"] = state.ptx
    state.trace.ttgir_to_ptx = {str(k): v for k, v in ptx_line_map(state.ptx).items()}


def stage_cubin(state: CompileState) -> None:
    """cubin: assemble the PTX with ptxas (its -v report goes into the trace), with the
    options' register cap (`maxnreg`) and line info."""
    from compiler.codegen.cubin import assemble
    from compiler.codegen.toolchain import find_tool
    if not state.options.build_cubin:
        return
    if find_tool("ptxas") is None:
        state.trace.notes.append("ptxas not found: the driver JIT-compiles the PTX at load time")
        return
    options = state.options
    state.cubin, info = assemble(state.ptx, ptx_arch(state), line_info=options.line_info,
                                 maxnreg=options.maxnreg)
    state.trace.cubin_info = info
    state.trace.stages["cubin"] = _describe_cubin(state.cubin, info)


def _describe_cubin(cubin: bytes, info: dict) -> str:
    lines = [f"cubin: {len(cubin)} bytes"]
    lines += [f"{key}: {value}" for key, value in info.items()]
    return "\n".join(lines) + "\n"


def stage_sass(state: CompileState) -> None:
    """sass: disassemble the cubin (nvdisasm / cuobjdump) when one is on the PATH."""
    from compiler.codegen.sass import disassemble
    if state.cubin is None or not state.options.build_sass:
        return
    text = disassemble(state.cubin)
    if text is None:
        state.trace.notes.append("no SASS: neither nvdisasm nor cuobjdump was found")
        return
    state.trace.stages["sass"] = text
