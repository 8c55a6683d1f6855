"""The tl.* library functions beyond the zoo's numeric checks (tests/zoo/language.py): their
errors point at the kernel's source with file:line:col and a caret, their IR has the forms
Triton's has (tt.call of the combine function before inlining, tt.fp_to_fp, inline asm), the
random module's edge values, and the triton.language.extra.libdevice alias."""
from __future__ import annotations

import numpy as np
import pytest

import compiler as triton
import compiler.language as tl
from compiler.codegen.toolchain import find_tool
from compiler.frontend import generate_ttir
from compiler.frontend.errors import CompilationError
from compiler.language.extra import libdevice
from compiler.runtime.interpreter import InterpreterError

needs_ptxas = pytest.mark.skipif(find_tool("ptxas") is None, reason="ptxas is not installed")


def _error_of(kernel, *signature, **constexprs) -> str:
    """The message of the CompilationError compiling `kernel` raises."""
    with pytest.raises(CompilationError) as info:
        kernel.warmup(*signature, grid=(1,), **constexprs)
    return str(info.value)


def _points_at(message: str, marker: str) -> None:
    """The error names this file with a line:col and shows the marked source line."""
    assert "test_language_functions.py:" in message, message
    assert marker in message and "^" in message, message


# ---- reduce / scan with combine functions --------------------------------------------------------
@triton.jit
def _add_pair(a, b, c, d):
    return a + c, b + d


@triton.jit
def _one_result(a, b, c, d):
    return a + c


@triton.jit
def reduce_wrong_arity_kernel(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(x_ptr, tl.reduce((x, x), 0, _one_result)[0])  # wrong arity


def test_combine_function_returning_too_few_values_is_a_located_error():
    message = _error_of(reduce_wrong_arity_kernel, "*fp32", BLOCK=32)
    _points_at(message, "# wrong arity")
    assert "returns 1 value(s)" in message and "2 tensor(s)" in message


@triton.jit
def reduce_pair_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    s, n = tl.reduce((x, tl.full((BLOCK,), 1, tl.int32)), 0, _add_pair)
    tl.store(out_ptr, s / n)


def test_reduce_calls_the_combine_function_in_its_region_and_inlines_it():
    ttir = generate_ttir(reduce_pair_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"},
                         {"BLOCK": 64})
    text = str(ttir) if not isinstance(ttir, str) else ttir
    assert "tt.call @_add_pair" in text
    compiled = reduce_pair_kernel.warmup("*fp32", "*fp32", BLOCK=64, grid=(1,))
    assert "tt.call" not in compiled.asm["ttir"]
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(1, np.float32)
    reduce_pair_kernel[(1,)](x, out, BLOCK=64, interpret=True)
    assert out[0] == x.mean()


# ---- random --------------------------------------------------------------------------------------
@triton.jit
def uniform_limits_kernel(x_ptr, out_ptr, n: tl.constexpr):
    offs = tl.arange(0, n)
    tl.store(out_ptr + offs, tl.random.uint_to_uniform_float(tl.load(x_ptr + offs)))


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_uniform_float_of_the_extreme_integers_is_just_below_one(dtype):
    info = np.iinfo(dtype)
    x = np.array([info.min, info.max], dtype)
    out = np.zeros(2, np.float32)
    uniform_limits_kernel[(1,)](x, out, n=2, interpret=True)
    assert out[0] == out[1]
    assert 1.0 - np.finfo(np.float32).eps <= out[0] < 1.0


@triton.jit
def float_seed_kernel(x_ptr, seed):
    offs = tl.arange(0, 16)
    tl.store(x_ptr + offs, tl.rand(seed, offs))


def test_a_float_seed_is_a_compile_error():
    message = _error_of(float_seed_kernel, "*fp32", "fp32")
    assert "seed" in message and "integer" in message


@triton.jit
def const_seed_kernel(x_ptr, n, seed: tl.constexpr):
    offs = tl.arange(0, 128)
    tl.store(x_ptr + offs, tl.randint(seed, offs), mask=offs < n)


def test_constexpr_and_runtime_seeds_agree():
    from tests.zoo.language import randint4x_kernel
    a = np.zeros(128, np.int32)
    const_seed_kernel[(1,)](a, 100, seed=0x0000000FCAFEB0BA, interpret=True)
    b = np.zeros(4 * 128, np.int32)
    randint4x_kernel[(1,)](b, 0x0000000FCAFEB0BA, 100, BLOCK=128, OFFSET_DTYPE=tl.int32,
                           interpret=True)
    np.testing.assert_array_equal(a[:100], b[0:400:4])


# ---- shapes --------------------------------------------------------------------------------------
@triton.jit
def split_bad_kernel(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 8))
    a, b = tl.split(x)  # split 8
    tl.store(x_ptr, a)


