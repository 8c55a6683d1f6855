"""The NVIDIA backend's stages, all in one place: ttir -> ttgir -> llir -> ptx -> cubin -> sass.

Each stage is a function `(state) -> None` over the `CompileState` (`compiler.stage_state`): it
reads the previous stage's output and writes its own, recording text, line maps, ptxas's report
and notes into the trace. The ttir, ttgir and llir stages run their pipelines through the pass
manager, which binds the compile's frozen options to every pass; the ttgir stage makes the
kernel's `KernelMetadata`, which the lowering and the launcher read. Any stage's output may be
replaced by a file (`override_dir`). `STAGES` lists them in order; the backend's `add_stages`
hands them to the compile driver, which never imports this module's internals.
"""
from __future__ import annotations

from compiler.ir.core import Module
from compiler.metadata import MetadataError
from compiler.ir.parser import parse_module
from compiler.ir.verifier import verify_module
from compiler.passes.instrumentation import TraceInstrumentation
from compiler.passes.llir import LLIRModule, LLIRTraceInstrumentation
from compiler.codegen.lowering_errors import LoweringError
from compiler.passes.manager import DEFAULT_PIPELINES, PassFailure, PassManager
from compiler.codegen.nvidia_options import uses_tma
from compiler.passes.requirements import check_pipeline, check_stage_input, properties_of
from compiler.watchdog import WatchdogInstrumentation
from compiler.stage_state import (CompileState, KernelMetadata, override_text,
                                  record_stage_text)


def default_pipeline(stage: str, options) -> str | None:
    """The stage's default pipeline for `options` (None: the manager's own default): a compile
    copying descriptors by TMA runs `tma-lowering` after the loop pipeliner (which copies the
    descriptor loads it pipelines by TMA itself), then `global-scratch-allocation` (the tensor
    maps of device-side descriptors)."""
    if stage == "ttgir" and uses_tma(options):
        return DEFAULT_PIPELINES["ttgir"].replace(",pipeline,",
                                                  ",pipeline,tma-lowering,global-scratch-allocation,")
    return None


def run_pipeline(state: CompileState, stage: str, module):
    """Run the stage's pipeline (the options' one, else the default) over `module` with the
    compile options bound to every pass and the trace instrumentation recording each."""
    options = state.options
    if stage == "llir":
        instrumentation = LLIRTraceInstrumentation(state.trace, snapshots=options.snapshots)
    else:
        instrumentation = TraceInstrumentation(state.trace, snapshots=options.snapshots,
                                               verify_each=options.verify_each)
    given = options.pipelines.get(stage)
    manager = PassManager(stage, given if given is not None else default_pipeline(stage, options),
                          [instrumentation, WatchdogInstrumentation(state.watchdog)], options)
    if stage != "llir":              # an impossible order is refused before any pass runs
        check_pipeline(manager.passes, stage, given=properties_of(module))
    return manager.run(module)


def stage_ttir(state: CompileState) -> None:
    """ttir: run the ttir pipeline over the front end's module (or an override file)."""
    text = override_text(state, "ttir")
    module = parse_module(text, f"{state.name}.ttir") if text is not None else state.ttir
    state.ttir = run_pipeline(state, "ttir", module)
    record_stage_text(state, "ttir", state.ttir)


def stage_ttgir(state: CompileState) -> None:
    """ttgir: assign layouts and optimize them (convert-triton-to-tritongpu onwards), then read
    the kernel's metadata off the module."""
    text = override_text(state, "ttgir")
    if text is not None:
        state.ttgir = parse_module(text, f"{state.name}.ttgir")
        verify_module(state.ttgir)
    else:
        state.ttgir = run_pipeline(state, "ttgir", state.ttir.clone())
    enter_ttgir(state, state.ttgir)


def enter_ttgir(state: CompileState, module: Module) -> None:
    """Keep `module` as the kernel's ttgir (its text in the trace) and its metadata as the
    kernel's (compiling from a .ttgir file starts here too)."""
    state.ttgir = module
    record_stage_text(state, "ttgir", module)
    try:
        state.metadata = KernelMetadata.from_ttgir(module, state.name)
    except MetadataError:            # not ttgir: say what the lowering lacks and who provides it
        check_stage_input(module, "llir")
        raise


def stage_llir(state: CompileState) -> None:
    """llir: the llir pipeline (lower ttgir to LLVM IR, then LLVM's O3 by default)."""
    text = override_text(state, "llir")
    if text is None:
        unit = LLIRModule(state.ttgir, state.metadata, f"{state.name}.ttgir")
        try:
            run_pipeline(state, "llir", unit)
        except PassFailure as err:   # the lowering's own error is already located: keep it
            located = err.__cause__
            if isinstance(located, LoweringError):
                located.__suppress_context__ = True    # keep its own cause, not the wrapper
                raise located
            raise
        if unit.lowered is None:
            raise ValueError("the llir pipeline must lower the kernel: start it with "
                             "convert-tritongpu-to-llvm")
        lowered = unit.lowered
        state.metadata = state.metadata.with_lowering(
            lowered.shared_bytes, signed_as_declared(lowered.arg_kinds, state.trace.specialization))
        state.trace.ttgir_op_python = {str(k): v for k, v in lowered.op_python.items()}
        state.trace.stage_inputs["llir"] = lowered.ttgir
        text = unit.text
        state.llvm_module = unit.parsed_module()
    state.llir = text
    state.trace.stages["llir"] = text


