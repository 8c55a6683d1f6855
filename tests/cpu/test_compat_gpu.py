"""The GPU path behaves as Triton's does where Triton's own language tests look (issue 11):
what the PTX and LLVM IR of a compiled kernel contain (atomic orderings, cache hints), the
launch options and argument kinds the compiled path accepts, and the errors it raises. Each
test compiles on the CPU (through ptxas when it is installed); nothing here launches."""
from __future__ import annotations

import numpy as np
import pytest

import compiler as triton
import compiler.language as tl
from compiler.codegen.toolchain import find_tool
from compiler.frontend.errors import CompilationError

needs_ptxas = pytest.mark.skipif(find_tool("ptxas") is None, reason="ptxas is not installed")


def _error_of(kernel, *signature, **constexprs) -> str:
    """The message of the CompilationError that compiling `kernel` raises."""
    with pytest.raises(CompilationError) as info:
        kernel.warmup(*signature, grid=(1,), **constexprs)
    return str(info.value)


# ---- atomics: the ordering sits right after `.global`, as in Triton's PTX -----------------------
@triton.jit
def _cas_kernel(lock, SEM: tl.constexpr):
    tl.atomic_cas(lock, 0, 1, SEM)


@needs_ptxas
@pytest.mark.parametrize("sem, text", [(None, "acq_rel"), ("acquire", "acquire"),
                                       ("release", "release"), ("relaxed", "relaxed")])
def test_atomic_cas_names_its_ordering_after_global(sem, text):
    ptx = _cas_kernel.warmup("*i32", SEM=sem, grid=(1,)).asm["ptx"]
    assert f"atom.global.{text}.gpu.cas.b32" in ptx


@triton.jit
def _rmw_kernel(x, SEM: tl.constexpr):
    tl.atomic_add(x, 1.0, sem=SEM)
    tl.atomic_max(x + 1, 2.0, None, SEM, "cta")


@needs_ptxas
def test_atomic_rmw_names_its_scope_then_its_ordering():
    ptx = _rmw_kernel.warmup("*fp32", SEM="release", grid=(1,)).asm["ptx"]
    assert "atom.global.gpu.release.add.f32" in ptx
    assert "atom.global.cta.release.max.s32" in ptx     # float max: the signed-int bit trick


def test_an_unknown_memory_ordering_is_a_located_error():
    message = _error_of(_cas_kernel, "*i32", SEM="seq_cst")
    assert "Memory semantic seq_cst not supported" in message and "^" in message


# ---- cache modifiers and eviction policies -------------------------------------------------------
@triton.jit
def _copy_kernel(dst, src, LOAD: tl.constexpr, STORE: tl.constexpr, EVICT: tl.constexpr):
    offsets = tl.arange(0, 128)
    x = tl.load(src + offsets, cache_modifier=LOAD, eviction_policy=EVICT)
    tl.store(dst + offsets, x, cache_modifier=STORE)


@needs_ptxas
@pytest.mark.parametrize("load, store, evict, expected", [
    (".ca", "", "", ["ld.global.ca.v4.b32"]),
    (".cg", ".cs", "", ["ld.global.cg", "st.global.cs"]),
    ("", ".wt", "evict_last", ["ld.global.L1::evict_last", "st.global.wt"]),
    ("", "", "", ["ld.global.v4.b32", "st.global.v4.b32"]),
])
def test_cache_hints_become_ptx_qualifiers(load, store, evict, expected):
    compiled = _copy_kernel.warmup("*fp32:16", "*fp32:16", LOAD=load, STORE=store, EVICT=evict, num_warps=1,
                                   grid=(1,))
    for text in expected:
        assert text in compiled.asm["ptx"], text
    if load:
        assert f'cache = "{load[1:]}"' in compiled.asm["ttir"]
    else:
        assert "cache =" not in compiled.asm["ttir"].split("tt.store")[0]


def test_unknown_cache_modifier_is_a_located_error():
    message = _error_of(_copy_kernel, "*fp32", "*fp32", LOAD=".wb", STORE="", EVICT="")
    assert "Cache modifier .wb not supported" in message
    assert "test_compat_gpu.py:" in message and "^" in message


