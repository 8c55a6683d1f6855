"""Numbers that summarize one compile trace, shared by the pipeline editor and `compare`.

Everything is read from the trace: the convert_layout and op counts of the final ttgir (from the
last ttgir pass record when there is one, else counted in the ttgir text), the PTX instruction
count, ptxas's registers and spills, and the median launch time.
"""
from __future__ import annotations

import re
import statistics

from compiler.trace import CompileTrace

_IR_OP = re.compile(r'^\s*(?:%[^=]+=\s*)?"?([a-z_]+\.[a-z_.]+)"?[\s(]')
_PTX_SKIP = re.compile(r"^\s*($|//|\.|\$|[{}]|\)|\(|@?%?[\w$]+:\s*$)")


def count_ops(ir: str) -> dict:
    """Ops by name in an MLIR-like text (function definitions not counted)."""
    counts: dict = {}
    for line in ir.splitlines():
        match = _IR_OP.match(line)
        if match and match.group(1) != "tt.func":
            counts[match.group(1)] = counts.get(match.group(1), 0) + 1
    return counts


def ptx_instruction_count(ptx: str) -> int:
    """Instructions in a PTX text: lines that are not directives, labels, braces or comments."""
    return sum(1 for line in ptx.splitlines() if not _PTX_SKIP.match(line))


def final_op_counts(trace: CompileTrace, stage: str = "ttgir") -> dict:
    """Op counts of a stage's final IR: the last pass record's, else counted from the text."""
    records = trace.passes_of(stage)
    if records and records[-1].op_counts:
        return dict(records[-1].op_counts)
    return count_ops(trace.stages.get(stage, ""))


def launch_median_ms(trace: CompileTrace) -> tuple[float | None, str]:
    """Median launch time and where it came from ("gpu", "interpreter" or "")."""
    times = [launch.time_ms for launch in trace.launches if launch.time_ms is not None]
    if not times:
        return None, ""
    return statistics.median(times), trace.launches[0].backend


def trace_metrics(trace: CompileTrace, stage: str = "ttgir") -> dict:
    """The comparison metrics of one trace, as a flat dict of name -> value (None if unknown)."""
    ops = final_op_counts(trace, stage)
    runtime, backend = launch_median_ms(trace)
    info = trace.cubin_info or {}
    ptx = trace.stages.get("ptx", "")
    return {
        "convert_layout": ops.get("ttg.convert_layout", 0),
        f"{stage} ops": sum(ops.values()),
        "ptx instructions": ptx_instruction_count(ptx) if ptx else None,
        "registers": info.get("registers"),
        "spills (st/ld)": (f"{info.get('spill_stores', 0)}/{info.get('spill_loads', 0)}"
                           if info else None),
        "runtime ms" + (f" ({backend})" if backend else ""): runtime,
    }


def metric_rows(left: dict, right: dict) -> list[tuple[str, str, str, str]]:
    """Rows (metric, A, B, delta) for two metric dicts, with keys in the order of `left`."""
    rows = []
    keys = list(left) + [k for k in right if k not in left]
    for key in keys:
        a, b = left.get(key), right.get(key)
        delta = ""
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            diff = b - a
            delta = f"{diff:+.4g}" if diff else "="
        rows.append((key, _fmt(a), _fmt(b), delta))
    return rows


def _fmt(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def format_table(rows: list[tuple], headers: tuple) -> str:
    """A plain-text table (for the command line)."""
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    lines = ["  ".join(str(h).ljust(w) for h, w in zip(headers, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)) for row in rows]
    return "\n".join(lines)
