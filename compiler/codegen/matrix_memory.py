"""Whole 8x8 matrices of 16-bit elements between registers and shared memory: `ldmatrix`
(sm_75+) and `stmatrix` (sm_90+), each moving up to four matrices per warp in one instruction.
Plain ldmatrix also reads 32-bit elements as whole words (`word_matrix_fits`, tf32 mma.sync
operands behind the `tf32_ldmatrix` option): a matrix's row of eight b16 is four words, and
lane l receives word (l / 4, l % 4) of it, the tf32 fragments' (groupID, threadID_in_group).

Both are chosen from the linear layouts alone: `matrix_mode` looks at the offsets map
(register, lane, warp) -> buffer offset of a tensor in a shared buffer and says whether a
thread's register pair and lanes form the rows and columns the instructions hand out (plain,
or `.trans`), with every row 16 contiguous, 16-byte-aligned bytes. The row addresses the lanes
give are that same map restricted to the lanes that own each row's first element, so no layout
has a case of its own here: mma accumulators (v2, v3) and dot operands of any kWidth go through
the same check (`tensor_core_layout` says which layouts try it), and a pairing that fails it is
moved by the generic vector path (compiler.codegen.lower_convert).
"""
from __future__ import annotations

from llvmlite import ir

from compiler.analysis import layouts
from compiler.analysis.bank_conflicts import offsets_layout
from compiler.analysis.layout_to_linear import to_linear_layout
from compiler.analysis.linear_layout import LinearLayout
from compiler.dialects.ttg import DotOperandEncoding, NvidiaMmaEncoding
from compiler.ir.types import TensorType

from .llvm_helpers import inline_ptx, llvm_type, pack_words, unpack_words

I32 = ir.IntType(32)

#: The first architecture with stmatrix (PTX ISA 7.8, sm_90).
STMATRIX_ARCH = 90


def operand_offsets(shared_layout, operand_type: TensorType):
    """(register, lane, warp) -> element offset in the buffer of `shared_layout` of each
    register of a tensor of `operand_type`: the map ldmatrix's addresses come from."""
    from .lower_convert import buffer_layout
    regs = to_linear_layout(operand_type.encoding, operand_type.shape)
    return offsets_layout(regs, buffer_layout(shared_layout, operand_type.shape))


def matrix_mode(shared_layout, operand_type: TensorType):
    """How `ldmatrix` reads (and `stmatrix` writes) a tensor of `operand_type` (16-bit, any
    layout) from a buffer of `shared_layout`, from the offsets map: False (plain) when each
    thread's register pair, lanes 0-1 and lanes 2-4 are the 8x8 matrix's (column pair, column,
    row) and every other basis moves whole 16-byte rows; True (`.trans`) when lanes 2-4 are its
    columns and (register bit 0, lanes 0-1) its rows; None when neither holds (then the
    registers move one vector at a time). A swizzle whose `vec` is below 8 elements leaves no
    16-byte rows: ldmatrix there would read 16 bytes at 8-byte-aligned addresses ("misaligned
    address" on the GPU)."""
    if operand_type.element.width != 16 or operand_type.rank != 2:
        return None
    return offsets_matrix_mode(operand_offsets(shared_layout, operand_type))


def offsets_matrix_mode(offsets):
    """`matrix_mode` of an offsets map (register, lane, warp) -> element offset of 16-bit
    elements: False (plain), True (`.trans`) or None (no 8x8 matrices of 16-byte rows)."""
    regs, lanes, warps = _offset_bases(offsets)
    if len(regs) < 1 or len(lanes) != 5:
        return None
    for trans, row_bases, rest in ((False, [regs[0], lanes[0], lanes[1]], regs[1:] + lanes[2:]),
                                   (True, lanes[2:], regs + lanes[:2])):
        if row_bases == [1, 2, 4] and all(v % 8 == 0 for v in rest + warps):
            return trans
    return None


def word_matrix_fits(shared_layout, operand_type: TensorType) -> bool:
    """Whether plain `ldmatrix` reads a tensor of `operand_type` (32-bit elements) from a
    buffer of `shared_layout` one word per register: lanes 0-1 are a matrix row's words
    (offsets 1 and 2) and every other basis (registers, lanes 2-4, warps) moves whole 16-byte
    rows, so the swizzle too (its `vec` at least 4 elements). `.trans` swaps 16-bit halves,
    so a buffer whose rows do not run along the words has no form here."""
    if operand_type.element.width != 32 or operand_type.rank != 2:
        return False
    regs, lanes, warps = _offset_bases(operand_offsets(shared_layout, operand_type))
    return len(lanes) == 5 and lanes[:2] == [1, 2] and \
        all(v % 4 == 0 for v in regs + lanes[2:] + warps)


