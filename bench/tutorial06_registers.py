"""Registers, spill bytes and ptxas performance warnings of tutorial 06's `_attn_fwd_tma` (the
kernel its fp16 forward benchmark runs on Hopper), compiled for sm_90 by ours and by a real
Triton 3.6, side by side. No GPU needed: Triton compiles for a `GPUTarget("cuda", 90, 32)`.

    PYTHONPATH=. python bench/tutorial06_registers.py TUTORIAL [--triton-path DIR] [--deps-path DIR-WITH-TORCH]

TUTORIAL is Triton's 06-fused-attention.py (reference data, never part of this repository);
DIR a folder where `import triton` finds the real Triton (e.g. its wheel unpacked with
`pip install --no-deps --target DIR triton==3.6.0`); without it only ours is listed. Each
compiler runs in its own process (ours aliases `triton`). Rows: HEAD_DIM, BLOCK_M, BLOCK_N,
warps, stages, STAGE (1 non-causal, 3 causal) for the tutorial's kept configs at 3 stages.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import side_by_side  # noqa: E402 - bench/ is put on the path just above
from side_by_side import cpu_target, ptxas_report  # noqa: E402

Z, H, N_CTX = 4, 32, 4096


def configs(tutorial) -> list:
    """(HEAD_DIM, BLOCK_M, BLOCK_N, warps, stages, STAGE) the tutorial keeps, at 3 stages."""
    rows = []
    for head_dim in (64, 128):
        for stage in (1, 3):
            for conf in tutorial._attn_fwd_tma.configs:
                bm, bn = conf.kwargs["BLOCK_M"], conf.kwargs["BLOCK_N"]
                if bn <= head_dim and conf.num_stages == 3:
                    rows.append((head_dim, bm, bn, conf.num_warps, conf.num_stages, stage))
    return rows


def ours(path: str) -> dict:
    """{config: facts} compiled by this compiler."""
    import attn_tutorial_compile
    tutorial = attn_tutorial_compile.load_tutorial(path)
    import torch
    from triton.tools.tensor_descriptor import TensorDescriptor
    found = {}
    for head_dim, bm, bn, warps, stages, stage in configs(tutorial):
        q = torch.empty((Z, H, N_CTX, head_dim), dtype=torch.float16)
        descs = [TensorDescriptor(q, shape=[Z * H * N_CTX, head_dim], strides=[head_dim, 1],
                                  block_shape=shape)
                 for shape in ([bm, head_dim], [bn, head_dim], [bn, head_dim], [bm, head_dim])]
        m = torch.empty((Z, H, N_CTX), dtype=torch.float32)
        kernel = tutorial._attn_fwd_tma.fn.warmup(
            0.5, m, Z, H, *descs, N_CTX, HEAD_DIM=head_dim, FP8_OUTPUT=False, STAGE=stage,
            BLOCK_M=bm, BLOCK_N=bn, num_warps=warps, num_stages=stages, grid=(1,))
        found[str((head_dim, bm, bn, warps, stages, stage))] = ptxas_report(kernel.asm["ptx"])
    return found


def real_tutorial(path: str):
    """(tutorial module, sm_90 GPUTarget) with the real Triton imported and a CPU driver
    stand-in active (the tutorial asks the driver at import); run in a process of its own."""
    import importlib.util
    import torch
    target = cpu_target()
    torch.cuda.get_device_capability = lambda *args, **kwargs: (9, 0)
    spec = importlib.util.spec_from_file_location("tutorial06", path)
    tutorial = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tutorial)
    return tutorial, target


def triton(path: str) -> dict:
    """{config: facts} compiled by the real Triton (run in a process of its own)."""
    import triton as real
    tutorial, target = real_tutorial(path)
    fn = tutorial._attn_fwd_tma.fn
    found = {}
    for head_dim, bm, bn, warps, stages, stage in configs(tutorial):
        signature = {"sm_scale": "fp32", "M": "*fp32", "Z": "i32", "H": "i32", "N_CTX": "i32"}
        for name, rows in (("desc_q", bm), ("desc_k", bn), ("desc_v", bn), ("desc_o", bm)):
            signature[name] = f"tensordesc<fp16[{rows}, {head_dim}]>"
        constants = {"HEAD_DIM": head_dim, "BLOCK_M": bm, "BLOCK_N": bn, "FP8_OUTPUT": False,
                     "STAGE": stage}
        signature.update({name: "constexpr" for name in constants})
        signature = {name: signature[name] for name in fn.arg_names}
        source = real.compiler.ASTSource(fn, signature, constants,
                                         {(1,): [["tt.divisibility", 16]],
                                          (8,): [["tt.divisibility", 16]]})
        kernel = real.compile(source, target=target,
                              options={"num_warps": warps, "num_stages": stages})
        found[str((head_dim, bm, bn, warps, stages, stage))] = ptxas_report(kernel.asm["ptx"])
    return found


def _cell(facts: dict | None) -> str:
    if not facts:
        return "-"
    spills = f" + {facts['spills']} B" if facts["spills"] else ""
    warnings = f" {','.join(facts['warnings'])}" if facts["warnings"] else ""
    return f"{facts['registers']}{spills}{warnings}"


def table(results: dict) -> None:
    """The markdown table of both compilers' registers per config."""
    print("| HEAD_DIM, BM, BN, warps, stages, STAGE | ours regs | Triton 3.6 regs |")
    print("|---|---|---|")
    for key, facts in results["ours"].items():
        print(f"| {key} | {_cell(facts)} | {_cell(results.get('Triton 3.6', {}).get(key))} |")


if __name__ == "__main__":
    sys.exit(side_by_side.main(__file__, __doc__.splitlines()[0], ours, triton, table))
