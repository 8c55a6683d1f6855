"""Blocked matrix multiplication with grouped program ordering, in the style of Triton's
matmul tutorial: C = A @ B for float16 A, B with float32 accumulation.

Run it: `python sample_kernels/matmul.py`, or `tile-explore sample_kernels/matmul.py`.
`tuned_matmul(a, b)` is the same kernel autotuned over the CUDA configs of Triton's matmul
tutorial, for torch tensors on the GPU: float16 and bfloat16 (C in the inputs' dtype) and
float8_e4m3fn / float8_e5m2 (C in float16), as `python sample_kernels/matmul.py --tuned`.
"""
import numpy as np

import compiler as triton
import compiler.language as tl
from compiler.runtime.arrays import empty_like, to_device, to_host


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                  BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    c = accumulator.to(c_ptr.dtype.element_ty)
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


def matmul(a, b, M: int, N: int, K: int, block_m=32, block_n=32, block_k=32, group_m=8,
           num_warps=4):
    """C = A @ B for row-major float16 (M, K) and (K, N) arrays."""
    c = empty_like(np.empty((M, N), dtype=np.float16))
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_SIZE_M"]) * triton.cdiv(N, meta["BLOCK_SIZE_N"]),)
    matmul_kernel[grid](a, b, c, M, N, K, K, 1, N, 1, N, 1,
                        BLOCK_SIZE_M=block_m, BLOCK_SIZE_N=block_n, BLOCK_SIZE_K=block_k,
                        GROUP_SIZE_M=group_m, num_warps=num_warps)
    return c


#: Triton's matmul tutorial's CUDA configs, as data:
#: (BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, num_warps, num_stages), GROUP_SIZE_M 8
FP16_CONFIGS = [(128, 256, 64, 8, 3), (64, 256, 32, 4, 4), (128, 128, 32, 4, 4),
                (128, 64, 32, 4, 4), (64, 128, 32, 4, 4), (128, 32, 32, 4, 4),
                (64, 32, 32, 2, 5), (32, 64, 32, 2, 5)]
FP8_CONFIGS = [(128, 256, 128, 8, 3), (256, 128, 128, 8, 3), (256, 64, 128, 4, 4),
               (64, 256, 128, 4, 4), (128, 128, 128, 4, 4), (128, 64, 64, 4, 4),
               (64, 128, 64, 4, 4), (128, 32, 64, 4, 4)]


def _autotuned(configs):
    """`matmul_kernel` tuned over `configs` once per (M, N, K)."""
    return triton.autotune(
        configs=[triton.Config({"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk,
                                "GROUP_SIZE_M": 8}, num_warps=warps, num_stages=stages)
                 for bm, bn, bk, warps, stages in configs],
        key=["M", "N", "K"])(matmul_kernel)


matmul_kernel_fp16 = _autotuned(FP16_CONFIGS)
matmul_kernel_fp8 = _autotuned(FP8_CONFIGS)


def tuned_matmul(a, b):
    """C = A @ B for 2-D torch CUDA tensors (float16, bfloat16 or float8), autotuned over the
    tutorial's configs for their dtype; C is float16 for float8 inputs, else the inputs'
    dtype."""
    import torch

    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"tuned_matmul: shapes {tuple(a.shape)} and {tuple(b.shape)} "
                         f"cannot be multiplied")
    if a.dtype != b.dtype:
        raise ValueError(f"tuned_matmul: A is {a.dtype} and B is {b.dtype}; give both one dtype")
    fp8 = a.dtype in (torch.float8_e4m3fn, torch.float8_e5m2)
    if not fp8 and a.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"tuned_matmul takes float16, bfloat16, float8_e4m3fn or "
                         f"float8_e5m2 tensors, not {a.dtype}")
    (M, K), N = a.shape, b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=torch.float16 if fp8 else a.dtype)
    kernel = matmul_kernel_fp8 if fp8 else matmul_kernel_fp16
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_SIZE_M"]) * triton.cdiv(N, meta["BLOCK_SIZE_N"]),)
    kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                 c.stride(0), c.stride(1))
    return c


def main_tuned(dtype: str = "float16", size: int = 4096) -> None:
    """Run `tuned_matmul` on random (size, size) torch tensors and check it against torch."""
    try:
        import torch
    except ImportError:
        raise SystemExit("--tuned runs on torch CUDA tensors: torch is not installed") from None
    if not torch.cuda.is_available():
        raise SystemExit("--tuned runs on torch CUDA tensors: torch sees no CUDA GPU here")

    torch_dtype = getattr(torch, dtype)
    a = torch.randn(size, size, device="cuda", dtype=torch.float16).to(torch_dtype)
    b = torch.randn(size, size, device="cuda", dtype=torch.float16).to(torch_dtype)
    c = tuned_matmul(a, b)
    expected = a.float() @ b.float()
    err = (c.float() - expected).abs().max().item()
    tol = 2e-2 * size ** 0.5 * (4 if dtype == "bfloat16" else 1)
    kernel = matmul_kernel_fp8 if "float8" in dtype else matmul_kernel_fp16
    print(f"tuned matmul {dtype} {size}^3: best config {kernel.best_config}, "
          f"max abs error {err:.3g} (tolerance {tol:.3g}): {'OK' if err <= tol else 'WRONG'}")
    if err > tol:
        raise SystemExit(1)


def main(M: int = 77, N: int = 93, K: int = 61) -> None:
    rng = np.random.default_rng()
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = to_host(matmul(to_device(a), to_device(b), M, N, K))
    expected = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    np.testing.assert_allclose(c.astype(np.float32), expected.astype(np.float32),
                               rtol=1e-2, atol=5e-2)
    err = np.max(np.abs(c.astype(np.float32) - expected.astype(np.float32)))
    print(f"matmul: {M}x{K} @ {K}x{N}, max abs error {err:.3g}: OK")


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tuned", action="store_true",
                        help="the autotuned kernel on torch CUDA tensors (needs a GPU and torch)")
    parser.add_argument("--dtype", default="float16",
                        choices=["float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"])
    parser.add_argument("--size", type=int, default=4096, help="M = N = K of --tuned")
    cli = parser.parse_args()
    if cli.tuned:
        main_tuned(cli.dtype, cli.size)
    else:
        main()
