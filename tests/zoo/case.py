"""The shape of a zoo entry: a `Case` (one launch and its expected outputs), a `Tolerance`
(how float outputs compare, and why), a `ZooKernel` (kernel, input maker, tolerances), and the
named tolerances the families share."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np


@dataclass
class Case:
    """One launch of a zoo kernel: arguments, grid, constexprs, what it writes, what to expect."""

    args: list
    grid: tuple
    expected: dict                      # argument position -> expected numpy array
    constexprs: dict = field(default_factory=dict)
    options: dict = field(default_factory=dict)   # launch options: num_warps, ...

    def fresh_args(self) -> list:
        """Copies of the arguments (outputs included), so runs never share buffers."""
        return [a.copy() if isinstance(a, np.ndarray) else a for a in self.args]


@dataclass(frozen=True)
class Tolerance:
    """How a float output is compared: `rtol`/`atol` as in numpy.testing (0, 0 means exact)."""

    rtol: float = 0.0
    atol: float = 0.0
    why: str = "integer or bit-exact float result"


EXACT = Tolerance()


@dataclass(frozen=True)
class ZooKernel:
    """A catalogue entry: the kernel, its input maker and how its outputs are compared.

    `interp` is the tolerance of the interpreter against numpy (the interpreter computes with
    numpy in the kernel's dtypes); `gpu` the tolerance of the GPU against numpy and against the
    interpreter (approximate PTX instructions, different summation orders, fused multiply-adds).
    """

    name: str
    kernel: object
    make: Callable[[np.random.Generator], Case]
    interp: Tolerance = EXACT
    gpu: Tolerance = EXACT
    canonical: Callable[[dict], dict] | None = None   # e.g. sort outputs written in any order

    def outputs(self, case: Case, args: list) -> dict:
        """The written outputs of a run (argument position -> array), in canonical form."""
        written = {i: np.asarray(args[i]).reshape(case.args[i].shape) for i in case.expected}
        return self.canonical(written) if self.canonical else written


#: exp/log/sin/cos/rsqrt lower to ex2/lg2/sin/cos/rsqrt.approx.f32 on the GPU (about 2 ulp
#: relative for ex2/lg2/rsqrt, absolute ~1e-6 for sin/cos on [-pi, pi]); sqrt and division may
#: use approximate forms too (Triton's default), so the GPU gets a few ulp of slack.
APPROX = Tolerance(2e-5, 2e-6, "ex2/lg2/sin/cos/rsqrt.approx.f32 and approximate division")
#: fp32 sums in a different order (tree, shuffles) than numpy's float64 reference.
REORDERED_SUM = Tolerance(2e-5, 5e-5, "fp32 summation order (in-thread, shuffles, shared memory) "
                          "differs from numpy's float64 sum")
#: the interpreter rounds fma's product (numpy has no fused fma) where the GPU does not.
FMA = Tolerance(1e-6, 1e-6, "fused multiply-add rounds once; numpy's x*y+z twice")
#: float32 library functions in numpy (the interpreter) against a float64 reference.
LIBM = Tolerance(1e-6, 1e-6, "float32 erf/exp2/log2/exp against a float64 reference")
#: dots over a K loop (up to ~100 products) accumulated in fp32 in blocks of 32.
LONG_DOT = Tolerance(1e-4, 1e-3, "fp32 accumulation of ~100 products in a different order")
#: tl.dot's default input precision: operands rounded to tf32 (10-bit mantissa) on the GPU,
#: relative error ~1e-3 a product, over at most 16 products of standard normals.
TF32 = Tolerance(1e-2, 3e-2, "tf32 operands (10-bit mantissa) in tl.dot's default precision")
FP16_OUT = Tolerance(1e-2, 2e-2, "float16 output: one half-ulp of float16 after fp32 math")
