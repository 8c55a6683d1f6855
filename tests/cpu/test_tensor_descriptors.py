"""Tensor descriptors as kernel arguments (a host `TensorDescriptor`, Triton tutorial 06's
Hopper path) and made in kernels (`tl.make_tensor_descriptor`), lowered without TMA to masked
pointer loads and stores: the launch expands a descriptor into its fields, the block shape and
padding are part of the specialization key (a pre_hook changing `block_shape` recompiles),
out-of-bounds reads give zeros or NaNs and out-of-bounds writes are dropped, in the
interpreter and on the GPU path (the SIMT evaluator for sm_80, ptxas for sm_90's wgmma)."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import compiler as triton
import compiler.language as tl
from compiler.frontend.errors import CompilationError
from compiler.runtime.jit import JITFunction
from compiler.runtime.specialization import split_entries, specialize
from compiler.tools.tensor_descriptor import TensorDescriptor
from tests.cpu.mma_cases import compile_jit, run_on_simt

needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not on the PATH")


@triton.jit
def _scale_copy(src, dst, factor):
    """Each program copies one block row of `src` into `dst`, times `factor`."""
    row = tl.program_id(0) * src.block_shape[0]
    col = tl.program_id(1) * src.block_shape[1]
    block = src.load([row, col])
    dst.store([row, col], block * factor)


def _grid(shape, block):
    return (-(-shape[0] // block[0]), -(-shape[1] // block[1]))


# ---- the launch: entries, key, fields ----------------------------------------------------------
def test_a_descriptor_entry_names_element_block_padding_and_divisible_fields():
    x = np.zeros((64, 48), np.float16)
    desc = TensorDescriptor.from_tensor(x, [16, 32])
    entry = specialize(desc)
    assert entry.startswith("tensordesc<fp16[16, 32]>:16=")
    fields = entry.split(":16=")[1].split(",")
    assert "1" in fields and "2" in fields   # shape 64 and 48 are multiples of 16; stride 48 too
    assert "3" in fields
    nan = TensorDescriptor(x, [64, 40], [48, 1], [16, 32], padding="nan")
    assert specialize(nan).startswith("tensordesc<fp16[16, 32],nan>")
    spec = split_entries(["d", "n"], set(), [specialize(nan), "i32"], [nan, 5])
    assert spec.signature == {"d": "tensordesc<fp16[16, 32],nan>", "n": "i32"}
    assert spec.descriptor_params == (0,) and spec.runtime_params == (0, 1)
    assert "d.2" not in spec.divisibility_16 and "d.3" in spec.divisibility_16   # 40, 48


def test_the_kernel_takes_base_shape_and_strides_but_the_last_which_is_the_constant_1():
    x = np.zeros((20, 24), np.float32)
    src, dst = TensorDescriptor.from_tensor(x, [8, 32]), TensorDescriptor.from_tensor(x, [8, 32])
    ttir = _scale_copy.warmup(src, dst, 2.0, grid=(1,)).asm["ttir"]
    header = ttir.splitlines()[1]
    assert "%src_0: !tt.ptr<f32> {tt.divisibility = 16 : i32}" in header
    assert "%src_1: i32" in header and "%src_2: i32" in header and "%src_3: i64" in header
    assert "%src_4" not in header


# ---- the interpreter ---------------------------------------------------------------------------
@pytest.mark.parametrize("shape,block", [((20, 24), (8, 32)), ((64, 64), (16, 16)),
                                         ((5, 40), (4, 8))])
def test_loads_and_stores_through_descriptors_in_the_interpreter(shape, block):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    y = np.full_like(x, -7.0)
    _scale_copy[_grid(shape, block)](TensorDescriptor.from_tensor(x, block),
                                     TensorDescriptor.from_tensor(y, block), 3.0, interpret=True)
    np.testing.assert_array_equal(y, x * 3.0)


@triton.jit
def _read_window(src, out, row, col, BM: tl.constexpr, BN: tl.constexpr):
    """The `BM x BN` window of `src` at (row, col), out-of-bounds elements padded, stored
    densely into `out`."""
    block = src.load([row, col])
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    tl.store(out + offs, block)


@pytest.mark.parametrize("padding,fill", [("zero", 0.0), ("nan", np.nan)])
@pytest.mark.parametrize("row,col", [(-2, 3), (6, 20), (0, 0)])
def test_out_of_bounds_reads_are_padded(padding, fill, row, col):
    x = np.arange(10 * 24, dtype=np.float32).reshape(10, 24)
    desc = TensorDescriptor(x, [10, 24], [24, 1], [8, 8], padding=padding)
    out = np.zeros((8, 8), np.float32)
    _read_window[(1,)](desc, out, row, col, BM=8, BN=8, interpret=True)
    padded = np.full((10 + 16, 24 + 16), fill, np.float32)
    padded[8:18, 8:32] = x
    np.testing.assert_array_equal(out, padded[row + 8:row + 16, col + 8:col + 16])


def test_out_of_bounds_writes_are_dropped():
    x = np.ones((10, 24), np.float32)
    y = np.zeros((12, 32), np.float32)           # the descriptor sees 10 x 24 of it
    view = TensorDescriptor(y, [10, 24], [32, 1], [8, 16])
    _scale_copy[(2, 2)](TensorDescriptor.from_tensor(x, [8, 16]), view, 1.0, interpret=True)
    assert y[:10, :24].sum() == 240 and y[10:].sum() == 0 and y[:, 24:].sum() == 0


def test_changing_the_block_shape_compiles_another_kernel():
    kernel = JITFunction(_scale_copy.fn)
    x = np.arange(32 * 32, dtype=np.float32).reshape(32, 32)
    y = np.zeros_like(x)
    src, dst = TensorDescriptor.from_tensor(x, [1, 1]), TensorDescriptor.from_tensor(y, [1, 1])
    for block in ([16, 16], [8, 32]):
        src.block_shape = dst.block_shape = block
        y[:] = 0
        kernel[_grid(x.shape, block)](src, dst, 2.0, interpret=True)
        np.testing.assert_array_equal(y, 2 * x)
    assert len(kernel._interp_cache) == 2


def _set_blocks(nargs):
    nargs["src"].block_shape = [nargs["BM"], nargs["BN"]]
    nargs["dst"].block_shape = [nargs["BM"], nargs["BN"]]


@triton.autotune([triton.Config({"BM": 8, "BN": 16}, pre_hook=_set_blocks)], key=[])
@triton.jit
def _tuned_copy(src, dst, BM: tl.constexpr, BN: tl.constexpr):
    src_block = src.load([tl.program_id(0) * BM, tl.program_id(1) * BN])
    dst.store([tl.program_id(0) * BM, tl.program_id(1) * BN], src_block + 1)


def test_an_autotune_pre_hook_sets_the_block_shape_before_the_launch():
    x = np.arange(24 * 40, dtype=np.float32).reshape(24, 40)
    y = np.zeros_like(x)
    src, dst = TensorDescriptor.from_tensor(x, [1, 1]), TensorDescriptor.from_tensor(y, [1, 1])
    _tuned_copy[lambda meta: _grid(x.shape, (meta["BM"], meta["BN"]))](src, dst, interpret=True)
    np.testing.assert_array_equal(y, x + 1)
    assert src.block_shape == [8, 16]


@triton.jit
def _device_descriptor_copy(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    src = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BM, BN])
    dst = tl.make_tensor_descriptor(y_ptr, [M, N], [N, 1], [BM, BN])
    dst.store([tl.program_id(0) * BM, 0], src.load([tl.program_id(0) * BM, 0]) * 2)


def test_make_tensor_descriptor_in_a_kernel():
    x = np.arange(12 * 8, dtype=np.float32).reshape(12, 8)
    y = np.zeros_like(x)
    _device_descriptor_copy[(3,)](x, y, 12, 8, BM=4, BN=8, interpret=True)
    np.testing.assert_array_equal(y, 2 * x)


# ---- attention through descriptors (tutorial 06's Hopper path, our own kernel) ----------------
@triton.jit
def _attend_block(acc, l_i, m_i, q, desc_k, desc_v, row0, n_ctx, qk_scale,
                  BLOCK_N: tl.constexpr):
    """The online-softmax loop over all key blocks of one (batch, head)."""
    for start in range(0, n_ctx, BLOCK_N):
        k = desc_k.load([row0 + start, 0]).T
        qk = tl.dot(q, k)
        cols = start + tl.arange(0, BLOCK_N)
        qk = tl.where(cols[None, :] < n_ctx, qk * qk_scale, -1.0e6)
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = desc_v.load([row0 + start, 0])
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def _attention_desc(sm_scale, desc_q, desc_k, desc_v, desc_o, n_ctx,
                    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Non-causal attention over rows [bh * n_ctx, (bh + 1) * n_ctx) of 2-D descriptors."""
    row0 = tl.program_id(1) * n_ctx
    q_row = row0 + tl.program_id(0) * BLOCK_M
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    q = desc_q.load([q_row, 0])
    acc, l_i, m_i = _attend_block(acc, l_i, m_i, q, desc_k, desc_v, row0, n_ctx,
                                  sm_scale * 1.44269504, BLOCK_N)
    desc_o.store([q_row, 0], (acc / l_i[:, None]).to(tl.float16))


