"""Putting the pieces of one Triton compile together: the per-pass records from its MLIR dump
and the stage files from its kernel dump (matched by kernel name, in compile order), plus the
Python source of the script; and opening any one artifact by what it is."""
from __future__ import annotations

from pathlib import Path

from .kernel_dump import read_kernel_dump
from .mlir_dump import read_mlir_dump_file
from .tritonparse_log import read_tritonparse_log


def merge_traces(pass_traces: list, stage_traces: list) -> list:
    """One trace per compile: the stage files' texts win over the stage texts rebuilt from the
    pass dump (they are what Triton wrote); the passes, stage inputs and notes come along."""
    remaining = list(pass_traces)
    merged = []
    for stage_trace in stage_traces:
        match = next((t for t in remaining if t.kernel_name == stage_trace.kernel_name), None)
        if match is None:
            merged.append(stage_trace)
            continue
        remaining.remove(match)
        match.stages = {**match.stages, **stage_trace.stages}
        match.stage_inputs = {**match.stage_inputs, **stage_trace.stage_inputs}
        match.cubin_info = stage_trace.cubin_info or match.cubin_info
        match.sass_missing = stage_trace.sass_missing
        match.specialization = {**match.specialization, **stage_trace.specialization}
        match.launches = stage_trace.launches or match.launches
        match.notes = match.notes + stage_trace.notes
        merged.append(match)
    return merged + remaining


def attach_python(traces: list, script: Path) -> None:
    """Give every trace the script's text as its `source` stage (source_line 1: the whole
    file), unless it already has its own."""
    text = script.read_text(errors="replace")
    for trace in traces:
        if not trace.stages.get("source"):
            trace.stages["source"] = text
            trace.source_file = str(script)
            trace.source_line = 1


def load_triton_artifacts(path: str | Path) -> list:
    """CompileTraces from one artifact of the real Triton: a TritonParse log (.ndjson,
    .ndjson.gz), a TRITON_KERNEL_DUMP folder (merged with an MLIR dump inside it named
    `mlir-dump.txt`, as `tile-explore --triton` saves it), or an MLIR_ENABLE_DUMP text."""
    path = Path(path)
    if not path.exists():
        raise ValueError(f"{path}: no such file or folder")
    if path.name.endswith((".ndjson", ".ndjson.gz")):
        return read_tritonparse_log(path)
    if path.is_dir():
        dump = path / "mlir-dump.txt"
        passes = read_mlir_dump_file(dump) if dump.is_file() else []
        stage_folder = path / "kernels" if (path / "kernels").is_dir() else path
        return merge_traces(passes, read_kernel_dump(stage_folder))
    return read_mlir_dump_file(path)
