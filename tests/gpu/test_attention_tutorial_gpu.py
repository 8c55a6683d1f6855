"""Tutorial 06's Hopper shapes on the GPU: the banded (two-loop causal) descriptor attention of
tests/cpu/test_attention_banded_simt.py for the tutorial's autotuner configs against torch, fp8
casts against torch's float8 conversions, an fp8 dot with max_num_imprecise_acc, and, when
TILE_TRITON_REF names a folder with Triton's 06-fused-attention.py, its own test_op run
unmodified through the `triton` alias."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import compiler as triton
import compiler.language as tl
from tests.cpu.test_attention_banded_simt import banded_attention_kernel, reference
from tests.cpu.test_fp8_casts import fp8_dot_kernel

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

from compiler.analysis.conversion import SHARED_LIMIT_BYTES  # noqa: E402  (sm_90's per block)
from compiler.runtime.errors import OutOfResources  # noqa: E402

#: (BLOCK_M, BLOCK_N, num_stages, num_warps): the tutorial's Hopper configs that its filter keeps
CONFIGS = [(bm, bn, s, 4) for bm in (64, 128) for bn in (32, 64) for s in (2, 3, 4, 6)] + \
          [(128, 128, s, 8) for s in (2, 3, 4, 6)]


def _descriptor(t, block):
    from compiler.tools.tensor_descriptor import TensorDescriptor
    return TensorDescriptor.from_tensor(t, block)


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("head_dim", [64, 128])
@pytest.mark.parametrize("block_m,block_n,stages,warps", CONFIGS)
def test_banded_attention_against_torch(block_m, block_n, stages, warps, head_dim, causal):
    if block_n > head_dim:
        pytest.skip("the tutorial asserts BLOCK_N <= HEAD_DIM")
    z, h, n_ctx = 1, 2, 1024
    torch.manual_seed(20)
    q, k, v = (torch.empty((z, h, n_ctx, head_dim), dtype=torch.float16, device="cuda")
               .normal_(0.0, 0.5) for _ in range(3))
    o = torch.empty_like(q)
    flat = [t.view(-1, head_dim) for t in (q, k, v, o)]
    descs = [_descriptor(t, [b, head_dim])
             for t, b in zip(flat, (block_m, block_n, block_n, block_m))]
    launch = lambda: banded_attention_kernel[(n_ctx // block_m, z * h)](  # noqa: E731
        0.5, *descs, n_ctx, HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n,
        CAUSAL=causal, num_warps=warps, num_stages=stages)
    # Q's tile plus a ring of `stages` slots each for K and V: what a TMA-pipelined schedule
    # holds in shared memory (Triton 3.6's tutorial kernel needs the same for these configs,
    # within 64 bytes of barriers, compiled by both for sm_90). Beyond the H200's 232448 bytes
    # per block the config is one the tutorial's autotuner drops (Triton raises OutOfResources
    # too): ours must refuse it with that error, not run it wrongly.
    least = 2 * head_dim * (block_m + 2 * stages * block_n)
    if least > SHARED_LIMIT_BYTES:
        with pytest.raises(OutOfResources, match="shared memory"):
            launch()
        return
    launch()
    torch.cuda.synchronize()
    want = reference(*(t.cpu().numpy() for t in (q, k, v)), causal, 0.5)
    np.testing.assert_allclose(o.float().cpu().numpy(), want, atol=1e-2, rtol=0)


@triton.jit
def _cast_kernel(x_ptr, z_ptr, SIZE: tl.constexpr):
    offs = tl.arange(0, SIZE)
    tl.store(z_ptr + offs, tl.load(x_ptr + offs).to(z_ptr.dtype.element_ty))


@pytest.mark.parametrize("fp8", ["float8_e5m2", "float8_e4m3fn"])
@pytest.mark.parametrize("wide", ["float16", "float32", "bfloat16"])
@pytest.mark.parametrize("size", [1024, 32])
def test_fp8_casts_match_torch(fp8, wide, size):
    torch.manual_seed(0)
    f8, w = getattr(torch, fp8), getattr(torch, wide)
    x8 = torch.randn(size, dtype=torch.float16, device="cuda").to(f8)
    widened = torch.empty(size, dtype=w, device="cuda")
    _cast_kernel[(1,)](x8, widened, SIZE=size, num_warps=1)
    assert torch.equal(widened, x8.to(w))
    narrowed = torch.empty(size, dtype=torch.float16, device="cuda").to(f8)
    _cast_kernel[(1,)](widened, narrowed, SIZE=size, num_warps=1)
    assert torch.equal(narrowed.view(torch.uint8), x8.view(torch.uint8))


@pytest.mark.parametrize("fp8", ["float8_e5m2", "float8_e4m3fn"])
@pytest.mark.parametrize("acc", [32, 64, 128])
def test_fp8_dot_with_max_num_imprecise_acc(fp8, acc):
    torch.manual_seed(1)
    m = n = k = 128
    a = torch.randn((m, k), device="cuda").to(getattr(torch, fp8))
    b = torch.randn((k, n), device="cuda").to(getattr(torch, fp8))
    c = torch.empty((m, n), device="cuda")
    fp8_dot_kernel[(1,)](a, b, c, M=m, N=n, K=k, ACC=acc, num_warps=4)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-2, atol=1e-2)


def test_tutorial_06_test_op_unmodified():
    folder = os.environ.get("TILE_TRITON_REF")
    if not folder or not (Path(folder) / "06-fused-attention.py").is_file():
        pytest.skip("TILE_TRITON_REF does not name a folder with Triton's 06-fused-attention.py")
    project = Path(__file__).resolve().parents[2]
    code = ("import sys, pytest; from compiler import triton_alias; triton_alias.install(); "
            f"sys.exit(pytest.main(['-x', '-q', '-p', 'no:cacheprovider', "
            f"{str(Path(folder) / '06-fused-attention.py')!r} + '::test_op']))")
    env = {**os.environ, "PYTHONPATH": str(project)}
    done = subprocess.run([sys.executable, "-c", code], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


@pytest.mark.parametrize("m,n,k,warps", [(64, 64, 32, 4), (128, 16, 32, 4), (128, 128, 64, 8)])
def test_int8_wgmma_dot_against_torch(m, n, k, warps):
    from tests.cpu.test_wgmma import _int8_dot_kernel
    torch.manual_seed(2)
    a = torch.randint(-128, 128, (m, k), dtype=torch.int8, device="cuda")
    b = torch.randint(-128, 128, (k, n), dtype=torch.int8, device="cuda")
    c = torch.empty((m, n), dtype=torch.int32, device="cuda")
    kernel = _int8_dot_kernel[(1,)](a, b, c, M=m, N=n, K=k, num_warps=warps)
    assert "wgmma.mma_async" in kernel.asm["ptx"]
    assert torch.equal(c.cpu(), a.cpu().long().matmul(b.cpu().long()).int())