def _reference(q, k, v, scale):
    s = (q.astype(np.float32) @ k.astype(np.float32).T) * scale
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v.astype(np.float32)


def _attention_inputs(n_ctx, head_dim, block_m, block_n, seed=0):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((n_ctx, head_dim)).astype(np.float16) for _ in range(3))
    o = np.zeros_like(q)
    descs = [TensorDescriptor.from_tensor(t, [b, head_dim])
             for t, b in ((q, block_m), (k, block_n), (v, block_n), (o, block_m))]
    return (q, k, v, o), descs


def test_attention_through_descriptors_in_the_interpreter():
    n_ctx, d = 40, 32
    (q, k, v, o), descs = _attention_inputs(n_ctx, d, 16, 16)
    scale = float(1 / np.sqrt(d))
    _attention_desc[(3, 1)](scale, *descs, n_ctx, HEAD_DIM=d, BLOCK_M=16, BLOCK_N=16,
                            interpret=True)
    np.testing.assert_allclose(o.astype(np.float32), _reference(q, k, v, scale), atol=3e-3,
                               rtol=1e-2)


@needs_ptxas
def test_attention_through_descriptors_on_the_simt_evaluator():
    n_ctx, d, bm, bn = 40, 64, 32, 32
    (q, k, v, o), descs = _attention_inputs(n_ctx, d, bm, bn, seed=1)
    scale = float(1 / np.sqrt(d))
    compiled, runtime = compile_jit(_attention_desc, [scale, *descs, n_ctx],
                                    {"HEAD_DIM": d, "BLOCK_M": bm, "BLOCK_N": bn},
                                    {"num_warps": 4}, None, stop_after=None)
    assert "mma.sync.aligned.m16n8k16" in compiled.asm["ptx"]
    out, = run_on_simt(compiled, (2, 1), runtime, [o])
    np.testing.assert_allclose(out.astype(np.float32), _reference(q, k, v, scale), atol=3e-3,
                               rtol=1e-2)


