"""Device-side tensor descriptors (`tl.make_tensor_descriptor`) copied by TMA on sm_90: the
front end's `tt.make_tensor_descriptor`, `tma-lowering`'s tensor map in global scratch memory
(`ttg.global_scratch_alloc`, `ttng.tensormap_create`, `ttng.tensormap_fenceproxy_acquire`),
`global-scratch-allocation`'s offsets, the PTX (`tensormap.replace`, `tensormap.cp_fenceproxy`,
the hidden scratch parameter) accepted by ptxas, the interpreter running the IR, and the launch
passing scratch memory for the grid from `triton.set_allocator` or its own buffer."""
from __future__ import annotations

import re
import shutil
import types

import numpy as np
import pytest

import compiler as triton
import compiler.language as tl
from compiler.codegen.backend import OptionError
from compiler.ir.parser import parse_module
from compiler.ir.printer import print_module
from compiler.runtime import allocation
from compiler.runtime.launcher import KernelLauncher, Launcher
from tests.cpu.mma_cases import compile_jit
from tests.cpu.test_tma import _desc_matmul

needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not on the PATH")
TMA_TARGET = {"arch": 90, "tma": True}


@triton.jit
def _device_desc_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr,
                        BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [N, 1], [BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BLOCK_M, BLOCK_N])
    _desc_matmul(a_desc, b_desc, c_desc, K, BLOCK_M, BLOCK_N, BLOCK_K)   # test_tma's, inlined


@triton.jit
def _device_desc_copy(src, dst, M, N, BM: tl.constexpr, BN: tl.constexpr,
                      PADDING: tl.constexpr):
    s = tl.make_tensor_descriptor(src, [M, N], [N, 1], [BM, BN], padding_option=PADDING)
    d = tl.make_tensor_descriptor(dst, [M, N], [N, 1], [BM, BN])
    r = tl.program_id(0) * BM
    c = tl.program_id(1) * BN
    d.store([r, c], s.load([r, c]) + 1)


@triton.jit
def _persistent_device_desc_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr,
                                   BN: tl.constexpr, BK: tl.constexpr):
    """A persistent matmul making its descriptors in the tile loop (each tile rewrites the
    program's tensor maps after the previous tile's copies completed)."""
    tiles_n = tl.cdiv(N, BN)
    for tile in range(tl.program_id(0), tl.cdiv(M, BM) * tiles_n, tl.num_programs(0)):
        a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BM, BK])
        b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [N, 1], [BK, BN])
        c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BM, BN])
        pm = tile // tiles_n
        pn = tile % tiles_n
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            acc = tl.dot(a_desc.load([pm * BM, k * BK]), b_desc.load([k * BK, pn * BN]), acc)
        c_desc.store([pm * BM, pn * BN], acc.to(tl.float16))


@triton.jit
def _device_desc_runtime_last_stride(src, dst, N, S):
    s = tl.make_tensor_descriptor(src, [N, N], [N, S], [32, 32])
    d = tl.make_tensor_descriptor(dst, [N, N], [N, 1], [32, 32])
    d.store([0, 0], s.load([0, 0]))


def _matmul(stage, m=80, n=80, k=96, bm=64, bn=64, bk=32, stages=3, target=TMA_TARGET):
    a = np.zeros((m, k), np.float16)
    b = np.zeros((k, n), np.float16)
    c = np.zeros((m, n), np.float16)
    return compile_jit(_device_desc_matmul, [a, b, c, m, n, k],
                       {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk},
                       {"num_warps": 4, "num_stages": stages}, None,
                       stop_after=stage, target=target)[0]


def _copy(stage, dtype=np.float16, bm=64, bn=64, padding="zero", target=TMA_TARGET):
    x = np.zeros((256, 256), dtype)
    return compile_jit(_device_desc_copy, [x, x, 256, 256],
                       {"BM": bm, "BN": bn, "PADDING": padding}, {"num_warps": 4}, None,
                       stop_after=stage, target=target)[0]


