"""Lowering of the region-record ops (`tt.profile_enter` / `tt.profile_exit`) and the layout
of the profile buffer they write, which the host side (`compiler.profiler.regions`) decodes.

The buffer's layout (constants in `compiler.analysis.profile_regions`, which the host side
reads too). The kernel finds the buffer through the global `PROFILE_GLOBAL` (a u64 holding its device
address, set by the profiler's launcher with `cuModuleGetGlobal`; 0 means "no buffer", and
then nothing is stored). Each warp of each program owns one block of `block_words(slots)`
u64 words: `HEADER_WORDS` of header (word 0: how many records the warp made, stored or not)
and `slots` records of `RECORD_WORDS`: the tag (region | kind << 32 | warp << 40), the
program's linear id, `%globaltimer` (ns) and `%clock64` (cycles). Every lane reads the clocks
and counts the warp's records in a register; lane 0 stores, so a record costs two
special-register reads and five stores, and a record past `slots` is counted, never stored.
Without the `instrument-regions` pass's `tt.profile.slots` module attribute the ops lower to
nothing (user scopes cost nothing unless the kernel is instrumented).
"""
from __future__ import annotations

from llvmlite import ir

from compiler.analysis.profile_regions import (HEADER_WORDS, KIND_SHIFT, PROFILE_GLOBAL,
                                               RECORD_WORDS, SLOTS_ATTR, WARP_SHIFT,
                                               block_words)
from compiler.dialects import tt

from .llvm_helpers import GLOBAL_PTR, I32, I64, inline_ptx, special_register
from .registry import lowers

class _WarpState:
    """What the kernel computes once (in the entry block) for its records: this warp's block
    address, whether this thread stores (lane 0, buffer set), its tag bits and the program
    id, and the register counting its records."""

    def __init__(self, ctx, slots: int):
        b = ctx.prologue
        self.slots = slots
        buffer = ir.GlobalVariable(ctx.module, I64, PROFILE_GLOBAL, addrspace=1)
        buffer.initializer = ir.Constant(I64, 0)
        buffer.align = 8
        address = b.load(buffer)
        tid = special_register(b, "tid.x")
        lane = b.and_(tid, ir.Constant(I32, 31))
        warp = b.lshr(tid, ir.Constant(I32, 5))
        x, y, z = (special_register(b, f"ctaid.{a}") for a in "xyz")
        nx, ny = (special_register(b, f"nctaid.{a}") for a in "xy")
        program = b.add(x, b.mul(nx, b.add(y, b.mul(ny, z))))
        self.program = b.zext(program, I64)
        self.warp_tag = b.shl(b.zext(warp, I64), ir.Constant(I64, WARP_SHIFT))
        slot = b.add(b.mul(self.program, ir.Constant(I64, ctx.num_warps)), b.zext(warp, I64))
        self.base = b.add(address, b.mul(slot, ir.Constant(I64, 8 * block_words(slots))))
        self.stores = b.and_(b.icmp_unsigned("==", lane, ir.Constant(I32, 0)),
                             b.icmp_unsigned("!=", address, ir.Constant(I64, 0)))
        self.count = b.alloca(I32, name="profile_count")
        b.store(ir.Constant(I32, 0), self.count)

    def word(self, b, index):
        """A global pointer to u64 word `index` (an i64 value) of this warp's block."""
        address = b.add(self.base, b.mul(index, ir.Constant(I64, 8)))
        return b.inttoptr(address, GLOBAL_PTR)


def _state(ctx):
    """The kernel's `_WarpState` (made at its first record), or None when the module was not
    instrumented."""
    state = getattr(ctx, "profile_state", None)
    if state is None:
        slots = getattr(ctx, "ir_attributes", {}).get(SLOTS_ATTR)
        if slots is None:
            return None
        state = ctx.profile_state = _WarpState(ctx, slots.value)
    return state


@lowers(tt.ProfileEnterOp, tt.ProfileExitOp)
def lower_profile_record(ctx, op):
    """One record (see the module doc): clocks read by every lane, stored by lane 0."""
    state = _state(ctx)
    if state is None:
        return
    b = ctx.builder
    # %clock64 closest to the region: read last on entry, first on exit
    if op.kind == 0:
        timer = inline_ptx(b, I64, "mov.u64 $0, %globaltimer;", "=l", [])
        cycles = inline_ptx(b, I64, "mov.u64 $0, %clock64;", "=l", [])
    else:
        cycles = inline_ptx(b, I64, "mov.u64 $0, %clock64;", "=l", [])
        timer = inline_ptx(b, I64, "mov.u64 $0, %globaltimer;", "=l", [])
    tag = b.or_(state.warp_tag, ir.Constant(I64, op.region | op.kind << KIND_SHIFT))
    count = b.load(state.count)                   # every lane counts; lane 0 stores
    after = b.add(count, ir.Constant(I32, 1))
    b.store(after, state.count)
    room = b.icmp_unsigned("<", count, ir.Constant(I32, state.slots))
    with b.if_then(b.and_(state.stores, room)):
        first = b.add(ir.Constant(I64, HEADER_WORDS),
                      b.mul(b.zext(count, I64), ir.Constant(I64, RECORD_WORDS)))
        for offset, value in enumerate((tag, state.program, timer, cycles)):
            b.store(value, state.word(b, b.add(first, ir.Constant(I64, offset))))
    with b.if_then(state.stores):
        b.store(b.zext(after, I64), state.word(b, ir.Constant(I64, 0)))
