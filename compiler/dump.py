"""Writing a compile trace to disk (TILE_KERNEL_DUMP / `tile-explore --dump`) and reading IR
overrides (TILE_OVERRIDE_DIR).

A dump directory holds, numbered in compile order, every stage's input, every pass's snapshot
and every stage's final text (`00-source.py`, `01-ttir-input.mlir`, `02-ttir-inline.mlir`, ...,
`12-ttir.mlir`, `13-ttgir-input.mlir`, ..., `20-ptx.ptx`), plus `trace.json`. Several traces go
into one sub-directory each, with one `trace.json` (`{"traces": [...]}`) at the top.
"""
from __future__ import annotations

import json
import os
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

from compiler.trace import CompileTrace

STAGE_ORDER = ("source", "ttir", "ttgir", "llir", "ptx", "sass")
EXTENSIONS = {"source": ".py", "ttir": ".mlir", "ttgir": ".mlir", "llir": ".ll", "ptx": ".ptx",
              "sass": ".sass"}


@dataclass
class DumpOptions:
    """Dump and override settings, read once from the environment at the edge."""

    dump: bool = False
    dump_dir: Path = Path("tile_dump")
    override_dir: Path | None = None

    @classmethod
    def from_env(cls, environ=None) -> "DumpOptions":
        """TILE_KERNEL_DUMP=1 turns dumping on, into TILE_DUMP_DIR (default ./tile_dump);
        TILE_OVERRIDE_DIR names a folder of replacement stage files."""
        environ = os.environ if environ is None else environ
        override = environ.get("TILE_OVERRIDE_DIR")
        return cls(dump=environ.get("TILE_KERNEL_DUMP", "") not in ("", "0"),
                   dump_dir=Path(environ.get("TILE_DUMP_DIR", "tile_dump")),
                   override_dir=Path(override) if override else None)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def dump_files(trace: CompileTrace) -> list[tuple[str, str]]:
    """(file name, text) for every stage text and pass snapshot of `trace`, in compile order."""
    stages = [s for s in STAGE_ORDER if s in trace.stages or trace.passes_of(s)]
    stages += [s for s in trace.stages if s not in stages]
    entries: list[tuple[str, str]] = []
    for stage in stages:
        ext = EXTENSIONS.get(stage, ".txt")
        records = trace.passes_of(stage)
        if records and stage in trace.stage_inputs:
            entries.append((f"{stage}-input{ext}", trace.stage_inputs[stage]))
        for record in records:
            if record.ir_after:
                entries.append((f"{stage}-{_safe(record.name)}{ext}", record.ir_after))
        if stage in trace.stages:
            entries.append((f"{stage}{ext}", trace.stages[stage]))
    width = max(2, len(str(len(entries) - 1)))
    return [(f"{i:0{width}d}-{name}", text) for i, (name, text) in enumerate(entries)]


def dump_trace(trace: CompileTrace, directory: str | Path, write_json: bool = True) -> Path:
    """Write `trace`'s files (and `trace.json`) into `directory`; returns the directory."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in dump_files(trace):
        (directory / name).write_text(text)
    if trace.cubin_info:
        (directory / "cubin-info.json").write_text(json.dumps(trace.cubin_info, indent=1))
    if write_json:
        trace.save(directory / "trace.json")
    return directory


class DumpWarning(UserWarning):
    """A dump directory could not be written; the compile itself went on."""


_WARNED_DIRS: set[str] = set()


def dump_trace_or_warn(trace: CompileTrace, directory: str | Path) -> Path | None:
    """`dump_trace` for dumps the environment asked for (TILE_KERNEL_DUMP): a directory that
    cannot be written (read-only, a file in the way, disk full) is reported once per directory
    with a `DumpWarning` and skipped, so a dump never fails a compile."""
    try:
        return dump_trace(trace, directory)
    except OSError as exc:
        key = str(Path(directory).parent)
        if key not in _WARNED_DIRS:
            _WARNED_DIRS.add(key)
            warnings.warn(f"cannot write the kernel dump {directory}: {exc}; dump skipped",
                          DumpWarning, stacklevel=2)
        return None


def read_override(path: Path, stage: str) -> str:
    """The text of an override file; a clear `ValueError` naming it when it is not readable
    UTF-8 text (an override is the user's intent, so it is never skipped silently)."""
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: the override for stage {stage} cannot be read: {exc}") \
            from None


def dump_traces(traces: list[CompileTrace], directory: str | Path) -> Path:
    """Write several traces, one sub-directory each (`<kernel>` or `<kernel>-<n>`), and one
    `trace.json` holding all of them at the top."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    seen: dict[str, int] = {}
    for trace in traces:
        base = _safe(trace.kernel_name) or "kernel"
        seen[base] = seen.get(base, 0) + 1
        sub = base if seen[base] == 1 else f"{base}-{seen[base] - 1}"
        dump_trace(trace, directory / sub, write_json=False)
    payload = {"traces": [t.to_dict() for t in traces]}
    (directory / "trace.json").write_text(json.dumps(payload, indent=1))
    return directory


def override_candidates(kernel_name: str, stage: str, override_dir: str | Path) -> list[Path]:
    """Where an override file for `kernel_name`'s `stage` may be, in the order searched:
    `<dir>/<kernel>.<stage>`, `<dir>/<kernel>.<stage><ext>`, `<dir>/<kernel>/<stage><ext>`."""
    root = Path(override_dir)
    ext = EXTENSIONS.get(stage, ".txt")
    return [root / f"{kernel_name}.{stage}", root / f"{kernel_name}.{stage}{ext}",
            root / kernel_name / f"{stage}{ext}"]


def find_override(kernel_name: str, stage: str, override_dir: str | Path | None) -> Path | None:
    """The override file for this kernel and stage, if the folder has one."""
    if override_dir is None:
        return None
    for path in override_candidates(kernel_name, stage, override_dir):
        if path.is_file():
            return path
    return None


def load_override(kernel_name: str, stage: str, override_dir: str | Path | None) -> str | None:
    """The text that replaces `stage`'s output for `kernel_name` (TILE_OVERRIDE_DIR), or None.
    The compile driver notes the file in `trace.overrides[stage]` (see `find_override`)."""
    path = find_override(kernel_name, stage, override_dir)
    return read_override(path, stage) if path is not None else None
