"""TritonParse's structured logs (`tritonparse.structured_logging.init(dir)`: ndjson, one JSON
event a line, optionally gzip-compressed) -> CompileTraces. A `compilation` event carries the
stage files in `payload.file_content` ({"NAME.ttgir": text, ...}), the kernel in
`payload.metadata` (name, hash, num_warps, ...) and its Python in `payload.python_source`
(file_path, code, start_line); a `launch` event names its compile by
`compilation_metadata.hash` and may carry the grid."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

from compiler.trace import Launch

from .stage_files import trace_from_stage_files


def _lines(path: Path):
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", errors="replace") as stream:
        yield from stream


def read_tritonparse_log(path: str | Path) -> list:
    """The compilations of one ndjson log as CompileTraces, with their launches; ValueError
    (file:line and why) for a line that is not JSON or a log with no compilation event."""
    path = Path(path)
    traces, by_hash = [], {}
    launches = []
    for number, line in enumerate(_lines(path), start=1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}:{number}:{error.colno}: not a JSON event: {error.msg}") \
                from None
        kind = event.get("event_type") if isinstance(event, dict) else None
        if kind == "compilation":
            trace = _compilation(event.get("payload") or {}, f"{path}:{number}")
            traces.append(trace)
            key = trace.specialization["options"].get("hash")
            if key:
                by_hash[key] = trace
        elif kind == "launch":
            launches.append(event)
    if not traces:
        raise ValueError(f"{path}: no 'compilation' event; is this a TritonParse ndjson log?")
    for event in launches:
        meta = event.get("compilation_metadata") or {}
        trace = by_hash.get(meta.get("hash"))
        if trace is not None:
            grid = event.get("grid") or ()
            trace.launches.append(Launch(grid=tuple(grid), backend="gpu", time_ms=None,
                                         num_warps=int(meta.get("num_warps", 4))))
    return traces


def _compilation(payload: dict, origin: str):
    metadata = payload.get("metadata") or {}
    files: dict = {}
    name = metadata.get("name")
    for file_name, content in (payload.get("file_content") or {}).items():
        stem, _, suffix = file_name.rpartition(".")
        name = name or stem
        if isinstance(content, str):
            files[suffix] = content
    files["json"] = json.dumps(metadata)
    source = payload.get("python_source") or {}
    trace = trace_from_stage_files(name or "kernel", files, origin)
    code = source.get("code") or source.get("content")
    if isinstance(code, str):
        trace.stages["source"] = code
        trace.source_file = source.get("file_path", "")
        trace.source_line = int(source.get("start_line") or 1)
    return trace
