"""Interpreter semantics of the region-record ops: a wall-clock record per program.

`interpret(..., region_records=list)` collects `(region, kind, warp, program, ns)` tuples
(warp is always 0: the interpreter runs a program as one piece; `ns` is the host's
`perf_counter_ns`, interpreter time, not GPU time). Without a list the ops do nothing.
"""
from __future__ import annotations

import time

from compiler.dialects import tt

from .registry import semantics


@semantics(tt.ProfileEnterOp, tt.ProfileExitOp)
def profile_record(ctx, op, values):
    """Append this program's record to the interpreter's region records, if it keeps any."""
    sink = ctx.region_records
    if sink is None:
        return None
    gx, gy, _ = ctx.grid
    x, y, z = ctx.pid
    sink.append((op.region, op.kind, 0, x + gx * (y + gy * z), time.perf_counter_ns()))
    return None
