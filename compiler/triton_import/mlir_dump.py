"""Triton's `MLIR_ENABLE_DUMP=1` output -> CompileTraces with one PassRecord per pass run.

The dump prints the IR *before* each pass, under a header
`// -----// IR Dump Before <Class> (<arg>) ('<op>' operation[: @<symbol>]) //----- //`; the
software pipeliner adds `// -----// SoftwarePipeliner internal IR Dump After: <Step>` blocks;
with `MLIR_ENABLE_TIMING=1` an "Execution time report" ends each pass-manager run (Triton runs
one per stage: make_ttir, make_ttgir, make_llir), and its tree gives each top-level pass's wall
time. So the IR after pass k is the IR printed before pass k+1 (for the last pass of the whole
compile it is not in the dump). Passes anchored on a function (`'tt.func' operation: @f`) run
nested inside the module pass before them (the inliner's canonicalize of each callee); they are
listed in that pass's options under `nested`, not as records of their own.

Every snapshot is parsed with our IR parser (for op counts and convert_layout counts); a text
we cannot parse (the LLVM dialect after convert-triton-gpu-to-llvm, say) is kept as text and
the record's `parse_error` says why."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from compiler.trace import CompileTrace, PassRecord

_HEADER = re.compile(r"^// -----// IR Dump Before (\S+) \(([^)]*)\) \('([^']+)' operation"
                     r"(?:: @(.*?))?\) //----- //\s*$")
_INTERNAL = re.compile(r"^// -----// (\S+) internal IR Dump After: (\S+)\s*$")
_REPORT = re.compile(r"^===-+===\s*$")
_TIMING_ROW = re.compile(r"^\s+(-?\d+\.\d+) \(\s*-?[\d.]+%\)(\s+)(.+?)\s*$")
_FUNC_NAME = re.compile(r"tt\.func\s+(?:public\s+)?@(\"[^\"]+\"|[\w.$]+)")

#: Triton's stage names, one per pass-manager run (make_ttir, make_ttgir, make_llir).
RUN_STAGES = ("ttir", "ttgir", "llir")
#: Without timing reports, the passes that start a stage (by their command-line name).
STAGE_STARTS = {"convert-triton-to-tritongpu": "ttgir", "convert-triton-gpu-to-llvm": "llir"}


@dataclass
class DumpBlock:
    """One IR snapshot of the dump: the IR before a pass (`kind` "before") or after an internal
    step of one (`kind` "after"), with the file line its header is on."""

    kind: str
    pass_class: str
    pass_arg: str
    anchor: str                      # "builtin.module", "tt.func", ...
    symbol: str                      # the anchor's symbol for function-anchored passes
    text: str
    line: int
    run: int                         # which pass-manager run (0-based), by timing reports


@dataclass
class DumpParse:
    """The blocks of a dump and the wall times of each run's top-level passes."""

    blocks: list = field(default_factory=list)
    run_times: list = field(default_factory=list)     # per run: [(class name, seconds)]


def split_dump(text: str) -> DumpParse:
    """The dump's IR blocks, in order, and its timing reports."""
    result = DumpParse()
    lines = text.splitlines()
    current: DumpBlock | None = None
    body: list = []
    run = 0
    i = 0

    def close() -> None:
        nonlocal current
        if current is not None:
            current.text = "\n".join(body).strip("\n") + "\n"
            result.blocks.append(current)
        current = None
        body.clear()

    while i < len(lines):
        line = lines[i]
        header = _HEADER.match(line)
        internal = _INTERNAL.match(line) if header is None else None
        if header or internal:
            close()
            if header:
                current = DumpBlock("before", header.group(1), header.group(2),
                                    header.group(3), header.group(4) or "", "", i + 1, run)
            else:
                current = DumpBlock("after", internal.group(1), internal.group(2),
                                    "builtin.module", "", "", i + 1, run)
        elif _REPORT.match(line) and i + 1 < len(lines) and "Execution time report" in lines[i + 1]:
            close()
            times, i = _read_report(lines, i + 2)
            result.run_times.append(times)
            run += 1
            continue
        elif current is not None:
            body.append(line)
        i += 1
    close()
    return result


