"""The lowering's layout guard (codegen/layout_check.py) on slices of slices and on size-1 dims
of a vectorized layout: `arange(0, 32)[:, None, None]` next to a 3-D uint16 store lives in
slice(1, slice(2, blocked [1, 1, 8])) and then in the [1, 1, 8] layout itself, and both must
lower (Triton compiles them); a slice's registers are its own, not its parent's."""
from __future__ import annotations

import numpy as np

import compiler as triton
import compiler.language as tl
from compiler.analysis.layouts import elements_per_thread
from compiler.codegen.layout_check import layout_problem
from compiler.compiler import compile as compile_kernel
from compiler.dialects.ttg import BlockedEncoding, SliceEncoding
from compiler.runtime.specialization import ASTSource

VECTOR_3D = BlockedEncoding((1, 1, 8), (1, 8, 4), (1, 1, 1), (2, 1, 0))


def test_slice_of_slice_counts_its_own_registers():
    nested = SliceEncoding(1, SliceEncoding(2, VECTOR_3D))
    assert elements_per_thread(nested, (32,)) == 32
    assert layout_problem(nested, (32,), num_warps=1) is None


def test_size_one_dims_of_a_vector_layout_are_accepted():
    assert elements_per_thread(VECTOR_3D, (32, 1, 1)) == 256       # 8 copies, as in Triton
    assert layout_problem(VECTOR_3D, (32, 1, 1), num_warps=1) is None


def test_absurd_size_per_thread_is_still_refused():
    huge = BlockedEncoding((1, 1, 1024), (1, 8, 4), (1, 1, 1), (2, 1, 0))
    assert "far too large" in layout_problem(huge, (32, 1, 1), num_warps=1)


@triton.jit
def broadcast_3d(Z, X, SIZE: tl.constexpr):
    m = tl.arange(0, SIZE)
    x = tl.load(X + m[None, :] + m[:, None] * SIZE)
    z = x[:, :, None]
    tl.store(Z + m[None, None, :] + m[None, :, None] * SIZE + m[:, None, None] * SIZE * SIZE, z)


def test_3d_uint16_broadcast_store_lowers_and_runs():
    src = ASTSource(broadcast_3d, {"Z": "*u16", "X": "*u16"}, {"SIZE": 32})
    kernel = compile_kernel(src, options={"build_cubin": False, "build_sass": False,
                                          "num_warps": 1})
    assert "st.global" in kernel.asm["ptx"]
    x = np.arange(32 * 32, dtype=np.uint16).reshape(32, 32)
    z = np.zeros((32, 32, 32), dtype=np.uint16)
    broadcast_3d[(1,)](z, x, SIZE=32, num_warps=1, interpret=True)
    assert (z == x[:, :, None]).all()
