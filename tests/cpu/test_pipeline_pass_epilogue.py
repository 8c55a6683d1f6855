"""The matmul epilogue's layout conversion (mma accumulator -> blocked, for the store) moves
registers through shared memory in vectors: `vector_runs` finds the runs every thread holds
contiguously, and the pipelined matmul's PTX uses 4-byte stores and 16-byte loads for it."""
from __future__ import annotations

from llvmlite import ir

from compiler.codegen.lower_convert import vector_runs
from compiler.dialects.ttg import BlockedEncoding, NvidiaMmaEncoding
from compiler.dialects.tt import PointerType
from compiler.ir.types import TensorType, f16, f32
from tests.cpu.pipeline_cases import compile_matmul

MMA = NvidiaMmaEncoding(2, 0, (2, 2), (16, 8))
BLOCKED = BlockedEncoding((1, 8), (4, 8), (4, 1), (1, 0))


def test_mma_accumulator_runs_are_column_pairs():
    t = TensorType((128, 128), f16, MMA)
    runs = vector_runs(t, ir.HalfType(), list(range(128)))
    assert runs[0] == 2 and runs[1] == 0 and runs[2] == 2
    assert sum(1 for w in runs.values() if w) == 64


def test_blocked_rows_of_eight_halves_are_one_16_byte_run():
    t = TensorType((128, 128), f16, BLOCKED)
    runs = vector_runs(t, ir.HalfType(), list(range(128)))
    assert [runs[r] for r in range(0, 128, 8)] == [8] * 16
    # f32: 16 bytes hold 4, so each row of 8 is two runs
    t32 = TensorType((128, 128), f32, BLOCKED)
    assert vector_runs(t32, ir.FloatType(), list(range(128)))[4] == 4


def test_runs_skip_pointers_and_missing_registers():
    t = TensorType((128, 128), PointerType(f16), BLOCKED)
    assert vector_runs(t, ir.PointerType(), list(range(128))) == {}
    t = TensorType((128, 128), f16, BLOCKED)
    runs = vector_runs(t, ir.HalfType(), [r for r in range(128) if r != 3])
    assert runs.get(0, 1) in (1, 2) and runs.get(3) is None


def test_matmul_epilogue_is_vectorized_in_ptx():
    compiled, _, _ = compile_matmul(256, 256, 256, (128, 128, 64), 4, stop_after="ptx")
    ptx = compiled.asm["ptx"]
    assert "ld.shared.v4" in ptx
    assert "st.shared.b16" not in ptx and "ld.shared.b16" not in ptx and "ld.shared.u16" not in ptx
