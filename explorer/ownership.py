"""Thread ownership of a distributed layout: which warp, lane and register holds each element.

Computed here from the layout *text* the trace holds (the explorer reads traces, not compiler
objects), for `#ttg.blocked` layouts and `#ttg.slice` layouts of a blocked parent; the tests check
that it agrees with `compiler.analysis.layouts`, the compiler's own model of the same rules.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

_LIST_FIELD = r"{name}\s*=\s*\[([\d,\s]*)\]"


@dataclass(frozen=True)
class Blocked:
    """The fields of a `#ttg.blocked` layout."""

    size_per_thread: tuple
    threads_per_warp: tuple
    warps_per_cta: tuple
    order: tuple


def _field(text: str, name: str) -> tuple:
    match = re.search(_LIST_FIELD.format(name=name), text)
    if not match:
        raise ValueError(f"layout has no {name}: {text}")
    return tuple(int(v) for v in match.group(1).split(",") if v.strip())


def parse_blocked(text: str) -> Blocked:
    """Read a `#ttg.blocked<{...}>` text into its four fields."""
    return Blocked(_field(text, "sizePerThread"), _field(text, "threadsPerWarp"),
                   _field(text, "warpsPerCTA"), _field(text, "order"))


def _linear(index: tuple, shape: tuple, order: tuple) -> int:
    """Linearize a multi-index with `order[0]` the fastest-varying dimension."""
    value, stride = 0, 1
    for dim in order:
        value += index[dim] * stride
        stride *= shape[dim]
    return value


def blocked_owner(layout: Blocked, shape: tuple, coord: tuple) -> tuple:
    """(warp, lane, register) of the first thread that holds element `coord` of a tensor."""
    spt, tpw, wpc, order = (layout.size_per_thread, layout.threads_per_warp,
                            layout.warps_per_cta, layout.order)
    rank = len(shape)
    tile = [spt[d] * tpw[d] * wpc[d] for d in range(rank)]
    reps = tuple(max(1, math.ceil(shape[d] / tile[d])) for d in range(rank))
    within = [coord[d] % tile[d] for d in range(rank)]
    rep = tuple(coord[d] // tile[d] for d in range(rank))
    elem = tuple(within[d] % spt[d] for d in range(rank))
    lane = tuple((within[d] // spt[d]) % tpw[d] for d in range(rank))
    warp = tuple((within[d] // (spt[d] * tpw[d])) % wpc[d] for d in range(rank))
    register = _linear(rep, reps, order) * math.prod(spt) + _linear(elem, spt, order)
    return _linear(warp, wpc, order), _linear(lane, tpw, order), register


def ownership_grid(layout_text: str, shape: tuple, aliases: dict | None = None,
                   max_rows: int = 16, max_cols: int = 64) -> list[list[tuple]]:
    """Owners (warp, lane, register) of the top-left `max_rows x max_cols` corner of a tensor.

    A 1-D tensor is drawn as one row. Raises ValueError for layouts other than blocked or a
    slice of a blocked layout (MMA and shared layouts are not drawn)."""
    aliases = aliases or {}
    layout_text = aliases.get(layout_text, layout_text)
    sliced_dim = None
    if "#ttg.slice" in layout_text:
        sliced_dim = int(re.search(r"dim\s*=\s*(\d+)", layout_text).group(1))
        parent = re.search(r"parent\s*=\s*(#[\w.]+(?:<.*>)?)\s*}>", layout_text).group(1)
        layout_text = aliases.get(parent, parent)
    if "#ttg.blocked" not in layout_text:
        raise ValueError("the ownership map draws blocked layouts and slices of them only")
    layout = parse_blocked(layout_text)
    full_shape = tuple(shape)
    if sliced_dim is not None:
        full_shape = full_shape[:sliced_dim] + (1,) + full_shape[sliced_dim:]
    if len(full_shape) != len(layout.order):
        raise ValueError(f"tensor rank {len(shape)} does not match the layout's rank")
    rows_dim = 0 if len(shape) > 1 else None
    rows = min(max_rows, shape[0]) if rows_dim is not None else 1
    cols = min(max_cols, shape[-1])
    grid = []
    for r in range(rows):
        row = []
        for c in range(cols):
            coord = (r, c) if len(shape) > 1 else (c,)
            if sliced_dim is not None:
                coord = coord[:sliced_dim] + (0,) + coord[sliced_dim:]
            row.append(blocked_owner(layout, full_shape, coord))
        grid.append(row)
    return grid


def tensor_shape(type_text: str) -> tuple | None:
    """The shape of the first `tensor<AxBx...>` in a type text, or None."""
    match = re.search(r"tensor<((?:\d+x)+)", type_text)
    if not match:
        return None
    return tuple(int(v) for v in match.group(1).rstrip("x").split("x"))
