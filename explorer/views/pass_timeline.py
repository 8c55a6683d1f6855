"""The pass timeline: every pass of every stage with changed/unchanged, op-count delta,
convert_layout count, time and the patterns that fired; the highlighted pass's docstring below.
Enter opens the before/after diff; `h` hides unchanged passes."""
from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from compiler.trace import CompileTrace, PassRecord
from explorer.views.convert_chart import ConvertChart
from explorer.views.diff_screen import DiffScreen
from explorer.views.plain import plain_row


def op_delta(trace: CompileTrace, record: PassRecord) -> int:
    """Change in the total op count made by a pass (0 for the first pass of a stage)."""
    previous = [p for p in trace.passes if p.stage == record.stage and p.index < record.index]
    if not previous:
        return 0
    return sum(record.op_counts.values()) - sum(previous[-1].op_counts.values())


def patterns_text(record: PassRecord) -> str:
    """`name×n` for each pattern that fired, most frequent first."""
    ordered = sorted(record.patterns.items(), key=lambda kv: -kv[1])
    return ", ".join(f"{name}×{n}" for name, n in ordered)


class PassTimeline(Vertical):
    """The table of pass records, the convert_layout chart and the pass documentation."""

    BINDINGS = [
        Binding("h", "toggle_unchanged", "Hide unchanged"),
        Binding("enter", "open_diff", "Diff", show=False),
    ]

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.trace: CompileTrace | None = None
        self.hide_unchanged = False

    def compose(self) -> ComposeResult:
        yield ConvertChart(id="convert-chart")
        yield DataTable(id="pass-table", cursor_type="row", zebra_stripes=True)
        yield Static(id="pass-doc")

    def on_mount(self) -> None:
        self.query_one(DataTable).add_columns("#", "stage", "pass", "chg", "Δops", "cvt",
                                              "ms", "patterns")

    def show_trace(self, trace: CompileTrace) -> None:
        """Fill the table for a trace."""
        self.trace = trace
        self.query_one(ConvertChart).show_trace(trace)
        self.refill()

    def visible_records(self) -> list[PassRecord]:
        """The records shown (all, or only those that changed the IR)."""
        if self.trace is None:
            return []
        return [r for r in self.trace.passes if r.changed or r.error or not self.hide_unchanged]

    def refill(self) -> None:
        """Rebuild the table rows."""
        table = self.query_one(DataTable)
        table.clear()
        # rows are keyed by position: a trace read from a file may repeat a record's index
        for position, record in enumerate(self.visible_records()):
            delta = op_delta(self.trace, record)
            changed = Text("error", style="bold red") if record.error else (
                Text("✓", style="green") if record.changed else Text("·", style="dim"))
            table.add_row(*plain_row(record.index, record.stage, record.name, changed,
                                     f"{delta:+d}" if delta else "",
                                     record.convert_layout_count, f"{record.wall_ms:.2f}",
                                     patterns_text(record)), key=str(position))
        self.show_doc(self.visible_records()[0] if self.visible_records() else None)

    def record_at_cursor(self) -> PassRecord | None:
        """The pass record of the highlighted row."""
        records = self.visible_records()
        row = self.query_one(DataTable).cursor_row
        return records[row] if 0 <= row < len(records) else None

    def show_doc(self, record: PassRecord | None) -> None:
        """Show the docstring, options and error of a pass."""
        doc = self.query_one("#pass-doc", Static)
        if record is None:
            doc.update("no pass records in this trace")
            return
        text = Text(f"{record.name}", style="bold")
        if record.options:
            text.append(" {" + ", ".join(f"{k}={v}" for k, v in record.options.items()) + "}")
        text.append(f"  ({record.stage})\n")
        text.append(record.doc or "(no documentation)")
        if record.error:
            text.append("\n" + record.error, style="red")
        doc.update(text)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self.show_doc(self.record_at_cursor())

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open_diff()

    def action_open_diff(self) -> None:
        record = self.record_at_cursor()
        if record is not None and self.trace is not None:
            self.app.push_screen(DiffScreen(record, self.trace.ir_before(record), record.ir_after))

    def action_toggle_unchanged(self) -> None:
        self.hide_unchanged = not self.hide_unchanged
        self.refill()
