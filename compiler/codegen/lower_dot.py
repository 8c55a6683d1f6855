"""`tt.dot` through FMA (correct, not yet fast): A and B go to shared memory (row-major, from
whatever layout they are in), then a loop over k gives every accumulator register (m, n) its
a[m, k] * b[k, n]; each thread loads its rows of A and columns of B once per k. The loop is a
real LLVM loop with the accumulator registers as phis, so a 128x256x64 tile stays small code.
f16/bf16/int8 inputs are widened to the accumulator's type (fp8 bytes through the fp8 conversions
of `compiler.codegen.fp8`); an f16/bf16 accumulator is kept in f32 inside the loop and rounded
once."""
from __future__ import annotations

from llvmlite import ir

from compiler.dialects import tt
from compiler.analysis import layouts
from compiler.dialects.ttg import BlockedEncoding
from compiler.ir.types import TensorType

from .fp8 import convert_fp8, is_fp8
from .llvm_helpers import (F32, BFloatType, barrier, byte_width, call_intrinsic, i32, llvm_type,
                           type_bits)
from .lower_convert import shared_load, write_row_major
from .lowering import LoweringError
from .registry import lowers


def _widen(b, value, ty):
    if value.type == ty:
        return value
    if isinstance(ty, ir.IntType):
        return b.sext(value, ty)
    return b.fpext(value, ty)


def _widen_operand(b, values: list, element, ty) -> list:
    """Loaded operand registers of IR element type `element` in the accumulator's type `ty`:
    fp8 bytes through the PTX fp8 conversions (an `fpext` cannot read a byte), others by
    `_widen`."""
    if is_fp8(str(element)):
        return convert_fp8(b, values, str(element), "f32" if ty == F32 else str(ty), ty)
    return [_widen(b, v, ty) for v in values]


def _to_shared(ctx, value, offset_bytes: int):
    """A row-major shared copy of a tensor: the buffer a `ttg.local_load` read it from, or its
    registers written into the scratch area at `offset_bytes`."""
    if value in ctx.shared_sources:
        return ctx.shared_sources[value]
    t: TensorType = value.type
    base = ctx.scratch(t.numel * byte_width(t), offset_bytes)
    write_row_major(ctx, base, t, ctx.get(value))
    return base


def _no_unroll(module: ir.Module):
    """Loop metadata asking LLVM not to unroll (a fully unrolled k-loop is huge code)."""
    disable = module.add_metadata([ir.MetaDataString(module, "llvm.loop.unroll.disable")])
    loop = module.add_metadata([disable, disable])
    loop.operands = (loop, disable)        # a loop id refers to itself
    return loop


@lowers(tt.DotOp)
def lower_dot(ctx, op):
    """`tt.dot a, b, acc` with a blocked accumulator layout: a k-loop of FMAs per register."""
    a, bv, c = op.operands
    ct: TensorType = c.type
    parent = ct.encoding
    if layouts.is_mma_family(parent):
        from .lower_mma import lower_mma_dot
        lower_mma_dot(ctx, op)
        return
    if not isinstance(parent, BlockedEncoding):
        raise LoweringError(f"tt.dot is lowered through FMA for blocked accumulators only, "
                            f"not {parent}")
    m, n = ct.shape
    k = a.type.shape[1]
    b = ctx.builder
    a_bytes = (a.type.numel * byte_width(a.type) + 15) // 16 * 16
    barrier(b)
    a_base = _to_shared(ctx, a, 0)
    b_base = _to_shared(ctx, bv, a_bytes)
    barrier(b)

    acc_init = list(ctx.get(c))
    acc_ty = acc_init[0].type
    a_ty = llvm_type(a.type)
    b_ty = llvm_type(bv.type)
    coords = ctx.indexer.coords(b, parent, (m, n))
    slots = layouts.register_slots(parent, (m, n))
    row_of, col_of, rows, cols = {}, {}, [], []
    for reg, slot in enumerate(slots):
        rkey, ckey = layouts.slot_without(slot, {1}), layouts.slot_without(slot, {0})
        if rkey not in row_of:
            row_of[rkey] = len(rows)
            rows.append(b.mul(coords[reg][0], i32(k)))          # row offset of a[m, 0]
        if ckey not in col_of:
            col_of[ckey] = len(cols)
            cols.append(coords[reg][1])
    pairs = [(row_of[layouts.slot_without(s, {1})], col_of[layouts.slot_without(s, {0})])
             for s in slots]

    # A 16-bit float accumulator is carried in f32 through the k-loop and rounded once at the
    # end (as a tensor core keeps more than f16 inside an instruction); rounding every fma to
    # f16 loses accuracy K times over.
    result_ty = acc_ty
    if isinstance(acc_ty, (ir.HalfType, BFloatType)):
        acc_ty = F32
        acc_init = [_widen(b, v, acc_ty) for v in acc_init]
    pre = b.block
    header = b.append_basic_block("dot.k")
    exit_ = b.append_basic_block("dot.done")
    b.branch(header)
    b.position_at_end(header)
    kk = b.phi(ir.IntType(32))
    kk.add_incoming(i32(0), pre)
    accs = [b.phi(acc_ty) for _ in acc_init]
    for phi, init in zip(accs, acc_init):
        phi.add_incoming(init, pre)
    a_vals = _widen_operand(b, [shared_load(ctx, a_base, b.add(r, kk), a_ty) for r in rows],
                            a.type.element, acc_ty)
    b_row = b.mul(kk, i32(n))
    b_vals = _widen_operand(b, [shared_load(ctx, b_base, b.add(b_row, col), b_ty) for col in cols],
                            bv.type.element, acc_ty)
    is_float = not isinstance(acc_ty, ir.IntType)
    suffix = {16: "f16", 32: "f32", 64: "f64"}.get(type_bits(acc_ty), "f32")
    new_accs = []
    for acc, (r, col) in zip(accs, pairs):
        x, y = a_vals[r], b_vals[col]
        if is_float:
            new_accs.append(call_intrinsic(b, f"llvm.fmuladd.{suffix}", acc_ty, [x, y, acc]))
        else:
            new_accs.append(b.add(acc, b.mul(x, y)))
    next_k = b.add(kk, i32(1))
    latch = b.block
    kk.add_incoming(next_k, latch)
    for phi, value in zip(accs, new_accs):
        phi.add_incoming(value, latch)
    branch = b.cbranch(b.icmp_signed("<", next_k, i32(k)), header, exit_)
    branch.set_metadata("llvm.loop", _no_unroll(ctx.module))
    b.position_at_end(exit_)
    if result_ty != acc_ty:
        new_accs = [b.fptrunc(v, result_ty) for v in new_accs]
    ctx.set(op.results[0], new_accs)