@needs_ptxas
def test_attention_through_descriptors_compiles_to_wgmma_on_sm90():
    (_, _, _, _), descs = _attention_inputs(4096, 128, 128, 64)
    compiled, _ = compile_jit(_attention_desc, [0.125, *descs, 4096],
                              {"HEAD_DIM": 128, "BLOCK_M": 128, "BLOCK_N": 64},
                              {"num_warps": 8, "num_stages": 3}, None, stop_after=None,
                              target={"arch": 90})
    assert "wgmma.mma_async" in compiled.asm["ptx"]
    assert compiled.trace.cubin_info["spill_stores"] == 0, compiled.trace.cubin_info["report"]


# ---- misuse: located errors --------------------------------------------------------------------
def _located(err, text):
    message = str(err.value)
    assert text in message, message
    assert "test_tensor_descriptors.py:" in message and "^" in message, message


@triton.jit
def _wrong_offsets(src, out):
    tl.store(out + tl.arange(0, 8), tl.sum(src.load([0]), 1))


def test_the_wrong_number_of_offsets_is_a_located_error():
    x = np.zeros((8, 8), np.float32)
    with pytest.raises(CompilationError) as err:
        _wrong_offsets[(1,)](TensorDescriptor.from_tensor(x, [8, 8]), x, interpret=True)
    _located(err, "a rank-2 tensor descriptor takes 2 offsets, got 1")


