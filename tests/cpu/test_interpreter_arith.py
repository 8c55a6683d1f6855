"""The interpreter's arith/math semantics: integer wraparound, C division, shifts, casts, fp16,
bf16 and NaN handling, each checked against an independent Python/numpy reference."""
from __future__ import annotations

import math

import numpy as np
import pytest

from ._interp_ir import run_elementwise

RNG = np.random.default_rng(1234)
I32_MIN, I32_MAX = -(2 ** 31), 2 ** 31 - 1


def wrap(value: int, bits: int) -> int:
    """Two's-complement wraparound of a Python int."""
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >= 1 << (bits - 1) else value


def c_div(a: int, b: int) -> int:
    """C's integer division: truncation toward zero."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def i32_pairs(n: int = 300):
    """Random int32 operands with the extremes mixed in."""
    a = RNG.integers(I32_MIN, I32_MAX, n, endpoint=True, dtype=np.int64)
    b = RNG.integers(I32_MIN, I32_MAX, n, endpoint=True, dtype=np.int64)
    a[:6] = [I32_MIN, I32_MAX, -1, 0, 1, I32_MIN]
    b[:6] = [-1, 1, I32_MAX, 5, -1, I32_MIN]
    return a.astype(np.int32), b.astype(np.int32)


def binary_i32(op: str, a, b, out_type="i32", out_dtype=np.int32):
    body = f"%r = arith.{op} %a0, %a1 : tensor<$Nxi32>"
    return run_elementwise(body, [a, b], ["i32", "i32"], out_type, out_dtype)


@pytest.mark.parametrize("op, fn", [("addi", lambda x, y: x + y), ("subi", lambda x, y: x - y),
                                    ("muli", lambda x, y: x * y)])
def test_i32_arithmetic_wraps(op, fn):
    a, b = i32_pairs()
    got = binary_i32(op, a, b)
    expected = [wrap(fn(int(x), int(y)), 32) for x, y in zip(a, b)]
    assert got.tolist() == expected


def test_i64_and_i8_arithmetic_wrap():
    a = RNG.integers(-(2 ** 63), 2 ** 63 - 1, 200, dtype=np.int64)
    b = RNG.integers(-(2 ** 63), 2 ** 63 - 1, 200, dtype=np.int64)
    got = run_elementwise("%r = arith.muli %a0, %a1 : tensor<$Nxi64>", [a, b], ["i64", "i64"],
                          "i64", np.int64)
    assert got.tolist() == [wrap(int(x) * int(y), 64) for x, y in zip(a, b)]
    c = RNG.integers(-128, 127, 64, dtype=np.int8)
    d = RNG.integers(-128, 127, 64, dtype=np.int8)
    got = run_elementwise("%r = arith.addi %a0, %a1 : tensor<$Nxi8>", [c, d], ["i8", "i8"],
                          "i8", np.int8)
    assert got.tolist() == [wrap(int(x) + int(y), 8) for x, y in zip(c, d)]


# (a, b, a divsi b, a remsi b): C semantics, truncation toward zero
DIVISION_TABLE = [(7, 2, 3, 1), (-7, 2, -3, -1), (7, -2, -3, 1), (-7, -2, 3, -1), (6, 3, 2, 0),
                  (-1, 5, 0, -1), (0, -3, 0, 0), (I32_MIN, -1, I32_MIN, 0), (I32_MIN, 2, -2 ** 30, 0),
                  (I32_MAX, -2, -1073741823, 1)]


def test_signed_division_truncates_toward_zero():
    a = np.array([row[0] for row in DIVISION_TABLE], dtype=np.int32)
    b = np.array([row[1] for row in DIVISION_TABLE], dtype=np.int32)
    assert binary_i32("divsi", a, b).tolist() == [row[2] for row in DIVISION_TABLE]
    assert binary_i32("remsi", a, b).tolist() == [row[3] for row in DIVISION_TABLE]
    x, y = i32_pairs()
    y[y == 0] = 7
    keep = ~((x == I32_MIN) & (y == -1))
    x, y = x[keep], y[keep]
    assert binary_i32("divsi", x, y).tolist() == [c_div(int(p), int(q)) for p, q in zip(x, y)]
    assert binary_i32("remsi", x, y).tolist() == [int(p) - int(q) * c_div(int(p), int(q))
                                                   for p, q in zip(x, y)]


def test_unsigned_division_reads_the_bits_as_unsigned():
    a, b = i32_pairs()
    b[b == 0] = 3
    ua, ub = a.astype(np.int64) & 0xFFFFFFFF, b.astype(np.int64) & 0xFFFFFFFF
    assert binary_i32("divui", a, b).tolist() == [wrap(int(p) // int(q), 32) for p, q in zip(ua, ub)]
    assert binary_i32("remui", a, b).tolist() == [wrap(int(p) % int(q), 32) for p, q in zip(ua, ub)]


def test_ceildivsi_rounds_toward_positive_infinity():
    a = np.array([7, -7, 7, -7, 6, 0, 1], dtype=np.int32)
    b = np.array([2, 2, -2, -2, 3, 5, 1], dtype=np.int32)
    assert binary_i32("ceildivsi", a, b).tolist() == [math.ceil(p / q) for p, q in zip(a, b)]


def test_shifts_clamp_like_ptx():
    a = RNG.integers(I32_MIN, I32_MAX, 200, dtype=np.int64).astype(np.int32)
    s = RNG.integers(0, 40, 200).astype(np.int32)
    s[:3] = [31, 32, 39]
    a[:3] = [-5, -5, -5]

    def shl(x, k):
        return 0 if k >= 32 else wrap(int(x) << int(k), 32)

    def shrsi(x, k):
        return int(x) >> min(int(k), 31)

    def shrui(x, k):
        return 0 if k >= 32 else wrap((int(x) & 0xFFFFFFFF) >> int(k), 32)

    for op, fn in [("shli", shl), ("shrsi", shrsi), ("shrui", shrui)]:
        assert binary_i32(op, a, s).tolist() == [fn(x, k) for x, k in zip(a, s)], op


def test_signed_and_unsigned_min_max_and_compares():
    a, b = i32_pairs()
    ua, ub = a.astype(np.int64) & 0xFFFFFFFF, b.astype(np.int64) & 0xFFFFFFFF
    assert binary_i32("maxsi", a, b).tolist() == np.maximum(a, b).tolist()
    assert binary_i32("minui", a, b).tolist() == [wrap(int(v), 32) for v in np.minimum(ua, ub)]
    predicates = {"eq": (a, b, np.equal), "ne": (a, b, np.not_equal), "slt": (a, b, np.less),
                  "sge": (a, b, np.greater_equal), "ult": (ua, ub, np.less),
                  "uge": (ua, ub, np.greater_equal), "ugt": (ua, ub, np.greater),
                  "sle": (a, b, np.less_equal)}
    for pred, (x, y, fn) in predicates.items():
        body = f"%r = arith.cmpi {pred}, %a0, %a1 : tensor<$Nxi32>"
        got = run_elementwise(body, [a, b], ["i32", "i32"], "i1", np.bool_)
        assert got.tolist() == fn(x, y).tolist(), pred


def test_mulhiui_is_the_high_half():
    a, b = i32_pairs()
    got = binary_i32("mulhiui", a, b)
    expected = [wrap(((int(x) & 0xFFFFFFFF) * (int(y) & 0xFFFFFFFF)) >> 32, 32)
                for x, y in zip(a, b)]
    assert got.tolist() == expected


def test_i1_arithmetic_and_extension():
    a = np.array([0, 1, 0, 1], dtype=np.bool_)
    b = np.array([0, 0, 1, 1], dtype=np.bool_)
    got = run_elementwise("%r = arith.addi %a0, %a1 : tensor<$Nxi1>", [a, b], ["i1", "i1"], "i1",
                          np.bool_)
    assert got.tolist() == [False, True, True, False]
    got = run_elementwise("%r = arith.extsi %a0 : tensor<$Nxi1> to tensor<$Nxi32>", [a], ["i1"],
                          "i32", np.int32)
    assert got.tolist() == [0, -1, 0, -1]
    got = run_elementwise("%r = arith.extui %a0 : tensor<$Nxi1> to tensor<$Nxi32>", [a], ["i1"],
                          "i32", np.int32)
    assert got.tolist() == [0, 1, 0, 1]


def test_integer_casts():
    a = np.array([-1, -128, 127, 300, -300, 65537], dtype=np.int32)
    got = run_elementwise("%r = arith.trunci %a0 : tensor<$Nxi32> to tensor<$Nxi8>", [a], ["i32"],
                          "i8", np.int8)
    assert got.tolist() == [wrap(int(v), 8) for v in a]
    c = np.array([-1, -128, 127, 5], dtype=np.int8)
    got = run_elementwise("%r = arith.extui %a0 : tensor<$Nxi8> to tensor<$Nxi32>", [c], ["i8"],
                          "i32", np.int32)
    assert got.tolist() == [255, 128, 127, 5]
    got = run_elementwise("%r = arith.uitofp %a0 : tensor<$Nxi8> to tensor<$Nxf32>", [c], ["i8"],
                          "f32", np.float32)
    assert got.tolist() == [255.0, 128.0, 127.0, 5.0]


def test_float_to_int_truncates_and_saturates():
    x = np.array([2.7, -2.7, 0.5, -0.5, 3e9, -3e9, np.nan, np.inf, -np.inf, 2147483520.0],
                 dtype=np.float32)
    got = run_elementwise("%r = arith.fptosi %a0 : tensor<$Nxf32> to tensor<$Nxi32>", [x], ["f32"],
                          "i32", np.int32)
    assert got.tolist() == [2, -2, 0, 0, I32_MAX, I32_MIN, 0, I32_MAX, I32_MIN, 2147483520]
    got = run_elementwise("%r = arith.fptoui %a0 : tensor<$Nxf32> to tensor<$Nxi8>", [x], ["f32"],
                          "i8", np.uint8)
    assert got.tolist() == [2, 0, 0, 0, 255, 0, 0, 255, 0, 255]


def test_bitcast_reinterprets_bits():
    x = RNG.standard_normal(32).astype(np.float32)
    got = run_elementwise("%r = arith.bitcast %a0 : tensor<$Nxf32> to tensor<$Nxi32>", [x],
                          ["f32"], "i32", np.int32)
    assert got.tolist() == x.view(np.int32).tolist()


def test_fp16_stays_fp16():
    a = (RNG.standard_normal(257) * 100).astype(np.float16)
    b = (RNG.standard_normal(257) * 100).astype(np.float16)
    a[0], b[0] = 60000, 60000          # overflows in fp16 (not in fp32)
    for op, fn in [("addf", np.add), ("mulf", np.multiply), ("divf", np.divide)]:
        got = run_elementwise(f"%r = arith.{op} %a0, %a1 : tensor<$Nxf16>", [a, b],
                              ["f16", "f16"], "f16", np.float16)
        with np.errstate(over="ignore"):
            expected = fn(a.astype(np.float64), b.astype(np.float64)).astype(np.float16)
        np.testing.assert_array_equal(got, expected)
    one = np.ones(4, np.float16)
    big = np.full(4, 2048, np.float16)
    got = run_elementwise("""%s = arith.addf %a0, %a1 : tensor<$Nxf16>
                             %r = arith.subf %s, %a1 : tensor<$Nxf16>""", [one, big],
                          ["f16", "f16"], "f16", np.float16)
    assert (got == 0).all()           # 2049 rounds to 2048 in fp16 (fp32 would give 1)
    x = a[1:] / np.float16(50)
    got = run_elementwise("%r = math.exp %a0 : tensor<$Nxf16>", [x], ["f16"], "f16", np.float16)
    exact = np.exp(x.astype(np.float64))
    assert np.all(np.abs(got.astype(np.float64) - exact) <= np.abs(exact) * 2 ** -10 + 1e-7)
    assert np.isinf(run_elementwise("%r = arith.addf %a0, %a1 : tensor<$Nxf16>", [a, b],
                                    ["f16", "f16"], "f16", np.float16)[0])


def bf16_bits(values) -> np.ndarray:
    """Round float64 values to bf16 (nearest even) independently of the interpreter."""
    out = []
    for v in values:
        m, e = math.frexp(float(v))
        r = round(m * 256) / 256            # 8 significant bits, Python rounds halves to even
        f = np.float32(math.ldexp(r, e))
        out.append(int(np.array(f).view(np.uint32)) >> 16)
    return np.array(out, dtype=np.uint16)


def bf16_values(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def test_bf16_add_rounds_to_nearest_even():
    a = bf16_bits(RNG.standard_normal(100))
    b = bf16_bits(RNG.standard_normal(100) * 0.01)
    # ties: 1 + 2**-8 rounds to 1; 1 + 3 * 2**-8 rounds to 1 + 2**-6
    a[:2] = bf16_bits([1.0, 1.0 + 2 ** -7])
    b[:2] = bf16_bits([2 ** -8, 2 ** -8])
    got = run_elementwise("%r = arith.addf %a0, %a1 : tensor<$Nxbf16>", [a, b],
                          ["bf16", "bf16"], "bf16", np.uint16)
    expected = bf16_bits(bf16_values(a) + bf16_values(b))
    assert got.tolist() == expected.tolist()
    assert bf16_values(got[:2]).tolist() == [1.0, 1.0 + 2 ** -6]


def test_bf16_truncf_and_extf():
    x = RNG.standard_normal(64).astype(np.float32)
    got = run_elementwise("%r = arith.truncf %a0 : tensor<$Nxf32> to tensor<$Nxbf16>", [x],
                          ["f32"], "bf16", np.uint16)
    assert got.tolist() == bf16_bits(x).tolist()
    back = run_elementwise("%r = arith.extf %a0 : tensor<$Nxbf16> to tensor<$Nxf32>", [got],
                           ["bf16"], "f32", np.float32)
    assert back.astype(np.float64).tolist() == bf16_values(got).tolist()


def test_float_compares_and_nan():
    a = np.array([1.0, np.nan, 2.0, np.nan, 3.0], dtype=np.float32)
    b = np.array([2.0, 1.0, 2.0, np.nan, np.nan], dtype=np.float32)
    expect = {"olt": [1, 0, 0, 0, 0], "ult": [1, 1, 0, 1, 1], "one": [1, 0, 0, 0, 0],
              "une": [1, 1, 0, 1, 1], "oeq": [0, 0, 1, 0, 0], "ueq": [0, 1, 1, 1, 1],
              "ord": [1, 0, 1, 0, 0], "uno": [0, 1, 0, 1, 1]}
    for pred, values in expect.items():
        got = run_elementwise(f"%r = arith.cmpf {pred}, %a0, %a1 : tensor<$Nxf32>", [a, b],
                              ["f32", "f32"], "i1", np.bool_)
        assert got.astype(int).tolist() == values, pred
    got = run_elementwise("%r = arith.maxnumf %a0, %a1 : tensor<$Nxf32>", [a, b],
                          ["f32", "f32"], "f32", np.float32)
    assert got.tolist()[:3] == [2.0, 1.0, 2.0] and got[4] == 3.0 and np.isnan(got[3])
    got = run_elementwise("%r = arith.maximumf %a0, %a1 : tensor<$Nxf32>", [a, b],
                          ["f32", "f32"], "f32", np.float32)
    assert np.isnan(got[[1, 3, 4]]).all() and got[0] == 2.0


def test_math_round_fma_and_remf():
    x = np.array([2.5, -2.5, 0.5, -0.5, 1.49999988, 3.7], dtype=np.float32)
    got = run_elementwise("%r = math.round %a0 : tensor<$Nxf32>", [x], ["f32"], "f32",
                          np.float32)
    assert got.tolist() == [3.0, -3.0, 1.0, -1.0, 1.0, 4.0]
    a = np.array([1 + 2 ** -23], dtype=np.float32)
    c = np.array([-(1 + 2 ** -22)], dtype=np.float32)
    got = run_elementwise("%r = math.fma %a0, %a0, %a1 : tensor<$Nxf32>", [a, c],
                          ["f32", "f32"], "f32", np.float32)
    assert got[0] == np.float32(2.0 ** -46)        # unfused it would be 0
    p = np.array([5.5, -5.5, 5.5], dtype=np.float32)
    q = np.array([2.0, 2.0, -2.0], dtype=np.float32)
    got = run_elementwise("%r = arith.remf %a0, %a1 : tensor<$Nxf32>", [p, q], ["f32", "f32"],
                          "f32", np.float32)
    assert got.tolist() == [1.5, -1.5, 1.5]
