"""Triton 3.6's own ttir/ttgir for the tutorial kernels (../shared/reference) run through the
interpreter on random inputs whose sizes are not multiples of the block size."""
from __future__ import annotations

import time

import numpy as np
import pytest

from compiler.ir.parser import parse_module
from compiler.ir.verifier import verify_module
from compiler.runtime.interpreter import interpret

RNG = np.random.default_rng(2024)


def load(reference_dir, name: str):
    module = parse_module((reference_dir / name).read_text(), name)
    verify_module(module)
    return module


@pytest.mark.parametrize("stage", ["ttir", "ttgir"])
def test_vector_add(reference_dir, stage):
    module = load(reference_dir, f"add.{stage}")           # BLOCK = 1024
    n = 3 * 1024 + 517
    x, y = RNG.standard_normal(n).astype(np.float32), RNG.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    interpret(module, ((n + 1023) // 1024,), [x, y, out, n])
    np.testing.assert_array_equal(out, x + y)


@pytest.mark.parametrize("stage", ["ttir", "ttgir"])
def test_softmax(reference_dir, stage):
    module = load(reference_dir, f"softmax.{stage}")       # BLOCK = 4096, one row per program
    rows, cols = 7, 1000
    x = RNG.standard_normal((rows, cols)).astype(np.float32) * 3
    y = np.zeros_like(x)
    interpret(module, (rows,), [y, x, x.strides[0] // 4, y.strides[0] // 4, cols])
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=2e-6, atol=1e-9)


@pytest.mark.parametrize("stage", ["ttir", "ttgir"])
def test_layernorm_fp16(reference_dir, stage):
    module = load(reference_dir, f"layernorm.{stage}")     # BLOCK = 8192, fp16 in and out
    rows, cols = 4, 1000
    x = RNG.standard_normal((rows, cols)).astype(np.float16)
    w = RNG.random(cols).astype(np.float16)
    b = RNG.random(cols).astype(np.float16)
    y = np.zeros_like(x)
    interpret(module, (rows,), [x, y, w, b, cols, cols, 1e-5])
    xf = x.astype(np.float64)
    mean = xf.mean(axis=1, keepdims=True)
    var = ((xf - mean) ** 2).mean(axis=1, keepdims=True)
    expected = ((xf - mean) / np.sqrt(var + 1e-5) * w + b).astype(np.float16)
    assert y.dtype == np.float16
    np.testing.assert_allclose(y.astype(np.float32), expected.astype(np.float32),
                               rtol=2e-3, atol=2e-3)


def test_matmul_fp16(reference_dir):
    # Triton specialized this kernel: BM=128, BN=256, BK=64, GROUP_M=8, and the unit strides
    # (sak, sbn, scn) are folded away, so A, B and C must be row-major.
    module = load(reference_dir, "matmul.ttir")
    m, n, k = 144, 272, 80
    a = RNG.standard_normal((m, k)).astype(np.float16)
    b = RNG.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float16)
    grid = (-(-m // 128) * -(-n // 256),)
    interpret(module, grid, [a, b, c, m, n, k, k, n, n])
    expected = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float16)
    np.testing.assert_allclose(c.astype(np.float32), expected.astype(np.float32),
                               rtol=2e-3, atol=2e-3)


def test_small_launches_are_fast(reference_dir):
    add = load(reference_dir, "add.ttir")
    matmul = load(reference_dir, "matmul.ttir")
    x, y = RNG.standard_normal(4096).astype(np.float32), RNG.standard_normal(4096).astype(np.float32)
    out = np.zeros(4096, np.float32)
    a = RNG.standard_normal((64, 64)).astype(np.float16)
    b = RNG.standard_normal((64, 64)).astype(np.float16)
    c = np.zeros((64, 64), np.float16)
    start = time.perf_counter()
    interpret(add, (4,), [x, y, out, 4096])
    interpret(matmul, (1,), [a, b, c, 64, 64, 64, 64, 64, 64])
    elapsed = time.perf_counter() - start
    np.testing.assert_array_equal(out, x + y)
    np.testing.assert_allclose(c.astype(np.float32), (a.astype(np.float32) @ b.astype(np.float32)),
                               rtol=2e-3, atol=2e-2)
    assert elapsed < 1.0, f"a 4096-element add and a 64x64 matmul took {elapsed:.2f}s"
