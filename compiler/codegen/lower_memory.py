"""Lowering of global memory ops: addptr, masked and vectorized loads/stores (inline PTX
`@%p ld.global.v4.b32` as Triton emits), and atomics (`atom.global`), scalar and tensor.

A group of `width` consecutive registers (contiguous along the layout's fastest dim) moves in one
instruction of up to 16 bytes; `width` comes from `vector_width`. Masked-off loads give `other`
(or 0). Elements held by several threads are stored (and atomically updated) by one of them.
"""
from __future__ import annotations

from llvmlite import ir

from compiler.dialects import tt
from compiler.ir.types import TensorType

from . import vector_width as vw
from .llvm_helpers import (I1, I32, barrier, byte_width, from_memory, i32, inline_ptx,
                           llvm_type, memory_type, pack_words, to_memory, type_bits,
                           unpack_words)
from .lowering import LoweringError
from .registry import lowers

CONSTRAINT = {8: "r", 16: "h", 32: "r", 64: "l"}
MOV = {8: "mov.u32", 16: "mov.u16", 32: "mov.u32", 64: "mov.u64"}


@lowers(tt.AddPtrOp)
def lower_addptr(ctx, op):
    """`tt.addptr`: a GEP over the pointee's memory type."""
    ptr, offset = op.operands
    pointee = memory_type(llvm_type(ptr.type.scalar.pointee))
    b = ctx.builder
    ctx.set(op.results[0], [b.gep(p, [o], source_etype=pointee)
                            for p, o in zip(ctx.get(ptr), ctx.get(offset))])


def _operand(op, index):
    return op.operands[index] if len(op.operands) > index else None


def _and(b, x, y):
    if x is None:
        return y
    if y is None:
        return x
    return b.and_(x, y)


def _tid_zero(ctx):
    return ctx.indexer._cached(("tid0",), lambda b: b.icmp_unsigned("==", ctx.indexer.tid, i32(0)))


def _word_layout(width: int, elem_bits: int) -> tuple:
    """(word bits, number of words) for `width` elements of `elem_bits` bits."""
    total = width * elem_bits
    word = 32 if total >= 32 else total
    if elem_bits == 64:
        word = 64
    return word, total // word


def _vector_suffix(n_words: int) -> str:
    return "" if n_words == 1 else f".v{n_words}"


def _ld_type(word_bits: int) -> str:
    return {8: "u8", 16: "b16", 32: "b32", 64: "b64"}[word_bits]


def _hint_suffix(op) -> str:
    """The PTX qualifiers of a load's or store's cache hints: `.cg` for `cache = "cg"`,
    `.L1::evict_last` for `evict = "evict_last"`, nothing by default."""
    cache, evict = op.attributes.get("cache"), op.attributes.get("evict")
    return (f".{cache.value}" if cache is not None else "") + \
        (f".L1::{evict.value}" if evict is not None else "")


def _load_group(ctx, ptr, pred, others, elem_ty, width, hints=".global"):
    """One (possibly predicated, possibly vector) global load of `width` elements."""
    b = ctx.builder
    bits = 8 if elem_ty == I1 else type_bits(elem_ty)
    word_bits, n_words = _word_layout(width, bits)
    reg_bits = 32 if word_bits == 8 else word_bits
    c = CONSTRAINT[word_bits]
    outs = ", ".join(f"${i}" for i in range(n_words))
    lines = []
    args = [ptr]
    constraints = [f"={c}"] * n_words + ["l"]
    ptr_ref = f"${n_words}"
    if pred is not None:
        args.append(pred)
        constraints.append("b")
        pred_ref = f"${n_words + 1}"
        if others is not None:
            mem = [to_memory(b, o) for o in others]
            words = pack_words(b, mem, word_bits)
            if word_bits == 8:
                words = [b.zext(w, I32) for w in words]
            for i, w in enumerate(words):
                args.append(w)
                constraints.append(c)
                lines.append(f"{MOV[word_bits]} ${i}, ${n_words + 2 + i};")
        else:
            lines += [f"{MOV[word_bits]} ${i}, 0x0;" for i in range(n_words)]
        prefix = f"@{pred_ref} "
    else:
        prefix = ""
    vec = _vector_suffix(n_words)
    target = f"{{ {outs} }}" if n_words > 1 else outs
    lines.append(f"{prefix}ld{hints}{vec}.{_ld_type(word_bits)} {target}, [ {ptr_ref} + 0 ];")
    reg_ty = ir.IntType(reg_bits)
    ret = reg_ty if n_words == 1 else ir.LiteralStructType([reg_ty] * n_words)
    result = inline_ptx(b, ret, "\n".join(lines), ",".join(constraints), args)
    words = [result] if n_words == 1 else [b.extract_value(result, i) for i in range(n_words)]
    if word_bits == 8:
        words = [b.trunc(w, ir.IntType(8)) for w in words]
    mem_ty = memory_type(elem_ty)
    values = unpack_words(b, words, mem_ty, width)
    return [from_memory(b, v, elem_ty) for v in values]


