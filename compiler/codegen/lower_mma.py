"""`tt.dot` on tensor cores: `mma.sync.aligned.m16n8k16` (Triton's MMA v2) with operands read
from shared memory by `ldmatrix` (compiler.codegen.matrix_memory).

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

from .llvm_helpers import F16, inline_ptx, pack_words, unpack_words
from .matrix_memory import ldmatrix_registers

I32 = ir.IntType(32)
F32 = ir.FloatType()
MMA_TYPES = {"f16": "f16", "bf16": "bf16"}


def _k_dim(operand_layout) -> int:
    return 1 if operand_layout.op_idx == 0 else 0


class _Operand:
    """One dot operand: registers already lowered, or a shared buffer read per K step."""

    def __init__(self, ctx, value):
        self.ctx = ctx
        self.type = value.type
        self.reps = layouts.mma_repetitions(value.type.encoding, tuple(value.type.shape))
        self.per_tile = 8 if value.type.encoding.op_idx == 0 else 4
        producer = value.owner_op
        self.base = ctx.shared_sources.get(value)
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
    """One `mma.sync.aligned.m16n8k16.row.col.f32.{element}.{element}.f32`, or its f16
    accumulator form (`.f16.f16.f16.f16`: the four accumulator halves travel as two f16x2
    words, c0/c1 and c2/c3, the same elements as the f32 form's four registers)."""
    if acc[0].type == F16:
        asm = ("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 "
               "{$0, $1}, {$2, $3, $4, $5}, {$6, $7}, {$8, $9};")
        constraints = ",".join(["=r"] * 2 + ["r"] * 8)
        words = pack_words(builder, acc, 32)
        result = inline_ptx(builder, ir.LiteralStructType([I32] * 2), asm, constraints,
                            a_words + b_words + words, side_effect=False)
        return unpack_words(builder, [builder.extract_value(result, i) for i in range(2)],
                            F16, 4)
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
