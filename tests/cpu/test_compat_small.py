"""Small Triton behaviours the language tests check (issue 11), each written by us: a
noinline function refuses block arguments on the GPU path but runs in the interpreter."""
from __future__ import annotations

import numpy as np
import pytest

import compiler as triton
import compiler.language as tl
from compiler.frontend import CompilationError




@triton.jit(noinline=True)
def _scale_noinline(v, k):
    return v * k


@triton.jit
def _calls_noinline(ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(ptr + offs)
    tl.store(ptr + offs, _scale_noinline(x, 3.0))


@triton.jit
def _calls_noinline_scalar(ptr):
    tl.store(ptr, _scale_noinline(tl.load(ptr), 3.0))


def test_noinline_with_a_block_argument_is_refused_on_the_gpu_path():
    with pytest.raises(CompilationError) as info:
        _calls_noinline.warmup("*fp32", BLOCK=128, grid=(1,))
    message = str(info.value)
    assert "_scale_noinline is marked noinline, but argument 'v' is a block" in message
    assert "test_compat_small.py:" in message and "^" in message


def test_noinline_with_scalars_compiles_and_blocks_interpret():
    _calls_noinline_scalar.warmup("*fp32", grid=(1,))
    data = np.arange(128, dtype=np.float32)
    _calls_noinline[(1,)](data, BLOCK=128, interpret=True)
    assert (data == 3 * np.arange(128, dtype=np.float32)).all()


@triton.jit
def _cumsum_bf16(X, Z, N: tl.constexpr, PROD: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(X + offs)
    if PROD:
        z = tl.cumprod(x, axis=0)
    else:
        z = tl.cumsum(x, axis=0, reverse=True)
    tl.static_assert(z.dtype == tl.float32)
    tl.store(Z + offs, z)


def test_bf16_scans_accumulate_in_fp32():
    torch = pytest.importorskip("torch")
    values = torch.linspace(-1, 1, 1024).to(torch.bfloat16)
    out = np.zeros(1024, dtype=np.float32)
    _cumsum_bf16[(1,)](values, out, N=1024, PROD=False, interpret=True)
    exact = np.flip(np.cumsum(np.flip(values.float().numpy())))
    assert np.abs(out - exact).max() < 1e-4          # bf16 steps would be off by ~1e-1
    ones = torch.full((1024,), 1.0078125, dtype=torch.bfloat16)       # 1 + 2**-7
    _cumsum_bf16[(1,)](ones, out, N=1024, PROD=True, interpret=True)
    assert abs(out[127] / 1.0078125 ** 128 - 1) < 1e-4


@triton.jit
def _flattened_nest(out, lo, n, m):
    acc = tl.zeros((16,), dtype=tl.int32)
    count = 0
    for i in tl.range(lo, n, 2, flatten=True):
        for j in tl.range(1, m, 3):
            acc += tl.arange(0, 16) * i + j
            count += 1
    tl.store(out + tl.arange(0, 16), acc + count)


def _expected_nest(lo, n, m):
    pairs = [(i, j) for i in range(lo, n, 2) for j in range(1, m, 3)]
    return sum(np.arange(16) * i + j for i, j in pairs) + len(pairs) if pairs else \
        np.zeros(16, dtype=np.int64)


@pytest.mark.parametrize("lo, n, m", [(3, 10, 8), (0, 5, 1), (4, 4, 9), (1, 6, 2)])
def test_flatten_makes_one_loop_with_the_same_iterations(lo, n, m):
    from compiler.runtime.interpreter import interpret
    from compiler.ir import parse_module
    compiled = _flattened_nest.warmup("*i32", "i32", "i32", "i32", grid=(1,))
    assert "tt.flatten" in compiled.asm["ttir"]
    ttgir = compiled.asm["ttgir"]
    assert ttgir.count("scf.for") == 1 and "tt.flatten" not in ttgir
    out = np.zeros(16, dtype=np.int32)
    interpret(parse_module(ttgir), (1,), [out, lo, n, m])
    np.testing.assert_array_equal(out, _expected_nest(lo, n, m))


def test_an_imperfect_nest_is_left_alone():
    @triton.jit
    def imperfect(out, n):
        acc = 0
        for i in tl.range(0, n, flatten=True):
            acc += i
            for j in tl.range(0, n):
                acc += j
        tl.store(out, acc)
    compiled = imperfect.warmup("*i32", "i32", grid=(1,))
    assert compiled.asm["ttgir"].count("scf.for") == 2


@triton.jit
def _store_rank0_full(out, val, dtype: tl.constexpr):
    a = tl.full([], val, dtype)
    tl.store(out + tl.arange(0, 128), a)


@pytest.mark.parametrize("dtype, np_dtype", [(tl.int32, np.int32), (tl.float16, np.float16)])
def test_a_rank0_full_stored_through_a_block_pointer_fills_it(dtype, np_dtype):
    """Triton's test_full stores `tl.full([], val)` through 128 pointers: a scalar broadcast,
    not the rank mismatch that a [1, 32] value through a [32, 32, 32] pointer is."""
    _store_rank0_full.warmup("*i32" if np_dtype is np.int32 else "*fp16", "i32", dtype=dtype,
                             grid=(1,))
    out = np.zeros(128, dtype=np_dtype)
    _store_rank0_full[(1,)](out, 7, dtype=dtype, interpret=True)
    assert (out == 7).all()
