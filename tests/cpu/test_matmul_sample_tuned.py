"""sample_kernels/matmul.py's autotuned kernels (issue 10): their config lists are Triton's
tutorial CUDA configs, and every config compiles for sm_90 to tensor-core PTX (wgmma with 4 or
8 warps, mma.sync with 2, as Triton's do) without spills. Speeds: bench/matmul_best_of.py."""
from __future__ import annotations

import shutil

import pytest

from compiler.compiler import compile as compile_source
from compiler.runtime.autotuner import Autotuner
from compiler.runtime.specialization import ASTSource
from sample_kernels import matmul as sample

needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not on the PATH")


def _compile(dtype: str, config: tuple):
    bm, bn, bk, warps, stages = config
    out = "fp16" if dtype.startswith("fp8") else dtype
    sig = {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": f"*{out}", "M": "i32",
           "N": "i32", "K": "i32", "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}
    const = {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1, "BLOCK_SIZE_M": bm,
             "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 8}
    return compile_source(ASTSource(sample.matmul_kernel, sig, const,
                                    {"divisibility_16": list(sig)}),
                          options={"num_warps": warps, "num_stages": stages, "arch": 90})


def test_tuned_kernels_carry_the_tutorial_configs():
    for tuned, configs in ((sample.matmul_kernel_fp16, sample.FP16_CONFIGS),
                           (sample.matmul_kernel_fp8, sample.FP8_CONFIGS)):
        assert isinstance(tuned, Autotuner)
        got = [(c.kwargs["BLOCK_SIZE_M"], c.kwargs["BLOCK_SIZE_N"], c.kwargs["BLOCK_SIZE_K"],
                c.num_warps, c.num_stages) for c in tuned.configs]
        assert got == configs
        assert all(c.kwargs["GROUP_SIZE_M"] == 8 for c in tuned.configs)
    assert len(set(sample.FP16_CONFIGS) | set(sample.FP8_CONFIGS)) == 16


@needs_ptxas
@pytest.mark.parametrize("dtype,config",
                         [("fp16", c) for c in sample.FP16_CONFIGS] +
                         [("bf16", sample.FP16_CONFIGS[0]), ("bf16", sample.FP16_CONFIGS[2])] +
                         [("fp8e4nv", c) for c in sample.FP8_CONFIGS] +
                         [("fp8e5", sample.FP8_CONFIGS[0])])
def test_every_tuned_config_compiles_to_tensor_cores_without_spills(dtype, config):
    compiled = _compile(dtype, config)
    ptx = compiled.asm["ptx"]
    if config[3] >= 4:
        assert "wgmma.mma_async" in ptx
    else:
        assert "mma.sync.aligned" in ptx and "wgmma" not in ptx
    assert compiled.trace.cubin_info["spill_stores"] == 0, compiled.trace.cubin_info["report"]


def test_tuned_matmul_refuses_what_it_cannot_multiply():
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match="cannot be multiplied"):
        sample.tuned_matmul(torch.zeros(4, 3), torch.zeros(4, 3))
    with pytest.raises(ValueError, match="one dtype"):
        sample.tuned_matmul(torch.zeros(4, 3, dtype=torch.float16), torch.zeros(3, 4))
    with pytest.raises(ValueError, match="not torch.float32"):
        sample.tuned_matmul(torch.zeros(4, 3), torch.zeros(3, 4))
