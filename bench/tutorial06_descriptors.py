"""Triton tutorial 06 (fused attention) through its tensor-descriptor path, unmodified, with
`import triton` resolving to this compiler. The tutorial is read from `.triton-ref/` (never
committed; see ../shared/tools/triton-compat/README.md for where it comes from).

On a GPU (default): the tutorial's `test_op` (forward through `_attn_fwd_tma` with host
`TensorDescriptor`s and its autotune pre_hook, backward through `_attn_bwd`) at a few shapes,
then the forward's speed (triton.testing.do_bench) at Z=4 H=32 N=4096.
    python bench/tutorial06_descriptors.py

On the CPU (`--cpu`): `test_op` at small shapes through the interpreter (the tutorial asks for a
sm_90 device, so the capability query answers (9, 0)), then `_attn_fwd_tma` compiled for sm_90
to cubin with ptxas for each autotune config the tutorial keeps at HEAD_DIM 64 and 128.
    python bench/tutorial06_descriptors.py --cpu
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / ".triton-ref" / "06-fused-attention.py"


def load_tutorial(cpu: bool):
    """The tutorial as a module, `triton` aliased to ours (on the CPU: sm_90 pretended)."""
    sys.path.insert(0, str(ROOT))
    from compiler import triton_alias
    triton_alias.install()
    import torch
    if cpu:
        os.environ.setdefault("TILE_INTERPRET", "1")
        torch.cuda.get_device_capability = lambda *args, **kwargs: (9, 0)
    spec = importlib.util.spec_from_file_location("tutorial06", TUTORIAL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if cpu:
        module.supports_tma = lambda: True
    return module


def run_test_op(module, shapes) -> None:
    """The tutorial's own check (fwd and bwd against torch) at each (Z, H, N_CTX, D, causal);
    the tutorial's backward is written for causal attention only (its test_op is parametrized
    with causal=True), so a non-causal shape checks the forward alone, as test_op does it."""
    import torch

    for shape in shapes:
        began = time.perf_counter()
        if shape[-1]:
            module.test_op(*shape)
        else:
            z, h, n_ctx, head_dim, _ = shape
            device = module.DEVICE
            q, k, v = (torch.empty((z, h, n_ctx, head_dim), dtype=torch.float16, device=device)
                       .normal_(mean=0.0, std=0.5) for _ in range(3))
            p = torch.softmax((torch.matmul(q, k.transpose(2, 3)) * 0.5).float(), dim=-1)
            ref = torch.matmul(p.half(), v)
            out = module.attention(q, k, v, False, 0.5).half()
            assert torch.allclose(ref, out, atol=1e-2, rtol=0), (ref - out).abs().max()
        what = "test_op" if shape[-1] else "forward"
        print(f"{what}{shape}: ok ({time.perf_counter() - began:.1f} s)", flush=True)


def compile_tma_configs(module) -> None:
    """`_attn_fwd_tma` to cubin on sm_90 for each kept config (block shapes set as the
    tutorial's pre_hook does), with ptxas' register and spill counts."""
    import numpy as np

    from compiler.tools.tensor_descriptor import TensorDescriptor
    from tests.cpu.mma_cases import compile_jit

    tuner = module._attn_fwd_tma
    for head_dim in (64, 128):
        x = np.zeros((4 * 32 * 4096, head_dim), np.float16)
        for config in tuner.configs:
            bm, bn = config.kwargs["BLOCK_M"], config.kwargs["BLOCK_N"]
            if bn > head_dim:
                continue
            descs = [TensorDescriptor.from_tensor(x, [b, head_dim]) for b in (bm, bn, bn, bm)]
            m = np.zeros(4 * 32 * 4096, np.float32)
            for stage in (1, 3):
                began = time.perf_counter()
                compiled, _ = compile_jit(tuner.fn, [0.5, m, 4, 32, *descs, 4096],
                                          {"HEAD_DIM": head_dim, "BLOCK_M": bm, "BLOCK_N": bn,
                                           "FP8_OUTPUT": False, "STAGE": stage},
                                          {"num_warps": config.num_warps,
                                           "num_stages": config.num_stages}, None,
                                          stop_after=None, target={"arch": 90})
                info = compiled.trace.cubin_info
                wgmma = "wgmma.mma_async" in compiled.asm["ptx"]
                print(f"D{head_dim} BM{bm} BN{bn} w{config.num_warps} s{config.num_stages} "
                      f"STAGE{stage}: cubin {len(compiled.asm['cubin'])} B, wgmma {wgmma}, "
                      f"regs {info.get('registers')}, spills {info.get('spill_stores')} "
                      f"({time.perf_counter() - began:.1f} s)", flush=True)


def bench_forward(module) -> None:
    """Forward TFLOP/s at Z=4 H=32 N=4096, D 64 and 128, causal and not (the tutorial's sizes)."""
    import torch
    import triton

    for head_dim in (64, 128):
        for causal in (False, True):
            q, k, v = (torch.randn((4, 32, 4096, head_dim), dtype=torch.float16, device="cuda")
                       for _ in range(3))
            ms = triton.testing.do_bench(lambda: module.attention(q, k, v, causal, 0.5))
            flops = 4.0 * 4 * 32 * 4096 * 4096 * head_dim * (0.5 if causal else 1.0)
            print(f"fwd D{head_dim} causal={causal}: {ms:.3f} ms, "
                  f"{flops * 1e-12 / (ms * 1e-3):.0f} TFLOP/s, "
                  f"config {module._attn_fwd_tma.best_config}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu", action="store_true", help="interpreter and ptxas, no GPU")
    args = parser.parse_args()
    module = load_tutorial(args.cpu)
    if args.cpu:
        run_test_op(module, [(1, 2, 128, 64, False), (1, 2, 128, 64, True)])
        compile_tma_configs(module)
    else:
        run_test_op(module, [(1, 2, 1024, 64, False), (1, 2, 1024, 64, True),
                             (2, 4, 512, 128, True), (1, 1, 128, 64, False)])
        bench_forward(module)


if __name__ == "__main__":
    main()
