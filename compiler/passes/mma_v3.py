"""accelerate-matmul's Hopper half: a `tt.dot` becomes a `ttng.warp_group_dot` (wgmma).

The accumulator takes a `#ttg.nvidia_mma` version 3 layout: warps come in warp groups of 4
stacked along M (each warp group computes 64 rows per instruction), instrShape [16, N, K] with
N the widest multiple of 8 up to 256 that divides the warp group's columns and K = 256 / operand
bits (16 for f16/bf16, 8 for tf32, 32 for fp8 and int8, which accumulates in i32). The operands go to shared memory in
`#ttg.nvmma_shared` layouts (the 16-byte chunks of each row swizzled as wgmma's descriptors
expect), written by `ttg.local_alloc`; the pipeline pass later turns those into cp.async
multi-buffers. A 16-bit or fp8 A that is computed in the kernel (attention's p = softmax(q k)) stays in
registers as a `#ttg.dot_op` of the v3 parent. The dot is followed by a
`ttng.warp_group_dot_wait {pendings = 0}`: synchronous until the pipeliner relaxes it.
"""
from __future__ import annotations

from compiler.analysis.layout_propagation import order_of
from compiler.codegen.tma import swizzle_bytes
from compiler.dialects.scf import IfOp
from compiler.dialects.tt import DotOp
from compiler.dialects.ttg import (BlockedEncoding, ConvertLayoutOp, DotOperandEncoding, LocalAllocOp,
                                   NVMMASharedEncoding, NvidiaMmaEncoding)
from compiler.dialects.ttng import WarpGroupDotOp, WarpGroupDotWaitOp
from compiler.ir.attributes import BoolAttr, IntegerAttr, StringAttr
from compiler.ir.core import Operation, Value
from compiler.ir.traits import LoopLike, MemoryRead
from compiler.dialects.ttg import MemDescType
from compiler.ir.types import TensorType, i32

from compiler.dialects.arith import BINARY_OPS, CAST_OPS

from .base import PassContext
from .ir_utils import defined_outside, insert_new, make_constant
from .ttgir_rewrite import insert_convert, insert_convert_after

#: wgmma's operand kinds: the PTX type name and the instruction's K
WGMMA_KINDS = {"f16": ("f16", 16), "bf16": ("bf16", 16), "f32": ("tf32", 8),
               "f8E4M3FN": ("e4m3", 32), "f8E5M2": ("e5m2", 32), "i8": ("s8", 32)}
#: accumulator element types wgmma writes, per operand kind (an f16 accumulator: f16 operands
#: only, as PTX allows; its dots wait for themselves, see lower_wgmma)
WGMMA_ACCUMULATORS = {"f16": ("f32", "f16"), "bf16": ("f32",), "tf32": ("f32",),
                      "e4m3": ("f32",), "e5m2": ("f32",), "s8": ("i32",)}
#: operand kinds whose A a wgmma may read from registers when it is computed in the kernel
#: (attention's p): wgmma takes a register A of any K-major type, which p is
REGISTER_A_KINDS = ("f16", "bf16", "e4m3", "e5m2")
WARP_GROUP = 4
INSTR_M = 16                 # rows per warp of one wgmma (64 per warp group)
MAX_N = 256


def uses_wgmma(capability: int) -> bool:
    """Whether a target's tensor cores are driven by wgmma (sm_90 Hopper)."""
    return 90 <= capability < 100


def warps_per_tile_v3(shape: tuple, num_warps: int) -> tuple | None:
    """Warp groups of 4 warps stacked along M; further warps double M while M still has rows
    for them, then N (Triton's warpsPerTileV3). None when num_warps is not a multiple of 4."""
    if num_warps % WARP_GROUP:
        return None
    wm, wn = WARP_GROUP, 1
    while wm * wn < num_warps:
        if shape[0] > INSTR_M * wm:
            wm *= 2
        else:
            wn *= 2
    return wm, wn


