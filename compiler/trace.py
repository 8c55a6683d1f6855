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
    structure: dict = field(default_factory=dict)  # ir_after as data (IRStructure); {} if
    #                                                not recorded (older traces, no snapshots)
    parse_error: str = ""           # set when ir_after is shown as text only: our parser could
    #                                 not read it (imported Triton dumps), with the reason


@dataclass(frozen=True)
class IRValue:
    """One SSA value of a snapshot, named as its text names it."""

    index: int
    name: str                       # "%x" (a multi-result op's results: "%x#0", ...)
    type: str                       # the type as printed, layouts by alias
    layout: str                     # "#blocked" alias, or "" for a value without a layout
    line: int                       # 1-based line of the op (or block owner) defining it
    op: str                         # the defining op's name, "arg" for block arguments

    @property
    def shape(self) -> tuple | None:
        """The tensor (or memdesc) shape of the type, or None for a scalar."""
        head, sep, _ = self.type.partition("<")
        if not sep or head not in ("tensor", "!ttg.memdesc"):
            return None
        dims = []
        for part in self.type[len(head) + 1:].split("x"):
            if not part.isdigit():
                break
            dims.append(int(part))
        return tuple(dims) or None


@dataclass(frozen=True)
class IROp:
    """One op of a snapshot: its name, line, and operand/result value indices (def-use)."""

    name: str
    line: int
    operands: tuple
    results: tuple
    ends_block: bool = False        # the last op of its block (a terminator)


@dataclass
class IRStructure:
    """A snapshot's structure, loaded from `PassRecord.structure`: its values, ops and the
    layout aliases of its text. The def-use edges are each op's operands -> its results."""

    values: list
    ops: list
    layouts: dict

    @classmethod
    def from_data(cls, data: dict) -> "IRStructure | None":
        """The structure of a record's `structure` field (None when it was not recorded)."""
        if not data:
            return None
        values = [IRValue(i, *v) for i, v in enumerate(data.get("values", []))]
        ops = [IROp(op[0], op[1], tuple(op[2]), tuple(op[3]), *op[4:5])
               for op in data.get("ops", [])]
        return cls(values, ops, dict(data.get("layouts", {})))

    def values_on_line(self, line: int) -> list:
        """The values defined on a 1-based line of the text."""
        return [v for v in self.values if v.line == line]


@dataclass
class Launch:
    """One launch of the kernel: where it ran and how long it took."""

    grid: tuple
    backend: str                    # "gpu" (CUDA events) or "interpreter" (wall time)
    time_ms: float | None = None
    num_warps: int = 4
    shapes: tuple = ()              # shapes of the array arguments: the problem size
    declared: dict = field(default_factory=dict)   # launch_metadata's numbers: bytes, flops16


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
    ttgir_to_sass: dict = field(default_factory=dict)    # ttgir line (str) -> [[first, last]]
    sass_missing: str = ""                               # why there is no "sass" stage
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

    def structure_of(self, stage: str) -> IRStructure | None:
        """The structure of a stage's final text: its last pass's snapshot when that snapshot
        is the stage's text and was recorded as data, else None (an older trace, an override,
        or a stage without passes: tools then say so or work from the text)."""
        records = self.passes_of(stage)
        if not records or records[-1].ir_after != self.stages.get(stage):
            return None
        return IRStructure.from_data(records[-1].structure)

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
        data["launches"] = [Launch(**{**_known_fields(Launch, lch), "grid": tuple(lch["grid"]),
                                      "shapes": tuple(tuple(s) for s in lch.get("shapes", ()))})
                            for lch in data.get("launches", [])]
        return cls(**data)

    @classmethod
    def from_json(cls, text: str) -> "CompileTrace":
        return cls.from_dict(json.loads(text))

    @classmethod
    def load(cls, path: str | Path) -> "CompileTrace":
        return cls.from_json(Path(path).read_text())


def encode_constexpr(value):
    """A constexpr value as JSON data that `decode_constexpr` turns back into the same value:
    None, bools, numbers and strings as themselves; tuples, lists and dtypes tagged
    (`{"tuple": [...]}`, `{"dtype": "fp16"}`); anything else as `{"unsupported": repr}`, which
    decoding refuses with a message (the trace keeps every constexpr's repr for display)."""
    from compiler.language.core import constexpr, dtype, pointer_type
    if isinstance(value, constexpr):
        value = value.value
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (tuple, list)):
        return {type(value).__name__: [encode_constexpr(v) for v in value]}
    if isinstance(value, pointer_type):
        return {"dtype": "*" + value.element_ty.name}
    if isinstance(value, dtype):
        return {"dtype": value.name}
    return {"unsupported": repr(value), "type": type(value).__qualname__}


def decode_constexpr(data):
    """The value `encode_constexpr` encoded; `ValueError` for one it could not encode."""
    if not isinstance(data, dict):
        return data
    if "tuple" in data:
        return tuple(decode_constexpr(v) for v in data["tuple"])
    if "list" in data:
        return [decode_constexpr(v) for v in data["list"]]
    if "dtype" in data:
        from compiler.language.core import dtype_from_signature
        return dtype_from_signature(data["dtype"])
    raise ValueError(f"a constexpr of type {data.get('type', '?')} ({data.get('unsupported')}) "
                     "was recorded as text only and cannot be rebuilt")


def encode_options(options) -> dict:
    """Every field of an options dataclass as JSON data (tuples as lists), for the trace's
    `specialization["options"]`, so a recompile can rebuild the same options."""
    def plain(value):
        if isinstance(value, (tuple, list)):
            return [plain(v) for v in value]
        if isinstance(value, dict):
            return {str(k): plain(v) for k, v in value.items()}
        return value
    return {f.name: plain(getattr(options, f.name)) for f in fields(options)}


def _known_fields(cls, data: dict) -> dict:
    """`data` without keys `cls` does not know (fields a newer version-1 writer added)."""
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in names}


def load_traces(path: str | Path) -> list[CompileTrace]:
    """Load a `trace.json` written by `--dump`: one trace, or a list of them."""
    data = json.loads(Path(path).read_text())
    items = data if isinstance(data, list) else data.get("traces", [data])
    return [CompileTrace.from_dict(d) for d in items]
