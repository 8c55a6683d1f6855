"""The story of one kernel in a few lines, for the first screen: its stages with sizes, the
passes that changed something, convert_layout through the pipeline, ptxas's registers / spills /
shared memory, and its launch times grouped by problem size (the array arguments' shapes, the
grid and the warps), with GB/s and TFLOP/s where the kernel's `launch_metadata` declared bytes
or flops (recorded on each launch, `Launch.declared`)."""
from __future__ import annotations

import statistics

from compiler.trace import CompileTrace

STAGES = ("source", "ttir", "ttgir", "llir", "ptx", "sass")


def specialization(trace: CompileTrace) -> str:
    """The whole specialization: constexprs, warps and stages, then the signature."""
    spec = trace.specialization or {}
    options = spec.get("options") or {}
    parts = [f"{k}={v}" for k, v in (spec.get("constexprs") or {}).items()]
    for option in ("num_warps", "num_stages"):
        value = options.get(option) or spec.get(option)
        if value:
            parts.append(f"{option.removeprefix('num_')}={value}")
    signature = signature_text(spec.get("signature"))
    return " · ".join(filter(None, [", ".join(parts), f"({signature})" if signature else ""])) \
        or "none recorded"


def signature_text(signature) -> str:
    """A recorded signature as `x_ptr: *fp32, n: i32` (a {name: type} map) or as it was
    recorded (a string)."""
    if isinstance(signature, dict):
        return ", ".join(f"{name}: {kind}" for name, kind in signature.items())
    return str(signature or "")


def stage_sizes(trace: CompileTrace) -> str:
    """`ttir 40 · ttgir 52 · ...`: the line count of every stage present."""
    return " · ".join(f"{stage} {len(trace.stages[stage].splitlines())}"
                      for stage in STAGES if trace.stages.get(stage))


def changed_passes(trace: CompileTrace) -> str:
    """How many passes ran and the names of those that changed the IR."""
    changed = [record.name for record in trace.passes if record.changed]
    names = list(dict.fromkeys(changed))       # each name once, in first-change order
    return f"{len(changed)} of {len(trace.passes)} changed: " + (", ".join(names) or "none")


def convert_layout_path(trace: CompileTrace) -> str:
    """convert_layout counts after each ttgir pass, repeated values collapsed: `0 → 7 → 3`."""
    counts = [record.convert_layout_count for record in trace.passes if record.stage == "ttgir"]
    path: list[int] = []
    for count in counts:
        if not path or path[-1] != count:
            path.append(count)
    return " → ".join(map(str, path)) if path else "no ttgir passes"


def resources(trace: CompileTrace) -> str:
    """ptxas's report (registers, spills, shared memory), or why there is none."""
    info = trace.cubin_info or {}
    if not info:
        return "no ptxas report (no cubin was built)"
    parts = [f"{info.get('registers', '?')} registers"]
    spills = int(info.get("spill_stores", 0) or 0) + int(info.get("spill_loads", 0) or 0)
    parts.append(f"{spills} spill bytes" if spills else "no spills")
    smem = info.get("shared_memory")
    if smem is not None:
        parts.append(f"{smem} B shared")
    return " · ".join(parts)


def throughput(declared: dict, time_ms: float) -> str:
    """` · 812 GB/s · 95.1 TFLOP/s` from declared bytes and flops over a time ('' if none)."""
    if not declared or not time_ms:
        return ""
    parts = []
    if declared.get("bytes"):
        parts.append(f"{declared['bytes'] / (time_ms * 1e-3) / 1e9:.4g} GB/s")
    flops = sum(v for k, v in declared.items() if k.startswith("flops"))
    if flops:
        parts.append(f"{flops / (time_ms * 1e-3) / 1e12:.4g} TFLOP/s")
    return "".join(f" · {part}" for part in parts)


def _shapes_text(shapes: tuple) -> str:
    """The distinct argument shapes, in order: `[98432]` for three arrays of that size."""
    texts = ("×".join(map(str, shape)) or "scalar" for shape in shapes)
    return " ".join(dict.fromkeys(texts))


def size_groups(trace: CompileTrace) -> dict:
    """The timed launches by problem size: (argument shapes, grid, warps, backend) -> the
    launches of that size, in launch order."""
    groups: dict = {}
    for launch in trace.launches:
        if launch.time_ms is not None:
            key = (tuple(launch.shapes), tuple(launch.grid), launch.num_warps, launch.backend)
            groups.setdefault(key, []).append(launch)
    return groups


def launch_groups(trace: CompileTrace) -> list[str]:
    """One line per problem size (argument shapes, grid, warps): launch count, median and
    min time, and the throughput the declared bytes / flops give at the median."""
    lines = []
    for (shapes, grid, warps, backend), launches in size_groups(trace).items():
        times = [launch.time_ms for launch in launches]
        median = statistics.median(times)
        where = "gpu" if backend == "gpu" else "interp"
        size = f"[{_shapes_text(shapes)}] " if shapes else ""
        rate = throughput(launches[0].declared, median) if backend == "gpu" else ""
        lines.append(f"{size}grid {'×'.join(map(str, grid))} warps {warps}: {len(times)} × "
                     f"median {median:.4g} ms, min {min(times):.4g} ms ({where}){rate}")
    return lines or ["not launched"]


def kernel_story(trace: CompileTrace) -> str:
    """The first screen's summary of one kernel, as plain text: the short facts first (its
    notes, launch times, ptxas, convert_layout, stage sizes) and the long list of changed
    passes last, so that 80x24 shows the times without scrolling."""
    lines = [f"{trace.kernel_name}"]
    lines += [f"note: {note}" for note in trace.notes]
    lines += ["launches:"] + [f"  {line}" for line in launch_groups(trace)]
    lines += [f"ptxas: {resources(trace)}",
              f"convert_layout: {convert_layout_path(trace)}",
              f"stages: {stage_sizes(trace)}",
              f"specialization: {specialization(trace)}",
              f"passes: {changed_passes(trace)}"]
    return "\n".join(lines)
