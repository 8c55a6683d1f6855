"""The signature prompt (`g`): compile a kernel the script defined but did not launch, from
`KERNEL=TYPE,TYPE,... [NAME=VALUE ...]` (the --signature text and constexprs). Errors show in
the prompt with their column and caret; Escape closes it."""
from __future__ import annotations

from typing import Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class SignaturePrompt(ModalScreen):
    """Asks for a signature; dismisses with the new trace, or None when cancelled."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, compile_text: Callable, uncompiled: list, **kwargs) -> None:
        super().__init__(**kwargs)
        self.compile_text = compile_text
        self.uncompiled = uncompiled

    def compose(self) -> ComposeResult:
        with Vertical(id="signature-box"):
            yield Static("Compile a kernel for a signature: KERNEL=TYPE,TYPE,... NAME=VALUE ...\n"
                         "kernels without a trace: " + (", ".join(self.uncompiled) or "none"),
                         id="signature-help", markup=False)
            example = (f"{self.uncompiled[0]}=*fp32,*fp32,i32 BLOCK=1024" if self.uncompiled
                       else "kernel=*fp32,i32 BLOCK=1024")
            yield Input(placeholder=example, id="signature-input")
            yield Static("", id="signature-error", markup=False)

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        try:
            trace = self.compile_text(event.value)
        except ValueError as error:
            self.query_one("#signature-error", Static).update(str(error))
            return
        self.dismiss(trace)

    def action_cancel(self) -> None:
        self.dismiss(None)
