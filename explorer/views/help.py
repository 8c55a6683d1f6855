"""The help screen (`?`): what each view shows and its keys."""
from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

SECTIONS = [
    ("Everywhere", ["1-7 switch view · ? this help · q quit · Tab move focus",
                    "ctrl+k switch kernel · ctrl+p command palette",
                    "/ search the focused text view, n N next / previous match",
                    "v start a line selection · c copy it (or the whole view) · w save the view"]),
    ("1 Kernels", ["↑↓ choose a kernel (its story below the table), Enter open it",
                   "errors in your file and what was not run show below the table",
                   "g compile a kernel the script did not launch: KERNEL=TYPES NAME=VALUE"]),
    ("2 Stages", ["[ ] previous / next stage (source ttir ttgir llir ptx sass)",
                  "/ search, n N next / previous match"]),
    ("3 Passes", ["↑↓ choose a pass (its doc below) · h hide unchanged passes",
                  "Enter side-by-side diff: n N next / previous change, ← → scroll sideways, "
                  "u fold unchanged, Esc back",
                  "the top line charts convert_layout through the ttgir passes"]),
    ("4 Layouts", ["cursor on a ttgir value: its node in the layout graph and its thread "
                   "ownership map (lane per element, colour = warp)",
                   "d export DOT · m export GraphML"]),
    ("5 Linked", ["cursor on a ttgir op: its PTX lines and Python line light up",
                  "cursor on a PTX line: its ttgir op lights up · o jump to it",
                  "s show SASS instead of PTX (and back)",
                  "z collapse / restore the Python pane"]),
    ("6 Pipeline", ["space enable / disable · K J move up / down · a add · x delete",
                    "t other stage · r recompile in the background and compare B with A",
                    "→ accepts the pass-name completion · Esc cancels the input",
                    "b B's stages and passes · d diff of the stage, A against B"]),
    ("7 Timings", ["every launch: CUDA-event time on the GPU, wall time in the interpreter"]),
]


def help_text() -> Text:
    """The help as styled text: a heading per view and its keys below it."""
    text = Text("tile-explore", style="bold")
    text.append(": what the compiler did to your kernel, pass by pass.\n")
    for title, lines in SECTIONS:
        text.append(f"\n{title}\n", style="bold cyan")
        for line in lines:
            text.append(f"  {line}\n")
    text.append("\nEscape closes this help.", style="dim")
    return text


class HelpScreen(ModalScreen):
    """A modal listing every view's keys; any of Escape, q or ? closes it."""

    BINDINGS = [Binding("escape,q,question_mark", "app.pop_screen", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static(help_text(), id="help-text")