# ---- front end and passes ----------------------------------------------------------------
def test_make_tensor_descriptor_becomes_an_op_when_copied_by_tma():
    text = _copy("ttir").trace.stages["ttir"]
    assert text.count("tt.make_tensor_descriptor") == 2
    assert re.search(r"tt\.make_tensor_descriptor %src, %M, %N, %\S+, %\S+ \{block_shape = "
                     r"array<i32: 64, 64>, padding = \"zero\"\} : !tt\.ptr<f16>, i32, i32, i64, "
                     r"i64 -> !tt\.ptr<i8>", text)
    assert "tt.descriptor_load %s" in text and "tt.descriptor_store %d" in text
    assert "tt.load" not in text


@pytest.mark.parametrize("target", [{"arch": 90, "tma": False}, {"arch": 80}])
def test_without_tma_device_descriptors_stay_on_pointers(target):
    text = _copy("ttir", target=target).trace.stages["ttir"]
    assert "tt.make_tensor_descriptor" not in text and "tt.descriptor_load" not in text
    assert "tt.load" in text and "tt.store" in text


def test_tma_lowering_builds_the_map_in_global_scratch():
    compiled = _copy("ttgir", padding="nan")
    text = compiled.trace.stages["ttgir"]
    assert "tt.make_tensor_descriptor" not in text
    scratch = re.findall(r"(%\S+) = ttg\.global_scratch_alloc \{alignment = 128 : i32, nbytes = "
                         r"128 : i32, ttg\.global_scratch_memory_offset = (\d+) : i32\}", text)
    assert [offset for _, offset in scratch] == ["0", "128"]
    src_map, dst_map = (name for name, _ in scratch)
    # dims innermost first (N, M), the row's byte stride N * 2, the box of 64x64 fp16
    # (built in 128 bytes of shared scratch: allocation.offset)
    create = re.search(rf"ttng\.tensormap_create {src_map}, %src, %N, %M, (%\S+) "
                       rf"\{{allocation\.offset = \d+ : i32, box_dim = "
                       rf"array<i32: 64, 64>, elem_type = 6 : i32, fill_mode = 1 : i32, "
                       rf"swizzle_mode = 3 : i32\}}", text)
    assert create, text
    assert re.search(rf"{re.escape(create.group(1))} = arith\.muli %\S+, %\S+ : i64", text)
    assert f"ttng.tensormap_fenceproxy_acquire {src_map}" in text
    assert f"ttng.async_tma_copy_global_to_local {src_map}," in text
    assert f"ttng.async_tma_copy_local_to_global {dst_map}," in text
    attrs = compiled.ttgir_module.attributes
    assert attrs["ttg.global_scratch_memory_size"].value == 256
    assert attrs["ttg.global_scratch_memory_alignment"].value == 128
    assert (compiled.metadata.global_scratch_size, compiled.metadata.global_scratch_align) == \
        (256, 128)
    # the printed ttgir parses back to the same text
    assert print_module(parse_module(text)) == print_module(compiled.ttgir_module)


@pytest.mark.parametrize("dtype, elem_type, swizzle", [
    (np.float32, 7, 3), (np.int8, 0, 2), (np.int32, 3, 3), (np.float16, 6, 1)])
def test_the_map_encodes_element_type_and_swizzle(dtype, elem_type, swizzle):
    bn = 16 if dtype == np.float16 else 64
    text = _copy("ttgir", dtype=dtype, bm=32, bn=bn).trace.stages["ttgir"]
    box = re.search(r"box_dim = array<i32: (\d+), (\d+)>, elem_type = (\d+) : i32, fill_mode = 0 "
                    r": i32, swizzle_mode = (\d+)", text)
    assert box and (int(box.group(3)), int(box.group(4))) == (elem_type, swizzle), text
    assert int(box.group(2)) == 32


def test_a_kernel_without_device_descriptors_has_no_scratch():
    compiled = _copy("ttgir", target={"arch": 90, "tma": False})
    assert compiled.metadata.global_scratch_size == 0
    assert "ttg.global_scratch_memory_size" not in compiled.ttgir_module.attributes


