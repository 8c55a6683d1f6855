"""The matmul epilogue's layout conversion (mma accumulator -> blocked, for the store) moves
registers through shared memory in vectors: the conversion plan (compiler.analysis.conversion)
stores each thread's column pairs as 4 bytes and loads rows of eight halves as 16 bytes, and the
pipelined matmul's PTX shows it."""
from __future__ import annotations

from compiler.analysis.conversion import tensor_plan
from compiler.dialects.ttg import BlockedEncoding, NvidiaMmaEncoding
from compiler.dialects.tt import PointerType
from compiler.ir.types import TensorType, f16, f32
from tests.cpu.pipeline_cases import compile_matmul

MMA = NvidiaMmaEncoding(2, 0, (2, 2), (16, 8))
BLOCKED = BlockedEncoding((1, 8), (4, 8), (4, 1), (1, 0))


def test_mma_to_blocked_stores_pairs_and_loads_rows():
    plan = tensor_plan(TensorType((128, 128), f16, MMA), TensorType((128, 128), f16, BLOCKED))
    assert plan.strategy == "shared"
    assert (plan.swizzle.store_vec, plan.swizzle.load_vec) == (2, 8)
    # f32: 16 bytes hold 4
    plan = tensor_plan(TensorType((128, 128), f32, MMA), TensorType((128, 128), f32, BLOCKED))
    assert (plan.swizzle.store_vec, plan.swizzle.load_vec) == (2, 4)


def test_pointers_move_one_by_one():
    t = TensorType((128, 128), PointerType(f16), MMA)
    plan = tensor_plan(t, TensorType((128, 128), PointerType(f16), BLOCKED))
    assert (plan.swizzle.store_vec, plan.swizzle.load_vec) == (1, 1)


def test_matmul_epilogue_is_vectorized_in_ptx():
    compiled, _, _ = compile_matmul(256, 256, 256, (128, 128, 64), 4, stop_after="ptx")
    ptx = compiled.asm["ptx"]
    assert "ld.shared.v4" in ptx
    assert "st.shared.b16" not in ptx and "ld.shared.b16" not in ptx and "ld.shared.u16" not in ptx
