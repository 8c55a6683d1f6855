"""Host tensor descriptors copied by TMA (the `tma` compile option on sm_90): the box and
swizzle of a block, the cuTensorMapEncodeTiled arguments computed for several shapes, dtypes
and swizzles (the driver call itself stood in for), the `tma-lowering` pass's IR, the PTX
(`cp.async.bulk.tensor.2d`, `mbarrier.try_wait`) accepted by ptxas, the launch appending each
descriptor's tensor map, and the interpreter still running descriptor kernels."""
from __future__ import annotations

import shutil
import types

import numpy as np
import pytest

import compiler as triton
import compiler.language as tl
from compiler.codegen.tma import supports, tma_box
from compiler.ir.parser import parse_module
from compiler.ir.printer import print_module
from compiler.runtime import tensor_map
from compiler.runtime.jit import _selector
from compiler.runtime.launcher import ArgumentError, Launcher, kernel_arg_kinds, layout_args
from compiler.tools.tensor_descriptor import TensorDescriptor
from tests.cpu.mma_cases import compile_jit

needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not on the PATH")
TMA_TARGET = {"arch": 90, "tma": True}


@triton.jit
def _desc_matmul(a_desc, b_desc, c_desc, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                 BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
        b = b_desc.load([k * BLOCK_K, pid_n * BLOCK_N])
        acc = tl.dot(a, b, acc)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(tl.float16))


@triton.jit
def _desc_add_one(src, dst):
    row = tl.program_id(0) * src.block_shape[0]
    col = tl.program_id(1) * src.block_shape[1]
    dst.store([row, col], src.load([row, col]) + 1)


def _matmul_descs(m, n, k, bm, bn, bk, dtype=np.float16):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    c = np.zeros((m, n), dtype)
    return (a, b, c), [TensorDescriptor.from_tensor(a, [bm, bk]),
                       TensorDescriptor.from_tensor(b, [bk, bn]),
                       TensorDescriptor.from_tensor(c, [bm, bn])]


def _compile(stop_after, bm=128, bn=128, bk=64, target=TMA_TARGET, num_warps=8, stages=3):
    _, descs = _matmul_descs(512, 512, 512, bm, bn, bk)
    return compile_jit(_desc_matmul, [*descs, 512], {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk},
                       {"num_warps": num_warps, "num_stages": stages}, None,
                       stop_after=stop_after, target=target)[0]


# ---- geometry and encoding -----------------------------------------------------------------
@pytest.mark.parametrize("bits, block, swizzle, box, copies", [
    (16, (128, 64), 128, (128, 64), 1),      # one 128-byte row per box row
    (16, (64, 256), 128, (64, 64), 4),       # 512-byte rows: four column blocks
    (16, (64, 32), 64, (64, 32), 1),
    (16, (32, 16), 32, (32, 16), 1),
    (16, (16, 8), 0, (16, 8), 1),            # 16-byte rows: no swizzle
    (32, (64, 64), 128, (64, 32), 2),
    (8, (128, 128), 128, (128, 128), 1),
])
def test_box_and_swizzle_of_a_block(bits, block, swizzle, box, copies):
    got = tma_box(bits, block)
    assert (got.swizzle, got.box, got.copies) == (swizzle, box, copies)
    assert got.box_bytes * got.copies == block[0] * block[1] * bits // 8


@pytest.mark.parametrize("bits, block", [(16, (64, 4)), (16, (512, 64)), (16, (64,)),
                                         (16, (2, 64, 64)), (1, (64, 64))])
def test_blocks_tma_cannot_copy(bits, block):
    assert tma_box(bits, block) is None


