"""The tl.* functions of Triton's library beyond the basics: tl.reduce / tl.associative_scan
with @jit combine functions, the Philox random numbers (bit-exact), join / split / interleave /
cat / flip, sort / topk, clamp with NaN propagation, round-toward-zero casts, umulhi and
libdevice. Each kernel comes with
a maker of fresh random inputs and numpy's expected outputs; `ENTRIES` lists the family."""
from __future__ import annotations

import numpy as np

import compiler as triton
import compiler.language as tl
from compiler.language.extra import libdevice
from tests.zoo.case import EXACT, Case, Tolerance, ZooKernel
from tests.zoo.reference import awkward, normal


# ---- user combine functions -------------------------------------------------------------------
@triton.jit
def _pick_larger(v1, i1, v2, i2):
    better = (v1 > v2) | ((v1 == v2) & (i1 < i2))
    return tl.where(better, v1, v2), tl.where(better, i1, i2)


@triton.jit
def _xor(a, b):
    return a ^ b


@triton.jit
def _running_max_and_count(m1, c1, m2, c2):
    return tl.maximum(m1, m2), c1 + c2


@triton.jit
def combine_kernel(x_ptr, vmax_ptr, imax_ptr, xor_ptr, scan_max_ptr, scan_cnt_ptr, M, N,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    offs = rows[:, None] * N + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=-2147483648)
    index = tl.broadcast_to(cols[None, :], (BLOCK_M, BLOCK_N))
    vmax, imax = tl.reduce((x, index), 1, _pick_larger)
    tl.store(vmax_ptr + rows, vmax, mask=rows < M)
    tl.store(imax_ptr + rows, imax, mask=rows < M)
    tl.store(xor_ptr, tl.reduce(tl.where(mask, x, 0), None, _xor))
    ones = tl.where(mask, 1, 0)
    run_max, run_cnt = tl.associative_scan((x, ones), 0, _running_max_and_count, reverse=True)
    tl.store(scan_max_ptr + offs, run_max, mask=mask)
    tl.store(scan_cnt_ptr + offs, run_cnt, mask=mask)


def _make_combine(rng):
    m, n = awkward(rng, 3, 16, 16), awkward(rng, 5, 32, 32)
    x = rng.integers(-20, 20, (m, n)).astype(np.int32)            # ties
    run_max = np.maximum.accumulate(x[::-1], axis=0)[::-1]
    run_cnt = np.arange(m, 0, -1, dtype=np.int32)[:, None].repeat(n, 1)
    xor = np.bitwise_xor.reduce(x.reshape(-1))
    return Case([x, np.zeros(m, np.int32), np.zeros(m, np.int32), np.zeros(1, np.int32),
                 np.zeros_like(x), np.zeros_like(x), m, n], (1,),
                {1: x.max(axis=1), 2: x.argmax(axis=1).astype(np.int32),
                 3: np.array([xor], np.int32), 4: np.ascontiguousarray(run_max),
                 5: run_cnt}, {"BLOCK_M": 16, "BLOCK_N": 32}, {"num_warps": 4})


# ---- random numbers ---------------------------------------------------------------------------
def philox_reference(seed: int, offsets) -> np.ndarray:
    """Philox 4x32-10 of the counters (offset's low 32 bits, its high 32 bits, 0, 0) keyed by
    the seed's two halves, in Python integers: shape [n, 4]. This is what tl.randint4x returns
    for 32- and 64-bit offsets alike (as Triton, since its PR 6832)."""
    mask = 0xFFFFFFFF
    out = []
    for offset in offsets:
        c0, c1, c2, c3 = int(offset) & mask, int(offset) >> 32 & mask, 0, 0
        k0, k1 = seed & mask, seed >> 32 & mask
        for _ in range(10):
            p0, p2 = 0xD2511F53 * c0, 0xCD9E8D57 * c2
            c0, c1, c2, c3 = ((p2 >> 32) ^ c1 ^ k0) & mask, p2 & mask, \
                ((p0 >> 32) ^ c3 ^ k1) & mask, p0 & mask
            k0, k1 = (k0 + 0x9E3779B9) & mask, (k1 + 0xBB67AE85) & mask
        out.append((c0, c1, c2, c3))
    return np.array(out, dtype=np.uint64)


