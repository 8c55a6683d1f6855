"""`ttg.memdesc_trans` (a transposed view of a shared buffer) and `optimize-dot-operands`, which
makes a wgmma operand's transpose such a view: the op's printed form, verifier and interpreter
semantics, the pass IR-in / IR-out, and tutorial 06's loop shape on Hopper (K and V both copied
by TMA into rings, K read by the dot through the view)."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import compiler as triton
import compiler.language as tl
from compiler.dialects.ttg import (MemDescTransOp, MemDescType, NVMMASharedEncoding,
                                   SwizzledSharedEncoding, transposed_memdesc, transposed_shared)
from compiler.ir import parse_module, print_module, verify_module
from compiler.ir.types import f16
from compiler.ir.verifier_errors import VerificationError
from tests.cpu.filecheck import filecheck
from tests.cpu.test_ttgir_passes import run, ttgir

needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not on the PATH")

NV = "#ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, elementBitWidth = 16}>"
NV_T = "#ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = true, elementBitWidth = 16}>"
ALIASES = {"shared": NV, "shared_t": NV_T, "smem": "#ttg.shared_memory",
           "blocked": "#ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], "
                      "warpsPerCTA = [4, 1], order = [1, 0]}>",
           "blocked_t": "#ttg.blocked<{sizePerThread = [8, 1], threadsPerWarp = [8, 4], "
                        "warpsPerCTA = [1, 4], order = [0, 1]}>",
           "mma": "#ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1], "
                  "instrShape = [16, 64, 16]}>"}
VIEW = ("%t = ttg.memdesc_trans %b {order = array<i32: 1, 0>} : "
        "!ttg.memdesc<64x128xf16, #shared, #smem, mutable> -> RESULT")


def _view_module(result: str) -> str:
    return ttgir(VIEW.replace("RESULT", result),
                 "%b: !ttg.memdesc<64x128xf16, #shared, #smem, mutable>", ALIASES)


def test_the_view_round_trips_through_printer_and_parser():
    text = _view_module("!ttg.memdesc<128x64xf16, #shared_t, #smem, mutable>")
    module = parse_module(text)
    verify_module(module)
    printed = print_module(module)
    assert "ttg.memdesc_trans %b {order = array<i32: 1, 0>}" in printed
    assert print_module(parse_module(printed)) == printed


@pytest.mark.parametrize("result, message", [
    ("!ttg.memdesc<64x128xf16, #shared_t, #smem, mutable>", "is !ttg.memdesc<128x64xf16"),
    ("!ttg.memdesc<128x64xf16, #shared, #smem, mutable>", "transposed = true"),
    ("!ttg.memdesc<128x64xf16, #shared_t, #smem>", "mutable"),
])
def test_the_verifier_wants_the_permuted_shape_and_the_transposed_layout(result, message):
    with pytest.raises(VerificationError, match=message):
        verify_module(parse_module(_view_module(result)))


def test_a_swizzled_layout_renames_its_order_and_views_compose_to_the_buffer():
    swizzled = SwizzledSharedEncoding(8, 1, 8, (1, 0))
    assert transposed_shared(swizzled, (1, 0)) == SwizzledSharedEncoding(8, 1, 8, (0, 1))
    three = SwizzledSharedEncoding(4, 2, 4, (2, 1, 0))
    view = transposed_shared(three, (2, 0, 1))
    assert view.order == (0, 2, 1)          # buffer dim 2 (fastest) is view dim 0
    nv = MemDescType((64, 128), f16, NVMMASharedEncoding(128, False, 16), True)
    assert transposed_memdesc(transposed_memdesc(nv, (1, 0)), (1, 0)) == nv
    assert transposed_shared(NVMMASharedEncoding(128, False, 16), (0, 1)) is None


def test_the_interpreter_reads_the_view_as_the_transposed_buffer():
    from compiler.runtime.interp.tensor_ops import SharedBuffer, memdesc_trans
    op = parse_module(_view_module(
        "!ttg.memdesc<128x64xf16, #shared_t, #smem, mutable>")).walk()
    trans = next(o for o in op if isinstance(o, MemDescTransOp))
    buffer = SharedBuffer(np.arange(64 * 128, dtype=np.float16).reshape(64, 128))
    view = memdesc_trans(None, trans, [buffer])
    np.testing.assert_array_equal(view.data, buffer.data.T)
    buffer.data[3, 5] = -1                  # a view: the storage is shared
    assert view.data[5, 3] == -1


# ---- optimize-dot-operands ---------------------------------------------------------------------
TRANS_DOT = """
%q = ttg.local_alloc %x : (tensor<64x128xf16, #blocked>) -> !ttg.memdesc<64x128xf16, #shared, #smem>
%kt = tt.trans %k {order = array<i32: 1, 0>} : tensor<64x128xf16, #blocked> -> tensor<128x64xf16, #blocked_t>
%b = ttg.local_alloc %kt : (tensor<128x64xf16, #blocked_t>) -> !ttg.memdesc<128x64xf16, #shared_t, #smem>
%d = ttng.warp_group_dot %q, %b, %acc {isAsync = false} : !ttg.memdesc<64x128xf16, #shared, #smem> * !ttg.memdesc<128x64xf16, #shared_t, #smem> -> tensor<64x64xf32, #mma>
%w = ttng.warp_group_dot_wait %d {pendings = 0 : i32} : tensor<64x64xf32, #mma>
"""
TRANS_ARGS = ("%x: tensor<64x128xf16, #blocked>, %k: tensor<64x128xf16, #blocked>, "
              "%acc: tensor<64x64xf32, #mma>")


def test_a_transposed_wgmma_operand_becomes_a_view_of_the_untransposed_buffer():
    text, fired = run(ttgir(TRANS_DOT, TRANS_ARGS, ALIASES), "optimize-dot-operands")
    assert fired == {"local_alloc(tt.trans) -> memdesc_trans(local_alloc)": 1}
    filecheck(text, """
        CHECK-NOT: tt.trans
        CHECK: [[BUF:%[0-9a-z_]+]] = ttg.local_alloc %k : (tensor<64x128xf16, #blocked>) -> !ttg.memdesc<64x128xf16, #shared, #smem>
        CHECK-NEXT: [[VIEW:%[0-9a-z_]+]] = ttg.memdesc_trans [[BUF]] {order = array<i32: 1, 0>} : !ttg.memdesc<64x128xf16, #shared, #smem> -> !ttg.memdesc<128x64xf16, #shared1, #smem>
        CHECK-NEXT: ttng.warp_group_dot %q, [[VIEW]], %acc
    """)


def test_a_transpose_read_by_anything_but_a_dot_stays_in_registers():
    body = TRANS_DOT + ("%l = ttg.local_load %b : !ttg.memdesc<128x64xf16, #shared_t, #smem> "
                        "-> tensor<128x64xf16, #blocked_t>\n")
    _, fired = run(ttgir(body, TRANS_ARGS, ALIASES), "optimize-dot-operands")
    assert not fired


TWO_DOTS = """
%q1 = ttg.local_alloc %x : (tensor<64x128xf16, #blocked>) -> !ttg.memdesc<64x128xf16, #shared, #smem>
%d1 = ttng.warp_group_dot %q1, %b, %acc {isAsync = false} : !ttg.memdesc<64x128xf16, #shared, #smem> * !ttg.memdesc<128x64xf16, #shared_t, #smem> -> tensor<64x64xf32, #mma>
%q2 = ttg.local_alloc %x : (tensor<64x128xf16, #blocked>) -> !ttg.memdesc<64x128xf16, #shared, #smem>
%d2 = ttng.warp_group_dot %q2, %b, %d1 {isAsync = false} : !ttg.memdesc<64x128xf16, #shared, #smem> * !ttg.memdesc<128x64xf16, #shared_t, #smem> -> tensor<64x64xf32, #mma>
%m = ttg.local_alloc : () -> !ttg.memdesc<64x128xf16, #shared, #smem, mutable>
%n = ttg.local_alloc : () -> !ttg.memdesc<64x128xf16, #shared, #smem, mutable>
"""
TWO_DOTS_ARGS = ("%x: tensor<64x128xf16, #blocked>, %b: !ttg.memdesc<128x64xf16, #shared_t, #smem>, "
                 "%acc: tensor<64x64xf32, #mma>")


def test_two_dots_reading_one_tile_share_its_buffer():
    """Causal attention's two loops both read Q: one buffer, as in Triton (a second one cost
    32 KB of shared memory at 128x128 tiles). Mutable (scratch) allocs are never merged."""
    text, fired = run(ttgir(TWO_DOTS, TWO_DOTS_ARGS, ALIASES), "optimize-dot-operands")
    assert fired == {"duplicate local_alloc -> the first one": 1}
    filecheck(text, """
        CHECK: [[Q:%[0-9a-z_]+]] = ttg.local_alloc %x
        CHECK-NEXT: [[D1:%[0-9a-z_]+]] = ttng.warp_group_dot [[Q]], %b, %acc
        CHECK-NOT: ttg.local_alloc %x
        CHECK: ttng.warp_group_dot [[Q]], %b, [[D1]]
        CHECK: ttg.local_alloc : ()
        CHECK: ttg.local_alloc : ()
    """)


# ---- tutorial 06's Hopper loop -----------------------------------------------------------------
def _attention_sm90(head_dim: int, block_m: int, block_n: int, n_ctx: int = 4096,
                    stop_after: str | None = "ttgir"):
    from tests.cpu.mma_cases import compile_jit
    from tests.cpu.test_tensor_descriptors import _attention_desc, _attention_inputs
    arrays, descs = _attention_inputs(n_ctx, head_dim, block_m, block_n)
    compiled, _ = compile_jit(_attention_desc, [0.125, *descs, n_ctx],
                              {"HEAD_DIM": head_dim, "BLOCK_M": block_m, "BLOCK_N": block_n},
                              {"num_warps": 4, "num_stages": 3}, None, stop_after=stop_after,
                              target={"arch": 90, "tma": True})
    return compiled, arrays, descs


def test_k_and_v_are_both_copied_by_tma_into_rings_and_k_is_read_through_a_view():
    compiled, _, _ = _attention_sm90(128, 64, 64)
    text = print_module(compiled.ttgir_module)
    loop = text[text.index("scf.for"):text.index("} loc", text.index("scf.yield"))]
    filecheck(loop, """
        CHECK: ttng.wait_barrier
        CHECK: [[K:%[0-9]+]] = ttg.memdesc_index %{{[0-9]+}}[[[SLOT:%[0-9]+]]] : !ttg.memdesc<3x64x128xf16
        CHECK: [[KT:%[0-9]+]] = ttg.memdesc_trans [[K]] {order = array<i32: 1, 0>} : !ttg.memdesc<64x128xf16, #shared, #smem, mutable> -> !ttg.memdesc<128x64xf16
        CHECK-NEXT: ttng.warp_group_dot %{{[a-z0-9_]+}}, [[KT]],
        CHECK: ttng.warp_group_dot
        CHECK: ttng.async_tma_copy_global_to_local %desc_k_map
        CHECK: ttng.async_tma_copy_global_to_local %desc_v_map
        CHECK: scf.yield
    """)
    for absent in ("tt.trans", "ttg.local_load", "ttg.local_alloc", "ttng.init_barrier"):
        assert absent not in loop, absent
    assert loop.count("async_tma_copy_global_to_local") == 2


def test_the_pipelined_ttgir_still_computes_attention_in_the_interpreter():
    """The ttgir itself (rings, barriers, the transposed view read by the warp-group dot) run
    by the interpreter gives softmax(q k^T) v, ragged last key block included."""
    from compiler.runtime.interpreter import interpret
    from tests.cpu.test_tensor_descriptors import _reference
    n_ctx, d = 160, 64
    compiled, (q, k, v, o), descs = _attention_sm90(d, 64, 64, n_ctx=n_ctx)
    scale = 0.125
    args = [scale]
    for desc in descs:
        args += [*desc.kernel_fields(), desc]
    interpret(compiled.ttgir_module, (-(-n_ctx // 64), 1), args + [n_ctx])
    np.testing.assert_allclose(o.astype(np.float32), _reference(q, k, v, scale), atol=3e-3,
                               rtol=1e-2)


@needs_ptxas
@pytest.mark.parametrize("head_dim, block_m, block_n, most", [(128, 64, 64, 160),
                                                               (64, 128, 64, 200)])
def test_attention_registers_fall_with_k_in_a_ring(head_dim, block_m, block_n, most):
    """ptxas's registers for tutorial 06's shape (255 with 96 spilled bytes and 236 before
    K was transposed as a view; Triton 3.6: 138 and 186)."""
    compiled, _, _ = _attention_sm90(head_dim, block_m, block_n, stop_after=None)
    info = compiled.trace.cubin_info
    assert info["spill_stores"] == 0, info["report"]
    assert info["registers"] <= most, info["report"]


# ---- the pointer path: b loaded as b^T by pointers --------------------------------------------
@triton.jit
def _matmul_view(x_ptr, y_ptr, c_ptr, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                 BLOCK_K: tl.constexpr, A_TRANSPOSED: tl.constexpr):
    """c = x^T @ y (A_TRANSPOSED, x stored K x M) or x @ y^T (y stored N x K): one operand
    tile is loaded row-major and transposed."""
    rm = tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        if A_TRANSPOSED:
            a = tl.load(x_ptr + (k + rk)[:, None] * BLOCK_M + rm[None, :]).T
            b = tl.load(y_ptr + (k + rk)[:, None] * BLOCK_N + rn[None, :])
        else:
            a = tl.load(x_ptr + rm[:, None] * K + (k + rk)[None, :])
            b = tl.load(y_ptr + rn[:, None] * K + (k + rk)[None, :]).T
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * BLOCK_N + rn[None, :], acc)


def test_a_pointer_loaded_transposed_operand_is_still_pipelined_by_cp_async():
    """On the pointer path the view changes nothing but where the transpose happens: the load
    still becomes a cp.async ring, and the ttgir computes a @ bt^T in the interpreter."""
    from compiler.runtime.interpreter import interpret
    from tests.cpu.mma_cases import compile_jit
    m, n, k, bk = 64, 64, 128, 32
    rng = np.random.default_rng(3)
    a = rng.standard_normal((m, k)).astype(np.float16)
    bt = rng.standard_normal((n, k)).astype(np.float16)
    c = np.zeros((m, n), np.float32)
    compiled, runtime = compile_jit(_matmul_view, [a, bt, c, k],
                                    {"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": bk,
                                     "A_TRANSPOSED": False},
                                    {"num_warps": 4, "num_stages": 3}, None,
                                    target={"arch": 90})
    text = print_module(compiled.ttgir_module)
    patterns = {name for r in compiled.trace.passes for name in r.patterns}
    assert "local_alloc(tt.trans) -> memdesc_trans(local_alloc)" in patterns
    assert "scf.for -> 3-stage cp.async pipeline" in patterns
    loop = text[text.index("scf.for"):]
    assert "tt.trans" not in loop and loop.count("ttg.async_copy_global_to_local") >= 2
    interpret(compiled.ttgir_module, (1,), runtime)
    np.testing.assert_allclose(c, a.astype(np.float32) @ bt.astype(np.float32).T, rtol=1e-2,
                               atol=5e-2)


@needs_ptxas
@pytest.mark.parametrize("dtype", [np.float16, np.float32], ids=["f16", "tf32"])
def test_a_transposed_a_operand_is_a_view_too(dtype):
    """A as a view: f16 wgmma reads it M-major (its transpose bit); tf32, which wgmma reads
    only K-major, keeps the K-major bytes (the untransposed buffer is written K-contiguous)."""
    from compiler.runtime.interpreter import interpret
    from tests.cpu.mma_cases import compile_jit
    m, n, k = 64, 64, 128
    rng = np.random.default_rng(4)
    at = rng.standard_normal((k, m)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    c = np.zeros((m, n), np.float32)
    compiled, runtime = compile_jit(_matmul_view, [at, b, c, k],
                                    {"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": 32,
                                     "A_TRANSPOSED": True},
                                    {"num_warps": 4, "num_stages": 3}, None, stop_after=None,
                                    target={"arch": 90})
    patterns = {name for r in compiled.trace.passes for name in r.patterns}
    assert "local_alloc(tt.trans) -> memdesc_trans(local_alloc)" in patterns
    assert "wgmma.mma_async" in compiled.asm["ptx"]
    assert compiled.trace.cubin_info["spill_stores"] == 0
    views = [op for op in compiled.ttgir_module.walk() if isinstance(op, MemDescTransOp)]
    assert views and all(v.results[0].type.encoding.transposed == (dtype == np.float16)
                         for v in views)
    interpret(compiled.ttgir_module, (1,), runtime)
    np.testing.assert_allclose(c, at.astype(np.float32).T @ b.astype(np.float32), rtol=1e-2,
                               atol=5e-2)
