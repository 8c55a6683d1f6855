"""A tiny FileCheck for tests: match CHECK directives in order against text (any helper may use it).

    filecheck(ir_text, '''
        CHECK: [[PID:%[a-z_0-9]+]] = tt.get_program_id x
        CHECK-NEXT: arith.muli [[PID]]
        CHECK-SAME: : i32
        CHECK-NOT: arith.divsi
        CHECK: tt.store
    ''')

`CHECK: p` finds `p` after the previous match (later on the same line or on a later line);
`CHECK-NEXT: p` requires `p` on the line right after the previous match's line; `CHECK-SAME: p`
requires it later on the same line; `CHECK-NOT: p` forbids `p` between the previous match and
the next one (or the end of the text). Inside a pattern, `{{regex}}` is a regular expression,
`[[NAME:regex]]` captures a variable and `[[NAME]]` matches its captured text. Lines without a
directive are ignored, and `#` or `//` may precede a directive (CHECK comments in kernel source).
"""
from __future__ import annotations

import re

DIRECTIVE = re.compile(r"^\s*(?:#|//)?\s*(CHECK|CHECK-NEXT|CHECK-SAME|CHECK-NOT):\s?(.*?)\s*$")
TOKEN = re.compile(r"\{\{(.*?)\}\}|\[\[([A-Za-z_][A-Za-z0-9_]*)(?::(.*?))?\]\](?!\])")


class CheckFailure(AssertionError):
    """A directive did not match; the message shows the directive and where matching stood."""


FileCheckError = CheckFailure


def compile_pattern(pattern: str, variables: dict) -> re.Pattern:
    """A regex for one directive's pattern, with `{{...}}`, `[[N:...]]` and `[[N]]` expanded."""
    out, pos = [], 0
    for m in TOKEN.finditer(pattern):
        out.append(re.escape(pattern[pos:m.start()]))
        regex, name, definition = m.groups()
        if regex is not None:
            out.append(f"(?:{regex})")
        elif definition is not None:
            out.append(f"(?P<{name}>{definition})")
        else:
            if name not in variables:
                raise CheckFailure(f"variable [[{name}]] is used before it is captured")
            out.append(re.escape(variables[name]))
        pos = m.end()
    out.append(re.escape(pattern[pos:]))
    return re.compile("".join(out))


def parse_checks(checks) -> list:
    """[(kind, pattern)] from a string of directive lines or a list of such lines."""
    lines = checks.splitlines() if isinstance(checks, str) else list(checks)
    out = []
    for line in lines:
        m = DIRECTIVE.match(line)
        if m:
            out.append((m.group(1), m.group(2)))
    if not out:
        raise ValueError("no CHECK directives given")
    return out


def filecheck(text: str, checks) -> None:
    """Raise `CheckFailure` unless `text` satisfies the directives in `checks`."""
    lines = text.splitlines()
    variables: dict = {}
    line, col = 0, 0          # where the previous match ended
    matched_any = False
    nots: list = []

    def fail(message: str, at: int):
        """Raise CheckFailure with the text around `at`."""
        at = max(0, min(at, len(lines)))
        window = "\n".join(lines[at:at + 8])
        raise CheckFailure(f"{message}\n--- text from line {at + 1}:\n{window}")

    def segments(end_line: int, end_col: int | None):
        """(line index, text) pieces from the previous match's end up to (end_line, end_col)."""
        for i in range(line, min(end_line, len(lines) - 1) + 1):
            start = col if i == line else 0
            stop = end_col if (i == end_line and end_col is not None) else len(lines[i])
            yield i, lines[i][start:stop]

    def check_nots(end_line: int, end_col: int | None):
        """Fail if a pending CHECK-NOT pattern occurs before (end_line, end_col)."""
        for pattern in nots:
            rx = compile_pattern(pattern, variables)
            for i, piece in segments(end_line, end_col):
                if rx.search(piece):
                    fail(f"CHECK-NOT: {pattern!r} found on line {i + 1}: {lines[i]!r}", i)

    for kind, pattern in parse_checks(checks):
        if kind == "CHECK-NOT":
            nots.append(pattern)
            continue
        rx = compile_pattern(pattern, variables)
        found = None
        if kind == "CHECK":
            for i in range(line, len(lines)):
                m = rx.search(lines[i], col if i == line else 0)
                if m:
                    found = (i, m)
                    break
            if found is None:
                fail(f"CHECK: {pattern!r} not found after line {line + 1}", line)
        elif kind == "CHECK-NEXT":
            i = line + 1 if matched_any else 0
            m = rx.search(lines[i]) if i < len(lines) else None
            if m is None:
                fail(f"CHECK-NEXT: {pattern!r} is not on the line after the previous match", i)
            found = (i, m)
        else:  # CHECK-SAME
            m = rx.search(lines[line], col) if line < len(lines) else None
            if m is None:
                fail(f"CHECK-SAME: {pattern!r} is not later on the line of the previous match",
                     line)
            found = (line, m)
        i, m = found
        check_nots(i, m.start())
        nots = []
        variables.update({k: v for k, v in m.groupdict().items() if v is not None})
        line, col, matched_any = i, m.end(), True
    check_nots(len(lines) - 1, None)
