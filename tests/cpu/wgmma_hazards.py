"""A static check of pipelined loops for shared memory that a warp-group dot still reads while
the loop writes it (a write-after-read race that the interpreter, which completes every dot at
once, cannot see, and the H200 shows as wrong numbers).

The body is walked twice (iteration i, then i+1) with the wgmma groups in flight counted as the
hardware does: a dot commits one group; `warp_group_dot_wait {pendings = n}` leaves the newest n.
Each in-flight dot reads the bytes of the buffers its shared operands come from (a multi-buffer's
slot counts as the whole multi-buffer); every op of the body with an `allocation.offset` that
writes shared memory (a `ttg.local_alloc` of a register tile, a layout conversion's scratch)
must not touch them. The pipeliner's own slot refills (async copies into a slot) are not
checked there: tests/cpu/test_pipeline_*.py cover their order.

`unbarriered_async_copies` checks the emitted PTX for the other half: a `cp.async` has no
barrier of its own, so every shared read that comes before it in the program (another warp's
`ld.shared` of a conversion scratch whose bytes the copy's buffer reuses) must be separated from
it by a `bar.sync` (tutorial 06's dq: the prologue's first vT prefetch overwrote the `m`
scratch that other warps were still reading)."""
from __future__ import annotations

import re

from compiler.analysis.shared_memory import buffers
from compiler.dialects.scf import ForOp
from compiler.dialects.ttg import LocalAllocOp, MemDescIndexOp, MemDescType
from compiler.dialects.ttng import WarpGroupDotOp, WarpGroupDotWaitOp

ACCUMULATOR = 2


def _base_alloc(value):
    op = value.owner_op
    while isinstance(op, MemDescIndexOp):
        op = op.operands[0].owner_op
    return op if isinstance(op, LocalAllocOp) else None


def _writes_shared(op) -> bool:
    """An op of a loop body that writes its own statically placed shared bytes."""
    if "allocation.offset" not in op.attributes:
        return False
    return not (isinstance(op, LocalAllocOp) and not op.operands)


def wgmma_read_races(func) -> list[str]:
    """Every (dot, writer) pair of `func`'s loops where the writer overwrites bytes that the dot,
    still in flight, reads; as readable lines (empty: no race)."""
    placed = {b.op: (b.op.attributes["allocation.offset"].value, b.size)
              for b in buffers(func) if "allocation.offset" in b.op.attributes}

    def span(op):
        return placed.get(op)

    races = []
    for loop in (op for op in func.walk() if isinstance(op, ForOp)):
        in_flight = []          # (dot, [(start, size)]) oldest first
        for iteration in (0, 1):
            for op in loop.body.ops:
                if isinstance(op, WarpGroupDotOp):
                    reads = [span(_base_alloc(v)) for v in op.operands[:ACCUMULATOR]
                             if isinstance(v.type, MemDescType) and _base_alloc(v) in placed]
                    in_flight.append((op, reads))
                elif isinstance(op, WarpGroupDotWaitOp):
                    keep = op.pendings
                    in_flight = in_flight[len(in_flight) - keep:] if keep else []
                elif _writes_shared(op) and span(op) is not None:
                    start, size = span(op)
                    for dot, reads in in_flight:
                        if any(s < start + size and start < s + n for s, n in reads):
                            races.append(f"iteration {iteration}: {op.name} at {op.loc} writes "
                                         f"[{start}, {start + size}) while the dot at {dot.loc} "
                                         f"still reads it")
    return races


_SHARED_READ = re.compile(r"^\s*(@%p\d+\s+)?(ld\.shared|ldmatrix)")
_BARRIER = re.compile(r"^\s*(@%p\d+\s+)?bar\.sync")
_ASYNC_COPY = re.compile(r"^\s*(@%p\d+\s+)?cp\.async\.c[ag]\.shared")


def unbarriered_async_copies(ptx: str) -> list[str]:
    """Each `cp.async` of `ptx` whose nearest earlier shared read or CTA barrier, in program
    text order, is a shared read (no barrier between them: another warp may still be reading
    bytes the copy overwrites), as 'line N: ...' (empty: none). Conservative: addresses are
    not compared."""
    races = []
    last = None                 # (line number, text) of the latest read or barrier
    for number, line in enumerate(ptx.splitlines(), 1):
        if _SHARED_READ.match(line) or _BARRIER.match(line):
            last = (number, line.strip())
        elif _ASYNC_COPY.match(line) and last is not None and not _BARRIER.match(last[1]):
            races.append(f"line {number}: {line.strip()} follows line {last[0]}: {last[1]} "
                         f"with no bar.sync between")
    return races
