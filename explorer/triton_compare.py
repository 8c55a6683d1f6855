"""`compare --against-triton`: our compile of a kernel beside the real Triton's, stage by stage
(op and convert_layout counts of ttir and ttgir, the passes each ran and their time, PTX size
and instructions, registers and spills, runtime)."""
from __future__ import annotations

from explorer.metrics import count_ops, launch_median_ms, ptx_instruction_count


def stage_metrics(trace) -> dict:
    """Per-stage numbers of one trace (ours or Triton's), None where unknown."""
    out: dict = {}
    for stage in ("ttir", "ttgir"):
        text = trace.stages.get(stage, "")
        ops = count_ops(text) if text else {}
        passes = [r for r in trace.passes if r.stage == stage]
        out[f"{stage} ops"] = sum(ops.values()) if text else None
        out[f"{stage} convert_layout"] = ops.get("ttg.convert_layout", 0) if text else None
        out[f"{stage} passes"] = len(passes) if passes else None
        out[f"{stage} pass time ms"] = round(sum(r.wall_ms for r in passes), 3) \
            if passes else None
    ptx = trace.stages.get("ptx", "")
    out["ptx lines"] = len(ptx.splitlines()) if ptx else None
    out["ptx instructions"] = ptx_instruction_count(ptx) if ptx else None
    info = trace.cubin_info or {}
    out["registers"] = info.get("registers")
    out["spills (st/ld)"] = (f"{info.get('spill_stores', 0)}/{info.get('spill_loads', 0)}"
                             if info else None)
    out["shared bytes"] = info.get("shared_memory")
    runtime, backend = launch_median_ms(trace)
    out["runtime ms"] = runtime
    out["timed by"] = backend or None
    return out


def pair_traces(ours: list, theirs: list) -> list:
    """[(our trace or None, Triton's trace or None)] matched by kernel name, in our order."""
    remaining = list(theirs)
    pairs = []
    for trace in ours:
        match = next((t for t in remaining if t.kernel_name == trace.kernel_name), None)
        if match is not None:
            remaining.remove(match)
        pairs.append((trace, match))
    return pairs + [(None, t) for t in remaining]