#: element, shape, strides, block, padding -> data type, dims and byte strides innermost first,
#: box innermost first, swizzle, out-of-bounds fill (worked out by hand)
ENCODINGS = [
    ("fp16", (1000, 300), (304, 1), (128, 64), "zero",
     ("FLOAT16", (300, 1000), (608,), (64, 128), "128B", "NONE")),
    ("bf16", (4096, 4096), (4096, 1), (64, 256), "zero",
     ("BFLOAT16", (4096, 4096), (8192,), (64, 64), "128B", "NONE")),
    ("fp32", (77, 64), (64, 1), (32, 16), "nan",
     ("FLOAT32", (64, 77), (256,), (16, 32), "64B", "NAN_REQUEST_ZERO_FMA")),
    ("fp16", (40, 24), (24, 1), (16, 16), "zero",
     ("FLOAT16", (24, 40), (48,), (16, 16), "32B", "NONE")),
    ("int8", (33, 48), (48, 1), (16, 16), "zero",
     ("UINT8", (48, 33), (48,), (16, 16), "NONE", "NONE")),
]


@pytest.mark.parametrize("element, shape, strides, block, padding, expected", ENCODINGS)
def test_tensor_map_encoding_arguments(element, shape, strides, block, padding, expected):
    args = tensor_map.encoding_args(element, 0x7F0000001000, shape, strides, block, padding)
    assert (args.data_type, args.global_dims, args.global_strides, args.box_dims, args.swizzle,
            args.oob_fill) == expected
    assert args.rank == 2 and args.address == 0x7F0000001000
    assert args.element_strides == (1, 1) and args.interleave == "NONE"
    assert args.l2_promotion == "L2_128B"


@pytest.mark.parametrize("address, strides, match", [
    (0x1008, (64, 1), "16-byte aligned"), (0x1000, (12, 1), "multiples of 16 bytes")])
def test_tensor_map_refusals(address, strides, match):
    with pytest.raises(tensor_map.TensorMapError, match=match):
        tensor_map.encoding_args("fp16", address, (64, 64), strides, (64, 64))


class _FakeDriver:
    """Stands in for cuda.bindings.driver at the cuTensorMapEncodeTiled boundary."""

    def __init__(self):
        self.calls = []
        for enum in ("CUtensorMapDataType", "CUtensorMapInterleave", "CUtensorMapSwizzle",
                     "CUtensorMapL2promotion", "CUtensorMapFloatOOBfill"):
            setattr(self, enum, types.SimpleNamespace(**{
                name: name for name in _ENUM_NAMES}))

    @staticmethod
    def cuuint32_t(value):
        return ("u32", value)

    @staticmethod
    def cuuint64_t(value):
        return ("u64", value)

    def cuTensorMapEncodeTiled(self, *args):
        self.calls.append(args)
        return 0, types.SimpleNamespace(opaque=list(range(16)))


_ENUM_NAMES = ["CU_TENSOR_MAP_DATA_TYPE_FLOAT16", "CU_TENSOR_MAP_INTERLEAVE_NONE",
               "CU_TENSOR_MAP_SWIZZLE_128B", "CU_TENSOR_MAP_L2_PROMOTION_L2_128B",
               "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE"]


def test_the_driver_call_gets_the_arguments_and_gives_128_bytes():
    args = tensor_map.encoding_args("fp16", 0x2000, (256, 128), (128, 1), (128, 64))
    fake = _FakeDriver()
    encoded = tensor_map.call_driver(args, fake)
    assert len(encoded) == tensor_map.TENSOR_MAP_BYTES
    assert encoded[8:16] == (1).to_bytes(8, "little")
    u32, u64 = fake.cuuint32_t, fake.cuuint64_t
    assert fake.calls == [("CU_TENSOR_MAP_DATA_TYPE_FLOAT16", 2, 0x2000, [u64(128), u64(256)],
                           [u64(256)], [u32(64), u32(128)], [u32(1), u32(1)],
                           "CU_TENSOR_MAP_INTERLEAVE_NONE",
                           "CU_TENSOR_MAP_SWIZZLE_128B", "CU_TENSOR_MAP_L2_PROMOTION_L2_128B",
                           "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE")]