@triton.jit
def _rank_mismatch(x_ptr, M, N):
    desc = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [8])
    desc.load([0])


@triton.jit
def _bad_stride(x_ptr, M):
    desc = tl.make_tensor_descriptor(x_ptr, [M, 6], [6, 1], [8, 8])
    desc.load([0, 0])


def test_a_rank_mismatch_and_a_non_16_byte_stride_are_located_errors():
    x = np.zeros((8, 8), np.float32)
    with pytest.raises(CompilationError) as err:
        _rank_mismatch[(1,)](x, 8, 8, interpret=True)
    _located(err, "shape and strides need 1 entries")
    with pytest.raises(CompilationError) as err:
        _bad_stride[(1,)](x, 8, interpret=True)
    _located(err, "multiples of 16 bytes")


def test_host_descriptors_check_strides_and_block_shapes():
    x = np.zeros((16, 30), np.float16)
    with pytest.raises(ValueError, match="16-byte"):
        TensorDescriptor(x, [16, 30], [30, 1], [8, 8])
    with pytest.raises(ValueError, match="contiguous"):
        TensorDescriptor(x, [16, 30], [1, 16], [8, 8])
    y = np.zeros((16, 32), np.float32)
    with pytest.raises(CompilationError) as err:
        _scale_copy[(1,)](TensorDescriptor.from_tensor(y, [8, 6]),
                          TensorDescriptor.from_tensor(y, [8, 8]), 1.0, interpret=True)
    _located(err, "powers of two")


def test_warmup_takes_descriptor_signature_strings():
    compiled = _scale_copy.warmup("tensordesc<fp32[8, 32]>", "tensordesc<fp32[8, 32],nan>", 2.0,
                                  grid=(1,))
    header = compiled.asm["ttir"].splitlines()[1]
    assert "%dst_3: i64" in header and "tt.divisibility" not in header


# ---- the launch cache of descriptors over device tensors --------------------------------------
def test_a_new_descriptor_over_the_same_device_tensor_reuses_the_cached_launch(monkeypatch):
    """Tutorial 06 builds four descriptors per call: the second call's launch (entry, fields,
    tensor map) comes from the cache, and any changed field (block shape, shape) misses it."""
    from compiler.runtime import specialization, tensor_map
    from compiler.runtime.device_array import DeviceArray

    made = []
    original = specialization._descriptor_entry
    monkeypatch.setattr(specialization, "_descriptor_entry",
                        lambda desc: made.append(desc) or original(desc))
    monkeypatch.setattr(specialization, "_LAUNCH_CACHE", {})
    monkeypatch.setattr(tensor_map, "descriptor_map",
                        lambda *args: b"map:" + repr(args).encode())
    base = DeviceArray((64, 128), np.float16, 1 << 30, owner=False)   # made-up device address
    first = specialization._descriptor_launch(TensorDescriptor.from_tensor(base, [32, 64]))
    again = specialization._descriptor_launch(TensorDescriptor.from_tensor(base, [32, 64]))
    assert again is first and len(made) == 1
    entry, fields = first
    assert entry.startswith("tensordesc<fp16[32, 64]>")
    assert tuple(fields) == (1 << 30, 64, 128, 128)
    assert fields.tensor_map() == b"map:" + repr(("fp16", 1 << 30, (64, 128), (128, 1),
                                                  (32, 64), "zero")).encode()
    other_block = specialization._descriptor_launch(TensorDescriptor.from_tensor(base, [64, 64]))
    assert other_block[0].startswith("tensordesc<fp16[64, 64]>") and len(made) == 2
    narrower = TensorDescriptor(base, [32, 128], [128, 1], [32, 64])
    assert tuple(specialization._descriptor_launch(narrower)[1])[1] == 32 and len(made) == 3


def test_descriptors_over_host_arrays_are_not_cached(monkeypatch):
    from compiler.runtime import specialization

    monkeypatch.setattr(specialization, "_LAUNCH_CACHE", {})
    x = np.zeros((64, 64), np.float16)
    specialization._descriptor_launch(TensorDescriptor.from_tensor(x, [32, 64]))
    assert specialization._LAUNCH_CACHE == {}
