"""SASS control codes (compiler.codegen.sass.control_codes): the stall / yield / scoreboard
fields ptxas encodes in each instruction's upper word, read off nvdisasm's `-hex` listing, and
the main loop's codes (compiler.codegen.loop_stats.sass_loop_controls) that
bench/attention_loops.py sums into "stall cycles/iter"."""
from __future__ import annotations

import shutil

import pytest

from compiler.codegen.loop_stats import sass_loop, sass_loop_controls
from compiler.codegen.sass import ControlCode, control_codes, disassemble

#: two instructions of a Triton 3.6 attention kernel as nvdisasm -hex prints them; Triton's own
#: SASS dump of that kernel shows their control codes as `--:-:1:-:8` and `--:-:3:-:1`
#: (wait mask, read scoreboard, write scoreboard, yield, stall)
LISTING = """\
        /*0000*/                   LDC R1, c[0x0][0x28] ;                    /* 0x00000a00ff017b82 */
                                                                             /* 0x000e700000000800 */
        /*0010*/                   S2R R21, SR_CTAID.Y ;                     /* 0x0000000000157919 */
                                                                             /* 0x000ee20000002600 */
.L_x_1:
        /*0020*/                   IADD3 R2, R2, 0x1, RZ ;                   /* 0x0000000102027810 */
                                                                             /* 0x000fca0007ffe0ff */
        /*0030*/              @!P0 BRA `(.L_x_1) ;                           /* 0x0000000000e08947 */
                                                                             /* 0x000fea000383ffff */
"""


def test_control_codes_match_tritons_dump_notation():
    codes = control_codes(LISTING)
    assert [text for _, text, _ in codes] == ["LDC R1, c[0x0][0x28]", "S2R R21, SR_CTAID.Y",
                                              "IADD3 R2, R2, 0x1, RZ", "@!P0 BRA `(.L_x_1)"]
    ldc, s2r = codes[0][2], codes[1][2]
    assert ldc == ControlCode(stall=8, yields=False, write_barrier=1, read_barrier=None,
                              wait_mask=0)
    assert (s2r.stall, s2r.write_barrier, s2r.read_barrier, s2r.yields) == (1, 3, None, False)


def test_decoding_each_field():
    high = (5 << 41) | (0 << 45) | (2 << 46) | (4 << 49) | (0b100101 << 52)
    assert ControlCode.from_high_word(high) == ControlCode(
        stall=5, yields=True, write_barrier=2, read_barrier=4, wait_mask=0b100101)


def test_loop_controls_are_the_loops_instructions():
    loop = sass_loop_controls(LISTING)
    assert [text for text, _ in loop] == ["IADD3 R2, R2, 0x1, RZ", "@!P0 BRA `(.L_x_1)"]
    assert sum(code.stall for _, code in loop) == 5 + 5
    assert sass_loop_controls("no instructions") == []


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not on the PATH")
def test_attention_loop_controls_line_up_with_its_sass():
    from tests.cpu.mma_cases import compile_attention_sm90
    compiled = compile_attention_sm90(64, 64, 64, 4, shape=(1, 2, 256, 64))
    listing = disassemble(compiled.asm["cubin"], line_info=False, hex_words=True)
    if listing is None:
        pytest.skip("nvdisasm is not installed")
    loop = sass_loop_controls(listing)
    plain = sass_loop(disassemble(compiled.asm["cubin"], line_info=False))
    assert [text for text, _ in loop] == plain
    assert all(0 <= code.stall <= 15 for _, code in loop)
    assert sum(code.stall for _, code in loop) >= len(loop)      # at least a cycle each
