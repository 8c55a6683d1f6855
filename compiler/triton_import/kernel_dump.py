"""A TRITON_KERNEL_DUMP folder (TRITON_DUMP_DIR: one subfolder per compiled kernel, named by
its hash, holding NAME.source/.ttir/.ttgir/.llir/.ptx/.cubin/.json) -> CompileTraces."""
from __future__ import annotations

from pathlib import Path

from .stage_files import STAGE_SUFFIXES, trace_from_stage_files

_TEXT_SUFFIXES = set(STAGE_SUFFIXES) | {"source", "json"}


def read_kernel_dump(folder: str | Path) -> list:
    """Every kernel's stage files under `folder` (the folder itself or its subfolders), as
    CompileTraces in folder order; ValueError when there are none."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"{folder}: not a folder")
    traces = []
    for directory in [folder] + sorted(p for p in folder.rglob("*") if p.is_dir()):
        groups: dict = {}
        for path in sorted(directory.iterdir()):
            suffix = path.suffix.lstrip(".")
            if not path.is_file() or path.name.startswith("__grp__"):
                continue
            if suffix in _TEXT_SUFFIXES:
                groups.setdefault(path.stem, {})[suffix] = path.read_text(errors="replace")
            elif suffix == "cubin":
                groups.setdefault(path.stem, {})["cubin"] = path.read_bytes()
        for name, files in groups.items():
            if set(files) & set(STAGE_SUFFIXES):
                traces.append(trace_from_stage_files(name, files, str(directory)))
    if not traces:
        raise ValueError(f"{folder}: no Triton stage files (NAME.ttir, NAME.ttgir, ...) found")
    return traces
