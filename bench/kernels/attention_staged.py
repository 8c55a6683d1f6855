"""sample_kernels/attention.py's flash-attention forward with the key loop in two stages, as
Triton's tutorial 06 writes it for Hopper: the key blocks wholly below the diagonal (causal) or
wholly inside N_CTX (non-causal) without masks, the scale folded into one multiply-subtract,
then the diagonal/tail blocks with the column and causal masks. Same signature and grid as the
sample, so `bench/bench_attention.py --sample bench/kernels/attention_staged.py` times it with
both compilers; on the H200 its best config is 9-11% faster than the sample's non-causal
and 13-32% causal, for both compilers (bench/RESULTS.md).
Run through the interpreter against numpy: `python bench/kernels/attention_staged.py`.
"""
import numpy as np

import compiler as triton
import compiler.language as tl


@triton.jit
def _attend(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn, offs_m, offs_n, lo, hi,
            qk_scale, N_CTX, MASKED: tl.constexpr, CAUSAL: tl.constexpr, BLOCK_N: tl.constexpr):
    """Online softmax over the key blocks [lo, hi); MASKED blocks check columns (and the
    diagonal when CAUSAL), the others are full."""
    for start_n in range(lo, hi, BLOCK_N):
        cols = start_n + offs_n
        if MASKED:
            k = tl.load(k_ptrs + start_n * stride_kn, mask=cols[None, :] < N_CTX, other=0.0)
        else:
            k = tl.load(k_ptrs + start_n * stride_kn)
        qk = tl.dot(q, k)
        if MASKED:
            valid = cols[None, :] < N_CTX
            if CAUSAL:
                valid = valid & (offs_m[:, None] >= cols[None, :])
            qk = qk * qk_scale + tl.where(valid, 0.0, -1.0e6)
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            qk = qk - m_ij[:, None]
        else:
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        alpha = tl.math.exp2(m_i - m_ij)
        l_ij = tl.sum(p, 1)
        acc = acc * alpha[:, None]
        if MASKED:
            v = tl.load(v_ptrs + start_n * stride_vn, mask=cols[:, None] < N_CTX, other=0.0)
        else:
            v = tl.load(v_ptrs + start_n * stride_vn)
        acc = tl.dot(p.to(tl.float16), v, acc)
        l_i = l_i * alpha + l_ij
        m_i = m_ij
    return acc, l_i, m_i


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
    k_ptrs = k_base + offs_n[None, :] * stride_kn + offs_d[:, None] * stride_kk
    v_ptrs = v_base + offs_n[:, None] * stride_vn + offs_d[None, :] * stride_vk
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504          # exp(x) = exp2(x * log2(e))

    if CAUSAL:
        full_hi = (start_m * BLOCK_M) // BLOCK_N * BLOCK_N   # key blocks below the diagonal
        hi = tl.minimum((start_m + 1) * BLOCK_M, N_CTX)
    else:
        full_hi = (N_CTX // BLOCK_N) * BLOCK_N   # key blocks wholly inside N_CTX
        hi = N_CTX
    acc, l_i, m_i = _attend(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn, offs_m,
                            offs_n, 0, full_hi, qk_scale, N_CTX, False, CAUSAL, BLOCK_N)
    acc, l_i, m_i = _attend(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn, offs_m,
                            offs_n, full_hi, hi, qk_scale, N_CTX, True, CAUSAL, BLOCK_N)
    acc = acc / l_i[:, None]
    tl.store(o_base + offs_m[:, None] * stride_om + offs_d[None, :] * stride_ok,
             acc.to(tl.float16), mask=row_ok)


def _strides(shape) -> tuple:
    """Element strides of a contiguous (Z, H, N_CTX, HEAD_DIM) array."""
    z, h, n, d = shape
    return (h * n * d, n * d, d, 1)


def main() -> None:
    """Check against numpy through the interpreter (small shapes, tails not multiples of the
    blocks, BLOCK_M > BLOCK_N)."""
    from compiler.runtime.arrays import empty_like, to_device, to_host
    from sample_kernels.attention import reference
    for shape, bm, bn in (((1, 2, 40, 64), 32, 16), ((1, 1, 33, 128), 16, 16)):
        for causal in (False, True):
            rng = np.random.default_rng(0)
            q, k, v = (rng.standard_normal(shape).astype(np.float16) for _ in range(3))
            o = empty_like(np.empty(shape, np.float16))
            strides = _strides(shape)
            sm_scale = float(1 / np.sqrt(shape[-1]))
            attention_kernel[(triton.cdiv(shape[2], bm), shape[0] * shape[1])](
                to_device(q), to_device(k), to_device(v), o, sm_scale, *strides * 4, shape[1],
                shape[2], HEAD_DIM=shape[3], BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal)
            err = float(np.abs(to_host(o).astype(np.float32)
                               - reference(q, k, v, causal, sm_scale)).max())
            assert err < 3e-3, (shape, causal, err)
            print(f"staged attention {shape} {bm}x{bn} {'causal' if causal else 'non-causal'}: "
                  f"max abs error {err:.3g}")


if __name__ == "__main__":
    main()
