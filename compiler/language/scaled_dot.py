"""`tl.dot_scaled`: the microscaling (OCP MX) matrix product, as Triton 3.6 computes it on Hopper.

Hopper has no block-scaled MMA, so Triton decomposes the op before it reaches the tensor cores
(its DecomposeScaledBlocked rewrite); this module builds the same decomposition with the
semantic layer's existing ops, so that the GPU path and the interpreter share it:

1. The compute type is fp16 when either operand's format is "fp16", else bf16.
2. Each operand is decoded to the compute type: "e4m3" / "e5m2" (fp8, or their uint8 bits)
   and "bf16" / "fp16" by an ordinary float cast; "e2m1" (fp4, two per uint8 byte, the low
   nibble first) by assembling the compute type's bits (exact: every fp4 value is a
   bf16 / fp16 value), along K (`k_pack=True`) or along M / N.
3. An operand with a scale (uint8 e8m0 exponents, one per 32 elements along K: shape
   [M, K/32] for the lhs and [N, K/32] for the rhs) is multiplied by 2^(s-127) in the compute
   type. The scale is made by placing `s` in the exponent field: for bf16 directly (so s = 0
   gives 0.0 and s = 255 gives inf), for fp16 through fp32 and a rounding cast (so small
   scales underflow to 0 and large ones overflow to inf).
4. Unless `fast_math`, elements whose scale is 0xFF (e8m0's NaN) become NaN.
5. The two decoded blocks go through `tl.dot` with fp32 accumulation.
"""
from __future__ import annotations

from compiler.frontend.errors import SemanticError

from . import core
from .composite import join_tensors
from .core import builtin, constexpr, tensor
from .standard import _opt_const, dot

#: The formats `tl.dot_scaled` takes, each with the dtype its values arrive in (besides the
#: same-width unsigned integer holding their bits); e2m1 always arrives packed in uint8.
FORMAT_DTYPES = {"e2m1": core.uint8, "e4m3": core.float8e4nv, "e5m2": core.float8e5,
                 "bf16": core.bfloat16, "fp16": core.float16}
#: Elements along K that share one e8m0 scale.
SCALE_BLOCK = 32
#: e8m0's NaN encoding.
SCALE_NAN = 0xFF


def _format(x, what: str) -> str:
    fmt = _opt_const(x, what)
    if fmt not in FORMAT_DTYPES:
        raise SemanticError(f"tl.dot_scaled's {what} must be one of "
                            f"{', '.join(map(repr, FORMAT_DTYPES))}, got {fmt!r}")
    return fmt


def _as_format(_sem, v: tensor, fmt: str, what: str) -> tensor:
    """`v` in the dtype of `fmt`: as given, or bitcast from the unsigned integer of its width
    (Triton's rule); e2m1 stays packed uint8."""
    want = FORMAT_DTYPES[fmt]
    if v.dtype == want:
        return v
    bits = core.uint8 if want.primitive_bitwidth == 8 else core.uint16
    if fmt == "e2m1" or v.dtype != bits:
        raise SemanticError(f"tl.dot_scaled's {what} has format {fmt!r} but dtype {v.dtype}; "
                            f"it must be {want}" + ("" if fmt == "e2m1" else f" or {bits}"))
    return _sem.cast(v, want, bitcast=True)


def _interleave_along(_sem, first: tensor, second: tensor, axis: int) -> tensor:
    """[..., n, ...] x 2 -> [..., 2n, ...] along `axis`, `first`'s elements at even places."""
    joined = join_tensors(_sem, first, second)          # [..., 2] (new last dim)
    rank = len(joined.shape)
    order = list(range(rank - 1))
    order.insert(axis + 1, rank - 1)
    moved = _sem.trans(joined, order) if order != list(range(rank)) else joined
    shape = list(first.shape)
    shape[axis] *= 2
    return _sem.reshape(moved, shape)