def test_split_of_a_dim_other_than_two_is_a_located_error():
    message = _error_of(split_bad_kernel, "*fp32")
    _points_at(message, "# split 8")
    assert "size 2" in message


@triton.jit
def flip_bad_kernel(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 8)[:, None] * 8 + tl.arange(0, 8)[None, :])
    tl.store(x_ptr, tl.sum(tl.sort(x, dim=0)))  # sort dim 0


def test_sort_along_a_leading_dim_is_refused():
    message = _error_of(flip_bad_kernel, "*fp32")
    _points_at(message, "# sort dim 0")
    assert "last dim" in message


@triton.jit
def scalar_join_kernel(out_ptr, a, b):
    tl.store(out_ptr + tl.arange(0, 2), tl.interleave(a, b))


def test_join_of_two_scalars_is_a_pair():
    out = np.zeros(2, np.int32)
    scalar_join_kernel[(1,)](out, 3, 4, interpret=True)
    assert out.tolist() == [3, 4]


@triton.jit
def histogram_kernel(x_ptr, out_ptr, n, N: tl.constexpr, BINS: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + tl.arange(0, BINS), tl.histogram(x, BINS, mask=offs < n))


def test_histogram_ignores_masked_lanes_and_values_outside_the_bins():
    x = np.random.default_rng(3).integers(-20, 150, 1024).astype(np.int32)
    out = np.zeros(128, np.int32)
    histogram_kernel[(1,)](x, out, 1000, N=1024, BINS=128, interpret=True)
    kept = x[:1000]
    np.testing.assert_array_equal(out, np.bincount(kept[(kept >= 0) & (kept < 128)],
                                                   minlength=128))


@needs_ptxas
def test_histogram_and_gather_use_shared_memory_not_one_hot_tensors():
    compiled = histogram_kernel.warmup("*i32", "*i32", "i32", N=1024, BINS=128, grid=(1,))
    ptx = compiled.asm["ptx"]
    assert "atom.shared.add" in ptx and compiled.trace.cubin_info["spill_stores"] == 0
    assert compiled.trace.cubin_info["registers"] < 64


@triton.jit
def gather_oob_kernel(x_ptr, i_ptr, out_ptr):
    offs = tl.arange(0, 16)
    tl.store(out_ptr + offs, tl.gather(tl.load(x_ptr + offs), tl.load(i_ptr + offs), 0))  # gather


def test_a_gather_index_out_of_range_is_an_interpreter_error():
    x = np.zeros(16, np.float32)
    index = np.arange(16, dtype=np.int32)
    index[5] = 16
    with pytest.raises(InterpreterError) as info:
        gather_oob_kernel[(1,)](x, index, x.copy(), interpret=True)
    assert "out of range" in str(info.value) and "# gather" in str(info.value)


# ---- casts, clamp --------------------------------------------------------------------------------
@triton.jit
def rtz_kernel(x_ptr, out_ptr, DST: tl.constexpr, ROUND: tl.constexpr):
    offs = tl.arange(0, 16)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs).to(DST, fp_downcast_rounding=ROUND))


def test_rtz_is_tt_fp_to_fp_and_reaches_ptx():
    compiled = rtz_kernel.warmup("*fp32", "*fp16", DST=tl.float16, ROUND="rtz", grid=(1,))
    assert "tt.fp_to_fp" in compiled.asm["ttir"] and "rounding = \"rtz\"" in compiled.asm["ttir"]
    assert "cvt.rz.f16.f32" in compiled.asm["ptx"]


def test_rounding_on_an_upcast_is_a_located_error():
    message = _error_of(rtz_kernel, "*fp16", "*fp32", DST=tl.float32, ROUND="rtz")
    assert "narrowing" in message and "fp_downcast_rounding" in message


@triton.jit
def clamp_bad_kernel(x_ptr):
    x = tl.load(x_ptr)
    tl.store(x_ptr, tl.clamp(x, 0.0, 1.0, propagate_nan=3))  # bad nan


def test_propagate_nan_takes_the_enum_only():
    _points_at(_error_of(clamp_bad_kernel, "*fp32"), "# bad nan")


@triton.jit
def getattr_kernel(a_ptr, b_ptr, out_ptr, FUNC: tl.constexpr, NAN: tl.constexpr):
    fn = getattr(tl, FUNC)
    tl.store(out_ptr, fn(tl.load(a_ptr), tl.load(b_ptr),
                         propagate_nan=getattr(tl.PropagateNan, NAN)))


@pytest.mark.parametrize("nan, expected", [("NONE", 2.0), ("ALL", "nan")])
def test_getattr_picks_functions_and_enum_members_at_compile_time(nan, expected):
    out = np.zeros(1, np.float32)
    getattr_kernel[(1,)](np.array([np.nan], np.float32), np.array([2.0], np.float32), out,
                         FUNC="maximum", NAN=nan, interpret=True)
    assert np.isnan(out[0]) if expected == "nan" else out[0] == expected


