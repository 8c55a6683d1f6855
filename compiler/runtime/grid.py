"""Launch grids: each entry checked once, with the error located at the user's launch line.

A grid is 1 to 3 entries, each a non-negative integer (Python `int` or a numpy integer) below
2**31. As in Triton, a grid with a 0 entry launches no programs. Anything else (a float such as
`1.5`, a negative count, a string) is a `GridError` naming the entry, shown at the line of the
caller that launched the kernel (`file:line:col`, the line and a caret), never truncated
silently.
"""
from __future__ import annotations

import linecache
import sys
from pathlib import Path

#: The largest grid extent the launcher passes to the driver (CUDA's x-dimension limit).
MAX_GRID_EXTENT = 2 ** 31 - 1
_PACKAGE = str(Path(__file__).resolve().parents[1])   # the `compiler` package


class GridError(ValueError):
    """A launch grid entry that is not a non-negative integer; the message names the entry and
    where the kernel was launched."""

    def __init__(self, message: str, entry: int | None = None):
        self.reason = message
        self.entry = entry
        super().__init__(_at_launch_site(message))


def grid_dims(grid) -> tuple[int, int, int]:
    """`grid` (1 to 3 entries) as three ints, padded with 1s; `GridError` otherwise."""
    if isinstance(grid, (int,)) and not isinstance(grid, bool) or _is_numpy_int(grid):
        grid = (grid,)
    if not isinstance(grid, (tuple, list)) or not 1 <= len(grid) <= 3:
        raise GridError(f"the grid must be a tuple of 1 to 3 integers, not {grid!r}")
    dims = [grid_entry(i, extent) for i, extent in enumerate(grid)]
    return tuple(dims + [1] * (3 - len(dims)))


def grid_entry(index: int, extent) -> int:
    """One checked grid entry (see the module docstring)."""
    if isinstance(extent, bool) or not hasattr(extent, "__index__"):
        hint = " (round it up with triton.cdiv)" if isinstance(extent, float) else ""
        raise GridError(f"grid entry {index} is {extent!r}, a {type(extent).__name__}; grid "
                        f"entries must be integers{hint}", index)
    value = extent.__index__()
    if value < 0:
        raise GridError(f"grid entry {index} is {value}; grid entries must be >= 0 "
                        f"(0 launches no programs)", index)
    if value > MAX_GRID_EXTENT:
        raise GridError(f"grid entry {index} is {value}, above the limit of {MAX_GRID_EXTENT}",
                        index)
    return value


def _is_numpy_int(value) -> bool:
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(value, numpy.integer)


def _at_launch_site(message: str) -> str:
    """`message` located at the innermost frame outside the compiler (the launch line)."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(_PACKAGE) and not filename.startswith("<fast launch"):
            break
        frame = frame.f_back
    if frame is None:
        return message
    filename, line = frame.f_code.co_filename, frame.f_lineno
    col = _column(frame)
    source = linecache.getline(filename, line).rstrip("\n")
    text = f"{filename}:{line}:{col}: error: {message}"
    if source:
        text += f"\n{source}\n{' ' * col}^"
    return text


def _column(frame) -> int:
    """The 0-based column of the call the frame is executing (Python 3.11 positions)."""
    try:
        positions = list(frame.f_code.co_positions())
        _, _, col, _ = positions[frame.f_lasti // 2]
        return col or 0
    except (AttributeError, IndexError):
        return 0
