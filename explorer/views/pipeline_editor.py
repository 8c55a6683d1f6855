"""The pipeline editor: reorder, disable, add or delete passes of a stage, recompile in a
background worker and compare the result (B) with the trace it started from (A).

The app supplies `recompiler(trace, pipelines) -> CompileTrace` (the CLI wires it to
`compiler.inspect.recompile(..., isolated=True)`, a worker process, so a crash of LLVM or ptxas
is an error here and the app lives); a failing recompile shows its error and keeps the last good
result. The add-pass input completes pass names and options from the registry; `b` shows B's
stages and pass timeline in A's views, `d` the A/B diff of the edited stage."""
from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import DataTable, Input, Static

from compiler.inspect import (PipelineError, check_pipeline, format_item, format_pipeline,
                              parse_pipeline_text)
from compiler.trace import CompileTrace
from explorer.metrics import metric_rows, trace_metrics
from explorer.views.diff_screen import DiffScreen
from explorer.views.pass_suggester import PassSuggester
from explorer.views.result_screen import ResultScreen
from explorer.views.plain import plain_row

EDITABLE_STAGES = ("ttir", "ttgir")


@dataclass
class PassEntry:
    """One pass in the edited pipeline."""

    name: str
    options: dict
    enabled: bool = True

    def spec(self) -> str:
        """The pass as written in a pipeline string: `name` or `name{k=v ...}`."""
        return format_item(self.name, self.options)


def pipeline_string(entries: list[PassEntry]) -> str:
    """The MLIR-style pipeline string of the enabled entries."""
    return format_pipeline((entry.name, entry.options) for entry in entries if entry.enabled)


def parse_pass_spec(text: str) -> PassEntry:
    """`name` or `name{k=v ...}` -> PassEntry (values kept as text), read by the one pipeline
    grammar and checked against the registry (a `PipelineError` with a caret otherwise)."""
    check_pipeline(text)
    specs = parse_pipeline_text(text)
    if len(specs) != 1:
        raise PipelineError(f"give one pass here, not {len(specs)}", text, 0)
    return PassEntry(specs[0].name, specs[0].option_dict())