def _offset_bases(offsets) -> tuple[list, list, list]:
    """The buffer offsets of the (register, lane, warp) bases of an offsets map."""
    regs = [v[0] for v in offsets.bases("register")]
    lanes = [v[0] for v in offsets.bases("lane")]
    warps = [v[0] for v in offsets.bases("warp")] if "warp" in offsets.in_dims else []
    return regs, lanes, warps


def _address_operand(index: int, byte_offset: int) -> str:
    """The PTX address of inline-asm operand `index` plus a constant: `[$i+imm]`, the form
    ptxas folds into the instruction, so matrices that differ by a constant share a register."""
    return f"[${index}+{byte_offset}]" if byte_offset else f"[${index}]"


def _ldmatrix(ctx, address, count: int, trans: bool, byte_offset: int = 0) -> list:
    """One `ldmatrix.sync.aligned.m8n8.x{count}[.trans].shared.b16` at `address` plus
    `byte_offset`: `count` i32 words."""
    outs = ", ".join(f"${i}" for i in range(count))
    asm = (f"ldmatrix.sync.aligned.m8n8.x{count}{'.trans' if trans else ''}.shared.b16 "
           f"{{{outs}}}, {_address_operand(count, byte_offset)};")
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


def _word_group(slot_indices: list, start: int) -> list:
    """The registers (one word each) one ldmatrix reads from `start`: four r0..r3 when
    r3 = r0 ^ r1 ^ r2 (one tf32 A fragment, or the B fragments of two N tiles: lanes 8-15 and
    16-23 move by the offsets of r1 ^ r0 and r2 ^ r0, which the linear map adds up to r3's),
    else two, else one."""
    rest = slot_indices[start:start + 4]
    if len(rest) == 4 and len(set(rest)) == 4 and rest[3] == rest[0] ^ rest[1] ^ rest[2]:
        return rest
    return rest[:2]


def _row_addresses(offsets, trans: bool, firsts: list):
    """(lane, warp) -> offset of the row that lane 8q + i gives ldmatrix, relative to matrix
    0's: matrix q starts at register `firsts[q]` (the offsets of firsts[1] ^ firsts[0] and
    firsts[2] ^ firsts[0] are lane bits 3 and 4; a fourth matrix must be firsts[1] ^
    firsts[2] ^ firsts[0]); row i is held, at column 0, by lane 4i (plain) or by register
    bit 0 and lanes 0-1 (`.trans`). Lanes past the group's rows give none."""
    regs, lanes, warps = _offset_bases(offsets)
    rows = lanes[2:5] if not trans else [regs[0], lanes[0], lanes[1]]
    matrices = [offsets.apply(register=f ^ firsts[0])["offset"] for f in firsts[1:3]]
    bases = {"lane": rows + matrices + [0] * (2 - len(matrices))}
    if "warp" in offsets.in_dims:
        bases["warp"] = warps
    return LinearLayout(bases, {"offset": offsets.out_dim_size("offset")})


def _matrix_address(ctx, base, offsets, trans: bool, firsts: list, elem_ty: ir.Type,
                    elem_bytes: int) -> tuple:
    """Each lane's row address for one ldmatrix / stmatrix of the matrices starting at the
    registers `firsts`, as (address, constant byte offset): the lane's row and warp's part
    (`_row_addresses`) XOR the first matrix's offset, a constant. The constant's bits that
    the lane part can hold (a swizzle's) are XORed into the address; the others cannot carry
    into it, so they are an add, left to the instruction's immediate (`_address_operand`)."""
    from .lower_convert import shared_element_address, xor_const
    b = ctx.builder
    term = ctx.indexer.thread_term(_row_addresses(offsets, trans, firsts))
    first = offsets.apply(register=firsts[0])["offset"]
    swizzled = first & term[1] if term is not None else 0
    address = shared_element_address(b, base, xor_const(b, term, swizzled), elem_ty)
    return address, (first & ~swizzled) * elem_bytes


def _matrix_groups(slot_indices: list, words: bool) -> list:
    """Per ldmatrix / stmatrix, the first register of each of its matrices: aligned runs of
    register pairs (`_group_size`), or for 32-bit words one register a matrix
    (`_word_group`)."""
    groups, start = [], 0
    while start < len(slot_indices):
        if words:
            firsts = _word_group(slot_indices, start)
            start += len(firsts)
        else:
            count = _group_size(slot_indices, start)
            firsts = slot_indices[start:start + 2 * count:2]
            start += 2 * count
        groups.append(firsts)
    return groups


