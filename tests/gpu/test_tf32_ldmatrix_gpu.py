"""tf32 mma.sync operands read by `ldmatrix` on the GPU, with the `tf32_ldmatrix` option on
(on by default since this tier passed; set here so the environment cannot skip the check):
the bench's matmul (bench/bench_wgmma.py) at the 2-warp tf32 configs that stay on mma.sync on
sm_90, with row- and column-major operands and ragged shapes, against torch in fp64. Each
launch's PTX must show ldmatrix exactly where the option applies, an operand whose shared buffer
has K contiguous, and none where it must not, so a stale scalar-load compile cannot pass. Which
buffers have K contiguous is read from the kernel's ttgir: a column-major A whose leading
stride is not a multiple of 16 (1000) is not vectorized along M, and is staged K-major.
tests/cpu/test_tf32_ldmatrix.py runs the same dots on the SIMT evaluator.

    TILE_REQUIRE_GPU=1 python -m pytest -q tests/gpu/test_tf32_ldmatrix_gpu.py
"""
from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.gpu

TF32_MMA = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
LDMATRIX_X4 = "ldmatrix.sync.aligned.m8n8.x4.shared.b16"


def operands_with_k_contiguous(ttgir: str) -> set[int]:
    """The dot operand indices (0 = A, 1 = B) whose shared buffer, as the ttgir's local_loads
    into dot operands read it, has K as its contiguous dim (order[0] = 1 for A, 0 for B)."""
    op_index = {m[1]: int(m[2]) for m in
                re.finditer(r"^(#\w+) = #ttg\.dot_op<\{opIdx = (\d)", ttgir, re.M)}
    order = {m[1]: int(m[2]) for m in
             re.finditer(r"^(#\w+) = #ttg\.swizzled_shared<\{.*order = \[(\d),", ttgir, re.M)}
    found = set()
    for load in re.finditer(r"ttg\.local_load .*memdesc<[^,]*, (#\w+),.*-> tensor<[^,]*, (#\w+)>",
                            ttgir):
        shared, operand = load[1], load[2]
        if operand in op_index and order.get(shared) == 1 - op_index[operand]:
            found.add(op_index[operand])
    return found


@pytest.fixture(autouse=True)
def _tf32_ldmatrix_on(monkeypatch):
    monkeypatch.setenv("TILE_TF32_LDMATRIX", "1")
    monkeypatch.setenv("TILE_MMA_V2_TF32_INT8", "1")


@pytest.fixture(scope="module")
def ours():
    from bench.bench_wgmma import load
    return load(True)


# (block m, n, k, warps, stages): the H200 bench's 2-warp tf32 configs, and a 4-warp one
CONFIGS = [(32, 64, 32, 2, 5), (64, 32, 32, 2, 5), (64, 128, 64, 2, 3), (32, 32, 32, 4, 3)]
SHAPES = [(512, 512, 512), (1000, 1100, 300), (96, 160, 72)]


@pytest.mark.parametrize("col_a,col_b", [(False, False), (False, True), (True, False),
                                         (True, True)])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "x".join(map(str, c)))
def test_tf32_matmul_with_ldmatrix(ours, config, shape, col_a, col_b):
    torch = pytest.importorskip("torch")
    from bench.bench_wgmma import launch
    m, n, k = shape
    torch.manual_seed(m + n + k)
    a = torch.randn(k, m, device="cuda").T if col_a else torch.randn(m, k, device="cuda")
    b = torch.randn(n, k, device="cuda").T if col_b else torch.randn(k, n, device="cuda")
    c = torch.empty(m, n, device="cuda")
    kernel = launch(ours, a, b, c, config)
    torch.cuda.synchronize()
    ptx = kernel.asm["ptx"]
    assert TF32_MMA in ptx and "wgmma" not in ptx
    ref = a.double() @ b.double()
    err = (c.double() - ref).abs().max().item()
    assert err <= 2e-2 * k ** 0.5 + 1e-2, err         # bench/matmul_best_of.py's tf32 bound
    k_contiguous = operands_with_k_contiguous(kernel.asm["ttgir"])
    if shape[0] % 16 == 0:      # the staging follows the operand's major order
        assert k_contiguous == {i for i, col in ((0, not col_a), (1, col_b)) if col}
    assert (LDMATRIX_X4 in ptx) == bool(k_contiguous), k_contiguous
