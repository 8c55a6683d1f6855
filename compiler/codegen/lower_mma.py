"""`tt.dot` on tensor cores: `mma.sync.aligned.m16n8k16` (Triton's MMA v2) with operands read
from shared memory by `ldmatrix`.

Register layouts follow `compiler.analysis.layouts` (the PTX ISA's m16n8k16 fragments). An
operand staged in shared memory (`ttg.local_load` whose only users are dots) is not loaded up
front: the dot reads it one K step (16 elements) at a time, so only one step's A and B fragments
are live beside the accumulators. Each `ldmatrix.x4` moves four 8x8 b16 matrices; the 8 lanes
of matrix q give its row addresses. A matrix whose rows run along K in shared memory (K is the
buffer's contiguous dim) is read as is; otherwise `.trans` hands each thread the same fragment.
"""
from __future__ import annotations

from llvmlite import ir

from compiler.analysis import layouts
from compiler.analysis.bank_conflicts import offsets_layout
from compiler.analysis.layout_to_linear import to_linear_layout
from compiler.analysis.linear_layout import LinearLayout
from compiler.ir.types import TensorType

from .llvm_helpers import inline_ptx, llvm_type, pack_words, unpack_words

I32 = ir.IntType(32)
F32 = ir.FloatType()
MMA_TYPES = {"f16": "f16", "bf16": "bf16"}


def _k_dim(operand_layout) -> int:
    return 1 if operand_layout.op_idx == 0 else 0


def operand_offsets(shared_layout, operand_type: TensorType):
    """(register, lane, warp) -> element offset in the buffer of `shared_layout` of each
    register of a tensor of `operand_type`: the map ldmatrix's addresses come from."""
    from .lower_convert import buffer_layout
    regs = to_linear_layout(operand_type.encoding, operand_type.shape)
    return offsets_layout(regs, buffer_layout(shared_layout, operand_type.shape))


def ldmatrix_mode(shared_layout, operand_type: TensorType):
    """How `ldmatrix` reads a tensor of `operand_type` (16-bit, any layout) from a buffer of
    `shared_layout`, from the offsets map: False (plain) when each thread's register pair, lanes
    0-1 and lanes 2-4 are the 8x8 matrix's (column pair, column, row) and every other basis
    moves whole 16-byte rows; True (`.trans`) when lanes 2-4 are its columns and (register
    bit 0, lanes 0-1) its rows; None when neither holds (then the registers are loaded one
    vector at a time). A swizzle whose `vec` is below 8 elements leaves no 16-byte rows:
    ldmatrix there would read at 8-byte-aligned addresses ("misaligned address")."""
    if operand_type.element.width != 16 or operand_type.rank != 2:
        return None
    offsets = operand_offsets(shared_layout, operand_type)
    regs = [v[0] for v in offsets.bases("register")]
    lanes = [v[0] for v in offsets.bases("lane")]
    warps = [v[0] for v in offsets.bases("warp")] if "warp" in offsets.in_dims else []
    if len(regs) < 1 or len(lanes) != 5:
        return None
    for trans, row_bases, rest in ((False, [regs[0], lanes[0], lanes[1]], regs[1:] + lanes[2:]),
                                   (True, lanes[2:], regs + lanes[:2])):
        if row_bases == [1, 2, 4] and all(v % 8 == 0 for v in rest + warps):
            return trans
    return None


def _ldmatrix(ctx, address, count: int, trans: bool) -> list:
    """One `ldmatrix.sync.aligned.m8n8.x{count}[.trans].shared.b16`: `count` i32 words."""
    outs = ", ".join(f"${i}" for i in range(count))
    asm = (f"ldmatrix.sync.aligned.m8n8.x{count}{'.trans' if trans else ''}.shared.b16 "
           f"{{{outs}}}, [${count}];")
    ret = I32 if count == 1 else ir.LiteralStructType([I32] * count)
    result = inline_ptx(ctx.builder, ret, asm, ",".join(["=r"] * count + ["r"]), [address])
    if count == 1:
        return [result]
    return [ctx.builder.extract_value(result, i) for i in range(count)]


def _group_size(slot_indices: list, start: int) -> int:
    """How many matrices (register pairs) one ldmatrix reads from `start`: 4, 2 or 1, the
    largest whose registers run on consecutively from an aligned first one."""
    first = slot_indices[start]
    for count in (4, 2, 1):
        want = list(range(first, first + 2 * count))
        if first % (2 * count) == 0 and slot_indices[start:start + 2 * count] == want:
            return count
    raise ValueError(f"register {first} does not start an ldmatrix pair")


def _row_addresses(offsets, trans: bool, count: int):
    """(lane, warp) -> offset of the row that lane 8q + i gives ldmatrix: matrix q is register
    pair q of the group (register bits 1-2); row i is held, at column 0, by lane 4i (plain)
    or by register bit 0 and lanes 0-1 (`.trans`). Lanes past the group's rows give none."""
    regs = [v[0] for v in offsets.bases("register")]
    lanes = [v[0] for v in offsets.bases("lane")]
    rows = lanes[2:5] if not trans else [regs[0], lanes[0], lanes[1]]
    matrices = [regs[k] if k < len(regs) else 0 for k in (1, 2)][:count.bit_length() - 1]
    lane_bases = rows + matrices + [0] * (2 - len(matrices))
    bases = {"lane": lane_bases}
    if "warp" in offsets.in_dims:
        bases["warp"] = [v[0] for v in offsets.bases("warp")]
    return LinearLayout(bases, {"offset": offsets.out_dim_size("offset")})


