"""`ttng.warp_group_dot` and `ttng.warp_group_dot_wait` on Hopper: `wgmma.mma_async`.

One warp group (4 warps, 128 threads) computes a 64 x N tile per instruction; the layout
`#ttg.nvidia_mma` v3 stacks the warps of a warp group along M (16 rows each) and repeats the
64 x N instruction tile over the CTA tile. For each repetition (M, N) and each K step the
lowering hands wgmma a 64-bit matrix descriptor per shared operand (`compiler.codegen.nvmma`:
start address of the sub-matrix, LBO/SBO strides and swizzle mode, all read off the
nvmma_shared layout) or, for a register A, four 32-bit words of the A fragment. Which
accumulator register is which fragment element comes from the accumulator's linear layout, so
the epilogue (stores, reductions, elementwise ops) reads the same registers through the generic
layout code. The sequence per dot is `wgmma.fence`, the mma_async instructions (chained on the
same accumulator registers), `wgmma.commit_group`; `ttng.warp_group_dot_wait {pendings = N}` is
`wgmma.wait_group N` with the accumulator registers passed through it, so nothing reads them
before the wait.
"""
from __future__ import annotations

from llvmlite import ir

from compiler.analysis.layout_to_linear import LANE, REGISTER, WARP, to_linear_layout
from compiler.dialects import ttng
from compiler.dialects.ttg import ConvertLayoutOp, MemDescType
from compiler.passes.ir_utils import is_constant
from compiler.ir.types import TensorType

from .llvm_helpers import (CONTRACT, I64, i32, inline_ptx, llvm_type, pack_words, type_bits,
                           unpack_words)
from .lowering import LoweringError
from .nvmma import emit_descriptor, emit_offset, offset_of
from .registry import lowers

I32 = ir.IntType(32)
F32 = ir.FloatType()
WARP_GROUP = 4
WGMMA_TYPES = {"f16": "f16", "bf16": "bf16", "f32": "tf32", "f8E4M3FN": "e4m3",
               "f8E5M2": "e5m2", "i8": "s8"}
#: the PTX type of each accumulator element type
WGMMA_ACC_TYPES = {"f32": "f32", "f16": "f16", "i32": "s32"}


def _thread_zero_coords(encoding, shape) -> list:
    """Per register, the (dim 0, dim 1) its element has in lane 0 of warp 0 (the register part
    of the linear layout; lanes and warps only add an offset)."""
    layout = to_linear_layout(encoding, tuple(shape))
    count = layout.in_dim_size(REGISTER)
    out = []
    for reg in range(count):
        found = layout.apply({REGISTER: reg, LANE: 0, WARP: 0})
        out.append(tuple(found[d] for d in layout.out_dims))
    return out


