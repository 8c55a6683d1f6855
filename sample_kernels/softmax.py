"""Fused row-wise softmax, in the style of Triton's softmax tutorial: one program per row.

Run it: `python sample_kernels/softmax.py`, or `tile-explore sample_kernels/softmax.py`.
"""
import numpy as np

import compiler as triton
import compiler.language as tl
from compiler.runtime.arrays import empty_like, to_device, to_host


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols,
                   BLOCK_SIZE: tl.constexpr):
    row_idx = tl.program_id(0)
    row_start_ptr = input_ptr + row_idx * input_row_stride
    col_offsets = tl.arange(0, BLOCK_SIZE)
    input_ptrs = row_start_ptr + col_offsets
    mask = col_offsets < n_cols
    row = tl.load(input_ptrs, mask=mask, other=-float("inf"))
    row_minus_max = row - tl.max(row, axis=0)
    numerator = tl.exp(row_minus_max)
    denominator = tl.sum(numerator, axis=0)
    softmax_output = numerator / denominator
    output_row_start_ptr = output_ptr + row_idx * output_row_stride
    output_ptrs = output_row_start_ptr + col_offsets
    tl.store(output_ptrs, softmax_output, mask=mask)


def softmax(x, n_rows: int, n_cols: int, num_warps: int = 4):
    """Softmax of each row of the (n_rows, n_cols) float32 array `x`."""
    y = empty_like(np.empty((n_rows, n_cols), dtype=np.float32))
    block = triton.next_power_of_2(n_cols)
    softmax_kernel[(n_rows,)](y, x, n_cols, n_cols, n_cols, BLOCK_SIZE=block,
                              num_warps=num_warps)
    return y


def reference(x: np.ndarray) -> np.ndarray:
    z = x - x.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def main(n_rows: int = 123, n_cols: int = 781) -> None:
    x = np.random.default_rng().standard_normal((n_rows, n_cols), dtype=np.float32)
    y = to_host(softmax(to_device(x), n_rows, n_cols))
    expected = reference(x)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)
    print(f"softmax: {n_rows}x{n_cols}, max abs error {np.max(np.abs(y - expected)):.3g}: OK")


if __name__ == "__main__":
    main()