# ---- PTX ---------------------------------------------------------------------------------
@needs_ptxas
def test_the_ptx_writes_the_map_and_ptxas_assembles_it():
    compiled = _matmul("cubin")
    ptx = compiled.asm["ptx"]
    assert ".version 8.6" in ptx and ".target sm_90a" in ptx
    params = re.findall(r"\.param \.(\S+) [^\n]*_param_(\d+)", ptx)
    assert len(params) == 7 and params[-1][0] == "u64"          # six arguments + the scratch
    for field in ("global_address", "rank", "box_dim", "global_dim", "global_stride",
                  "element_stride", "elemtype", "interleave_layout", "swizzle_mode",
                  "fill_mode"):
        assert ptx.count(f"tensormap.replace.tile.{field}.shared::cta.b1024") >= 3, field
    assert ptx.count("tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release"
                     ".gpu.sync.aligned") == 3
    assert ptx.count("fence.proxy.tensormap::generic.acquire.gpu") == 3
    assert "cp.async.bulk.tensor.2d.shared::cluster.global" in ptx
    assert "wgmma.mma_async" in ptx
    assert isinstance(compiled.asm["cubin"], (bytes, bytearray)) and compiled.asm["cubin"]


@needs_ptxas
@pytest.mark.parametrize("version", [84, 87])
def test_a_given_ptx_version_keeps_byte_strides(version):
    """Strides go into the map in bytes at every PTX version (the H200 read wrong results with
    Triton's division by 16 at 8.4, right ones without it at 8.4, 8.6 and 8.7)."""
    compiled = _matmul("cubin", target={**TMA_TARGET, "ptx_version": version})
    ptx = compiled.asm["ptx"]
    assert f".version {version // 10}.{version % 10}" in ptx and compiled.asm["cubin"]
    lowered = compiled.asm["llir"]
    assert "ashr i64" not in lowered and "lshr i64" not in lowered


def test_device_descriptors_stay_on_pointers_unless_tma_can_address_them():
    """TMA needs a 16-byte aligned base and row strides in multiples of 16 bytes: a
    specialization that does not know them (a row length that is not a multiple of 16, a
    runtime last stride) keeps the pointer path, right for any launch."""
    assert "tt.make_tensor_descriptor" in _matmul("ttir", 80, 64, 96).trace.stages["ttir"]
    for m, n, k in ((80, 72, 96), (80, 64, 100)):
        text = _matmul("ttir", m, n, k).trace.stages["ttir"]
        assert text.count("tt.make_tensor_descriptor") == (1 if n % 16 else 2), (m, n, k)
    x = np.zeros((64, 64), np.float16)
    text = compile_jit(_device_desc_runtime_last_stride, [x, x, 64, 2], {}, {"num_warps": 4},
                       None, stop_after="ttir", target=TMA_TARGET)[0].trace.stages["ttir"]
    assert "tt.make_tensor_descriptor %src" not in text and "tt.load" in text
    assert text.count("tt.make_tensor_descriptor") == 1        # dst's strides are fine


def test_a_ptx_version_without_tensormap_replace_is_refused():
    with pytest.raises(OptionError, match=r"needs PTX 8\.3 or later .*ptx_version=80"):
        _matmul("ptx", target={**TMA_TARGET, "ptx_version": 80})


