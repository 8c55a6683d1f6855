"""The kernel switcher (`ctrl+k` from any view): a filterable list of the recorded kernels;
Enter makes the highlighted one current, Escape keeps the current one."""
from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList
from textual.widgets.option_list import Option

from compiler.trace import CompileTrace
from explorer.views.kernel_list import spec_text


def kernel_label(index: int, trace: CompileTrace) -> Text:
    """One kernel as a plain (never markup) option label: number, name and specialization."""
    return Text(f"{index + 1:>3}  {trace.kernel_name}  {spec_text(trace)}", no_wrap=True,
                overflow="ellipsis")


class KernelSwitcher(ModalScreen[int | None]):
    """Choose a kernel by typing part of its name; dismissed with its index or None."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, traces: list[CompileTrace], current: int) -> None:
        super().__init__()
        self.traces = traces
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="switcher-box"):
            yield Input(placeholder="kernel name (Enter opens, Esc cancels)", id="switcher-filter")
            yield OptionList(id="switcher-list")

    def on_mount(self) -> None:
        self._fill("")
        self.query_one(Input).focus()

    def _fill(self, needle: str) -> None:
        options = self.query_one(OptionList)
        options.clear_options()
        for index, trace in enumerate(self.traces):
            if needle.lower() in trace.kernel_name.lower():
                options.add_option(Option(kernel_label(index, trace), id=str(index)))
        if options.option_count:
            wanted = str(self.current)
            ids = [options.get_option_at_index(i).id for i in range(options.option_count)]
            options.highlighted = ids.index(wanted) if wanted in ids else 0

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._fill(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        options = self.query_one(OptionList)
        if options.highlighted is not None:
            self.dismiss(int(options.get_option_at_index(options.highlighted).id))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(int(event.option.id))

    def on_key(self, event) -> None:
        if event.key in ("up", "down") and self.query_one(Input).has_focus:
            options = self.query_one(OptionList)
            (options.action_cursor_up if event.key == "up" else options.action_cursor_down)()
            event.stop()

    def action_cancel(self) -> None:
        self.dismiss(None)
