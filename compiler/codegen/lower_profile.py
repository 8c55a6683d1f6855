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

Volatile inline asm keeps its place only among other side effects; LLVM moves pure arithmetic
across it freely (a loop body's FMA chain, used only by the loop's phi, sinks into the latch
past the exit's clock read). So a record's operands are tied to its clock read with empty
volatile asms: an exit's values are used by one right before its `%clock64` read (they must
be computed first); an enter's values are passed through one ("+r"-style) right after its
`%clock64` read, and the region's ops read the passed-through registers until the matching
exit. The asms print nothing into the PTX; they cost no instruction, only freedom to move.
"""
from __future__ import annotations

from llvmlite import ir

from compiler.analysis.profile_regions import (HEADER_WORDS, KIND_SHIFT, PROFILE_GLOBAL,
                                               RECORD_WORDS, SLOTS_ATTR, WARP_SHIFT,
                                               block_words)
from compiler.dialects import tt

from .llvm_helpers import (GLOBAL_PTR, I32, I64, inline_ptx, linear_program_id,
                           special_register, type_bits)

#: Registers per tying asm (wide tensors and mma accumulators take several asms).
TIE_CHUNK = 32
#: The inline-asm register constraint for an integer word of each width.
_WORD_CONSTRAINT = {16: "h", 32: "r", 64: "l"}
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
        self.program = linear_program_id(b)
        self.warp_tag = b.shl(b.zext(warp, I64), ir.Constant(I64, WARP_SHIFT))
        slot = b.add(b.mul(self.program, ir.Constant(I64, ctx.num_warps)), b.zext(warp, I64))
        self.base = b.add(address, b.mul(slot, ir.Constant(I64, 8 * block_words(slots))))
        self.stores = b.and_(b.icmp_unsigned("==", lane, ir.Constant(I32, 0)),
                             b.icmp_unsigned("!=", address, ir.Constant(I64, 0)))
        self.count = b.alloca(I32, name="profile_count")
        b.store(ir.Constant(I32, 0), self.count)
        ctx.profile_ties = {}          # region id -> stack of registers from before its enter

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


def _word(b, value):
    """(an i16/i32/i64 holding `value`'s bits, a function making such a word `value`'s type
    again), or None for what needs no tie (a constant) or fits no register."""
    ty = value.type
    if isinstance(value, ir.Constant):
        return None
    if isinstance(ty, ir.PointerType):
        return b.ptrtoint(value, I64), lambda word: b.inttoptr(word, ty)
    if isinstance(ty, ir.IntType) and ty.width < 16:
        return b.zext(value, ir.IntType(16)), lambda word: b.trunc(word, ty)
    try:
        bits = (ty.count * type_bits(ty.element) if isinstance(ty, ir.VectorType)
                else type_bits(ty))
    except NotImplementedError:
        return None
    if bits not in _WORD_CONSTRAINT:
        return None
    if isinstance(ty, ir.IntType):
        return value, lambda word: word
    word_type = ir.IntType(bits)
    return b.bitcast(value, word_type), lambda word: b.bitcast(word, ty)


def _chunks(items: list) -> list:
    return [items[i:i + TIE_CHUNK] for i in range(0, len(items), TIE_CHUNK)]


def _use_before(b, registers: list) -> None:
    """Empty volatile asms reading `registers`: each must be computed before them."""
    words = [w[0] for w in (_word(b, r) for r in registers) if w is not None]
    for chunk in _chunks(words):
        constraints = ",".join(_WORD_CONSTRAINT[w.type.width] for w in chunk)
        inline_ptx(b, ir.VoidType(), "", constraints, chunk)


def _tie_after(b, registers: list) -> list:
    """`registers` passed through empty volatile asms (each output tied to its input, like
    a "+r" operand): whatever reads the results comes after the asms."""
    tied = list(registers)
    words = [(i, *w) for i, w in enumerate(_word(b, r) for r in registers) if w is not None]
    for chunk in _chunks(words):
        types = [w.type for _, w, _ in chunk]
        ret = types[0] if len(chunk) == 1 else ir.LiteralStructType(types)
        constraints = ",".join([f"={_WORD_CONSTRAINT[t.width]}" for t in types]
                               + [str(k) for k in range(len(chunk))])
        out = inline_ptx(b, ret, "", constraints, [w for _, w, _ in chunk])
        outs = [out] if len(chunk) == 1 else [b.extract_value(out, k) for k in range(len(chunk))]
        for (index, _, back), word in zip(chunk, outs):
            tied[index] = back(word)
    return tied


def _tie_inputs(ctx, op) -> None:
    """Re-define the enter's operands as tied registers, remembering the old ones for the
    exit that closes this region."""
    saved = []
    for value in op.operands:
        old = ctx.get(value)
        saved.append((value, old))
        ctx.set(value, _tie_after(ctx.builder, old))
    ctx.profile_ties.setdefault(op.region, []).append(saved)


def _untie_inputs(ctx, op) -> None:
    """Back to the registers from before the region's enter (its ties are defined only from
    there on, which a later user in another block may not be)."""
    stack = ctx.profile_ties.get(op.region)
    for value, old in (stack.pop() if stack else ()):
        ctx.set(value, old)


@lowers(tt.ProfileEnterOp, tt.ProfileExitOp)
def lower_profile_record(ctx, op):
    """One record (see the module doc): clocks read by every lane, stored by lane 0, the
    record's operands tied to its `%clock64` read."""
    state = _state(ctx)
    if state is None:
        return
    b = ctx.builder
    # %clock64 closest to the region: read last on entry, first on exit
    if op.kind == 0:
        timer = inline_ptx(b, I64, "mov.u64 $0, %globaltimer;", "=l", [])
        cycles = inline_ptx(b, I64, "mov.u64 $0, %clock64;", "=l", [])
        _tie_inputs(ctx, op)
    else:
        _use_before(b, [r for value in op.operands for r in ctx.get(value)])
        cycles = inline_ptx(b, I64, "mov.u64 $0, %clock64;", "=l", [])
        timer = inline_ptx(b, I64, "mov.u64 $0, %globaltimer;", "=l", [])
        _untie_inputs(ctx, op)
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