def test_cache_modifier_and_eviction_policy_do_not_combine():
    message = _error_of(_copy_kernel, "*fp32", "*fp32", LOAD=".ca", STORE="", EVICT="evict_first")
    assert "cannot be combined" in message


# ---- arch= and TRITON_OVERRIDE_ARCH ---------------------------------------------------------------
@triton.jit
def _scale_kernel(data, out):
    offsets = tl.arange(0, 128)
    tl.store(out + offsets, tl.load(data + offsets) * 1.5 + 1.0)


@pytest.mark.parametrize("arch, cc", [("sm80", "80"), ("sm_90", "90"), (80, "80")])
def test_arch_is_a_launch_option_written_as_triton_writes_it(arch, cc):
    compiled = _scale_kernel.warmup("*fp32", "*fp32", grid=(1,), arch=arch)
    assert f'ttg.target = "cuda:{cc}"' in compiled.asm["ttgir"]
    assert f".target sm_{cc}" in compiled.asm["ptx"]


def test_override_arch_environment_variable_is_read_when_compiling(monkeypatch):
    from compiler.stage_state import CompileOptions
    monkeypatch.setenv("TRITON_OVERRIDE_ARCH", "sm80")
    assert CompileOptions.from_env({}).arch == 80
    assert CompileOptions.from_env({"arch": 90}).arch == 90      # an explicit arch wins
    monkeypatch.setenv("TILE_OVERRIDE_ARCH", "sm86")
    assert CompileOptions.from_env({}).arch == 86
    assert triton.knobs.runtime.override_arch == "sm86"


def test_override_arch_wins_over_the_present_gpu_in_a_launch(monkeypatch):
    """The compile driver's default (the current target, sm_90 here) must not hide the
    variable: Triton reads it before the target's own arch."""
    @triton.jit
    def fresh(data, out):
        offsets = tl.arange(0, 128)
        tl.store(out + offsets, tl.load(data + offsets) + 1.0)
    monkeypatch.setenv("TRITON_OVERRIDE_ARCH", "sm80")
    compiled = fresh.warmup("*fp32", "*fp32", grid=(1,))
    assert 'ttg.target = "cuda:80"' in compiled.asm["ttgir"]
    monkeypatch.delenv("TRITON_OVERRIDE_ARCH")
    assert 'ttg.target = "cuda:90"' in fresh.warmup("*fp32", "*fp32", grid=(1,), num_warps=2
                                                    ).asm["ttgir"]


@needs_ptxas
def test_an_arch_this_ptxas_cannot_assemble_leaves_the_ptx_for_the_driver():
    compiled = _scale_kernel.warmup("*fp32", "*fp32", grid=(1,), arch="sm70")
    assert ".target sm_70" in compiled.asm["ptx"]
    if "cubin" not in compiled.asm:         # CUDA 13's ptxas has no sm_70
        assert any("cannot assemble for sm_70" in note for note in compiled.trace.notes)


def test_cubins_run_on_their_major_version_only():
    from compiler.runtime.launcher import cubin_runs_on
    assert cubin_runs_on(90, 90) and cubin_runs_on(80, 86)
    assert not cubin_runs_on(86, 80) and not cubin_runs_on(80, 90) and not cubin_runs_on(70, 90)


# ---- int arguments: names, unsigned kinds, overflow ----------------------------------------------
def _name_by_specialization(specialization):
    kind = specialization.signature["value"]
    ones = "_".join(k for k, v in specialization.constants.items() if v == 1)
    return f"kernel_{kind}_{ones}"


@triton.jit(repr=_name_by_specialization)
def _named_kernel(value, is_one, x):
    pass


@pytest.mark.parametrize("value, kind", [(2 ** 31 - 1, "i32"), (2 ** 31, "i64"),
                                         (2 ** 63, "u64"), (2 ** 64 - 1, "u64")])
def test_repr_names_the_kernel_and_u64_ints_launch_unsigned(value, kind):
    import numpy as np
    compiled = _named_kernel.warmup(value, 1, np.zeros(1, np.float32), grid=(1,))
    assert compiled.name == f"kernel_{kind}_is_one"
    assert f"@kernel_{kind}_is_one(" in compiled.asm["ttir"]
    assert compiled.metadata.arg_kinds[0] == kind     # packed as the signature declares


