"""Completion for the pipeline editor's add-pass input, from the pass registry
(`compiler.inspect.list_passes()`): a pass name while the name is typed, then an option name
of that pass after `{` or a space inside the braces. Right arrow or Tab accepts (Textual's
`Suggester`)."""
from __future__ import annotations

from textual.suggester import Suggester

from compiler.inspect import list_passes


def complete_pass_spec(text: str, passes: dict) -> str | None:
    """The completed text for a partly typed `name` or `name{opt=v opt2`, or None.
    `passes` maps pass name -> its option names."""
    if "{" not in text:
        names = sorted(name for name in passes if name.startswith(text))
        return names[0] if text and names else None
    name, _, inside = text.partition("{")
    options = passes.get(name.strip())
    if not options or "}" in inside:
        return None
    typed = inside.rsplit(" ", 1)[-1]
    if "=" in typed:
        return None
    for option in sorted(options):
        if option.startswith(typed) and option != typed:
            return text + option[len(typed):] + "="
    return None


class PassSuggester(Suggester):
    """Suggests registered pass names and their options as the user types."""

    def __init__(self) -> None:
        super().__init__(use_cache=True, case_sensitive=True)
        self.passes = {info.name: [option.name for option in info.options]
                       for info in list_passes()}

    async def get_suggestion(self, value: str) -> str | None:
        return complete_pass_spec(value, self.passes)
