"""Realistic CompileTraces for the explorer tests, made from Triton 3.6's reference outputs.

The stages (Python source, ttir, ttgir, llir, ptx) are Triton's own; the pass records come from
`softmax.per-pass-dump.txt` (the IR before every module-level pass, so each record's `ir_after`
is the next dump); the ttgir->PTX and ttgir->Python maps are rebuilt from the `loc` attributes of
the ttgir and the `.loc` lines of the PTX. Launch times are the ones MEASURED.md reports.
"""
from __future__ import annotations

import asyncio
import functools
import re
from pathlib import Path

from compiler.trace import CompileTrace, Launch, PassRecord
from explorer.metrics import count_ops

from tests.conftest import REFERENCE  # noqa: E402  (../shared, or ./carry on the GPU machine)
KERNEL_FILE = "triton_h200_kernels.py"
_DUMP_HEADER = re.compile(r"^// -----// IR Dump Before (\S+) \(([\w-]+)\) \('(\S+)' operation")
_LOC_DEF = re.compile(r"^(#loc\d*) = loc\((.*)\)\s*$")
KERNEL_LINES = {"add_kernel": 4, "softmax_kernel": 13}     # the @triton.jit line of each
# 2^28 fp32 add at 4349 GB/s and a 4096x4096 fp32 softmax at 3567 GB/s (MEASURED.md).
MEASURED_MS = {"add_kernel": 3 * 4 * 2**28 / 4349e9 * 1e3,
               "softmax_kernel": 2 * 4 * 4096**2 / 3567e9 * 1e3}