@pytest.mark.parametrize("value", [2 ** 64, -2 ** 63 - 1])
def test_an_int_beyond_64_bits_is_an_overflow_error(value):
    import numpy as np
    with pytest.raises(OverflowError, match="outside the 64-bit range"):
        _named_kernel.warmup(value, 1, np.zeros(1, np.float32), grid=(1,))


def test_host_memory_is_a_value_error_and_pinned_memory_is_reachable():
    from compiler.runtime.launcher import device_pointer, torch_device_reachable

    class HostTensor:                           # torch's attributes, no torch needed
        __module__ = "torch"
        is_cuda = False

        def __init__(self, pinned):
            self.pinned = pinned

        def is_pinned(self):
            return self.pinned

        def data_ptr(self):
            return 4096
    assert torch_device_reachable(HostTensor(True))
    assert device_pointer(HostTensor(True)) == 4096
    with pytest.raises(ValueError, match="host array"):
        device_pointer(HostTensor(False))


def test_num_warps_not_a_power_of_2_is_the_assertion_triton_raises():
    with pytest.raises(AssertionError, match="must be a power of 2"):
        _scale_kernel.warmup("*fp32", "*fp32", grid=(1,), num_warps=3)


@triton.jit
def _overflowing_kernel():
    huge: tl.constexpr = 0xFFFFFFFFFFFFFF
    x = tl.full((), 32, dtype=tl.int32)
    y = x + huge  # noqa: F841


def test_a_scalar_out_of_range_of_the_tensor_is_a_located_triton_error():
    with pytest.raises(triton.TritonError, match="out of range") as info:
        _overflowing_kernel.warmup(grid=(1,))
    assert "test_compat_gpu.py:" in str(info.value) and "^" in str(info.value)


# ---- tl.extra.cuda --------------------------------------------------------------------------------
@triton.jit
def _timer_kernel(out1, out2):
    start = tl.extra.cuda.globaltimer()
    offsets = tl.arange(0, 128)
    tl.store(out1 + offsets, tl.load(out1 + offsets) + 1)
    end = tl.extra.cuda.globaltimer()
    tl.store(out2, end - start)
    tl.store(out2 + 1, tl.extra.cuda.smid().to(tl.int64))


@triton.jit
def _threads_kernel(out):
    n: tl.constexpr = tl.extra.cuda.num_threads()
    tl.store(out + tl.arange(0, n), tl.extra.cuda.num_warps())


@needs_ptxas
def test_globaltimer_reads_are_never_merged_and_smid_is_read():
    ptx = _timer_kernel.warmup("*i64", "*i64", grid=(1,)).asm["ptx"]
    assert ptx.count("%globaltimer") == 2 and ptx.count("%smid") == 1


def test_num_threads_is_a_constexpr_of_the_kernels_warps():
    ttir = _threads_kernel.warmup("*i32", grid=(1,), num_warps=8).asm["ttir"]
    assert "end = 256 : i32" in ttir and "arith.constant dense<8>" in ttir


# ---- tl.swizzle2d, tl.randint of 64-bit offsets, None arguments ------------------------------------
@triton.jit
def _swizzle_kernel(output, size_i, size_j, size_g):
    for i in tl.range(0, size_i, 1):
        for j in tl.range(0, size_j, 1):
            new_i, new_j = tl.swizzle2d(i, j, size_i, size_j, size_g)
            tl.store(output + new_i * size_j + new_j, i * size_j + j)


def test_swizzle2d_walks_bands_of_rows_column_by_column():
    import numpy as np
    out = np.zeros((5, 7), np.int32)
    _swizzle_kernel[(1,)](out, 5, 7, 3, interpret=True)
    bands = np.arange(21).reshape(7, 3).T            # rows 0-2: 3 rows, column by column
    last = np.arange(21, 35).reshape(7, 2).T         # rows 3-4: the short last band
    np.testing.assert_array_equal(out, np.vstack([bands, last]))


@triton.jit
def _randint_kernel(out, seed, N: tl.constexpr, WIDE: tl.constexpr):
    offsets = tl.arange(0, N)
    if WIDE:
        offsets = offsets.to(tl.int64) + 2 ** 33
    tl.store(out + tl.arange(0, N), tl.randint(seed, offsets).to(tl.int64))