class PipelineEditor(Horizontal):
    """The pass list of one stage (left) and the A/B comparison with its status (right)."""

    BINDINGS = [
        Binding("r", "recompile", "Recompile"),
        Binding("space", "toggle", "On/off"),
        Binding("a", "add", "Add"),
        Binding("x", "delete", "Delete"),
        Binding("K", "move(-1)", "Up"),
        Binding("J", "move(1)", "Down"),
        Binding("t", "switch_stage", "Stage"),
        Binding("b", "show_b", "B views"),
        Binding("d", "diff_ab", "A/B diff"),
    ]

    class Recompiled(Message):
        """A background recompile finished (trace set) or failed (error set)."""

        def __init__(self, trace: CompileTrace | None, error: str | None) -> None:
            super().__init__()
            self.trace = trace
            self.error = error

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.trace: CompileTrace | None = None
        self.result: CompileTrace | None = None
        self.stage = "ttgir"
        self.entries: dict[str, list[PassEntry]] = {}

    def compose(self) -> ComposeResult:
        with Vertical(id="pipeline-left"):
            yield Static(id="pipeline-title", markup=False)
            yield DataTable(id="pipeline-table", cursor_type="row")
            yield Input(placeholder="pass name, e.g. cse or licm{max-depth=2} (→ completes)",
                        id="pipeline-add", suggester=PassSuggester())
        with Vertical(id="pipeline-right"):
            yield DataTable(id="compare-table", cursor_type="row")
            yield Static(id="pipeline-status", markup=False)

    def on_mount(self) -> None:
        self.query_one("#pipeline-table", DataTable).add_columns("on", "#", "pass")
        self.query_one("#compare-table", DataTable).add_columns("metric", "A", "B", "Δ")
        self.query_one("#pipeline-add").display = False

    def show_trace(self, trace: CompileTrace) -> None:
        """Start editing from a trace's pipelines (the passes it ran, per stage)."""
        self.trace, self.result = trace, None
        self.entries = {stage: [PassEntry(r.name, dict(r.options)) for r in trace.passes_of(stage)]
                        for stage in EDITABLE_STAGES}
        self.refresh_list()
        self.refresh_compare()
        self.set_status("r recompiles with the edited pipeline and compares it with A")

    # ---- editing --------------------------------------------------------------------------
    def refresh_list(self, cursor: int | None = None) -> None:
        """Redraw the pass list of the current stage."""
        table = self.query_one("#pipeline-table", DataTable)
        row = table.cursor_row if cursor is None else cursor
        table.clear()
        for index, entry in enumerate(self.entries.get(self.stage, [])):
            mark = Text("✓", style="green") if entry.enabled else Text("✗", style="red")
            name = Text(entry.spec(), style="" if entry.enabled else "dim strike")
            table.add_row(mark, str(index), name)
        if table.row_count:
            table.move_cursor(row=max(0, min(row, table.row_count - 1)))
        self.query_one("#pipeline-title", Static).update(
            f"{self.stage} pipeline ({sum(e.enabled for e in self.entries.get(self.stage, []))}"
            f" passes on) · t: other stage")

    def _current(self) -> int:
        return self.query_one("#pipeline-table", DataTable).cursor_row

    def action_toggle(self) -> None:
        entries = self.entries.get(self.stage, [])
        if entries:
            entry = entries[self._current()]
            entry.enabled = not entry.enabled
            self.refresh_list()

    def action_move(self, step: int) -> None:
        entries, row = self.entries.get(self.stage, []), self._current()
        target = row + step
        if entries and 0 <= target < len(entries):
            entries[row], entries[target] = entries[target], entries[row]
            self.refresh_list(cursor=target)

    def action_delete(self) -> None:
        entries = self.entries.get(self.stage, [])
        if entries:
            del entries[self._current()]
            self.refresh_list()

    def action_add(self) -> None:
        box = self.query_one("#pipeline-add", Input)
        box.display = True
        box.focus()

    def on_key(self, event) -> None:
        """Escape closes the add-pass input without adding anything."""
        box = self.query_one("#pipeline-add", Input)
        if event.key == "escape" and box.display:
            event.stop()
            box.value = ""
            box.display = False
            self.query_one("#pipeline-table", DataTable).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        event.input.display = False
        if event.value.strip():
            try:
                entry = parse_pass_spec(event.value)
            except PipelineError as error:
                self.set_status(str(error), error=True)
                event.input.display = True
                return
            entries = self.entries.setdefault(self.stage, [])
            position = self._current() + 1 if entries else 0
            entries.insert(position, entry)
            self.refresh_list(cursor=position)
        event.input.value = ""
        self.query_one("#pipeline-table", DataTable).focus()

    def action_switch_stage(self) -> None:
        index = EDITABLE_STAGES.index(self.stage)
        self.stage = EDITABLE_STAGES[(index + 1) % len(EDITABLE_STAGES)]
        self.refresh_list(cursor=0)

    def pipelines(self) -> dict:
        """The edited pipeline string of each stage."""
        return {stage: pipeline_string(entries) for stage, entries in self.entries.items()}

    # ---- recompiling -----------------------------------------------------------------------
    def action_recompile(self) -> None:
        recompiler = getattr(self.app, "recompiler", None)
        if self.trace is None:
            return
        if recompiler is None:
            self.set_status("recompiling needs the compiler (compiler.compile), which is not "
                            "available in this session (opened from a saved trace?)", error=True)
            return
        self.set_status("recompiling in the background…")
        self.recompile(recompiler, self.trace, self.pipelines())

    @work(thread=True, exclusive=True, group="recompile")
    def recompile(self, recompiler, trace: CompileTrace, pipelines: dict) -> None:
        """Run the recompile off the UI thread and post the outcome back."""
        try:
            result = recompiler(trace, pipelines)
        except Exception as error:  # any failure of the user's pipeline is shown, not raised
            self.post_message(self.Recompiled(None, f"{type(error).__name__}: {error}"))
            return
        self.post_message(self.Recompiled(result, None))

    def on_pipeline_editor_recompiled(self, event: "PipelineEditor.Recompiled") -> None:
        event.stop()
        if event.error:
            kept = " (keeping the last good result)" if self.result else ""
            self.set_status(f"recompile failed: {event.error}{kept}", error=True)
            return
        self.result = event.trace
        self.refresh_compare()
        failed = [p for p in event.trace.passes if p.error]
        if failed:
            self.set_status(f"recompiled: pass {failed[0].name} failed: {failed[0].error}",
                            error=True)
            return
        no_runtime = "" if event.trace.launches else (
            " · runtime of B: not measured (the editor recompiles, it does not launch; "
            "`tile-explore compare` times both on a GPU)")
        self.set_status(f"recompiled · B is the edited pipeline{no_runtime}")

    # ---- B in A's views ------------------------------------------------------------------------
    def action_show_b(self) -> None:
        """B's stages and pass timeline in the same views as A's."""
        if self.result is None:
            self.set_status("no B yet: r recompiles with the edited pipeline", error=True)
            return
        self.app.push_screen(ResultScreen(self.result, self.pipelines()))

    def action_diff_ab(self) -> None:
        """The side-by-side diff of the edited stage's output, A against B."""
        if self.trace is None or self.result is None:
            self.set_status("no B yet: r recompiles with the edited pipeline", error=True)
            return
        before = self.trace.stages.get(self.stage, "")
        after = self.result.stages.get(self.stage, "")
        self.app.push_screen(DiffScreen(None, before, after,
                                        title=f"{self.stage}: A (left) against B (right)"))

    def refresh_compare(self) -> None:
        """Redraw the A/B metrics table."""
        table = self.query_one("#compare-table", DataTable)
        table.clear()
        if self.trace is None:
            return
        a = trace_metrics(self.trace)
        b = trace_metrics(self.result) if self.result else {}
        for row in metric_rows(a, b):
            table.add_row(*plain_row(*row))

    def set_status(self, message: str, error: bool = False) -> None:
        """Show a status line (red for errors)."""
        self.query_one("#pipeline-status", Static).update(
            Text(message, style="bold red" if error else ""))
