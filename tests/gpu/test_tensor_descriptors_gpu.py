"""Host `TensorDescriptor`s as kernel arguments on the GPU, on pointers and (`tma=True`) by TMA:
copies with ragged edges and NaN padding, a block-shape change between launches (the second
launch goes through the fast launch, whose key holds the block shape), descriptor matmuls
(fp16, bf16, fp32 through tf32) with shapes that are not multiples of the blocks (TMA's zero
fill, clipped stores that leave the memory around the output alone) and the descriptor
attention of tests/cpu/test_tensor_descriptors.py against torch, on sm_90's wgmma path."""
from __future__ import annotations

import numpy as np
import pytest

from tests.cpu.test_tensor_descriptors import (_attention_desc, _grid, _read_window,
                                               _reference, _scale_copy)

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")


def _descriptor(tensor, block, padding="zero"):
    from compiler.tools.tensor_descriptor import TensorDescriptor
    return TensorDescriptor.from_tensor(tensor, block, padding)


TMA = pytest.mark.parametrize("tma", [False, True], ids=["pointers", "tma"])


@TMA
def test_copies_through_descriptors_and_block_shape_changes(tma):
    x = torch.randn((100, 72), device="cuda")
    y = torch.zeros_like(x)
    src, dst = _descriptor(x, [1, 1]), _descriptor(y, [1, 1])
    for block in ([32, 32], [64, 16], [32, 32], [16, 128], [8, 4]):
        src.block_shape = dst.block_shape = block
        y.zero_()
        _scale_copy[_grid(x.shape, block)](src, dst, 2.0, tma=tma)
        torch.cuda.synchronize()
        assert torch.equal(y, 2 * x), block


@TMA
@pytest.mark.parametrize("padding", ["zero", "nan"])
def test_out_of_bounds_reads_are_padded_on_the_gpu(padding, tma):
    x = torch.arange(10 * 24, dtype=torch.float32, device="cuda").reshape(10, 24)
    out = torch.zeros((8, 8), device="cuda")
    _read_window[(1,)](_descriptor(x, [8, 8], padding), out, 6, 20, BM=8, BN=8, tma=tma)
    fill = float("nan") if padding == "nan" else 0.0
    want = torch.full((8, 8), fill, device="cuda")
    want[:4, :4] = x[6:10, 20:24]
    assert torch.equal(torch.nan_to_num(out, 7.0), torch.nan_to_num(want, 7.0))


@TMA
@pytest.mark.parametrize("n_ctx,head_dim,block_m,block_n,warps", [(1000, 64, 64, 64, 4),
                                                                  (4096, 128, 128, 64, 8)])
def test_descriptor_attention_against_numpy(n_ctx, head_dim, block_m, block_n, warps, tma):
    rng = np.random.default_rng(n_ctx)
    host = [rng.standard_normal((n_ctx, head_dim)).astype(np.float16) for _ in range(3)]
    q, k, v = (torch.from_numpy(a).cuda() for a in host)
    o = torch.zeros_like(q)
    descs = [_descriptor(t, [b, head_dim]) for t, b in ((q, block_m), (k, block_n),
                                                        (v, block_n), (o, block_m))]
    scale = float(1 / np.sqrt(head_dim))
    _attention_desc[(-(-n_ctx // block_m), 1)](scale, *descs, n_ctx, HEAD_DIM=head_dim,
                                              BLOCK_M=block_m, BLOCK_N=block_n,
                                              num_warps=warps, tma=tma)
    np.testing.assert_allclose(o.float().cpu().numpy(), _reference(*host, scale), atol=3e-3,
                               rtol=1e-2)


@TMA
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("m,n,k,bm,bn,bk,warps,stages", [
    (1000, 520, 200, 128, 128, 64, 8, 3),     # ragged in every dim
    (512, 512, 256, 128, 256, 64, 8, 3),
    (256, 200, 96, 64, 64, 32, 4, 2),
    (300, 296, 128, 128, 128, 64, 8, 1),      # not pipelined: tma-lowering's in-place copies
])
def test_descriptor_matmul_against_torch(dtype, m, n, k, bm, bn, bk, warps, stages, tma):
    from tests.cpu.test_tma import _desc_matmul
    if dtype == "float32" and bk * 4 > 128 and bn > 128:
        bn = 128                                      # keep the fp32 config in shared memory
    t = getattr(torch, dtype)
    a = torch.randn((m, k), device="cuda").to(t)
    b = torch.randn((k, n), device="cuda").to(t)
    # the output is a window of a larger buffer: a clipped store must not touch its frame
    frame = torch.full((m + 16, n + 64 + -n % 8), 7.0, device="cuda", dtype=torch.float16)
    c = frame[:m, :n]
    descs = [_descriptor(a, [bm, bk]), _descriptor(b, [bk, bn]), _descriptor(c, [bm, bn])]
    grid = (-(-m // bm), -(-n // bn))
    _desc_matmul[grid](*descs, k, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, num_warps=warps,
                       num_stages=stages, tma=tma)
    torch.cuda.synchronize()
    want = (a.float() @ b.float()).half()
    tol = 2e-2 if dtype != "float32" else 5e-2        # fp32 inputs go through tf32
    torch.testing.assert_close(c, want, atol=tol * k ** 0.5, rtol=tol)
    outside = frame.clone()
    outside[:m, :n] = 7.0
    assert torch.all(outside == 7.0)
