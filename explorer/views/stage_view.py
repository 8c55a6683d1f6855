"""The stage view: one stage's text (source, ttir, ttgir, llir, ptx, sass), highlighted, with
search (`/`, then `n` / `N`)."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Input, Static, Tab, Tabs

from compiler.trace import CompileTrace
from explorer.lexers import lexer_for_stage
from explorer.views.code_view import CodeView
from explorer.views.linked_view import stage_first_line

STAGE_ORDER = ("source", "ttir", "ttgir", "llir", "ptx", "sass")


def present_stages(trace: CompileTrace) -> list:
    """The stage tabs to show: the stages with text, and `sass` whenever the trace got as far
    as PTX (its tab then says why there is no SASS instead of vanishing)."""
    return [s for s in STAGE_ORDER
            if trace.stages.get(s) or (s == "sass" and trace.stages.get("ptx"))]


def stage_text(trace: CompileTrace, stage: str) -> str:
    """A stage's text, or for a missing SASS the reason the compiler recorded."""
    text = trace.stages.get(stage, "")
    if stage == "sass" and not text:
        reason = trace.sass_missing or "the compiler recorded no SASS and no reason"
        return f"// no SASS for this kernel: {reason}\n"
    return text


class StageView(Vertical):
    """Tabs of the stages present in the trace above a CodeView of the chosen one."""

    BINDINGS = [
        Binding("slash", "search", "Search"),
        Binding("right_square_bracket", "cycle(1)", "Next stage"),
        Binding("left_square_bracket", "cycle(-1)", "Prev stage", show=False),
    ]

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.trace: CompileTrace | None = None
        self.stage = "ttgir"

    def compose(self) -> ComposeResult:
        yield Tabs(*[Tab(stage, id=f"stage-{stage}") for stage in STAGE_ORDER], id="stage-tabs")
        yield CodeView(id="stage-code")
        yield Input(placeholder="search (Enter to find, Esc to close)", id="stage-search")
        yield Static(id="stage-notes", markup=False)
        yield Static(id="stage-status", markup=False)

    def on_mount(self) -> None:
        self.query_one("#stage-search").display = False

    def show_trace(self, trace: CompileTrace) -> None:
        """Show a (new) trace, keeping the chosen stage when it exists."""
        self.trace = trace
        notes = self.query_one("#stage-notes", Static)
        notes.update("\n".join(f"note: {note}" for note in trace.notes))
        notes.display = bool(trace.notes)
        tabs = self.query_one(Tabs)
        present = present_stages(trace)
        for stage in STAGE_ORDER:
            (tabs.show if stage in present else tabs.hide)(f"stage-{stage}")
        if present:
            self.show_stage(self.stage if self.stage in present else present[0])

    def show_stage(self, stage: str) -> None:
        """Display one stage's text."""
        if self.trace is None:
            return
        self.stage = stage
        code = self.query_one(CodeView)
        code.set_text(stage_text(self.trace, stage), lexer_for_stage(stage),
                      stage_first_line(self.trace, stage))
        tabs = self.query_one(Tabs)
        if tabs.active != f"stage-{stage}":
            tabs.active = f"stage-{stage}"
        lines = len(code.raw_lines)
        self.query_one("#stage-status", Static).update(
            f"{self.trace.kernel_name} · {stage} · {lines} lines"
            + (f" · overridden by {self.trace.overrides[stage]}"
               if stage in self.trace.overrides else ""))

    def on_tabs_tab_activated(self, event: Tabs.TabActivated) -> None:
        event.stop()
        if event.tab is not None and event.tab.id:
            stage = event.tab.id.removeprefix("stage-")
            if stage != self.stage or not self.query_one(CodeView).raw_lines:
                self.show_stage(stage)

    def action_cycle(self, step: int) -> None:
        if self.trace is None:
            return
        present = present_stages(self.trace)
        if present:
            index = present.index(self.stage) if self.stage in present else 0
            self.show_stage(present[(index + step) % len(present)])

    def action_search(self) -> None:
        box = self.query_one("#stage-search", Input)
        box.display = True
        box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        code = self.query_one(CodeView)
        found = code.search(event.value)
        self.query_one("#stage-status", Static).update(
            f"{found} line(s) match {event.value!r}" + (" · n / N to step" if found else ""))
        event.input.display = False
        code.focus()

    def on_key(self, event) -> None:
        box = self.query_one("#stage-search", Input)
        if event.key == "escape" and box.display:
            box.display = False
            self.query_one(CodeView).focus()
            event.stop()
