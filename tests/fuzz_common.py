"""What the fuzzers (tests/fuzz_lowering.py, tests/fuzz_pipelines.py) share: the outcome of one
input, the hang they raise past their time limit, and the alarm that raises it."""
from __future__ import annotations

import signal
from contextlib import contextmanager
from dataclasses import dataclass
from typing import ClassVar


class Hang(Exception):
    """A compile (or interpretation) that ran past its fuzzer's time limit."""


@dataclass(frozen=True)
class Outcome:
    """What one input did: a kind and why. A fuzzer subclasses it with the kinds it accepts
    (`ACCEPTED`); any other kind ("internal", "hang", ...) fails the property."""

    kind: str
    detail: str = ""
    ACCEPTED: ClassVar[tuple] = ()

    @property
    def ok(self) -> bool:
        return self.kind in self.ACCEPTED


@contextmanager
def time_limit(seconds: int):
    """Raise `Hang` in the body once it runs past `seconds` (SIGALRM; the main thread only)."""
    def on_alarm(signum, frame):
        raise Hang(f"ran past {seconds} s")
    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