# ---- block pointers ------------------------------------------------------------------------------
@triton.jit
def block_ptr_mask_kernel(x_ptr, n):
    p = tl.make_block_ptr(x_ptr, (n,), (1,), (0,), (16,), (0,))
    tl.store(x_ptr, tl.sum(tl.load(p, mask=tl.arange(0, 16) < n)))  # mask on block ptr


def test_block_pointer_loads_take_boundary_check_not_a_mask():
    message = _error_of(block_ptr_mask_kernel, "*fp32", "i32")
    _points_at(message, "# mask on block ptr")
    assert "boundary_check" in message


@triton.jit
def block_ptr_if_kernel(x_ptr, n):
    p = tl.make_block_ptr(x_ptr, (n,), (1,), (0,), (16,), (0,))
    if n > 4:  # moved in one branch
        p = tl.advance(p, (4,))
    tl.store(p, tl.zeros((16,), tl.float32), boundary_check=(0,))


def test_a_block_pointer_moved_in_one_branch_of_a_runtime_if_is_a_located_error():
    message = _error_of(block_ptr_if_kernel, "*fp32", "i32")
    assert "block_pointer" in message and "tl.advance" in message


@triton.jit
def block_ptr_while_kernel(x_ptr, n, BLOCK: tl.constexpr):
    p = tl.make_block_ptr(x_ptr, (n,), (1,), (0,), (BLOCK,), (0,))
    i = 0
    while i < n:
        tl.store(p, tl.full((BLOCK,), 7, tl.int32), boundary_check=(0,))
        p = tl.advance(p, (BLOCK,))
        i += BLOCK


def test_while_loops_carry_block_pointers():
    x = np.zeros(70, np.int32)
    block_ptr_while_kernel[(1,)](x, 70, BLOCK=16, interpret=True)
    assert (x == 7).all()


@triton.jit
def descriptor_attributes_kernel(x_ptr, n, BLOCK: tl.constexpr):
    desc = tl.make_tensor_descriptor(x_ptr, [n], [1], [BLOCK], padding_option="nan")
    tl.static_assert(desc.block_shape == [BLOCK])
    block = desc.load([0])
    tl.store(x_ptr + n + tl.arange(0, BLOCK), block)


def test_tensor_descriptors_pad_out_of_bounds_reads():
    x = np.zeros(24, np.float32)
    x[:8] = np.arange(8)
    descriptor_attributes_kernel[(1,)](x, 8, BLOCK=16, interpret=True)
    np.testing.assert_array_equal(x[8:16], np.arange(8))
    assert np.isnan(x[16:24]).all()


@triton.jit
def number_methods_kernel(out_ptr):
    acc = 0
    acc = acc.to(tl.int64)
    for i in range(0, 10):
        acc += i
    tl.store(out_ptr, acc)
    one = 1
    tl.store(out_ptr + 1, tl.full([1], one, dtype=one.dtype).to(tl.int64).sum())


def test_numbers_take_tensor_methods_as_values_of_their_literal_dtype():
    out = np.zeros(2, np.int64)
    number_methods_kernel[(1,)](out, interpret=True)
    assert out.tolist() == [45, 1]


@triton.jit
def _accumulate_blocks(acc, a_block, b_block, K, BLOCK_K: tl.constexpr):
    for _ in range(0, K, BLOCK_K):
        acc += tl.dot(tl.load(a_block, boundary_check=(0, 1)),
                      tl.load(b_block, boundary_check=(0, 1)), input_precision="ieee")
        a_block = tl.advance(a_block, (0, BLOCK_K))
        b_block = tl.advance(b_block, (BLOCK_K, 0))
    return acc


@triton.jit
def block_ptr_helper_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    a_block = tl.make_block_ptr(a_ptr, (M, K), (K, 1), (pid_m * BLOCK, 0), (BLOCK, BLOCK), (1, 0))
    b_block = tl.make_block_ptr(b_ptr, (K, N), (N, 1), (0, pid_n * BLOCK), (BLOCK, BLOCK), (1, 0))
    acc = _accumulate_blocks(tl.zeros((BLOCK, BLOCK), tl.float32), a_block, b_block, K, BLOCK)
    c_block = tl.make_block_ptr(c_ptr, (M, N), (N, 1), (pid_m * BLOCK, pid_n * BLOCK),
                                (BLOCK, BLOCK), (1, 0))
    tl.store(c_block, acc, boundary_check=(0, 1))