@lowers(tt.LoadOp)
def lower_load(ctx, op):
    """`tt.load` (ptr[, mask[, other]]): vectorized, predicated inline-PTX loads."""
    ptr_value, mask_value, other_value = _operand(op, 0), _operand(op, 1), _operand(op, 2)
    result = op.results[0]
    elem_ty = llvm_type(result.type)
    ptrs = ctx.get(ptr_value)
    masks = ctx.get(mask_value) if mask_value is not None else [None] * len(ptrs)
    others = ctx.get(other_value) if other_value is not None else None
    width = 1
    if isinstance(ptr_value.type, TensorType):
        width = vw.vector_width(ctx.axis, ptr_value, mask_value, byte_width(result.type))
    volatile = op.attributes.get("isVolatile")
    hints = (".volatile" if volatile is not None and volatile.value else "") + ".global" + \
        _hint_suffix(op)
    out = []
    for start in range(0, len(ptrs), width):
        group_others = others[start:start + width] if others is not None else None
        out += _load_group(ctx, ptrs[start], masks[start], group_others, elem_ty, width, hints)
    ctx.set(result, out)


def _store_group(ctx, ptr, pred, values, hints=""):
    b = ctx.builder
    elem_ty = values[0].type
    bits = 8 if elem_ty == I1 else type_bits(elem_ty)
    word_bits, n_words = _word_layout(len(values), bits)
    c = CONSTRAINT[word_bits]
    words = pack_words(b, [to_memory(b, v) for v in values], word_bits)
    if word_bits == 8:
        words = [b.zext(w, I32) for w in words]
    args = list(words) + [ptr]
    constraints = [c] * n_words + ["l"]
    prefix = ""
    if pred is not None:
        args.append(pred)
        constraints.append("b")
        prefix = f"@${n_words + 1} "
    ins = ", ".join(f"${i}" for i in range(n_words))
    source = f"{{ {ins} }}" if n_words > 1 else ins
    st_type = {8: "b8", 16: "b16", 32: "b32", 64: "b64"}[word_bits]
    asm = f"{prefix}st.global{hints}{_vector_suffix(n_words)}.{st_type} [ ${n_words} + 0 ], {source};"
    inline_ptx(b, ir.VoidType(), asm, ",".join(constraints), args)


@lowers(tt.StoreOp)
def lower_store(ctx, op):
    """`tt.store` (ptr, value[, mask]): vectorized, predicated; duplicated elements are
    stored by one thread only (scalar stores by thread 0)."""
    ptr_value, value, mask_value = op.operands[0], op.operands[1], _operand(op, 2)
    ptrs = ctx.get(ptr_value)
    values = ctx.get(value)
    masks = ctx.get(mask_value) if mask_value is not None else [None] * len(ptrs)
    b = ctx.builder
    t = ptr_value.type
    if isinstance(t, TensorType):
        owner = ctx.indexer.unique_owner(t.encoding, t.shape)
        unique = set(ctx.indexer.unique_registers(t.encoding, t.shape))
        width = vw.vector_width(ctx.axis, ptr_value, mask_value, byte_width(value.type))
    else:
        owner, unique, width = _tid_zero(ctx), {0}, 1
    for start in range(0, len(ptrs), width):
        if start not in unique:
            continue
        pred = _and(b, masks[start], owner)
        _store_group(ctx, ptrs[start], pred, values[start:start + width], _hint_suffix(op))


# ---- atomics -------------------------------------------------------------------------------------
RMW = {"add": ("add", "u"), "fadd": ("add", "f"), "max": ("max", "s"), "umax": ("max", "u"),
       "min": ("min", "s"), "umin": ("min", "u"), "exch": ("exch", "b"), "and": ("and", "b"),
       "or": ("or", "b"), "xor": ("xor", "b")}


