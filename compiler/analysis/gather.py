"""Where a warp-local `tt.gather` finds each result element: the shuffle plan that the
lowering emits, and that shared-memory allocation and optimize-thread-locality read to know
that a gather needs no shared memory."""
from __future__ import annotations

from dataclasses import dataclass

from compiler.analysis.layout_to_linear import LayoutConversionError, to_linear_layout
from compiler.analysis.linear_layout import LinearLayout


@dataclass(frozen=True)
class WarpGatherPlan:
    """Where each result register finds its source element, as GF(2)-linear pieces: result
    register r reads source register `reg_const[r]` XOR (the index's contribution) from lane
    `lane_const[r]` XOR `thread_lanes(lane, warp)` XOR (the index's contribution). Index bit k
    adds `axis_regs[k]` to the register and `axis_lanes[k]` to the lane; `reg_span` is every
    register the index can add (so the candidates a result register shuffles from)."""

    reg_const: tuple
    lane_const: tuple
    thread_lanes: LinearLayout        # (lane, warp) -> the source lane's thread-dependent part
    axis_regs: tuple
    axis_lanes: tuple
    reg_span: tuple


def _span(vectors) -> tuple:
    """Every XOR combination of `vectors` (ints), 0 included, each once."""
    out = {0}
    for v in vectors:
        out |= {x ^ v for x in out}
    return tuple(sorted(out))


def warp_local_plan(src_t, out_t, axis: int) -> WarpGatherPlan | None:
    """The shuffle plan of a gather of `src_t` into `out_t` along `axis`, or None when some
    source element a thread may need is held by another warp (or twice, or by no one): the
    source layout must be a bijection, and the warp bits of the source position a result
    element needs must be the thread's own warp bits whatever the index."""
    try:
        src = to_linear_layout(src_t.encoding, src_t.shape)
        out = to_linear_layout(out_t.encoding, out_t.shape)
    except LayoutConversionError:
        return None
    if src.bases("block") or out.bases("block") or not src.is_invertible():
        return None
    inv = src.invert()                 # coordinates -> (register, lane, warp, block)
    dims = src.out_dims

    def locate(coords) -> tuple:
        """(register, lane, warp) of the source element at `coords`."""
        where = inv.apply(dict(zip(dims, coords)))
        return where["register"], where["lane"], where["warp"]

    def off_axis(vec) -> tuple:
        return tuple(0 if d == axis else v for d, v in enumerate(vec))

    axis_regs, axis_lanes = [], []
    for k in range(src_t.shape[axis].bit_length() - 1):
        reg, lane, warp = locate(tuple(1 << k if d == axis else 0 for d in range(len(dims))))
        if warp:
            return None
        axis_regs.append(reg)
        axis_lanes.append(lane)
    thread_bases = {}
    for in_dim in ("lane", "warp"):
        lanes = []
        for i, vec in enumerate(out.bases(in_dim)):
            reg, lane, warp = locate(off_axis(vec))
            if reg or warp != (1 << i if in_dim == "warp" else 0):
                return None            # the register would depend on the thread, or the warp
            lanes.append((lane,))
        thread_bases[in_dim] = lanes
    reg_const, lane_const = [], []
    for r in range(out.in_dim_size("register")):
        reg, lane, warp = locate(off_axis(out.apply_tuple(register=r)))
        if warp:
            return None
        reg_const.append(reg)
        lane_const.append(lane)
    thread_lanes = LinearLayout(thread_bases, {"lane": 32})
    return WarpGatherPlan(tuple(reg_const), tuple(lane_const), thread_lanes, tuple(axis_regs),
                          tuple(axis_lanes), _span(axis_regs))
