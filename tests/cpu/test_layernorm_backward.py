"""Layer norm in the shape of Triton's tutorial 05 (tests/cpu/layernorm_kernels.py): compiled for
sm_90 with no layout conversion left (the scf.if of the backward's locked section and the
forward's loops carry the coalesced loads' layout, and the lock's unread atomics are not
broadcast), and its values through the interpreter against numpy."""
from __future__ import annotations

import re

import numpy as np
import pytest

from tests.cpu.layernorm_kernels import (backward, launch_shapes, ln_backward_columns,
                                         ln_backward_rows, ln_forward, reference_backward)

F16, F32, I32 = "*fp16:16", "*fp32:16", "*i32:16"


def _compile_rows(n: int):
    shape = launch_shapes(n)
    return ln_backward_rows.warmup(F16, F16, F16, F16, F32, F32, F16, F16, I32, "i32:16",
                                   "i32:16", GROUPS=shape["groups"], BLOCK=shape["block"],
                                   num_warps=shape["warps"], grid=(1,))


@pytest.mark.parametrize("n", [4096, 15872])
def test_backward_rows_keep_one_layout_through_the_locked_if(n):
    compiled = _compile_rows(n)
    ttgir = compiled.asm["ttgir"]
    assert "ttg.convert_layout" not in ttgir
    wide = re.search(r"#(\w+) = #ttg\.blocked<\{sizePerThread = \[8\]", ttgir).group(1)
    assert re.search(rf"scf\.if %\S+ -> \(tensor<\d+xf32, #{wide}>, tensor<\d+xf32, #{wide}>\)",
                     ttgir)
    ptx = compiled.asm["ptx"]
    # two reductions across 8 warps and the lock's CAS broadcast, each between two barriers,
    # and the barrier before the release: the release and the count's exchange add none
    assert len(re.findall(r"\bbar\.sync", ptx)) == 7
    assert compiled.metadata.shared <= 64


def test_forward_loops_and_column_sums_need_no_conversion():
    forward = ln_forward.warmup(F16, F16, F16, F16, F32, F32, "i32:16", "i32:16", "fp32",
                                BLOCK=16384, num_warps=8, grid=(1,))
    columns = ln_backward_columns.warmup(F16, F16, F16, F16, "i32:16", "i32:16", BLOCK_R=32,
                                         BLOCK_C=128, grid=(1,))
    for compiled in (forward, columns):
        assert "ttg.convert_layout" not in compiled.asm["ttgir"]
    assert forward.metadata.shared <= 64
    assert columns.metadata.shared <= 2048      # the 32x128 sums reduced across 2 row lanes


def test_backward_values_through_the_interpreter():
    rng = np.random.default_rng(3)
    rows, n = 260, 200               # 256 partial-sum groups: rows 256.. add into filled ones
    x = (rng.standard_normal((rows, n)) * 0.5 - 2.3).astype(np.float16)
    w = rng.random(n).astype(np.float16)
    dy = (rng.standard_normal((rows, n)) * 0.1).astype(np.float16)
    dx_ref, dw_ref, db_ref, mean, rstd = reference_backward(x, w, dy)
    dx, dw, db = backward(x, w, dy, mean.astype(np.float32), rstd.astype(np.float32),
                          np.zeros, np.empty, {"interpret": True})
    np.testing.assert_allclose(dx.astype(np.float64), dx_ref, atol=1e-2)
    np.testing.assert_allclose(dw.astype(np.float64), dw_ref, atol=2e-2, rtol=1e-2)
    np.testing.assert_allclose(db.astype(np.float64), db_ref, atol=2e-2, rtol=1e-2)


def test_forward_values_through_the_interpreter():
    rng = np.random.default_rng(4)
    rows, n = 3, 300                 # three 128-wide steps per row, the last one partial
    x = rng.standard_normal((rows, n)).astype(np.float16)
    w, b = rng.random(n).astype(np.float16), rng.random(n).astype(np.float16)
    y = np.empty_like(x)
    mean, rstd = np.empty(rows, np.float32), np.empty(rows, np.float32)
    ln_forward[(rows,)](x, y, w, b, mean, rstd, n, n, 1e-5, BLOCK=128, interpret=True)
    _, _, _, mean_ref, rstd_ref = reference_backward(x, w, np.zeros_like(x))
    y_ref = (x - mean_ref[:, None]) * rstd_ref[:, None] * w + b
    np.testing.assert_allclose(mean, mean_ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(rstd, rstd_ref, rtol=1e-3)
    np.testing.assert_allclose(y.astype(np.float64), y_ref, atol=1e-2)