def test_randint_of_64_bit_offsets_gives_philox_4x32_numbers():
    import numpy as np
    from tests.zoo.language import philox_reference
    out = np.zeros(16, np.int64)
    _randint_kernel[(1,)](out, 42, N=16, WIDE=True, interpret=True)
    expected = philox_reference(42, [2 ** 33 + k for k in range(16)])
    np.testing.assert_array_equal(out, expected[:, 0].astype(np.int64))
    assert out.max() < 2 ** 32


# ---- tl.assume, fp8 abs, compile-time types, literal dtypes --------------------------------------
@triton.jit
def _assume_kernel(out_ptr, N: tl.constexpr, BLOCK_N: tl.constexpr):
    size = N - tl.program_id(0) * BLOCK_N
    tl.assume(size >= BLOCK_N)
    tl.store(out_ptr + tl.program_id(0), size)


def test_assume_reaches_llvm_and_is_a_no_op_in_the_interpreter():
    import numpy as np
    compiled = _assume_kernel.warmup("*i32", N=1024, BLOCK_N=128, grid=(8,))
    assert "llvm.intr.assume" in compiled.asm["ttir"] and "llvm.assume" in compiled.asm["llir"]
    out = np.zeros(8, np.int32)
    _assume_kernel[(8,)](out, N=1024, BLOCK_N=128, interpret=True)
    np.testing.assert_array_equal(out, 1024 - 128 * np.arange(8))


@triton.jit
def _abs_kernel(X, Z, SIZE: tl.constexpr):
    offsets = tl.arange(0, SIZE)
    tl.store(Z + offsets, tl.abs(tl.load(X + offsets)))


@needs_ptxas
@pytest.mark.parametrize("fp8", ["*fp8e5", "*fp8e4nv"])
def test_abs_of_fp8_clears_the_sign_bit(fp8):
    compiled = _abs_kernel.warmup(fp8, fp8, SIZE=256, grid=(1,))
    assert "arith.andi" in compiled.asm["ttir"] and "math.absf" not in compiled.asm["ttir"]


@triton.jit
def _typed_store_kernel(out_ptr, WIDE: tl.constexpr):
    if WIDE:
        value = 1e+50
    else:
        value = 1e+10
    tl.store(out_ptr.to(tl.pointer_type(value.dtype)), value)


@pytest.mark.parametrize("wide, kind", [(True, "f64"), (False, "f32")])
def test_pointer_type_is_callable_and_huge_float_literals_are_fp64(wide, kind):
    ttir = _typed_store_kernel.warmup("*fp32", WIDE=wide, grid=(1,)).asm["ttir"]
    assert f": {kind} loc" in ttir.split("arith.constant", 1)[1].splitlines()[0] + " loc"


# ---- loop hints, None arguments, messages Triton's tests match -----------------------------------
@triton.jit
def _hinted_loop_kernel(x, ub):
    for i in tl.range(0, ub, num_stages=None, loop_unroll_factor=None):
        tl.store(x + i, tl.sum(tl.full((32, 32), 1, dtype=tl.int1), dtype=None))


def test_none_loop_hints_add_no_attribute_and_none_dtype_is_the_default():
    ttir = _hinted_loop_kernel.warmup("*i32", "i32", grid=(1,)).asm["ttir"]
    assert "num_stages" not in ttir and "loop_unroll_factor" not in ttir


@triton.jit
def _slice_kernel(x):
    x[10:]


@triton.jit
def _float_bitand_kernel(x, y):
    tl.store(x, tl.load(x) & tl.load(y))


def test_messages_match_the_ones_tritons_tests_expect():
    assert "unsupported tensor index" in _error_of(_slice_kernel, "*fp32")
    assert "invalid operands of type uint32 and bf16" in _error_of(_float_bitand_kernel,
                                                                   "*u32", "*bf16")


# ---- fp fusion default, fp8 split accumulation ---------------------------------------------------
@triton.jit
def _mul_add_kernel(data):
    offsets = tl.arange(0, 128)
    tl.store(data + offsets, tl.load(data + offsets) * 1.5 + 1.0)


