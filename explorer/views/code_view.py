"""CodeView: a scrollable, syntax-highlighted text with a cursor line, linked-line highlights,
search and a line selection (`v` marks one end, the cursor is the other). Every text pane of the
explorer (stages, linked panes, the pipeline editor's IR) is one of these.

The gutter numbers lines from `first_line` (the Python source starts at its file line), so the
numbers shown are the file's, the same ones the status lines and errors use.
"""
from __future__ import annotations

from pygments.lexer import Lexer
from rich.segment import Segment
from rich.style import Style
from rich.syntax import Syntax
from rich.text import Span, Text
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

CURSOR_STYLE = Style(bgcolor="#264f78")
LINKED_STYLE = Style(bgcolor="#4b3b00")
MATCH_STYLE = Style(bgcolor="#5a1e5a")
SELECTED_STYLE = Style(bgcolor="#1f3b5c")
GUTTER_STYLE = Style(color="#6e7681")
THEME = "monokai"


def highlight_lines(text: str, lexer: Lexer | None) -> list[Text]:
    """The text split into lines, each a rich Text highlighted with the lexer (plain if None)."""
    if lexer is None:
        return [Text(line) for line in text.splitlines()]
    syntax = Syntax("", lexer=lexer, theme=THEME)
    highlighted = syntax.highlight(text)
    highlighted.rstrip()
    lines = highlighted.split("\n", allow_blank=True) if text else []
    return [_without_background(line) for line in lines]


def _without_background(line: Text) -> Text:
    """Drop the theme's background so cursor and link highlights show through."""
    spans = []
    for span in line.spans:
        style = span.style if isinstance(span.style, Style) else Style.parse(str(span.style))
        spans.append(Span(span.start, span.end,
                          Style(color=style.color, bold=style.bold, italic=style.italic)))
    return Text(line.plain, spans=spans)


