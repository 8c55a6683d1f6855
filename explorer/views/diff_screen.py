"""The side-by-side before/after diff of one pass, with intraline highlights.

Changed characters of a replaced line are marked on both sides (a brighter background over the
row's own), changed rows keep a bright foreground, `left` / `right` scroll both sides sideways
(the line numbers stay), `u` folds or unfolds unchanged runs, `n` / `N` jump between changes (or
between matches after a search, `/`), Escape closes."""
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

CHANGED_FG = "#f0f6fc"        # changed rows are never dimmer than unchanged ones
EQUAL_FG = "#c9d1d9"
SIDE_STYLES = {
    "delete": Style(color=CHANGED_FG, bgcolor="#3c1618"),
    "insert": Style(color=CHANGED_FG, bgcolor="#12361d"),
    "replace": Style(color=CHANGED_FG, bgcolor="#2d2a12"),
    "equal": Style(color=EQUAL_FG), "fold": Style(color="#6e7681"),
}
INTRALINE_LEFT = Style(color="#ffffff", bgcolor="#a3333a", bold=True)
INTRALINE_RIGHT = Style(color="#ffffff", bgcolor="#238a48", bold=True)
MATCH = Style(bgcolor="#5a1e5a")
HSCROLL_STEP = 8
CURSOR = Style(bgcolor="#264f78")
_CONSOLE = Console(width=1000, color_system="truecolor")   # renders cells to segments only


def _cell(number: int | None, text: str | None, spans: list, style: Style,
          mark: Style, width: int, offset: int = 0, query: str = "") -> list[Segment]:
    """One side of a row: line number, then the text from column `offset` with its intraline
    spans (and search matches) marked over the row's style, padded/cropped to width."""
    gutter = f"{number:>5} " if number is not None else "      "
    body = Text((text or "")[offset:], style=style, end="")
    for start, end in spans:
        if end > offset:
            body.stylize(mark, max(0, start - offset), end - offset)
    if query:
        lower, needle = body.plain.lower(), query.lower()
        start = lower.find(needle)
        while start >= 0:
            body.stylize(MATCH, start, start + len(needle))
            start = lower.find(needle, start + 1)
    line = Text(style=style, end="")           # the row's style lies under every mark
    line.append(gutter, style=Style(color="#6e7681"))
    line.append_text(body)
    line.truncate(width, pad=True)
    return [seg for seg in line.render(_CONSOLE) if seg.text != "\n"]


