"""An fp8 A operand of wgmma in registers (tutorial 06's fp8 p): the `#ttg.dot_op` layout of
kWidth 4 is the PTX ISA's m64nNk32 A fragment for 8-bit types (lane 4g + t holds rows g and
g + 8, columns 4t..4t+3 and 16 + 4t..16 + 4t+3, four elements per 32-bit word), the lowering
packs the words in that order, and the conversion from the accumulator layout (where the
truncated p is made) into it moves every byte to the right place on the SIMT evaluator."""
from __future__ import annotations

import re

import numpy as np
import pytest

from compiler.analysis.layout_to_linear import LANE, REGISTER, WARP, to_linear_layout
from compiler.codegen.lower_wgmma import fragment_registers
from compiler.codegen.lowering import LoweringOptions, lower_module
from compiler.dialects.ttg import DotOperandEncoding, NvidiaMmaEncoding
from compiler.ir import parse_module
from tests.cpu import test_convert_layout_simt as convert_cases
from tests.cpu.simt import run_kernel

MMA_FP8 = NvidiaMmaEncoding(3, 0, (4, 1), (16, 64, 32))
V3_FP8 = ("#ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1], "
          "instrShape = [16, 64, 32]}>")


def _coords(encoding, shape, lane: int, regs: list) -> list:
    layout = to_linear_layout(encoding, shape)
    out = []
    for reg in regs:
        found = layout.apply({REGISTER: reg, LANE: lane, WARP: 0})
        out.append(tuple(found[d] for d in layout.out_dims))
    return out


def test_fp8_register_a_fragment_is_the_ptx_isa_layout():
    enc = DotOperandEncoding(0, MMA_FP8, 4)
    shape = (64, 64)
    for kk in range(2):                                  # the two K steps of 32
        regs = fragment_registers(enc, shape, (16, 32), (0, 32 * kk), per_word=4)
        assert len(regs) == 16
        for lane in (0, 5, 31):
            g, t = lane // 4, lane % 4
            want = [(g + 8 * (i // 4 % 2), 32 * kk + 16 * (i // 8) + 4 * t + i % 4)
                    for i in range(16)]
            assert _coords(enc, shape, lane, regs) == want, (kk, lane)


def test_sixteen_bit_fragments_keep_their_order():
    # per_word=2 (the default) is the f16 A and f32 accumulator fragment, as before
    enc = DotOperandEncoding(0, MMA_FP8, 2)
    regs = fragment_registers(enc, (64, 64), (16, 16), (0, 0))
    assert _coords(enc, (64, 64), 0, regs) == [(0, 0), (0, 1), (8, 0), (8, 1),
                                               (0, 8), (0, 9), (8, 8), (8, 9)]


@pytest.mark.parametrize("pair", [("mma_v3_fp8", "dot_a_v3_fp8"), ("dot_a_v3_fp8", "rows")])
def test_fp8_accumulator_to_register_a_conversion_moves_every_byte(pair, monkeypatch):
    monkeypatch.setitem(convert_cases.LAYOUTS, "mma_v3_fp8", V3_FP8)
    monkeypatch.setitem(convert_cases.LAYOUTS, "dot_a_v3_fp8",
                        f"#ttg.dot_op<{{opIdx = 0, parent = {V3_FP8}, kWidth = 4}}>")
    text = convert_cases._kernel(*pair, "f8E5M2")
    kernel = lower_module(parse_module(text), LoweringOptions(optimize=False))
    n = convert_cases.M * convert_cases.N
    data = (np.arange(n) % 251).astype(np.uint8).reshape(convert_cases.M, convert_cases.N)
    out = np.zeros_like(data)
    memory = run_kernel(kernel, (1,), [data, out])
    np.testing.assert_array_equal(memory.read(1, out), data)
    assert len(re.findall(r"; convert_layout: ", str(kernel.llvm_ir))) == 3
