"""Host `TensorDescriptor`s as kernel arguments on the GPU (lowered without TMA): copies with
ragged edges and NaN padding, a block-shape change between launches (the second launch goes
through the fast launch, whose key holds the block shape), and the descriptor attention of
tests/cpu/test_tensor_descriptors.py against torch, on sm_90's wgmma path."""
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


def test_copies_through_descriptors_and_block_shape_changes():
    x = torch.randn((100, 72), device="cuda")
    y = torch.zeros_like(x)
    src, dst = _descriptor(x, [1, 1]), _descriptor(y, [1, 1])
    for block in ([32, 32], [64, 16], [32, 32], [16, 128]):
        src.block_shape = dst.block_shape = block
        y.zero_()
        _scale_copy[_grid(x.shape, block)](src, dst, 2.0)
        torch.cuda.synchronize()
        assert torch.equal(y, 2 * x), block


@pytest.mark.parametrize("padding", ["zero", "nan"])
def test_out_of_bounds_reads_are_padded_on_the_gpu(padding):
    x = torch.arange(10 * 24, dtype=torch.float32, device="cuda").reshape(10, 24)
    out = torch.zeros((8, 8), device="cuda")
    _read_window[(1,)](_descriptor(x, [8, 8], padding), out, 6, 20, BM=8, BN=8)
    fill = float("nan") if padding == "nan" else 0.0
    want = torch.full((8, 8), fill, device="cuda")
    want[:4, :4] = x[6:10, 20:24]
    assert torch.equal(torch.nan_to_num(out, 7.0), torch.nan_to_num(want, 7.0))


@pytest.mark.parametrize("n_ctx,head_dim,block_m,block_n,warps", [(1000, 64, 64, 64, 4),
                                                                  (4096, 128, 128, 64, 8)])
def test_descriptor_attention_against_numpy(n_ctx, head_dim, block_m, block_n, warps):
    rng = np.random.default_rng(n_ctx)
    host = [rng.standard_normal((n_ctx, head_dim)).astype(np.float16) for _ in range(3)]
    q, k, v = (torch.from_numpy(a).cuda() for a in host)
    o = torch.zeros_like(q)
    descs = [_descriptor(t, [b, head_dim]) for t, b in ((q, block_m), (k, block_n),
                                                        (v, block_n), (o, block_m))]
    scale = float(1 / np.sqrt(head_dim))
    _attention_desc[(-(-n_ctx // block_m), 1)](scale, *descs, n_ctx, HEAD_DIM=head_dim,
                                              BLOCK_M=block_m, BLOCK_N=block_n,
                                              num_warps=warps)
    np.testing.assert_allclose(o.float().cpu().numpy(), _reference(*host, scale), atol=3e-3,
                               rtol=1e-2)
