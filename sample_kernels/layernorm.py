"""Layer normalization forward, in the style of Triton's layer-norm tutorial (one row per
program, the whole row in one block), with float16 input and output and float32 statistics.

Run it: `python sample_kernels/layernorm.py`, or `tile-explore sample_kernels/layernorm.py`.
"""
import numpy as np

import compiler as triton
import compiler.language as tl
from compiler.runtime.arrays import empty_like, to_device, to_host


@triton.jit
def layernorm_kernel(X, Y, W, B, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(mask, x - mean, 0.)
    var = tl.sum(xc * xc, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    w = tl.load(W + cols, mask=mask)
    b = tl.load(B + cols, mask=mask)
    y = xc * rstd * w + b
    tl.store(Y + row * stride + cols, y.to(Y.dtype.element_ty), mask=mask)


def layernorm(x, w, b, n_rows: int, n_cols: int, eps: float = 1e-5, num_warps: int = 4):
    """Normalize each row of the (n_rows, n_cols) float16 array `x`, then scale and shift."""
    y = empty_like(np.empty((n_rows, n_cols), dtype=np.float16))
    block = triton.next_power_of_2(n_cols)
    layernorm_kernel[(n_rows,)](x, y, w, b, n_cols, n_cols, eps, BLOCK_SIZE=block,
                                num_warps=num_warps)
    return y


def reference(x, w, b, eps=1e-5):
    x32 = x.astype(np.float32)
    mean = x32.mean(axis=1, keepdims=True)
    var = ((x32 - mean) ** 2).mean(axis=1, keepdims=True)
    y = (x32 - mean) / np.sqrt(var + eps) * w.astype(np.float32) + b.astype(np.float32)
    return y.astype(np.float16)


def main(n_rows: int = 67, n_cols: int = 1000) -> None:
    rng = np.random.default_rng()
    x = rng.standard_normal((n_rows, n_cols)).astype(np.float16)
    w = rng.random(n_cols).astype(np.float16)
    b = rng.random(n_cols).astype(np.float16)
    y = to_host(layernorm(to_device(x), to_device(w), to_device(b), n_rows, n_cols))
    expected = reference(x, w, b)
    np.testing.assert_allclose(y.astype(np.float32), expected.astype(np.float32),
                               rtol=1e-2, atol=1e-2)
    err = np.max(np.abs(y.astype(np.float32) - expected.astype(np.float32)))
    print(f"layernorm: {n_rows}x{n_cols}, max abs error {err:.3g}: OK")


if __name__ == "__main__":
    main()