def signed_as_declared(arg_kinds, specialization: dict) -> list:
    """The kernel's argument kinds with the signedness its signature declares: LLVM integers
    have none, so a `u64` parameter (a Python int of 2**63 or more) lowers to an i64 argument,
    which the launcher must still pack as unsigned. Kinds pair with the signature's runtime
    entries in parameter order (constants are not arguments)."""
    signature = specialization.get("signature", {}) if specialization else {}
    declared = [entry.split(":")[0] for entry in signature.values() if entry != "constexpr"]
    if len(declared) != len(arg_kinds):
        return list(arg_kinds)
    return [entry if kind.startswith("i") and entry.startswith("u") and kind[1:] == entry[1:]
            else kind for kind, entry in zip(arg_kinds, declared)]


def builds_tensor_maps(state: CompileState) -> bool:
    """Whether the kernel writes tensor maps on the device (`ttng.tensormap_create`)."""
    from compiler.dialects.ttng import TensormapCreateOp
    module = state.ttgir
    return module is not None and any(isinstance(op, TensormapCreateOp) for op in module.walk())


def ptx_arch(state: CompileState) -> str:
    """The PTX `.target` / ptxas `-arch`: the options' sm_XX, with the architecture-specific
    `a` suffix (sm_90a) when the kernel uses features only that exact chip has (wgmma,
    tensormap.replace)."""
    from compiler.dialects.ttng import WarpGroupDotOp
    arch = state.options.ptx_arch
    module = state.ttgir
    if module is not None and state.options.arch == 90 and (
            any(isinstance(op, WarpGroupDotOp) for op in module.walk())
            or builds_tensor_maps(state)):
        return arch + "a"
    return arch


def ptx_features(state: CompileState) -> str:
    """The NVPTX features selecting the PTX `.version`: the options' (8.0 by default), or for a
    kernel that builds tensor maps the version `tensormap.replace` needs
    (`nvidia_options.tensormap_ptx_version`)."""
    from compiler.codegen.nvidia_options import tensormap_ptx_version
    if builds_tensor_maps(state):
        return f"+ptx{tensormap_ptx_version(state.options.ptx_version)}"
    return state.options.ptx_features


def stage_ptx(state: CompileState) -> None:
    """ptx: LLVM IR to PTX through llvmlite's NVPTX target (the options' arch and PTX
    version); then the ttgir -> PTX line map."""
    from compiler.codegen.linemap import ptx_line_map
    from compiler.codegen.ptx import llvm_to_ptx
    text = override_text(state, "ptx")
    options = state.options
    kept, state.llvm_module = state.llvm_module, None     # emitting changes it: use it once
    state.ptx = text if text is not None else llvm_to_ptx(state.llir, ptx_arch(state),
                                                          ptx_features(state), kept)
    state.trace.stages["ptx"] = state.ptx
    state.trace.ttgir_to_ptx = {str(k): v for k, v in ptx_line_map(state.ptx).items()}


def stage_cubin(state: CompileState) -> None:
    """cubin: assemble the PTX with ptxas (its -v report goes into the trace), with the
    options' register cap (`maxnreg`) and line info."""
    from compiler.codegen.cubin import PtxasArchUnsupported, assemble
    from compiler.codegen.toolchain import find_tool
    if not state.options.build_cubin:
        return
    if find_tool("ptxas") is None:
        state.trace.notes.append("ptxas not found: the driver JIT-compiles the PTX at load time")
        return
    options = state.options
    try:
        state.cubin, info = assemble(state.ptx, ptx_arch(state), line_info=options.line_info,
                                     maxnreg=options.maxnreg, timeout_s=options.stage_timeout_s)
    except PtxasArchUnsupported:
        state.trace.notes.append(f"this ptxas cannot assemble for {ptx_arch(state)}: no cubin; "
                                 f"the driver JIT-compiles the PTX at load time")
        return
    state.trace.cubin_info = info
    state.trace.stages["cubin"] = _describe_cubin(state.cubin, info)


def _describe_cubin(cubin: bytes, info: dict) -> str:
    lines = [f"cubin: {len(cubin)} bytes"]
    lines += [f"{key}: {value}" for key, value in info.items()]
    return "\n".join(lines) + "\n"


def stage_sass(state: CompileState) -> None:
    """sass: disassemble the cubin (nvdisasm / cuobjdump: the PATH, the nvidia-cuda-nvdisasm
    wheel, /usr/local/cuda), then the ttgir -> SASS line map from nvdisasm's line info. When
    there is no SASS, `trace.sass_missing` says why (the explorer's SASS tab shows it)."""
    from compiler.codegen.linemap import sass_line_map
    from compiler.codegen.sass import disassemble
    if not state.options.build_sass:
        state.trace.sass_missing = "SASS was not requested (build_sass=False)"
        return
    if state.cubin is None:
        state.trace.sass_missing = ("no cubin to disassemble: "
                                    + ("ptxas was not found" if state.options.build_cubin
                                       else "cubin was not requested (build_cubin=False)"))
        return
    text = disassemble(state.cubin)
    if text is None:
        reason = ("no SASS: neither nvdisasm nor cuobjdump was found (pip install "
                  "nvidia-cuda-nvdisasm, or put the CUDA toolkit's bin on the PATH)")
        state.trace.notes.append(reason)
        state.trace.sass_missing = reason
        return
    state.trace.stages["sass"] = text
    state.trace.ttgir_to_sass = {str(k): v for k, v in sass_line_map(text).items()}


#: The backend's stages in compilation order.
STAGES = (("ttir", stage_ttir), ("ttgir", stage_ttgir), ("llir", stage_llir),
          ("ptx", stage_ptx), ("cubin", stage_cubin), ("sass", stage_sass))
