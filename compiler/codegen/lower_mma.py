"""`tt.dot` on tensor cores: `mma.sync.aligned` (Triton's MMA v2): m16n8k16 for f16/bf16, with
operands read from shared memory by `ldmatrix` (compiler.codegen.matrix_memory); m16n8k8 tf32
and m16n8k32 s8 (int8, accumulating in s32 with `.satfinite`), whose operands are read from
their shared buffers by ordinary (vector) loads from the linear layouts. With the
`tf32_ldmatrix` option (on by default since the H200 verified it), a tf32 operand whose K is its
buffer's contiguous dim (A row-major, B column-major) is read by plain ldmatrix instead: an
8x8 b16 matrix is 8 rows of 4 tf32 words, lane l receiving word (l / 4, l % 4), which is the
m16n8k8 fragment's (groupID, threadID_in_group); one x4 is an A fragment (a0..a3: rows 0-7 /
8-15 by K words 0-3 / 4-7), or the B fragments of two N tiles.

Register layouts follow `compiler.analysis.layouts` (the PTX ISA's fragments; kWidth = 32 /
operand bits elements per register, K = 8 kWidth). Every form takes A as 4 words, B as 2 and
the accumulator as 4 registers. An operand staged in shared memory (`ttg.local_load` whose only
users are dots) is not loaded up front: the dot reads it one K step (8 kWidth elements) at a
time, so only one step's A and B fragments are live beside the accumulators. Each `ldmatrix.x4` moves four 8x8 b16 matrices; the 8 lanes
of matrix q give its row addresses. A matrix whose rows run along K in shared memory (K is the
buffer's contiguous dim) is read as is; otherwise `.trans` hands each thread the same fragment.
"""
from __future__ import annotations

from llvmlite import ir

from compiler.analysis import layouts
from compiler.ir.types import FloatType

from .llvm_helpers import F16, inline_ptx, pack_words, unpack_words
from .lower_convert import read_buffer_registers
from .lowering import LoweringError
from .matrix_memory import ldmatrix_registers, matrix_mode, word_matrix_fits

I32 = ir.IntType(32)
F32 = ir.FloatType()
#: operand element type -> (instruction shape and types of the f32/s32 accumulator form,
#: the accumulator's inline-asm constraint)
MMA_FORMS = {"f16": ("m16n8k16.row.col.f32.f16.f16.f32", "f"),
             "bf16": ("m16n8k16.row.col.f32.bf16.bf16.f32", "f"),
             "f32": ("m16n8k8.row.col.f32.tf32.tf32.f32", "f"),
             "i8": ("m16n8k32.row.col.satfinite.s32.s8.s8.s32", "r")}


def _k_dim(operand_layout) -> int:
    return 1 if operand_layout.op_idx == 0 else 0


class _Operand:
    """One dot operand: registers already lowered, or a shared buffer read per K step."""

    def __init__(self, ctx, value):
        self.ctx = ctx
        self.type = value.type
        self.reps = layouts.mma_repetitions(value.type.encoding, tuple(value.type.shape))
        k_width = value.type.encoding.k_width or layouts.F16_K_WIDTH
        # 4 words of A, 2 of B per instruction, kWidth elements each
        self.per_tile = (4 if value.type.encoding.op_idx == 0 else 2) * k_width
        producer = value.owner_op
        self.base = ctx.shared_sources.get(value)
        if self.base is not None:
            self.shared_layout = producer.operands[0].type.encoding
            self.by_ldmatrix = _by_ldmatrix(ctx, self.shared_layout, self.type)
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
        if not self.by_ldmatrix:
            return read_buffer_registers(self.ctx, self.base, self.type, self.shared_layout,
                                         indices)
        values = ldmatrix_registers(self.ctx, self.base, self.shared_layout, self.type, indices)
        return dict(zip(indices, values))


def _by_ldmatrix(ctx, shared_layout, operand_type) -> bool:
    """Whether an operand in a buffer of `shared_layout` is read by ldmatrix: 16-bit matrices
    (`matrix_mode`), or tf32 words where the `tf32_ldmatrix` option is on and the buffer
    allows (`word_matrix_fits`); else by vector loads."""
    if matrix_mode(shared_layout, operand_type) is not None:
        return True
    element = operand_type.element
    return ctx.tf32_ldmatrix and isinstance(element, FloatType) and element.kind == "f32" and \
        word_matrix_fits(shared_layout, operand_type)


def _mma(builder, element: str, a_words: list, b_words: list, acc: list) -> list:
    """One `mma.sync.aligned` of the operand type `element` (`MMA_FORMS`) with an f32 or s32
    accumulator, or m16n8k16's f16 accumulator form (`.f16.f16.f16.f16`: the four accumulator
    halves travel as two f16x2 words, c0/c1 and c2/c3, the same elements as the f32 form's
    four registers)."""
    if acc[0].type == F16:
        asm = ("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 "
               "{$0, $1}, {$2, $3, $4, $5}, {$6, $7}, {$8, $9};")
        constraints = ",".join(["=r"] * 2 + ["r"] * 8)
        words = pack_words(builder, acc, 32)
        result = inline_ptx(builder, ir.LiteralStructType([I32] * 2), asm, constraints,
                            a_words + b_words + words, side_effect=False)
        return unpack_words(builder, [builder.extract_value(result, i) for i in range(2)],
                            F16, 4)
    form, acc_constraint = MMA_FORMS[element]
    asm = (f"mma.sync.aligned.{form} "
           "{$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};")
    constraints = ",".join([f"={acc_constraint}"] * 4 + ["r"] * 6 + [acc_constraint] * 4)
    ret = ir.LiteralStructType([acc[0].type] * 4)
    result = inline_ptx(builder, ret, asm, constraints, a_words + b_words + acc,
                        side_effect=False)
    return [builder.extract_value(result, i) for i in range(4)]


def _form_problem(a, bv, c) -> str | None:
    """Why the dot's types and operand layouts have no mma.sync form here, or None: operands of
    one type of `MMA_V2_OPERANDS` in that type's kWidth (32 bits a register), an accumulator
    type its form writes."""
    element = str(a.type.element)
    if element not in MMA_FORMS or str(bv.type.element) != element:
        return (f"mma.sync takes f16, bf16, f32 (tf32) or i8 operands of one type, not "
                f"{a.type.element} x {bv.type.element}")
    want = layouts.MMA_V2_OPERANDS[element][0]
    for v in (a, bv):
        k_width = v.type.encoding.k_width or layouts.F16_K_WIDTH
        if k_width != want:
            return f"a {element} operand of mma.sync needs kWidth = {want}, not {k_width}"
    acc = str(c.type.element)
    allowed = layouts.MMA_V2_OPERANDS[element][1]
    if acc not in allowed:
        return f"mma.sync with {element} operands accumulates in {' or '.join(allowed)}, not {acc}"
    return None


def lower_mma_dot(ctx, op) -> None:
    """`tt.dot` with a #ttg.nvidia_mma v2 accumulator: per K step, the step's A and B fragments,
    then one mma.sync per (M, N) instruction tile of the warp."""
    a, bv, c = op.operands
    problem = _form_problem(a, bv, c)
    if problem:
        raise LoweringError(f"tt.dot on mma.sync cannot be lowered: {problem}")
    b = ctx.builder
    element = str(a.type.element)
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
