"""Vector addition, in the style of Triton's first tutorial: out = x + y.

Run it: `python sample_kernels/vector_add.py` (GPU when present, else the interpreter), or open
it in the explorer: `tile-explore sample_kernels/vector_add.py`.
"""
import numpy as np

import compiler as triton
import compiler.language as tl
from compiler.runtime.arrays import empty_like, to_device, to_host


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    output = x + y
    tl.store(out_ptr + offsets, output, mask=mask)


def add(x, y, n, block_size=1024):
    """Launch add_kernel over `n` elements; returns the output array (device or host)."""
    out = empty_like(np.empty(n, dtype=np.float32))
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)
    add_kernel[grid](x, y, out, n, BLOCK_SIZE=block_size)
    return out


def main(n: int = 98_432) -> None:
    rng = np.random.default_rng()
    x_host = rng.standard_normal(n, dtype=np.float32)
    y_host = rng.standard_normal(n, dtype=np.float32)
    out = to_host(add(to_device(x_host), to_device(y_host), n))
    expected = x_host + y_host
    np.testing.assert_allclose(out, expected, rtol=0, atol=0)
    print(f"vector_add: {n} elements, max abs error {np.max(np.abs(out - expected)):.3g}: OK")


if __name__ == "__main__":
    main()
