"""User text (source lines, IR, messages, names) made safe to show: never read as markup.

Textual reads a `str` given to a `Static` or a `DataTable` cell as console markup, so a kernel's
`v[i]` or a message's `[/x]` would be styled away or crash the app (`MarkupError`). Views pass
such text through `plain`, which wraps it in a `rich.text.Text` as it is, or, for table rows,
`plain_row`, which escapes the markup characters (cells stay strings, so they read back and
compare as the text they show).
"""
from __future__ import annotations

from rich.markup import escape
from rich.text import Text


def plain(value, style: str = "") -> Text:
    """`value` as literal text (a `Text` is kept as it is)."""
    return value if isinstance(value, Text) else Text(str(value), style=style)


def plain_row(*cells) -> list:
    """A table row whose text cells show literally (a `Text` cell is kept as it is)."""
    return [cell if isinstance(cell, Text) else escape(str(cell)) for cell in cells]
