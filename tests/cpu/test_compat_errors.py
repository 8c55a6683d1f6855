"""Errors Triton specifies in its own words (its test_compile_errors.py compares the sentences),
raised here with our file:line:col and caret: arange and block shapes that are not powers of
two, the tensor-core minimum K of a dot, max_num_imprecise_acc above K, 8-bit float formats the
target lacks, tl.where's deprecation warning for a non-boolean condition, and inconsistent
return types pointing at the `return` that disagrees."""
from __future__ import annotations

import warnings

import pytest

import compiler as triton
import compiler.language as tl
from compiler.frontend.errors import CompilationError


def _error(kernel, *signature, **constexprs) -> CompilationError:
    with pytest.raises(CompilationError) as info:
        kernel.warmup(*signature, grid=(1,), **constexprs)
    return info.value


def _line_of(kernel, marker: str) -> int:
    """The file line of the kernel's source line containing `marker`."""
    lines = kernel.src.splitlines()
    return kernel.line + next(i for i, text in enumerate(lines) if marker in text)


@triton.jit
def _arange_kernel(LO: tl.constexpr, HI: tl.constexpr):
    tl.arange(LO, HI)  # ERR


@pytest.mark.parametrize("lo, hi, sentence", [
    (2, 7, "arange's range must be a power of 2"),
    (8, 8, "arange's end argument must be greater than the start argument")])
def test_arange_bounds_use_tritons_sentences(lo, hi, sentence):
    err = _error(_arange_kernel, LO=lo, HI=hi)
    assert err.message == sentence and err.line == _line_of(_arange_kernel, "# ERR")


@triton.jit
def _full_kernel(N: tl.constexpr):
    tl.full((16, N), 0, dtype=tl.int64)  # ERR


def test_a_block_dim_that_is_not_a_power_of_two_is_refused():
    err = _error(_full_kernel, N=33)
    assert err.message == "Shape element 1 must be a power of 2" and "^" in str(err)


@triton.jit
def _dot_kernel(M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, dtype: tl.constexpr):
    a = tl.full((M, K), 0.0, dtype)
    b = tl.full((K, N), 0.0, dtype)
    tl.dot(a, b)  # ERR


@pytest.mark.parametrize("M, N, K, dtype, need", [
    (8, 8, 8, tl.float16, "M >= 1, N >= 1 and K >= 16"),
    (16, 16, 16, tl.float8e5, "M >= 1, N >= 1 and K >= 32"),
    (16, 16, 16, tl.int8, "M >= 1, N >= 1 and K >= 32")])
def test_dots_below_the_tensor_core_minimum_are_refused_for_the_gpu(M, N, K, dtype, need):
    """Triton 3.6's CUDA minimum (its min_dot_size): only K; small M and N are padded."""
    err = _error(_dot_kernel, M=M, N=N, K=K, dtype=dtype)
    assert err.message.startswith(f"Input shapes should have {need}")
    assert err.line == _line_of(_dot_kernel, "# ERR")


@triton.jit
def _imprecise_kernel():
    a = tl.full((64, 64), 0.0, tl.float8e5)
    b = tl.full((64, 64), 0.0, tl.float8e5)
    tl.dot(a, b, max_num_imprecise_acc=128)


def test_max_num_imprecise_acc_above_k_is_refused_in_tritons_words():
    assert _error(_imprecise_kernel).message == "max_num_imprecise_acc (128) must be <= K (64)"


@triton.jit
def _fp8_kernel(dtype: tl.constexpr):
    tl.full((256,), 0.0, dtype)


@pytest.mark.parametrize("dtype", [tl.float8e5b16, tl.float8e4b8])
def test_fp8_formats_the_target_lacks_are_not_supported_in_this_architecture(dtype):
    message = _error(_fp8_kernel, dtype=dtype).message
    assert f"type {dtype.name} " in message and "not supported in this architecture" in message


@triton.jit
def _where_kernel(X):
    a = tl.full((64,), 0, tl.uint32)
    tl.store(X + tl.arange(0, 64), tl.where(a, 1.0, 2.0))


def test_where_with_a_non_boolean_condition_warns_as_triton_does():
    with pytest.warns(UserWarning, match="tl.where with a non-boolean condition is deprecated"):
        _where_kernel.warmup("*fp32", grid=(1,))


@triton.jit
def _where_bool_kernel(X):
    a = tl.arange(0, 64) < 3
    tl.store(X + tl.arange(0, 64), tl.where(a, 1.0, 2.0))


def test_where_with_a_boolean_condition_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _where_bool_kernel.warmup("*fp32", grid=(1,))


@triton.jit
def _two_shapes(N):
    if N == 0:
        return tl.arange(0, 4)
    else:
        return tl.arange(0, 8)  # SECOND


@triton.jit
def _calls_two_shapes(N):
    _two_shapes(N)


def test_inconsistent_return_types_point_at_the_return_that_disagrees():
    err = _error(_calls_two_shapes, "i32")
    inner = err.__cause__ if isinstance(err.__cause__, CompilationError) else err
    assert "Inconsistent return types" in str(err)
    assert f":{_line_of(_two_shapes, '# SECOND')}:8: error: Inconsistent" in str(inner)
    assert "at 5:8:" in str(inner)