def test_the_launch_appends_each_descriptor_tensor_map(monkeypatch):
    seen = []
    tensor_map.descriptor_map.cache_clear()
    monkeypatch.setattr(tensor_map, "_encode_cached",
                        lambda args: seen.append(args) or bytes(128))
    a = np.zeros((64, 64), np.float16)
    desc = TensorDescriptor.from_tensor(a, [32, 64])
    select = _selector((0, 1), (0,), tensor_maps=True)
    args = select((desc, 7))
    assert args[:4] == (a, 64, 64, 64) and args[4] == bytes(128) and args[5] == 7
    assert seen[0].box_dims == (64, 32) and seen[0].global_dims == (64, 64)
    assert _selector((0, 1), (0,))((desc, 7)) == (a, 64, 64, 64, 7)     # without TMA


def test_a_tensor_map_slot_is_128_bytes_aligned_to_64():
    layout = layout_args(["i32", "tensormap", "ptr"])
    assert layout.offsets == (0, 64, 192) and layout.size == 200


# ---- the compiler --------------------------------------------------------------------------
def test_host_descriptors_take_a_tensor_map_argument_and_load_through_it():
    compiled = _compile("ttir")
    text = compiled.trace.stages["ttir"]
    assert text.count("{tt.nv_tma_desc = 1 : i32}") == 3
    assert "tt.descriptor_load %a_desc_map" in text and "tt.descriptor_store %c_desc_map" in text
    assert "tt.load" not in text
    kinds = kernel_arg_kinds(compiled.ttir_module)
    assert kinds.count("tensormap") == 3


def test_tma_lowering_feeds_wgmma_from_the_tma_buffers():
    compiled = _compile("ttgir", stages=1)          # no pipelining: tma-lowering copies
    text = compiled.trace.stages["ttgir"]
    assert "tt.descriptor_load" not in text and "tt.descriptor_store" not in text
    assert text.count("ttng.async_tma_copy_global_to_local") == 2
    assert text.count("ttng.barrier_expect") == 2 and text.count("ttng.wait_barrier") == 2
    assert text.count("ttng.init_barrier") == 2 and text.count("ttng.inval_barrier") == 2
    assert "ttng.async_tma_copy_local_to_global" in text and "ttng.async_tma_store_wait" in text
    # the dot reads the TMA destinations: no register round trip, no local_load
    assert "ttg.local_load" not in text
    records = [r for r in compiled.trace.passes if r.name == "tma-lowering"]
    assert records and records[0].changed
    module = parse_module(text)
    assert print_module(module) == print_module(parse_module(print_module(module)))


@pytest.mark.parametrize("bn", [128, 256])
def test_the_tma_store_buffer_is_written_from_the_accumulator_layout(bn):
    """The epilogue's conversion out of the wgmma accumulator layout went through shared memory
    once for itself and once more into the TMA store's buffer; the buffer is written from the
    accumulator registers directly now (by stmatrix), as in Triton."""
    compiled = _compile(None, bn=bn)
    text = compiled.trace.stages["ttgir"]
    assert "ttg.convert_layout" not in text
    epilogue = text[text.rindex("ttg.local_alloc"):]
    assert epilogue.startswith("ttg.local_alloc %") and "#mma>) -> !ttg.memdesc" in \
        epilogue.splitlines()[0]
    ptx = compiled.asm["ptx"]
    tail = ptx[ptx.rindex("wgmma.wait_group"):]
    assert "stmatrix.sync.aligned" in tail and "st.shared" not in tail and "ld.shared" not in tail


def test_the_pipeliner_issues_tma_loads_stages_minus_one_ahead():
    compiled = _compile("ttgir", stages=3)
    text = compiled.trace.stages["ttgir"]
    loop = text[text.index("scf.for"):text.index("scf.yield")]
    prologue = text[:text.index("scf.for")]
    # a ring of 3 buffers per operand and one mbarrier per stage
    assert "!ttg.memdesc<3x128x64xf16" in prologue and "!ttg.memdesc<3x1xi64" in prologue
    assert prologue.count("ttng.init_barrier") == 3
    assert prologue.count("ttng.async_tma_copy_global_to_local") == 4      # 2 stages x 2
    assert loop.count("ttng.async_tma_copy_global_to_local") == 2
    assert loop.count("ttng.barrier_expect") == 1 and loop.count("ttng.wait_barrier") == 1
    assert "{isAsync = true}" in loop and "ttg.local_load" not in loop
    assert "ttg.async_copy_global_to_local" not in text and "ttg.async_wait" not in text
    assert text.count("ttng.inval_barrier") == 3
    pipeline = [r for r in compiled.trace.passes if r.name == "pipeline"][0]
    assert any("3-stage TMA pipeline" in str(p) for p in pipeline.patterns)


