"""Side-by-side line diffs with intraline highlights, for a pass's IR before and after.

`side_by_side(before, after)` pairs lines with difflib: equal lines sit side by side, replaced
lines are paired one to one (with the changed character spans of each side), inserted or deleted
lines face an empty cell. `fold_equal` collapses long unchanged runs to a few context lines.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from difflib import SequenceMatcher


@dataclass
class DiffRow:
    """One row of a side-by-side diff; a side is None where the other side has no counterpart."""

    tag: str                              # "equal", "replace", "delete", "insert" or "fold"
    left_no: int | None = None            # 1-based line numbers
    left: str | None = None
    right_no: int | None = None
    right: str | None = None
    left_spans: list = field(default_factory=list)    # [(start, end)] changed chars on the left
    right_spans: list = field(default_factory=list)
    folded: int = 0                       # for "fold" rows: how many equal rows were hidden


SIMILAR = 0.6     # below this similarity two paired lines are marked whole, not char by char


def intraline_spans(left: str, right: str) -> tuple[list, list]:
    """The character ranges that differ between two paired lines, for each side; lines that
    are not similar enough get no spans (the whole row is already marked as replaced)."""
    matcher = SequenceMatcher(None, left, right, autojunk=False)
    if matcher.ratio() < SIMILAR:
        return [], []
    left_spans, right_spans = [], []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if i2 > i1:
            left_spans.append((i1, i2))
        if j2 > j1:
            right_spans.append((j1, j2))
    return left_spans, right_spans


def side_by_side(before: str, after: str) -> list[DiffRow]:
    """Rows of a side-by-side diff of two texts, in order."""
    a, b = before.splitlines(), after.splitlines()
    rows: list[DiffRow] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            rows += [DiffRow("equal", i + 1, a[i], j + 1, b[j])
                     for i, j in zip(range(i1, i2), range(j1, j2))]
            continue
        if tag == "replace":
            paired = min(i2 - i1, j2 - j1)
            for k in range(paired):
                left, right = a[i1 + k], b[j1 + k]
                ls, rs = intraline_spans(left, right)
                rows.append(DiffRow("replace", i1 + k + 1, left, j1 + k + 1, right, ls, rs))
            i1, j1 = i1 + paired, j1 + paired
        rows += [DiffRow("delete", i + 1, a[i], None, None) for i in range(i1, i2)]
        rows += [DiffRow("insert", None, None, j + 1, b[j]) for j in range(j1, j2)]
    return rows


def fold_equal(rows: list[DiffRow], context: int = 3) -> list[DiffRow]:
    """Collapse runs of equal rows longer than 2*context+1 into a single "fold" row."""
    out: list[DiffRow] = []
    run: list[DiffRow] = []

    def flush(at_start: bool, at_end: bool) -> None:
        head = 0 if at_start else context
        tail = 0 if at_end else context
        if len(run) <= head + tail + 1:
            out.extend(run)
        else:
            out.extend(run[:head])
            out.append(DiffRow("fold", folded=len(run) - head - tail))
            out.extend(run[len(run) - tail:] if tail else [])
        run.clear()

    started = False
    for row in rows:
        if row.tag == "equal":
            run.append(row)
            continue
        flush(at_start=not started, at_end=False)
        started = True
        out.append(row)
    flush(at_start=not started, at_end=True)
    return out


def change_counts(rows: list[DiffRow]) -> dict:
    """How many lines a diff removes and adds (a replaced line counts once on each side)."""
    removed = sum(1 for r in rows if r.tag in ("replace", "delete"))
    added = sum(1 for r in rows if r.tag in ("replace", "insert"))
    return {"removed": removed, "added": added}
