"""Writing a session: hatchet JSON in Proton's layout, and Chrome's trace event format.

Hatchet (what `proton-viewer` and `llnl-hatchet`'s `GraphFrame.from_literal` read): a JSON list
of the tree's root and the device record. Each node is `{"frame": {"name", "type"},
"metrics": {...}, "children": [...]}` with its own (exclusive) metrics; the root lists every
metric name (hatchet takes the metric columns from it) and carries the profile's `metadata`
(timing method, context, autotuning results) under a key that hatchet ignores; kernel nodes
carry Proton's `device_id`/`device_type` and, for our kernels, `attributes` (kernel,
specialization). Chrome trace (opens in Perfetto and chrome://tracing): complete events ("X",
microseconds) on one track per kind (host scopes, GPU kernels, interpreter launches) and, for
instrumented kernels, a process "warps" with one track per warp of each program.
"""
from __future__ import annotations

import json
from pathlib import Path

from compiler.profiler.data import Node, Profile

#: `finalize(output_format=...)` values and the file suffix each writes.
OUTPUT_FORMATS = {"hatchet": ".hatchet", "chrome_trace": ".chrome_trace"}
#: Chrome trace thread id of each event track.
TRACKS = {"host": (0, "host scopes"), "gpu": (1, "GPU kernels"),
          "interpreter": (2, "interpreter launches")}


def _node_literal(node: Node, gpu: bool) -> dict:
    metrics = dict(node.metrics)
    if node.kind == "kernel" and gpu:
        metrics.update({"device_id": "0", "device_type": "CUDA"})
    literal = {"frame": {"name": node.name, "type": "function"}, "metrics": metrics,
               "children": [_node_literal(child, gpu) for child in node.children.values()]}
    if node.attributes:
        literal["attributes"] = dict(node.attributes)
    return literal


def hatchet_literal(profile: Profile) -> list:
    """The profile as Proton's hatchet JSON value: [root, device record]."""
    gpu = profile.metadata.get("timing", {}).get("method") in ("cupti", "cuda_events")
    root = _node_literal(profile.root, gpu)
    root["metrics"] = {**{name: 0 for name in profile.metric_names()}, **root["metrics"]}
    root["metadata"] = profile.metadata
    return [root, profile.metadata.get("device", {})]


def chrome_trace(profile: Profile) -> dict:
    """The profile's events in the trace event format (timestamps in microseconds)."""
    events = [{"name": "process_name", "ph": "M", "pid": 0, "tid": 0,
               "args": {"name": f"profile {profile.name}"}}]
    events += [{"name": "thread_name", "ph": "M", "pid": 0, "tid": tid, "args": {"name": label}}
               for tid, label in TRACKS.values()]
    for event in sorted(profile.events, key=lambda e: (e.start_ns, -e.end_ns)):
        events.append({
            "name": event.name, "cat": event.track, "ph": "X", "pid": 0,
            "tid": TRACKS[event.track][0], "ts": event.start_ns / 1e3,
            "dur": max(event.end_ns - event.start_ns, 0) / 1e3,
            "args": {"path": "/".join(event.path), **event.args},
        })
    events += profile.warp_events             # in-kernel regions: one track per warp
    return {"traceEvents": events, "displayTimeUnit": "ns", "otherData": profile.metadata}


def output_path(name: Path, output_format: str) -> Path:
    """`name` with the format's suffix (kept when it already has it)."""
    suffix = OUTPUT_FORMATS[output_format]
    return name if name.suffix == suffix else name.with_name(name.name + suffix)


def write_profile(profile: Profile, name: Path, output_format: str) -> Path:
    """Write the profile as `output_format` next to `name`; the path written."""
    path = output_path(Path(name), output_format)
    value = hatchet_literal(profile) if output_format == "hatchet" else chrome_trace(profile)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=1, default=str))
    return path
