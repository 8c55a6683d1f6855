"""A reshape -> permute -> reshape chain (the transpose of a 32x32 tile written as a 4-d
permutation) moves its data once, as Triton's does: each reshape and the trans keep every
element in its thread (`#ttg.linear` results), and one ttg.convert_layout before the store
moves the data; the lowered kernel computes the transpose on the SIMT evaluator."""
from __future__ import annotations

import re

import numpy as np

import compiler as triton
import compiler.language as tl
from tests.cpu.mma_cases import compile_jit, run_on_simt


@triton.jit
def _permuted_copy(src, dst, ROWS: tl.constexpr, COLS: tl.constexpr):
    rows = tl.arange(0, ROWS)[:, None]
    cols = tl.arange(0, COLS)[None, :]
    x = tl.load(src + rows * COLS + cols)
    x = tl.reshape(x, (32, 4, 4, 2))
    x = tl.permute(x, (1, 2, 3, 0))
    x = tl.reshape(x, (ROWS * COLS,))
    tl.store(dst + tl.arange(0, ROWS * COLS), x)


def _compiled(inp, out):
    return compile_jit(_permuted_copy, [inp, out], {"ROWS": 32, "COLS": 32},
                       {"num_warps": 4}, None, stop_after="ttgir", target={"arch": 90})


def test_the_chain_keeps_elements_in_their_threads_and_converts_once():
    inp = np.arange(1024, dtype=np.int32).reshape(32, 32)
    compiled, _ = _compiled(inp, np.zeros_like(inp))
    text = compiled.asm["ttgir"]
    assert text.count("ttg.convert_layout ") == 1
    for line in text.splitlines():
        if re.search(r"= tt\.(reshape|trans) ", line):
            assert "allocation.offset" not in line and "#linear" in line, line
    convert = next(line for line in text.splitlines() if "ttg.convert_layout " in line)
    store = next(line for line in text.splitlines() if "tt.store " in line)
    assert convert.split(" = ")[0].strip() in store


def test_the_chain_computes_the_transpose():
    inp = np.arange(1024, dtype=np.int32).reshape(32, 32)
    out = np.zeros_like(inp)
    compiled, args = _compiled(inp, out)
    got, = run_on_simt(compiled, (1,), args, [out])
    np.testing.assert_array_equal(got, inp.T)