def fragment_registers(encoding, shape, tile: tuple, origin: tuple, k_major: bool = False,
                       per_word: int = 2):
    """The registers of one instruction fragment, in fragment order: the 8 x (4 per_word)
    pieces of the tile (`tile` rows x cols per warp, at `origin` relative to warp 0's first
    element) are numbered along the columns, and inside a piece (row r, col c) is element
    (r / 8) * per_word + c % per_word of its 2 per_word, as the PTX ISA lays out the wgmma
    accumulator and A fragments: per_word = 2 for 32-bit accumulators and 16-bit A (the
    mma.sync m16n8 fragment), 4 for an 8-bit A (each 32-bit word holds 4 elements along K)."""
    by_index = {}
    piece_cols = 4 * per_word
    for reg, (r, c) in enumerate(_thread_zero_coords(encoding, shape)):
        rr, cc = r - origin[0], c - origin[1]
        if 0 <= rr < tile[0] and 0 <= cc < tile[1]:
            by_index.setdefault((cc // piece_cols) * 2 * per_word + (rr // 8) * per_word
                                + cc % per_word, reg)
    expected = tile[0] * tile[1] // 32
    if sorted(by_index) != list(range(expected)):
        raise LoweringError(f"{encoding}: registers do not form a wgmma fragment at {origin}")
    return [by_index[i] for i in range(expected)]


class _SharedOperand:
    """A shared operand of a warp-group dot: its base pointer, layout and warp-group offset."""

    def __init__(self, ctx, value, op_idx: int, mma):
        self.t: MemDescType = value.type
        self.enc = self.t.encoding
        self.base = ctx.get(value)[0]
        self.op_idx = op_idx
        b = ctx.builder
        warp = ctx.indexer.warp()
        first = b.and_(warp, i32(~(WARP_GROUP - 1) & 0xFFFFFFFF))
        wm, wn = mma.warps_per_cta
        # the rows (A) or columns (B) of the first warp of this thread's warp group
        if op_idx == 0:
            self.group = b.mul(b.urem(first, i32(wm)), i32(mma.instr_shape[0]))
        else:
            self.group = b.mul(b.urem(b.udiv(first, i32(wm)), i32(wn)), i32(mma.instr_shape[1]))
        self.address = b.ptrtoint(self.base, I32)
        self.elem_bytes = self.t.element.width // 8
        self.groups = sorted({self._group_of(warp, mma) for warp in range(wm * wn)})
        self.first = None           # the descriptor of the warp group's first sub-matrix

    def _group_of(self, warp: int, mma) -> int:
        """`self.group` for one warp (as plain integers)."""
        wm, wn = mma.warps_per_cta
        first = warp & ~(WARP_GROUP - 1)
        if self.op_idx == 0:
            return first % wm * mma.instr_shape[0]
        return first // wm % wn * mma.instr_shape[1]

    def _coords(self, mn: int, k: int) -> tuple:
        return (mn, k) if self.op_idx == 0 else (k, mn)

    def _constant_step(self, outer: int, k: int) -> int | None:
        """Bytes from the first sub-matrix to the one at (`outer`, `k`) when that distance is
        the same for every warp group and a whole number of 16-byte units (then the
        descriptor is the first one plus a constant, as Triton builds them); else None."""
        steps = {offset_of(self.enc, self.t.shape, self._coords(g + outer, k)) -
                 offset_of(self.enc, self.t.shape, self._coords(g, 0)) for g in self.groups}
        if len(steps) != 1:
            return None
        step = steps.pop() * self.elem_bytes
        return step if step >= 0 and step % 16 == 0 else None

    @property
    def transposed(self) -> bool:
        """Whether wgmma must read it with its transpose bit (M/N contiguous, not K)."""
        return self.enc.transposed if self.op_idx == 0 else not self.enc.transposed

    def descriptor(self, ctx, outer: int, k: int):
        """Descriptor of the sub-matrix at M/N offset `outer` (plus the warp group's) and K
        offset `k`: the first sub-matrix's plus the start address step (bits 0-13 hold the
        address >> 4, and shared addresses stay below 2^18, so the add never carries out of
        the field) where the step is constant, else computed from the address."""
        step = self._constant_step(outer, k)
        if step is None:
            return self._computed(ctx, outer, k)
        if self.first is None:
            self.first = self._computed(ctx, 0, 0)
        if not step:
            return self.first
        return ctx.builder.add(self.first, ir.Constant(I64, step >> 4))

    def _computed(self, ctx, outer: int, k: int):
        """The descriptor computed from the sub-matrix's address."""
        b = ctx.builder
        mn = b.add(self.group, i32(outer)) if outer else self.group
        coords = [mn, i32(k)] if self.op_idx == 0 else [i32(k), mn]
        offset = emit_offset(b, self.enc, coords, self.t.shape)
        nbytes = b.mul(offset, i32(self.t.element.width // 8))
        return emit_descriptor(b, self.enc, self.t.shape, b.add(self.address, nbytes))


def _wgmma(builder, shape: tuple, types: tuple, acc: list, a_operand, b_desc, trans: tuple,
           acc_is_f16: bool, use_acc: bool = True):
    """One `wgmma.mma_async.sync.aligned.m64n{N}k{K}.{D}.{A}.{B}` on packed accumulator words
    `acc`; `a_operand` is a descriptor (i64) or four i32 words (register A). Without `use_acc`
    the instruction ignores the accumulator (scale-d false: D = A B), whose registers then go
    in undefined."""
    n, k = shape
    d_type, a_type, b_type = types
    count = len(acc)
    a_regs = a_operand if isinstance(a_operand, list) else [a_operand]
    first = count
    a_text = ("{" + ", ".join(f"${first + i}" for i in range(len(a_regs))) + "}"
              if len(a_regs) > 1 else f"${first}")
    b_index = first + len(a_regs)
    # integer wgmma has no scale-a/b (nor transpose) immediates
    immediates = "" if a_type == "s8" else ", 1, 1"
    if a_type in ("f16", "bf16"):
        immediates += (f", {int(trans[1])}" if len(a_regs) > 1 else
                       f", {int(trans[0])}, {int(trans[1])}")
    outs = ", ".join(f"${i}" for i in range(count))
    # scale-d is an immediate predicate (1: D = A B + D, 0: D = A B)
    asm = (f"wgmma.mma_async.sync.aligned.m64n{n}k{k}.{d_type}.{a_type}.{b_type} "
           f"{{{outs}}}, {a_text}, ${b_index}, {int(use_acc)}{immediates};")
    reg = "r" if acc_is_f16 or d_type == "s32" else "f"
    constraints = ([f"={reg}"] * count + ["r" if len(a_regs) > 1 else "l"] * len(a_regs) +
                   ["l"] + [str(i) for i in range(count)])
    ret = ir.LiteralStructType([acc[0].type] * count)
    if not use_acc:
        acc = [ir.Constant(acc[0].type, ir.Undefined)] * count
    args = a_regs + [b_desc] + acc
    result = inline_ptx(builder, ret, asm, ",".join(constraints), args)
    return [builder.extract_value(result, i) for i in range(count)]


def wait_group(builder, values: list, pendings: int) -> list:
    """`wgmma.wait_group.sync.aligned pendings` with `values` (registers) passed through it."""
    asm = f"wgmma.wait_group.sync.aligned {pendings};"
    if not values:
        inline_ptx(builder, ir.VoidType(), asm, "", [])
        return []
    letters = {16: "h", 32: "r", 64: "l"}
    kinds = ["f" if isinstance(v.type, ir.FloatType) else letters[type_bits(v.type)]
             for v in values]
    constraints = [f"={x}" for x in kinds] + [str(i) for i in range(len(values))]
    ret = ir.LiteralStructType([v.type for v in values])
    result = inline_ptx(builder, ret, asm, ",".join(constraints), values)
    return [builder.extract_value(result, i) for i in range(len(values))]


def _through_conversions(value):
    """The value a chain of `ttg.convert_layout`s starts from."""
    while isinstance(value.owner_op, ConvertLayoutOp):
        value = value.owner_op.operands[0]
    return value


def _register_a_words(builder, a, regs: list, reps_m: int, rows_per_rep: int, steps: int,
                      instr_k: int) -> dict:
    """The four 32-bit A-fragment words of a register A per (M repetition, K step)."""
    words = {}
    for rm in range(reps_m):
        for kk in range(steps):
            index = fragment_registers(a.type.encoding, a.type.shape, (16, instr_k),
                                       (rm * rows_per_rep, kk * instr_k),
                                       per_word=32 // a.type.element.width)
            words[rm, kk] = pack_words(builder, [regs[i] for i in index], 32)
    return words


def _flush_steps(op, a_type: str, instr_k: int, k_total: int) -> int | None:
    """K steps after which an fp8 dot adds its partial (lower-precision) wgmma accumulator
    into the f32 one (`maxNumImpreciseAcc` K elements, Triton's meaning); None: never."""
    limit = op.attributes.get("maxNumImpreciseAcc")
    if a_type not in ("e4m3", "e5m2") or limit is None or not 0 < limit.value <= k_total:
        return None
    return max(1, limit.value // instr_k)


@lowers(ttng.WarpGroupDotOp)
def lower_warp_group_dot(ctx, op):
    """`ttng.warp_group_dot`: fence, one wgmma per (M rep, N rep, K step), commit. An fp8 dot
    with `maxNumImpreciseAcc` accumulates each run of that many K elements into zeroed
    registers, waits for them and adds them to the accumulator in f32."""
    a, bv, c = op.operands
    b = ctx.builder
    ct: TensorType = c.type
    mma = ct.encoding
    m, n = ct.shape
    k_total = a.type.shape[1]
    wm, wn = mma.warps_per_cta
    _, instr_n, instr_k = mma.instr_shape
    element = str(a.type.element)
    if element not in WGMMA_TYPES:
        raise LoweringError(f"ttng.warp_group_dot: no wgmma for {element} operands")
    a_type = WGMMA_TYPES[element]
    acc_is_f16 = str(ct.element) == "f16"
    types = (WGMMA_ACC_TYPES[str(ct.element)], a_type, a_type)
    acc = list(ctx.get(c))
    # a zero accumulator is not read: the first K step of each tile runs with scale-d false
    # (as Triton's lowering does), so no zero registers are materialized and ptxas keeps all
    # of the dot's wgmmas in one chain
    zero_acc = is_constant(_through_conversions(c), 0)
    b_op = _SharedOperand(ctx, bv, 1, mma)
    a_shared = isinstance(a.type, MemDescType)
    a_op = _SharedOperand(ctx, a, 0, mma) if a_shared else None
    steps = k_total // instr_k
    rows_per_rep, cols_per_rep = 16 * wm, instr_n * wn
    # a register A is packed into its fragment words before the fence: registers written
    # between the fence and a wgmma that reads them make ptxas insert a warpgroup.arrive before
    # each wgmma (C7519), which splits the chain of instructions
    a_words = None if a_shared else _register_a_words(b, a, ctx.get(a), m // rows_per_rep,
                                                      rows_per_rep, steps, instr_k)
    inline_ptx(b, ir.VoidType(), "wgmma.fence.sync.aligned;", "", [])
    flush = _flush_steps(op, a_type, instr_k, k_total)
    runs = [range(steps)] if flush is None else [range(s, min(s + flush, steps))
                                                for s in range(0, steps, flush)]
    packed = []                     # f16 accumulators: (registers, f16x2 words) per repetition
    for rm in range(m // rows_per_rep):
        for rn in range(n // cols_per_rep):
            regs = fragment_registers(mma, ct.shape, (16, instr_n), (rm * rows_per_rep,
                                                                     rn * cols_per_rep))
            words = [acc[r] for r in regs]
            if acc_is_f16:
                words = pack_words(b, words, 32)
            total = words
            for run in runs:
                if flush is not None:       # a fresh partial accumulator for this run
                    inline_ptx(b, ir.VoidType(), "wgmma.fence.sync.aligned;", "", [])
                    words = [ir.Constant(F32, 0.0)] * len(total)
                for kk in run:
                    b_desc = b_op.descriptor(ctx, rn * cols_per_rep, kk * instr_k)
                    a_operand = (a_op.descriptor(ctx, rm * rows_per_rep, kk * instr_k)
                                 if a_shared else a_words[rm, kk])
                    words = _wgmma(b, (instr_n, instr_k), types, words, a_operand, b_desc,
                                   (a_op.transposed if a_shared else False, b_op.transposed),
                                   acc_is_f16, use_acc=not (zero_acc and kk == 0))
                if flush is not None:
                    inline_ptx(b, ir.VoidType(), "wgmma.commit_group.sync.aligned;", "", [])
                    words = wait_group(b, words, 0)
                    total = [b.fadd(t, w, flags=CONTRACT) for t, w in zip(total, words)]
            words = total if flush is not None else words
            if acc_is_f16:
                packed.append((regs, words))
                continue
            for r, value in zip(regs, words):
                acc[r] = value
    inline_ptx(b, ir.VoidType(), "wgmma.commit_group.sync.aligned;", "", [])
    if acc_is_f16:
        _unpack_f16_accumulator(b, packed, acc, llvm_type(ct))
    ctx.set(op.results[0], acc)


def _unpack_f16_accumulator(builder, packed: list, acc: list, half) -> None:
    """An f16 accumulator lives in wgmma's registers as f16x2 words: splitting a word into its
    halves reads it, and a read before `wgmma.wait_group` sees a register the tensor core is
    still writing (the wrong results of the first f16-accumulation runs). So these dots wait
    for their own group (`wait_group 0`, the words passed through it) before splitting; the
    later `warp_group_dot_wait` then finds nothing pending."""
    flat = [w for _, words in packed for w in words]
    done = wait_group(builder, flat, 0)
    at = 0
    for regs, words in packed:
        halves = unpack_words(builder, done[at:at + len(words)], half, 2 * len(words))
        at += len(words)
        for r, value in zip(regs, halves):
            acc[r] = value


def wait_on(builder, register_lists: list, pendings: int) -> list:
    """`wait_group` with the registers of every list passed through it; the lists after."""
    out = iter(wait_group(builder, [r for regs in register_lists for r in regs], pendings))
    return [[next(out) for _ in regs] for regs in register_lists]


@lowers(ttng.WarpGroupDotWaitOp)
def lower_warp_group_dot_wait(ctx, op):
    """`ttng.warp_group_dot_wait {pendings = N}`: `wgmma.wait_group.sync.aligned N`, the
    tensors' registers passed through it (tied operands) so later reads follow the wait."""
    lists = [list(ctx.get(v)) if isinstance(v.type, TensorType) else [] for v in op.operands]
    waited = wait_on(ctx.builder, lists, op.attributes["pendings"].value)
    for v, r, regs in zip(op.operands, op.results, waited):
        ctx.set(r, regs if isinstance(v.type, TensorType) else ctx.get(v))