def test_block_pointers_pass_to_jit_helpers_as_their_fields():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((40, 70)).astype(np.float32)
    b = rng.standard_normal((70, 50)).astype(np.float32)
    c = np.zeros((40, 50), np.float32)
    block_ptr_helper_kernel[(2, 2)](a, b, c, 40, 50, 70, BLOCK=32, interpret=True)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    ttir = generate_ttir(block_ptr_helper_kernel, dict.fromkeys(
        ["a_ptr", "b_ptr", "c_ptr"], "*fp32") | dict.fromkeys(["M", "N", "K"], "i32"),
        {"BLOCK": 32})
    assert "tt.call @_accumulate_blocks" in str(ttir)


# ---- inline asm ----------------------------------------------------------------------------------
@triton.jit
def inline_asm_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    z = tl.inline_asm_elementwise("shf.l.wrap.b32 $0, $1, $2, 8;", "=r,r,r", [x, y],  # asm
                                  dtype=tl.uint32, is_pure=True, pack=1)
    tl.store(out_ptr + offs, z)


def test_inline_asm_is_refused_by_the_interpreter_with_a_located_error():
    x = np.zeros(32, np.uint32)
    with pytest.raises(InterpreterError) as info:
        inline_asm_kernel[(1,)](x, x, x, BLOCK=32, interpret=True)
    message = str(info.value)
    assert "cannot be interpreted" in message and "# asm" in message and "^" in message


@needs_ptxas
def test_inline_asm_reaches_ptxas():
    compiled = inline_asm_kernel.warmup("*u32", "*u32", "*u32", BLOCK=128, grid=(1,))
    assert "tt.elementwise_inline_asm" in compiled.asm["ttgir"]
    assert "shf.l.wrap.b32" in compiled.asm["ptx"]
    assert compiled.asm["cubin"][:4] == b"\x7fELF"


@triton.jit
def inline_asm_packed_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    y = tl.inline_asm_elementwise("and.b32 $0, $1, 0x1F1F1F1F; shl.b32 $0, $0, 3;", "=r,r", [x],
                                  dtype=tl.int8, is_pure=True, pack=4)
    tl.store(y_ptr + tl.arange(0, BLOCK), y)


@needs_ptxas
def test_packed_inline_asm_puts_four_bytes_in_one_register():
    compiled = inline_asm_packed_kernel.warmup("*u8", "*u8", BLOCK=512, grid=(1,))
    llir = compiled.asm["llir"]
    assert "bitcast <4 x i8>" in llir and "and.b32" in compiled.asm["ptx"]
    assert compiled.asm["cubin"][:4] == b"\x7fELF"


# ---- tl.const -----------------------------------------------------------------------------------
@triton.jit
def const_store_kernel(in_ptr: tl.const, out, c_out: tl.const, n):
    offs = tl.arange(0, 16)
    val = tl.load(in_ptr + offs, mask=offs < n)
    tl.store(out + offs, val, mask=offs < n)
    tl.store(c_out + offs, val, mask=offs < n)  # const store


def test_storing_through_a_const_pointer_is_a_located_error():
    message = _error_of(const_store_kernel, "*fp32", "*fp32", "*fp32", "i32")
    _points_at(message, "# const store")
    assert "Cannot store to a constant pointer" in message


@triton.jit
def const_merge_kernel(in_ptr: tl.const, out, n):
    if n > 3:  # merge
        target = in_ptr
    else:
        target = out
    tl.store(out, tl.load(target))


def test_a_const_and_a_writable_pointer_do_not_merge():
    message = _error_of(const_merge_kernel, "*fp32", "*fp32", "i32")
    _points_at(message, "# merge")
    assert "Mismatched type for target" in message


@triton.jit
def const_read_kernel(in_ptr: tl.const, out, n):
    offs = tl.arange(0, 16)
    tl.store(out + offs, tl.load(in_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def test_const_pointers_read_as_usual():
    x = np.arange(16, dtype=np.float32)
    y = np.zeros(16, np.float32)
    const_read_kernel[(1,)](x, y, 10, interpret=True)
    np.testing.assert_array_equal(y[:10], x[:10] * 2)


# ---- libdevice -----------------------------------------------------------------------------------
@triton.jit
def libdevice_unknown_kernel(x_ptr):
    tl.store(x_ptr, libdevice.lgamma(tl.load(x_ptr)))  # lgamma


def test_a_libdevice_function_we_lack_is_a_located_error():
    message = _error_of(libdevice_unknown_kernel, "*fp32")
    _points_at(message, "# lgamma")
    assert "lgamma" in message


def test_libdevice_is_importable_under_tritons_names():
    from compiler import triton_alias
    with triton_alias.installed():
        import importlib
        mod = importlib.import_module("triton.language.extra.libdevice")
        cuda = importlib.import_module("triton.language.extra.cuda.libdevice")
        assert mod.pow is libdevice.pow and cuda.rint is libdevice.rint