GRIDS = {"add_kernel": (2**28 // 1024, 1, 1), "softmax_kernel": (4096, 1, 1)}


def split_dump(text: str) -> list[tuple[str, str]]:
    """(pass name, IR before it) for every module-level dump in a per-pass dump file."""
    dumps, current, body = [], None, []
    for line in text.splitlines():
        header = _DUMP_HEADER.match(line)
        if header or line.startswith("// -----// SoftwarePipeliner"):
            if current is not None:
                dumps.append((current, "\n".join(body).strip() + "\n"))
            current = header.group(2) if header and header.group(3) == "builtin.module" else None
            body = []
        elif current is not None:
            body.append(line)
    if current is not None:
        dumps.append((current, "\n".join(body).strip() + "\n"))
    return dumps


def pass_records(dump_text: str, final_ir: str) -> tuple[list, dict]:
    """PassRecords (and stage inputs) from a per-pass dump; the last pass's output is final_ir."""
    dumps = split_dump(dump_text)
    records, inputs, stage = [], {}, "ttir"
    for index, (name, before) in enumerate(dumps):
        if name == "convert-triton-to-tritongpu":
            stage = "ttgir"
        elif name == "convert-triton-gpu-to-llvm":
            stage = "llir"
        inputs.setdefault(stage, before)
        after = dumps[index + 1][1] if index + 1 < len(dumps) else final_ir
        records.append(PassRecord(
            stage=stage, name=name, index=index, wall_ms=round(0.05 + len(after) / 2e5, 3),
            changed=after != before, ir_after=after, op_counts=count_ops(after),
            convert_layout_count=after.count("ttg.convert_layout "),
            doc=f"Triton 3.6's `{name}` pass, as it ran on sm_90 (reference dump)."))
    return records, inputs


def _loc_lines(ttgir: str) -> dict:
    """#locN -> Python line in the kernel file, following names and call sites."""
    raw = {}
    for line in ttgir.splitlines():
        match = _LOC_DEF.match(line)
        if match:
            raw[match.group(1)] = match.group(2)

    def resolve(body: str, depth: int = 0):
        if depth > 20:
            return None
        file_match = re.match(r'"([^"]+)":(\d+):\d+', body)
        if file_match:
            return int(file_match.group(2)) if file_match.group(1) == KERNEL_FILE else None
        call = re.match(r"callsite\((#loc\d*) at (#loc\d*)\)", body)
        if call:
            return resolve(raw.get(call.group(1), ""), depth + 1) or \
                resolve(raw.get(call.group(2), ""), depth + 1)
        named = re.match(r'"[^"]*"\((#loc\d*)\)', body)
        if named:
            return resolve(raw.get(named.group(1), ""), depth + 1)
        return None

    return {name: resolve(body) for name, body in raw.items()}


def ttgir_python_map(ttgir: str) -> dict:
    """ttgir line (str) -> Python line, for every op line whose loc resolves to the kernel file."""
    locs = _loc_lines(ttgir)
    out = {}
    for number, line in enumerate(ttgir.splitlines(), start=1):
        match = re.search(r"loc\((#loc\d*)\)\s*$", line)
        if match and not line.startswith("#") and locs.get(match.group(1)):
            out[str(number)] = locs[match.group(1)]
    return out


def ptx_python_lines(ptx: str) -> dict:
    """PTX line -> the kernel-file Python line of the `.loc` that governs it."""
    out, current = {}, None
    for number, line in enumerate(ptx.splitlines(), start=1):
        if line.strip().startswith(".loc"):
            found = re.findall(KERNEL_FILE + r":(\d+)", line)
            current = int(found[-1]) if found else None
            continue
        if current is not None and line.strip() and not line.strip().startswith(("//", "$")):
            out[number] = current
    return out


def _ranges(lines: list[int]) -> list[list[int]]:
    ranges: list[list[int]] = []
    for line in sorted(lines):
        if ranges and line == ranges[-1][1] + 1:
            ranges[-1][1] = line
        else:
            ranges.append([line, line])
    return ranges


def kernel_source(file_text: str, first_line: int) -> str:
    """The kernel's text as the compiler keeps it: from its decorator to the next definition."""
    lines = file_text.splitlines()[first_line - 1:]
    end = next((i for i, line in enumerate(lines[1:], 1) if line.startswith("@")), len(lines))
    return "\n".join(lines[:end]).rstrip() + "\n"


def reference_trace(kernel: str, with_passes: bool = True) -> CompileTrace:
    """A CompileTrace for `add` or `softmax` made from the reference files."""
    name = f"{kernel}_kernel"
    stages = {"source": kernel_source((REFERENCE / "kernels.py").read_text(), KERNEL_LINES[name])}
    for stage in ("ttir", "ttgir", "llir", "ptx"):
        stages[stage] = (REFERENCE / f"{kernel}.{stage}").read_text()
    passes, inputs = [], {}
    if with_passes and (REFERENCE / f"{kernel}.per-pass-dump.txt").exists():
        passes, inputs = pass_records((REFERENCE / f"{kernel}.per-pass-dump.txt").read_text(),
                                      stages["llir"])
    op_python = ttgir_python_map(stages["ttgir"])
    ptx_python = ptx_python_lines(stages["ptx"])
    ttgir_to_ptx, python_to_ops = {}, {}
    for ttgir_line, py_line in op_python.items():
        ptx_lines = [n for n, p in ptx_python.items() if p == py_line]
        if ptx_lines:
            ttgir_to_ptx[ttgir_line] = _ranges(ptx_lines)
        entry = python_to_ops.setdefault(str(py_line), {"ttgir": [], "ptx": []})
        entry["ttgir"].append(int(ttgir_line))
        entry["ptx"] = sorted(set(ptx_lines))
    warps = int(re.search(r'"ttg.num-warps" = (\d+)', stages["ttgir"]).group(1))
    return CompileTrace(
        kernel_name=name, source_file=str(REFERENCE / "kernels.py"),
        source_line=KERNEL_LINES[name],
        specialization={"signature": "*fp32:16, *fp32:16, i32:16, i32:16, i32",
                        "constexprs": {"BLOCK": 4096 if kernel == "softmax" else 1024},
                        "num_warps": warps},
        stages=stages, stage_inputs=inputs, passes=passes,
        stage_times_ms={"ttir": 3.1, "ttgir": 5.4, "llir": 20.2, "ptx": 40.5},
        cubin_info={"registers": 32 if kernel == "softmax" else 26, "spill_stores": 0,
                    "spill_loads": 0, "shared_bytes": 0},
        ttgir_to_ptx=ttgir_to_ptx, python_to_ops=python_to_ops, ttgir_op_python=op_python,
        launches=[Launch(grid=GRIDS[name], backend="gpu", time_ms=MEASURED_MS[name] * f,
                         num_warps=warps) for f in (1.0, 0.98, 1.01)],
        notes=["made from Triton 3.6 reference outputs (tests/cpu/explorer_fixture.py)"])


def have_reference() -> bool:
    """Whether ../shared/reference is present (tests skip without it)."""
    return (REFERENCE / "softmax.per-pass-dump.txt").exists()


def run_async(test):
    """Run an async test body with asyncio (the project does not depend on pytest-asyncio)."""
    @functools.wraps(test)
    def wrapper(*args, **kwargs):
        return asyncio.run(test(*args, **kwargs))
    return wrapper