# ---- the interpreter runs the IR ---------------------------------------------------------
@pytest.mark.parametrize("stage, stages", [("ttir", 3), ("ttgir", 3), ("ttgir", 1)])
def test_the_interpreter_runs_the_device_descriptor_ir(stage, stages):
    from compiler.runtime.interpreter import interpret
    m, n, k, bm, bn, bk = 80, 80, 96, 64, 64, 32
    rng = np.random.default_rng(1)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), 7.0, np.float16)
    compiled = _matmul(stage, m, n, k, bm, bn, bk, stages)
    module = compiled.ttir_module if stage == "ttir" else compiled.ttgir_module
    interpret(module, (-(-m // bm), -(-n // bn)), [a, b, c, m, n, k])
    want = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c.astype(np.float32), want, rtol=1e-2, atol=5e-2)


# ---- the launch --------------------------------------------------------------------------
class _Calls:
    def __init__(self):
        self.calls = []

    def __call__(self, function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        self.calls.append((gx, gy, gz, stream))
        return (0,)


def _scratch_launcher(calls, size=256, align=128):
    base = Launcher(object(), ["ptr", "i32", "ptr"], name="k", launch_fn=calls)
    return KernelLauncher(base, None, 4, 0, size, align)


def test_the_launch_passes_scratch_for_the_whole_grid_from_the_allocator(monkeypatch):
    requests = []

    class Buffer:
        def data_ptr(self):
            return 1 << 24

    def alloc(size, alignment, stream):
        requests.append((size, alignment, stream))
        return Buffer()
    monkeypatch.setattr("compiler.runtime.driver.current_stream", lambda: None)
    calls = _Calls()
    launcher = _scratch_launcher(calls)
    triton.set_allocator(alloc)
    try:
        launcher.launch((3, 2), (1 << 20, 5))
        launcher.launch_addresses((4,), (1 << 20, 5))
    finally:
        triton.set_allocator(None)
    assert requests == [(256 * 6, 128, 0), (256 * 4, 128, 0)]
    packed = bytes(launcher.launcher.buffer)
    assert int.from_bytes(packed[16:24], "little") == 1 << 24     # the last, hidden argument
    assert [c[:3] for c in calls.calls] == [(3, 2, 1), (4, 1, 1)]


def test_a_misaligned_allocator_buffer_is_refused(monkeypatch):
    monkeypatch.setattr("compiler.runtime.driver.current_stream", lambda: None)
    triton.set_allocator(lambda size, alignment, stream: types.SimpleNamespace(
        data_ptr=lambda: (1 << 24) + 64))
    try:
        with pytest.raises(ValueError, match="not aligned"):
            _scratch_launcher(_Calls()).launch((1,), (1 << 20, 5))
    finally:
        triton.set_allocator(None)


def test_without_an_allocator_the_launch_uses_its_own_buffer_per_stream(monkeypatch):
    made = []

    class FakeArray:
        def __init__(self, nbytes):
            self.nbytes = nbytes
            self.address = (len(made) + 1) << 28
            made.append(self)

        def data_ptr(self):
            return self.address
    monkeypatch.setattr("compiler.runtime.device_array.DeviceArray.empty",
                        classmethod(lambda cls, shape, dtype, device=0: FakeArray(shape[0])))
    monkeypatch.setattr(allocation, "_own_buffers", {})
    monkeypatch.setattr(allocation, "_retired", [])
    first, _ = allocation.global_scratch(1024, 128, 0)
    again, _ = allocation.global_scratch(512, 128, 0)          # fits: the same buffer
    other, _ = allocation.global_scratch(512, 128, 7)          # another stream: its own
    grown, _ = allocation.global_scratch(4096, 128, 0)         # grows; the old one is kept
    assert first == again != other != grown
    assert [a.nbytes for a in made] == [1024, 512, 4096] and allocation._retired == [made[0]]


def test_descriptors_made_in_a_persistent_loop_run_in_the_interpreter():
    from compiler.runtime.interpreter import interpret
    m, n, k = 144, 128, 96
    rng = np.random.default_rng(2)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float16)
    compiled = compile_jit(_persistent_device_desc_matmul, [a, b, c, m, n, k],
                           {"BM": 64, "BN": 64, "BK": 32}, {"num_warps": 4, "num_stages": 3},
                           None, stop_after="ttgir", target=TMA_TARGET)[0]
    text = compiled.trace.stages["ttgir"]
    assert text.count("ttng.tensormap_create") == 3
    interpret(compiled.ttgir_module, (3,), [a, b, c, m, n, k])     # 3 programs, 6 tiles
    np.testing.assert_allclose(c.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32),
                               rtol=1e-2, atol=5e-2)