def ldmatrix_registers(ctx, base, shared_layout, operand_type: TensorType,
                       slot_indices: list) -> list:
    """The registers `slot_indices` (aligned runs of register pairs, in register order) of a
    tensor of `operand_type` read from the shared buffer at `base` by ldmatrix (the buffer
    must pass `ldmatrix_mode`). Every address comes from the offsets map: the lane's row, the
    warp's part, and the group's first register as a constant."""
    from .lower_convert import xor_const
    b = ctx.builder
    offsets = operand_offsets(shared_layout, operand_type)
    trans = ldmatrix_mode(shared_layout, operand_type)
    elem_ty = llvm_type(operand_type)
    values = []
    start = 0
    while start < len(slot_indices):
        count = _group_size(slot_indices, start)
        term = ctx.indexer.thread_term(_row_addresses(offsets, trans, count))
        first = offsets.apply(register=slot_indices[start])["offset"]
        address = b.gep(base, [xor_const(b, term, first)], source_etype=elem_ty)
        for word in _ldmatrix(ctx, address, count, trans):
            values += unpack_words(b, [word], elem_ty, 2)
        start += 2 * count
    return values


def load_mma_operand(ctx, base, shared_layout, operand_type: TensorType) -> list:
    """`ttg.local_load` into a tensor-core operand layout: every register, through ldmatrix
    (callers check `ldmatrix_mode` first)."""
    n = layouts.elements_per_thread(operand_type.encoding, tuple(operand_type.shape))
    return ldmatrix_registers(ctx, base, shared_layout, operand_type, list(range(n)))


class _Operand:
    """One dot operand: registers already lowered, or a shared buffer read per K step."""

    def __init__(self, ctx, value):
        self.ctx = ctx
        self.type = value.type
        self.reps = layouts.mma_repetitions(value.type.encoding, tuple(value.type.shape))
        self.per_tile = 8 if value.type.encoding.op_idx == 0 else 4
        producer = value.owner_op
        self.base = ctx.shared_sources.get(id(value))
        if self.base is not None:
            self.shared_layout = producer.operands[0].type.encoding
            self.registers = None
        else:
            self.registers = ctx.get(value)

    def tile_slots(self, other: int, rk: int) -> list:
        """Register indices of the instruction tile at (M or N repetition `other`, K step rk)."""
        if self.type.encoding.op_idx == 0:
            tile = other * self.reps[1] + rk
        else:
            tile = other * self.reps[0] + rk
        return list(range(tile * self.per_tile, (tile + 1) * self.per_tile))

    def step(self, rk: int) -> dict:
        """{register index: value} of every tile at K step `rk`."""
        count = self.reps[0] if self.type.encoding.op_idx == 0 else self.reps[1]
        indices = [i for other in range(count) for i in self.tile_slots(other, rk)]
        if self.registers is not None:
            return {i: self.registers[i] for i in indices}
        values = ldmatrix_registers(self.ctx, self.base, self.shared_layout, self.type, indices)
        return dict(zip(indices, values))


def _mma(builder, element: str, a_words: list, b_words: list, acc: list) -> list:
    """One `mma.sync.aligned.m16n8k16.row.col.f32.{element}.{element}.f32`."""
    asm = (f"mma.sync.aligned.m16n8k16.row.col.f32.{element}.{element}.f32 "
           "{$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};")
    constraints = ",".join(["=f"] * 4 + ["r"] * 6 + ["f"] * 4)
    ret = ir.LiteralStructType([F32] * 4)
    result = inline_ptx(builder, ret, asm, constraints, a_words + b_words + acc,
                        side_effect=False)
    return [builder.extract_value(result, i) for i in range(4)]


def lower_mma_dot(ctx, op) -> None:
    """`tt.dot` with a #ttg.nvidia_mma v2 accumulator: per K step, the step's A and B fragments,
    then one mma.sync per (M, N) instruction tile of the warp."""
    a, bv, c = op.operands
    b = ctx.builder
    element = MMA_TYPES[str(a.type.element)]
    acc = list(ctx.get(c))
    rep_m, rep_n = layouts.mma_repetitions(c.type.encoding, tuple(c.type.shape))
    a_op, b_op = _Operand(ctx, a), _Operand(ctx, bv)
    rep_k = a_op.reps[1]
    for rk in range(rep_k):
        a_regs, b_regs = a_op.step(rk), b_op.step(rk)
        a_words = {rm: pack_words(b, [a_regs[i] for i in a_op.tile_slots(rm, rk)], 32)
                   for rm in range(rep_m)}
        b_words = {rn: pack_words(b, [b_regs[i] for i in b_op.tile_slots(rn, rk)], 32)
                   for rn in range(rep_n)}
        for rm in range(rep_m):
            for rn in range(rep_n):
                first = (rm * rep_n + rn) * 4
                acc[first:first + 4] = _mma(b, element, a_words[rm], b_words[rn],
                                            acc[first:first + 4])
    ctx.set(op.results[0], acc)
