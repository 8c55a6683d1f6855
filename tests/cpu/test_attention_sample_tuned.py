"""sample_kernels/attention.py's autotuned kernel (issue 10): its configs are the Hopper list
bench/bench_attention.py times, and each compiles for sm_90a with two wgmma dots and without
spills, at head dims 64 and 128, causal and not."""
from __future__ import annotations

import shutil

import pytest

from compiler.runtime.autotuner import Autotuner
from sample_kernels import attention as sample
from tests.cpu.mma_cases import compile_attention_sm90

needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not on the PATH")


def test_tuned_attention_carries_the_hopper_configs():
    tuned = sample.attention_kernel_tuned
    assert isinstance(tuned, Autotuner)
    got = [(c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"], c.num_warps, c.num_stages)
           for c in tuned.configs]
    assert got == sample.HOPPER_CONFIGS
    kept = {head_dim: [(c.kwargs["BLOCK_M"], c.num_warps)
                       for c in sample._prune(tuned.configs, {"HEAD_DIM": head_dim})]
            for head_dim in (64, 128)}
    assert kept[64] == [(64, 4), (128, 4), (128, 8), (128, 8)]
    assert kept[128] == [(64, 4), (128, 8), (128, 8)]     # 128 rows on 4 warps spill at D128


@needs_ptxas
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("head_dim", [64, 128])
@pytest.mark.parametrize("config", sample.attention_kernel_tuned.configs, ids=str)
def test_every_hopper_config_compiles_to_wgmma_without_spills(config, head_dim, causal):
    if not sample.fits_in_registers(config, head_dim):
        pytest.skip("pruned by the tuned kernel at this head dim (it spills)")
    compiled = compile_attention_sm90(head_dim, config.kwargs["BLOCK_M"], config.kwargs["BLOCK_N"],
                                      config.num_warps, causal, stop_after=None)
    assert compiled.asm["ptx"].count("wgmma.mma_async") >= 2
    assert compiled.trace.cubin_info["spill_stores"] == 0, compiled.trace.cubin_info["report"]


@pytest.mark.parametrize("causal", [False, True])
def test_tuned_attention_runs_in_the_interpreter(causal):
    import numpy as np

    from compiler.runtime.arrays import gpu_available, to_device, to_host
    if gpu_available():
        pytest.skip("the GPU tier checks it on the device (tests/gpu/test_attention_gpu.py)")
    shape = (1, 2, 40, 64)                      # 40 is not a multiple of any config's block
    rng = np.random.default_rng(int(causal))
    q, k, v = (rng.standard_normal(shape).astype(np.float16) for _ in range(3))
    o = to_host(sample.tuned_attention(to_device(q), to_device(k), to_device(v), shape, causal,
                                       0.125)).astype(np.float32)
    np.testing.assert_allclose(o, sample.reference(q, k, v, causal, 0.125), atol=3e-3, rtol=1e-2)
