"""Pipeline B seen in the same views as A: its stages (the stage view) and its pass timeline
(with per-pass diffs), on a screen of their own over the pipeline editor; Escape goes back."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Static, TabbedContent, TabPane

from compiler.trace import CompileTrace
from explorer.views.pass_timeline import PassTimeline
from explorer.views.stage_view import StageView


class ResultScreen(Screen):
    """B's stages and passes; `s` / `p` switch between them."""

    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("s", "show('b-stages')", "B stages"),
        Binding("p", "show('b-passes')", "B passes"),
    ]

    def __init__(self, trace: CompileTrace, pipelines: dict) -> None:
        super().__init__()
        self.trace = trace
        self.pipelines = pipelines

    def compose(self) -> ComposeResult:
        edited = ", ".join(f"{stage}: {len([p for p in text.split(',') if p.strip()])} passes"
                           for stage, text in self.pipelines.items())
        yield Static(f" B: {self.trace.kernel_name} with the edited pipeline ({edited})",
                     id="result-title", markup=False)
        with TabbedContent(initial="b-stages", id="result-tabs"):
            with TabPane("B stages", id="b-stages"):
                yield StageView()
            with TabPane("B passes", id="b-passes"):
                yield PassTimeline()
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(StageView).show_trace(self.trace)
        self.query_one(PassTimeline).show_trace(self.trace)
        self.query_one("#stage-code").focus()

    def action_show(self, pane: str) -> None:
        self.query_one(TabbedContent).active = pane
        self.query_one("#stage-code" if pane == "b-stages" else "#pass-table").focus()