def _read_report(lines: list, i: int) -> tuple:
    """The top-level rows of one timing report starting at line index i: [(name, seconds)],
    and the index after the report."""
    rows: list = []
    if i < len(lines) and _REPORT.match(lines[i]):
        i += 1
    indent = None
    in_any = False                   # inside an op-agnostic ('any') pipeline: its children
    while i < len(lines):            # are passes of the run itself
        line = lines[i]
        m = _TIMING_ROW.match(line)
        if m:
            name, depth = m.group(3), len(m.group(2))
            if indent is None:
                indent = depth
            if depth == indent:
                in_any = name == "'any' Pipeline"
            if (depth == indent or in_any) and name not in ("Rest", "Total"):
                rows.append((name, float(m.group(1))))
            if name == "Total":
                return rows, i + 1
        elif line.strip() and not line.strip().startswith(("Total Execution Time", "----")):
            return rows, i
        i += 1
    return rows, i


def split_compiles(blocks: list) -> list:
    """The blocks of each compile: a new one starts at every Inliner dump (Triton's first pass)
    after the first block."""
    compiles: list = []
    for block in blocks:
        if not compiles or (block.kind == "before" and block.pass_arg == "inline"
                            and block.anchor == "builtin.module"):
            compiles.append([])
        compiles[-1].append(block)
    return compiles


def kernel_name_of(text: str) -> str:
    """The public tt.func's name in a module's text ("kernel" when none is found)."""
    m = _FUNC_NAME.search(text)
    return m.group(1).strip('"') if m else "kernel"


def _parse_counts(text: str, source_name: str, first_line: int) -> tuple:
    """(op counts, "") for a text our parser reads, else ({}, the error as FILE:LINE:COL:
    message, with LINE the dump file's line); the text starts on dump line `first_line`."""
    from compiler.ir.core import op_count_by_name
    from compiler.ir.parser import ParseError, parse_module
    try:
        module = parse_module(text, source_name=source_name)
    except ParseError as error:
        return {}, (f"{source_name}:{error.line + first_line - 1}:{error.col}: "
                    f"{error.bare_message}")
    except Exception as error:          # a verifier or dialect error raised while parsing
        message = str(error).splitlines()[0] if str(error) else ""
        return {}, f"{source_name}:{first_line}: {type(error).__name__}: {message}"
    return op_count_by_name(module), ""


def _stage_of(block: DumpBlock, previous: str, with_runs: bool) -> str:
    if with_runs:
        return RUN_STAGES[min(block.run, len(RUN_STAGES) - 1)]
    return STAGE_STARTS.get(block.pass_arg, previous) if block.kind == "before" else previous


def _step_names(module_blocks: list) -> list:
    """The record name of each transformation between consecutive snapshots: a pass by its
    command-line name, an internal step as `pass:Step`, the rest of a pass after its internal
    steps as `pass (rest)`."""
    names = []
    owner = ""
    for k, block in enumerate(module_blocks):
        if block.kind == "before":
            owner = block.pass_arg
        following = module_blocks[k + 1] if k + 1 < len(module_blocks) else None
        if following is not None and following.kind == "after":
            names.append(f"{owner}:{following.pass_arg}")
        elif block.kind == "after":
            names.append(f"{owner} (rest)")
        else:
            names.append(owner)
    return names