def _fp4_nibble_bits(_sem, nibble: tensor, compute: core.dtype) -> tensor:
    """The compute-type bits (uint16) of e2m1 values given as 4-bit codes (s e1 e0 m)."""
    mant = compute.fp_mantissa_width
    bias = compute.exponent_bias
    u16 = core.uint16

    def c(value):
        return _sem.constant(value, u16)

    sign = _sem.lshift(_sem.and_(nibble, c(0x8)), c(15 - 3))
    em = _sem.and_(nibble, c(0x7))
    # e1 e0 m shifted so that m lands on the top mantissa bit and e1 e0 on the exponent's
    # low bits; a normal value's exponent then needs fp4's bias (1) swapped for the target's.
    bits = _sem.lshift(em, c(mant - 1))
    normal = _sem.compare("ne", _sem.and_(em, c(0x6)), c(0))
    bits = _sem.where(normal, _sem.add(bits, c((bias - 1) << mant)), bits)
    half = _sem.compare("eq", em, c(0x1))                 # the one subnormal: 0.5
    bits = _sem.where(half, c((bias - 1) << mant), bits)
    return _sem.or_(bits, sign)


def _decode_fp4(_sem, packed: tensor, compute: core.dtype, axis: int) -> tensor:
    """Unpack two e2m1 values per byte along `axis` (low nibble first) into `compute`."""
    wide = _sem.cast(packed, core.uint16)
    low = _sem.and_(wide, _sem.constant(0xF, core.uint16))
    high = _sem.rshift(wide, _sem.constant(4, core.uint16))
    low_bits = _fp4_nibble_bits(_sem, low, compute)
    high_bits = _fp4_nibble_bits(_sem, high, compute)
    return _sem.cast(_interleave_along(_sem, low_bits, high_bits, axis), compute, bitcast=True)


def _spread_scale(_sem, scale: tensor, is_rhs: bool) -> tensor:
    """A [..., R, K/32] scale repeated 32 times along K, laid out like its operand:
    [..., R, K] for the lhs, [..., K, R] for the rhs."""
    shape = tuple(scale.shape)
    wide = _sem.broadcast_to(_sem.expand_dims(scale, len(shape)), shape + (SCALE_BLOCK,))
    spread = _sem.reshape(wide, shape[:-1] + (shape[-1] * SCALE_BLOCK,))
    if not is_rhs:
        return spread
    rank = len(shape)
    return _sem.trans(spread, list(range(rank - 2)) + [rank - 1, rank - 2])


def _scale_factor(_sem, scale: tensor, compute: core.dtype) -> tensor:
    """2^(s-127) of uint8 exponents `s`, in `compute`: bf16 by placing `s` in its exponent
    field; fp16 by way of fp32 and a rounding cast (fp16's exponent field is too narrow)."""
    if compute == core.bfloat16:
        field = _sem.lshift(_sem.cast(scale, core.uint16), _sem.constant(7, core.uint16))
        return _sem.cast(field, core.bfloat16, bitcast=True)
    field = _sem.lshift(_sem.cast(scale, core.uint32), _sem.constant(23, core.uint32))
    return _sem.cast(_sem.cast(field, core.float32, bitcast=True), compute)


def _check_scale(scale: tensor, want: tuple, what: str) -> None:
    if scale.dtype != core.uint8:
        raise SemanticError(f"tl.dot_scaled's {what} must hold uint8 (e8m0) exponents, got "
                            f"dtype {scale.dtype}")
    if tuple(scale.shape) != want:
        raise SemanticError(f"tl.dot_scaled's {what} has shape {list(scale.shape)}, expected "
                            f"{list(want)} (one scale per {SCALE_BLOCK} elements along K)")


