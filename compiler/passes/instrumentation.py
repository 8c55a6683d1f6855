"""The standard instrumentation: fills a `CompileTrace` with one `PassRecord` per pass run.

It prints the module once after each pass (the snapshot, also used to tell whether the pass
changed anything) and records, from the same print, the snapshot's structure (`ir_structure`:
every value with its printed name, type, layout and line, every op with its operands and
results, i.e. the def-use edges, and the layout aliases), counts ops by name, collects the patterns the pass reported, and optionally
verifies the IR (`verify_each`) and echoes snapshots to a stream (`print_after_all`,
`print_after_change`, as MLIR's IR printing options do).
"""
from __future__ import annotations

import sys
from typing import TextIO

from compiler.dialects import ttg
from compiler.ir.core import Module, op_count_by_name
from compiler.ir.shape import module_shape
from compiler.ir.printer import enc_text, print_module, print_module_with_printer
from compiler.ir.verifier import verify_module
from compiler.ir.verifier_errors import VerificationError
from compiler.trace import CompileTrace, PassRecord

from .manager import PassFailure, PassInstrumentation, PassRun


def ir_structure(module: Module) -> tuple[str, dict]:
    """The module's text and its structure as JSON-able data (the trace's `PassRecord.structure`,
    format in `compiler.trace.IRStructure`): values `[name, type, layout alias, line, op]`,
    ops `[name, line, [operand value indices], [result value indices], ends its block]` and
    `layouts {alias: definition}`, all named as the text names them."""
    text, op_lines, printer = print_module_with_printer(module)
    names = printer.names
    index: dict = {}
    values: list = []
    ops: list = []
    typed: dict = {}     # type -> (text, layout alias)

    def add(value, line: int, op_name: str) -> int:
        type_ = value.type
        known = typed.get(type_)
        if known is None:
            encoding = getattr(type_, "encoding", None)
            known = typed[type_] = (printer.type(type_), "" if encoding is None
                                    else printer.layout(encoding))
        number = index[value] = len(values)
        values.append(["%" + names.get(value, "<<UNKNOWN>>"), known[0], known[1], line,
                       op_name])
        return number

    def visit(block_ops: list) -> None:
        last = block_ops[-1] if block_ops else None
        for op in block_ops:
            line = op_lines.get(op, 0)
            name = op.name
            used = [index.get(v) for v in op.operands]
            record = [name, line, [u for u in used if u is not None] if None in used else used,
                      [add(r, line, name) for r in op.results], op is last]
            ops.append(record)
            for region in op.regions:
                for block in region.blocks:
                    for arg in block.args:
                        add(arg, line, "arg")
                    visit(block.ops)

    visit(module.body.ops)
    layouts = {alias: enc_text(printer, enc) for enc, alias in printer.layout_aliases.items()}
    return text, {"values": values, "ops": ops, "layouts": layouts}


class TraceInstrumentation(PassInstrumentation):
    """Records every pass run into `trace.passes` (and the stage input into `stage_inputs`).

    snapshots: keep `ir_after` text per pass (at most one print per pass: a pass that left
        every op, value and attribute as it was reuses the previous text); without snapshots
        `changed` is judged from op counts and fired patterns only.
    verify_each: verify after every pass; a failure sets the record's `error` and raises
        `PassFailure` naming the pass. IR identical (`module_shape`) to IR that verified after an
        earlier pass of the stage is not verified again: the verifier would say the same.
    print_after_all / print_after_change: also write snapshots to `stream` (stderr).
    """

    def __init__(self, trace: CompileTrace, snapshots: bool = True, verify_each: bool = True,
                 print_after_all: bool = False, print_after_change: bool = False,
                 stream: TextIO | None = None):
        self.trace = trace
        self.snapshots = snapshots or print_after_all or print_after_change
        self.verify_each = verify_each
        self.print_after_all = print_after_all
        self.print_after_change = print_after_change
        self.stream = stream
        self._last_text = ""
        self._last_counts: dict = {}
        self._last_shape: list | None = None
        self._verified_shape: list | None = None     # the IR after the last pass that verified

    def _snapshot(self, module: Module, shape: list) -> str:
        """Print the module (its structure is built once per stage, in `after_pipeline`, from
        the same print: the printer keeps it)."""
        return print_module(module, shape=shape)

    def before_pipeline(self, stage: str, module: Module) -> None:
        self._last_counts = op_count_by_name(module)
        self._last_text = print_module(module) if self.snapshots else ""
        self._last_shape = module_shape(module) if self.snapshots else None
        self._verified_shape = None
        self.trace.stage_inputs[stage] = self._last_text

    def _record(self, run: PassRun) -> PassRecord:
        record = PassRecord(stage=run.stage, name=run.pass_.name, options=dict(run.pass_.options),
                            index=len(self.trace.passes), wall_ms=run.wall_ms,
                            patterns=dict(run.ctx.patterns),
                            pattern_sites=list(run.ctx.sites), doc=run.pass_.doc())
        self.trace.passes.append(record)
        return record

    def after_pass(self, run: PassRun, module: Module) -> None:
        record = self._record(run)
        counts = op_count_by_name(module)
        record.op_counts = counts
        record.convert_layout_count = counts.get(ttg.ConvertLayoutOp.name, 0)
        shape = module_shape(module) if self.snapshots or self.verify_each else None
        if self.snapshots:
            if shape == self._last_shape:          # nothing the printer reads has changed
                text = self._last_text
            else:
                text = self._snapshot(module, shape)
                self._last_shape = shape
            record.changed = text != self._last_text
            record.ir_after = text
            self._last_text = text
        else:
            record.changed = counts != self._last_counts or bool(record.patterns)
        self._last_counts = counts
        self._echo(record)
        if self.verify_each and shape != self._verified_shape:
            try:
                verify_module(module)
            except VerificationError as err:
                record.error = f"verifier: {err}"
                raise PassFailure(run.stage, record.name, run.position,
                                  f"it left invalid IR: {err}") from err
            self._verified_shape = shape

    def after_pipeline(self, stage: str, module: Module) -> None:
        """The stage's final snapshot also gets the module's structure (values, layouts,
        def-use edges: what the explorer's layout graph reads). It is built once per stage,
        not per pass: its cost per snapshot is about half a print."""
        if not self.snapshots or not self.trace.passes:
            return
        last = self.trace.passes[-1]
        if last.stage == stage and not last.error:
            text, last.structure = ir_structure(module)
            if text != last.ir_after:        # the printer is deterministic: a bug if not
                raise AssertionError(f"{stage}: the structure's text differs from the snapshot")

    def after_pass_failed(self, run: PassRun, module: Module) -> None:
        record = self._record(run)
        record.error = f"{type(run.error).__name__}: {run.error}"
        record.op_counts = op_count_by_name(module)
        if self.snapshots:
            try:
                record.ir_after = print_module(module)
            except Exception as err:  # the IR may be too broken to print
                record.ir_after = f"// IR could not be printed: {err}\n"
            record.changed = record.ir_after != self._last_text

    def _echo(self, record: PassRecord) -> None:
        if not (self.print_after_all or (self.print_after_change and record.changed)):
            return
        stream = self.stream or sys.stderr
        stream.write(f"// -----// IR Dump After {record.name} ({record.stage}) //----- //\n")
        stream.write(record.ir_after)
