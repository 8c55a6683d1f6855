"""The compile trace: one plain data object per compiled kernel specialization.

It holds everything the compiler did: each stage's text, every pass's record (with the IR after
it), timings, ptxas's report, the maps between stages, and the launches made. It serializes to
JSON (schema in `docs/trace-format.md`, version `TRACE_SCHEMA_VERSION`) and loads back with
nothing but this module, so the explorer and scripts need no other part of the compiler.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

TRACE_SCHEMA_VERSION = 1


@dataclass
class PassRecord:
    """What one pass run did. The IR before it is the previous record's `ir_after` (or the
    stage's input, `CompileTrace.stage_inputs[stage]`, for a stage's first pass)."""

    stage: str                      # "ttir", "ttgir" or "llir"
    name: str                       # registry name, e.g. "canonicalize"
    options: dict = field(default_factory=dict)
    index: int = 0                  # position in the whole compile, 0-based
    wall_ms: float = 0.0
    changed: bool = False
    ir_after: str = ""
    op_counts: dict = field(default_factory=dict)
    convert_layout_count: int = 0
    patterns: dict = field(default_factory=dict)   # rewrite pattern name -> times it fired
    pattern_sites: list = field(default_factory=list)  # [{pattern, op, loc, source}], capped
    doc: str = ""                   # the pass's docstring, for the explorer
    error: str | None = None        # set when the pass (or the verifier after it) failed


@dataclass
class Launch:
    """One launch of the kernel: where it ran and how long it took."""

    grid: tuple
    backend: str                    # "gpu" (CUDA events) or "interpreter" (wall time)
    time_ms: float | None = None
    num_warps: int = 4


@dataclass
class CompileTrace:
    """Everything about one compiled specialization of one kernel."""

    kernel_name: str
    source_file: str = ""
    source_line: int = 0
    specialization: dict = field(default_factory=dict)   # signature, constexprs, options
    stages: dict = field(default_factory=dict)           # "source"/"ttir"/"ttgir"/"llir"/"ptx"/
    #                                                      "sass" -> text
    stage_inputs: dict = field(default_factory=dict)     # stage -> IR text before its 1st pass
    passes: list = field(default_factory=list)           # PassRecord, in order
    stage_times_ms: dict = field(default_factory=dict)
    cubin_info: dict = field(default_factory=dict)       # ptxas -v: registers, spills, smem...
    overrides: dict = field(default_factory=dict)        # stage -> file it was replaced by
    ttgir_to_ptx: dict = field(default_factory=dict)     # ttgir line (str) -> [[first, last]]
    python_to_ops: dict = field(default_factory=dict)    # python line (str) -> {stage: [lines]}
    ttgir_op_python: dict = field(default_factory=dict)  # ttgir line (str) -> "file:line:col"
    launches: list = field(default_factory=list)         # Launch
    notes: list = field(default_factory=list)            # e.g. "ptxas not found: driver JIT"
    regions: list = field(default_factory=list)          # in-kernel regions: id, name, kind,
    #     ttgir_lines, python_lines, count, ns/cycles {min, median, max, total} (profiler)
    schema_version: int = TRACE_SCHEMA_VERSION

    def passes_of(self, stage: str) -> list:
        return [p for p in self.passes if p.stage == stage]

    def ir_before(self, record: PassRecord) -> str:
        """The IR a pass started from."""
        previous = [p for p in self.passes if p.stage == record.stage and p.index < record.index]
        return previous[-1].ir_after if previous else self.stage_inputs.get(record.stage, "")

    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self, indent: int | None = 1) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json())

    @classmethod
    def from_dict(cls, data: dict) -> "CompileTrace":
        version = data.get("schema_version")
        if version != TRACE_SCHEMA_VERSION:
            raise ValueError(f"trace schema version {version} is not supported "
                             f"(this reader knows version {TRACE_SCHEMA_VERSION})")
        data = _known_fields(cls, data)
        data["passes"] = [PassRecord(**_known_fields(PassRecord, p))
                          for p in data.get("passes", [])]
        data["launches"] = [Launch(**{**_known_fields(Launch, lch), "grid": tuple(lch["grid"])})
                            for lch in data.get("launches", [])]
        return cls(**data)

    @classmethod
    def from_json(cls, text: str) -> "CompileTrace":
        return cls.from_dict(json.loads(text))

    @classmethod
    def load(cls, path: str | Path) -> "CompileTrace":
        return cls.from_json(Path(path).read_text())


def _known_fields(cls, data: dict) -> dict:
    """`data` without keys `cls` does not know (fields a newer version-1 writer added)."""
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in names}


def load_traces(path: str | Path) -> list[CompileTrace]:
    """Load a `trace.json` written by `--dump`: one trace, or a list of them."""
    data = json.loads(Path(path).read_text())
    items = data if isinstance(data, list) else data.get("traces", [data])
    return [CompileTrace.from_dict(d) for d in items]