def instr_n(columns: int) -> int | None:
    """The widest wgmma N (a multiple of 8, at most 256) dividing a warp group's columns."""
    for n in range(min(MAX_N, columns) // 8 * 8, 0, -8):
        if columns % n == 0:
            return n
    return None


def wgmma_kind(op: Operation) -> str | None:
    """The wgmma operand type of a tt.dot, or None: f16, bf16, fp8 e4m3/e5m2, s8 for int8, and
    tf32 for fp32 operands unless the dot asks for "ieee" (FMA) precision."""
    a, b = op.operands[0].type, op.operands[1].type
    name = str(a.element)
    if name != str(b.element) or name not in WGMMA_KINDS:
        return None
    kind = WGMMA_KINDS[name][0]
    if kind == "tf32" and op.input_precision == "ieee":
        return None
    return kind


def computed_in_kernel(value: Value) -> bool:
    """Whether a value derives from another dot's result (then it is already in registers,
    as p in attention), following operands back but not through loads, and an scf.if's
    result back to what its branches yield (tutorial 06's softmax under a runtime `if`)."""
    seen, work = set(), [value]
    while work:
        v = work.pop()
        op = v.owner_op
        if op is None or (id(op), id(v)) in seen:
            continue
        seen.add((id(op), id(v)))
        if isinstance(op, (DotOp, WarpGroupDotOp, WarpGroupDotWaitOp)):
            return True
        if op.has_trait(MemoryRead):
            continue
        if isinstance(op, IfOp):
            work.extend(region.blocks[0].terminator.operands[v.index] for region in op.regions)
            continue
        work.extend(op.operands)
    return False


def _source(value: Value) -> Value:
    """The value before a conversion into a dot-operand layout (an earlier pass's FMA choice)."""
    op = value.owner_op
    if isinstance(op, ConvertLayoutOp) and isinstance(value.type.encoding, DotOperandEncoding):
        return op.operands[0]
    return value


def _contiguous_dim(t: TensorType, op_idx: int, kind: str) -> int:
    """The dim an operand's shared buffer keeps contiguous: the source's, except that wgmma
    reads tf32, fp8 and int8 only K-major."""
    if kind not in ("f16", "bf16"):
        return 1 if op_idx == 0 else 0
    return order_of(t.encoding)[0] if t.encoding is not None else 1


def _row_bytes(value: Value, op_idx: int, kind: str) -> int:
    t: TensorType = _source(value).type
    return t.shape[_contiguous_dim(t, op_idx, kind)] * t.element.width // 8


def _shared_operand(value: Value, op_idx: int, kind: str, before: Operation) -> Value:
    """`ttg.local_alloc` of a dot operand into an nvmma_shared buffer. K-major (K contiguous)
    when the source's contiguous dim is K or when wgmma cannot transpose the type (tf32, fp8);
    else MN-major, which f16/bf16 wgmma reads with its transpose bit."""
    value = _source(value)
    t: TensorType = value.type
    contiguous = _contiguous_dim(t, op_idx, kind)
    transposed = contiguous == 0
    bits = t.element.width
    row_bytes = t.shape[contiguous] * bits // 8
    enc = NVMMASharedEncoding(swizzle_bytes(row_bytes), transposed, bits)
    alloc = LocalAllocOp([value], [MemDescType(t.shape, t.element, enc, mutable=False)], {},
                         None, before.loc)
    # an operand that does not change in the loop (attention's q) is stored once, before it
    while before.parent_op is not None and before.parent_op.has_trait(LoopLike) and \
            defined_outside(value, before.parent_op):
        before = before.parent_op
    before.parent.insert_before(before, alloc)
    return alloc.results[0]


#: the bits of an fp32 that tf32 keeps (sign, exponent, 10 mantissa bits)
TF32_MASK = -(1 << 13)


def _tf32_split(value: Value, before: Operation) -> tuple:
    """(big, small) with big = value truncated to tf32 and small = value - big (exact)."""
    t: TensorType = value.type
    as_int = t.with_element(i32)
    bits = insert_new(CAST_OPS["bitcast"], [value], [as_int], {}, before).results[0]
    mask = make_constant(TF32_MASK, as_int, before)
    kept = insert_new(BINARY_OPS["andi"], [bits, mask], [as_int], {}, before).results[0]
    big = insert_new(CAST_OPS["bitcast"], [kept], [t], {}, before).results[0]
    small = insert_new(BINARY_OPS["subf"], [value, big], [t], {}, before).results[0]
    return big, small


def split_tf32x3(op: Operation, ctx: PassContext) -> list:
    """Triton's "tf32x3": an fp32 dot as three tf32 dots, a_small b_big + a_big b_small +
    a_big b_big (smallest terms first), which recovers about fp32 accuracy on tensor cores.
    Returns the new tt.dot ops (the old one is replaced)."""
    a, b, c = (_source(v) for v in op.operands)
    a_big, a_small = _tf32_split(a, op)
    b_big, b_small = _tf32_split(b, op)
    acc = c
    dots = []
    for x, y in ((a_small, b_big), (a_big, b_small), (a_big, b_big)):
        dot = insert_new(DotOp, [x, y, acc], [op.results[0].type],
                         {"inputPrecision": StringAttr("tf32")}, op)
        dots.append(dot)
        acc = dot.results[0]
    op.results[0].replace_all_uses_with(acc)
    op.erase()
    ctx.record_pattern("tt.dot tf32x3 -> 3 tf32 dots", op=dots[-1])
    return dots


def accelerate_v3(op: Operation, num_warps: int, ctx: PassContext) -> bool:
    """Rewrite one tt.dot into ttng.warp_group_dot + wait when wgmma can compute it; False
    (nothing changed) otherwise."""
    a, b, c = op.operands
    if not all(isinstance(v.type, TensorType) for v in (a, b, c)):
        return False
    if not isinstance(c.type.encoding, BlockedEncoding) or len(c.type.shape) != 2:
        return False
    kind = wgmma_kind(op)
    if kind is None or str(c.type.element) not in WGMMA_ACCUMULATORS[kind]:
        return False
    m, n = c.type.shape
    k = a.type.shape[1]
    warps = warps_per_tile_v3((m, n), num_warps)
    if warps is None or m % (INSTR_M * warps[0]) or n % (8 * warps[1]):
        return False
    width = instr_n(n // warps[1])
    instr_k = WGMMA_KINDS[str(a.type.element)][1]
    if width is None or k % instr_k:
        return False
    if not all(_row_bytes(v, i, kind) >= 32 for i, v in ((0, a), (1, b))):
        return False        # no swizzle row to fill: wgmma's unswizzled mode is not used
    mma = NvidiaMmaEncoding(3, 0, warps, (INSTR_M, width, instr_k))
    if kind in REGISTER_A_KINDS and computed_in_kernel(a):
        k_width = 32 // a.type.element.width        # elements per 32-bit fragment word
        a_new = insert_convert(_source(a), DotOperandEncoding(0, mma, k_width), op)
    else:
        a_new = _shared_operand(a, 0, kind, op)
    b_new = _shared_operand(b, 1, kind, op)
    acc_type = c.type.with_encoding(mma)
    c_new = insert_convert(c, mma, op)
    attrs = {"isAsync": BoolAttr(False)}
    if kind == "tf32":
        attrs["inputPrecision"] = StringAttr("tf32")
    if "maxNumImpreciseAcc" in op.attributes:
        attrs["maxNumImpreciseAcc"] = op.attributes["maxNumImpreciseAcc"]
    dot = WarpGroupDotOp([a_new, b_new, c_new], [acc_type], attrs, None, op.loc)
    op.parent.insert_before(op, dot)
    wait = WarpGroupDotWaitOp([dot.results[0]], [acc_type],
                              {"pendings": IntegerAttr(0, i32)}, None, op.loc)
    op.parent.insert_before(op, wait)
    back = insert_convert_after(wait.results[0], c.type.encoding, op.loc)
    op.results[0].replace_all_uses_with(back)
    op.erase()
    ctx.record_pattern(f"tt.dot -> wgmma m64n{width}k{instr_k} {kind} (MMA v3)", op=dot)
    return True