class SideBySide(ScrollView, can_focus=True):
    """The diff rows, left (before) and right (after), each half the width; a line cursor
    (its line numbers lit), sideways scrolling and search over both sides."""

    BINDINGS = [
        Binding("up,k", "move(-1)", "Up", show=False),
        Binding("down,j", "move(1)", "Down", show=False),
        Binding("pageup", "move(-20)", show=False),
        Binding("pagedown", "move(20)", show=False),
        Binding("left,h", "shift(-1)", "Left", show=False),
        Binding("right,l", "shift(1)", "Right", show=False),
        Binding("n", "next_change(1)", "Next change"),
        Binding("N", "next_change(-1)", "Prev change"),
    ]

    def __init__(self, rows: list[DiffRow], **kwargs) -> None:
        super().__init__(**kwargs)
        self.cursor = 0
        self.offset_x = 0
        self.query_text = ""
        self.matches: list[int] = []
        self.set_rows(rows)

    def set_rows(self, rows: list[DiffRow]) -> None:
        """Replace the rows shown."""
        self.rows = rows
        self.cursor = min(self.cursor, max(0, len(rows) - 1))
        self.virtual_size = Size(self.size.width or 80, len(rows))
        if self.query_text:
            self.search(self.query_text)
        self.refresh()

    @property
    def longest(self) -> int:
        """The longest line on either side, in characters."""
        return max((len(text or "") for row in self.rows for text in (row.left, row.right)),
                   default=0)

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
        query = self.query_text if index in self.matches else ""
        segments = (_cell(row.left_no, row.left, row.left_spans, left_style, INTRALINE_LEFT,
                          half, self.offset_x, query)
                    + [Segment("│", Style(color="#6e7681"))]
                    + _cell(row.right_no, row.right, row.right_spans, right_style,
                            INTRALINE_RIGHT, width - half - 1, self.offset_x, query))
        if index == self.cursor:
            segments = _mark_cursor(segments, half + 1, self.has_focus)
        return Strip(segments).crop(0, width)

    def action_move(self, delta: int) -> None:
        self.cursor = max(0, min(len(self.rows) - 1, self.cursor + delta))
        self._keep_visible()

    def action_shift(self, step: int) -> None:
        """Scroll both sides sideways by a few columns (the line numbers stay)."""
        self.offset_x = max(0, min(max(0, self.longest - 10), self.offset_x + step * HSCROLL_STEP))
        self.refresh()

    def action_next_change(self, step: int) -> None:
        """The next (or previous) changed row; after a search, the next (previous) match."""
        wanted = (lambda i: i in self.matches) if self.matches else \
            (lambda i: self.rows[i].tag not in ("equal", "fold"))
        order = range(self.cursor + 1, len(self.rows)) if step > 0 else \
            range(self.cursor - 1, -1, -1)
        for index in order:
            if wanted(index):
                self.cursor = index
                break
        self._keep_visible()

    def action_next_match(self, step: int = 1) -> None:
        """`n` / `N` after a search: the same as stepping with a query set."""
        self.action_next_change(step)

    def search(self, query: str) -> int:
        """Mark rows whose either side contains `query` (case-insensitive) and move to the
        first from the cursor on; returns the number of matching rows."""
        self.query_text = query
        needle = query.lower()
        self.matches = [i for i, row in enumerate(self.rows) if needle and any(
            needle in (text or "").lower() for text in (row.left, row.right))]
        if self.matches:
            later = [m for m in self.matches if m >= self.cursor]
            self.cursor = later[0] if later else self.matches[0]
            self._keep_visible()
        self.refresh()
        return len(self.matches)

    def view_text(self, selection_only: bool = False) -> str:
        """The diff as unified text (`-` before, `+` after, two spaces unchanged); with
        `selection_only`, the cursor's row."""
        rows = [self.rows[self.cursor]] if selection_only and self.rows else self.rows
        return "\n".join(unified_lines(rows)) + "\n"

    def _keep_visible(self) -> None:
        top, height = self.scroll_offset.y, max(1, self.size.height)
        if self.cursor < top or self.cursor >= top + height:
            self.scroll_to(y=max(0, self.cursor - height // 3), animate=False)
        self.refresh()


def _mark_cursor(segments: list[Segment], right_start: int, focused: bool) -> list[Segment]:
    """Light the two line-number gutters of the cursor row (the text keeps its marks)."""
    style = CURSOR if focused else Style(bgcolor="#30363d")
    out, x = [], 0
    for segment in segments:
        in_gutter = x < 6 or right_start <= x < right_start + 6
        out.append(Segment(segment.text, segment.style + style) if in_gutter else segment)
        x += len(segment.text)
    return out


def unified_lines(rows: list[DiffRow]) -> list[str]:
    """Rows as unified-diff lines, for copying and saving."""
    lines = []
    for row in rows:
        if row.tag == "fold":
            lines.append(f"@@ {row.folded} unchanged lines @@")
        elif row.tag == "equal":
            lines.append(f"  {row.left}")
        else:
            if row.left is not None:
                lines.append(f"- {row.left}")
            if row.right is not None:
                lines.append(f"+ {row.right}")
    return lines


class DiffScreen(Screen):
    """A full screen with the pass's name, what it changed, and the side-by-side diff."""

    BINDINGS = [
        Binding("escape,q", "app.pop_screen", "Back"),
        Binding("u", "toggle_fold", "Fold unchanged"),
    ]

    def __init__(self, record: PassRecord | None, before: str, after: str,
                 title: str = "") -> None:
        """The diff of one pass (`record`), or of any two texts under `title` (record None,
        e.g. a stage of pipeline A against the same stage of B)."""
        super().__init__()
        self.record = record
        self.title = title
        self.all_rows = side_by_side(before, after)
        self.folded = record.changed if record else True   # an unchanged pass shows its IR

    def compose(self) -> ComposeResult:
        counts = change_counts(self.all_rows)
        yield Static(self._title_text(counts), id="diff-title", markup=False)
        rows = fold_equal(self.all_rows) if self.folded else self.all_rows
        yield SideBySide(rows, id="diff-view")
        yield Footer()

    def _title_text(self, counts: dict) -> str:
        changes = f"-{counts['removed']} +{counts['added']} lines"
        if self.record is None:
            return f" {self.title} · {changes}"
        record = self.record
        state = "changed" if record.changed else "unchanged"
        return (f" pass {record.index}: {record.name} ({record.stage}) · {state} · {changes} · "
                f"convert_layout {record.convert_layout_count} · {record.wall_ms:.2f} ms")

    def on_mount(self) -> None:
        view = self.query_one(SideBySide)
        view.focus()
        view.action_next_change(1)

    def action_toggle_fold(self) -> None:
        self.folded = not self.folded
        rows = fold_equal(self.all_rows) if self.folded else self.all_rows
        self.query_one(SideBySide).set_rows(rows)
