"""The wide GPU tier: every kernel of tests/kernels_zoo.py launched on the GPU with DeviceArrays
on fresh random inputs of awkward sizes, compared to the interpreter's result on the same inputs
and to numpy; then the four sample kernels' own `main()` checks, which run on the GPU when one
is usable.

Comparisons are bit-exact for integer results, casts, selects, atomics and single IEEE
operations (add, x*2+1); float results of approximate or reordered math get the tolerance named
on the catalogue entry (`ZooKernel.gpu`), whose text says why: ex2/lg2/sin/cos/rsqrt.approx.f32
for tl.exp/log/sin/cos/rsqrt, the order of fp32 sums in reductions, scans and dots, one rounding
for fused multiply-adds, float16 outputs. Each kernel is drawn twice with different seeds (so
sizes that happen to be divisible by 16, which specialize differently, are likely exercised);
a failure names the seed, TILE_ZOO_SEED=<seed> replays it.
"""
from __future__ import annotations

import importlib

import numpy as np
import pytest

from tests.kernels_zoo import BY_NAME, ZOO, check_outputs, make_case, run_gpu, run_interpreter, \
    zoo_seed

pytestmark = pytest.mark.gpu

NAMES = [entry.name for entry in ZOO]


@pytest.mark.parametrize("draw", [0, 1])
@pytest.mark.parametrize("name", NAMES)
def test_kernel_on_gpu_matches_interpreter_and_numpy(name, draw):
    entry = BY_NAME[name]
    seed = zoo_seed(name) + draw
    case = make_case(entry, seed)
    on_gpu = run_gpu(entry, case)
    interpreted = run_interpreter(entry, case)
    check_outputs(on_gpu, case.expected, entry.gpu, f"{name}: GPU vs numpy (seed {seed})")
    check_outputs(on_gpu, interpreted, entry.gpu, f"{name}: GPU vs interpreter (seed {seed})")


@pytest.mark.parametrize("sample", ["vector_add", "softmax", "layernorm", "matmul",
                                    "attention"])
def test_sample_kernel_main_on_gpu(sample, capsys):
    """Each sample's main() puts its data on the GPU (DeviceArray), launches, checks numpy."""
    from compiler.runtime.arrays import gpu_available
    assert gpu_available()
    module = importlib.import_module(f"sample_kernels.{sample}")
    module.main()
    assert capsys.readouterr().out.rstrip().endswith("OK")


def test_add_with_torch_tensors():
    """Torch CUDA tensors are accepted as kernel arguments (skipped when torch is absent)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here")
    entry = BY_NAME["add_f32"]
    case = make_case(entry, zoo_seed(entry.name))
    args = [torch.from_numpy(a).cuda() if isinstance(a, np.ndarray) else a for a in case.args]
    entry.kernel[case.grid](*args, **case.constexprs, **case.options)
    torch.cuda.synchronize()
    check_outputs({2: args[2].cpu().numpy()}, case.expected, entry.gpu, "add_f32 with torch")
