"""Flash-attention forward, in the style of Triton's fused-attention tutorial (06):
O = softmax(Q K^T * sm_scale) V per (batch, head), one program per block of queries.

q.k^T is a `tl.dot` (fp16 in, fp32 accumulate), the softmax is computed online over blocks of
keys (`tl.max` / `tl.sum` over the accumulator's rows, rescaling with exp2), and p.v is a second
`tl.dot` into the fp32 accumulator. Causal and non-causal, any head dim that is a power of two
(64 and 128 are checked); sequence lengths that are not a multiple of the block are masked.

`tuned_attention` is the same kernel autotuned over HOPPER_CONFIGS, the configs
bench/bench_attention.py times against Triton 3.6 on the H200 (those that spill at a head dim
are pruned).

Run it: `python sample_kernels/attention.py` (through the interpreter against numpy without a
GPU; on a GPU against torch's scaled_dot_product_attention when torch has CUDA, else numpy), or
`tile-explore sample_kernels/attention.py`.
"""
import numpy as np

import compiler as triton
import compiler.language as tl
from compiler.runtime.arrays import empty_like, gpu_available, to_device, to_host


@triton.jit
def attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, sm_scale,
                     stride_qz, stride_qh, stride_qm, stride_qk,
                     stride_kz, stride_kh, stride_kn, stride_kk,
                     stride_vz, stride_vh, stride_vn, stride_vk,
                     stride_oz, stride_oh, stride_om, stride_ok,
                     H, N_CTX,
                     HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = off_hz // H
    off_h = off_hz % H
    q_base = q_ptr + off_z * stride_qz + off_h * stride_qh
    k_base = k_ptr + off_z * stride_kz + off_h * stride_kh
    v_base = v_ptr + off_z * stride_vz + off_h * stride_vh
    o_base = o_ptr + off_z * stride_oz + off_h * stride_oh

    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    row_ok = offs_m[:, None] < N_CTX
    q = tl.load(q_base + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qk,
                mask=row_ok, other=0.0)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504          # exp(x) = exp2(x * log2(e))

    hi = N_CTX
    if CAUSAL:
        hi = tl.minimum((start_m + 1) * BLOCK_M, N_CTX)
    for start_n in range(0, hi, BLOCK_N):
        cols = start_n + offs_n
        col_ok = cols[None, :] < N_CTX
        k = tl.load(k_base + cols[None, :] * stride_kn + offs_d[:, None] * stride_kk,
                    mask=col_ok, other=0.0)
        qk = tl.dot(q, k)
        valid = col_ok
        if CAUSAL:
            valid = valid & (offs_m[:, None] >= cols[None, :])
        qk = tl.where(valid, qk * qk_scale, -1.0e6)
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = tl.load(v_base + cols[:, None] * stride_vn + offs_d[None, :] * stride_vk,
                    mask=cols[:, None] < N_CTX, other=0.0)
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(o_base + offs_m[:, None] * stride_om + offs_d[None, :] * stride_ok,
             acc.to(tl.float16), mask=row_ok)


def _strides(shape) -> tuple:
    """Element strides of a contiguous (Z, H, N_CTX, HEAD_DIM) array."""
    z, h, n, d = shape
    return (h * n * d, n * d, d, 1)


def attention(q, k, v, shape, causal: bool, sm_scale: float, block_m: int = 64,
              block_n: int = 64, num_warps: int = 4):
    """softmax(q k^T * sm_scale) v for contiguous float16 (Z, H, N_CTX, HEAD_DIM) arrays (on the
    GPU or in numpy); returns o in the same place."""
    z, h, n_ctx, head_dim = shape
    o = empty_like(np.empty(shape, dtype=np.float16))
    strides = _strides(shape)
    grid = (triton.cdiv(n_ctx, block_m), z * h)
    attention_kernel[grid](q, k, v, o, sm_scale, *strides, *strides, *strides, *strides,
                           h, n_ctx, HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n,
                           CAUSAL=causal, num_warps=num_warps)
    return o


