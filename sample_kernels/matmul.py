"""Blocked matrix multiplication with grouped program ordering, in the style of Triton's
matmul tutorial: C = A @ B for float16 A, B with float32 accumulation.

Run it: `python sample_kernels/matmul.py`, or `tile-explore sample_kernels/matmul.py`.
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
    c = accumulator.to(tl.float16)
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
    main()