def test_tma_is_the_default_on_sm90():
    compiled = _compile("ttgir", target={"arch": 90})
    assert "ttng.async_tma" in compiled.trace.stages["ttgir"]


def test_without_the_option_descriptors_stay_on_pointers():
    compiled = _compile("ttgir", target={"arch": 90, "tma": False})
    text = compiled.trace.stages["ttgir"]
    assert "tt.nv_tma_desc" not in text and "ttng.async_tma" not in text
    assert "ttg.async_copy_global_to_local" in text      # the cp.async pipeline as before


def test_a_descriptor_load_not_feeding_a_dot_goes_through_local_load():
    x = np.zeros((64, 64), np.float32)
    descs = [TensorDescriptor.from_tensor(x, [32, 32]), TensorDescriptor.from_tensor(x, [32, 32])]
    compiled = compile_jit(_desc_add_one, descs, {}, {"num_warps": 4}, None,
                           stop_after="ttgir", target=TMA_TARGET)[0]
    text = compiled.trace.stages["ttgir"]
    assert "ttng.async_tma_copy_global_to_local" in text and "ttg.local_load" in text


@needs_ptxas
@pytest.mark.parametrize("bm, bn, bk, warps", [(128, 128, 64, 8), (128, 256, 64, 8),
                                               (64, 64, 32, 4)])
def test_descriptor_matmul_ptx_uses_tma_and_ptxas_accepts_it(bm, bn, bk, warps):
    compiled = _compile(None, bm, bn, bk, num_warps=warps)
    ptx = compiled.asm["ptx"]
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes" in ptx
    assert "mbarrier.try_wait.parity" in ptx and "wgmma.mma_async" in ptx
    assert "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group" in ptx
    assert ".param .align 64 .b8" in ptx and "cvta.param" in ptx
    assert compiled.asm["cubin"]
    assert compiled.trace.cubin_info["spill_stores"] == 0


def test_supported_descriptors_follow_the_box_rules():
    assert supports("fp16", (64, 64)) and supports("int8", (16, 16))
    assert not supports("fp16", (64, 4)) and not supports("fp16", (8, 8, 8))


def test_the_interpreter_still_runs_descriptor_kernels_with_the_option():
    (a, b, c), descs = _matmul_descs(40, 48, 64, 16, 16, 32)
    _desc_matmul[(3, 3)](*descs, 64, BLOCK_M=16, BLOCK_N=16, BLOCK_K=32, tma=True,
                         interpret=True)
    expected = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c.astype(np.float32), expected, rtol=1e-2, atol=5e-2)


def test_the_real_bindings_accept_the_argument_types():
    """cuda.bindings takes the dim/stride/box arrays only as cuuint64_t/cuuint32_t objects: plain
    ints raised TypeError inside the binding on the H200 (every TMA launch failed). Here the call
    must get past the argument conversion: it then fails only for want of a driver (no GPU), or
    succeeds where there is one."""
    cuda = pytest.importorskip("cuda.bindings.driver")
    args = tensor_map.encoding_args("fp16", 0x10000, (256, 128), (128, 1), (128, 64))
    try:
        encoded = tensor_map.call_driver(args, cuda)
    except TypeError as error:
        pytest.fail(f"the bindings refused the argument types: {error}")
    except Exception as error:  # no driver library or no context on a CPU-only machine
        assert "convert" not in str(error)
    else:
        assert len(encoded) == tensor_map.TENSOR_MAP_BYTES


