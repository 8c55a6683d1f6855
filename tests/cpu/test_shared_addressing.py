"""How shared-memory addresses are built in LLVM IR (compiler.codegen.lower_convert): a thread
term XOR a register's constant, split so that registers share the XOR and the rest folds into
the instruction's immediate; element offsets scaled to bytes by an instruction of their own."""
from __future__ import annotations

import itertools

from llvmlite import ir

from compiler.codegen.lower_convert import shared_element_address, xor_const


def _builder():
    module = ir.Module()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ir.IntType(32)]), "f")
    return ir.IRBuilder(fn.append_basic_block()), fn.args[0]


def _text(b) -> str:
    """The function's IR so far (a block's own str is cached at its first printing)."""
    return str(b.function)


def test_constant_bits_outside_the_term_are_added():
    b, value = _builder()
    mask = 0b0000_0111                     # the term can hold bits 0-2 (a swizzle's phase)
    out = xor_const(b, (value, mask), 0b0110_1101)
    text = _text(b)
    assert f"xor i32 {value.get_reference()}, 5" in text and "add i32" in text and ", 104" in text
    assert isinstance(out, ir.Instruction) and out.opname == "add"
    # the split is exact for every value the term can take
    for v, const in itertools.product(range(8), range(256)):
        assert ((v ^ (const & mask)) + (const & ~mask)) == v ^ const


def test_disjoint_and_swizzle_only_constants():
    b, value = _builder()
    assert xor_const(b, (value, 0b111), 0b1000).opname == "add"
    assert xor_const(b, (value, 0b111), 0b0101).opname == "xor"
    assert xor_const(b, (value, 0b111), 0) is value
    assert xor_const(b, None, 12).constant == 12


def test_element_offsets_become_byte_offsets_of_an_i8_gep():
    b, offset = _builder()
    base = ir.Constant(ir.PointerType(addrspace=3), None)
    ref = offset.get_reference()
    for ty, scale in ((ir.FloatType(), f"shl i32 {ref}, 2"), (ir.HalfType(), f"shl i32 {ref}, 1"),
                      (ir.IntType(8), None)):
        address = shared_element_address(b, base, offset, ty)
        assert address.source_etype == ir.IntType(8)
        if scale:
            assert scale in _text(b)