@triton.jit
def randint4x_kernel(out_ptr, seed, n, BLOCK: tl.constexpr, OFFSET_DTYPE: tl.constexpr):
    offs = (tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)).to(OFFSET_DTYPE)
    mask = offs < n
    r0, r1, r2, r3 = tl.randint4x(seed, offs)
    tl.store(out_ptr + offs * 4, r0, mask=mask)
    tl.store(out_ptr + offs * 4 + 1, r1, mask=mask)
    tl.store(out_ptr + offs * 4 + 2, r2, mask=mask)
    tl.store(out_ptr + offs * 4 + 3, r3, mask=mask)


def _make_randint4x(offset_bits):
    """tl.randint4x gives Philox 4x32 numbers for 32- and 64-bit offsets alike (a 64-bit
    offset's high word is the second counter word); stored zero-extended."""
    def make(rng):
        n = awkward(rng, 100, 600, 128)
        seed = int(rng.integers(0, 2**40))
        ref = philox_reference(seed, range(n)).reshape(-1)
        dt = np.int32 if offset_bits == 32 else np.int64
        expected = ref.astype(np.uint32 if offset_bits == 32 else np.uint64).view(dt)
        return Case([np.zeros(4 * n, dt), seed, n], (triton.cdiv(n, 128),), {0: expected},
                    {"BLOCK": 128, "OFFSET_DTYPE": tl.int32 if offset_bits == 32 else tl.int64},
                    {"num_warps": 4})
    return make


def uniform_reference(ints: np.ndarray) -> np.ndarray:
    """tl.uint_to_uniform_float of 32-bit integers in numpy's float32."""
    x = ints.astype(np.uint32).view(np.int32).astype(np.int64)
    x = np.where(x < 0, -x - 1, x).astype(np.int32)
    return x.astype(np.float32) * np.float32(4.6566127342e-10)


