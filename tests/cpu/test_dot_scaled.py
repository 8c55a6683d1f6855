"""tl.dot_scaled (Triton 3.6's microscaling dot, decomposed as on Hopper) and the fp8 casts it
relies on: interpreter results against a numpy model of the formats, the compiled path's PTX,
and the located errors for wrong arguments."""
from __future__ import annotations

import re

import numpy as np

import pytest

import compiler as triton
import compiler.language as tl
from compiler.codegen.toolchain import find_tool
from compiler.frontend.errors import CompilationError

needs_ptxas = pytest.mark.skipif(find_tool("ptxas") is None, reason="ptxas is not installed")

FP4_VALUES = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6])


def fp8_values(bits: np.ndarray, exp_bits: int, man_bits: int) -> np.ndarray:
    """The values of fp8 bytes with `exp_bits` / `man_bits` (e4m3 "fn": no infinities; NaN
    only at s.1111.111; e5m2: IEEE-like) as float64."""
    bits = bits.astype(np.int64)
    bias = (1 << (exp_bits - 1)) - 1
    sign = np.where(bits >> 7, -1.0, 1.0)
    exp = (bits >> man_bits) & ((1 << exp_bits) - 1)
    man = bits & ((1 << man_bits) - 1)
    frac = man / 2.0 ** man_bits
    value = np.where(exp == 0, frac * 2.0 ** (1 - bias), (1 + frac) * 2.0 ** (exp - bias))
    return sign * value


def decode(bits: np.ndarray, fmt: str, packed_axis: int = -1) -> np.ndarray:
    """A dot_scaled operand's values (float64) from its bytes, as the formats define them."""
    if fmt == "e2m1":
        low, high = FP4_VALUES[bits & 0xF], FP4_VALUES[bits >> 4]
        stacked = np.stack([low, high], axis=packed_axis % bits.ndim + 1)
        shape = list(bits.shape)
        shape[packed_axis] *= 2
        return stacked.reshape(shape)
    if fmt == "e4m3":
        return fp8_values(bits, 4, 3)
    if fmt == "e5m2":
        return fp8_values(bits, 5, 2)
    if fmt == "bf16":
        return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return bits.astype(np.float64)


def random_bytes(rng, shape, fmt: str) -> np.ndarray:
    """Random operand bytes; fp8 NaN / inf encodings replaced by finite ones."""
    if fmt == "fp16":
        return rng.uniform(-4, 4, shape).astype(np.float16)
    if fmt == "bf16":                   # as the uint16 bits a bf16 operand may arrive in
        return (rng.uniform(-4, 4, shape).astype(np.float32).view(np.uint32) >> 16
                ).astype(np.uint16)
    bits = rng.integers(0, 256, shape, dtype=np.uint8)
    mask = {"e4m3": 0x7F, "e5m2": 0x7C}.get(fmt)
    if mask is not None:
        bits = np.where(bits & mask == mask, bits & 0x83, bits).astype(np.uint8)
    return bits


