"""A layout's map, as the explorer draws it: for a distributed layout which warp, lane and
register holds each element; for a shared layout each element's offset and bank; for both the
bases of the linear layout as a table (as the figures of the linear-layouts paper show them).

The maps come from the compiler's linear layouts through the door (`compiler.inspect.
describe_layout`), for every encoding it converts (blocked, slices, mma v2 and v3, dot operands,
`#ttg.linear`, swizzled and nvmma shared). `shared_description` says in words what a shared
layout does, from the layout text the trace holds (the one place the explorer reads a layout's
fields).
"""
from __future__ import annotations

import re

from compiler.inspect import NotDrawable, describe_layout

_LIST_FIELD = r"{name}\s*=\s*\[([\d,\s]*)\]"


def _field(text: str, name: str) -> tuple:
    match = re.search(_LIST_FIELD.format(name=name), text)
    if not match:
        raise ValueError(f"layout has no {name}: {text}")
    return tuple(int(v) for v in match.group(1).split(",") if v.strip())


def shared_description(layout_text: str) -> str:
    """One line saying what a shared-memory layout (`#ttg.swizzled_shared`, or Hopper's
    `#ttg.nvmma_shared`) does; no thread owns its elements."""
    if "#ttg.nvmma_shared" in layout_text:
        width = re.search(r"swizzlingByteWidth\s*=\s*(\d+)", layout_text)
        swizzle = f"{width.group(1)}-byte swizzle" if width else "swizzled"
        return (f"shared memory in the NVMMA layout ({swizzle}) that wgmma and TMA read: "
                "no thread owns its elements")
    fields = {name: int(value) for name, value in
              re.findall(r"(vec|perPhase|maxPhase)\s*=\s*(\d+)", layout_text)}
    order = _field(layout_text, "order")
    vec, per_phase, max_phase = (fields.get("vec", 1), fields.get("perPhase", 1),
                                 fields.get("maxPhase", 1))
    where = f"shared memory, dim {order[0]} contiguous (order {list(order)})"
    if max_phase <= 1:
        return f"{where}, not swizzled; no thread owns its elements"
    return (f"{where}; {vec}-element groups XOR-swizzled over {max_phase} phases "
            f"({per_phase} row(s) a phase) against bank conflicts; no thread owns its elements")


def ownership_grid(layout_text: str, shape: tuple, aliases: dict | None = None,
                   max_rows: int = 16, max_cols: int = 64) -> list[list[tuple]]:
    """Owners (warp, lane, register) of the top-left `max_rows x max_cols` corner of a tensor
    (the lowest-numbered owner where several threads hold an element).

    A 1-D tensor is drawn as one row. Layouts the compiler's model cannot map raise
    NotDrawable (a ValueError), whose message for a shared layout is its `shared_description`."""
    aliases = aliases or {}
    full_text = aliases.get(layout_text, layout_text)
    if is_shared(full_text):
        raise NotDrawable(shared_description(full_text))
    return owner_grid(describe_layout(layout_text, tuple(shape), aliases), max_rows, max_cols)


def is_shared(layout_text: str) -> bool:
    """Whether a (full) layout text is a shared-memory layout."""
    return "#ttg.swizzled_shared" in layout_text or "#ttg.nvmma_shared" in layout_text


def owner_grid(description, max_rows: int = 16, max_cols: int = 64) -> list[list[tuple]]:
    """(warp, lane, register) of the top-left corner of a distributed layout's description
    (the lowest-numbered owner where several threads hold an element)."""
    owners = description.owners
    return _grid(lambda coord: min(owners[coord]), description.shape, max_rows, max_cols)


def shared_grid(description, max_rows: int = 16, max_cols: int = 64) -> list[list[tuple]]:
    """(offset, bank) of the top-left corner of a shared layout's description."""
    return _grid(lambda coord: (description.offsets[coord], description.banks[coord]),
                 description.shape, max_rows, max_cols)


def element_bits(type_text: str) -> int | None:
    """The element width in bits of a `tensor<...xf16, ...>` or memdesc type text, or None."""
    match = re.search(r"(?:tensor|memdesc)<(?:\d+x)+([a-z]+)(\d+)", type_text)
    return int(match.group(2)) if match else None


def _grid(owner, shape: tuple, max_rows: int, max_cols: int) -> list[list[tuple]]:
    """`owner(coord)` over the top-left corner of a tensor (a 1-D tensor is one row)."""
    rows = min(max_rows, shape[0]) if len(shape) > 1 else 1
    cols = min(max_cols, shape[-1])
    return [[owner((r, c) if len(shape) > 1 else (c,)) for c in range(cols)]
            for r in range(rows)]


def tensor_shape(type_text: str) -> tuple | None:
    """The shape of the first `tensor<AxBx...>` (or shared `!ttg.memdesc<AxBx...>`) in a type
    text, or None."""
    match = re.search(r"(?:tensor|memdesc)<((?:\d+x)+)", type_text)
    if not match:
        return None
    return tuple(int(v) for v in match.group(1).rstrip("x").split("x"))
