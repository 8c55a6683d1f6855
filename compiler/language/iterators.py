"""Loop iterators recognised by the code generator: `tl.range` (an scf.for with optional
pipelining hints) and `tl.static_range` (unrolled at compile time)."""
from __future__ import annotations

from .core import NotInKernelError


class range:
    """`for i in tl.range(start, end, step, num_stages=None, ...)`: an scf.for loop; the
    optional hints become loop attributes (`tt.num_stages`, `tt.loop_unroll_factor`, ...)."""

    def __init__(self, arg1, arg2=None, step=None, num_stages=None, loop_unroll_factor=None,
                 disallow_acc_multi_buffer=False, flatten=False, warp_specialize=False):
        raise NotInKernelError("tl.range can only be used as a for-loop iterator inside a "
                               "@jit kernel")


class static_range:
    """`for i in tl.static_range(start, end, step)`: all bounds constexpr; the code generator
    unrolls the loop at compile time, `i` being a constexpr in each copy of the body."""

    def __init__(self, arg1, arg2=None, step=None):
        raise NotInKernelError("tl.static_range can only be used as a for-loop iterator inside "
                               "a @jit kernel")
