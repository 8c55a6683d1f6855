"""`tl.math`: the elementwise math functions, as in `triton.language.math`."""
from .standard import (abs, ceil, cos, div_rn, erf, exp, exp2, fdiv, fma, floor, log,  # noqa: F401
                       log2, rsqrt, sigmoid, sin, sqrt, sqrt_rn)
from .standard import cdiv, umulhi  # noqa: F401
