"""Thread ownership of a distributed layout: which warp, lane and register holds each element.

Blocked layouts and slices of them are computed here from the layout *text* the trace holds (the
explorer reads traces, not compiler objects); the tests check that this agrees with
`compiler.analysis.layouts`, the compiler's own model of the same rules. Tensor-core layouts
(`#ttg.nvidia_mma`, `#ttg.dot_op`) follow the PTX ISA's fragment tables, which that module
already encodes, so for them the layout text is parsed with `compiler.ir.parser` and the
compiler's model is asked (imported lazily: without the compiler they are simply not drawn).
Shared-memory layouts have no owning thread; `shared_description` says what they are instead.
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


class NotDrawable(ValueError):
    """A layout the ownership map cannot draw; the message says why (or what the layout is)."""


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


def _compiler_encoding(layout_text: str, aliases: dict):
    """The compiler's encoding object for a layout text (aliases resolved), or None when the
    compiler's parser is not available."""
    try:
        from compiler.dialects import ttg  # noqa: F401  (registers the layout parsers)
        from compiler.ir.parser import ParseError, Parser
    except ImportError:
        return None
    known: dict = {}
    for name, definition in aliases.items():      # definitions come parents first
        alias_parser = Parser(definition)
        alias_parser.layout_aliases = known
        try:
            known[name] = alias_parser.encoding_ref()
        except (ParseError, KeyError):
            continue                               # a layout the compiler does not know
    parser = Parser(layout_text)
    parser.layout_aliases = known
    try:
        return parser.encoding_ref()
    except (ParseError, KeyError) as error:
        raise NotDrawable(f"the compiler cannot read this layout ({error})") from None


def _mma_owner_function(layout_text: str, aliases: dict, shape: tuple):
    """A function coord -> (warp, lane, register) for an mma-family layout, using the
    compiler's layout model, or None when the compiler is not available."""
    try:
        from compiler.analysis import layouts
        from compiler.dialects.ttg import DotOperandEncoding
    except ImportError:
        return None
    encoding = _compiler_encoding(layout_text, aliases)
    if encoding is None:
        return None
    if not (layouts.is_mma_family(encoding) or isinstance(encoding, DotOperandEncoding)):
        raise NotDrawable(f"{encoding} is not an mma v2 layout or a dot operand")
    try:
        owners = layouts.element_owners(encoding, tuple(shape))
    except NotImplementedError as error:
        raise NotDrawable(str(error)) from None
    return lambda coord: min(owners[coord])


def ownership_grid(layout_text: str, shape: tuple, aliases: dict | None = None,
                   max_rows: int = 16, max_cols: int = 64) -> list[list[tuple]]:
    """Owners (warp, lane, register) of the top-left `max_rows x max_cols` corner of a tensor.

    A 1-D tensor is drawn as one row. Blocked layouts, slices of them, and (with the compiler
    present) mma v2 accumulators and their dot operands are drawn; others raise NotDrawable (a
    ValueError), whose message for a shared layout is its `shared_description`."""
    aliases = aliases or {}
    layout_text = aliases.get(layout_text, layout_text)
    if "#ttg.swizzled_shared" in layout_text or "#ttg.nvmma_shared" in layout_text:
        raise NotDrawable(shared_description(layout_text))
    if "#ttg.nvidia_mma" in layout_text or "#ttg.dot_op" in layout_text:
        owner = _mma_owner_function(layout_text, aliases, shape)
        if owner is None:
            raise NotDrawable("drawing tensor-core layouts needs the compiler's layout model")
        return _grid(owner, shape, max_rows, max_cols)
    sliced_dim = None
    if "#ttg.slice" in layout_text:
        sliced_dim = int(re.search(r"dim\s*=\s*(\d+)", layout_text).group(1))
        parent = re.search(r"parent\s*=\s*(#[\w.]+(?:<.*>)?)\s*}>", layout_text).group(1)
        layout_text = aliases.get(parent, parent)
    if "#ttg.blocked" not in layout_text:
        raise NotDrawable("the ownership map draws blocked, mma and dot_op layouts and slices "
                          "of blocked layouts only")
    layout = parse_blocked(layout_text)
    full_shape = tuple(shape)
    if sliced_dim is not None:
        full_shape = full_shape[:sliced_dim] + (1,) + full_shape[sliced_dim:]
    if len(full_shape) != len(layout.order):
        raise ValueError(f"tensor rank {len(shape)} does not match the layout's rank")

    def owner(coord: tuple) -> tuple:
        if sliced_dim is not None:
            coord = coord[:sliced_dim] + (0,) + coord[sliced_dim:]
        return blocked_owner(layout, full_shape, coord)

    return _grid(owner, shape, max_rows, max_cols)


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