def _operand(_sem, v: tensor, scale, fmt: str, k_pack: bool, is_rhs: bool,
             compute: core.dtype, fast_math: bool) -> tensor:
    """One operand decoded to `compute` and, when it has a scale, multiplied by it."""
    rank = len(v.shape)
    k_axis = rank - 2 if is_rhs else rank - 1
    if fmt == "e2m1":
        packed_axis = k_axis if k_pack else (rank - 1 if is_rhs else rank - 2)
        v = _decode_fp4(_sem, v, compute, packed_axis)
    else:
        v = _sem.cast(v, compute)
    if scale is None:
        return v
    k = v.shape[k_axis]
    other = v.shape[rank - 1] if is_rhs else v.shape[rank - 2]
    what = "rhs_scale" if is_rhs else "lhs_scale"
    if k % SCALE_BLOCK:
        raise SemanticError(f"tl.dot_scaled with a {what} needs K to be a multiple of "
                            f"{SCALE_BLOCK}, got K = {k}")
    _check_scale(scale, tuple(v.shape[:-2]) + (other, k // SCALE_BLOCK), what)
    spread = _spread_scale(_sem, scale, is_rhs)
    scaled = _sem.mul(v, _scale_factor(_sem, spread, compute))
    if fast_math:
        return scaled
    is_nan = _sem.compare("eq", spread, _sem.constant(SCALE_NAN, core.uint8))
    return _sem.where(is_nan, _sem.constant(float("nan"), compute), scaled)


def _scale_arg(_sem, x, what: str):
    """A scale argument: None (also constexpr None) or a runtime tensor."""
    if x is None or (isinstance(x, constexpr) and x.value is None):
        return None
    t = _sem.to_tensor(x)
    if not t.is_block():
        raise SemanticError(f"tl.dot_scaled's {what} must be a block of uint8 exponents, got a "
                            f"scalar")
    return t


@builtin
def dot_scaled(_sem, lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc=None,
               fast_math=False, lhs_k_pack=True, rhs_k_pack=True, out_dtype=core.float32
               ) -> tensor:
    """lhs x rhs + acc for microscaled operands: `lhs` [M, K] and `rhs` [K, N] (or batched
    [B, ...]) in formats "e2m1" (packed two per uint8, along K unless `*_k_pack=False`),
    "e4m3", "e5m2", "bf16" or "fp16"; a scale (uint8 e8m0, [M, K/32] / [N, K/32], or None)
    multiplies each group of 32 along K by 2^(s-127). Accumulates in fp32."""
    a, b = _sem.to_tensor(lhs), _sem.to_tensor(rhs)
    if not (a.is_block() and b.is_block()) or len(a.shape) != len(b.shape) \
            or len(a.shape) not in (2, 3):
        raise SemanticError(f"tl.dot_scaled needs two 2-D (or two 3-D) blocks, got shapes "
                            f"{list(a.shape)} and {list(b.shape)}")
    fmt_a, fmt_b = _format(lhs_format, "lhs_format"), _format(rhs_format, "rhs_format")
    a, b = _as_format(_sem, a, fmt_a, "lhs"), _as_format(_sem, b, fmt_b, "rhs")
    k_pack_a, k_pack_b = bool(_opt_const(lhs_k_pack, "lhs_k_pack")), \
        bool(_opt_const(rhs_k_pack, "rhs_k_pack"))
    for fmt, k_pack, what in ((fmt_a, k_pack_a, "lhs"), (fmt_b, k_pack_b, "rhs")):
        if not k_pack and fmt != "e2m1":
            raise SemanticError(f"tl.dot_scaled: only e2m1 operands can be packed along a dim "
                                f"other than K ({what}_k_pack=False with format {fmt!r})")
    out = _opt_const(out_dtype, "out_dtype")
    if out != core.float32:
        raise SemanticError(f"tl.dot_scaled's out_dtype must be tl.float32, got {out}")
    fast = bool(_opt_const(fast_math, "fast_math"))
    compute = core.float16 if "fp16" in (fmt_a, fmt_b) else core.bfloat16
    a16 = _operand(_sem, a, _scale_arg(_sem, lhs_scale, "lhs_scale"), fmt_a, k_pack_a, False,
                   compute, fast)
    b16 = _operand(_sem, b, _scale_arg(_sem, rhs_scale, "rhs_scale"), fmt_b, k_pack_b, True,
                   compute, fast)
    if a16.shape[-1] != b16.shape[-2]:
        raise SemanticError(f"tl.dot_scaled's operands unpack to {list(a16.shape)} x "
                            f"{list(b16.shape)}: their K dims differ")
    return dot.__tile_builtin__(_sem, a16, b16, acc)
