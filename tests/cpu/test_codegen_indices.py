"""The index values the lowering emits agree with the layout helper: the LLVM instructions that
compute each register's coordinates are evaluated here for every thread id (a tiny evaluator of
the integer instructions they use) and compared with `layouts.thread_elements`; the owner
predicate selects exactly one holder of every element."""
from __future__ import annotations

import pytest
from llvmlite import ir

from compiler.analysis import layouts
from compiler.codegen.indices import LayoutIndexer
from compiler.dialects.ttg import (BlockedEncoding, DotOperandEncoding, LinearEncoding,
                                   NvidiaMmaEncoding, SliceEncoding)

OPS = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b, "and": lambda a, b: a & b,
       "or": lambda a, b: a | b, "lshr": lambda a, b: a >> b, "shl": lambda a, b: a << b,
       "sub": lambda a, b: a - b, "xor": lambda a, b: a ^ b}


def _evaluate(value, tid: int, cache: dict):
    if isinstance(value, ir.Constant):
        return int(value.constant)
    key = id(value)
    if key in cache:
        return cache[key]
    if isinstance(value, ir.CallInstr):
        assert value.callee.name == "llvm.nvvm.read.ptx.sreg.tid.x"
        result = tid
    elif isinstance(value, ir.CompareInstr):
        a, b = (_evaluate(x, tid, cache) for x in value.operands)
        result = int({"ult": a < b, "eq": a == b}[value.op])
    else:
        a, b = (_evaluate(x, tid, cache) for x in value.operands)
        result = OPS[value.opname](a, b) & 0xFFFFFFFF
    cache[key] = result
    return result


def _indexer():
    module = ir.Module()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), []), "k")
    builder = ir.IRBuilder(fn.append_basic_block())
    return LayoutIndexer(builder), builder


LAYOUTS = [
    (BlockedEncoding((4,), (32,), (4,), (0,)), (1024,)),
    (BlockedEncoding((4,), (32,), (4,), (0,)), (64,)),
    (BlockedEncoding((8,), (32,), (2,), (0,)), (4,)),
    (BlockedEncoding((1, 4), (4, 8), (4, 1), (1, 0)), (32, 64)),
    (BlockedEncoding((1, 4), (4, 8), (4, 1), (1, 0)), (8, 16)),
    (BlockedEncoding((2, 2), (8, 4), (2, 2), (0, 1)), (64, 32)),
    (BlockedEncoding((1, 1, 2), (2, 4, 4), (1, 2, 1), (2, 1, 0)), (4, 16, 8)),
    (SliceEncoding(1, BlockedEncoding((1, 4), (4, 8), (4, 1), (1, 0))), (32,)),
    (SliceEncoding(0, BlockedEncoding((1, 4), (4, 8), (4, 1), (1, 0))), (64,)),
    (SliceEncoding(0, BlockedEncoding((2, 2), (8, 4), (2, 2), (0, 1))), (8,)),
    (DotOperandEncoding(0, BlockedEncoding((1, 4), (4, 8), (4, 1), (1, 0))), (32, 8)),
    (DotOperandEncoding(1, BlockedEncoding((1, 4), (4, 8), (4, 1), (1, 0))), (8, 64)),
]
# Layouts indexed from their linear layout (no RegisterSlot model): wgmma accumulators and A
# operands, slices of mma layouts, and #ttg.linear (one with a swizzle-like non-power-of-two
# basis that needs XOR).
V3 = NvidiaMmaEncoding(3, 0, (4, 2), (16, 64, 16))
V2 = NvidiaMmaEncoding(2, 0, (2, 2), (16, 8))
LINEAR_LAYOUTS = [
    (V3, (128, 128)),
    (V3, (64, 64)),
    (NvidiaMmaEncoding(3, 0, (8, 1), (16, 256, 16)), (128, 256)),
    (DotOperandEncoding(0, V3, 2), (128, 64)),
    (SliceEncoding(1, V3), (128,)),
    (SliceEncoding(0, V3), (64,)),
    (SliceEncoding(1, V2), (64,)),
    (SliceEncoding(0, V2), (32,)),
    (LinearEncoding(((0, 1), (8, 0)), ((0, 2), (0, 4), (1, 0), (2, 0), (4, 0)),
                    ((16, 0), (0, 0))), (32, 8)),
    (LinearEncoding(((1, 0), (0, 3)), ((0, 1), (2, 0), (4, 0), (0, 4), (0, 0)), ((8, 0),)),
     (16, 8)),
]
LAYOUTS += LINEAR_LAYOUTS


@pytest.mark.parametrize("layout,shape", LAYOUTS, ids=lambda x: str(x)[:40])
def test_emitted_coordinates_match_the_layout_helper(layout, shape):
    indexer, builder = _indexer()
    coords = indexer.coords(builder, layout, shape)
    warps = layouts.num_warps_of(layout)
    for tid in range(warps * 32):
        cache: dict = {}
        got = [tuple(_evaluate(c, tid, cache) for c in reg) for reg in coords]
        assert got == layouts.thread_elements(layout, shape, tid // 32, tid % 32), tid


@pytest.mark.parametrize("layout,shape", LAYOUTS, ids=lambda x: str(x)[:40])
def test_owner_predicate_picks_one_holder_per_element(layout, shape):
    indexer, builder = _indexer()
    owner = indexer.unique_owner(layout, shape)
    unique = indexer.unique_registers(layout, shape)
    writers: dict = {}
    for tid in range(layouts.num_warps_of(layout) * 32):
        if owner is not None and not _evaluate(owner, tid, {}):
            continue
        elements = layouts.thread_elements(layout, shape, tid // 32, tid % 32)
        for reg in unique:
            writers[elements[reg]] = writers.get(elements[reg], 0) + 1
    n = 1
    for s in shape:
        n *= s
    assert len(writers) == n and set(writers.values()) == {1}
