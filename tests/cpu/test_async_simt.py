"""The pipelined matmul on the SIMT evaluator, whose cp.async lands in shared memory only at the
`cp.async.wait_group` that retires it: numpy's results on awkward sizes (K not a multiple of
BLOCK_K, M and N not multiples of the block), and a wait placed one group too late is caught."""
from __future__ import annotations

import numpy as np
import pytest

from compiler.codegen.lowering import LoweringOptions, lower_module
from compiler.ir import parse_module, print_module
from tests.cpu.pipeline_cases import compile_matmul, simulate_matmul


def _expected(arrays):
    a, b, _ = arrays
    return a.astype(np.float32) @ b.astype(np.float32)


@pytest.mark.parametrize("m,n,k,block,warps,stages", [
    (33, 48, 80, (32, 32, 32), 4, 3),     # K % BK != 0, M and N ragged, strides divisible by 16
    (40, 96, 48, (32, 64, 16), 4, 4),     # more stages than needed for the tail
    (17, 32, 32, (16, 32, 32), 1, 3),     # one K iteration: the prologue's second copy is masked
])
def test_pipelined_matmul_matches_numpy(m, n, k, block, warps, stages):
    compiled, args, arrays = compile_matmul(m, n, k, block, warps, num_stages=stages)
    assert "ttg.async_copy_global_to_local" in print_module(compiled.ttgir_module)
    out = simulate_matmul(compiled, args, arrays, block)
    np.testing.assert_allclose(out.astype(np.float32), _expected(arrays), rtol=1e-2, atol=3e-2)


def test_odd_strides_are_not_pipelined():
    # rows of 70 and 50 halfs: 2-byte accesses, narrower than any cp.async
    compiled, args, arrays = compile_matmul(33, 50, 70, (32, 32, 16), 4, num_stages=3)
    assert "async" not in print_module(compiled.ttgir_module)
    out = simulate_matmul(compiled, args, arrays, (32, 32, 16))
    np.testing.assert_allclose(out.astype(np.float32), _expected(arrays), rtol=1e-2, atol=3e-2)


def test_copies_are_cp_async_when_strides_allow():
    compiled, _, _ = compile_matmul(33, 48, 80, (32, 32, 32), 4)
    text = lower_module(compiled.ttgir_module, LoweringOptions(optimize=False)).llvm_ir
    assert "cp.async.cg.shared.global" in text and "cp.async.wait_group 2" in text


def test_a_wait_one_group_late_gives_wrong_results():
    compiled, args, arrays = compile_matmul(33, 48, 80, (32, 32, 32), 4, num_stages=3)
    text = print_module(compiled.ttgir_module)
    # a group per copy (a's, then b's): 3 pending leaves this step's b in flight
    assert text.count(" {num = 2 : i32}") == 1
    broken = parse_module(text.replace(" {num = 2 : i32}", " {num = 3 : i32}"))
    out = simulate_matmul(compiled, args, arrays, (32, 32, 32), module=broken)
    assert np.abs(out.astype(np.float32) - _expected(arrays)).max() > 1.0
