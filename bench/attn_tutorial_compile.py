"""Compile every kernel of Triton's tutorial 06 (fused attention) for every autotuner config,
dtype and mode its test and benchmark use, through PTX and ptxas, on a machine without a GPU.

usage: python bench/attn_tutorial_compile.py PATH/06-fused-attention.py [--arch 90] [--only NAME]
Prints one line per (kernel, config): ok with registers/spills/shared bytes, or the error.
The tutorial file is Triton's (reference data, never copied into the repo)."""
from __future__ import annotations

import argparse
import importlib.util
import sys
import traceback


def load_tutorial(path: str):
    """Import the tutorial with `triton` aliased to this compiler and a Hopper capability."""
    import torch
    torch.cuda.get_device_capability = lambda *a, **k: (9, 0)
    from compiler import triton_alias
    triton_alias.install()
    spec = importlib.util.spec_from_file_location("tutorial06", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["tutorial06"] = module
    spec.loader.exec_module(module)
    return module


def _report(name: str, label: str, compile_one) -> bool:
    try:
        kernel = compile_one()
    except Exception as err:                       # noqa: BLE001 - a report, not a handler
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        print(f"FAIL {name} {label}: {type(err).__name__}: {first[:300]}")
        if "internal" in str(err):
            traceback.print_exc(limit=3)
        return False
    info = kernel.trace.cubin_info or {}
    print(f"ok   {name} {label}: regs={info.get('registers')} spills={info.get('spill_stores')} "
          f"shared={kernel.metadata.shared}")
    return True


def forward_cases(t, z=1, h=2, n_ctx=1024, head_dim=64):
    """(kernel name, label, thunk) for _attn_fwd_tma (fp16, causal and not) and _attn_fwd
    (the fp8 benchmark path on Hopper: q/k fp8e5, v transposed fp8e5)."""
    import torch
    from triton.tools.tensor_descriptor import TensorDescriptor
    cases = []
    y_dim = z * h * n_ctx
    for causal in (True, False):
        q = torch.empty((z, h, n_ctx, head_dim), dtype=torch.float16)
        for conf in t._attn_fwd_tma.configs:
            bm, bn = conf.kwargs["BLOCK_M"], conf.kwargs["BLOCK_N"]
            descs = [TensorDescriptor(q, shape=[y_dim, head_dim], strides=[head_dim, 1],
                                      block_shape=shape)
                     for shape in ([bm, head_dim], [bn, head_dim], [bn, head_dim], [bm, head_dim])]
            m = torch.empty((z, h, n_ctx), dtype=torch.float32)

            def thunk(descs=descs, m=m, conf=conf, causal=causal):
                return t._attn_fwd_tma.fn.warmup(
                    0.5, m, z, h, *descs, n_ctx, HEAD_DIM=head_dim, FP8_OUTPUT=False,
                    STAGE=3 if causal else 1, num_warps=conf.num_warps,
                    num_stages=conf.num_stages, grid=(1,), **conf.kwargs)
            cases.append(("_attn_fwd_tma", f"causal={causal} {conf}", thunk))
    for causal in (True, False):
        q = torch.empty((z, h, n_ctx, head_dim), dtype=torch.float8_e5m2)
        v = torch.empty((z, h, head_dim, n_ctx), dtype=torch.float8_e5m2).permute(0, 1, 3, 2)
        o = torch.empty((z, h, n_ctx, head_dim), dtype=torch.float8_e5m2)
        m = torch.empty((z, h, n_ctx), dtype=torch.float32)
        for conf in t._attn_fwd.configs:
            def thunk(q=q, v=v, o=o, m=m, conf=conf, causal=causal):
                return t._attn_fwd.fn.warmup(
                    q, q, v, 0.5, m, o, *q.stride(), *q.stride(), *v.stride(), *o.stride(),
                    z, h, N_CTX=n_ctx, HEAD_DIM=head_dim, CAUSAL=causal,
                    num_warps=conf.num_warps, num_stages=conf.num_stages, grid=(1,),
                    **conf.kwargs)
            cases.append(("_attn_fwd[fp8]", f"causal={causal} {conf}", thunk))
    return cases


def backward_cases(t, z=1, h=2, n_ctx=1024, head_dim=64):
    """(kernel name, label, thunk) for _attn_bwd_preprocess and _attn_bwd as backward() calls them."""
    import torch
    q = torch.empty((z, h, n_ctx, head_dim), dtype=torch.float16)
    m = torch.empty((z, h, n_ctx), dtype=torch.float32)

    def pre():
        return t._attn_bwd_preprocess.warmup(q, q, m, z, h, n_ctx, BLOCK_M=128,
                                             HEAD_DIM=head_dim, grid=(1,))

    def bwd():
        return t._attn_bwd.warmup(q, q, q, 0.5, q, q, q, q, m, m, *q.stride(), h, n_ctx,
                                  BLOCK_M1=32, BLOCK_N1=128, BLOCK_M2=128, BLOCK_N2=32,
                                  BLK_SLICE_FACTOR=2, HEAD_DIM=head_dim, num_warps=4,
                                  num_stages=5, grid=(1,))
    return [("_attn_bwd_preprocess", "", pre), ("_attn_bwd", "", bwd)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tutorial")
    parser.add_argument("--only", default="", help="run the kernels whose name contains this")
    args = parser.parse_args()
    t = load_tutorial(args.tutorial)
    cases = forward_cases(t) + backward_cases(t)
    failed = sum(not _report(name, label, thunk) for name, label, thunk in cases
                 if args.only in name)
    print(f"{failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