def _atom(ctx, opcode: str, kind: str, sem: str, scope: str, ptr, pred, operands):
    """One `atom` instruction; returns the old value (0 where the predicate is false)."""
    b = ctx.builder
    ty = operands[0].type
    bits = type_bits(ty)
    if bits not in (16, 32, 64):
        raise LoweringError(f"atomics on {bits}-bit values are not supported")
    if kind == "f" and bits == 16:
        type_text = "noftz.f16"
    else:
        type_text = f"{kind}{bits}"
    int_ty = ir.IntType(bits)
    words = [v if isinstance(v.type, ir.IntType) else b.bitcast(v, int_ty) for v in operands]
    c = CONSTRAINT[bits]
    args = [ptr] + words
    constraints = [f"={c}", "l"] + [c] * len(words)
    refs = ", ".join(f"${i + 2}" for i in range(len(words)))
    prefix = ""
    lines = []
    if pred is not None:
        args.append(pred)
        constraints.append("b")
        prefix = f"@${len(words) + 2} "
        lines.append(f"{MOV[bits]} $0, 0x0;")
    sem_text = {"acq_rel": "acq_rel", "acquire": "acquire", "release": "release",
                "relaxed": "relaxed"}.get(sem, "acq_rel")
    scope_text = {"gpu": "gpu", "cta": "cta", "sys": "sys"}.get(scope, "gpu")
    # Qualifiers in the order Triton's PTX has them (ptxas takes any order), so that tools
    # and tests grepping for them find them: `atom.global.acquire.gpu.cas` for a
    # compare-and-swap, `atom.global.gpu.acquire.add` for the read-modify-writes.
    order = f"{sem_text}.{scope_text}" if opcode == "cas" else f"{scope_text}.{sem_text}"
    lines.append(f"{prefix}atom.global.{order}.{opcode}.{type_text} $0, "
                 f"[ $1 + 0 ], {refs};")
    old = inline_ptx(b, int_ty, "\n".join(lines), ",".join(constraints), args)
    return old if isinstance(ty, ir.IntType) else b.bitcast(old, ty)


def _broadcast_from_thread0(ctx, value):
    """Make thread 0's scalar visible to every thread through shared memory."""
    b = ctx.builder
    base = ctx.scratch(8)
    mem = to_memory(b, value)
    barrier(b)
    with b.if_then(_tid_zero(ctx)):
        b.store(mem, b.gep(base, [i32(0)], source_etype=mem.type))
    barrier(b)
    loaded = b.load(b.gep(base, [i32(0)], source_etype=mem.type), typ=mem.type)
    return from_memory(b, loaded, value.type)


def _lower_atomic(ctx, op, opcode, kind, data_operands, mask_value):
    ptr_value = op.operands[0]
    ptrs = ctx.get(ptr_value)
    data = [ctx.get(v) for v in data_operands]
    masks = ctx.get(mask_value) if mask_value is not None else [None] * len(ptrs)
    sem = op.attributes.get("sem")
    scope = op.attributes.get("scope")
    sem = sem.value if sem is not None else "acq_rel"
    scope = scope.value if scope is not None else "gpu"
    b = ctx.builder
    t = ptr_value.type
    if not isinstance(t, TensorType):
        old = _atom(ctx, opcode, kind, sem, scope, ptrs[0], _and(b, masks[0], _tid_zero(ctx)),
                    [d[0] for d in data])
        # only thread 0 issues a scalar atomic; its old value reaches the other threads through
        # shared memory, and two barriers, only when something reads it (as in Triton)
        used = op.results[0].has_uses()
        ctx.set(op.results[0], [_broadcast_from_thread0(ctx, old) if used else old])
        return
    owner = ctx.indexer.unique_owner(t.encoding, t.shape)
    unique = ctx.indexer.unique_registers(t.encoding, t.shape)
    results = [None] * len(ptrs)
    for reg in unique:
        results[reg] = _atom(ctx, opcode, kind, sem, scope, ptrs[reg], _and(b, masks[reg], owner),
                             [d[reg] for d in data])
    from compiler.analysis import layouts
    coords = layouts.thread_elements(t.encoding, t.shape, 0, 0)
    first = {}
    for reg in unique:
        first.setdefault(coords[reg], reg)
    ctx.set(op.results[0], [results[reg] if results[reg] is not None else results[first[coords[reg]]]
                            for reg in range(len(ptrs))])


@lowers(tt.AtomicRMWOp)
def lower_atomic_rmw(ctx, op):
    """`tt.atomic_rmw` (ptr, val[, mask]) with atomic_rmw_op add/fadd/max/umax/min/umin/exch/and/
    or/xor."""
    kind_name = op.attributes["atomic_rmw_op"].value
    opcode, kind = RMW[kind_name]
    if kind in ("s", "u", "b") and op.operands[1].type.scalar.is_float:
        if kind_name != "exch":
            raise LoweringError(f"atomic {kind_name} on floats is not supported yet")
    _lower_atomic(ctx, op, opcode, kind, [op.operands[1]], _operand(op, 2))


@lowers(tt.AtomicCASOp)
def lower_atomic_cas(ctx, op):
    """`tt.atomic_cas` (ptr, cmp, val): compare-and-swap, returning the old value."""
    _lower_atomic(ctx, op, "cas", "b", [op.operands[1], op.operands[2]], None)