@triton.jit
def _scaled_kernel(a, sa, b, sb, c, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                   FA: tl.constexpr, FB: tl.constexpr, KA: tl.constexpr, KB: tl.constexpr,
                   HAS_SA: tl.constexpr, HAS_SB: tl.constexpr, FAST: tl.constexpr):
    m = tl.arange(0, M)
    n = tl.arange(0, N)
    ka = tl.arange(0, KA)
    kb = tl.arange(0, KB)
    ks = tl.arange(0, K // 32)
    x = tl.load(a + m[:, None] * KA + ka[None, :])
    y = tl.load(b + kb[:, None] * N + n[None, :])
    xs = None
    ys = None
    if HAS_SA:
        xs = tl.load(sa + m[:, None] * (K // 32) + ks[None, :])
    if HAS_SB:
        ys = tl.load(sb + n[:, None] * (K // 32) + ks[None, :])
    tl.store(c + m[:, None] * N + n[None, :],
             tl.dot_scaled(x, xs, FA, y, ys, FB, fast_math=FAST))


def _run(fa, fb, x, y, sx, sy, M, N, K, fast=False):
    out = np.zeros((M, N), np.float32)
    dummy = np.zeros(1, np.uint8)
    _scaled_kernel[(1,)](x, dummy if sx is None else sx, y, dummy if sy is None else sy, out, M, N, K, fa, fb, x.shape[1],
                         y.shape[0], sx is not None, sy is not None, fast, interpret=True)
    return out


def _reference(fa, fb, x, y, sx, sy):
    a, b = decode(x, fa), decode(y, fb, packed_axis=0)
    if sx is not None:
        a = a * np.repeat(2.0 ** (sx.astype(np.float64) - 127), 32, axis=1)
    if sy is not None:
        b = b * np.repeat(2.0 ** (sy.astype(np.float64) - 127), 32, axis=1).T
    return a @ b, np.abs(a) @ np.abs(b)


@pytest.mark.parametrize("fa, fb, lhs_scaled", [("e2m1", "e4m3", True), ("e4m3", "e2m1", False),
                                                ("e5m2", "e5m2", True), ("e2m1", "bf16", True),
                                                ("bf16", "e5m2", False)])
def test_interpreter_matches_the_formats_numpy_model(fa, fb, lhs_scaled):
    rng = np.random.default_rng(7)
    M, N, K = 32, 16, 64
    x = random_bytes(rng, (M, K // 2 if fa == "e2m1" else K), fa)
    y = random_bytes(rng, (K // 2 if fb == "e2m1" else K, N), fb)
    sx = rng.integers(110, 140, (M, K // 32), dtype=np.uint8) if lhs_scaled else None
    sy = None if lhs_scaled else rng.integers(110, 140, (N, K // 32), dtype=np.uint8)
    got = _run(fa, fb, x, y, sx, sy, M, N, K)
    want, bound = _reference(fa, fb, x, y, sx, sy)
    # The decoded and scaled operands are exact in bf16; only the fp32 sums round.
    assert np.all(np.abs(got - want) <= 1e-6 * bound + 1e-30)


def test_fp16_operand_computes_in_fp16_and_tiny_scales_flush_to_zero():
    rng = np.random.default_rng(3)
    M, N, K = 16, 16, 32
    x = rng.integers(0, 256, (M, K // 2), dtype=np.uint8)
    y = rng.uniform(-2, 2, (K, N)).astype(np.float16)
    sx = np.full((M, K // 32), 127, np.uint8)
    sx[0] = 100                     # 2^-27: below fp16's smallest subnormal, so 0
    got = _run("e2m1", "fp16", x, y, sx, None, M, N, K)
    want, bound = _reference("e2m1", "fp16", x, y, sx, None)
    want[0] = 0.0
    assert np.all(np.abs(got - want) <= 1e-6 * bound + 1e-30)
    assert np.all(got[0] == 0)


def test_scale_zero_is_zero_and_scale_nan_is_nan_unless_fast_math():
    M, N, K = 16, 16, 32
    x = np.full((M, K), 0x38, np.uint8)          # e4m3 1.0
    y = np.full((K, N), 0x38, np.uint8)
    sx = np.full((M, K // 32), 127, np.uint8)
    sx[1], sx[2] = 0, 0xFF
    got = _run("e4m3", "e4m3", x, y, sx, None, M, N, K)
    assert np.all(got[0] == K) and np.all(got[1] == 0) and np.all(np.isnan(got[2]))
    fast = _run("e4m3", "e4m3", x, y, sx, None, M, N, K, fast=True)
    assert np.all(np.isposinf(fast[2])) and np.all(fast[0] == K)


@triton.jit
def _mn_packed_kernel(a, b, c, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    m2 = tl.arange(0, M // 2)
    n = tl.arange(0, N)
    k = tl.arange(0, K)
    x = tl.load(a + m2[:, None] * K + k[None, :])          # e2m1 packed along M
    y = tl.load(b + k[:, None] * N + n[None, :])
    m = tl.arange(0, M)
    tl.store(c + m[:, None] * N + n[None, :],
             tl.dot_scaled(x, None, "e2m1", y, None, "bf16", lhs_k_pack=False))


def test_fp4_packed_along_m_unpacks_rows_in_pairs():
    rng = np.random.default_rng(5)
    M, N, K = 32, 16, 32
    x = rng.integers(0, 256, (M // 2, K), dtype=np.uint8)
    y_bits = random_bytes(rng, (K, N), "bf16")
    out = np.zeros((M, N), np.float32)
    _mn_packed_kernel[(1,)](x, y_bits, out, M, N, K, interpret=True)
    a, y = decode(x, "e2m1", packed_axis=0), decode(y_bits, "bf16")
    want, bound = a @ y, np.abs(a) @ np.abs(y)
    assert np.all(np.abs(out - want) <= 1e-6 * bound + 1e-30)


def _error_of(kernel, *signature, **constexprs) -> str:
    with pytest.raises(CompilationError) as info:
        kernel.warmup(*signature, grid=(1,), **constexprs)
    return str(info.value)


_SIG = ("*u8", "*u8", "*u8", "*u8", "*fp32")


@pytest.mark.parametrize("fa, ka, expect", [
    ("e3m2", 64, "lhs_format must be one of 'e2m1', 'e4m3'"),
    ("e2m1", 64, "operands unpack to [32, 128] x [64, 16]: their K dims differ"),
])
def test_wrong_formats_and_shapes_are_located_errors(fa, ka, expect):
    message = _error_of(_scaled_kernel, *_SIG, M=32, N=16, K=64, FA=fa, FB="e4m3", KA=ka,
                        KB=64, HAS_SA=False, HAS_SB=False, FAST=False)
    assert expect in message and "^" in message


@triton.jit
def _bad_scale_kernel(a, s, c, K_PACK: tl.constexpr):
    rows = tl.arange(0, 32)
    x = tl.load(a + rows[:, None] * 32 + rows[None, :])
    scale = tl.load(s + rows)
    tl.store(c + rows[:, None] * 32 + rows[None, :],
             tl.dot_scaled(x, scale, "e4m3", x, None, "e4m3", lhs_k_pack=K_PACK))


def test_a_scale_of_the_wrong_shape_is_a_located_error():
    message = _error_of(_bad_scale_kernel, "*u8", "*u8", "*fp32", K_PACK=True)
    assert "lhs_scale has shape [32], expected [32, 1]" in message and "^" in message


def test_only_fp4_may_be_packed_along_m_or_n():
    message = _error_of(_bad_scale_kernel, "*u8", "*u8", "*fp32", K_PACK=False)
    assert "only e2m1 operands can be packed along a dim other than K" in message


@needs_ptxas
def test_compiled_path_decodes_then_uses_bf16_tensor_cores():
    compiled = _scaled_kernel.warmup(*_SIG, M=64, N=64, K=64, FA="e2m1", FB="e4m3", KA=32,
                                     KB=64, HAS_SA=True, HAS_SB=True, FAST=False, grid=(1,))
    ptx = compiled.asm["ptx"]
    assert "cvt.rn.f16x2.e4m3x2" in ptx
    assert "mma" in ptx and ".bf16.bf16" in ptx


@triton.jit
def _fp8_cast_kernel(src, dst, back, FMT: tl.constexpr, TO: tl.constexpr):
    offs = tl.arange(0, 128)
    bits = tl.load(src + offs)
    wide = bits.to(FMT, bitcast=True).to(TO)
    tl.store(dst + offs, wide)
    tl.store(back + offs, wide.to(FMT).to(tl.uint8, bitcast=True))


@needs_ptxas
@pytest.mark.parametrize("fmt, name", [(tl.float8e4nv, "e4m3"), (tl.float8e5, "e5m2")])
@pytest.mark.parametrize("to, sig", [(tl.bfloat16, "*bf16"), (tl.float32, "*fp32"),
                                     (tl.float16, "*fp16")])
def test_fp8_casts_lower_to_hardware_conversions(fmt, name, to, sig):
    ptx = _fp8_cast_kernel.warmup("*u8", sig, "*u8", FMT=fmt, TO=to, grid=(1,)).asm["ptx"]
    assert f"cvt.rn.f16x2.{name}x2" in ptx
    # down-conversion straight from f16 pairs or from f32 pairs, both one hardware cvt
    assert re.search(rf"cvt\.rn\.satfinite\.{name}x2\.(f32|f16x2)", ptx)
