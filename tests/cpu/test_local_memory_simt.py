"""`ttg.local_alloc` / `ttg.local_store` / `ttg.local_load` addressed from the shared layout's
linear map (codegen/lower_convert.buffer_layout), run on the CPU SIMT evaluator: a tile goes
into a buffer of each shared layout from one distributed layout and comes back in another."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

from compiler.analysis.layout_to_linear import to_linear_layout
from compiler.codegen.lowering import LoweringOptions, lower_module
from compiler.dialects.ttg import SwizzledSharedEncoding
from compiler.ir import parse_module

from .simt import run_kernel
from .test_convert_layout_simt import LAYOUTS, LOAD, tile_offsets

SHARED = {
    "plain": "#ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0]}>",
    "vec8": "#ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>",
    "vec4_phase2": "#ttg.swizzled_shared<{vec = 4, perPhase = 2, maxPhase = 4, order = [1, 0]}>",
    "col_major": "#ttg.swizzled_shared<{vec = 4, perPhase = 1, maxPhase = 8, order = [0, 1]}>",
    "nvmma128": "#ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, elementBitWidth = 16}>",
    "nvmma0": "#ttg.nvmma_shared<{swizzlingByteWidth = 0, transposed = false, elementBitWidth = 16}>",
}
M = N = 64


def round_trip_kernel(m: int, n: int, ty: str, writer: str, reader: str, shared: str,
                      store_op: bool, warps: int = 4) -> str:
    """A `warps`-warp kernel: its %src tile (m x n, row-major) -> layout `writer` -> a buffer
    of `shared` (local_alloc with the value, or local_alloc then local_store) -> local_load
    into `reader` -> back to the load layout -> %dst."""
    t = lambda name: f"tensor<{m}x{n}x{ty}, #{name}>"  # noqa: E731
    mem = f"!ttg.memdesc<{m}x{n}x{ty}, #s, #smem, mutable>"
    fill = (f"""%buf = ttg.local_alloc : () -> {mem}
        ttg.local_store %vw, %buf : {t("w")} -> {mem}""" if store_op else
            f"%buf = ttg.local_alloc %vw : ({t('w')}) -> {mem}")
    return textwrap.dedent(f"""
    #b = {LOAD.replace("[4, 1]", f"[{warps}, 1]")}
    #b0 = #ttg.slice<{{dim = 0, parent = #b}}>
    #b1 = #ttg.slice<{{dim = 1, parent = #b}}>
    #w = {writer}
    #r = {reader}
    #s = {shared}
    #smem = #ttg.shared_memory
    module attributes {{"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = {warps} : i32, ttg.target = "cuda:90", "ttg.threads-per-warp" = 32 : i32}} {{
      tt.func public @local(%src: !tt.ptr<{ty}> {{tt.divisibility = 16 : i32}}, %dst: !tt.ptr<{ty}> {{tt.divisibility = 16 : i32}}) {{
        {tile_offsets(ty, m, n)}
        %v = tt.load %sptr : tensor<{m}x{n}x!tt.ptr<{ty}>, #b>
        %vw = ttg.convert_layout %v : {t("b")} -> {t("w")}
        {fill}
        %vr = ttg.local_load %buf : {mem} -> {t("r")}
        %back = ttg.convert_layout %vr : {t("r")} -> {t("b")}
        %dp = tt.splat %dst : !tt.ptr<{ty}> -> tensor<{m}x{n}x!tt.ptr<{ty}>, #b>
        %dptr = tt.addptr %dp, %off : tensor<{m}x{n}x!tt.ptr<{ty}>, #b>, tensor<{m}x{n}xi32, #b>
        tt.store %dptr, %back : tensor<{m}x{n}x!tt.ptr<{ty}>, #b>
        tt.return
      }}
    }}
    """)


def _kernel(shared: str, writer: str, reader: str, store_op: bool) -> str:
    return round_trip_kernel(M, N, "f16", LAYOUTS[writer], LAYOUTS[reader], SHARED[shared],
                             store_op)


CASES = [("plain", "rows", "cols", False), ("vec8", "rows", "mma_v2", False),
         ("vec4_phase2", "square", "mma_v2", True), ("vec8", "square", "dot_a_v2", True), ("col_major", "cols", "rows", True),
         ("nvmma128", "mma_v3", "rows", False), ("nvmma0", "linear", "one", True),
         ("vec8", "dot_b_v2", "mma_v3", True)]


@pytest.mark.parametrize("shared,writer,reader,store_op", CASES)
def test_tile_comes_back_through_a_shared_buffer(shared, writer, reader, store_op):
    kernel = lower_module(parse_module(_kernel(shared, writer, reader, store_op)),
                          LoweringOptions(optimize=False))
    data = np.arange(M * N).reshape(M, N).astype(np.float16)
    out = np.zeros_like(data)
    memory = run_kernel(kernel, (1,), [data, out])
    np.testing.assert_array_equal(memory.read(1, out), data)


@pytest.mark.parametrize("vec,per_phase,max_phase", [(8, 1, 8), (4, 2, 4), (2, 1, 4)])
def test_swizzled_shared_map_is_the_offset_formula(vec, per_phase, max_phase):
    """The linear map of a swizzled_shared buffer puts (row, col) at row * N + (col ^ phase *
    vec), phase = (row / perPhase) % maxPhase: the formula lower_mma and lower_async use."""
    ll = to_linear_layout(SwizzledSharedEncoding(vec, per_phase, max_phase, (1, 0)), (M, N))
    for offset in range(0, M * N, 7):
        row, col = ll.apply_tuple(offset=offset)
        phase = (row // per_phase) % max_phase
        assert offset == row * N + (col ^ (phase * vec))