def trace_from_blocks(blocks: list, run_times: list, source_name: str) -> CompileTrace:
    """One compile's blocks -> a CompileTrace: a PassRecord per module-level pass (or internal
    step), stage texts at the stage boundaries, wall times from the timing reports."""
    module_blocks = [b for b in blocks if b.anchor == "builtin.module"]
    if not module_blocks:
        raise ValueError(f"{source_name}: the dump has no module-level IR block")
    trace = CompileTrace(kernel_name=kernel_name_of(module_blocks[0].text))
    trace.specialization = {"producer": "triton", "dump": source_name}
    with_runs = bool(run_times)
    names = _step_names(module_blocks)
    times = _time_queues(run_times)
    nested: dict = {}
    owner_index = -1
    for block in blocks:
        if block.anchor == "builtin.module":
            owner_index += 1
        elif owner_index >= 0:
            nested.setdefault(owner_index, []).append(f"{block.pass_arg} @{block.symbol}")
    stage = "ttir"
    for k, block in enumerate(module_blocks):
        stage = _stage_of(block, stage, with_runs)
        if stage not in trace.stage_inputs:
            trace.stage_inputs[stage] = block.text
            for earlier in RUN_STAGES[:RUN_STAGES.index(stage)]:
                if earlier not in trace.stages and earlier in trace.stage_inputs:
                    trace.stages[earlier] = block.text
        following = module_blocks[k + 1] if k + 1 < len(module_blocks) else None
        record = PassRecord(stage=stage, name=names[k], index=k)
        record.options = {"class": block.pass_class, "dump_line": block.line}
        if nested.get(k):
            record.options["nested"] = nested[k]
        if block.kind == "before":
            record.wall_ms = times.get((block.run, block.pass_class), []).pop(0) * 1e3 \
                if times.get((block.run, block.pass_class)) else 0.0
        if following is None:
            record.ir_after = block.text
            record.parse_error = ("the dump ends before this pass's output (MLIR_ENABLE_DUMP "
                                  "prints the IR before each pass); its input is shown")
        else:
            record.ir_after = following.text
            record.op_counts, record.parse_error = _parse_counts(
                following.text, source_name, following.line + 1)
            record.convert_layout_count = record.op_counts.get("ttg.convert_layout", 0)
            record.changed = following.text != block.text
        trace.passes.append(record)
    last_stage = trace.passes[-1].stage if trace.passes else "ttir"
    if last_stage in ("ttir", "ttgir") and last_stage not in trace.stages:
        trace.stages[last_stage] = trace.passes[-1].ir_after
    unparsed = [r for r in trace.passes if r.parse_error]
    if unparsed:
        trace.notes.append(f"{len(unparsed)} of {len(trace.passes)} pass snapshots are shown as "
                           f"text: our parser could not read them (first: {unparsed[0].name}: "
                           f"{unparsed[0].parse_error})")
    return trace


def _time_queues(run_times: list) -> dict:
    """{(run, pass class): [seconds, ...]} in report order, for popping as the passes come."""
    queues: dict = {}
    for run, rows in enumerate(run_times):
        for name, seconds in rows:
            if name.startswith("(A)") or name.endswith(" Pipeline"):
                continue
            queues.setdefault((run, name), []).append(seconds)
    return queues


def read_mlir_dump(text: str, source_name: str = "<dump>") -> list:
    """Every compile in an MLIR_ENABLE_DUMP text, as CompileTraces (ValueError when the text
    holds no IR dump header)."""
    parsed = split_dump(text)
    if not parsed.blocks:
        raise ValueError(f"{source_name}: no '// -----// IR Dump Before ...' header found; is "
                         "this MLIR_ENABLE_DUMP=1 output?")
    traces = []
    for blocks in split_compiles(parsed.blocks):
        runs = sorted({b.run for b in blocks})
        times = parsed.run_times[runs[0]:runs[-1] + 1] if parsed.run_times else []
        rebased = [DumpBlock(b.kind, b.pass_class, b.pass_arg, b.anchor, b.symbol, b.text,
                             b.line, b.run - runs[0]) for b in blocks]
        traces.append(trace_from_blocks(rebased, times, source_name))
    return traces


def read_mlir_dump_file(path: str | Path) -> list:
    """read_mlir_dump of a file."""
    path = Path(path)
    return read_mlir_dump(path.read_text(errors="replace"), str(path))