class CodeView(ScrollView, can_focus=True):
    """Read-only code with line numbers, a cursor (line), highlighted linked lines and search."""

    BINDINGS = [
        Binding("up,k", "move(-1)", "Up", show=False),
        Binding("down,j", "move(1)", "Down", show=False),
        Binding("pageup", "move(-20)", "Page up", show=False),
        Binding("pagedown", "move(20)", "Page down", show=False),
        Binding("home,g", "goto_line(1)", "Top", show=False),
        Binding("end,G", "goto_end", "End", show=False),
        Binding("n", "next_match(1)", "Next match"),
        Binding("N", "next_match(-1)", "Prev match", show=False),
        Binding("v", "mark", "Select", show=False),
    ]

    cursor = reactive(1)

    class CursorMoved(Message):
        """Posted when the cursor line changes (1-based line number)."""

        def __init__(self, view: "CodeView", line: int) -> None:
            super().__init__()
            self.view = view
            self.line = line

    def __init__(self, text: str = "", lexer: Lexer | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.raw_lines: list[str] = []
        self._lines: list[Text] = []
        self.linked: set[int] = set()
        self.matches: list[int] = []
        self.query_text = ""
        self.first_line = 1
        self.mark: int | None = None
        self.set_text(text, lexer)

    # ---- content -------------------------------------------------------------------------
    def set_text(self, text: str, lexer: Lexer | None = None, first_line: int = 1) -> None:
        """Replace the content, numbered from `first_line`; the cursor goes back to the top."""
        text = text.expandtabs(8)
        self.first_line = max(1, first_line)
        self.mark = None
        self.raw_lines = text.splitlines()
        self._lines = highlight_lines(text, lexer)
        self.linked = set()
        self.matches = []
        self._gutter = len(str(max(1, len(self._lines) + self.first_line - 1))) + 1
        width = max((len(line) for line in self.raw_lines), default=0) + self._gutter + 1
        self.virtual_size = Size(width, len(self._lines))
        self.cursor = 1
        self.refresh()

    def set_linked(self, lines) -> None:
        """Highlight a set of 1-based lines (e.g. the PTX of the ttgir op under another cursor)."""
        self.linked = set(lines)
        if self.linked:
            self.scroll_to_line(min(self.linked))
        self.refresh()

    def search(self, query: str) -> int:
        """Find lines containing `query` (case-insensitive); move to the first one after the
        cursor. Returns the number of matching lines."""
        self.query_text = query
        needle = query.lower()
        self.matches = [i + 1 for i, line in enumerate(self.raw_lines)
                        if needle and needle in line.lower()]
        self.refresh()
        if self.matches:
            self.action_next_match(1, include_current=True)
        return len(self.matches)

    def view_text(self, selection_only: bool = False) -> str:
        """The text shown; with `selection_only` and a mark set, the selected lines only."""
        lines = self.raw_lines
        if selection_only and self.mark is not None:
            first, last = sorted((self.mark, self.cursor))
            lines = lines[first - 1:last]
        return "\n".join(lines) + ("\n" if lines else "")

    def action_mark(self) -> None:
        """Start (or drop) a line selection at the cursor."""
        self.mark = None if self.mark is not None else self.cursor
        self.refresh()

    # ---- cursor --------------------------------------------------------------------------
    def validate_cursor(self, value: int) -> int:
        return max(1, min(value, max(1, len(self._lines))))

    def watch_cursor(self, old: int, new: int) -> None:
        self.scroll_to_line(new)
        self.refresh()
        self.post_message(self.CursorMoved(self, new))

    def scroll_to_line(self, line: int) -> None:
        """Scroll so that a 1-based line is visible, with a few lines of context."""
        top = self.scroll_offset.y
        height = max(1, self.scrollable_content_region.height)
        if line - 1 < top or line - 1 >= top + height:
            self.scroll_to(y=max(0, line - 1 - height // 3), animate=False)

    def action_move(self, delta: int) -> None:
        self.cursor += delta

    def action_goto_line(self, line: int) -> None:
        self.cursor = line

    def action_goto_end(self) -> None:
        self.cursor = len(self._lines)

    def action_next_match(self, step: int = 1, include_current: bool = False) -> None:
        if not self.matches:
            return
        current = self.cursor
        if step > 0:
            later = [m for m in self.matches if m > current or (include_current and m == current)]
            self.cursor = later[0] if later else self.matches[0]
        else:
            earlier = [m for m in self.matches if m < current]
            self.cursor = earlier[-1] if earlier else self.matches[-1]

    def on_click(self, event) -> None:
        self.cursor = event.y + self.scroll_offset.y + 1
        self.focus()

    # ---- rendering -----------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = y + scroll_y
        width = self.size.width
        if index >= len(self._lines):
            return Strip.blank(width, self.rich_style)
        number = index + 1
        shown = number + self.first_line - 1
        gutter = Segment(str(shown).rjust(self._gutter - 1) + " ", GUTTER_STYLE)
        line = self._lines[index].copy()
        if self.query_text and number in self.matches:
            lower, needle = self.raw_lines[index].lower(), self.query_text.lower()
            start = lower.find(needle)
            while start >= 0:
                line.stylize(MATCH_STYLE, start, start + len(needle))
                start = lower.find(needle, start + 1)
        segments = [gutter] + list(line.render(self.app.console))
        strip = Strip(segments).crop(scroll_x, scroll_x + width)
        strip = strip.extend_cell_length(width)
        if number == self.cursor and self.has_focus:
            return strip.apply_style(CURSOR_STYLE)
        if number == self.cursor:
            return strip.apply_style(Style(bgcolor="#30363d"))
        if number in self.linked:
            return strip.apply_style(LINKED_STYLE)
        if self.mark is not None and min(self.mark, self.cursor) <= number <= max(
                self.mark, self.cursor):
            return strip.apply_style(SELECTED_STYLE)
        return strip.apply_style(self.rich_style)

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()