def ldmatrix_registers(ctx, base, shared_layout, operand_type: TensorType,
                       slot_indices: list) -> list:
    """The registers `slot_indices` of a tensor of `operand_type` read, in that order, from
    the shared buffer at `base` by ldmatrix: 16-bit elements in aligned runs of register pairs
    (the buffer must pass `matrix_mode`), or 32-bit ones one word a register, plain (the
    buffer must pass `word_matrix_fits`). Every address comes from the offsets map: the lane's
    row, the warp's part, and the group's first register as a constant."""
    offsets = operand_offsets(shared_layout, operand_type)
    words = operand_type.element.width == 32
    trans = False if words else matrix_mode(shared_layout, operand_type)
    elem_ty = llvm_type(operand_type)
    values = []
    for firsts in _matrix_groups(slot_indices, words):
        address, byte_offset = _matrix_address(ctx, base, offsets, trans, firsts, elem_ty,
                                               operand_type.element.width // 8)
        loaded = _ldmatrix(ctx, address, len(firsts), trans, byte_offset)
        values += unpack_words(ctx.builder, loaded, elem_ty, len(loaded) * (1 if words else 2))
    return values


def tensor_core_layout(encoding) -> bool:
    """Whether `encoding` is an mma accumulator (v2, v3) or a dot operand of one: the layouts
    whose shared-memory moves try ldmatrix and stmatrix."""
    if isinstance(encoding, DotOperandEncoding):
        encoding = encoding.parent
    return isinstance(encoding, NvidiaMmaEncoding)


def load_matrices(ctx, base, shared_layout, operand_type: TensorType) -> list:
    """`ttg.local_load` into a tensor-core layout: every register, through ldmatrix (callers
    check `matrix_mode` first)."""
    n = layouts.elements_per_thread(operand_type.encoding, tuple(operand_type.shape))
    return ldmatrix_registers(ctx, base, shared_layout, operand_type, list(range(n)))


def _stmatrix(ctx, address, words: list, trans: bool, byte_offset: int = 0) -> None:
    """One `stmatrix.sync.aligned.m8n8.x{count}[.trans].shared.b16` of `words` (i32 each)
    at `address` plus `byte_offset`."""
    count = len(words)
    ins = ", ".join(f"${i + 1}" for i in range(count))
    asm = (f"stmatrix.sync.aligned.m8n8.x{count}{'.trans' if trans else ''}.shared.b16 "
           f"{_address_operand(0, byte_offset)}, {{{ins}}};")
    inline_ptx(ctx.builder, ir.VoidType(), asm, ",".join(["r"] * (count + 1)),
               [address] + words)


def stmatrix_fits(ctx, shared_layout, value_type: TensorType) -> bool:
    """Whether a tensor of `value_type` goes into a buffer of `shared_layout` by stmatrix:
    an sm_90+ target and a `matrix_mode` the offsets map allows."""
    return ctx.arch >= STMATRIX_ARCH and matrix_mode(shared_layout, value_type) is not None


def stmatrix_registers(ctx, base, shared_layout, value_type: TensorType, values: list) -> None:
    """Every register of a tensor of `value_type` written into the shared buffer at `base`
    by stmatrix (the pair must pass `stmatrix_fits`), four matrices at a time where the
    registers allow; addresses as in `ldmatrix_registers`. Threads holding the same element
    write the same value."""
    offsets = operand_offsets(shared_layout, value_type)
    stmatrix_offsets(ctx, base, offsets, matrix_mode(shared_layout, value_type),
                     llvm_type(value_type), values)


def stmatrix_offsets(ctx, base, offsets, trans: bool, elem_ty: ir.Type, values: list) -> None:
    """Every register (16-bit values) written by stmatrix to the shared buffer at `base`, by
    an offsets map (register, lane, warp) -> element offset that passes `offsets_matrix_mode`
    (`trans` is what it returned): four matrices at a time where the registers allow."""
    b = ctx.builder
    for firsts in _matrix_groups(list(range(len(values))), False):
        address, byte_offset = _matrix_address(ctx, base, offsets, trans, firsts, elem_ty, 2)
        words = pack_words(b, values[firsts[0]:firsts[0] + 2 * len(firsts)], 32)
        _stmatrix(ctx, address, words, trans, byte_offset)
