"""Index helpers of Triton's standard library, written in the DSL (as `random` is): a kernel
calling one compiles it like its own @jit helper. `swizzle2d` regroups the program ids of a
2-D grid so that consecutive ids cover `size_g` rows column by column (better L2 reuse in
matrix multiplications)."""
from __future__ import annotations

from . import standard
from .core import library_function


@library_function
def swizzle2d(i, j, size_i, size_j, size_g):
    """(i, j) of a row-major `size_i` x `size_j` grid, renumbered: the linear index i*size_j+j
    walks groups of `size_g` rows (the last group may be shorter), column-major inside each
    group. Returns the new (i, j)."""
    linear = i * size_j + j
    group_size = size_g * size_j
    first_row = (linear // group_size) * size_g
    rows = standard.minimum(size_i - first_row, size_g)
    inside = linear % group_size
    return first_row + inside % rows, inside // rows