@needs_ptxas
@pytest.mark.parametrize("value, fused", [("0", False), ("1", True)])
def test_default_fp_fusion_comes_from_the_environment(monkeypatch, value, fused):
    import re
    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", value)
    # (num_warps differs so that the kernel's in-memory cache, keyed by the launch, misses)
    ptx = _mul_add_kernel.warmup("*fp32", grid=(1,), num_warps=1 + int(fused)).asm["ptx"]
    assert (re.search(r"(mad|fma)\.r[nzmp]\.(ftz\.)?f32", ptx) is not None) == fused


@triton.jit
def _fp8_matmul_kernel(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr, IMPRECISE: tl.constexpr):
    rows = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + rows[:, None] * BLOCK + rows[None, :])
    b = tl.load(b_ptr + rows[:, None] * BLOCK + rows[None, :])
    acc = tl.dot(a, b, acc=tl.zeros((BLOCK, BLOCK), tl.float32), max_num_imprecise_acc=IMPRECISE)
    tl.store(c_ptr + rows[:, None] * BLOCK + rows[None, :], acc)


def test_fp8_split_accumulation_adds_each_partial_sum_in_f32():
    """Hopper's fp8 wgmma accumulates in reduced precision: every IMPRECISE K elements the
    partial sum is added to the f32 accumulator, with fadds PTX prints as `add.f32` (what
    test_dot_max_num_imprecise_acc counts: accumulator registers times K / IMPRECISE)."""
    compiled = _fp8_matmul_kernel.warmup("*fp8e5:16", "*fp8e5:16", "*fp32:16", BLOCK=64,
                                         IMPRECISE=32, grid=(1,), num_warps=8)
    assert compiled.asm["ptx"].count("add.f32") == 64 * 64 // 256 * (64 // 32)


# ---- tl.static_range's keyword step --------------------------------------------------------------
@triton.jit
def _static_sum_kernel(z, N: tl.constexpr, STEP: tl.constexpr):
    acc = 0
    for i in tl.static_range(0, N, step=STEP):
        acc += i
    for i in tl.range(0, N, step=STEP):
        acc += i
    tl.store(z, acc)


def test_range_bounds_may_be_given_by_keyword():
    import numpy as np
    out = np.zeros(1, np.int32)
    _static_sum_kernel[(1,)](out, 100, 7, interpret=True)
    assert out[0] == 2 * sum(range(0, 100, 7))


@triton.jit
def _f16_dot_kernel(a, b, c, N: tl.constexpr):
    rows = tl.arange(0, N)
    x = tl.load(a + rows[:, None] * N + rows[None, :])
    y = tl.load(b + rows[:, None] * N + rows[None, :])
    tl.store(c + rows[:, None] * N + rows[None, :], tl.dot(x, y, out_dtype=tl.float16))


def test_an_f16_accumulator_on_the_fma_path_is_carried_in_f32():
    """An f16-out dot left on FMA (here: a ttgir pipeline without accelerate-matmul; such dots
    otherwise take mma.sync's f16 form): rounding every fma to f16 lost accuracy K times over;
    the loop keeps f32 and rounds once, as a tensor core would."""
    from tests.cpu.mma_cases import AFTER_MMA, BEFORE_MMA, compile_jit
    args = [np.zeros(32 * 32, np.float16) for _ in range(3)]
    compiled, _ = compile_jit(_f16_dot_kernel, args, {"N": 32}, {"num_warps": 1},
                              f"{BEFORE_MMA},{AFTER_MMA}", stop_after=None)
    llir = compiled.asm["llir"]
    assert "llvm.fmuladd.f32" in llir and "fmuladd.f16" not in llir
    assert "fptrunc" in llir


@triton.jit
def _pick(a, b, choose_b):
    if choose_b:
        return b
    else:
        return a


@triton.jit
def _const_pick_kernel(in_ptr: tl.const, out, choose):
    tl.store(_pick(out, in_ptr, choose), 1.0)


def test_returns_of_different_types_say_inconsistent_return_types():
    message = _error_of(_const_pick_kernel, "*fp32", "*fp32", "i32")
    assert "Inconsistent return types" in message and "^" in message
