"""The side-by-side before/after diff of one pass, with intraline highlights.

`u` folds or unfolds unchanged runs, `n` / `N` jump between changes, Escape closes."""
from __future__ import annotations

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.geometry import Size
from textual.screen import Screen
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Footer, Static

from compiler.trace import PassRecord
from explorer.diff import DiffRow, change_counts, fold_equal, side_by_side

SIDE_STYLES = {
    "delete": Style(bgcolor="#3c1618"), "insert": Style(bgcolor="#12361d"),
    "replace": Style(bgcolor="#2d2a12"), "equal": Style(), "fold": Style(color="#6e7681"),
}
INTRALINE_LEFT = Style(bgcolor="#8b2a2e")
INTRALINE_RIGHT = Style(bgcolor="#1f6f3a")
CURSOR = Style(bgcolor="#264f78")
_CONSOLE = Console(width=1000, color_system="truecolor")   # renders cells to segments only


def _cell(number: int | None, text: str | None, spans: list, style: Style,
          mark: Style, width: int) -> list[Segment]:
    """One side of a row: line number, text with intraline spans, padded/cropped to width."""
    gutter = f"{number:>5} " if number is not None else "      "
    body = Text(text or "", style=style)
    for start, end in spans:
        body.stylize(mark, start, end)
    line = Text(gutter, style=Style(color="#6e7681")) + body
    line.truncate(width, pad=True)
    line.stylize(style)
    return [seg for seg in line.render(_CONSOLE) if seg.text != "\n"]


class SideBySide(ScrollView, can_focus=True):
    """The diff rows, left (before) and right (after), each half the width."""

    BINDINGS = [
        Binding("up,k", "move(-1)", "Up", show=False),
        Binding("down,j", "move(1)", "Down", show=False),
        Binding("pageup", "move(-20)", show=False),
        Binding("pagedown", "move(20)", show=False),
        Binding("n", "next_change(1)", "Next change"),
        Binding("N", "next_change(-1)", "Prev change"),
    ]

    def __init__(self, rows: list[DiffRow], **kwargs) -> None:
        super().__init__(**kwargs)
        self.cursor = 0
        self.set_rows(rows)

    def set_rows(self, rows: list[DiffRow]) -> None:
        """Replace the rows shown."""
        self.rows = rows
        self.cursor = min(self.cursor, max(0, len(rows) - 1))
        self.virtual_size = Size(self.size.width or 80, len(rows))
        self.refresh()

    def render_line(self, y: int) -> Strip:
        index = y + self.scroll_offset.y
        width = self.size.width
        if index >= len(self.rows):
            return Strip.blank(width)
        row = self.rows[index]
        half = (width - 1) // 2
        if row.tag == "fold":
            text = f" ⋯ {row.folded} unchanged lines ⋯ ".center(width, "─")
            return Strip([Segment(text, SIDE_STYLES["fold"])], width)
        left_style = SIDE_STYLES["delete" if row.tag == "delete" else row.tag]
        right_style = SIDE_STYLES["insert" if row.tag == "insert" else row.tag]
        if row.left is None:
            left_style = Style(bgcolor="#1c1c1c")
        if row.right is None:
            right_style = Style(bgcolor="#1c1c1c")
        segments = (_cell(row.left_no, row.left, row.left_spans, left_style, INTRALINE_LEFT, half)
                    + [Segment("│", Style(color="#6e7681"))]
                    + _cell(row.right_no, row.right, row.right_spans, right_style,
                            INTRALINE_RIGHT, width - half - 1))
        strip = Strip(segments).crop(0, width)
        return strip.apply_style(CURSOR) if index == self.cursor and self.has_focus else strip

    def action_move(self, delta: int) -> None:
        self.cursor = max(0, min(len(self.rows) - 1, self.cursor + delta))
        self._keep_visible()

    def action_next_change(self, step: int) -> None:
        order = range(self.cursor + 1, len(self.rows)) if step > 0 else \
            range(self.cursor - 1, -1, -1)
        for index in order:
            if self.rows[index].tag not in ("equal", "fold"):
                self.cursor = index
                break
        self._keep_visible()

    def _keep_visible(self) -> None:
        top, height = self.scroll_offset.y, max(1, self.size.height)
        if self.cursor < top or self.cursor >= top + height:
            self.scroll_to(y=max(0, self.cursor - height // 3), animate=False)
        self.refresh()


class DiffScreen(Screen):
    """A full screen with the pass's name, what it changed, and the side-by-side diff."""

    BINDINGS = [
        Binding("escape,q", "app.pop_screen", "Back"),
        Binding("u", "toggle_fold", "Fold unchanged"),
    ]

    def __init__(self, record: PassRecord, before: str, after: str) -> None:
        super().__init__()
        self.record = record
        self.all_rows = side_by_side(before, after)
        self.folded = record.changed    # an unchanged pass shows its whole IR

    def compose(self) -> ComposeResult:
        counts = change_counts(self.all_rows)
        state = "changed" if self.record.changed else "unchanged"
        yield Static(
            f" pass {self.record.index}: {self.record.name} ({self.record.stage}) · {state} · "
            f"-{counts['removed']} +{counts['added']} lines · "
            f"convert_layout {self.record.convert_layout_count} · {self.record.wall_ms:.2f} ms",
            id="diff-title", markup=False)
        rows = fold_equal(self.all_rows) if self.folded else self.all_rows
        yield SideBySide(rows, id="diff-view")
        yield Footer()

    def on_mount(self) -> None:
        view = self.query_one(SideBySide)
        view.focus()
        view.action_next_change(1)

    def action_toggle_fold(self) -> None:
        self.folded = not self.folded
        rows = fold_equal(self.all_rows) if self.folded else self.all_rows
        self.query_one(SideBySide).set_rows(rows)
