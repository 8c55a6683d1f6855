"""tf32 (mma.sync m16n8k8) and int8 (m16n8k32) dots on MMA v2 on the GPU, with the
`mma_v2_tf32_int8` option on (its default since this tier passed; set here so an environment
that turns it off cannot skip the check):
Triton's test_dot shapes that wgmma cannot take (2 warps, or M below 64 per warp group), row-
and column-major operands, tf32x3 and a chained second dot, against torch (tf32 within
test_dot's tolerance, tf32x3 near fp32, int8 exact). Each launch's PTX must show the instruction,
so a stale FMA compile cannot pass.

    TILE_REQUIRE_GPU=1 python -m pytest -q tests/gpu/test_mma_v2_narrow_gpu.py
"""
from __future__ import annotations

import numpy as np
import pytest

import compiler as triton
import compiler.language as tl

pytestmark = pytest.mark.gpu

TF32_MMA = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
INT8_MMA = "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32"


@pytest.fixture(autouse=True)
def _mma_v2_narrow_on(monkeypatch):
    monkeypatch.setenv("TILE_MMA_V2_TF32_INT8", "1")


@triton.jit
def narrow_dot_kernel(x_ptr, sxm, sxk, y_ptr, syk, syn, w_ptr, z_ptr, M: tl.constexpr,
                      N: tl.constexpr, K: tl.constexpr, PRECISION: tl.constexpr,
                      CHAIN: tl.constexpr):
    """Z = X @ Y (then, with CHAIN, Z = Z.to(W's type) @ W for a square W), X and Y strided."""
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    x = tl.load(x_ptr + rm[:, None] * sxm + rk[None, :] * sxk)
    y = tl.load(y_ptr + rk[:, None] * syk + rn[None, :] * syn)
    z = tl.dot(x, y, input_precision=PRECISION)
    if CHAIN:
        w = tl.load(w_ptr + rn[:, None] * N + rn[None, :])
        z = tl.dot(z.to(w.dtype), w, input_precision=PRECISION)
    tl.store(z_ptr + rm[:, None] * N + rn[None, :], z)


def _tf32(x: np.ndarray) -> np.ndarray:
    return (x.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)


def make_case(element: str, m: int, n: int, k: int, precision: str, col_a: bool, col_b: bool,
              chain: bool):
    """(kernel arguments as numpy arrays and ints, constexprs, torch reference as numpy)."""
    import torch
    rng = np.random.default_rng(m * 7 + n * 5 + k * 3 + col_a + 2 * col_b)
    if element == "int8":
        bound = 8 if chain else 128
        draw = lambda shape: rng.integers(-bound, bound, shape).astype(np.int8)  # noqa: E731
        out = np.zeros((m, n), np.int32)
    else:
        draw = lambda shape: (0.1 * rng.standard_normal(shape)).astype(np.float32)  # noqa: E731
        out = np.zeros((m, n), np.float32)
    xs = draw((k, m) if col_a else (m, k))          # the arrays in memory order
    ys = draw((n, k) if col_b else (k, n))
    w = draw((n, n))
    if element != "int8" and precision == "tf32":   # as test_dot: exact tf32 inputs
        xs, ys, w = _tf32(xs), _tf32(ys), _tf32(w)
    x, y = (xs.T if col_a else xs), (ys.T if col_b else ys)
    sxm, sxk = (1, m) if col_a else (k, 1)
    syk, syn = (1, k) if col_b else (n, 1)
    if element == "int8":
        ref = torch.from_numpy(x.astype(np.int64)) @ torch.from_numpy(y.astype(np.int64))
        if chain:
            ref = ref.to(torch.int8).to(torch.int64) @ torch.from_numpy(w.astype(np.int64))
    else:
        ref = torch.from_numpy(x.astype(np.float64)) @ torch.from_numpy(y.astype(np.float64))
        if chain:
            first = ref.to(torch.float32).numpy()
            if precision == "tf32":
                first = _tf32(first)
            ref = torch.from_numpy(first.astype(np.float64)) @ torch.from_numpy(
                w.astype(np.float64))
    args = [np.ascontiguousarray(xs), sxm, sxk, np.ascontiguousarray(ys), syk, syn, w, out]
    constexprs = {"M": m, "N": n, "K": k, "PRECISION": precision, "CHAIN": chain}
    return args, constexprs, ref.numpy()


def _run(element: str, m: int, n: int, k: int, num_warps: int, precision: str, col_a: bool,
         col_b: bool, chain: bool):
    """(kernel output, torch reference, the launch's PTX)."""
    pytest.importorskip("torch")
    from compiler.runtime import driver
    from compiler.runtime.device_array import DeviceArray
    args, constexprs, ref = make_case(element, m, n, k, precision, col_a, col_b, chain)
    device = [DeviceArray.from_numpy(a) if isinstance(a, np.ndarray) else a for a in args]
    compiled = narrow_dot_kernel[(1,)](*device, **constexprs, num_warps=num_warps,
                                       interpret=False)
    driver.synchronize()
    return device[-1].to_numpy(), ref, compiled.asm["ptx"]


TF32_SHAPES = [(128, 128, 64, 2), (32, 128, 64, 2), (32, 128, 64, 4), (32, 32, 128, 4),
               (64, 128, 128, 2), (16, 16, 16, 4), (32, 32, 32, 4), (32, 32, 32, 2)]
INT8_SHAPES = [(128, 128, 64, 2), (32, 128, 64, 2), (32, 128, 64, 4), (32, 32, 128, 4),
               (64, 128, 128, 2), (32, 32, 32, 4)]
LAYOUTS = [(False, False), (True, False), (False, True), (True, True)]


@pytest.mark.parametrize("col_a,col_b", LAYOUTS)
@pytest.mark.parametrize("precision", ["tf32", "tf32x3"])
@pytest.mark.parametrize("m,n,k,num_warps", TF32_SHAPES)
def test_tf32_dot(m, n, k, num_warps, precision, col_a, col_b):
    got, ref, ptx = _run("float32", m, n, k, num_warps, precision, col_a, col_b, False)
    assert TF32_MMA in ptx
    if precision == "tf32":
        np.testing.assert_allclose(got, ref, rtol=0.01, atol=1e-3)     # test_dot's tolerance
    else:
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)     # near fp32


@pytest.mark.parametrize("col_a,col_b", LAYOUTS)
@pytest.mark.parametrize("m,n,k,num_warps", INT8_SHAPES)
def test_int8_dot_is_exact(m, n, k, num_warps, col_a, col_b):
    got, ref, ptx = _run("int8", m, n, k, num_warps, "tf32", col_a, col_b, False)
    assert INT8_MMA in ptx
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("element,precision,m,n,k,num_warps", [
    ("float32", "tf32", 32, 32, 32, 4), ("float32", "tf32", 16, 16, 16, 4),
    ("float32", "tf32x3", 32, 32, 32, 2), ("int8", "tf32", 32, 32, 64, 2)])
def test_chained_dot(element, precision, m, n, k, num_warps):
    got, ref, ptx = _run(element, m, n, k, num_warps, precision, False, False, True)
    assert (INT8_MMA if element == "int8" else TF32_MMA) in ptx
    if element == "int8":
        np.testing.assert_array_equal(got, ref)
    else:
        np.testing.assert_allclose(got, ref, rtol=0.01, atol=1e-3)
