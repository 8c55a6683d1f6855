"""The `triton` module alias: Triton kernels (the reference kernels.py) run unmodified."""
from __future__ import annotations

import importlib.util
import re
import sys
import types

import numpy as np
import pytest

import compiler
from compiler import triton_alias

TORCH_IMPORT = "import torch, triton, triton.language as tl"


@pytest.fixture
def alias():
    triton_alias.install()
    yield
    triton_alias.uninstall()


@pytest.fixture
def kernels(reference_dir, tmp_path, alias):
    """The reference kernels.py, loaded through the alias with only its torch import removed
    and its torch-using runner functions left out; the kernel sources are untouched."""
    text = (reference_dir / "kernels.py").read_text()
    assert TORCH_IMPORT in text
    text = text.replace(TORCH_IMPORT, "import triton, triton.language as tl")
    text = text[:text.index("\ndef run_add")]
    path = tmp_path / "reference_kernels.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("reference_kernels", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_imports_resolve_to_ours(alias):
    import triton
    import triton.language as tl
    from triton.language import math as tl_math
    from triton.testing import do_bench

    assert triton is compiler and tl is compiler.language
    assert tl_math is compiler.language.math and triton.language.math is tl_math
    assert do_bench is compiler.testing.do_bench
    assert triton.jit is compiler.jit and triton.cdiv(10, 4) == 3
    assert triton.next_power_of_2(33) == 64 and triton.Config is compiler.Config
    assert tl.constexpr is compiler.constexpr


def test_triton_backends_lists_the_nvidia_backend(alias):
    """`triton.backends` exists (torch's has_triton() asks `"cpu" in triton.backends.backends`;
    without the module, torch.profiler failed under the alias with ModuleNotFoundError)."""
    import triton.backends
    from triton.backends.compiler import BaseBackend, GPUTarget

    from compiler.runtime.active_driver import CudaDriver
    assert set(triton.backends.backends) == {"nvidia"} and "cpu" not in triton.backends.backends
    nvidia = triton.backends.backends["nvidia"]
    assert issubclass(nvidia.compiler, BaseBackend) and nvidia.driver is CudaDriver
    assert GPUTarget("cuda", 90, 32) == compiler.compiler.GPUTarget("cuda", 90, 32)


def test_triton_compiler_compiler_is_the_compile_module(alias):
    """`triton.compiler.compiler` (where Triton defines compile, ASTSource, triton_key) imports
    under the alias: torch asks it for `triton_key` (tutorial 06 under torch.profiler failed with
    "'triton.compiler' is not a package")."""
    from triton.compiler.compiler import ASTSource, CompiledKernel, compile, triton_key

    assert compile is compiler.compiler.compile and CompiledKernel is compiler.compiler.CompiledKernel
    assert ASTSource is compiler.compiler.ASTSource
    key = triton_key()
    assert key.startswith("3.6.0-tile-explore-") and key == triton_key() and len(key) > 100


def test_uninstall_restores_previous_modules():
    previous = types.ModuleType("triton")
    sys.modules["triton"] = previous
    try:
        with triton_alias.installed():
            assert sys.modules["triton"] is compiler
            with triton_alias.installed():               # nested: stays installed
                pass
            assert triton_alias.is_installed()
        assert sys.modules["triton"] is previous
        assert "triton.language" not in sys.modules
    finally:
        sys.modules.pop("triton", None)
    assert not triton_alias.is_installed()


