"""Triton's semantics where the interpreter-marked part of Triton's own suite found ours to
differ: Triton's wording for its errors, `>>` signedness, explicit `None` arguments,
conditional expressions used as statements, `:` on scalars, pointer `tl.where`, keyword
loop steps, `tl.xor_sum`, `tl.pi32_t`, 64-bit offsets in `tl.randint`, and the driver choice
of `triton.runtime.driver.active`. Each kernel runs in the interpreter and is checked against
numpy (or, for errors, the position and message are checked)."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import compiler as triton
import compiler.language as tl
from compiler.frontend import CompilationError, generate_ttir
from tests.zoo.language import philox_reference

RNG = np.random.default_rng(11)


def _caret_line(fn, marker: str) -> int:
    """The file line number of the line of `fn` holding `marker`."""
    lines, start = inspect.getsourcelines(fn.fn)
    return start + next(i for i, line in enumerate(lines) if marker in line)


def _compile_error(kernel, signature, constexprs=None) -> CompilationError:
    with pytest.raises(CompilationError) as info:
        generate_ttir(kernel, signature, constexprs or {}, options={"debug": False})
    return info.value


# ---- Triton's error wording (the suite matches it with pytest.raises(match=...)) ------------
@triton.jit
def bitwise_kernel(X, Y, Z, OP: tl.constexpr):
    x = tl.load(X)
    y = tl.load(Y)
    if OP == "&":
        z = x & y  # OP
    elif OP == "|":
        z = x | y  # OP
    else:
        z = x ^ y  # OP
    tl.store(Z, z)


@pytest.mark.parametrize("op", ["&", "|", "^"])
@pytest.mark.parametrize("types", [("*fp32", "*fp32"), ("*fp16", "*i32"), ("*i8", "*fp64")])
def test_bitwise_on_floats_uses_tritons_words(op, types):
    err = _compile_error(bitwise_kernel, {"X": types[0], "Y": types[1], "Z": "*fp32"},
                         {"OP": op})
    a, b = (tl.core.dtype_from_signature(t[1:]) for t in types)
    assert err.message.startswith(f"invalid operands of type {a} and {b}: `{op}` needs "
                                  "integer (or boolean) operands"), err.message
    assert err.line == _caret_line(bitwise_kernel, f"x {op} y") and str(err).splitlines()[2] \
        .strip() == "^"


@triton.jit
def divide_kernel(X, Y, Z):
    z = tl.load(X) % tl.load(Y)  # DIV
    tl.store(Z, z)


def test_mixed_signedness_division_uses_tritons_words():
    err = _compile_error(divide_kernel, {"X": "*i8", "Y": "*u16", "Z": "*i32"})
    assert "Cannot use /, // or % with int8 and uint16 because they have different " \
           "signedness" in err.message
    assert err.line == _caret_line(divide_kernel, "# DIV")


@triton.jit
def slice_kernel(X, N: tl.constexpr):
    x = tl.load(X + tl.arange(0, N))
    tl.store(X + tl.arange(0, N // 2), x[1:])  # SLICE


def test_unsupported_index_uses_tritons_words():
    err = _compile_error(slice_kernel, {"X": "*fp32"}, {"N": 8})
    assert err.message.startswith("unsupported tensor index: 1:"), err.message
    assert err.line == _caret_line(slice_kernel, "# SLICE")


# ---- `>>` decides arithmetic vs logical on the left operand's own dtype ----------------------
@triton.jit
def shift_kernel(X, Y, Z, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(Z + offs, tl.load(X + offs) >> tl.load(Y + offs))


@pytest.mark.parametrize("x_dt,y_dt,wide", [(np.int8, np.uint16, np.int16),
                                            (np.int32, np.uint32, np.int32),
                                            (np.int16, np.uint64, np.int64),
                                            (np.uint8, np.uint32, np.uint32)])
def test_right_shift_follows_the_left_operands_signedness(x_dt, y_dt, wide):
    n = 64
    bits = np.dtype(wide).itemsize * 8
    info = np.iinfo(x_dt)
    x = RNG.integers(info.min, info.max, n, endpoint=True).astype(x_dt)
    y = RNG.integers(0, bits, n).astype(y_dt)
    z = np.zeros(n, dtype=np.dtype(f"u{bits // 8}"))
    shift_kernel[(1,)](x, y, z, N=n, interpret=True)
    expected = (x.astype(wide) >> y.astype(wide)).view(z.dtype)
    np.testing.assert_array_equal(z, expected)


# ---- an explicit None is "not given" --------------------------------------------------------
@triton.jit
def none_mask_kernel(X, Y, N: tl.constexpr, HOW: tl.constexpr):
    offs = tl.arange(0, N)
    if HOW == 0:
        x = tl.load(X + offs, None)
        tl.store(Y + offs, x, None)
    else:
        x = tl.load(X + offs, mask=None, other=None)
        tl.store(Y + offs, x + 1, mask=None)


@pytest.mark.parametrize("how", [0, 1])
def test_none_mask_and_other_mean_unmasked(how):
    x = RNG.standard_normal(16).astype(np.float32)
    y = np.zeros_like(x)
    none_mask_kernel[(1,)](x, y, N=16, HOW=how, interpret=True)
    np.testing.assert_array_equal(y, x + how)


# ---- `f() if c else g()` as a statement ------------------------------------------------------
@triton.jit
def void_ifexp_kernel(A, B, R):
    pid = tl.program_id(0)
    tl.store(R + pid, tl.load(A)) if pid % 3 == 0 else tl.store(R + pid, tl.load(B))


def test_conditional_expression_without_values_runs_one_side():
    a, b = np.array([1.5], np.float32), np.array([-2.0], np.float32)
    r = np.zeros(7, np.float32)
    void_ifexp_kernel[(7,)](a, b, r, interpret=True)
    np.testing.assert_array_equal(r, [1.5 if i % 3 == 0 else -2.0 for i in range(7)])


def test_conditional_expression_without_values_is_an_scf_if_with_no_results():
    module = generate_ttir(void_ifexp_kernel, {"A": "*fp32", "B": "*fp32", "R": "*fp32"}, {})
    from compiler.dialects import scf
    ifs = [op for op in module.walk() if isinstance(op, scf.IfOp)]
    assert len(ifs) == 1 and not ifs[0].results


@triton.jit
def half_void_ifexp_kernel(A, R):
    pid = tl.program_id(0)
    v = tl.load(A) if pid == 0 else tl.store(R, 1.0)  # HALF
    tl.store(R, v)


def test_conditional_expression_with_one_valueless_side_is_refused():
    err = _compile_error(half_void_ifexp_kernel, {"A": "*fp32", "R": "*fp32"})
    assert "one side of this conditional expression has no value" in err.message
    assert err.line == _caret_line(half_void_ifexp_kernel, "# HALF")


# ---- `:` on a scalar after new axes ----------------------------------------------------------
@triton.jit
def scalar_axes_kernel(X, Z, N: tl.constexpr):
    x = tl.load(X + tl.arange(0, N)[None, :])
    total = tl.sum(tl.sum(x, axis=1, keep_dims=True), axis=0, keep_dims=True)
    z_ptr = Z
    z_ptr = z_ptr[None, None, :]
    tl.store(z_ptr, total)


def test_colon_on_a_scalar_keeps_an_axis_made_by_none():
    x = RNG.standard_normal(32).astype(np.float32)
    z = np.zeros(1, np.float32)
    scalar_axes_kernel[(1,)](x, z, N=32, interpret=True)
    np.testing.assert_allclose(z[0], x.sum(), rtol=1e-5)


@triton.jit
def too_many_colons_kernel(X):
    p = X[None, :, :]  # COLONS
    tl.store(p, 1.0)


def test_more_colons_than_axes_is_refused():
    err = _compile_error(too_many_colons_kernel, {"X": "*fp32"})
    assert "too many indices" in err.message
    assert err.line == _caret_line(too_many_colons_kernel, "# COLONS")


# ---- tl.where between pointers, tl.pi32_t --------------------------------------------------
@triton.jit
def pointer_where_kernel(C, A, B, Out, N: tl.constexpr):
    offs = tl.arange(0, N)
    cond = tl.load(C + offs) != 0
    a = tl.load(A + offs).to(tl.pi32_t)          # addresses held as int64, made pointers
    b = tl.load(B + offs).to(tl.pi32_t)
    tl.store(Out + offs, tl.where(cond, a, b))
    ptrs = tl.where(cond, A + offs, B + offs)   # pointer blocks chosen elementwise
    tl.store(Out + N + offs, tl.load(ptrs))


def test_where_selects_pointers_without_promotion():
    n = 16
    cond = RNG.integers(0, 2, n).astype(np.int8)
    a = RNG.integers(0, 1 << 40, n).astype(np.int64)
    b = RNG.integers(0, 1 << 40, n).astype(np.int64)
    out = np.zeros(2 * n, np.int64)
    pointer_where_kernel[(1,)](cond, a, b, out, N=n, interpret=True)
    expected = np.where(cond != 0, a, b)
    np.testing.assert_array_equal(out[:n], expected)
    np.testing.assert_array_equal(out[n:], expected)
    assert tl.pi32_t == tl.pointer_type(tl.int32)


# ---- loops given `step=` by keyword -----------------------------------------------------------
@triton.jit
def keyword_step_kernel(Z, N: tl.constexpr, STEP: tl.constexpr):
    unrolled = 0
    for i in tl.static_range(0, N, step=STEP):
        unrolled += i
    looped = 0
    for j in tl.range(3, N, step=STEP, num_stages=2):
        looped += j
    tl.store(Z, unrolled)
    tl.store(Z + 1, looped)


def test_loop_step_given_by_keyword_is_used():
    z = np.zeros(2, np.int32)
    keyword_step_kernel[(1,)](z, N=100, STEP=7, interpret=True)
    assert list(z) == [sum(range(0, 100, 7)), sum(range(3, 100, 7))]


# ---- tl.xor_sum ------------------------------------------------------------------------------
@triton.jit
def xor_sum_kernel(X, Z, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr,
                   AS_BOOL: tl.constexpr):
    x = tl.load(X + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    if AS_BOOL:
        x = x.to(tl.int1)
    z = tl.xor_sum(x, axis=AXIS)
    tl.store(Z + tl.arange(0, N if AXIS == 0 else M), z)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("as_bool", [False, True])
def test_xor_sum_matches_numpy(axis, as_bool):
    m, n = 8, 16
    x = RNG.integers(0, 2 if as_bool else 1 << 30, (m, n)).astype(np.int32)
    z = np.zeros(n if axis == 0 else m, np.int8 if as_bool else np.int32)
    xor_sum_kernel[(1,)](x, z, M=m, N=n, AXIS=axis, AS_BOOL=as_bool, interpret=True)
    np.testing.assert_array_equal(z, np.bitwise_xor.reduce(x, axis=axis).astype(z.dtype))


def test_xor_sum_refuses_floats():
    @triton.jit
    def k(X):
        tl.store(X, tl.xor_sum(tl.load(X + tl.arange(0, 4)), axis=0))
    with pytest.raises(CompilationError, match="tl.xor_sum needs integer"):
        k[(1,)](np.zeros(4, np.float32), interpret=True)


# ---- tl.randint: a 64-bit offset is split into two 32-bit counter words -----------------------
@triton.jit
def randint_kernel(X, seed, BASE, N: tl.constexpr):
    offset = BASE + tl.arange(0, N).to(X.dtype.element_ty)
    tl.store(X + tl.arange(0, N), tl.randint(seed, offset))


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_randint_is_philox_4x32_of_low_and_high_offset_words(dtype):
    n, seed = 8, 0xFCAFEB0BA
    base = (1 << 33) + 5 if dtype == np.int64 else 5
    x = np.zeros(n, dtype)
    randint_kernel[(1,)](x, seed, base, N=n, interpret=True)
    expected = philox_reference(seed, [base + i for i in range(n)])[:, 0]
    assert list(x.astype(np.uint64 if dtype == np.int64 else np.uint32)) == list(expected)


# ---- driver.active --------------------------------------------------------------------------
def test_driver_is_cuda_on_a_gpu_host_even_when_interpreting(monkeypatch):
    """As in Triton, interpreting does not change the driver: tensors stay on the GPU."""
    from compiler.runtime import active_driver, driver as cuda_driver
    monkeypatch.setenv("TILE_INTERPRET", "1")
    monkeypatch.setattr(cuda_driver, "gpu_available", lambda: True)
    active_driver.active.cache_clear()
    try:
        assert isinstance(active_driver.active(), active_driver.CudaDriver)
    finally:
        active_driver.active.cache_clear()


def test_interpreter_driver_gives_torch_cpu_a_set_stream(monkeypatch):
    torch = pytest.importorskip("torch")
    from compiler.runtime import active_driver, driver as cuda_driver
    monkeypatch.setattr(cuda_driver, "gpu_available", lambda: False)
    active_driver.active.cache_clear()
    try:
        device = active_driver.active().get_active_torch_device()
        module = getattr(torch, device.type)
        before = module.current_stream()
        stream = module.Stream()
        module.set_stream(stream)
        try:
            assert module.current_stream() is stream
        finally:
            module.set_stream(before)
        with pytest.raises(TypeError, match="needs a torch.cpu.Stream"):
            module.set_stream(object())
    finally:
        active_driver.active.cache_clear()


# ---- tl.dot with K < 16: the interpreter has no MMA instruction limits ----------------------
@triton.jit
def small_k_dot_kernel(A, B, C, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    a = tl.load(A + tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :])
    b = tl.load(B + tl.arange(0, K)[:, None] * N + tl.arange(0, N)[None, :])
    c = tl.dot(a, b)  # DOT
    tl.store(C + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], c)


def test_dot_with_a_small_k_runs_in_the_interpreter_and_is_refused_for_the_gpu():
    a = RNG.standard_normal((16, 4)).astype(np.float16)
    b = RNG.standard_normal((4, 32)).astype(np.float16)
    c = np.zeros((16, 32), np.float32)
    small_k_dot_kernel[(1,)](a, b, c, M=16, N=32, K=4, interpret=True)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3,
                               atol=1e-3)
    err = _compile_error(small_k_dot_kernel, {"A": "*fp16", "B": "*fp16", "C": "*fp32"},
                         {"M": 16, "N": 32, "K": 4})
    assert "Input shapes should have M >= 1, N >= 1 and K >= 16" in err.message
    assert err.line == _caret_line(small_k_dot_kernel, "# DOT")


# ---- 8-bit floats in the interpreter ---------------------------------------------------------
FP8 = [("float8_e4m3fn", 448.0), ("float8_e5m2", 57344.0)]


@triton.jit
def fp8_round_trip_kernel(X8, Y32, X32, Y8, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(Y32 + offs, tl.load(X8 + offs).to(tl.float32))      # widen every pattern
    tl.store(Y8 + offs, tl.load(X32 + offs).to(Y8.dtype.element_ty))  # round, saturate


@pytest.mark.parametrize("name,max_finite", FP8)
def test_fp8_widens_every_pattern_and_rounds_to_nearest_even(name, max_finite):
    torch = pytest.importorskip("torch")
    fp8 = getattr(torch, name)
    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(fp8)
    wide = torch.zeros(256, dtype=torch.float32)
    x32 = torch.from_numpy(np.concatenate([
        RNG.standard_normal(200).astype(np.float32) * 50,
        RNG.standard_normal(50).astype(np.float32) * 1e-3,          # subnormals
        codes.float().numpy()[np.isfinite(codes.float().numpy())][:6]]).astype(np.float32))
    x32 = torch.cat([x32, torch.zeros(256 - len(x32))])
    y8 = torch.zeros(256, dtype=fp8)
    fp8_round_trip_kernel[(1,)](codes, wide, x32, y8, N=256, interpret=True)
    np.testing.assert_array_equal(wide.numpy(), codes.float().numpy())    # NaN == NaN here
    inside = x32.abs() <= max_finite
    assert torch.equal(y8.view(torch.uint8)[inside], x32.to(fp8).view(torch.uint8)[inside])


@pytest.mark.parametrize("name,max_finite", FP8)
def test_fp8_narrowing_saturates_like_satfinite(name, max_finite):
    torch = pytest.importorskip("torch")
    fp8 = getattr(torch, name)
    x32 = torch.tensor([1e6, -1e6, float("inf"), float("-inf"), float("nan"), max_finite, 0.0,
                        -0.0], dtype=torch.float32)
    y8 = torch.zeros(8, dtype=fp8)
    fp8_round_trip_kernel[(1,)](torch.zeros(8, dtype=fp8), torch.zeros(8), x32, y8, N=8,
                                interpret=True)
    got = y8.float()
    assert got[:4].tolist() == [max_finite, -max_finite, max_finite, -max_finite]
    assert torch.isnan(got[4]) and got[5] == max_finite
    assert got[6] == 0 and not torch.signbit(got[6]) and torch.signbit(got[7])


@triton.jit
def fp8_dot_kernel(A, B, C, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    a = tl.load(A + tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :])
    b = tl.load(B + tl.arange(0, K)[:, None] * N + tl.arange(0, N)[None, :])
    tl.store(C + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], tl.dot(a, b))


@pytest.mark.parametrize("name", [n for n, _ in FP8])
def test_fp8_dot_accumulates_in_fp32(name):
    torch = pytest.importorskip("torch")
    fp8 = getattr(torch, name)
    a = torch.randn(16, 32).to(fp8)
    b = torch.randn(32, 16).to(fp8)
    c = torch.zeros(16, 16)
    fp8_dot_kernel[(1,)](a, b, c, M=16, N=16, K=32, interpret=True)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-6, atol=1e-6)


# ---- tl.swizzle2d ----------------------------------------------------------------------------
@triton.jit
def swizzle_kernel(Out, SIZE_I: tl.constexpr, SIZE_J: tl.constexpr, SIZE_G: tl.constexpr):
    i = tl.program_id(0)
    j = tl.program_id(1)
    new_i, new_j = tl.swizzle2d(i, j, SIZE_I, SIZE_J, SIZE_G)
    tl.store(Out + new_i * SIZE_J + new_j, i * SIZE_J + j)


@pytest.mark.parametrize("size_i,size_j,size_g", [(5, 7, 3), (8, 4, 2), (3, 5, 4)])
def test_swizzle2d_orders_groups_of_rows_column_major(size_i, size_j, size_g):
    out = np.full((size_i, size_j), -1, np.int32)
    swizzle_kernel[(size_i, size_j)](out, SIZE_I=size_i, SIZE_J=size_j, SIZE_G=size_g,
                                     interpret=True)
    expected = np.zeros_like(out)
    linear = 0
    for first in range(0, size_i, size_g):          # each group of rows, column by column
        rows = min(size_g, size_i - first)
        for col in range(size_j):
            for row in range(first, first + rows):
                expected[row, col] = linear
                linear += 1
    np.testing.assert_array_equal(out, expected)