#: Configs for Hopper, (BLOCK_M, BLOCK_N, num_warps, num_stages): the list that
#: bench/bench_attention.py times against Triton 3.6 (bench/RESULTS.md)
HOPPER_CONFIGS = [(64, 64, 4, 3), (128, 64, 4, 3), (128, 64, 8, 3), (128, 128, 8, 3)]


def fits_in_registers(config, head_dim: int) -> bool:
    """Whether `config` keeps its accumulator in registers: at HEAD_DIM 128, 128 query rows on
    4 warps need 128 fp32 accumulator registers per thread and spill (ptxas, sm_90a)."""
    return not (head_dim >= 128 and config.kwargs["BLOCK_M"] >= 128 and config.num_warps < 8)


def _prune(configs, named_args, **_):
    return [c for c in configs if fits_in_registers(c, named_args["HEAD_DIM"])]


attention_kernel_tuned = triton.autotune(
    configs=[triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=warps, num_stages=stages)
             for bm, bn, warps, stages in HOPPER_CONFIGS],
    key=["N_CTX", "HEAD_DIM", "CAUSAL"],
    prune_configs_by={"early_config_prune": _prune})(attention_kernel)


def tuned_attention(q, k, v, shape, causal: bool, sm_scale: float):
    """`attention`, autotuned over HOPPER_CONFIGS (those that fit in registers at this head
    dim) once per (N_CTX, HEAD_DIM, causal)."""
    z, h, n_ctx, head_dim = shape
    o = empty_like(np.empty(shape, dtype=np.float16))
    strides = _strides(shape)
    grid = lambda meta: (triton.cdiv(n_ctx, meta["BLOCK_M"]), z * h)
    attention_kernel_tuned[grid](q, k, v, o, sm_scale, *strides, *strides, *strides, *strides,
                                 h, n_ctx, HEAD_DIM=head_dim, CAUSAL=causal)
    return o


def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool,
              sm_scale: float) -> np.ndarray:
    """Attention in float32 numpy over the last two dims."""
    s = np.einsum("zhmd,zhnd->zhmn", q.astype(np.float32), k.astype(np.float32)) * sm_scale
    if causal:
        n = s.shape[-1]
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return np.einsum("zhmn,zhnd->zhmd", p, v.astype(np.float32))


def torch_reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool,
                    sm_scale: float):
    """torch's scaled_dot_product_attention on the GPU (fp16), or None without torch/CUDA."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    tq, tk, tv = (torch.from_numpy(a).cuda() for a in (q, k, v))
    out = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal,
                                                           scale=sm_scale)
    return out.float().cpu().numpy()


def check(shape, causal: bool, block_m: int = 64, block_n: int = 64, num_warps: int = 4,
          seed: int = 0) -> float:
    """Run one variant and compare it with torch (on a GPU with torch) or numpy; returns the
    largest absolute error."""
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal(shape).astype(np.float16) for _ in range(3))
    sm_scale = float(1.0 / np.sqrt(shape[-1]))
    o = to_host(attention(to_device(q), to_device(k), to_device(v), shape, causal, sm_scale,
                          block_m, block_n, num_warps)).astype(np.float32)
    expected = torch_reference(q, k, v, causal, sm_scale) if gpu_available() else None
    if expected is None:
        expected = reference(q, k, v, causal, sm_scale)
    np.testing.assert_allclose(o, expected, atol=3e-3, rtol=1e-2)
    return float(np.max(np.abs(o - expected)))


def main() -> None:
    # the interpreter is slow: small problems without a GPU, tutorial-sized ones with one
    on_gpu = gpu_available()
    n_ctx = 1000 if on_gpu else 40            # not a multiple of the block
    batch, heads = (2, 4) if on_gpu else (1, 2)
    block = 64 if on_gpu else 32
    for head_dim in (64, 128):
        for causal in (False, True):
            err = check((batch, heads, n_ctx, head_dim), causal, block_m=block, block_n=block)
            print(f"attention: {batch}x{heads}x{n_ctx}x{head_dim}, "
                  f"{'causal' if causal else 'non-causal'}, max abs error {err:.3g}: OK")


if __name__ == "__main__":
    main()
