"""Descriptor matmul: ours (TMA and the pointer path) against Triton 3.6's, same kernel source.

The kernels below are compiled by both compilers: Triton's copy imports the real `triton`, ours
the same text with its imports pointed at `compiler`. In `matmul_desc` A, B and C are host
`TensorDescriptor`s; in `matmul_device_desc` the kernel makes them (`tl.make_tensor_descriptor`,
tensor maps written to global scratch memory from `set_allocator`, one torch buffer per launch
in both compilers). Ours runs with `tma=True` (cp.async.bulk.tensor into a num_stages ring with
mbarriers) and without (masked pointer loads, the cp.async pipeline). Timing is
`triton.testing.do_bench` for all, 4096^3 fp16 by default, after a correctness check against
torch. Prints one line per case with TFLOP/s and the ratio to Triton.

Run on the H200 from the project root:
    PYTHONPATH=. python bench/tma_matmul.py
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
from pathlib import Path

KERNEL = '''
import triton, triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def matmul_desc(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * num_n
    first_m = (pid // group) * GROUP_M
    size_m = min(num_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % group) % size_m)
    pid_n = (pid % group) // size_m
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
        b = b_desc.load([k * BLOCK_K, pid_n * BLOCK_N])
        acc = tl.dot(a, b, acc)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(tl.float16))


@triton.jit
def matmul_device_desc(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr,
                       BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [N, 1], [BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BLOCK_M, BLOCK_N])
    matmul_desc(a_desc, b_desc, c_desc, M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M)
'''

#: (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages)
CONFIGS = [(128, 256, 64, 8, 3), (128, 128, 64, 8, 3)]


def load(ours: bool):
    """The kernel module, compiled by Triton or (`ours`) by this project's compiler."""
    source = KERNEL
    if ours:
        source = source.replace("import triton, triton.language as tl",
                                "import compiler as triton\nimport compiler.language as tl")
        source = source.replace("from triton.tools.tensor_descriptor",
                                "from compiler.tools.tensor_descriptor")
    name = "tma_matmul_ours" if ours else "tma_matmul_triton"
    path = Path(tempfile.mkdtemp()) / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=4096)
    args = parser.parse_args(argv)
    import torch
    import triton

    ours, theirs = load(True), load(False)
    m = n = k = args.size
    a = torch.randn((m, k), device="cuda", dtype=torch.float16)
    b = torch.randn((k, n), device="cuda", dtype=torch.float16)
    want = a @ b
    flops = 2 * m * n * k
    do_bench = triton.testing.do_bench
    failed = 0
    for device in (False, True):
        kind = "device descriptors" if device else "host descriptors"
        for bm, bn, bk, warps, stages in CONFIGS:
            grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
            results = {}
            for label, module, options in (("triton", theirs, {}),
                                           ("ours tma", ours, {"tma": True}),
                                           ("ours pointers", ours, {"tma": False})):
                c = torch.empty((m, n), device="cuda", dtype=torch.float16)
                if device:
                    module.triton.set_allocator(
                        lambda size, align, stream: torch.empty(size, device="cuda",
                                                                dtype=torch.int8))
                    kernel, inputs = module.matmul_device_desc, (a, b, c)
                else:
                    kernel = module.matmul_desc
                    inputs = [module.TensorDescriptor.from_tensor(t, block) for t, block in
                              ((a, [bm, bk]), (b, [bk, bn]), (c, [bm, bn]))]

                def run():
                    kernel[grid](*inputs, m, n, k, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                 GROUP_M=8, num_warps=warps, num_stages=stages, **options)
                run()
                torch.cuda.synchronize()
                ok = torch.allclose(c.float(), want.float(), atol=0.5, rtol=1e-2)
                failed += not ok
                ms = do_bench(run, warmup=50, rep=300, return_mode="median")
                results[label] = (flops / (ms * 1e-3) / 1e12, ok)
            base = results["triton"][0]
            for label, (tflops, ok) in results.items():
                print(f"matmul fp16 {m}^3 {kind} {bm}x{bn}x{bk} w{warps} s{stages} "
                      f"{label:14s} {tflops:7.1f} TFLOP/s  ratio {tflops / base:5.2f}  "
                      f"{'ok' if ok else 'WRONG'}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
