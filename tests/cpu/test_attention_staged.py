"""bench/kernels/attention_staged.py (the two-stage attention forward the H200 benchmark times
beside the sample) through the interpreter against numpy: tails that are not multiples of the
blocks, causal and not, BLOCK_M > BLOCK_N; and its compile for sm_90 puts both loops on wgmma."""
import importlib.util
import shutil
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _module():
    spec = importlib.util.spec_from_file_location(
        "attention_staged", ROOT / "bench" / "kernels" / "attention_staged.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_staged_attention_matches_numpy_in_the_interpreter():
    _module().main()


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not on the PATH")
def test_the_staged_attention_compiles_both_loops_to_wgmma():
    from tests.cpu.mma_cases import compile_jit
    module = _module()
    shape = (1, 2, 256, 64)
    q = np.zeros(shape, np.float16)
    compiled, _ = compile_jit(module.attention_kernel,
                              [q, q, q, q, 0.125, *module._strides(shape) * 4, 2, 256],
                              {"HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64, "CAUSAL": True},
                              {"num_warps": 8, "num_stages": 3}, None, stop_after=None,
                              target={"arch": 90})
    ptx = compiled.asm["ptx"]
    assert ptx.count("wgmma.mma_async") >= 2 * 8      # q.k and p.v in each of the two loops
    assert "cp.async.wait_group" in ptx
    assert compiled.trace.cubin_info["spill_stores"] == 0