def test_every_enum_name_exists_in_cuda_bindings():
    cuda = pytest.importorskip("cuda.bindings.driver")
    for name in set(tensor_map.DATA_TYPES.values()):
        assert hasattr(cuda.CUtensorMapDataType, f"CU_TENSOR_MAP_DATA_TYPE_{name}")
    for name in tensor_map.SWIZZLE_NAMES.values():
        assert hasattr(cuda.CUtensorMapSwizzle, f"CU_TENSOR_MAP_SWIZZLE_{name}")
    assert hasattr(cuda.CUtensorMapL2promotion,
                   f"CU_TENSOR_MAP_L2_PROMOTION_{tensor_map.L2_PROMOTION}")
    for fill in ("NONE", "NAN_REQUEST_ZERO_FMA"):
        assert hasattr(cuda.CUtensorMapFloatOOBfill, f"CU_TENSOR_MAP_FLOAT_OOB_FILL_{fill}")


def test_the_launcher_packs_a_tensor_map_in_place():
    calls = []

    def fake_launch(function, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        calls.append((gx, bx))
        return (0,)

    launcher = Launcher(None, ["ptr", "i32", "tensormap", "i32"], launch_fn=fake_launch)
    encoded = bytes(range(128))
    launcher.launch((2,), 4, 0, None, (0x1000, 5, encoded, 7))
    packed = bytes(launcher.buffer)
    assert packed[64:192] == encoded and calls == [(2, 128)]
    with pytest.raises(ArgumentError, match="CUtensorMap"):
        launcher.launch((2,), 4, 0, None, (0x1000, 5, b"short", 7))


@needs_ptxas
def test_descriptor_attention_through_a_callee_compiles_with_tma():
    from tests.cpu.test_tensor_descriptors import _attention_desc, _attention_inputs
    _, descs = _attention_inputs(4096, 128, 128, 64)
    compiled = compile_jit(_attention_desc, [0.125, *descs, 4096],
                           {"HEAD_DIM": 128, "BLOCK_M": 128, "BLOCK_N": 64},
                           {"num_warps": 8, "num_stages": 3}, None, stop_after=None,
                           target=TMA_TARGET)[0]
    ptx = compiled.asm["ptx"]
    assert "cp.async.bulk.tensor.2d" in ptx and "wgmma.mma_async" in ptx
    patterns = {name for r in compiled.trace.passes for name in r.patterns}
    assert "scf.for -> 3-stage TMA pipeline" in patterns          # k and v: pipelined
    # k is transposed as a view of its ring slot (optimize-dot-operands), not in registers
    assert "local_alloc(tt.trans) -> memdesc_trans(local_alloc)" in patterns
    assert "tt.descriptor_load -> TMA copy + local_load" not in patterns
    assert compiled.trace.cubin_info["spill_stores"] == 0


def test_a_tma_kernel_launch_packs_each_descriptor_tensor_map(monkeypatch):
    """The jit's launch (first the slow one, then the generated fast launch) hands a kernel
    compiled with TMA each descriptor's fields and then its encoded tensor map."""
    import compiler.compiler as driver
    from compiler.codegen.nvidia_options import NvidiaOptions
    from compiler.runtime.jit import JITFunction
    from compiler.runtime.launcher import KernelLauncher
    from tests.cpu.test_jit_fast_launch import (FORMATS, Calls, _argument_kinds,
                                                _descriptor_scale, torch_like)

    encoded = []
    tensor_map.descriptor_map.cache_clear()
    monkeypatch.setattr(tensor_map, "_encode_cached", lambda args: encoded.append(args) or
                        args.address.to_bytes(8, "little") * 16)
    calls, compiled = Calls(), []

    class TmaCompiled:
        options = NvidiaOptions(arch=90, tma=True)

        def __init__(self, src):
            self.src, self.num_warps = src, 4
            kinds, names = [], []
            for kind, name in zip(*_argument_kinds(src.signature)):
                kinds.append(kind)
                names.append(name)
                if name.endswith(".3"):             # after a rank-2 descriptor's last field
                    kinds.append("tensormap")
                    names.append(name[:-2] + ".map")
            calls.formats = ["Q" if k.startswith("*") else "128s" if k == "tensormap"
                             else FORMATS[k] for k in kinds]
            self._launcher = KernelLauncher(Launcher("FN", kinds, name=src.name,
                                                     arg_names=names, launch_fn=calls), None, 4, 0)

        def launcher(self):
            return self._launcher

    monkeypatch.setattr(driver, "compile", lambda src, options=None, pipelines=None:
                        compiled.append(TmaCompiled(src)) or compiled[-1])
    kernel = JITFunction(_descriptor_scale.fn)
    kernel._default_interpret = False
    src = TensorDescriptor(torch_like(1 << 20), [64, 32], [32, 1], [16, 32])
    dst = TensorDescriptor(torch_like(1 << 21), [64, 32], [40, 1], [16, 32])
    kernel[(4,)](src, dst, 2.0, tma=True)
    kernel[(4,)](src, dst, 3.0, tma=True)                # the fast launch
    assert len(compiled) == 1
    maps = [(1 << 20).to_bytes(8, "little") * 16, (1 << 21).to_bytes(8, "little") * 16]
    assert [c[3] for c in calls.calls] == [
        [1 << 20, 64, 32, 32, maps[0], 1 << 21, 64, 32, 40, maps[1], factor]
        for factor in (2.0, 3.0)]
    assert encoded[0].box_dims == (32, 16) and encoded[1].global_strides == (160,)


@pytest.mark.parametrize("stage, stages", [("ttir", 3), ("ttgir", 3), ("ttgir", 1)])
def test_the_interpreter_runs_the_tma_ir(stage, stages):
    """The TMA IR itself (the pipelined ring with its barriers, or tma-lowering's in-place
    copies and TMA store) computes the matmul: the tensor-map parameters take the host
    descriptors, ragged shapes read zeros past the edges and clipped stores leave the frame
    around the output alone."""
    from compiler.runtime.interpreter import interpret
    m, n, k, bm, bn, bk = 80, 72, 96, 64, 64, 32
    (a, b, _), _ = _matmul_descs(m, n, k, bm, bn, bk)
    frame = np.full((m + 8, n + 8), 7.0, np.float16)
    c = frame[:m, :n]
    descs = [TensorDescriptor.from_tensor(a, [bm, bk]), TensorDescriptor.from_tensor(b, [bk, bn]),
             TensorDescriptor(c, [m, n], [n + 8, 1], [bm, bn])]
    compiled = compile_jit(_desc_matmul, [*descs, k], {"BLOCK_M": bm, "BLOCK_N": bn,
                                                       "BLOCK_K": bk},
                           {"num_warps": 4, "num_stages": stages}, None, stop_after=stage,
                           target=TMA_TARGET)[0]
    module = compiled.ttir_module if stage == "ttir" else compiled.ttgir_module
    args = []
    for desc in descs:
        args += [*desc.kernel_fields(), desc]
    interpret(module, (-(-m // bm), -(-n // bn)), args + [k])
    want = (a.astype(np.float32) @ b.astype(np.float32))
    np.testing.assert_allclose(c.astype(np.float32), want, rtol=1e-2, atol=5e-2)
    assert (frame[m:] == 7).all() and (frame[:, n:] == 7).all()


def test_a_descriptor_is_derived_once_per_field_set(monkeypatch):
    """A launch re-reads each host descriptor; its tensor map is derived once for the same
    base, shape, strides and block (tutorial 06's pre-hook sets the block before every call),
    and again when the block changes."""
    seen = []
    tensor_map.descriptor_map.cache_clear()
    monkeypatch.setattr(tensor_map, "_encode_cached", lambda args: seen.append(args) or bytes(128))
    a = np.zeros((64, 64), np.float16)
    desc = TensorDescriptor.from_tensor(a, [32, 64])
    assert tensor_map.of_descriptor(desc) == bytes(128)
    assert tensor_map.of_descriptor(desc) == bytes(128) and len(seen) == 1
    desc.block_shape = [64, 64]
    tensor_map.of_descriptor(desc)
    assert len(seen) == 2 and seen[1].box_dims == (64, 64)
    tensor_map.descriptor_map.cache_clear()
