"""compiler.language: the kernel DSL, a drop-in for `triton.language` (import it as `tl`).

Values inside a kernel are `tensor`s and `constexpr`s; the functions here are builtins that
the front end (`compiler.frontend`) implements while compiling a `@jit` function.
"""
from . import math  # noqa: F401
from .core import (NotInKernelError, PropagateNan, bfloat16, block_type, builtin,  # noqa: F401
                   const, constexpr, dtype, float8e4b8, float8e4b15, float8e4nv, float8e5,
                   float8e5b16, float16, float32, float64, int1, int8, int16, int32, int64,
                   pi32_t, pointer_type, str_to_ty, tensor_descriptor,
                   tensor, uint8, uint16, uint32, uint64)
from .iterators import range, static_range  # noqa: F401
from .profile import profile  # noqa: F401
from .standard import (  # noqa: F401
    abs, arange, argmax, argmin, assume, atomic_add, atomic_and, atomic_cas, atomic_max,
    atomic_min, atomic_or, atomic_xchg, atomic_xor, broadcast, broadcast_to, cdiv, ceil, clamp,
    cos, cumprod, cumsum, device_assert, device_print, div_rn, dot, erf, exp, exp2,
    expand_dims,
    fdiv, floor, fma, full, load, log, log2, max, max_constancy, max_contiguous, maximum, min,
    minimum, multiple_of, num_programs, permute, program_id, ravel, reshape, rsqrt, sigmoid,
    sin, softmax, sqrt, sqrt_rn, static_assert, static_print, store, sum, trans, view, where,
    zeros, zeros_like, reduce, associative_scan, to_tensor, umulhi, cast, xor_sum)
from .block_pointers import (advance, load_tensor_descriptor, make_block_ptr,  # noqa: F401,E402
                             make_tensor_descriptor, store_tensor_descriptor)
from .composite import (cat, debug_barrier, flip, gather, histogram, inline_asm_elementwise,  # noqa: F401,E402,E501
                        interleave, join, sort, split, topk)
from .scaled_dot import dot_scaled  # noqa: F401,E402
from . import random  # noqa: F401,E402  (after standard: it is written with the builtins)
from .indexing import swizzle2d  # noqa: F401,E402  (likewise)
from .random import (pair_uniform_to_normal, philox, philox_impl, rand, rand4x,  # noqa: F401,E402
                     randint, randint4x, randn, randn4x, uint_to_uniform_float)

from . import extra  # noqa: F401,E402  (tl.extra.cuda / tl.extra.libdevice, as in Triton)
