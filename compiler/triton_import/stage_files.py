"""A kernel's stage files as Triton writes them (`NAME.source`, `.ttir`, `.ttgir`, `.llir`,
`.ptx`, `.cubin`, `.json`) -> a CompileTrace: the stage texts, the metadata as the
specialization, registers and spills from ptxas -v of Triton's PTX (when ptxas is here) and
SASS from its cubin (when nvdisasm is). Shared by the TRITON_KERNEL_DUMP reader and the
TritonParse log reader."""
from __future__ import annotations

import json
import re

from compiler.trace import CompileTrace

#: Triton's file suffix -> our stage name (Triton's `.source` is the IR its front end made,
#: i.e. the input of the ttir stage; our `source` stage is the Python text).
STAGE_SUFFIXES = {"ttir": "ttir", "ttgir": "ttgir", "llir": "llir", "ptx": "ptx"}
_ARCH = re.compile(r"^\s*\.target\s+(sm_\w+)", re.M)


def trace_from_stage_files(name: str, files: dict, origin: str) -> CompileTrace:
    """files: {suffix: str text, or bytes for "cubin"}; origin names where they came from."""
    trace = CompileTrace(kernel_name=name)
    metadata = {}
    if files.get("json"):
        try:
            metadata = json.loads(files["json"])
        except json.JSONDecodeError as error:
            trace.notes.append(f"{origin}: {name}.json is not JSON ({error}); metadata skipped")
    trace.specialization = {"producer": "triton", "dump": origin,
                            "options": {key: metadata[key] for key in
                                        ("num_warps", "num_stages", "num_ctas", "arch", "shared",
                                         "hash", "target") if key in metadata}}
    for suffix, stage in STAGE_SUFFIXES.items():
        if isinstance(files.get(suffix), str):
            trace.stages[stage] = files[suffix]
    if isinstance(files.get("source"), str):
        trace.stage_inputs["ttir"] = files["source"]
    if isinstance(files.get("python"), str):
        trace.stages["source"] = files["python"]
    if "ptx" in trace.stages:
        _ptxas_report(trace)
    cubin = files.get("cubin")
    if isinstance(cubin, bytes):
        trace.stages["cubin"] = f"cubin: {len(cubin)} bytes (Triton's)\n"
        _disassemble(trace, cubin)
    elif "ptx" in trace.stages:
        trace.sass_missing = "the dump has no cubin"
    return trace


def _ptxas_report(trace: CompileTrace) -> None:
    """Registers, spills and shared memory from ptxas -v of Triton's PTX (our ptxas: Triton's
    own report is not in its dump)."""
    from compiler.codegen.cubin import PtxasError, assemble
    ptx = trace.stages["ptx"]
    m = _ARCH.search(ptx)
    try:
        _, info = assemble(ptx, m.group(1) if m else "sm_90", line_info=False, timeout_s=120)
    except FileNotFoundError:
        trace.notes.append("ptxas not found: no registers/spills for Triton's PTX")
        return
    except PtxasError as error:
        trace.notes.append(f"ptxas rejected Triton's PTX: {str(error).splitlines()[0]}")
        return
    info.pop("report", None)
    trace.cubin_info = {**info, "from": "ptxas -v of Triton's PTX"}


def _disassemble(trace: CompileTrace, cubin: bytes) -> None:
    from compiler.codegen.sass import disassemble
    text = disassemble(cubin)
    if text is None:
        trace.sass_missing = "neither nvdisasm nor cuobjdump was found (pip install nvidia-cuda-nvdisasm)"
    else:
        trace.stages["sass"] = text
