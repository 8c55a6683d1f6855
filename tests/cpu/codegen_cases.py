"""Run cases for the codegen kernels: inputs of awkward sizes and numpy checks, shared by the
CPU SIMT-evaluator tests and the GPU tests. Sizes passed to an argument marked
`tt.divisibility = 16` are multiples of 16, as the specialization promises. A case is `(ttgir text, grid, args, check)`: numpy
arrays in `args` become device buffers, other values pass as scalars, and `check(read)` gets a
function returning the final contents of the i-th argument."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .codegen_kernels import KERNELS

from tests.conftest import REFERENCE  # noqa: E402  (../shared, or ./carry on the GPU machine)


def _cdiv(a, b):
    return (a + b - 1) // b


def _close(got, ref, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), ref, rtol=rtol, atol=atol)


def add(rng, n=98_752):
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)

    def check(read):
        np.testing.assert_array_equal(read(2), x + y)
    return (REFERENCE / "add.ttgir").read_text(), (_cdiv(n, 1024),), \
        [x, y, np.zeros(n, np.float32), n], check


def softmax(rng, rows=37):
    cols, stride = 2992, 3008                    # n_cols and strides: tt.divisibility = 16
    x = (rng.standard_normal((rows, stride)) * 4).astype(np.float32)

    def check(read):
        xs = x[:, :cols].astype(np.float64)
        ref = np.exp(xs - xs.max(axis=1, keepdims=True))
        ref /= ref.sum(axis=1, keepdims=True)
        _close(read(0)[:, :cols], ref, rtol=1e-4, atol=1e-7)
    return (REFERENCE / "softmax.ttgir").read_text(), (rows,), \
        [np.zeros((rows, stride), np.float32), x, stride, stride, cols], check


def layernorm(rng, rows=13):
    n = 4992                                     # N and the stride carry tt.divisibility = 16
    x = rng.standard_normal((rows, n)).astype(np.float16)
    w = rng.standard_normal(n).astype(np.float16)
    b = rng.standard_normal(n).astype(np.float16)
    eps = 1e-5

    def check(read):
        xf = x.astype(np.float64)
        mean = xf.mean(axis=1, keepdims=True)
        var = ((xf - mean) ** 2).mean(axis=1, keepdims=True)
        _close(read(1), (xf - mean) / np.sqrt(var + eps) * w + b, rtol=1e-2, atol=1e-2)
    return (REFERENCE / "layernorm.ttgir").read_text(), (rows,), \
        [x, np.zeros((rows, n), np.float16), w, b, n, n, eps], check


def reduction(name, op):
    def case(rng):
        m, n = 29, 48                            # a 32x64 tile, masked down to 29x48
        axis = 0 if "axis0" in name else 1
        dtype = np.int32 if op == "isum" else np.float32
        x = (rng.integers(-1000, 1000, (m, n)) if op == "isum"
             else rng.standard_normal((m, n))).astype(dtype)
        padded = np.zeros((32, 64), dtype=dtype)     # masked-off elements load 0
        padded[:m, :n] = x

        def check(read):
            ref = padded.max(axis=axis) if op == "max" else padded.sum(axis=axis, dtype=dtype)
            if dtype == np.int32:
                np.testing.assert_array_equal(read(1), ref)
            else:
                _close(read(1), ref, atol=1e-5)
        return KERNELS[name](), (1,), [x, np.zeros(64 if axis == 0 else 32, dtype), m, n], check
    return case


def convert(rng):
    m, n = 29, 48
    x = rng.standard_normal((m, n)).astype(np.float32)

    def check(read):
        np.testing.assert_array_equal(read(1), x)
    return KERNELS["convert"](), (1,), [x, np.zeros((m, n), np.float32), m, n], check


def int_ops(rng, n=3008):
    a = rng.integers(-1000, 1000, n).astype(np.int32)
    b = rng.integers(0, 1000, n).astype(np.int32)

    def check(read):
        d = np.fix(a / 7).astype(np.int32)
        e = np.fmod(d, 5).astype(np.int32)
        g = e + (a >> 2)
        h = np.maximum(a.view(np.uint32), b.view(np.uint32)).view(np.int32)
        s = np.where(a > b, g, h ^ (b << 1)).astype(np.int32)
        wi = s.astype(np.int64).astype(np.float32).astype(np.int32)
        v = ((wi.view(np.uint32) // 7) % 5).astype(np.int32)
        np.testing.assert_array_equal(read(2), wi - v)
    return KERNELS["int_ops"](), (_cdiv(n, 1024),), [a, b, np.zeros(n, np.int32), n], check


def half_types(rng, n=2512):
    x = rng.standard_normal(n).astype(np.float16)

    def check(read):
        bf = (read(1).astype(np.uint32) << 16).view(np.float32)
        _close(bf, x.astype(np.float32) * 2 + 1, rtol=8e-3)
        _close(read(2), np.exp(x.astype(np.float32)), rtol=2e-3)
    return KERNELS["half_types"](), (_cdiv(n, 1024),), \
        [x, np.zeros(n, np.uint16), np.zeros(n, np.float16), n], check


def loop_if(rng, n=2112, k=7):
    x = rng.standard_normal(n).astype(np.float32)

    def check(read):
        _close(read(1), sum(x * i if i % 2 == 0 else x for i in range(k)), atol=1e-5)
    return KERNELS["loop_if"](), (_cdiv(n, 1024),), [x, np.zeros(n, np.float32), k, n], check


def scan(rng, n=5008):
    x = rng.standard_normal(n).astype(np.float32)

    def check(read):
        ref = np.concatenate([np.cumsum(x[i:i + 1024], dtype=np.float64)
                              for i in range(0, n, 1024)])
        _close(read(1), ref, rtol=1e-4, atol=1e-4)
    return KERNELS["scan"](), (_cdiv(n, 1024),), [x, np.zeros(n, np.float32), n], check


def atomics(rng, n=3008):
    blocks = _cdiv(n, 1024)
    x = rng.standard_normal(n).astype(np.float32)

    def check(read):
        _close(read(1)[0], x.astype(np.float64).sum(), rtol=1e-4, atol=1e-3)
        np.testing.assert_array_equal(read(2), np.bincount(np.arange(n) % 16))
        assert read(3)[0] == 1
        assert sorted(read(4).tolist()) == [0] + [1] * (blocks - 1)
    return KERNELS["atomics"](), (blocks,), \
        [x, np.zeros(1, np.float32), np.zeros(16, np.int32), np.zeros(1, np.int32),
         np.zeros(blocks, np.int32), n], check


def dot(rng):
    a = rng.standard_normal((32, 32)).astype(np.float32)
    b = rng.standard_normal((32, 32)).astype(np.float32)

    def check(read):
        _close(read(2), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    return KERNELS["dot"](), (1,), [a, b, np.zeros((32, 32), np.float32), 32, 32], check


def dot_shared(rng):
    a = rng.standard_normal((32, 32)).astype(np.float32)
    b = rng.standard_normal((32, 32)).astype(np.float32)
    c0 = rng.standard_normal((32, 32)).astype(np.float32)

    def check(read):
        _close(read(2), c0 + 2 * (a.astype(np.float64) @ b), rtol=1e-4, atol=1e-4)
    return KERNELS["dot_shared"](), (1,), [a, b, c0.copy(), 32, 32], check


def dot_shared_trans(rng):
    a = rng.standard_normal((32, 32)).astype(np.float32)
    b = rng.standard_normal((32, 32)).astype(np.float32)

    def check(read):
        _close(read(2), a.astype(np.float64) @ b.T, rtol=1e-4, atol=1e-4)
    return KERNELS["dot_shared_trans"](), (1,), [a, b, np.zeros((32, 32), np.float32), 32, 32], \
        check


def argmax_trans_scan(rng):
    m, n = 29, 48
    x = rng.standard_normal((m, n)).astype(np.float32)
    x[3, 5] = x[3, 40] = 9.0                     # a tie: the first index wins

    def check(read):
        np.testing.assert_array_equal(read(1)[:n, :m], x.T)
        np.testing.assert_array_equal(read(2)[:m], x.argmax(axis=1))
        padded = np.zeros((32, 64), np.float64)
        padded[:m, :n] = x
        _close(read(3), np.cumsum(padded[:, ::-1], axis=1)[:, ::-1], rtol=1e-5, atol=1e-5)
    return KERNELS["argmax_trans_scan"](), (1,), \
        [x, np.zeros((64, 32), np.float32), np.zeros(32, np.int32),
         np.zeros((32, 64), np.float32), m, n], check


def while_loop(rng):
    x = np.array([1, 5, 8, 1000], dtype=np.int32)

    def check(read):
        np.testing.assert_array_equal(read(1), [0, 3, 3, 10])
    return KERNELS["while_print_assert"](), (4,), [x, np.zeros(4, np.int32)], check


CASES = {
    "add": add, "softmax": softmax, "layernorm": layernorm,
    "reduce_axis0": reduction("reduce_axis0", "sum"),
    "reduce_axis1": reduction("reduce_axis1", "sum"),
    "reduce_max_axis1": reduction("reduce_max_axis1", "max"),
    "reduce_int_axis0": reduction("reduce_int_axis0", "isum"),
    "convert": convert, "int_ops": int_ops, "half_types": half_types, "loop_if": loop_if,
    "scan": scan, "atomics": atomics, "dot": dot, "dot_shared": dot_shared,
    "dot_shared_trans": dot_shared_trans,
    "argmax_trans_scan": argmax_trans_scan,
    "while_loop": while_loop,
}