@triton.jit
def rand_kernel(uniform_ptr, normal_ptr, seed, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(uniform_ptr + offs, tl.rand(seed, offs), mask=mask)
    tl.store(normal_ptr + offs, tl.randn(seed, offs), mask=mask)


def _make_rand(rng):
    n = awkward(rng, 100, 2000, 256)
    seed = int(rng.integers(0, 2**31))
    ints = philox_reference(seed, range(n))
    u1, u2 = uniform_reference(ints[:, 0]), uniform_reference(ints[:, 1])
    radius = np.sqrt(np.float32(-2.0) * np.log(np.maximum(np.float32(1e-7), u1)))
    normal = radius * np.cos(np.float32(6.283185307179586) * u2)
    return Case([np.zeros(n, np.float32), np.zeros(n, np.float32), seed, n],
                (triton.cdiv(n, 256),), {0: u1, 1: normal.astype(np.float32)}, {"BLOCK": 256},
                {"num_warps": 4})


NAN_PAYLOAD = Tolerance(1e-7, 0.0, "NaN payloads differ (PTX max.NaN returns the canonical NaN, "
                                   "numpy the operand); every other value exact to 1e-7")

RANDN = Tolerance(2e-5, 5e-5, "log/sqrt/cos of Box-Muller: numpy's libm against the "
                              "interpreter's float32 and PTX's approximate lg2/cos")


# ---- shapes -----------------------------------------------------------------------------------
@triton.jit
def shapes_kernel(x_ptr, y_ptr, join_ptr, first_ptr, second_ptr, inter_ptr, cat_ptr, flip_ptr,
                  flip0_ptr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.arange(0, BLOCK_M)[:, None]
    cols = tl.arange(0, BLOCK_N)[None, :]
    offs = rows * BLOCK_N + cols
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    joined = tl.join(x, y)
    tl.store(join_ptr + offs[:, :, None] * 2 + tl.arange(0, 2)[None, None, :], joined)
    first, second = tl.split(joined)
    tl.store(first_ptr + offs, first)
    tl.store(second_ptr + offs, second)
    tl.store(inter_ptr + rows * 2 * BLOCK_N + tl.arange(0, 2 * BLOCK_N)[None, :],
             tl.interleave(x, y))
    tl.store(cat_ptr + tl.arange(0, 2 * BLOCK_M)[:, None] * BLOCK_N + cols,
             tl.cat(x, y, can_reorder=True))
    tl.store(flip_ptr + offs, tl.flip(x))
    tl.store(flip0_ptr + offs, tl.flip(x, 0))


def _make_shapes(rng):
    m, n = 8, 32
    x = rng.integers(-1000, 1000, (m, n)).astype(np.int16)
    y = rng.integers(-1000, 1000, (m, n)).astype(np.int16)
    z = np.zeros((m, n), np.int16)
    return Case([x, y, np.zeros((m, n, 2), np.int16), z, z.copy(),
                 np.zeros((m, 2 * n), np.int16), np.zeros((2 * m, n), np.int16), z.copy(),
                 z.copy()], (1,),
                {2: np.stack([x, y], -1), 3: x, 4: y, 5: np.stack([x, y], -1).reshape(m, 2 * n),
                 6: np.concatenate([x, y]), 7: np.ascontiguousarray(x[:, ::-1]),
                 8: np.ascontiguousarray(x[::-1])},
                {"BLOCK_M": m, "BLOCK_N": n}, {"num_warps": 4})


@triton.jit
def flip_float_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.flip(tl.load(x_ptr + offs), 0))


def _make_flip_float(rng):
    x = normal(rng, 256)
    x[3], x[7] = np.nan, -0.0
    return Case([x, np.zeros(256, np.float32)], (1,), {1: np.ascontiguousarray(x[::-1])},
                {"BLOCK": 256}, {"num_warps": 2})


@triton.jit
def sort_kernel(x_ptr, up_ptr, down_ptr, top_ptr, M, BLOCK_M: tl.constexpr, N: tl.constexpr,
                K: tl.constexpr):
    rows = tl.arange(0, BLOCK_M)[:, None]
    cols = tl.arange(0, N)[None, :]
    mask = rows < M
    x = tl.load(x_ptr + rows * N + cols, mask=mask)
    tl.store(up_ptr + rows * N + cols, tl.sort(x), mask=mask)
    tl.store(down_ptr + rows * N + cols, x.sort(descending=True), mask=mask)
    tl.store(top_ptr + rows * K + tl.arange(0, K)[None, :], tl.topk(x, K), mask=mask)


def _make_sort(rng):
    m, n, k = awkward(rng, 2, 4, 4), 32, 8
    x = rng.integers(-500, 500, (m, n)).astype(np.int32)            # ties too
    ordered = np.sort(x, axis=1)
    return Case([x, np.zeros_like(x), np.zeros_like(x), np.zeros((m, k), np.int32), m], (1,),
                {1: ordered, 2: np.ascontiguousarray(ordered[:, ::-1]),
                 3: np.ascontiguousarray(ordered[:, ::-1][:, :k])},
                {"BLOCK_M": 4, "N": n, "K": k}, {"num_warps": 4})


@triton.jit
def gather_histogram_kernel(src_ptr, idx_ptr, rows_ptr, cols_ptr, hist_ptr, n_valid,
                            M: tl.constexpr, N: tl.constexpr, BINS: tl.constexpr):
    r = tl.arange(0, M)[:, None]
    c = tl.arange(0, N)[None, :]
    src = tl.load(src_ptr + r * N + c)
    idx = tl.load(idx_ptr + r * N + c)
    tl.store(rows_ptr + r * N + c, tl.gather(src, idx % M, 0))
    tl.store(cols_ptr + r * N + c, tl.gather(src, idx % N, axis=1))
    flat = tl.arange(0, M * N)
    values = tl.load(idx_ptr + flat)
    tl.store(hist_ptr + tl.arange(0, BINS), tl.histogram(values, BINS, mask=flat < n_valid))


def _make_gather_histogram(rng):
    m, n, bins = 8, 16, 32
    src = normal(rng, (m, n))
    src[0, 0] = -0.0
    idx = rng.integers(0, bins, (m, n)).astype(np.int32)
    n_valid = int(rng.integers(1, m * n))
    rows = np.take_along_axis(src, idx % m, 0)
    cols = np.take_along_axis(src, idx % n, 1)
    hist = np.bincount(idx.reshape(-1)[:n_valid], minlength=bins).astype(np.int32)
    return Case([src, idx, np.zeros_like(src), np.zeros_like(src), np.zeros(bins, np.int32),
                 n_valid], (1,), {2: rows, 3: cols, 4: hist}, {"M": m, "N": n, "BINS": bins},
                {"num_warps": 4})


# ---- clamp, rounding, umulhi ------------------------------------------------------------------
@triton.jit
def clamp_round_kernel(x_ptr, lo_ptr, hi_ptr, clamp_ptr, clamp_nan_ptr, max_nan_ptr, rtz_ptr,
                       rtz_bf16_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    lo = tl.load(lo_ptr + offs, mask=mask)
    hi = tl.load(hi_ptr + offs, mask=mask)
    tl.store(clamp_ptr + offs, tl.clamp(x, lo, hi), mask=mask)
    tl.store(clamp_nan_ptr + offs, tl.clamp(x, lo, hi, propagate_nan=tl.PropagateNan.ALL),
             mask=mask)
    tl.store(max_nan_ptr + offs, tl.maximum(x, lo, propagate_nan=tl.PropagateNan.ALL),
             mask=mask)
    finite = tl.where(x != x, 0.0, x)                    # NaN payloads are not compared
    tl.store(rtz_ptr + offs, tl.cast(finite, tl.float16, fp_downcast_rounding="rtz"), mask=mask)
    rtz_bf16 = finite.to(tl.bfloat16, fp_downcast_rounding="rtz")
    tl.store(rtz_bf16_ptr + offs, rtz_bf16.to(tl.uint16, bitcast=True), mask=mask)


def rtz_reference(x: np.ndarray, bits_of_target: str) -> np.ndarray:
    """fp32 -> fp16 or bf16 rounding toward zero (NaN stays NaN), as numpy arrays of the
    target (bf16 as its uint16 bit pattern)."""
    if bits_of_target == "bf16":
        bits = x.view(np.uint32)
        return np.where(np.isnan(x), (bits >> 16) | 0x40, bits >> 16).astype(np.uint16)
    nearest = x.astype(np.float16)
    away = np.isfinite(x) & (np.abs(nearest.astype(np.float64)) > np.abs(x.astype(np.float64)))
    toward = np.nextafter(nearest, np.float16(0))
    return np.where(away, toward, nearest).astype(np.float16)


def _make_clamp_round(rng):
    n = awkward(rng, 100, 1000, 128)
    x = (normal(rng, n) * 1000).astype(np.float32)
    x[:4] = [np.nan, 1e6, -1e6, 65519.0]
    lo = -np.abs(normal(rng, n)) * 500
    hi = np.abs(normal(rng, n)) * 500
    with np.errstate(over="ignore", invalid="ignore"):
        clamp = np.where(np.isnan(x), lo, np.clip(x, lo, hi)).astype(np.float32)
        finite = np.where(np.isnan(x), np.float32(0), x)
        expected = {3: clamp, 4: np.clip(x, lo, hi).astype(np.float32),
                    5: np.maximum(x, lo), 6: rtz_reference(finite, "f16"),
                    7: rtz_reference(finite, "bf16")}
    return Case([x, lo, hi, np.zeros(n, np.float32), np.zeros(n, np.float32),
                 np.zeros(n, np.float32), np.zeros(n, np.float16), np.zeros(n, np.uint16), n],
                (triton.cdiv(n, 128),), expected, {"BLOCK": 128}, {"num_warps": 4})


@triton.jit
def umulhi_kernel(a_ptr, b_ptr, out32_ptr, out64_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(out32_ptr + offs, tl.umulhi(a, b), mask=mask)
    tl.store(out64_ptr + offs, tl.umulhi(a.to(tl.uint64) << 20, b.to(tl.uint64) * 3), mask=mask)


def _make_umulhi(rng):
    n = awkward(rng, 100, 1000, 128)
    a = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    hi32 = ((a.astype(np.uint64) * b.astype(np.uint64)) >> np.uint64(32)).astype(np.uint32)
    hi64 = np.array([((int(x) << 20) * (int(y) * 3)) >> 64 for x, y in zip(a, b)], np.uint64)
    return Case([a, b, np.zeros(n, np.uint32), np.zeros(n, np.uint64), n],
                (triton.cdiv(n, 128),), {2: hi32, 3: hi64}, {"BLOCK": 128}, {"num_warps": 4})


# ---- libdevice ----------------------------------------------------------------------------------
@triton.jit
def libdevice_kernel(x_ptr, y_ptr, pow_ptr, rint_ptr, flags_ptr, copysign_ptr, hypot_ptr,
                     exp10_ptr, sqrt_ptr, fmod_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(pow_ptr + offs, libdevice.pow(x, y), mask=mask)
    tl.store(rint_ptr + offs, libdevice.rint(x), mask=mask)
    flags = libdevice.isnan(x) + 2 * libdevice.isinf(x) + 4 * libdevice.signbit(x)
    tl.store(flags_ptr + offs, flags, mask=mask)
    tl.store(copysign_ptr + offs, libdevice.copysign(x, y), mask=mask)
    tl.store(hypot_ptr + offs, libdevice.hypot(x, y), mask=mask)
    tl.store(exp10_ptr + offs, libdevice.exp10(y), mask=mask)
    tl.store(sqrt_ptr + offs, libdevice.sqrt(libdevice.fabs(x)), mask=mask)
    tl.store(fmod_ptr + offs, libdevice.fmod(x, y + 0.5), mask=mask)


def _make_libdevice(rng):
    n = awkward(rng, 100, 1000, 128)
    x = (normal(rng, n) * 4).astype(np.float32)
    x[:6] = [-0.0, np.nan, np.inf, -np.inf, 2.5, -3.0]
    y = np.round(normal(rng, n) * 2).astype(np.float32)
    y[:6] = [-1.0, 2.0, 1.0, 3.0, 0.0, 2.0]
    with np.errstate(all="ignore"):
        flags = (np.isnan(x) + 2 * np.isinf(x) + 4 * np.signbit(x)).astype(np.int32)
        expected = {2: np.power(x, y), 3: np.rint(x), 4: flags, 5: np.copysign(x, y),
                    6: np.hypot(x, y).astype(np.float32),
                    7: np.power(np.float32(10), y).astype(np.float32),
                    8: np.sqrt(np.abs(x)), 9: np.fmod(x, y + np.float32(0.5))}
    outs = [np.zeros(n, np.int32) if i == 4 else np.zeros(n, np.float32) for i in range(2, 10)]
    return Case([x, y] + outs + [n], (triton.cdiv(n, 128),), expected, {"BLOCK": 128},
                {"num_warps": 4})


LIBDEVICE = Tolerance(2e-5, 1e-6, "pow and exp10 through exp2/log2 (approximate ex2/lg2 on "
                                  "the GPU) against numpy's correctly rounded libm")


# ---- block pointers -----------------------------------------------------------------------------
@triton.jit
def block_ptr_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                            stride_bn, stride_cm, stride_cn, BLOCK_M: tl.constexpr,
                            BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a_block = tl.make_block_ptr(a_ptr, (M, K), (stride_am, stride_ak), (pid_m * BLOCK_M, 0),
                                (BLOCK_M, BLOCK_K), (1, 0))
    b_block = tl.make_block_ptr(base=b_ptr, shape=(K, N), strides=(stride_bk, stride_bn),
                                offsets=(0, pid_n * BLOCK_N), block_shape=(BLOCK_K, BLOCK_N),
                                order=(1, 0))
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, K, BLOCK_K):
        a = tl.load(a_block, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_block, boundary_check=(0, 1), padding_option="zero")
        acc += tl.dot(a, b, input_precision="ieee")
        a_block = tl.advance(a_block, (0, BLOCK_K))
        b_block = tl.advance(b_block, (BLOCK_K, 0))
    c_block = tl.make_block_ptr(c_ptr, (M, N), (stride_cm, stride_cn),
                                (pid_m * BLOCK_M, pid_n * BLOCK_N), (BLOCK_M, BLOCK_N), (1, 0))
    tl.store(c_block, acc, boundary_check=(0, 1))


def _make_block_ptr_matmul(rng):
    m, n, k = awkward(rng, 20, 80, 32), awkward(rng, 20, 80, 32), awkward(rng, 20, 80, 32)
    a, b = normal(rng, (m, k)), normal(rng, (k, n))
    return Case([a, b, np.zeros((m, n), np.float32), m, n, k, k, 1, n, 1, n, 1],
                (triton.cdiv(m, 32), triton.cdiv(n, 32)),
                {2: (a.astype(np.float64) @ b).astype(np.float32)},
                {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32}, {"num_warps": 4})


@triton.jit
def block_ptr_pad_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    start = tl.program_id(0) * BLOCK - 3                      # windows start before the data
    window = tl.make_block_ptr(x_ptr, (n,), (1,), (start,), (BLOCK,), (0,))
    values = tl.load(window, boundary_check=(0,), padding_option="nan")
    out = tl.make_block_ptr(out_ptr, (n + 3,), (1,), (start + 3,), (BLOCK,), (0,))
    tl.store(out, values, boundary_check=(0,))


def _make_block_ptr_pad(rng):
    n = awkward(rng, 50, 500, 64)
    x = normal(rng, n)
    expected = np.concatenate([np.full(3, np.nan, np.float32), x])
    return Case([x, np.zeros(n + 3, np.float32), n], (triton.cdiv(n + 3, 64),), {1: expected},
                {"BLOCK": 64}, {"num_warps": 2})


@triton.jit
def tensor_descriptor_kernel(x_ptr, y_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    src = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1],
                                    block_shape=[BLOCK_M, BLOCK_N])
    dst = tl.make_tensor_descriptor(y_ptr, [M, N], [N, 1], [BLOCK_M, BLOCK_N])
    row = tl.program_id(0) * BLOCK_M
    for col in range(0, N, BLOCK_N):
        dst.store([row, col], src.load([row, col]) * 2 + 1)


def _make_tensor_descriptor(rng):
    m, n = awkward(rng, 20, 100, 16), awkward(rng, 20, 100, 32)
    x = normal(rng, (m, n))
    return Case([x, np.zeros_like(x), m, n], (triton.cdiv(m, 16),), {1: x * 2 + 1},
                {"BLOCK_M": 16, "BLOCK_N": 32}, {"num_warps": 4})


BLOCK_DOT = Tolerance(1e-4, 1e-3, "fp32 accumulation of up to 80 products in another order")


@triton.jit
def batched_dot_kernel(a_ptr, b_ptr, c_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr,
                       K: tl.constexpr):
    bi = tl.arange(0, B)[:, None, None]
    mi = tl.arange(0, M)[None, :, None]
    ni = tl.arange(0, N)[None, None, :]
    ki_col = tl.arange(0, K)[None, None, :]
    ki_row = tl.arange(0, K)[None, :, None]
    a = tl.load(a_ptr + bi * M * K + mi * K + ki_col)
    b = tl.load(b_ptr + bi * K * N + ki_row * N + ni)
    c = tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + bi * M * N + mi * N + ni, c)


def _make_batched_dot(rng):
    nb, m, n, k = 2, 16, 32, 16
    a, b = normal(rng, (nb, m, k)), normal(rng, (nb, k, n))
    return Case([a, b, np.zeros((nb, m, n), np.float32)], (1,),
                {2: np.matmul(a.astype(np.float64), b).astype(np.float32)},
                {"B": nb, "M": m, "N": n, "K": k}, {"num_warps": 4})


def _make_small_batched_dot(rng):
    nb, m, n, k = 4, 8, 2, 32                # M and N below 16 (K >= 16, as Triton needs)
    a, b = normal(rng, (nb, m, k)), normal(rng, (nb, k, n))
    return Case([a, b, np.zeros((nb, m, n), np.float32)], (1,),
                {2: np.matmul(a.astype(np.float64), b).astype(np.float32)},
                {"B": nb, "M": m, "N": n, "K": k}, {"num_warps": 2})


#: This family's catalogue entries.
ENTRIES = [
    ZooKernel("reduce_scan_user_combine", combine_kernel, _make_combine),
    ZooKernel("randint4x_i32_offsets", randint4x_kernel, _make_randint4x(32)),
    ZooKernel("randint4x_i64_offsets", randint4x_kernel, _make_randint4x(64)),
    ZooKernel("rand_randn", rand_kernel, _make_rand, RANDN, RANDN),
    ZooKernel("join_split_interleave_cat_flip", shapes_kernel, _make_shapes),
    ZooKernel("flip_f32_nan_negzero", flip_float_kernel, _make_flip_float),
    ZooKernel("sort_topk_i32", sort_kernel, _make_sort),
    ZooKernel("gather_histogram", gather_histogram_kernel, _make_gather_histogram),
    ZooKernel("clamp_propagate_nan_rtz", clamp_round_kernel, _make_clamp_round, EXACT,
              NAN_PAYLOAD),
    ZooKernel("umulhi_u32_u64", umulhi_kernel, _make_umulhi),
    ZooKernel("block_ptr_matmul", block_ptr_matmul_kernel, _make_block_ptr_matmul, BLOCK_DOT,
              BLOCK_DOT),
    ZooKernel("block_ptr_nan_padding", block_ptr_pad_kernel, _make_block_ptr_pad),
    ZooKernel("tensor_descriptor_load_store", tensor_descriptor_kernel, _make_tensor_descriptor),
    ZooKernel("dot_3d_batched", batched_dot_kernel, _make_batched_dot, BLOCK_DOT, BLOCK_DOT),
    ZooKernel("dot_3d_small_m_n", batched_dot_kernel, _make_small_batched_dot, BLOCK_DOT,
              BLOCK_DOT),
    ZooKernel("libdevice_functions", libdevice_kernel, _make_libdevice, LIBDEVICE, LIBDEVICE),
]