def test_reference_kernels_interpreted(kernels):
    rng = np.random.default_rng(7)
    n = 1000
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.empty_like(x)
    kernels.add_kernel[(compiler.cdiv(n, 256),)](x, y, out, n, BLOCK=256, interpret=True)
    np.testing.assert_array_equal(out, x + y)

    X = rng.standard_normal((5, 100)).astype(np.float32)
    Y = np.empty_like(X)
    kernels.softmax_kernel[(5,)](Y, X, X.strides[0] // 4, Y.strides[0] // 4, 100, BLOCK=128,
                                 interpret=True)
    expected = np.exp(X - X.max(axis=1, keepdims=True))
    np.testing.assert_allclose(Y, expected / expected.sum(axis=1, keepdims=True), rtol=1e-5)

    M, N = 3, 70
    X = rng.standard_normal((M, N)).astype(np.float16)
    W, B = rng.random(N).astype(np.float16), rng.random(N).astype(np.float16)
    Y = np.empty_like(X)
    kernels.layernorm_kernel[(M,)](X, Y, W, B, N, N, 1e-5, BLOCK=128, interpret=True)
    xf = X.astype(np.float32)
    mean = xf.mean(axis=1, keepdims=True)
    ref = (xf - mean) / np.sqrt(((xf - mean) ** 2).mean(axis=1, keepdims=True) + 1e-5) * W + B
    np.testing.assert_allclose(Y.astype(np.float32), ref, atol=2e-2, rtol=1e-2)

    M, N, K = 40, 36, 50
    A = rng.standard_normal((M, K)).astype(np.float16)
    Bm = rng.standard_normal((K, N)).astype(np.float16)
    C = np.empty((M, N), dtype=np.float16)
    grid = lambda meta: (compiler.cdiv(M, meta["BM"]) * compiler.cdiv(N, meta["BN"]),)  # noqa
    kernels.matmul_kernel[grid](A, Bm, C, M, N, K, K, 1, N, 1, N, 1, BM=16, BN=16, BK=16,
                                GROUP_M=2, interpret=True)
    ref = A.astype(np.float32) @ Bm.astype(np.float32)
    np.testing.assert_allclose(C.astype(np.float32), ref, atol=5e-2, rtol=1e-2)


WARMUPS = {
    "add_kernel": (("*fp32:16", "*fp32:16", "*fp32:16", "i32:16"), {"BLOCK": 1024}),
    "softmax_kernel": (("*fp32:16", "*fp32:16", "i32:16", "i32:16", "i32:16"),
                       {"BLOCK": 1024, "num_warps": 8}),
    "layernorm_kernel": (("*fp16:16",) * 4 + ("i32:16", "i32:16", "fp32"),
                         {"BLOCK": 1024, "num_warps": 8}),
    "matmul_kernel": (("*fp16:16",) * 3 + ("i32:16",) * 3 + ("i32:16", 1) * 3,
                      {"BM": 128, "BN": 128, "BK": 64, "GROUP_M": 8, "num_stages": 4}),
}
#: Smaller tiles for the full-pipeline warmup (the 128x128x64 matmul takes minutes to lower).
SMALL_BLOCKS = {"matmul_kernel": {"BM": 32, "BN": 32, "BK": 32}}
REFERENCE_FILES = {"add_kernel": "add", "softmax_kernel": "softmax",
                   "layernorm_kernel": "layernorm", "matmul_kernel": "matmul"}


def _func_signature(text: str) -> str:
    """The `tt.func public` line without its locations."""
    line = next(line for line in text.splitlines() if "tt.func public" in line)
    return re.sub(r" loc\((#loc\d*|\"\w+\"\(#loc\d*\))\)", "", line).strip()


@pytest.mark.parametrize("name", sorted(WARMUPS))
def test_specialization_matches_triton(kernels, reference_dir, name):
    """Specializing like the reference runs did (16-divisible sizes, unit strides) gives the
    kernel signature Triton 3.6 produced: the same parameters, types and tt.divisibility."""
    from compiler.ir.printer import print_module

    args, kwargs = WARMUPS[name]
    kernel = getattr(kernels, name)
    bound, key, _, _ = kernel.bind(*args, **kwargs)
    module = kernel.source_for(kernel._specialization(key, bound)).make_ttir()
    reference = (reference_dir / f"{REFERENCE_FILES[name]}.ttir").read_text()
    assert _func_signature(print_module(module)) == _func_signature(reference)


@pytest.mark.parametrize("name", sorted(WARMUPS))
def test_reference_kernels_warmup_with_signature_strings(kernels, name):
    args, kwargs = WARMUPS[name]
    kwargs = {**kwargs, **SMALL_BLOCKS.get(name, {})}
    compiled = getattr(kernels, name).warmup(*args, grid=(1,), **kwargs)
    for stage in ("ttir", "ttgir", "llir", "ptx"):
        assert compiled.asm[stage], f"stage {stage} is empty"
    assert f"tt.func public @{name}" in compiled.asm["ttir"]
    assert compiled.asm["ttir"].count("tt.divisibility = 16") == \
        sum(1 for a in args if str(a).endswith(":16"))
    assert compiled.trace.kernel_name == name
