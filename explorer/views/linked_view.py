"""Linked panes: the ttgir, its PTX and the Python source side by side. The cursor on a ttgir op
highlights its PTX line ranges (trace.ttgir_to_ptx) and its Python line (trace.ttgir_op_python);
on a PTX line, `o` jumps to the ttgir op that produced it. `s` switches the right pane between
PTX and SASS (trace.ttgir_to_sass, from nvdisasm's line info); a SASS line links to its ttgir
op and, through it, to that op's PTX lines. `z` collapses the Python pane."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Static

from compiler.trace import CompileTrace
from explorer.heatmap import heat_summary, region_heat, render_heat
from explorer.lexers import lexer_for_stage
from explorer.views.code_view import CodeView


def ptx_to_ttgir(ttgir_to_ptx: dict) -> dict:
    """Invert the ttgir->PTX map: PTX line -> the ttgir lines whose ranges cover it."""
    inverse: dict = {}
    for ttgir_line, ranges in ttgir_to_ptx.items():
        for first, last in ranges:
            for line in range(first, last + 1):
                inverse.setdefault(line, []).append(int(ttgir_line))
    return {line: sorted(owners) for line, owners in inverse.items()}


def python_line(value) -> int | None:
    """The Python file line of a `ttgir_op_python` entry: an int, or a "file:line:col" text."""
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        parts = value.rsplit(":", 2)
        for part in (parts[1:2] if len(parts) == 3 else parts[-1:]):
            if part.isdigit():
                return int(part)
    return None


def source_stage_line(trace: CompileTrace, file_line: int | None) -> int | None:
    """Where a Python file line sits in the trace's `source` stage, which holds the kernel's
    text starting at `trace.source_line` (the whole file when source_line is 0 or 1)."""
    if file_line is None:
        return None
    first = trace.source_line or 1
    line = file_line - first + 1
    return line if 1 <= line <= len(trace.stages.get("source", "").splitlines()) else None


def stage_first_line(trace: CompileTrace, stage: str) -> int:
    """The file line a stage's first line stands for: the kernel's line for `source` (so its
    pane numbers lines as the file does), 1 for every IR."""
    return (trace.source_line or 1) if stage == "source" else 1


def expand_ranges(ranges: list) -> set[int]:
    """All lines in a list of [first, last] ranges."""
    return {line for first, last in ranges for line in range(first, last + 1)}


class LinkedView(Vertical):
    """ttgir | PTX on top, the Python source below; the panes follow each other's cursor."""

    BINDINGS = [Binding("o", "jump", "Jump to op"), Binding("s", "toggle_machine", "PTX/SASS"),
                Binding("z", "collapse", "Collapse Python", show=False)]

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.trace: CompileTrace | None = None
        self.inverse: dict = {}
        self.machine = "ptx"         # the right pane's stage: "ptx" or "sass"

    def compose(self) -> ComposeResult:
        with Horizontal(id="linked-top"):
            yield CodeView(id="linked-ttgir")
            yield CodeView(id="linked-ptx")
        yield CodeView(id="linked-python")
        yield Static(id="linked-status", markup=False)

    def show_trace(self, trace: CompileTrace) -> None:
        """Load the three texts and the maps of a trace."""
        self.trace = trace
        if self.machine == "sass" and not trace.stages.get("sass"):
            self.machine = "ptx"
        self.inverse = ptx_to_ttgir(self._machine_map())
        heat = region_heat(trace)            # in-kernel region times (explorer/heatmap.py)
        for stage, widget_id in (("ttgir", "#linked-ttgir"), (self.machine, "#linked-ptx"),
                                 ("source", "#linked-python")):
            view = self.query_one(widget_id, CodeView)
            view.set_text(trace.stages.get(stage, ""), lexer_for_stage(stage),
                          stage_first_line(trace, stage))
            if heat.get(stage):
                view._lines = render_heat(view._lines, heat[stage])
        if trace.regions:
            self.query_one("#linked-status", Static).update(heat_summary(trace))
        if not trace.ttgir_to_ptx:
            self.query_one("#linked-status", Static).update(
                "this trace has no ttgir→PTX map (the backend did not record one)")

    def on_code_view_cursor_moved(self, event: CodeView.CursorMoved) -> None:
        event.stop()
        if self.trace is None:
            return
        if event.view.id == "linked-ttgir":
            self.link_from_ttgir(event.line)
        elif event.view.id == "linked-ptx":
            owners = self.inverse.get(event.line, [])
            self.query_one("#linked-ttgir", CodeView).set_linked(owners)
            name = self.machine.upper()
            via = ""
            if self.machine == "sass" and owners:
                ptx = [f"{a}-{b}" if a != b else str(a) for owner in owners
                       for a, b in self.trace.ttgir_to_ptx.get(str(owner), [])]
                via = f" → PTX {', '.join(ptx) or 'none'}"
            self.query_one("#linked-status", Static).update(
                f"{name} line {event.line} ← ttgir line(s) {', '.join(map(str, owners))}{via}"
                " · o: jump" if owners else f"{name} line {event.line}: no ttgir op recorded for it")

    def link_from_ttgir(self, line: int) -> None:
        """Highlight the PTX ranges and the Python line of the ttgir op on `line`."""
        ranges = self._machine_map().get(str(line), [])
        self.query_one("#linked-ptx", CodeView).set_linked(expand_ranges(ranges))
        file_line = python_line(self.trace.ttgir_op_python.get(str(line)))
        shown = source_stage_line(self.trace, file_line)
        self.query_one("#linked-python", CodeView).set_linked([shown] if shown else [])
        where = ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in ranges) or "none"
        self.query_one("#linked-status", Static).update(
            f"ttgir line {line} → {self.machine.upper()} {where}"
            + (f" · Python line {file_line}" if file_line else ""))

    def action_collapse(self) -> None:
        """Hide or show the Python pane, giving its rows to ttgir and PTX (small terminals)."""
        python = self.query_one("#linked-python", CodeView)
        python.display = not python.display
        if not python.display and python.has_focus:
            self.query_one("#linked-ttgir", CodeView).focus()

    def action_jump(self) -> None:
        ptx = self.query_one("#linked-ptx", CodeView)
        owners = self.inverse.get(ptx.cursor, [])
        if owners:
            ttgir = self.query_one("#linked-ttgir", CodeView)
            ttgir.cursor = owners[0]
            ttgir.focus()

    def _machine_map(self) -> dict:
        """The ttgir -> right-pane line map of the stage shown there."""
        if self.trace is None:
            return {}
        return self.trace.ttgir_to_sass if self.machine == "sass" else self.trace.ttgir_to_ptx

    def action_toggle_machine(self) -> None:
        """Show SASS instead of PTX in the right pane, or back; says why when there is no SASS."""
        if self.trace is None:
            return
        if self.machine == "ptx" and not self.trace.stages.get("sass"):
            self.query_one("#linked-status", Static).update(
                f"no SASS for this kernel: {self.trace.sass_missing or 'no reason recorded'}")
            return
        self.machine = "sass" if self.machine == "ptx" else "ptx"
        self.show_trace(self.trace)
