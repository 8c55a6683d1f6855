"""The command palette's provider (ctrl+p): every app command (views, search, copy, save,
kernel switcher, help) and "open kernel NAME" for each recorded kernel, found by fuzzy match."""
from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider


def app_commands(app) -> list[tuple[str, str, object]]:
    """(name, help, callback) for every command the palette offers."""
    commands = [(f"view: {name}", f"show the {name} view (key {i + 1})",
                 partial(app.action_show_view, name)) for i, name in enumerate(app.VIEW_NAMES)]
    commands += [
        ("search this view", "find text in the focused view (/), then n / N",
         app.action_search),
        ("copy to clipboard", "copy the selection, or the whole focused view (c)", app.action_copy),
        ("save view to file", "write the focused view's text to a file (w)", app.action_save),
        ("switch kernel", "choose another kernel from a list (ctrl+k)", app.action_switch_kernel),
        ("help", "every view's keys (?)", app.action_help),
    ]
    commands += [(f"open kernel {trace.kernel_name} #{index + 1}", "make it the current kernel",
                  partial(app.select_kernel, index)) for index, trace in enumerate(app.traces)]
    return commands


class ExplorerCommands(Provider):
    """The explorer's commands for Textual's command palette."""

    async def discover(self) -> Hits:
        for name, help_text, callback in app_commands(self.app):
            yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, help_text, callback in app_commands(self.app):
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)
