"""Device-side tensor descriptors (`tl.make_tensor_descriptor`) on the GPU, on pointers and
(`tma=True`) through tensor maps the kernel writes to global scratch memory: copies with ragged
edges and NaN padding, a matmul (fp16, fp32 through tf32) with shapes that are not multiples of
the blocks against torch, with the scratch from `triton.set_allocator` and from the launch's own
buffer, PTX 8.4 (strides in 16-byte units) and 8.6, and the PTX showing the map being built."""
from __future__ import annotations

import pytest

import compiler as triton
from tests.cpu.test_device_tma import (_device_desc_copy, _device_desc_matmul,
                                       _persistent_device_desc_matmul)

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

TMA = pytest.mark.parametrize("tma", [False, True], ids=["pointers", "tma"])


@pytest.fixture(params=["own buffer", "allocator"])
def scratch(request):
    calls = []
    if request.param == "allocator":
        def alloc(size, alignment, stream):
            calls.append((size, alignment))
            return torch.empty(size, dtype=torch.int8, device="cuda")
        triton.set_allocator(alloc)
    yield calls
    triton.set_allocator(None)


@TMA
@pytest.mark.parametrize("padding", ["zero", "nan"])
def test_device_descriptor_copy_with_ragged_edges(tma, padding, scratch):
    m, n, bm, bn = 100, 80, 32, 32      # ragged in both dims; rows of 160 bytes
    x = torch.randn((m, n), device="cuda")
    y = torch.full_like(x, 5.0)
    grid = (triton.cdiv(m, bm), triton.cdiv(n, bn))
    compiled = _device_desc_copy[grid](x, y, m, n, BM=bm, BN=bn, PADDING=padding, tma=tma)
    torch.cuda.synchronize()
    assert torch.equal(y, x + 1)
    if tma:
        assert "tensormap.replace.tile.global_address" in compiled.asm["ptx"]
        assert scratch in ([], [(256 * grid[0] * grid[1], 128)])


@TMA
@pytest.mark.parametrize("dtype, m, n, k, bm, bn, bk, warps, by_tma", [
    (torch.float16, 1000, 1104, 304, 128, 128, 64, 8, 3),
    (torch.float16, 1000, 1100, 300, 128, 128, 64, 8, 0),   # strides TMA cannot take: pointers
    (torch.float16, 512, 512, 512, 64, 64, 32, 4, 3),
    (torch.float32, 300, 208, 112, 64, 64, 32, 4, 3)])
def test_device_descriptor_matmul_against_torch(tma, dtype, m, n, k, bm, bn, bk, warps, by_tma,
                                                scratch):
    a = torch.randn((m, k), device="cuda", dtype=dtype)
    b = torch.randn((k, n), device="cuda", dtype=dtype)
    c = torch.zeros((m, n), device="cuda", dtype=torch.float16)
    grid = (triton.cdiv(m, bm), triton.cdiv(n, bn))
    compiled = _device_desc_matmul[grid](a, b, c, m, n, k, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                         num_warps=warps, tma=tma)
    torch.cuda.synchronize()
    want = (a.float() @ b.float()).half()
    torch.testing.assert_close(c, want, atol=0.2 if dtype == torch.float32 else 0.1,
                               rtol=1e-2)
    ptx = compiled.asm["ptx"]
    assert ptx.count("tensormap.cp_fenceproxy") == (by_tma if tma else 0)
    if tma and by_tma:
        assert "cp.async.bulk.tensor.2d" in ptx


@pytest.mark.parametrize("ptx_version", [84, 86, 87])
def test_device_descriptors_at_each_ptx_version(ptx_version):
    from tests.cpu.mma_cases import compile_jit
    from compiler.runtime.launcher import Launcher
    m, n, k = 200, 136, 96
    a = torch.randn((m, k), device="cuda", dtype=torch.float16)
    b = torch.randn((k, n), device="cuda", dtype=torch.float16)
    c = torch.zeros((m, n), device="cuda", dtype=torch.float16)
    compiled, args = compile_jit(_device_desc_matmul, [a, b, c, m, n, k],
                                 {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32},
                                 {"num_warps": 4, "num_stages": 3}, None, stop_after="cubin",
                                 target={"arch": 90, "tma": True, "ptx_version": ptx_version})
    Launcher.for_kernel(compiled).launch((triton.cdiv(m, 64), triton.cdiv(n, 64)), args)
    torch.cuda.synchronize()
    torch.testing.assert_close(c, (a.float() @ b.float()).half(), atol=0.1, rtol=1e-2)


@pytest.mark.parametrize("programs", [1, 5, 132])
def test_persistent_matmul_making_descriptors_per_tile(programs, scratch):
    m, n, k = 1024, 768, 512
    a = torch.randn((m, k), device="cuda", dtype=torch.float16)
    b = torch.randn((k, n), device="cuda", dtype=torch.float16)
    c = torch.zeros((m, n), device="cuda", dtype=torch.float16)
    compiled = _persistent_device_desc_matmul[(programs,)](a, b, c, m, n, k, BM=128, BN=128,
                                                           BK=64, num_warps=8, num_stages=3)
    torch.cuda.synchronize()
    torch.testing.assert_close(c, (a.float() @ b.float()).half(), atol=0.1, rtol=1e-2)
    assert compiled.asm["ptx"].count("tensormap.cp_fenceproxy") == 3
